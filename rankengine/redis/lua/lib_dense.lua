-- Helper section 'dense': the distinct scores (D) and their counts (C)
-- behind dense ranks, built on the first dense read.

local function dense_add(v)
  local key = canon(v.num) .. '|' .. v.ok
  if call('HINCRBY', C, key, 1) == 1 then call('ZADD', D, canon(v.num), key) end
end

local function dense_remove(v)
  local key = canon(v.num) .. '|' .. v.ok
  if call('HINCRBY', C, key, -1) <= 0 then
    call('HDEL', C, key)
    call('ZREM', D, key)
  end
end

-- The distinct scores are built on the first dense read (O(N), once), as
-- the in-process board builds its counts; writes keep them from then on.
local function ensure_dense()
  state()
  if DENSE then return end
  call('DEL', D, C)
  local n = call('ZCARD', Z)
  local counts, order = {}, {}
  for start = 0, n - 1, 5000 do
    local r = call('ZRANGE', Z, start, start + 4999, 'WITHSCORES')
    for i = 1, #r, 2 do
      local d = canon(tonum(r[i + 1]))
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
      call('HSET', C, unpack(hc))
      call('ZADD', D, unpack(zd))
      hc, zd = {}, {}
    end
  end
  call('HSET', S, 'dense', '1')
  DENSE = true
end
