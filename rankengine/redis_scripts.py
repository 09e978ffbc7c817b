"""The server side of :class:`~rankengine.redis_board.RedisLeaderboard`: its
Lua scripts, and the runner that calls them by SHA.

Every operation that reads and then writes runs as one Lua script, so it is
atomic on the server (Redis runs a script to the end before any other
command) and costs one round trip.  Reads that need more than one command (a
page with its tie-aware ranks, an entry with its rank) are scripts too, for
the same single round trip.  A script touches only the board's own keys, all
of which share one ``{hash tag}``, so every script is legal on Redis Cluster.

Key layout (``KEYS``, the same six for every script)::

    KEYS[1]  Z  sorted set  element -> double          the ranking itself
    KEYS[2]  H  hash        member -> kind ":" double ":" element prefix
    KEYS[3]  M  hash        member -> metadata (msgpack)
    KEYS[4]  D  sorted set  distinct score -> double   (dense ranks, built on
    KEYS[5]  C  hash        distinct score -> count     the first dense read)
    KEYS[6]  S  hash        config, clock, writes, inexact, dense

An element of ``Z`` is ``ordkey + tie + member`` (see
:mod:`rankengine.redis_board` for the encodings):

``ordkey``
    The exact remainder of the score that the double cannot hold, in bytes
    that sort like the remainder.  Empty for every score a double holds
    exactly (floats, and ints below 2**53: the common case costs nothing).
``tie``
    ``tie_break="first"``: 16 decimal digits of the tie clock, inverted
    (``MAXCLOCK - clock``) on a descending board, then the score's *kind*
    (``i`` int, ``f`` float, ``z`` -0.0; a letter per column), so a range
    read needs no other key; ``"member"``: nothing.
``member``
    The encoded member (a type tag byte, then its bytes).

Redis sorts by ``(double, element bytes)``, which is therefore exactly the
engine's order ``(score, tie)``.  Two members never share a clock, so the
kind and the member bytes decide only on ``tie_break="member"`` boards (no
kind there: it lives in ``H``).

Each script reads the state hash once (``HMGET``) and writes it once at the
end: a ``set`` is five or six Redis calls inside the script.

``ARGV[1]`` of every script is the board's mode: ``d``/``a`` (order of the
first column), ``f``/``m`` (tie-break), the number of columns whose ordkey
the element carries (``1`` for scalar and packed boards), the number of
kind letters, then, on a board with an event log, ``:`` and the log's last
sequence number (the write guard).  Scripts raise ``RANKENGINE_<CODE>
<detail>`` before any write (Redis does not roll back a script that fails
half-way).
"""

from __future__ import annotations

import hashlib
from typing import Any, Final

__all__ = ["SCRIPTS", "ScriptError", "ScriptRunner"]

#: The helpers, in sections; a script gets the sections it uses (defining
#: a Lua function costs about as much as a Redis call, so each script
#: defines only what it needs).  Sections come in this order and use only
#: the ones before them.
_CORE: Final = r"""
local Z, H, M, D, C, S = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local MODE = ARGV[1]
local DESC = string.sub(MODE, 1, 1) == 'd'
local FIRST = string.sub(MODE, 2, 2) == 'f'
local COLS = tonumber(string.sub(MODE, 3, 3))
local KLEN = tonumber(string.sub(MODE, 4, 4))
local PLEN = 0
if FIRST then PLEN = 16 + KLEN end
-- Largest tie clock, and the bound of exact integers in a double (2**53).
local MAXCLOCK = 9007199254740991
local EXACT = 9007199254740992
local sub, byte, fmt = string.sub, string.byte, string.format

local function fail(code, detail)
  error({err = 'RANKENGINE_' .. code .. ' ' .. detail})
end

-- The board's state, read once and written once (save) per script.
local ST = redis.call('HMGET', S, 'clock', 'writes', 'inexact', 'dense')
local clock_now = tonumber(ST[1] or '0')
local writes_now = tonumber(ST[2] or '0')
local inexact_now = tonumber(ST[3] or '0')
local DENSE = ST[4] == '1'
local dirty = false
local function save()
  if dirty then
    redis.call('HSET', S, 'clock', fmt('%.0f', clock_now), 'writes', fmt('%.0f', writes_now),
      'inexact', fmt('%.0f', inexact_now))
  end
end
-- Every write that changes something counts (compared with the event log).
local function touched() writes_now, dirty = writes_now + 1, true end

-- A board with an event log passes the log's last sequence number after a
-- colon in ARGV[1]; a write refuses to run unless Redis has seen exactly
-- that many writes (it lost some, or has one the log does not).
local GUARD = string.match(MODE, ':(%d+)$')
local function guard()
  if GUARD and writes_now ~= tonumber(GUARD) then
    fail('STALE', fmt('%.0f', writes_now) .. ' ' .. GUARD)
  end
end
"""

