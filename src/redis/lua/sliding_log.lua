-- The exact sliding log (src/sliding_log/mod.rs, "The rule, exactly") on a sorted set: one
-- member per admitted unit, every score 0, named '<the unit's time in ns since the epoch, as 16
-- hex digits>:<a sequence number>'. Members of equal score are ordered by their bytes, and hex
-- digits of one width order as the numbers they write, so the lexicographic ranges below pick
-- units by time exactly, at any time up to the horizon: no time is ever a score or a Lua number
-- (doubles, exact only below 2^53 ns, 104 days). Arguments after the common three:
--   ARGV[4]  the window W, in ns (16 hex digits)
--   ARGV[5]  the limit L
--   ARGV[6]  the request's cost n (0 to 16, at most L)
-- Replies {admitted (1 or 0), the time judged at (16 hex digits), the units in the window
-- before this request, the time of the unit that must leave the window for the request to fit
-- ('' when it fits), the latest unit's time ('' for an empty log)}.
local reading = read_now()
local window_ns = u64_from_hex(ARGV[4])
local limit = tonumber(ARGV[5])
local cost = tonumber(ARGV[6])

-- Judged at the reading, or at the latest unit's time if the reading is behind it.
local now_hex = u64_to_hex(reading)
local latest_hex = ''
local latest = redis.call('ZRANGE', KEYS[1], -1, -1)[1]
if latest then
  latest_hex = string.sub(latest, 1, 16)
  u64_from_hex(latest_hex)
  if latest_hex > now_hex then now_hex = latest_hex end
end
local now = u64_from_hex(now_hex)

-- The window is (now − W, now]: the units at or after now + 1 − W (all of them when W > now).
local first_in = subtract(add(now, {1, 0, 0, 0}), window_ns)
local in_window = '-'
if first_in then in_window = '[' .. u64_to_hex(first_in) end
local count = redis.call('ZLEXCOUNT', KEYS[1], in_window, '+')

if cost > 0 and count + cost > limit then
  -- Times are sorted: the request fits once the (count + n − L)-th oldest unit in the window
  -- has left it (then at most L − n remain).
  local must_leave = redis.call('ZRANGEBYLEX', KEYS[1], in_window, '+', 'LIMIT',
    count + cost - limit - 1, 1)[1]
  return {0, now_hex, count, string.sub(must_leave, 1, 16), latest_hex}
end
if APPLY and cost > 0 then
  -- Units that have left, then the request's: all or nothing. The sequence numbers are the
  -- in-window count onwards, so members of one time never repeat: every admission judged at
  -- a time t finds the same units gone (those before t + 1 − W), and the earlier admissions
  -- at t in the window, so its count is past all their numbers.
  if first_in then redis.call('ZREMRANGEBYLEX', KEYS[1], '-', '(' .. u64_to_hex(first_in)) end
  local members = {}
  for i = 0, cost - 1 do
    members[2 * i + 1] = 0
    members[2 * i + 2] = now_hex .. ':' .. (count + i)
  end
  redis.call('ZADD', KEYS[1], unpack(members))
  -- Fresh once the latest unit, this request's, has left the window: W from now.
  redis.call('PEXPIRE', KEYS[1], expiry_ms(to_double(window_ns)))
end
return {1, now_hex, count, '', latest_hex}
