-- Helper section 'core', in front of every script: the board's keys, its
-- mode (ARGV[1]), failing, the state hash (read once, saved once) and the
-- write guard of a logged board.
--
-- The helpers are defined once for the library of functions (FUNCTION
-- LOAD; every call is an FCALL), or in front of each script where the
-- server has no functions (EVALSHA).  Either way a call starts with
-- begin(keys, argv), which sets everything below that belongs to the call:
-- nothing is left from the call before it.

local KEYS, ARGV
local Z, H, M, D, C, S
local MODE, DESC, FIRST, COLS, KLEN
local PLEN = 0
-- Largest tie clock, and the bound of exact integers in a double (2**53).
local MAXCLOCK = 9007199254740991
local EXACT = 9007199254740992
-- The string functions, and -0.0 (made at run time: Lua 5.1 may fold a
-- -0.0 literal into the constant 0), set by the first call: a library of
-- functions is loaded with no standard library in reach, only redis.
local sub, byte, fmt, match, NEG_ZERO
-- redis.call and tonumber, kept as locals by the first call too: in a
-- function, a global is read through the metatable of an empty table
-- (Redis 7's sandbox), and redis.call is a global and a field, so each
-- use was two or three table look-ups (an increment makes six Redis calls
-- and six tonumbers: about 2,700 server instructions of its 120,000, counted
-- by bench/redis_run_instructions.py; see docs/redis.md).
local call, tonum

local function fail(code, detail)
  error({err = 'RANKENGINE_' .. code .. ' ' .. detail})
end

-- The board's state, read once (state, by the calls that need it: every
-- write, and the reads that count distinct scores or search ties) and
-- written once (save) per call.
local ST, clock_now, writes_now, inexact_now, inexact_read, DENSE, dirty
-- A board with an event log passes the log's last sequence number after a
-- colon in ARGV[1]; a write refuses to run unless Redis has seen exactly
-- that many writes (it lost some, or has one the log does not).
local GUARD
-- A write also passes, after '@' in ARGV[1], the SHA1 of the settings its
-- handle opened the board with, as stored (the config field, read with the
-- state anyway).  If Redis lost the board while the handle had it open and
-- another process created it again with other settings (order, ties,
-- columns, packing), the handle's encoding would corrupt it: the write
-- refuses before any change, and the client reads the settings again.
local SETTINGS
-- The settings last hashed, and their SHA1: the library of functions keeps
-- them from one call to the next (settings rarely change), so a write
-- hashes them only when they differ from the last ones seen.
local config_seen, config_sha
-- A write passes its caller's reply key as its last key and a call number
-- after '#' in ARGV[1] (see replayed, below), or after '!' when the client
-- knows this is the call's first sending: nothing to look for, the reply
-- is only kept (FRESH).
local R, CALL, FRESH
local REPLY_TTL = 300

