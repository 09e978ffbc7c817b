-- clear.  ARGV: 2 want the members (1/0).  Returns them (or their number).

local again = replayed()
if again then return again end
guard()
local n = call('HLEN', H)
local members = {}
if ARGV[2] == '1' then members = call('HKEYS', H) end
call('DEL', Z, H, M, D, C)
if n > 0 then
  inexact_now = 0
  touched()
end
save()
if ARGV[2] == '1' then return reply(members) end
return reply(n)
