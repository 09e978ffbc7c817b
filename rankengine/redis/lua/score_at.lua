-- score_at_percentile.  ARGV: 2 percentile.  Returns {n, element, double,
-- kind of the lower neighbour, then of the upper one} (worst-first).

local n = call('ZCARD', Z)
if n == 0 then return {0} end
local x = (n - 1) * tonum(ARGV[2]) / 100
local lo = math.floor(x)
local out = {n}
for _, j in ipairs({lo, math.min(lo + 1, n - 1)}) do
  local r
  if DESC then
    r = call('ZRANGE', Z, j, j, 'WITHSCORES')
  else
    r = call('ZREVRANGE', Z, j, j, 'WITHSCORES')
  end
  out[#out + 1] = r[1]
  out[#out + 1] = r[2]
  out[#out + 1] = kind_of(r[1], member_of(r[1]))
end
return out
