-- Helper section 'sum' (INCR and INCR_MANY only).
-- The increment fast path, for scalar boards: the stored score and the step
-- are exact doubles and an int result stays below 2**53.  Anything else asks
-- the client to do it exactly: it reads, adds in Python and commits with a
-- precondition.

local function sum(cur, step, skind)
  local base, bkind = 0, 'i'
  if cur then
    if cur.ok ~= '' then return nil end
    base, bkind = cur.num, cur.kind
    -- the stored double of -0.0 is 0 (its sign is in the kind): -0.0 + -0.0 is -0.0
    if bkind == 'z' then base = NEG_ZERO end
  end
  local new = base + tonum(step)
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