_ORDER: Final = r"""
-- Byte order (memcmp), as Redis sorts elements.  Lua's own '<' on strings
-- follows the server's collation locale, so it is never used.
local function bytes_less(a, b)
  local n = math.min(#a, #b)
  for i = 1, n do
    local x, y = byte(a, i), byte(b, i)
    if x ~= y then return x < y end
  end
  return #a < #b
end

-- Where the ordkey of an element ends (position just after it).  A
-- remainder is one byte 0x80 + L then L bytes; zero is nothing on a scalar
-- board and one 0x00 byte per column on a composite one, whose later
-- columns also carry 8 bytes of their double.
local function ok_end(el)
  local i = 1
  for c = 1, COLS do
    if c > 1 then i = i + 8 end
    local b = byte(el, i)
    if b >= 128 then
      i = i + 1 + (b - 128)
    elseif COLS > 1 then
      i = i + 1
    end
  end
  return i
end

local function member_of(el) return sub(el, ok_end(el) + PLEN) end
local function ordkey_of(el) return sub(el, 1, ok_end(el) - 1) end

-- Exact order of two scores given as (double, ordkey).
local function less(an, ao, bn, bo)
  if an ~= bn then return an < bn end
  return bytes_less(ao, bo)
end
local function better(a, b)
  if DESC then return less(b.num, b.ok, a.num, a.ok) end
  return less(a.num, a.ok, b.num, b.ok)
end
local function same(a, b) return a.num == b.num and a.ok == b.ok end

local function value(str, ok, kind)
  return {num = tonumber(str), str = str, ok = ok, kind = kind}
end

-- Canonical text of a double (-0 and 0 are one score).
local function canon(x)
  if x == 0 then x = 0 end
  return fmt('%.17g', x)
end
"""

_DENSE: Final = r"""
local function dense_add(v)
  local key = canon(v.num) .. '|' .. v.ok
  if redis.call('HINCRBY', C, key, 1) == 1 then redis.call('ZADD', D, canon(v.num), key) end
end

local function dense_remove(v)
  local key = canon(v.num) .. '|' .. v.ok
  if redis.call('HINCRBY', C, key, -1) <= 0 then
    redis.call('HDEL', C, key)
    redis.call('ZREM', D, key)
  end
end

-- The distinct scores are built on the first dense read (O(N), once), as
-- the in-process board builds its counts; writes keep them from then on.
local function ensure_dense()
  if DENSE then return end
  redis.call('DEL', D, C)
  local n = redis.call('ZCARD', Z)
  local counts, order = {}, {}
  for start = 0, n - 1, 5000 do
    local r = redis.call('ZRANGE', Z, start, start + 4999, 'WITHSCORES')
    for i = 1, #r, 2 do
      local d = canon(tonumber(r[i + 1]))
      local key = d .. '|' .. ordkey_of(r[i])
      if counts[key] then
        counts[key] = counts[key] + 1
      else
        counts[key] = 1
        order[#order + 1] = {key, d}
      end
    end
  end
  local hc, zd = {}, {}
  for i, pair in ipairs(order) do
    hc[#hc + 1], hc[#hc + 2] = pair[1], counts[pair[1]]
    zd[#zd + 1], zd[#zd + 2] = pair[2], pair[1]
    if #hc >= 2000 or i == #order then
      redis.call('HSET', C, unpack(hc))
      redis.call('ZADD', D, unpack(zd))
      hc, zd = {}, {}
    end
  end
  redis.call('HSET', S, 'dense', '1')
  DENSE = true
end
"""

_CLOCK: Final = r"""
-- A scalar board where no member has an ordkey: counts need no search.
local function plain() return COLS == 1 and inexact_now == 0 end
local function inexact(delta)
  if COLS == 1 then inexact_now, dirty = inexact_now + delta, true end
end

-- The logical clock.
local function clock_raise(c)
  if c > clock_now then
    if c > MAXCLOCK then fail('RANGE', 'the tie clock reached 2**53') end
    clock_now, dirty = c, true
  end
end
local function clock_base(floor)
  if floor and floor > clock_now then return floor end
  return clock_now
end
local function clock_next(floor)
  local c = clock_base(floor) + 1
  clock_raise(c)
  return c
end

-- The tie part of an element: 16 digits in first-to-reach order, then the kind.
local function prefix(clock)
  if DESC then clock = MAXCLOCK - clock end
  return fmt('%016.0f', clock)
end
"""

_TAGS: Final = r"""
-- On a tie_break="member" board every member has one type (tag byte).
local function board_tag()
  if FIRST then return nil end
  local first = redis.call('ZRANGE', Z, 0, 0)[1]
  if not first then return nil end
  return sub(member_of(first), 1, 1)
end
local function check_tag(tag, member)
  if tag and sub(member, 1, 1) ~= tag then fail('TYPE', tag .. sub(member, 1, 1)) end
end
"""

