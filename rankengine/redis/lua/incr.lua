-- incr (scalar boards).  ARGV: 2 member, 3 step, 4 step kind, 5 when,
-- 6 clock floor.  Returns {0} blocked, {3} do it exactly, {2, old, kind}
-- unchanged (an equal sum keeps the stored score), {1, new, kind, clock}.

local again = replayed()
if again then return again end
guard()
local member, when = ARGV[2], ARGV[5]
local hv = call('HGET', H, member)
-- The common increment, with no table made and no helper called but the
-- dense counts' (when kept): a member on the board, an exact double, no
-- condition (the same steps as the general path below, written out: about
-- 2 us of server time less per call; see docs/redis.md).
if hv and when == '' then
  local okind, ostr, pre = match(hv, '^(%a+):([^:]*):(.*)$')
  if #pre == PLEN then  -- (no ordkey: the stored double is the score)
    local base = tonum(ostr)
    if okind == 'z' then base = NEG_ZERO end
    local new = base + tonum(ARGV[3])
    if new ~= new then fail('VALUE', 'NaN') end
    local kind = 'f'
    if okind == 'i' and ARGV[4] == 'i' then
      if new >= EXACT or new <= -EXACT then return {3} end
      kind = 'i'
    elseif new == 0 and 1 / new < 0 then
      kind = 'z'
    end
    -- an equal sum (5 + 0.0) keeps the stored score, which is what is returned
    if new == base then return {2, ostr, okind} end
    local str = fmt(kind == 'i' and '%d' or '%.17g', new)  -- (as incr_many.lua's)
    local clock = clock_next(floor_of(ARGV[6]))
    move_exact(member, pre, ostr, str, new, kind, clock)
    touched()
    save()
    return reply({1, str, kind, clock})
  end
end
local old = hv and row(member, hv)
-- (a member on the board has the board's type: only a new one is checked)
if not old then check_tag(board_tag(), member) end
if old and when == 'new' then return {0} end
if not old and when == 'present' then return {0} end
local new = sum(old, ARGV[3], ARGV[4])
if not new then return {3} end
if old then
  if when == 'better' and not better(new, old) then return {0} end
  if when == 'worse' and not better(old, new) then return {0} end
  -- an equal sum (5 + 0.0) keeps the stored score, which is what is returned
  if same(new, old) then return {2, old.str, old.kind} end
end
local clock = clock_next(floor_of(ARGV[6]))
put(member, old, new, clock)
touched()
save()
return reply({1, new.str, new.kind, clock})
