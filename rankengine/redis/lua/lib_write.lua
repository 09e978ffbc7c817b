-- Helper section 'write': put and delete a member, keeping every key in step.

-- What put and put_later share: the new element's prefix and the element,
-- and the old row's dense and inexact counts taken back.
local function element_of(member, new, clock)
  local pre = new.ok
  if FIRST then pre = pre .. prefix(clock) .. new.kind end
  return pre, pre .. member
end
local function uncount(old)
  if DENSE then dense_remove(old) end
  if old.ok ~= '' then inexact(-1) end
end

local function put(member, old, new, clock)
  local pre, el = element_of(member, new, clock)
  if old then
    uncount(old)
    if old.el ~= el then call('ZREM', Z, old.el) end
  end
  call('ZADD', Z, new.str, el)
  call('HSET', H, member, new.kind .. ':' .. new.str .. ':' .. pre)
  if DENSE then dense_add(new) end
  if new.ok ~= '' then inexact(1) end
end

-- The fast paths' write (incr.lua and set.lua): a member already on the
-- board, its old score ostr exact, gets the exact score str (the number num)
-- of kind.  Its element (pre .. member) changes only when the tie clock is
-- in it; no tables are made unless dense counts are kept.
local function move_exact(member, pre, ostr, str, num, kind, clock)
  if DENSE then dense_remove({num = tonum(ostr), ok = ''}) end
  local npre = ''
  if FIRST then
    npre = prefix(clock) .. kind
    call('ZREM', Z, pre .. member)
  end
  call('ZADD', Z, str, npre .. member)
  call('HSET', H, member, kind .. ':' .. str .. ':' .. npre)
  if DENSE then dense_add({num = num, ok = ''}) end
end

-- move_exact for many members (a run of increments), its Redis calls
-- gathered: move_later() notes a member's move in moves (a table made by
-- moves_new(); the dense counts are kept as it is noted), write_moves()
-- sends them all, one variadic ZREM (tie clocks only), ZADD and HSET per
-- VARIADIC values instead of three calls per member.  The members are
-- distinct and so are their elements (a prefix of PLEN characters, then
-- the member): every old element removed before any new one is added is
-- what the calls member by member leave.
local function moves_new() return {zrem = {}, zadd = {}, hset = {}} end
local function move_later(moves, member, pre, ostr, str, num, kind, clock)
  if DENSE then dense_remove({num = tonum(ostr), ok = ''}) end
  local npre = ''
  if FIRST then
    npre = prefix(clock) .. kind
    local zrem = moves.zrem
    zrem[#zrem + 1] = pre .. member
  end
  local zadd, hset = moves.zadd, moves.hset
  local n = #zadd
  zadd[n + 1], zadd[n + 2] = str, npre .. member
  hset[n + 1], hset[n + 2] = member, kind .. ':' .. str .. ':' .. npre
  if DENSE then dense_add({num = num, ok = ''}) end
end
-- put for many members (a batch's), its Redis calls gathered as
-- move_later's are: the same steps, the dense and inexact counts kept as
-- it is noted.  Distinct members have distinct elements here too (an
-- ordkey carries its length in its first byte).
local function put_later(moves, member, old, new, clock)
  local pre, el = element_of(member, new, clock)
  if old then
    uncount(old)
    if old.el ~= el then
      local zrem = moves.zrem
      zrem[#zrem + 1] = old.el
    end
  end
  local zadd, hset = moves.zadd, moves.hset
  local n = #zadd
  zadd[n + 1], zadd[n + 2] = new.str, el
  hset[n + 1], hset[n + 2] = member, new.kind .. ':' .. new.str .. ':' .. pre
  if DENSE then dense_add(new) end
  if new.ok ~= '' then inexact(1) end
end
local function variadic(command, key, values)
  local n = #values
  for at = 1, n, VARIADIC do
    call(command, key, unpack(values, at, math.min(at + VARIADIC - 1, n)))
  end
end
local function write_moves(moves)
  variadic('ZREM', Z, moves.zrem)
  variadic('ZADD', Z, moves.zadd)
  variadic('HSET', H, moves.hset)
end

local function delete(member)
  local old = lookup(member)
  if not old then return false end
  call('ZREM', Z, old.el)
  call('HDEL', H, member)
  call('HDEL', M, member)
  if DENSE then dense_remove(old) end
  if old.ok ~= '' then inexact(-1) end
  return true
end