_LOOKUP: Final = r"""
-- A member's current state, or nil: one HGET (H holds kind, double, prefix).
local function lookup(member)
  local hv = redis.call('HGET', H, member)
  if not hv then return nil end
  local c1 = string.find(hv, ':', 1, true)
  local c2 = string.find(hv, ':', c1 + 1, true)
  local pre = sub(hv, c2 + 1)
  local str = sub(hv, c1 + 1, c2 - 1)
  return {el = pre .. member, num = tonumber(str), str = str, ok = sub(pre, 1, #pre - PLEN),
          kind = sub(hv, 1, c1 - 1)}
end
"""

_WRITE: Final = r"""
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
"""

_READ: Final = r"""
-- The kind of a row: in the element on first-to-reach boards, else in H.
local function kind_of(el, member)
  if FIRST then
    local at = ok_end(el) + 16
    return sub(el, at, at + KLEN - 1)
  end
  local hv = redis.call('HGET', H, member)
  return sub(hv, 1, string.find(hv, ':', 1, true) - 1)
end

-- Elements (and doubles) of 0-based ranks lo <= r < hi, best first.
local function rows(lo, hi)
  if lo >= hi then return {} end
  if DESC then return redis.call('ZREVRANGE', Z, lo, hi - 1, 'WITHSCORES') end
  return redis.call('ZRANGE', Z, lo, hi - 1, 'WITHSCORES')
end

local function unique_rank0(el)
  if DESC then return redis.call('ZREVRANK', Z, el) end
  return redis.call('ZRANK', Z, el)
end

-- Clamp 1-based inclusive ranks (negative from the bottom) to [lo, hi).
local function window(start, stop, n)
  if start < 0 then start = start + n + 1 end
  if stop < 0 then stop = stop + n + 1 end
  local lo = math.max(start, 1) - 1
  local hi = math.min(stop, n)
  if lo < hi then return lo, hi end
  return 0, 0
end

-- Rows as element, double, kind, meta (false unless asked).
local function emit(out, r, with_meta)
  for i = 1, #r, 2 do
    local member = member_of(r[i])
    out[#out + 1] = r[i]
    out[#out + 1] = r[i + 1]
    out[#out + 1] = kind_of(r[i], member)
    if with_meta then
      out[#out + 1] = redis.call('HGET', M, member)
    else
      out[#out + 1] = false
    end
  end
  return out
end
"""

_COUNT: Final = r"""
-- Binary search of a run of equal doubles: how many of its first `eq`
-- entries (from position `base` of `key`) satisfy `yes`, a predicate that
-- holds on a prefix of the run.  O(log eq * log N).
local function search(key, base, eq, yes)
  local a, b = 0, eq
  while a < b do
    local mid = math.floor((a + b) / 2)
    if yes(redis.call('ZRANGE', key, base + mid, base + mid)[1]) then a = mid + 1 else b = mid end
  end
  return a
end

-- Members whose score is below (str, ok), or at or below with `inclusive`.
local function count_z(str, ok, inclusive)
  local below = redis.call('ZCOUNT', Z, '-inf', '(' .. str)
  if ok == '' and not inclusive then return below end
  local eq = redis.call('ZCOUNT', Z, str, str)
  if eq == 0 then return below end
  if plain() then
    if inclusive or ok ~= '' then return below + eq end
    return below
  end
  return below + search(Z, below, eq, function(el)
    local eok = ordkey_of(el)
    if inclusive then return not bytes_less(ok, eok) end
    return bytes_less(eok, ok)
  end)
end

-- The same over the distinct scores (dense ranks).
local function count_d(str, ok, inclusive)
  ensure_dense()
  local below = redis.call('ZCOUNT', D, '-inf', '(' .. str)
  local eq = redis.call('ZCOUNT', D, str, str)
  if eq == 0 then return below end
  if plain() then
    if inclusive or ok ~= '' then return below + eq end
    return below
  end
  local key = canon(tonumber(str)) .. '|' .. ok
  return below + search(D, below, eq, function(el)
    if inclusive then return not bytes_less(key, el) end
    return bytes_less(el, key)
  end)
end

-- Members (distinct scores) strictly better than v.
local function ahead(v)
  if DESC then return redis.call('ZCARD', Z) - count_z(v.str, v.ok, true) end
  return count_z(v.str, v.ok, false)
end
local function ahead_distinct(v)
  if DESC then
    ensure_dense()
    return redis.call('ZCARD', D) - count_d(v.str, v.ok, true)
  end
  return count_d(v.str, v.ok, false)
end

-- Index positions [lo, hi) (ascending order) of the scores between two
-- bounds given at ARGV[a..a+5]: min double, ordkey, inclusive, then max.
local function span(a, n)
  local lo, hi = 0, n
  if ARGV[a] ~= '' then lo = count_z(ARGV[a], ARGV[a + 1], ARGV[a + 2] ~= '1') end
  if ARGV[a + 3] ~= '' then hi = count_z(ARGV[a + 3], ARGV[a + 4], ARGV[a + 5] == '1') end
  if hi < lo then hi = lo end
  return lo, hi
end
"""

