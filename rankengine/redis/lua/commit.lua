-- Apply explicit changes: exact increments, replay, restore, sharded
-- batches.  ARGV: 2 clock floor, then ops:
--   'X' member double ordkey kind  precondition ('' double: member absent)
--   'P' member double ordkey kind clock   put with this clock
--   'R' member double ordkey kind step    put with clock base + step
--   'T' steps                      the clock becomes base + steps
--   'D' member
--   'M' member flag meta           flag 1 sets, 0 removes
--   'C' clock                      raise the clock to at least this
--   'W' writes                     set the write counter (restore)
--   'G' writes                     precondition: the write counter is this
--                                  (an event store's applier: see apply_at)
-- base = max(clock, floor) when the script starts.  Returns {1, base} or
-- {0} when a precondition failed (nothing written).

local again = replayed()
if again then return again end
guard()
local WIDTH = {X = 5, P = 6, R = 6, T = 2, D = 2, M = 4, C = 2, W = 2, G = 2}
local tag = board_tag()
local base = clock_base(floor_of(ARGV[2]))
-- the highest clock the ops need, checked before the first write
local highest = 0
local i = 3
while i <= #ARGV do
  local op = ARGV[i]
  if not WIDTH[op] then fail('VALUE', 'unknown op ' .. op) end
  if op == 'P' then
    highest = math.max(highest, tonum(ARGV[i + 5]))
  elseif op == 'R' then
    highest = math.max(highest, base + tonum(ARGV[i + 5]))
  elseif op == 'T' then
    highest = math.max(highest, base + tonum(ARGV[i + 1]))
  elseif op == 'C' then
    highest = math.max(highest, tonum(ARGV[i + 1]))
  end
  if op == 'G' then
    if writes_now ~= tonum(ARGV[i + 1]) then return {0} end
  elseif op == 'X' then
    local old = lookup(ARGV[i + 1])
    if ARGV[i + 2] == '' then
      if old then return {0} end
    elseif not old or old.kind ~= ARGV[i + 4]
        or not same(old, value(ARGV[i + 2], ARGV[i + 3], '')) then
      return {0}
    end
  elseif (op == 'P' or op == 'R') and call('HEXISTS', H, ARGV[i + 1]) == 0 then
    check_tag(tag, ARGV[i + 1])
  end
  i = i + WIDTH[op]
end
clock_check(highest)
local changed, writes = false, nil
i = 3
while i <= #ARGV do
  local op = ARGV[i]
  if op == 'P' or op == 'R' then
    local member = ARGV[i + 1]
    local clock = tonum(ARGV[i + 5])
    if op == 'R' then clock = base + clock end
    clock_raise(clock)
    put(member, lookup(member), value(ARGV[i + 2], ARGV[i + 3], ARGV[i + 4]), clock)
    changed = true
  elseif op == 'T' then
    clock_raise(base + tonum(ARGV[i + 1]))
  elseif op == 'D' then
    if delete(ARGV[i + 1]) then changed = true end
  elseif op == 'M' then
    if ARGV[i + 2] == '1' then
      call('HSET', M, ARGV[i + 1], ARGV[i + 3])
    else
      call('HDEL', M, ARGV[i + 1])
    end
    changed = true
  elseif op == 'C' then
    clock_raise(tonum(ARGV[i + 1]))
  elseif op == 'W' then
    writes = tonum(ARGV[i + 1])
  end
  i = i + WIDTH[op]
end
if writes then
  writes_now, dirty = writes, true
elseif changed then
  touched()
end
save()
return reply({1, base})
