-- incr (scalar boards).  ARGV: 2 member, 3 step, 4 step kind, 5 when,
-- 6 clock floor.  Returns {0} blocked, {3} do it exactly, {2, old, kind}
-- unchanged (an equal sum keeps the stored score), {1, new, kind, clock}.

local again = replayed()
if again then return again end
guard()
local member, when = ARGV[2], ARGV[5]
local old = lookup(member)
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
local clock = clock_next(tonumber(ARGV[6]))
put(member, old, new, clock)
touched()
save()
return reply({1, new.str, new.kind, clock})
