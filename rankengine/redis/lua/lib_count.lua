-- Helper section 'count': members and distinct scores below a score, and
-- the positions of a score range.

-- Binary search of a run of equal doubles: how many of its first `eq`
-- entries (from position `base` of `key`) satisfy `yes`, a predicate that
-- holds on a prefix of the run.  O(log eq * log N).
local function search(key, base, eq, yes)
  local a, b = 0, eq
  while a < b do
    local mid = math.floor((a + b) / 2)
    if yes(call('ZRANGE', key, base + mid, base + mid)[1]) then a = mid + 1 else b = mid end
  end
  return a
end

-- Members whose score is below (str, ok), or at or below with `inclusive`.
local function count_z(str, ok, inclusive)
  local below = call('ZCOUNT', Z, '-inf', '(' .. str)
  if ok == '' and not inclusive then return below end
  local eq = call('ZCOUNT', Z, str, str)
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
  local below = call('ZCOUNT', D, '-inf', '(' .. str)
  local eq = call('ZCOUNT', D, str, str)
  if eq == 0 then return below end
  if plain() then
    if inclusive or ok ~= '' then return below + eq end
    return below
  end
  local key = canon(tonum(str)) .. '|' .. ok
  return below + search(D, below, eq, function(el)
    if inclusive then return not bytes_less(key, el) end
    return bytes_less(el, key)
  end)
end

-- Members (distinct scores) strictly better than v.  On a descending
-- board where no score has an ordkey, those are the elements of a higher
-- double: one ZCOUNT (else: all of them, less those at or below v).
local function ahead(v)
  if DESC then
    if v.ok == '' and plain() then return call('ZCOUNT', Z, '(' .. v.str, '+inf') end
    return call('ZCARD', Z) - count_z(v.str, v.ok, true)
  end
  return count_z(v.str, v.ok, false)
end
local function ahead_distinct(v)
  if DESC then
    ensure_dense()
    if v.ok == '' and plain() then return call('ZCOUNT', D, '(' .. v.str, '+inf') end
    return call('ZCARD', D) - count_d(v.str, v.ok, true)
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