#: Sections each script needs besides the core (which every script gets).
_WRITER: Final = ("order", "dense", "clock", "tags", "lookup", "write")
_NEEDS: Final[dict[str, tuple[str, ...]]] = {
    "INIT": (),
    "SIZE": (),
    "SET": _WRITER,
    "INCR": _WRITER,
    "SET_MANY": _WRITER,
    "INCR_MANY": _WRITER,
    "REMOVE": _WRITER,
    "COMMIT": _WRITER,
    "CLEAR": (),
    "SET_META": ("order", "tags"),
    "REMOVE_RANGE": ("order", "dense", "clock", "lookup", "write", "read", "count"),
    "RANGE": ("order", "dense", "clock", "lookup", "read", "count"),
    "ENTRIES": ("order", "dense", "clock", "lookup", "read", "count"),
    "PERCENTILE": ("order", "dense", "clock", "lookup", "count"),
    "RANK_FOR": ("order", "dense", "clock", "count"),
    "SHARD": ("order", "dense", "clock", "count"),
    "SCORE_AT": ("order", "read"),
}
_SECTIONS: Final[dict[str, str]] = {
    "core": _CORE,
    "order": _ORDER,
    "dense": _DENSE,
    "clock": _CLOCK,
    "tags": _TAGS,
    "lookup": _LOOKUP,
    "write": _WRITE,
    "read": _READ,
    "count": _COUNT,
}


def _prelude(name: str) -> str:
    """The helper sections script ``name`` needs, in their order."""
    wanted = {"core", *_NEEDS[name]}
    return "".join(text for section, text in _SECTIONS.items() if section in wanted)


#: The number of members (sharded boards read every shard's size at once).
SIZE: Final = """
return redis.call('ZCARD', Z)
"""

#: Store the config on first use; return it and the write counter.
#: ARGV: 2 config JSON.
INIT: Final = """
redis.call('HSETNX', S, 'config', ARGV[2])
return {redis.call('HGET', S, 'config'), fmt('%.0f', writes_now)}
"""

#: set.  ARGV: 2 member, 3 double, 4 ordkey, 5 kind, 6 when, 7 has meta,
#: 8 meta, 9 clock floor.  Returns {clock or 0, meta changed (1/0)}.
SET: Final = """
guard()
local member, when = ARGV[2], ARGV[6]
check_tag(board_tag(), member)
local new = value(ARGV[3], ARGV[4], ARGV[5])
local old = lookup(member)
local clock = 0
if not old then
  if when == 'present' then return {0, 0} end
  clock = clock_next(tonumber(ARGV[9]))
  put(member, nil, new, clock)
else
  if when == 'new' then return {0, 0} end
  if when == 'better' and not better(new, old) then return {0, 0} end
  if when == 'worse' and not better(old, new) then return {0, 0} end
  -- The clock moves only when the ranked score changes.
  if not same(new, old) then
    clock = clock_next(tonumber(ARGV[9]))
    put(member, old, new, clock)
  end
end
local meta = 0
if ARGV[7] == '1' and (clock > 0 or redis.call('HGET', M, member) ~= ARGV[8]) then
  redis.call('HSET', M, member, ARGV[8])
  meta = 1
end
if clock > 0 or meta > 0 then touched() end
save()
return {clock, meta}
"""

# The increment fast path, for scalar boards: the stored score and the step
# are exact doubles and an int result stays below 2**53.  Anything else asks
# the client to do it exactly: it reads, adds in Python and commits with a
# precondition.
_SUM: Final = """
local function sum(cur, step, skind)
  local base, bkind = 0, 'i'
  if cur then
    if cur.ok ~= '' then return nil end
    base, bkind = cur.num, cur.kind
  end
  local new = base + tonumber(step)
  if new ~= new then fail('VALUE', 'NaN') end
  local kind = 'f'
  if bkind == 'i' and skind == 'i' then
    if new >= EXACT or new <= -EXACT then return nil end
    kind = 'i'
  elseif new == 0 and 1 / new < 0 then
    kind = 'z'
  end
  return value(fmt('%.17g', new), '', kind)
end
"""

