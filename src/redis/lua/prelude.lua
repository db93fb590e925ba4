-- nanolimit: what every step script shares. Redis Lua numbers are IEEE doubles, exact only
-- below 2^53, while state words and times are u64 (GCRA ticks reach 2^63 + 2^62). So a u64 is
-- four limbs of 16 bits, least significant first, and every sum, carry and partial product
-- below stays under 2^36: the arithmetic is exact, and equal to the crate's Rust step.
--
-- Arguments common to every step script (the rest are the quota's, from ARGV[4] on):
--   ARGV[1]  the time in ns since the limiter's epoch, 16 hex digits; empty: read the server's TIME
--   ARGV[2]  the limiter's epoch, in whole seconds of the Unix clock (for TIME)
--   ARGV[3]  '1' to apply an admission (a check), '0' to write nothing (a peek)
-- Every script replies {allowed (1 or 0), the word the decision was made on (16 hex digits: the
-- word written if admitted by a check, else the stored one), the time judged at (16 hex digits)}.

local LIMB = 65536
local ZERO = {0, 0, 0, 0}
-- Timestamp::HORIZON: 2^59 ns after the epoch.
local HORIZON_NS = {0, 0, 0, 2048}

local function u64_from_hex(text)
  if type(text) ~= 'string' or #text ~= 16 or not string.match(text, '^%x+$') then
    error('nanolimit: not a 16-hex-digit word: ' .. tostring(text))
  end
  return {
    tonumber(string.sub(text, 13, 16), 16),
    tonumber(string.sub(text, 9, 12), 16),
    tonumber(string.sub(text, 5, 8), 16),
    tonumber(string.sub(text, 1, 4), 16),
  }
end

local function u64_to_hex(a)
  return string.format('%04x%04x%04x%04x', a[4], a[3], a[2], a[1])
end

-- An integer 0 <= n < 2^53.
local function u64_from_small(n)
  local a = {}
  for i = 1, 4 do
    local rest = math.floor(n / LIMB)
    a[i] = n - rest * LIMB
    n = rest
  end
  return a
end

-- The nearest double: only for expiry times, never for a decision.
local function to_double(a)
  local value = 0
  for i = #a, 1, -1 do
    value = value * LIMB + a[i]
  end
  return value
end

-- -1, 0 or 1; `a` and `b` have the same number of limbs.
local function compare(a, b)
  for i = #a, 1, -1 do
    if a[i] ~= b[i] then
      if a[i] < b[i] then return -1 end
      return 1
    end
  end
  return 0
end

local function larger(a, b)
  if compare(a, b) >= 0 then return a end
  return b
end

-- a + b; callers keep it below 2^64 (an error otherwise, never a wrap).
local function add(a, b)
  local sum, carry = {}, 0
  for i = 1, 4 do
    local s = a[i] + b[i] + carry
    if s >= LIMB then
      sum[i] = s - LIMB
      carry = 1
    else
      sum[i] = s
      carry = 0
    end
  end
  if carry ~= 0 then error('nanolimit: u64 overflow') end
  return sum
end

-- a - b, or nil when b > a.
local function subtract(a, b)
  local difference, borrow = {}, 0
  for i = 1, 4 do
    local d = a[i] - b[i] - borrow
    if d < 0 then
      difference[i] = d + LIMB
      borrow = 1
    else
      difference[i] = d
      borrow = 0
    end
  end
  if borrow ~= 0 then return nil end
  return difference
end

-- The full 128-bit product of two u64: eight limbs.
local function multiply(a, b)
  local product = {0, 0, 0, 0, 0, 0, 0, 0}
  for i = 1, 4 do
    local carry = 0
    for j = 1, 4 do
      local t = product[i + j - 1] + a[i] * b[j] + carry
      carry = math.floor(t / LIMB)
      product[i + j - 1] = t - carry * LIMB
    end
    product[i + 4] = carry
  end
  return product
end

-- a × m for an integer 0 <= m < 2^20 (a count): six limbs.
local function multiply_small(a, m)
  local product, carry = {}, 0
  for i = 1, 4 do
    local t = a[i] * m + carry
    carry = math.floor(t / LIMB)
    product[i] = t - carry * LIMB
  end
  product[5] = carry % LIMB
  product[6] = math.floor(carry / LIMB)
  return product
end

-- The limbs of `a` (any length) shifted right by `k` bits, as a u64 (callers know it fits).
local function shift_right(a, k)
  local whole, bits = math.floor(k / 16), k % 16
  local low_scale = 2 ^ bits
  local high_scale = LIMB / low_scale
  local shifted = {}
  for i = 1, 4 do
    local low = a[i + whole] or 0
    local high = a[i + whole + 1] or 0
    shifted[i] = math.floor(low / low_scale) + (high % low_scale) * high_scale
  end
  return shifted
end

local function low_u64(a)
  return {a[1], a[2], a[3], a[4]}
end

-- The time to judge at, in ns since the limiter's epoch: the caller's, or the server's clock.
local function read_now()
  if ARGV[1] ~= '' then return u64_from_hex(ARGV[1]) end
  local time = redis.call('TIME')
  local seconds = tonumber(time[1]) - tonumber(ARGV[2])
  -- 576460752 s is past the horizon (2^59 ns): checked before the product, which then fits.
  if seconds < 0 or seconds > 576460752 then
    error('nanolimit: the server clock is outside the limiter epoch and its horizon')
  end
  local now_ns = add(low_u64(multiply(u64_from_small(seconds), u64_from_small(1000000000))),
    u64_from_small(tonumber(time[2]) * 1000))
  if compare(now_ns, HORIZON_NS) > 0 then
    error('nanolimit: the server clock is past the limiter horizon')
  end
  return now_ns
end

local APPLY = ARGV[3] == '1'

-- Milliseconds for PEXPIRE from a time in ns (a double, a little over the exact value):
-- rounded up, plus a millisecond for the double's rounding, so a key never expires before its
-- state is as good as fresh; at most the horizon (2^59 ns), past which no time is judged.
local function expiry_ms(ns)
  return math.min(math.floor(ns / 1000000) + 2, 576460752304)
end
