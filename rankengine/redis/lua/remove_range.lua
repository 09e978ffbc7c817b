-- Removals by position or score, and pops.  ARGV: 2 selector, then
--   'rank'  3 start 4 stop (1-based, negative from the bottom) 5 want members
--   'score' 3..8 bounds (see span) 9 want members
--   'pop'   3 count 4 best (1/0) 5 with meta
-- 'rank'/'score' return the removed members in rank / index order (or their
-- number); 'pop' returns {n before, then element, double, kind, meta per row}.

local again = replayed()
if again then return again end
guard()
local sel = ARGV[2]
local n = call('ZCARD', Z)
local r, want, out = {}, false, {}
if sel == 'rank' then
  r = rows(window(tonum(ARGV[3]), tonum(ARGV[4]), n))
  want = ARGV[5] == '1'
elseif sel == 'score' then
  local lo, hi = span(3, n)
  if lo < hi then r = call('ZRANGE', Z, lo, hi - 1, 'WITHSCORES') end
  want = ARGV[9] == '1'
else
  local count = math.min(tonum(ARGV[3]), n)
  if count > 0 then
    if ARGV[4] == '1' then
      r = rows(0, count)
    elseif DESC then
      r = call('ZRANGE', Z, 0, count - 1, 'WITHSCORES')
    else
      r = call('ZREVRANGE', Z, 0, count - 1, 'WITHSCORES')
    end
  end
  out = emit({n}, r, ARGV[5] == '1')
end
local gone = {}
for i = 1, #r, 2 do
  local member = member_of(r[i])
  delete(member)
  gone[#gone + 1] = member
end
if #gone > 0 then touched() end
save()
if sel == 'pop' then return reply(out) end
if want then return reply(gone) end
return reply(#gone)
