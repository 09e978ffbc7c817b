-- Helper section 'clock': exact and inexact boards, the tie clock and the
-- tie prefix of an element.

-- A scalar board where no member has an ordkey: counts need no search.
local function plain()
  state()
  return COLS == 1 and inexact_now == 0
end
local function inexact(delta)
  if COLS == 1 then inexact_now, dirty = inexact_now + delta, true end
end

-- The logical clock.  Past MAXCLOCK a Lua number (a double) can no longer
-- tell neighbouring clocks apart, so a script that writes checks the
-- highest clock its changes need before its first write (clock_check);
-- clock_raise checks again as a last resort.
local function clock_check(c)
  if c > MAXCLOCK then
    fail('RANGE', fmt('the tie clock would pass 2**53 - 1 (it is at %.0f): ', clock_now)
      .. 'the write is refused whole, nothing was written')
  end
end
local function clock_raise(c)
  if c > clock_now then
    clock_check(c)
    clock_now, dirty = c, true
  end
end
local function clock_base(floor)
  if floor and floor > clock_now then return floor end
  return clock_now
end
-- A write's clock floor (an argument's text) as clock_base takes it: none
-- for '0', what nearly every call sends, with no parse (tonumber reads a
-- number with strtod, about 1,000 instructions).
local function floor_of(text)
  if text == '0' then return nil end
  return tonum(text)
end
local function clock_next(floor)
  local c = clock_base(floor) + 1
  clock_raise(c)
  return c
end

-- The tie part of an element: 16 digits in first-to-reach order, then the kind.
-- (A clock is an integer in 0..MAXCLOCK: '%016d' writes what '%016.0f'
-- would, without formatting a double, about 2,500 instructions less.)
local function prefix(clock)
  if DESC then clock = MAXCLOCK - clock end
  return fmt('%016d', clock)
end
