-- clear.  ARGV: 2 want the members (1/0).  Returns them (or their number).

guard()
local n = redis.call('HLEN', H)
local members = {}
if ARGV[2] == '1' then members = redis.call('HKEYS', H) end
redis.call('DEL', Z, H, M, D, C)
if n > 0 then
  inexact_now = 0
  touched()
end
save()
if ARGV[2] == '1' then return members end
return n