#: incr (scalar boards).  ARGV: 2 member, 3 step, 4 step kind, 5 when,
#: 6 clock floor.  Returns {0} blocked, {3} do it exactly, {2, new, kind}
#: unchanged, {1, new, kind, clock}.
INCR: Final = (
    _SUM
    + """
guard()
local member, when = ARGV[2], ARGV[5]
check_tag(board_tag(), member)
local old = lookup(member)
if old and when == 'new' then return {0} end
if not old and when == 'present' then return {0} end
local new = sum(old, ARGV[3], ARGV[4])
if not new then return {3} end
if old then
  if when == 'better' and not better(new, old) then return {0} end
  if when == 'worse' and not better(old, new) then return {0} end
  if same(new, old) then return {2, new.str, new.kind} end
end
local clock = clock_next(tonumber(ARGV[6]))
put(member, old, new, clock)
touched()
save()
return {1, new.str, new.kind, clock}
"""
)

#: set_many.  ARGV: 2 when, 3 clock floor, 4 the batch's type tag, then
#: (member, double, ordkey, kind) from 5.  Plans the batch as consecutive
#: set() calls would run (a member's clock is that of its last change),
#: then writes it.  Returns {members changed, base clock, then (pair index,
#: step) per changed member}; the clock of a change is base + step.
SET_MANY: Final = """
guard()
local when = ARGV[2]
local tag = board_tag()
if tag and ARGV[4] ~= '' then check_tag(tag, ARGV[4]) end
local before, state, last, steps = {}, {}, {}, 0
for i = 5, #ARGV, 4 do
  local member = ARGV[i]
  local cur = state[member]
  if cur == nil then
    local o = lookup(member)
    before[member] = o or false
    cur = o or false
  end
  local new = value(ARGV[i + 1], ARGV[i + 2], ARGV[i + 3])
  local apply
  if not cur then
    apply = when ~= 'present'
  else
    apply = not (when == 'new' or same(new, cur)
      or (when == 'better' and not better(new, cur))
      or (when == 'worse' and not better(cur, new)))
  end
  if apply then
    steps = steps + 1
    cur = new
    last[member] = {(i - 5) / 4, steps}
  end
  state[member] = cur
end
local base = clock_base(tonumber(ARGV[3]))
local out, changed = {0, base}, 0
for member, mark in pairs(last) do
  put(member, before[member] or nil, state[member], base + mark[2])
  changed = changed + 1
  out[#out + 1] = mark[1]
  out[#out + 1] = mark[2]
end
if steps > 0 then
  clock_raise(base + steps)
  touched()
  save()
end
out[1] = changed
return out
"""

#: incr_many (scalar boards).  ARGV: 2 clock floor, 3 the batch's type tag,
#: then (member, step, kind) from 4.  Every sum is checked before any write;
#: {-1} asks the client to do the batch exactly.  Returns {base clock, then
#: per member in order of first appearance: result, kind, step of its last
#: change (0 if none), stored double, kind}.
INCR_MANY: Final = (
    _SUM
    + """
guard()
local tag = board_tag()
if tag and ARGV[3] ~= '' then check_tag(tag, ARGV[3]) end
local before, state, last, steps = {}, {}, {}, 0
local order, result = {}, {}
for i = 4, #ARGV, 3 do
  local member = ARGV[i]
  local cur = state[member]
  if cur == nil then
    local o = lookup(member)
    before[member] = o or false
    cur = o or false
  end
  local new = sum(cur or nil, ARGV[i + 1], ARGV[i + 2])
  if not new then return {-1} end
  if not result[member] then order[#order + 1] = member end
  result[member] = new
  if not cur or not same(new, cur) then
    steps = steps + 1
    cur = new
    last[member] = steps
  end
  state[member] = cur
end
local base = clock_base(tonumber(ARGV[2]))
local out = {base}
for _, member in ipairs(order) do
  local r, step = result[member], last[member]
  out[#out + 1] = r.str
  out[#out + 1] = r.kind
  if step then
    local cur = state[member]
    put(member, before[member] or nil, cur, base + step)
    out[#out + 1] = step
    out[#out + 1] = cur.str
    out[#out + 1] = cur.kind
  else
    out[#out + 1] = 0
    out[#out + 1] = false
    out[#out + 1] = false
  end
end
if steps > 0 then
  clock_raise(base + steps)
  touched()
  save()
end
return out
"""
)

#: remove_many.  ARGV: 2.. members.  Returns the members that were present.
REMOVE: Final = """
guard()
local tag = board_tag()
for i = 2, #ARGV do check_tag(tag, ARGV[i]) end
local out = {}
for i = 2, #ARGV do
  if delete(ARGV[i]) then out[#out + 1] = ARGV[i] end
end
if #out > 0 then touched() end
save()
return out
"""

#: clear.  ARGV: 2 want the members (1/0).  Returns them (or their number).
CLEAR: Final = """
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
"""

#: set_meta.  ARGV: 2 member, 3 set (1) or remove (0), 4 metadata.
#: Returns -1 (no such member), 0 (unchanged) or 1.
SET_META: Final = """
guard()
local member = ARGV[2]
check_tag(board_tag(), member)
if redis.call('HEXISTS', H, member) == 0 then return -1 end
local cur = redis.call('HGET', M, member)
if ARGV[3] == '1' then
  if cur == ARGV[4] then return 0 end
  redis.call('HSET', M, member, ARGV[4])
else
  if not cur then return 0 end
  redis.call('HDEL', M, member)
end
touched()
save()
return 1
"""

