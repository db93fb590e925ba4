-- What both window steps share: the window instant, by the quota's own reciprocal division
-- (src/quota/window.rs, `WindowLength::instant`). Arguments after the common three:
--   ARGV[4]  the window length W, in ns (16 hex digits)
--   ARGV[5]  the reciprocal of W (16 hex digits)
--   ARGV[6]  its shift
--   ARGV[7]  the limit per window
--   ARGV[8]  the largest index distance read as time moving forward
--   ARGV[9]  the request's cost (at most the limit)
local now_ns = read_now()
local window_ns = u64_from_hex(ARGV[4])
local index_limbs = shift_right(multiply(now_ns, u64_from_hex(ARGV[5])), tonumber(ARGV[6]))
local elapsed = subtract(now_ns, low_u64(multiply(index_limbs, window_ns)))
-- Exact: windows of 1 µs or more over 2^59 ns number below 2^50.
local window_index = to_double(index_limbs)
local limit = tonumber(ARGV[7])
local forward_windows = tonumber(ARGV[8])
local cost = tonumber(ARGV[9])
local stored = redis.call('GET', KEYS[1])
if not stored then stored = '0000000000000000' end
u64_from_hex(stored)

-- Milliseconds until a state judged in window `index` (a window index modulo `modulus`, at
-- or ahead of now's) is as good as fresh: `ahead` whole windows, the rest of now's window,
-- and `then_ns` into the window after (the sliding window's previous share).
local function window_expiry_ms(index, modulus, then_ns)
  local ahead = (index - window_index % modulus) % modulus
  local window = to_double(window_ns)
  return expiry_ms(ahead * window + window - to_double(elapsed) + then_ns)
end
