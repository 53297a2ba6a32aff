-- Shared by the limits scripts (included with --@include limitsCommon). They keep a tree's
-- state in one hash, KEYS[1], and answers as comma-separated whole numbers.
local h = KEYS[1]

-- An answer kept as "n,n,n" back into a list of numbers.
local function decoded(text)
  local out = {}
  for v in string.gmatch(text, "[^,]+") do out[#out + 1] = tonumber(v) end
  return out
end

-- string.format("%d") keeps whole numbers whole; Lua's own tostring switches to exponents at 1e14.
local function encoded(list)
  local out = {}
  for i, v in ipairs(list) do out[i] = string.format("%d", v) end
  return out
end

local function num(f) return tonumber(redis.call("HGET", h, f) or "0") end

-- -1 is no limit.
local function within(limit, v) return limit == -1 or v <= limit end
