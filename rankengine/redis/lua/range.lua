-- Range reads.  ARGV: 2 style (u/c/d), 3 with meta (1/0), 4 selector, then
--   'rank'   5 start 6 stop (1-based, negative from the bottom)
--   'win'    5 lo 6 hi (0-based, clamped)
--   'page'   5 number 6 size
--   'around' 5 member 6 above 7 below 8 fill (1/0)
--   'score'  5..10 bounds (see span) 11 offset 12 limit (-1: none)
--   'at'     5 rank (1-based, negative from the bottom)
-- Returns {lo, n, competition base, dense base, then element, double,
-- kind, meta per row}; lo = -1 when the 'around' member is absent, -2 when
-- the 'at' rank is outside the board (then the third slot is the rank).

local style, sel = ARGV[2], ARGV[4]
local n = call('ZCARD', Z)
local lo, hi = 0, 0
if sel == 'rank' then
  lo, hi = window(tonum(ARGV[5]), tonum(ARGV[6]), n)
elseif sel == 'win' then
  lo, hi = math.max(tonum(ARGV[5]), 0), math.min(tonum(ARGV[6]), n)
elseif sel == 'page' then
  local size = tonum(ARGV[6])
  local number = math.min(math.max(tonum(ARGV[5]), 1), math.max(math.ceil(n / size), 1))
  -- page 1 starts at 0 whatever its size: a size beyond the double range
  -- reads as inf here, and (1 - 1) * inf is NaN
  if number == 1 then lo = 0 else lo = (number - 1) * size end
  hi = math.min(lo + size, n)
elseif sel == 'around' then
  local old = lookup(ARGV[5])
  if not old then return {-1, n, 0, 0} end
  local r0 = unique_rank0(old.el)
  lo, hi = r0 - tonum(ARGV[6]), r0 + tonum(ARGV[7]) + 1
  if ARGV[8] == '1' then
    if lo < 0 then
      hi, lo = math.min(n, hi - lo), 0
    elseif hi > n then
      lo, hi = math.max(0, lo - (hi - n)), n
    end
  end
  lo, hi = math.max(lo, 0), math.min(hi, n)
elseif sel == 'score' then
  local a, b = span(5, n)
  if DESC then lo, hi = n - b, n - a else lo, hi = a, b end
  lo = lo + tonum(ARGV[11])
  local limit = tonum(ARGV[12])
  if limit >= 0 then hi = math.min(hi, lo + limit) end
elseif sel == 'at' then
  local r = tonum(ARGV[5])
  if r < 0 then r = r + n + 1 end
  if r < 1 or r > n then return {-2, n, r, 0} end
  lo, hi = r - 1, r
end
if lo >= hi then return {lo, n, 0, 0} end
local r = rows(lo, hi)
local out = {lo, n, 0, 0}
if style ~= 'u' then
  local first = value(r[2], ordkey_of(r[1]), '')
  if style == 'c' then out[3] = ahead(first) else out[4] = ahead_distinct(first) end
end
return emit(out, r, ARGV[3] == '1')
