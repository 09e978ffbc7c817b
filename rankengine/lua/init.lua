-- Store the config on first use; return it and the write counter.
-- ARGV: 2 config JSON.

redis.call('HSETNX', S, 'config', ARGV[2])
return {redis.call('HGET', S, 'config'), fmt('%.0f', writes_now)}
