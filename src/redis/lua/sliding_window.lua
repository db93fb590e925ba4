-- The sliding window's step (src/quota/sliding_window.rs, `view` and `Quota::step` of
-- `SlidingWindow`) on the key's word: window index (24 bits), previous and current counts
-- (20 bits each), as the fields of its 16 hex digits (6, 5 and 5).
local MODULUS = 16777216
local stored_index = tonumber(string.sub(stored, 1, 6), 16)
local previous = tonumber(string.sub(stored, 7, 11), 16)
local current = tonumber(string.sub(stored, 12, 16), 16)
local now_index = window_index % MODULUS
local distance = (now_index - stored_index) % MODULUS

local index, judged_elapsed = now_index, elapsed
if distance == 0 then
  index = stored_index
elseif distance == 1 then
  previous, current = current, 0
elseif distance > forward_windows and (previous + current) ~= 0 then
  -- A reading behind the stored window: judged at its start.
  index, judged_elapsed = stored_index, ZERO
else
  previous, current = 0, 0
end

-- current + n <= L and previous × (W − e) < (L − current − n + 1) × W, exactly.
local allowed = cost <= limit and current + cost <= limit
if allowed then
  local room = limit - current - cost + 1
  local share = multiply_small(subtract(window_ns, judged_elapsed), previous)
  allowed = compare(share, multiply_small(window_ns, room)) < 0
end
if not allowed then
  return {0, stored, u64_to_hex(now_ns)}
end
if not APPLY then
  return {1, stored, u64_to_hex(now_ns)}
end
current = current + cost
local word = string.format('%06x%05x%05x', index, previous, current)
-- Fresh once the current count, as the next window's previous one, weighs below one unit:
-- from W − (ceil(W / current) − 1) into that window (or its end), as `reset_after_ns`.
local window = to_double(window_ns)
local longest_remaining = math.ceil(window / current) - 1
local then_ns = window
if longest_remaining > 0 then then_ns = window - longest_remaining end
redis.call('SET', KEYS[1], word, 'PX', window_expiry_ms(index, MODULUS, then_ns))
return {1, word, u64_to_hex(now_ns)}