#: Removals by position or score, and pops.  ARGV: 2 selector, then
#:   'rank'  3 start 4 stop (1-based, negative from the bottom) 5 want members
#:   'score' 3..8 bounds (see span) 9 want members
#:   'pop'   3 count 4 best (1/0) 5 with meta
#: 'rank'/'score' return the removed members in rank / index order (or their
#: number); 'pop' returns {n before, then element, double, kind, meta per row}.
REMOVE_RANGE: Final = """
guard()
local sel = ARGV[2]
local n = redis.call('ZCARD', Z)
local r, want, out = {}, false, {}
if sel == 'rank' then
  r = rows(window(tonumber(ARGV[3]), tonumber(ARGV[4]), n))
  want = ARGV[5] == '1'
elseif sel == 'score' then
  local lo, hi = span(3, n)
  if lo < hi then r = redis.call('ZRANGE', Z, lo, hi - 1, 'WITHSCORES') end
  want = ARGV[9] == '1'
else
  local count = math.min(tonumber(ARGV[3]), n)
  if count > 0 then
    if ARGV[4] == '1' then
      r = rows(0, count)
    elseif DESC then
      r = redis.call('ZRANGE', Z, 0, count - 1, 'WITHSCORES')
    else
      r = redis.call('ZREVRANGE', Z, 0, count - 1, 'WITHSCORES')
    end
  end
  out = emit({n}, r, ARGV[5] == '1')
end
local gone = {}
for i = 1, #r, 2 do
  local member = member_of(r[i])
  delete(member)
  gone[#gone + 1] = member
end
if #gone > 0 then touched() end
save()
if sel == 'pop' then return out end
if want then return gone end
return #gone
"""

#: Range reads.  ARGV: 2 style (u/c/d), 3 with meta (1/0), 4 selector, then
#:   'rank'   5 start 6 stop (1-based, negative from the bottom)
#:   'win'    5 lo 6 hi (0-based, clamped)
#:   'page'   5 number 6 size
#:   'around' 5 member 6 above 7 below 8 fill (1/0)
#:   'score'  5..10 bounds (see span) 11 offset 12 limit (-1: none)
#:   'at'     5 rank (1-based, negative from the bottom)
#: Returns {lo, n, competition base, dense base, then element, double,
#: kind, meta per row}; lo = -1 when the 'around' member is absent, -2 when
#: the 'at' rank is outside the board (then the third slot is the rank).
RANGE: Final = """
local style, sel = ARGV[2], ARGV[4]
local n = redis.call('ZCARD', Z)
local lo, hi = 0, 0
if sel == 'rank' then
  lo, hi = window(tonumber(ARGV[5]), tonumber(ARGV[6]), n)
elseif sel == 'win' then
  lo, hi = math.max(tonumber(ARGV[5]), 0), math.min(tonumber(ARGV[6]), n)
elseif sel == 'page' then
  local size = tonumber(ARGV[6])
  local number = math.min(math.max(tonumber(ARGV[5]), 1), math.max(math.ceil(n / size), 1))
  lo = (number - 1) * size
  hi = math.min(lo + size, n)
elseif sel == 'around' then
  local old = lookup(ARGV[5])
  if not old then return {-1, n, 0, 0} end
  local r0 = unique_rank0(old.el)
  lo, hi = r0 - tonumber(ARGV[6]), r0 + tonumber(ARGV[7]) + 1
  if ARGV[8] == '1' then
    if lo < 0 then
      hi, lo = math.min(n, hi - lo), 0
    elseif hi > n then
      lo, hi = math.max(0, lo - (hi - n)), n
    end
  end
  lo, hi = math.max(lo, 0), math.min(hi, n)
elseif sel == 'score' then
  local a, b = span(5, n)
  if DESC then lo, hi = n - b, n - a else lo, hi = a, b end
  lo = lo + tonumber(ARGV[11])
  local limit = tonumber(ARGV[12])
  if limit >= 0 then hi = math.min(hi, lo + limit) end
elseif sel == 'at' then
  local r = tonumber(ARGV[5])
  if r < 0 then r = r + n + 1 end
  if r < 1 or r > n then return {-2, n, r, 0} end
  lo, hi = r - 1, r
end
if lo >= hi then return {lo, n, 0, 0} end
local r = rows(lo, hi)
local out = {lo, n, 0, 0}
if style ~= 'u' then
  local first = value(r[2], ordkey_of(r[1]), '')
  if style == 'c' then out[3] = ahead(first) else out[4] = ahead_distinct(first) end
end
return emit(out, r, ARGV[3] == '1')
"""

