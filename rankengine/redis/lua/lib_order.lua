-- Helper section 'order': byte order, the parts of an element, score
-- values and how they compare.

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
  return {num = tonum(str), str = str, ok = ok, kind = kind}
end

-- Canonical text of a double (-0 and 0 are one score).
local function canon(x)
  if x == 0 then x = 0 end
  return fmt('%.17g', x)
end
