-- Shared by the limits scripts (included with --@include limitsCommon). They keep a tree's
-- state in one hash, KEYS[1], and answers as comma-separated whole numbers.
local h = KEYS[1]

--@include answers

local function num(f) return tonumber(redis.call("HGET", h, f) or "0") end

-- -1 is no limit.
local function within(limit, v) return limit == -1 or v <= limit end
