-- Counts for a hypothetical score.  ARGV: 2 what, 3 double, 4 ordkey:
--   'rank' + 5 style  -> the rank that score would get now
--   'span' + 5..10    -> how many members lie between two bounds

if ARGV[2] == 'span' then
  local lo, hi = span(5, call('ZCARD', Z))
  return hi - lo
end
local style, str, ok = ARGV[5], ARGV[3], ARGV[4]
if style == 'd' then
  return ahead_distinct(value(str, ok, '')) + 1
end
-- a newcomer ranks after the members already on its score (unique) or with
-- them (competition)
local inclusive = (style == 'u')
if DESC then inclusive = not inclusive end
local below = count_z(str, ok, inclusive)
if DESC then return call('ZCARD', Z) - below + 1 end
return below + 1
