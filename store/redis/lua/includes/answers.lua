-- Answers kept for replays as comma-separated whole numbers (limitsCommon, limitsTenantStep).

-- An answer kept as "n,n,n" back into a list of numbers.
local function decoded(text)
  local out = {}
  for v in string.gmatch(text, "[^,]+") do out[#out + 1] = tonumber(v) end
  return out
end

-- An answer kept as "n,n,n" from a list of numbers, in one string.format: "%d" keeps whole
-- numbers whole (Lua's own tostring switches to exponents at 1e14). Formats by length, made once.
local joinFormats = {}
local function joined(list)
  local n = #list
  local f = joinFormats[n]
  if not f then
    f = string.rep("%d,", n - 1) .. "%d"
    joinFormats[n] = f
  end
  return string.format(f, unpack(list))
end
