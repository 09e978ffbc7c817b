-- remove_many.  ARGV: 2.. members.  Returns the members that were present.

local again = replayed()
if again then return again end
guard()
local tag = board_tag()
for i = 2, #ARGV do check_tag(tag, ARGV[i]) end
local out = {}
for i = 2, #ARGV do
  if delete(ARGV[i]) then out[#out + 1] = ARGV[i] end
end
if #out > 0 then touched() end
save()
return reply(out)
