-- load.  Fill a new board with a union or intersection: every member, its
-- score and its metadata, as one write.  ARGV: 2 members loaded by the
-- chunks before this one, 3 '1' on the last chunk ('0' on the others), then
-- (member, double, ordkey, kind, metadata or '' for none) from 4.  The k-th
-- member loaded gets tie clock k.  Returns the number of members loaded.
--
-- A result too big for one call comes in chunks sent in one MULTI/EXEC
-- transaction: Redis runs them back to back, no other command in between.
-- Every chunk carries the same call number, and only the last one counts
-- the write and keeps its reply, so the whole transaction sent again (a
-- lost reply) finds that reply in every chunk and changes nothing.

local again = replayed()
if again then return again end
guard()
local done, LAST = tonum(ARGV[2]), ARGV[3] == '1'
-- The board is as the chunks before this one left it: the first finds it
-- empty, clock 0; the others also find the mark the first left, this
-- call's (a transaction does not stop at a failed command: after a first
-- chunk that refused a board, the second must not fill it).
local MARK = R .. ' ' .. CALL
if call('ZCARD', Z) ~= done or clock_now ~= done
    or (done > 0 and call('HGET', S, 'loading') ~= MARK) then
  fail('VALUE', 'union and intersection fill a new board: this one holds other members')
end
local last = done + (#ARGV - 3) / 5
clock_check(last)
local clock = done
for i = 4, #ARGV, 5 do
  clock = clock + 1
  put(ARGV[i], nil, value(ARGV[i + 1], ARGV[i + 2], ARGV[i + 3]), clock)
  -- Metadata comes canonically encoded (keys sorted), never empty.
  if ARGV[i + 4] ~= '' then call('HSET', M, ARGV[i], ARGV[i + 4]) end
end
clock_raise(last)
if not LAST then
  if done == 0 then call('HSET', S, 'loading', MARK) end
  save()
  return last
end
if done > 0 then call('HDEL', S, 'loading') end
touched()
save()
return reply(last)
