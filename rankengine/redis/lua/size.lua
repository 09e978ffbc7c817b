-- The number of members (sharded boards read every shard's size at once).

return redis.call('ZCARD', Z)
