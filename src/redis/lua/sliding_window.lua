-- The sliding window's step (src/quota/sliding_window.rs, `view` and `Quota::step` of
-- `SlidingWindow`) on the key's word: window index (24 bits), previous and current counts
-- (20 bits each), as the fields of its 16 hex digits (6, 5 and 5).
local MODULUS = 16777216
local stored_index = tonumber(string.sub(stored, 1, 6), 16)
-- Both counts at once: previous·2^20 + current, below 2^40.
local counts = tonumber(string.sub(stored, 7, 16), 16)
if #stored ~= 16 or not (stored_index and counts) then
  error('nanolimit: not a 16-hex-digit word: ' .. stored)
end
local current = counts % 1048576
local previous = (counts - current) / 1048576
local now_index = window_index % MODULUS
local distance = (now_index - stored_index) % MODULUS

-- The judged window and the time elapsed in it (limbs of 24 bits, as window.lua's).
local index, j2, j1, j0 = now_index, e2, e1, e0
if distance == 0 then
  index = stored_index
elseif distance == 1 then
  previous, current = current, 0
elseif distance > forward_windows and (previous + current) ~= 0 then
  -- A reading behind the stored window: judged at its start.
  index, j2, j1, j0 = stored_index, 0, 0, 0
else
  previous, current = 0, 0
end

-- current + n <= L and previous × (W − e) < (L − current − n + 1) × W, exactly: the
-- difference room·W − previous·(W − e), limb by limb (each below 2^45 in size: counts below
-- 2^20 times limbs below 2^24), carried up; it is positive iff its signed top limb is, or that
-- is 0 and a lower one is not.
local allowed = cost <= limit and current + cost <= limit
if allowed then
  local room = limit - current - cost + 1
  local d = room * w0 - previous * (w0 - j0)
  local x0 = d % 16777216
  d = room * w1 - previous * (w1 - j1) + (d - x0) / 16777216
  local x1 = d % 16777216
  local x2 = room * w2 - previous * (w2 - j2) + (d - x1) / 16777216
  allowed = x2 > 0 or (x2 == 0 and (x1 > 0 or x0 > 0))
end
if not allowed then
  return {0, stored, now_high, n0}
end
if not APPLY then
  return {1, stored, now_high, n0}
end
current = current + cost
local word = string.format('%06x%010x', index, previous * 1048576 + current)
-- Fresh once the current count, as the next window's previous one, weighs below one unit:
-- from W − (ceil(W / current) − 1) into that window (or its end), as `reset_after_ns` (see
-- window.lua for the rest).
local longest_remaining = math.ceil(window / current) - 1
local then_ns = window
if longest_remaining > 0 then then_ns = window - longest_remaining end
local ms = (((index - now_index) % MODULUS) * window + window
  - (e2 * 281474976710656 + (e1 * 16777216 + e0)) + then_ns) / 1000000
ms = ms - ms % 1 + 2
if ms > 576460752304 then ms = 576460752304 end
redis.call('SET', KEYS[1], word, 'PX', ms)
return {1, word, now_high, n0}
