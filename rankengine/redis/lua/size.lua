-- The number of members (sharded boards read every shard's size at once).

return call('ZCARD', Z)
