-- Helper section 'core', in front of every script: the board's keys, its
-- mode (ARGV[1]), failing, the state hash (read once, saved once) and the
-- write guard of a logged board.

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
local ST = redis.call('HMGET', S, 'clock', 'writes', 'inexact', 'dense', 'config')
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
-- A write also passes, after '@' in ARGV[1], the SHA1 of the settings its
-- handle opened the board with, as stored (the config field, read above
-- anyway).  If Redis lost the board while the handle had it open and
-- another process created it again with other settings (order, ties,
-- columns, packing), the handle's encoding would corrupt it: the write
-- refuses before any change, and the client reads the settings again.
local SETTINGS = string.match(MODE, '@(%x+)')
-- A board opened before Redis lost it (a restart, a flush) has no settings:
-- a write waits until the client has stored them again (as on open).
local function guard()
  if not ST[5] then fail('CONFIG', 'the board has no settings') end
  if SETTINGS and redis.sha1hex(ST[5]) ~= SETTINGS then
    fail('SETTINGS', 'the board was created again with other settings')
  end
  if GUARD and writes_now ~= tonumber(GUARD) then
    fail('STALE', fmt('%.0f', writes_now) .. ' ' .. GUARD)
  end
end

-- A write passes its caller's reply key as KEYS[7] and a call number after
-- '#' in ARGV[1].  redis-py sends a call again when the connection drops
-- before the reply (a reset, a socket timeout): Redis may have run it
-- already.  A write that changed something keeps its reply there for
-- REPLY_TTL seconds, and the same call arriving again gets that reply back
-- instead of running twice (an increment added twice, a batch applied twice).
local R = KEYS[7]
local CALL = string.match(MODE, '#(%d+)')
local REPLY_TTL = 300
local function replayed()
  if not R or not CALL then return nil end
  local last = redis.call('GET', R)
  if not last then return nil end
  local at = string.find(last, ' ', 1, true)
  if sub(last, 1, at - 1) ~= CALL then return nil end
  return cmsgpack.unpack(sub(last, at + 1))
end
local function reply(out)
  if dirty and R and CALL then
    redis.call('SET', R, CALL .. ' ' .. cmsgpack.pack(out), 'EX', REPLY_TTL)
  end
  return out
end
