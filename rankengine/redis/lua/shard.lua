-- Sharding reads.  ARGV: 2 what, then
--   'before'   3 double 4 probe: members ranked strictly ahead of the key
--              (which need not be on this board); the probe is the
--              element up to the clock digits (first-to-reach boards) or
--              the whole element (tie by member)
--   'distinct' 3 double 4 ordkey: the distinct scores strictly better, as
--              D elements with their doubles

local str = ARGV[3]
if ARGV[2] == 'before' then
  local probe = ARGV[4]
  local n = call('ZCARD', Z)
  local below = call('ZCOUNT', Z, '-inf', '(' .. str)
  local eq = call('ZCOUNT', Z, str, str)
  local a = search(Z, below, eq, function(el) return bytes_less(el, probe) end)
  if not DESC then return below + a end
  local same_key = 0
  if a < eq then
    local el = call('ZRANGE', Z, below + a, below + a)[1]
    if el == probe or (FIRST and sub(el, 1, #probe) == probe) then same_key = 1 end
  end
  return (n - below - eq) + (eq - a - same_key)
end
ensure_dense()
local nd = call('ZCARD', D)
if DESC then
  local at = count_d(str, ARGV[4], true)
  if at >= nd then return {} end
  return call('ZRANGE', D, at, nd - 1, 'WITHSCORES')
end
local at = count_d(str, ARGV[4], false)
if at == 0 then return {} end
return call('ZRANGE', D, 0, at - 1, 'WITHSCORES')
