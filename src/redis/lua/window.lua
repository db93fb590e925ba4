-- What both window steps share: the window instant, floor(now_ns / W) and the time elapsed in
-- that window, exactly as the quota's own reciprocal division gives them (src/quota/window.rs,
-- `WindowLength::instant`, which equals the true quotient for every reading). Arguments after
-- the common three, all decimal:
--   ARGV[4..5]  the window length W, as its bits 48 and up (below 2^12) and its low 48 bits:
--               W = ARGV[4]·2^48 + ARGV[5]
--   ARGV[6]     the limit per window
--   ARGV[7]     the largest index distance read as time moving forward
--   ARGV[8]     the request's cost (at most the limit)
local w2, w_low = ARGV[4] + 0, ARGV[5] + 0
local w0 = w_low % 16777216
local w1 = (w_low - w0) / 16777216
-- The nearest doubles to W and to now (each sum rounds once).
local window = w2 * 281474976710656 + w_low
local window_index = (n2 * 281474976710656 + (n1 * 16777216 + n0)) / window
-- An estimate of the quotient: the doubles' relative error is below 2^-51, and quotients are
-- below 2^50 (windows of 1 µs or more over 2^59 ns), so it is within 1 of the true one. The
-- remainder now − estimate × W then follows exactly in limbs of 24 bits (the estimate's two
-- limbs, e.g. i1 below 2^27, times W's; i1·w2 is 0, as estimate × W < 2^61), its top limb e2
-- signed; one step up or down makes it the elapsed time, 0 <= e < W.
window_index = window_index - window_index % 1
local i0 = window_index % 16777216
local i1 = (window_index - i0) / 16777216
local c = n0 - i0 * w0
local e0 = c % 16777216
c = n1 - i0 * w1 - i1 * w0 + (c - e0) / 16777216
local e1 = c % 16777216
local e2 = n2 - i0 * w2 - i1 * w1 + (c - e1) / 16777216
if e2 < 0 then
  window_index, e2, e1, e0 = window_index - 1, e2 + w2, e1 + w1, e0 + w0
  if e0 >= 16777216 then e1, e0 = e1 + 1, e0 - 16777216 end
  if e1 >= 16777216 then e2, e1 = e2 + 1, e1 - 16777216 end
elseif e2 > w2 or (e2 == w2 and (e1 > w1 or (e1 == w1 and e0 >= w0))) then
  window_index, e2, e1, e0 = window_index + 1, e2 - w2, e1 - w1, e0 - w0
  if e0 < 0 then e1, e0 = e1 - 1, e0 + 16777216 end
  if e1 < 0 then e2, e1 = e2 - 1, e1 + 16777216 end
end
local limit, forward_windows, cost = ARGV[6] + 0, ARGV[7] + 0, ARGV[8] + 0
local stored = redis.call('GET', KEYS[1])
if not stored then stored = '0000000000000000' end

-- Milliseconds until a state judged in window `index` (a window index modulo `modulus`, at or
-- ahead of now's) is as good as fresh: `ahead` whole windows, the rest of now's window, and
-- `then_ns` into the window after (the sliding window's previous share); from doubles (the
-- exact values rounded), in ms rounded down, plus 2: a millisecond for the rounding down, one
-- for the doubles', so a key never expires before its state is as good as fresh; at most the
-- horizon (2^59 ns), past which no time is judged. Written out in each step (a function here
-- would be a closure made on every call).
--   ahead = (index − window_index % modulus) % modulus
--   ms = floor((ahead·W + W − elapsed + then_ns) / 10^6) + 2, at most 576460752304
