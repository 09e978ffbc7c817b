-- set_many.  ARGV: 2 when, 3 clock floor, 4 the batch's type tag, then
-- (member, double, ordkey, kind) from 5.  Plans the batch as consecutive
-- set() calls would run (a member's clock is that of its last change),
-- then writes it.  Returns {members changed, base clock, then (pair index,
-- step) per changed member}; the clock of a change is base + step.

local again = replayed()
if again then return again end
guard()
local when = ARGV[2]
local tag = board_tag()
if tag and ARGV[4] ~= '' then check_tag(tag, ARGV[4]) end
local before, state, last, steps = {}, {}, {}, 0
-- (the rows read by one HMGET, the writes sent by one ZREM, ZADD and HSET
-- per VARIADIC values: see incr_many.lua)
local members = {}
for i = 5, #ARGV, 4 do members[#members + 1] = ARGV[i] end
local hvs = rows_of(members)
for i = 5, #ARGV, 4 do
  local member = ARGV[i]
  local cur = state[member]
  if cur == nil then
    local hv = hvs[(i - 1) / 4]
    local o = hv and row(member, hv)
    before[member] = o or false
    cur = o or false
  end
  local new = value(ARGV[i + 1], ARGV[i + 2], ARGV[i + 3])
  local apply
  if not cur then
    apply = when ~= 'present'
  else
    apply = not (when == 'new' or same(new, cur)
      or (when == 'better' and not better(new, cur))
      or (when == 'worse' and not better(cur, new)))
  end
  if apply then
    steps = steps + 1
    cur = new
    last[member] = {(i - 5) / 4, steps}
  end
  state[member] = cur
end
local base = clock_base(floor_of(ARGV[3]))
clock_check(base + steps)
local out, changed = {0, base}, 0
local moves = moves_new()
for member, mark in pairs(last) do
  put_later(moves, member, before[member] or nil, state[member], base + mark[2])
  changed = changed + 1
  out[#out + 1] = mark[1]
  out[#out + 1] = mark[2]
end
write_moves(moves)
if steps > 0 then
  clock_raise(base + steps)
  touched()
  save()
end
out[1] = changed
return reply(out)
