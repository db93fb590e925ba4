-- The exact sliding log (src/sliding_log/mod.rs, "The rule, exactly") on a sorted set: one
-- member per admitted unit, every score 0, named '<the unit's time in ns since the epoch, as 16
-- hex digits>:<a sequence number>'. Members of equal score are ordered by their bytes, and hex
-- digits of one width order as the numbers they write, so the lexicographic ranges below pick
-- units by time exactly, at any time up to the horizon: no time is ever a score or a Lua number
-- (doubles, exact only below 2^53 ns, 104 days): the one sum, now + 1 − W, is taken in limbs
-- of 24 bits, as the prelude's. Arguments after the common three, all decimal:
--   ARGV[4..5]  the window W, in ns: its bits 48 and up, then its low 48 bits
--   ARGV[6]     the limit L
--   ARGV[7]     the request's cost n (0 to 16, at most L)
-- Replies {admitted (1 or 0), the time judged at (16 hex digits), the units in the window
-- before this request, the time of the unit that must leave the window for the request to fit
-- ('' when it fits), the latest unit's time ('' for an empty log)}.
local w2, w_low = ARGV[4] + 0, ARGV[5] + 0
local limit, cost = ARGV[6] + 0, ARGV[7] + 0

-- Judged at the reading, or at the latest unit's time if the reading is behind it.
local now_hex = ARGV[1]
if now_hex == '' then now_hex = string.format('%04x%06x%06x', n2, n1, n0) end
local latest_hex = ''
local latest = redis.call('ZRANGE', KEYS[1], -1, -1)[1]
if latest then
  latest_hex = string.sub(latest, 1, 16)
  if latest_hex > now_hex then
    now_hex = latest_hex
    n2 = tonumber(string.sub(now_hex, 1, 4), 16)
    n1 = tonumber(string.sub(now_hex, 5, 10), 16)
    n0 = tonumber(string.sub(now_hex, 11, 16), 16)
    if #now_hex ~= 16 or not (n2 and n1 and n0) then
      error('nanolimit: not a 16-hex-digit time: ' .. now_hex)
    end
  end
end

-- The window is (now − W, now]: the units at or after now + 1 − W (all of them when W > now).
local c = n0 + 1 - w_low % 16777216
local f0 = c % 16777216
c = n1 - (w_low - w_low % 16777216) / 16777216 + (c - f0) / 16777216
local f1 = c % 16777216
local f2 = n2 - w2 + (c - f1) / 16777216
local first_in
local in_window = '-'
if f2 >= 0 then
  first_in = string.format('%04x%06x%06x', f2, f1, f0)
  in_window = '[' .. first_in
end
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
  if first_in then redis.call('ZREMRANGEBYLEX', KEYS[1], '-', '(' .. first_in) end
  local members = {}
  for i = 0, cost - 1 do
    members[2 * i + 1] = 0
    members[2 * i + 2] = now_hex .. ':' .. (count + i)
  end
  redis.call('ZADD', KEYS[1], unpack(members))
  -- Fresh once the latest unit, this request's, has left the window: W from now.
  -- In ms rounded down, plus 2 (as the step scripts' expiries), at most the horizon.
  local ms = (w2 * 281474976710656 + w_low) / 1000000
  ms = ms - ms % 1 + 2
  if ms > 576460752304 then ms = 576460752304 end
  redis.call('PEXPIRE', KEYS[1], ms)
end
return {1, now_hex, count, '', latest_hex}
