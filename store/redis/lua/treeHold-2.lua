--[[
  treeHold: puts a tenant's tree under a legal hold, or records that its holds were put again
  (OFF-10, FILE-6). The first hold stands: its reason, who and when are kept; setting it again
  records only when and by whom the MinIO holds were put again. Idempotent: a hold set twice
  is one hold. No TTL: a hold lasts until it is cleared. A tree being erased takes no hold:
  the erasure began first and goes on (treeEraseBegin).

  KEYS[1]  the tree's hold record (Keys.treeHold), a hash: reason, by, at, and after the MinIO
           holds were put: covered_at, covered_by, files, trace_parts, jobs
  KEYS[2]  the tree's erasure marker (Keys.treeErasing): who, a newline, since when (ms)
  ARGV[1]  "set" (record the hold, before any MinIO hold is put) or "covered" (after them:
           what was held; refused when no hold is recorded, e.g. cleared meanwhile)
  ARGV[2]  reason (set) or files held (covered)
  ARGV[3]  who
  ARGV[4]  when (ms)
  ARGV[5]  trace parts held (covered)
  ARGV[6]  jobs of the tree (covered)

  Returns {1 when this call made the hold else 0, reason, by, at} of the hold that stands;
  {-1, the erasure marker} for set when the tree is being erased (nothing recorded); "" for
  covered when no hold is recorded.
]]
local h = KEYS[1]
if ARGV[1] == "set" then
  local erasing = redis.call("GET", KEYS[2])
  if erasing then return { -1, erasing } end
  local made = redis.call("HSETNX", h, "at", ARGV[4])
  if made == 1 then
    redis.call("HSET", h, "reason", ARGV[2], "by", ARGV[3])
  end
  return { made, redis.call("HGET", h, "reason"), redis.call("HGET", h, "by"), redis.call("HGET", h, "at") }
elseif ARGV[1] == "covered" then
  if redis.call("EXISTS", h) == 0 then return "" end
  redis.call("HSET", h, "covered_at", ARGV[4], "covered_by", ARGV[3], "files", ARGV[2], "trace_parts", ARGV[5], "jobs", ARGV[6])
  return { 0, redis.call("HGET", h, "reason"), redis.call("HGET", h, "by"), redis.call("HGET", h, "at") }
end
return redis.error_reply("treeHold: ARGV[1] is set or covered, got " .. ARGV[1])