#: Point reads for a list of members.  ARGV: 2 style (u/c/d, or - for no
#: rank), 3 with meta, 4.. members.  Returns double, element, kind, rank,
#: meta per member (false for all five when absent).
ENTRIES: Final = """
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
      out[#out + 1] = redis.call('HGET', M, member)
    else
      out[#out + 1] = false
    end
  end
end
return out
"""

#: percentile.  ARGV: 2 member.  Returns {n, members below its score,
#: members at or below it} (ascending order), or {-1}.
PERCENTILE: Final = """
local old = lookup(ARGV[2])
if not old then return {-1} end
return {redis.call('ZCARD', Z), count_z(old.str, old.ok, false), count_z(old.str, old.ok, true)}
"""

#: Counts for a hypothetical score.  ARGV: 2 what, 3 double, 4 ordkey:
#:   'rank' + 5 style  -> the rank that score would get now
#:   'span' + 5..10    -> how many members lie between two bounds
RANK_FOR: Final = """
if ARGV[2] == 'span' then
  local lo, hi = span(5, redis.call('ZCARD', Z))
  return hi - lo
end
local style, str, ok = ARGV[5], ARGV[3], ARGV[4]
if style == 'd' then
  return ahead_distinct(value(str, ok, '')) + 1
end
-- a newcomer ranks after the members already on its score (unique) or with
-- them (competition)
local inclusive = (style == 'u')
if DESC then inclusive = not inclusive end
local below = count_z(str, ok, inclusive)
if DESC then return redis.call('ZCARD', Z) - below + 1 end
return below + 1
"""

#: score_at_percentile.  ARGV: 2 percentile.  Returns {n, element, double,
#: kind of the lower neighbour, then of the upper one} (worst-first).
SCORE_AT: Final = """
local n = redis.call('ZCARD', Z)
if n == 0 then return {0} end
local x = (n - 1) * tonumber(ARGV[2]) / 100
local lo = math.floor(x)
local out = {n}
for _, j in ipairs({lo, math.min(lo + 1, n - 1)}) do
  local r
  if DESC then
    r = redis.call('ZRANGE', Z, j, j, 'WITHSCORES')
  else
    r = redis.call('ZREVRANGE', Z, j, j, 'WITHSCORES')
  end
  out[#out + 1] = r[1]
  out[#out + 1] = r[2]
  out[#out + 1] = kind_of(r[1], member_of(r[1]))
end
return out
"""

#: Sharding reads.  ARGV: 2 what, then
#:   'before'   3 double 4 probe: members ranked strictly ahead of the key
#:              (which need not be on this board); the probe is the
#:              element up to the clock digits (first-to-reach boards) or
#:              the whole element (tie by member)
#:   'distinct' 3 double 4 ordkey: the distinct scores strictly better, as
#:              D elements with their doubles
SHARD: Final = """
local str = ARGV[3]
if ARGV[2] == 'before' then
  local probe = ARGV[4]
  local n = redis.call('ZCARD', Z)
  local below = redis.call('ZCOUNT', Z, '-inf', '(' .. str)
  local eq = redis.call('ZCOUNT', Z, str, str)
  local a = search(Z, below, eq, function(el) return bytes_less(el, probe) end)
  if not DESC then return below + a end
  local same_key = 0
  if a < eq then
    local el = redis.call('ZRANGE', Z, below + a, below + a)[1]
    if el == probe or (FIRST and sub(el, 1, #probe) == probe) then same_key = 1 end
  end
  return (n - below - eq) + (eq - a - same_key)
end
ensure_dense()
local nd = redis.call('ZCARD', D)
if DESC then
  local at = count_d(str, ARGV[4], true)
  if at >= nd then return {} end
  return redis.call('ZRANGE', D, at, nd - 1, 'WITHSCORES')
end
local at = count_d(str, ARGV[4], false)
if at == 0 then return {} end
return redis.call('ZRANGE', D, 0, at - 1, 'WITHSCORES')
"""

