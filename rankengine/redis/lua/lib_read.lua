-- Helper section 'read': rows of the ranking, unique ranks, rank windows
-- and reply rows.

-- The kind of a row: in the element on first-to-reach boards, else in H.
local function kind_of(el, member)
  if FIRST then
    local at = ok_end(el) + 16
    return sub(el, at, at + KLEN - 1)
  end
  local hv = call('HGET', H, member)
  return sub(hv, 1, string.find(hv, ':', 1, true) - 1)
end

-- Elements (and doubles) of 0-based ranks lo <= r < hi, best first.
local function rows(lo, hi)
  if lo >= hi then return {} end
  if DESC then return call('ZREVRANGE', Z, lo, hi - 1, 'WITHSCORES') end
  return call('ZRANGE', Z, lo, hi - 1, 'WITHSCORES')
end

local function unique_rank0(el)
  if DESC then return call('ZREVRANK', Z, el) end
  return call('ZRANK', Z, el)
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
      out[#out + 1] = call('HGET', M, member)
    else
      out[#out + 1] = false
    end
  end
  return out
end
