-- A lease's give-back (src/redis/leased/): lowers the key's GCRA word by the unused units'
-- increment if the word is still the one the lease wrote, so that the budget is exactly as if
-- the lease had been smaller; otherwise another lease or admission came after it, and nothing
-- changes. The common three arguments are unused (see the prelude). Then:
--   ARGV[4]  the word the lease wrote (16 hex digits)
--   ARGV[5]  the unused units' increment n × T, in ticks (16 hex digits)
-- Replies 1 when it gave back, 0 otherwise. The key keeps its expiry, which was set for the
-- higher word: it expires late, never early.
local stored = redis.call('GET', KEYS[1])
if stored ~= ARGV[4] then
  return 0
end
local lowered = subtract(u64_from_hex(stored), u64_from_hex(ARGV[5]))
if not lowered then
  lowered = ZERO
end
redis.call('SET', KEYS[1], u64_to_hex(lowered), 'KEEPTTL')
return 1
