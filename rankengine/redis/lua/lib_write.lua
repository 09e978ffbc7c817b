-- Helper section 'write': put and delete a member, keeping every key in step.

local function put(member, old, new, clock)
  local pre = new.ok
  if FIRST then pre = pre .. prefix(clock) .. new.kind end
  local el = pre .. member
  if old then
    if DENSE then dense_remove(old) end
    if old.ok ~= '' then inexact(-1) end
    if old.el ~= el then redis.call('ZREM', Z, old.el) end
  end
  redis.call('ZADD', Z, new.str, el)
  redis.call('HSET', H, member, new.kind .. ':' .. new.str .. ':' .. pre)
  if DENSE then dense_add(new) end
  if new.ok ~= '' then inexact(1) end
end

local function delete(member)
  local old = lookup(member)
  if not old then return false end
  redis.call('ZREM', Z, old.el)
  redis.call('HDEL', H, member)
  redis.call('HDEL', M, member)
  if DENSE then dense_remove(old) end
  if old.ok ~= '' then inexact(-1) end
  return true
end
