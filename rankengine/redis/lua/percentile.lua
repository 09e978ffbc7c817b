-- percentile.  ARGV: 2 member.  Returns {n, members below its score,
-- members at or below it} (ascending order), or {-1}.

local old = lookup(ARGV[2])
if not old then return {-1} end
return {call('ZCARD', Z), count_z(old.str, old.ok, false), count_z(old.str, old.ok, true)}