#: Apply explicit changes: exact increments, replay, restore, sharded
#: batches.  ARGV: 2 clock floor, then ops:
#:   'X' member double ordkey kind  precondition ('' double: member absent)
#:   'P' member double ordkey kind clock   put with this clock
#:   'R' member double ordkey kind step    put with clock base + step
#:   'T' steps                      the clock becomes base + steps
#:   'D' member
#:   'M' member flag meta           flag 1 sets, 0 removes
#:   'C' clock                      raise the clock to at least this
#:   'W' writes                     set the write counter (restore)
#: base = max(clock, floor) when the script starts.  Returns {1, base} or
#: {0} when a precondition failed (nothing written).
COMMIT: Final = """
guard()
local WIDTH = {X = 5, P = 6, R = 6, T = 2, D = 2, M = 4, C = 2, W = 2}
local tag = board_tag()
local i = 3
while i <= #ARGV do
  local op = ARGV[i]
  if not WIDTH[op] then fail('VALUE', 'unknown op ' .. op) end
  if op == 'X' then
    local old = lookup(ARGV[i + 1])
    if ARGV[i + 2] == '' then
      if old then return {0} end
    elseif not old or old.kind ~= ARGV[i + 4]
        or not same(old, value(ARGV[i + 2], ARGV[i + 3], '')) then
      return {0}
    end
  elseif (op == 'P' or op == 'R') and redis.call('HEXISTS', H, ARGV[i + 1]) == 0 then
    check_tag(tag, ARGV[i + 1])
  end
  i = i + WIDTH[op]
end
local base = clock_base(tonumber(ARGV[2]))
local changed, writes = false, nil
i = 3
while i <= #ARGV do
  local op = ARGV[i]
  if op == 'P' or op == 'R' then
    local member = ARGV[i + 1]
    local clock = tonumber(ARGV[i + 5])
    if op == 'R' then clock = base + clock end
    clock_raise(clock)
    put(member, lookup(member), value(ARGV[i + 2], ARGV[i + 3], ARGV[i + 4]), clock)
    changed = true
  elseif op == 'T' then
    clock_raise(base + tonumber(ARGV[i + 1]))
  elseif op == 'D' then
    if delete(ARGV[i + 1]) then changed = true end
  elseif op == 'M' then
    if ARGV[i + 2] == '1' then
      redis.call('HSET', M, ARGV[i + 1], ARGV[i + 3])
    else
      redis.call('HDEL', M, ARGV[i + 1])
    end
    changed = true
  elseif op == 'C' then
    clock_raise(tonumber(ARGV[i + 1]))
  elseif op == 'W' then
    writes = tonumber(ARGV[i + 1])
  end
  i = i + WIDTH[op]
end
if writes then
  writes_now, dirty = writes, true
elseif changed then
  touched()
end
save()
return {1, base}
"""

#: Every script by name, each with the helper sections it needs in front.
SCRIPTS: Final[dict[str, str]] = {
    name: _prelude(name) + body
    for name, body in {
        "INIT": INIT,
        "SIZE": SIZE,
        "SET": SET,
        "INCR": INCR,
        "SET_MANY": SET_MANY,
        "INCR_MANY": INCR_MANY,
        "REMOVE": REMOVE,
        "CLEAR": CLEAR,
        "SET_META": SET_META,
        "REMOVE_RANGE": REMOVE_RANGE,
        "RANGE": RANGE,
        "ENTRIES": ENTRIES,
        "PERCENTILE": PERCENTILE,
        "RANK_FOR": RANK_FOR,
        "SCORE_AT": SCORE_AT,
        "SHARD": SHARD,
        "COMMIT": COMMIT,
    }.items()
}


class ScriptError(Exception):
    """A script refused its input: ``code`` is ``TYPE``, ``VALUE`` or ``RANGE``.

    >>> str(ScriptError("TYPE", "si"))
    'TYPE si'
    """

    def __init__(self, code: str, detail: str) -> None:
        super().__init__(f"{code} {detail}")
        self.code = code
        self.detail = detail


class ScriptRunner:
    """Calls the scripts by SHA1 (``EVALSHA``), loading one on ``NOSCRIPT``.

    A server that restarted, or a replica promoted by a failover, has an
    empty script cache: the first call after it loads every script again
    (``SCRIPT LOAD`` goes to every master on a cluster) and retries once.

    Runtime complexity: O(1) besides the script's own work.

    >>> runner = ScriptRunner(client=None)
    >>> len(runner.sha["SET"])
    40
    """

    def __init__(self, client: Any) -> None:
        self.client = client
        self.sha = {
            name: hashlib.sha1(source.encode(), usedforsecurity=False).hexdigest()
            for name, source in SCRIPTS.items()
        }

    def load(self) -> None:
        """Load every script (one pipelined round trip where the client allows)."""
        try:
            pipe = self.client.pipeline(transaction=False)
            for source in SCRIPTS.values():
                pipe.script_load(source)
            pipe.execute()
        except Exception:  # e.g. a cluster pipeline: load them one by one
            for source in SCRIPTS.values():
                self.client.script_load(source)

    def __call__(self, name: str, keys: list[str], args: list[Any]) -> Any:
        from redis.exceptions import NoScriptError, ResponseError

        try:
            try:
                return self.client.evalsha(self.sha[name], len(keys), *keys, *args)
            except NoScriptError:
                self.load()
                return self.client.evalsha(self.sha[name], len(keys), *keys, *args)
        except ResponseError as exc:
            message = str(exc)
            if message.startswith("RANKENGINE_"):
                head = message.split(" script:", maxsplit=1)[0]
                code, _, detail = head[len("RANKENGINE_") :].partition(" ")
                raise ScriptError(code, detail) from None
            raise
