-- Helper section 'lookup': a member's current state.

-- A member's state from its row in H (kind, double, prefix).
local function row(member, hv)
  local c1 = string.find(hv, ':', 1, true)
  local c2 = string.find(hv, ':', c1 + 1, true)
  local pre = sub(hv, c2 + 1)
  local str = sub(hv, c1 + 1, c2 - 1)
  return {el = pre .. member, num = tonum(str), str = str, ok = sub(pre, 1, #pre - PLEN),
          kind = sub(hv, 1, c1 - 1)}
end

-- A member's current state, or nil: one HGET (H holds kind, double, prefix).
local function lookup(member)
  local hv = call('HGET', H, member)
  if not hv then return nil end
  return row(member, hv)
end

-- Values a variadic command is given at a time (HMGET's fields; ZADD's
-- and HSET's pairs; ZREM's elements): unpack puts each value on Lua's C
-- stack, which holds LUAI_MAXCSTACK (8000) values, the command's name and
-- key besides; half of it leaves room, and is even (no pair split).
local VARIADIC = 4000

-- The rows in H of members (a list; a member may repeat), in order, false for a
-- member not on the board: one HMGET per VARIADIC members.
local function rows_of(members)
  local n = #members
  if n == 0 then return {} end
  if n <= VARIADIC then return call('HMGET', H, unpack(members)) end
  local out = {}
  for at = 1, n, VARIADIC do
    local part = call('HMGET', H, unpack(members, at, math.min(at + VARIADIC - 1, n)))
    for k = 1, #part do out[at + k - 1] = part[k] end
  end
  return out
end
