-- set.  ARGV: 2 member, 3 double, 4 ordkey, 5 kind, 6 when, 7 has meta,
-- 8 meta, 9 clock floor.  Returns {clock or 0, meta changed (1/0)}.

local again = replayed()
if again then return again end
guard()
local member, when = ARGV[2], ARGV[6]
local hv = call('HGET', H, member)
-- The common set, written out as incr.lua's: a member on the board, both
-- scores exact doubles (no ordkey), no condition, no metadata; the same
-- Redis calls as the general path below.
if hv and when == '' and ARGV[7] ~= '1' and ARGV[4] == '' then
  local okind, ostr, pre = match(hv, '^(%a+):([^:]*):(.*)$')
  if #pre == PLEN then
    -- the clock moves only when the ranked score changes (5 and 5.0 are one score)
    if tonum(ARGV[3]) == tonum(ostr) then return {0, 0} end
    local str, kind = ARGV[3], ARGV[5]
    local clock = clock_next(floor_of(ARGV[9]))
    move_exact(member, pre, ostr, str, tonum(str), kind, clock)
    touched()
    save()
    return reply({clock, 0})
  end
end
local new = value(ARGV[3], ARGV[4], ARGV[5])
local old = hv and row(member, hv)
-- (a member on the board has the board's type: only a new one is checked)
if not old then check_tag(board_tag(), member) end
local clock = 0
if not old then
  if when == 'present' then return {0, 0} end
  clock = clock_next(floor_of(ARGV[9]))
  put(member, nil, new, clock)
else
  if when == 'new' then return {0, 0} end
  if when == 'better' and not better(new, old) then return {0, 0} end
  if when == 'worse' and not better(old, new) then return {0, 0} end
  -- The clock moves only when the ranked score changes.
  if not same(new, old) then
    clock = clock_next(floor_of(ARGV[9]))
    put(member, old, new, clock)
  end
end
-- Metadata comes canonically encoded (keys sorted): equal dicts, equal bytes.
local meta = 0
if ARGV[7] == '1' and (clock > 0 or call('HGET', M, member) ~= ARGV[8]) then
  call('HSET', M, member, ARGV[8])
  meta = 1
end
if clock > 0 or meta > 0 then touched() end
save()
return reply({clock, meta})
