-- Helper section 'lookup': a member's current state.

-- A member's state from its row in H (kind, double, prefix).
local function row(member, hv)
  local c1 = string.find(hv, ':', 1, true)
  local c2 = string.find(hv, ':', c1 + 1, true)
  local pre = sub(hv, c2 + 1)
  local str = sub(hv, c1 + 1, c2 - 1)
  return {el = pre .. member, num = tonumber(str), str = str, ok = sub(pre, 1, #pre - PLEN),
          kind = sub(hv, 1, c1 - 1)}
end

-- A member's current state, or nil: one HGET (H holds kind, double, prefix).
local function lookup(member)
  local hv = redis.call('HGET', H, member)
  if not hv then return nil end
  return row(member, hv)
end
