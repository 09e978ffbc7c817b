-- incr_many (scalar boards).  ARGV: 2 clock floor, 3 the batch's type tag,
-- 4 '1' for a call of incr_many, 'n' for a pipeline's run of increments
-- (its members distinct), then (member, step, kind) from 5.  Every sum is
-- checked before any write.  A sum the server cannot add exactly: {-1}
-- asks the client to do a batch exactly, whole; in a run, that increment
-- alone is left to the client (result false, kind 'x'), as INCR would
-- leave it ({3}), and the others are applied.  A batch counts as one write,
-- a run as one per change (as its calls would alone).  Returns {base
-- clock, then per member in order of first appearance: result, kind, step
-- of its last change (0 if none), stored double, kind}.

local again = replayed()
if again then return again end
guard()
local run = ARGV[4] == 'n'
local tag = board_tag()
if tag and ARGV[3] ~= '' then check_tag(tag, ARGV[3]) end
local before, state, last, steps = {}, {}, {}, 0
local order, result = {}, {}
for i = 5, #ARGV, 3 do
  local member = ARGV[i]
  local cur = state[member]
  if cur == nil then
    local o = lookup(member)
    before[member] = o or false
    cur = o or false
  end
  local new = sum(cur or nil, ARGV[i + 1], ARGV[i + 2])
  if not new and not run then return {-1} end
  if result[member] == nil then order[#order + 1] = member end
  if not new then
    result[member] = false  -- (a run's: left to the client, added exactly)
  else
    if not cur or not same(new, cur) then
      steps = steps + 1
      cur = new
      last[member] = steps
    end
    result[member] = cur  -- an equal sum (5 + 0.0) keeps the stored score
    state[member] = cur
  end
end
local base = clock_base(tonumber(ARGV[2]))
clock_check(base + steps)
local out = {base}
for _, member in ipairs(order) do
  local r, step = result[member], last[member]
  out[#out + 1] = r and r.str
  out[#out + 1] = r and r.kind or 'x'
  if step then
    local cur = state[member]
    put(member, before[member] or nil, cur, base + step)
    out[#out + 1] = step
    out[#out + 1] = cur.str
    out[#out + 1] = cur.kind
  else
    out[#out + 1] = 0
    out[#out + 1] = false
    out[#out + 1] = false
  end
end
if steps > 0 then
  clock_raise(base + steps)
  if run then touched(steps) else touched(1) end
  save()
end
return reply(out)
