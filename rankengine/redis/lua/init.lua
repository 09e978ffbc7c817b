-- Open a board: check that each key holds what the board keeps there (the
-- state hash is checked by reading it first), store the settings unless
-- the board has some (ARGV[3] '1'), and return the stored settings (nil for
-- none) and the write counter.
-- ARGV: 2 settings (JSON), 3 '1' to store them, '0' to only read.

state()  -- (first: a state key of another type fails here, named by the client)

local board_keys = {Z, H, M, D, C}
for i, want in ipairs({'zset', 'hash', 'hash', 'zset', 'hash'}) do
  local have = call('TYPE', board_keys[i]).ok
  if have ~= 'none' and have ~= want then fail('KEYTYPE', i .. ' ' .. have) end
end
if ARGV[3] == '1' and not ST[5] then
  call('HSET', S, 'config', ARGV[2])
  return {ARGV[2], fmt('%.0f', writes_now)}
end
return {ST[5], fmt('%.0f', writes_now)}
