-- A lease's give-back (src/redis/leased/): lowers the key's GCRA word by the unused units'
-- increment if the word is still the one the lease wrote, so that the budget is exactly as if
-- the lease had been smaller; otherwise another lease or admission came after it, and nothing
-- changes. A script of its own (without the prelude: it needs no time); its first three
-- arguments are the step scripts' common ones (see prelude.lua), unused. Then:
--   ARGV[4]  the word the lease wrote (16 hex digits)
--   ARGV[5]  the unused units' increment n × T, in ticks (16 hex digits)
-- Replies 1 when it gave back, 0 otherwise. The key keeps its expiry, which was set for the
-- higher word: it expires late, never early. The difference is taken in limbs of 32 bits, as
-- GCRA's step (gcra.lua), and is 0 if the increment is the larger.
local stored = redis.call('GET', KEYS[1])
if stored ~= ARGV[4] then
  return 0
end
local decrement = ARGV[5]
local high = tonumber(string.sub(stored, 1, 8), 16)
local low = tonumber(string.sub(stored, 9, 16), 16)
local decrement_high = tonumber(string.sub(decrement, 1, 8), 16)
local decrement_low = tonumber(string.sub(decrement, 9, 16), 16)
if #stored ~= 16 or #decrement ~= 16
  or not (high and low and decrement_high and decrement_low) then
  error('nanolimit: not 16-hex-digit words: ' .. stored .. ', ' .. decrement)
end
high, low = high - decrement_high, low - decrement_low
if low < 0 then
  high, low = high - 1, low + 4294967296
end
local lowered = '0000000000000000'
if high >= 0 then
  lowered = string.format('%08x%08x', high, low)
end
redis.call('SET', KEYS[1], lowered, 'KEEPTTL')
return 1
