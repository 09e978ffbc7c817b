-- Point reads for a list of members.  ARGV: 2 style (u/c/d, or - for no
-- rank), 3 with meta, 4.. members.  Returns double, element, kind, rank,
-- meta per member (false for all five when absent).

local style = ARGV[2]
local out = {}
for i = 4, #ARGV do
  local member = ARGV[i]
  local old = lookup(member)
  if not old then
    for _ = 1, 5 do out[#out + 1] = false end
  else
    out[#out + 1] = old.str
    out[#out + 1] = old.el
    out[#out + 1] = old.kind
    if style == 'u' then
      out[#out + 1] = unique_rank0(old.el) + 1
    elseif style == 'c' then
      out[#out + 1] = ahead(old) + 1
    elseif style == 'd' then
      out[#out + 1] = ahead_distinct(old) + 1
    else
      out[#out + 1] = false
    end
    if ARGV[3] == '1' then
      out[#out + 1] = call('HGET', M, member)
    else
      out[#out + 1] = false
    end
  end
end
return out
