-- The tie clock as stored (sharded boards read every shard's clock at once,
-- in one pipelined round trip per client).

state()

return fmt('%.0f', clock_now)