-- A script gets the board's six keys (and the reply key): Redis Cluster
-- routes by them.  A function gets only the ranking's (and the reply key):
-- each key is a Lua string made for the call (about half a microsecond of
-- server time apiece), and the others follow from it ('...:z' -> '...:h'),
-- derived once and kept by the library from one call to the next.
-- (At most DERIVED boards' keys are kept: past them the table starts again.)
local DERIVED = 1000
local derived, n_derived = {}, 0
local function board_keys(keys)
  if #keys >= 6 then return keys[1], keys[2], keys[3], keys[4], keys[5], keys[6], keys[7] end
  local z = keys[1]
  local k = derived[z]
  if not k then
    local base = sub(z, 1, #z - 1)
    k = {base .. 'h', base .. 'm', base .. 'd', base .. 'c', base .. 's'}
    if n_derived >= DERIVED then derived, n_derived = {}, 0 end
    derived[z], n_derived = k, n_derived + 1
  end
  return z, k[1], k[2], k[3], k[4], k[5], keys[2]
end

-- The parts of the modes that carry no call number and no guard (a client
-- that never sends a call again, a read, a board without a log): the same
-- string on every call of a board, parsed once (at most MODES of them).
local MODES = 1000
local modes, n_modes = {}, 0

local function begin(keys, argv)
  if not sub then
    sub, byte, fmt, match = string.sub, string.byte, string.format, string.match
    call, tonum = redis.call, tonumber
    NEG_ZERO = tonum('-0')
  end
  KEYS, ARGV = keys, argv
  Z, H, M, D, C, S, R = board_keys(keys)
  MODE = argv[1]
  ST, dirty = nil, false
  local known = modes[MODE]
  if known then  -- (a mode seen before with no call number and no guard)
    DESC, FIRST, COLS, KLEN, PLEN, SETTINGS = known[1], known[2], known[3], known[4], known[5], known[6]
    GUARD, CALL, FRESH = nil, nil, false
    return
  end
  DESC = sub(MODE, 1, 1) == 'd'
  FIRST = sub(MODE, 2, 2) == 'f'
  COLS = byte(MODE, 3) - 48
  KLEN = byte(MODE, 4) - 48
  PLEN = 0
  if FIRST then PLEN = 16 + KLEN end
  GUARD, SETTINGS, CALL, FRESH = nil, nil, nil, false
  if #MODE > 4 then  -- (one match: '#' or '!' call, '@' settings, ':' guard, each optional)
    local mark
    mark, CALL, SETTINGS, GUARD = match(MODE, '^....([#!]?)(%d*)@?(%x*):?(%d*)$')
    FRESH = mark == '!'
    if CALL == '' then CALL = nil end
    if SETTINGS == '' then SETTINGS = nil end
    if GUARD == '' then GUARD = nil end
  end
  if not CALL and not GUARD then
    if n_modes >= MODES then modes, n_modes = {}, 0 end
    modes[MODE], n_modes = {DESC, FIRST, COLS, KLEN, PLEN, SETTINGS}, n_modes + 1
  end
end

local function state()
  if ST then return end
  ST = call('HMGET', S, 'clock', 'writes', 'inexact', 'dense', 'config')
  clock_now = tonum(ST[1] or '0')
  writes_now = tonum(ST[2] or '0')
  inexact_now = ST[3] and tonum(ST[3]) or 0  -- (none kept on most boards: no parse)
  inexact_read = inexact_now
  DENSE = ST[4] == '1'
end

local function save()
  if not dirty then return end
  -- (formatted here: a server may write a Lua number with an exponent;
  -- each is an integer below 2**53, so '%d' writes what '%.0f' would,
  -- without formatting a double)
  if inexact_now == inexact_read then
    call('HSET', S, 'clock', fmt('%d', clock_now), 'writes', fmt('%d', writes_now))
  else
    call('HSET', S, 'clock', fmt('%d', clock_now), 'writes', fmt('%d', writes_now),
      'inexact', fmt('%d', inexact_now))
  end
end
-- Every write that changes something counts (compared with the event log):
-- one, or n (a pipeline's run of increments sent as one call counts as the
-- calls would alone).
local function touched(n) writes_now, dirty = writes_now + (n or 1), true end

-- A board opened before Redis lost it (a restart, a flush) has no settings:
-- a write waits until the client has stored them again (as on open).
local function guard()
  state()
  if not ST[5] then fail('CONFIG', 'the board has no settings') end
  if SETTINGS then
    if ST[5] ~= config_seen then config_seen, config_sha = ST[5], redis.sha1hex(ST[5]) end
    if config_sha ~= SETTINGS then
      fail('SETTINGS', 'the board was created again with other settings')
    end
  end
  if GUARD and writes_now ~= tonum(GUARD) then
    fail('STALE', fmt('%.0f', writes_now) .. ' ' .. GUARD)
  end
end

-- redis-py sends a call again when the connection drops before the reply
-- (a reset, a socket timeout): Redis may have run it already.  A write
-- that changed something keeps its reply in R for REPLY_TTL seconds, and
-- the same call arriving again gets that reply back instead of running
-- twice (an increment added twice, a batch applied twice).  A call marked
-- as sent for the first time (FRESH: the client sends it again only with
-- '#') skips the look-up, one Redis call fewer; one sent by a client that
-- never sends a call again has no call number, and keeps no reply.
local function replayed()
  if not R or not CALL or FRESH then return nil end
  local last = call('GET', R)
  if not last then return nil end
  local at = string.find(last, ' ', 1, true)
  if sub(last, 1, at - 1) ~= CALL then return nil end
  return cmsgpack.unpack(sub(last, at + 1))
end
local function reply(out)
  if dirty and R and CALL then
    call('SET', R, CALL .. ' ' .. cmsgpack.pack(out), 'EX', REPLY_TTL)
  end
  return out
end
