-- nanolimit: the head of every step script, the time to judge at. Redis Lua numbers are IEEE
-- doubles, exact only for integers below 2^53, while times and state words are u64 (GCRA
-- ticks reach 2^63 + 2^62). So the scripts split such values into limbs of 24 bits (the time,
-- the window length, the GCRA scale) or 32 bits (GCRA ticks), each a local (no table), and
-- keep every product of two limbs below 2^48 and every sum of products and carries below
-- 2^53: each operation is exact, and the decisions and words are the crate's Rust step's.
-- Carries are taken with `%` (x % 2^k is x − floor(x / 2^k)·2^k, exact for any integer below
-- 2^53, negative ones included, and in [0, 2^k)), and floor(x / 2^k) as (x − x % 2^k) / 2^k.
--
-- Arguments common to every step script (the rest are the quota's, from ARGV[4] on):
--   ARGV[1]  the time in ns since the limiter's epoch, 16 hex digits; empty: read the server's TIME
--   ARGV[2]  the limiter's epoch, in whole seconds of the Unix clock (for TIME)
--   ARGV[3]  '1' to apply an admission (a check), '0' to write nothing (a peek)
-- Every step script replies {allowed (1 or 0), the word the decision was made on (16 hex
-- digits: the word written if admitted by a check, else the stored one), the time judged at
-- as two integers, high and low: high·2^24 + low ns}.
--
-- The cost of a call is in what crosses into C: every function call (tonumber, string.sub,
-- string.format: 0.1 to 0.5 µs each on a busy server), each table, each new string. So the
-- scripts define no functions (a closure per call), read decimal arguments by coercion (`+ 0`,
-- no call), format at most the word they write, and reply with the time as numbers.

local APPLY = ARGV[3] == '1'

-- The time as limbs: n2·2^48 + n1·2^24 + n0 ns, n1 and n0 below 2^24.
local n2, n1, n0
if ARGV[1] == '' then
  local time = redis.call('TIME')
  local seconds = time[1] - ARGV[2]
  local micros = time[2] + 0
  -- At most the horizon, 2^59 = 576460752303423488 ns.
  if seconds < 0 or seconds > 576460752 or (seconds == 576460752 and micros > 303423) then
    error('nanolimit: the server clock is outside the limiter epoch and its horizon')
  end
  -- seconds × 10^9 = seconds × 1953125 × 2^9, the first product below 2^51: its low 15 bits
  -- make bits 9 to 23 of the time, with the microseconds' 10^3 × micros (below 2^30).
  local product = seconds * 1953125
  local low = product % 32768 * 512 + micros * 1000
  n0 = low % 16777216
  local high = (product - product % 32768) / 32768 + (low - n0) / 16777216
  n1 = high % 16777216
  n2 = (high - n1) / 16777216
else
  local text = ARGV[1]
  n2 = tonumber(string.sub(text, 1, 4), 16)
  n1 = tonumber(string.sub(text, 5, 10), 16)
  n0 = tonumber(string.sub(text, 11, 16), 16)
  if #text ~= 16 or not (n2 and n1 and n0) then
    error('nanolimit: not a 16-hex-digit time: ' .. text)
  end
end
-- The time judged at, for the reply: high·2^24 + low ns.
local now_high = n2 * 16777216 + n1
