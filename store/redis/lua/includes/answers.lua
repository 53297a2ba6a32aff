-- Answers kept for replays as comma-separated whole numbers (limitsCommon, limitsTenantStep).

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
