-- set_meta.  ARGV: 2 member, 3 set (1) or remove (0), 4 metadata.
-- Returns -1 (no such member), 0 (unchanged) or 1.

local again = replayed()
if again then return again end
guard()
local member = ARGV[2]
check_tag(board_tag(), member)
if call('HEXISTS', H, member) == 0 then return -1 end
local cur = call('HGET', M, member)
-- Metadata comes canonically encoded (keys sorted): equal dicts, equal bytes.
if ARGV[3] == '1' then
  if cur == ARGV[4] then return 0 end
  call('HSET', M, member, ARGV[4])
else
  if not cur then return 0 end
  call('HDEL', M, member)
end
touched()
save()
return reply(1)
