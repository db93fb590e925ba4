-- GCRA's step (src/quota/gcra.rs, `Quota::step` of `Gcra`) on the key's word, the theoretical
-- arrival time in ticks. Arguments after the common three (see the prelude):
--   ARGV[4]  the quota's scale, ticks per ns × 2^ARGV[5] (16 hex digits)
--   ARGV[5]  that scale's shift (59)
--   ARGV[6]  the tolerance tau = burst × T, in ticks (16 hex digits)
--   ARGV[7]  the request's increment n × T, in ticks (16 hex digits; at most tau)
--   ARGV[8]  nanoseconds per tick, rounded up (a decimal), for the expiry only
local now_ns = read_now()
local now = shift_right(multiply(now_ns, u64_from_hex(ARGV[4])), tonumber(ARGV[5]))
local tolerance = u64_from_hex(ARGV[6])
local increment = u64_from_hex(ARGV[7])

local stored = redis.call('GET', KEYS[1])
local tat = ZERO
if stored then tat = u64_from_hex(stored) end

-- max(tat, now) + n·T <= now + tau, as the Rust step writes it: max(tat, now) <= now + tau − n·T.
local allowed = false
local word = tat
local latest_base = subtract(add(now, tolerance), increment)
if latest_base then
  local base = larger(tat, now)
  if compare(base, latest_base) <= 0 then
    allowed = true
    if APPLY then
      word = add(base, increment)
      -- The state is as good as fresh once now reaches the word: its reset-after.
      local until_fresh_ns = to_double(subtract(word, now)) * tonumber(ARGV[8])
      redis.call('SET', KEYS[1], u64_to_hex(word), 'PX', expiry_ms(until_fresh_ns))
    end
  end
end
if allowed then
  return {1, u64_to_hex(word), u64_to_hex(now_ns)}
end
return {0, u64_to_hex(word), u64_to_hex(now_ns)}
