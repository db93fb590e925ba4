-- GCRA's step (src/quota/gcra.rs, `Quota::step` of `Gcra`) on the key's word, the theoretical
-- arrival time in ticks. Arguments after the common three (see the prelude), all decimal:
--   ARGV[4..5]  the quota's scale q, ticks per ns × 2^59 (at most 2^63): its bits 48 and up
--               (at most 2^15), then its low 48 bits, q = ARGV[4]·2^48 + ARGV[5]
--   ARGV[6..7]  the slack tau − n·T (the tolerance less the request's increment), in ticks, as
--               limbs of 32 bits (high, low); '-1' and '0' when n·T > tau (never admitted)
--   ARGV[8..9]  the request's increment n·T, in ticks, as limbs of 32 bits (high, low)
--   ARGV[10]    nanoseconds per tick, rounded up, for the expiry only
-- Ticks (below 2^64) are limbs of 32 bits here, high and low: sums and comparisons only.

-- The reading in ticks, floor(now_ns × q / 2^59), as the crate's `instant`: the product's
-- limbs of 24 bits (each a sum of at most three products of limbs and a carry, below 2^50),
-- carried up, and its bits 59 to 122: now_hi·2^32 + now_lo = d2·2^37 + d1·2^13 + floor(d0 / 2^11)
-- (the limbs below d0 only carry into it; q2 <= 2^15 and n2 <= 2^11 keep d2 below 2^27).
local q2, q_low = ARGV[4] + 0, ARGV[5] + 0
local q0 = q_low % 16777216
local q1 = (q_low - q0) / 16777216
local c = n0 * q0
c = n0 * q1 + n1 * q0 + (c - c % 16777216) / 16777216
c = n0 * q2 + n1 * q1 + n2 * q0 + (c - c % 16777216) / 16777216
local d0 = c % 16777216
c = n1 * q2 + n2 * q1 + (c - d0) / 16777216
local d1 = c % 16777216
local d2 = n2 * q2 + (c - d1) / 16777216
local now_lo = d1 % 524288 * 8192 + (d0 - d0 % 2048) / 2048
local now_hi = d2 * 32 + (d1 - d1 % 524288) / 524288

local stored = redis.call('GET', KEYS[1])
local tat_hi, tat_lo = 0, 0
if stored then
  tat_hi = tonumber(string.sub(stored, 1, 8), 16)
  tat_lo = tonumber(string.sub(stored, 9, 16), 16)
  if #stored ~= 16 or not (tat_hi and tat_lo) then
    error('nanolimit: not a 16-hex-digit word: ' .. stored)
  end
else
  stored = '0000000000000000'
end

-- max(tat, now) + n·T <= now + tau, as the Rust step writes it: max(tat, now) <= now + tau − n·T.
local slack_hi = ARGV[6] + 0
if slack_hi >= 0 then
  local latest_hi, latest_lo = now_hi + slack_hi, now_lo + ARGV[7]
  if latest_lo >= 4294967296 then
    latest_hi, latest_lo = latest_hi + 1, latest_lo - 4294967296
  end
  local base_hi, base_lo = now_hi, now_lo
  if tat_hi > now_hi or (tat_hi == now_hi and tat_lo > now_lo) then
    base_hi, base_lo = tat_hi, tat_lo
  end
  if base_hi < latest_hi or (base_hi == latest_hi and base_lo <= latest_lo) then
    if not APPLY then
      return {1, stored, now_high, n0}
    end
    -- At most now + tau, below 2^63 + 2^62.
    local word_hi, word_lo = base_hi + ARGV[8], base_lo + ARGV[9]
    if word_lo >= 4294967296 then
      word_hi, word_lo = word_hi + 1, word_lo - 4294967296
    end
    local word = string.format('%08x%08x', word_hi, word_lo)
    -- The state is as good as fresh once now reaches the word: its reset-after, the exact
    -- difference rounded once to a double, in ms rounded down (x − x % 1), plus 2: a
    -- millisecond for the rounding down, one for the doubles' rounding, so a key never
    -- expires before its state is as good as fresh; at most the horizon (2^59 ns), past
    -- which no time is judged.
    local ms = ((word_hi - now_hi) * 4294967296 + (word_lo - now_lo)) * ARGV[10] / 1000000
    ms = ms - ms % 1 + 2
    if ms > 576460752304 then ms = 576460752304 end
    redis.call('SET', KEYS[1], word, 'PX', ms)
    return {1, word, now_high, n0}
  end
end
return {0, stored, now_high, n0}
