-- Helper section 'tags': one member type per tie_break="member" board.

-- On a tie_break="member" board every member has one type (tag byte).
local function board_tag()
  if FIRST then return nil end
  local first = call('ZRANGE', Z, 0, 0)[1]
  if not first then return nil end
  return sub(member_of(first), 1, 1)
end
local function check_tag(tag, member)
  if tag and sub(member, 1, 1) ~= tag then fail('TYPE', tag .. sub(member, 1, 1)) end
end
