-- The fixed window's step (src/quota/fixed_window.rs, `view` and `Quota::step` of
-- `FixedWindow`) on the key's word: window index (40 bits) and count (24 bits), as the fields
-- of its 16 hex digits (10 and 6).
local MODULUS = 1099511627776
local stored_index = tonumber(string.sub(stored, 1, 10), 16)
local count = tonumber(string.sub(stored, 11, 16), 16)
if #stored ~= 16 or not (stored_index and count) then
  error('nanolimit: not a 16-hex-digit word: ' .. stored)
end
local now_index = window_index % MODULUS
local distance = (now_index - stored_index) % MODULUS

local index = now_index
if distance == 0 then
  index = stored_index
elseif distance > forward_windows and count ~= 0 then
  -- A reading behind the stored window: judged at its start (which the count alone decides).
  index = stored_index
else
  count = 0
end

if not (cost <= limit and count + cost <= limit) then
  return {0, stored, now_high, n0}
end
if not APPLY then
  return {1, stored, now_high, n0}
end
local word = string.format('%010x%06x', index, count + cost)
-- Fresh when the judged window ends (see window.lua).
local ms = (((index - now_index) % MODULUS) * window + window
  - (e2 * 281474976710656 + (e1 * 16777216 + e0))) / 1000000
ms = ms - ms % 1 + 2
if ms > 576460752304 then ms = 576460752304 end
redis.call('SET', KEYS[1], word, 'PX', ms)
return {1, word, now_high, n0}
