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
-- A run's member on the board with an exact score takes incr.lua's fast
-- path (its steps, the write left until every sum is checked): its old
-- prefix and text, the new text and number and the kind are kept by its
-- place j in order, with no table made per member (2.2-3.4 us of server
-- time less per increment in runs of 100, about a fifth: see docs/redis.md).
-- fkind[j] is 'x' for a sum left to the client; fnew[j] is nil for an
-- unchanged score.
local fpre, fold, fnew, fnum, fkind = {}, {}, {}, {}, {}
-- The rows are read by one HMGET (a batch's member met again is taken
-- from state), the writes sent by one ZREM, ZADD and HSET (see move_later
-- and put_later, in the write section): 3 to 4 Redis calls a call (per
-- VARIADIC values), not 4 a member, besides the dense counts.
local members = {}
for i = 5, #ARGV, 3 do members[#members + 1] = ARGV[i] end
local hvs = rows_of(members)
for i = 5, #ARGV, 3 do
  local member = ARGV[i]
  local hv, okind, ostr, pre
  if run then  -- (no member twice: nothing in state yet)
    hv = hvs[(i - 2) / 3]
    if hv then okind, ostr, pre = match(hv, '^(%a+):([^:]*):(.*)$') end
  end
  if hv and #pre == PLEN then  -- (no ordkey: the stored double is the score)
    local j = #order + 1
    order[j] = member
    local old = tonum(ostr)
    if okind == 'z' then old = NEG_ZERO end
    local new = old + tonum(ARGV[i + 1])
    if new ~= new then fail('VALUE', 'NaN') end
    local kind = 'f'
    if okind == 'i' and ARGV[i + 2] == 'i' then
      kind = 'i'
      if new >= EXACT or new <= -EXACT then kind = 'x' end
    elseif new == 0 and 1 / new < 0 then
      kind = 'z'
    end
    fpre[j], fold[j] = pre, ostr
    if kind == 'x' then
      fkind[j] = 'x'
    elseif new == old then  -- an equal sum (5 + 0.0) keeps the stored score
      fkind[j] = okind
    else
      steps = steps + 1
      last[member] = steps
      -- (an int below 2**53: '%d' writes what '%.17g' would, cheaper)
      fnew[j], fnum[j], fkind[j] = fmt(kind == 'i' and '%d' or '%.17g', new), new, kind
    end
  else
    local cur = state[member]
    if cur == nil then
      local o
      if not run then hv = hvs[(i - 2) / 3] end
      o = hv and row(member, hv)
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
end
local base = clock_base(floor_of(ARGV[2]))
clock_check(base + steps)
local out = {base}
local moves = moves_new()
for j, member in ipairs(order) do
  local kind, step = fkind[j], last[member]
  local n = #out
  if kind then  -- (the fast path's)
    local str = fnew[j]
    if str then
      move_later(moves, member, fpre[j], fold[j], str, fnum[j], kind, base + step)
      out[n + 1], out[n + 2], out[n + 3], out[n + 4], out[n + 5] = str, kind, step, str, kind
    else
      out[n + 1], out[n + 2], out[n + 3] = kind ~= 'x' and fold[j], kind, 0
      out[n + 4], out[n + 5] = false, false
    end
  else
    local r = result[member]
    out[n + 1] = r and r.str
    out[n + 2] = r and r.kind or 'x'
    if step then
      local cur = state[member]
      put_later(moves, member, before[member] or nil, cur, base + step)
      out[n + 3], out[n + 4], out[n + 5] = step, cur.str, cur.kind
    else
      out[n + 3], out[n + 4], out[n + 5] = 0, false, false
    end
  end
end
write_moves(moves)
if steps > 0 then
  clock_raise(base + steps)
  if run then touched(steps) else touched(1) end
  save()
end
return reply(out)
