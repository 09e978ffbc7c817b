-- rank (unique, one member): the lean read behind rank().  ARGV: 2 member.
-- Returns {0-based rank, element}, or false when absent; the client keeps
-- the element, so that its next rank of the member is one plain ZREVRANK.

local hv = call('HGET', H, ARGV[2])
if not hv then return false end
-- H holds kind ':' double ':' element prefix (see lookup)
local el = match(hv, '^[^:]*:[^:]*:(.*)$') .. ARGV[2]
if DESC then return {call('ZREVRANK', Z, el), el} end
return {call('ZRANK', Z, el), el}
