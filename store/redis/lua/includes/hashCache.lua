-- A write-back cache of the hash h (the including script sets h first): each field is read
-- once, counters are parsed once, and writeBack() writes every changed field in one HSET (and
-- removed ones in one HDEL), so a script of many steps costs one read per field.
local cached, numbers, dirty = {}, {}, {}

local function field(f)
  local v = cached[f]
  if v == nil then
    v = redis.call("HGET", h, f) or false
    cached[f] = v
  end
  return v
end

-- A counter as a number, parsed once; written back as a whole number.
local function count(f)
  local n = numbers[f]
  if n == nil then
    local v = field(f)
    n = v and tonumber(v) or 0
    numbers[f] = n
  end
  return n
end

local function put(f, v)
  cached[f] = v
  numbers[f] = nil
  dirty[f] = true
end

local function add(f, by)
  local n = count(f) + by
  numbers[f] = n
  cached[f] = true -- the value is in numbers
  dirty[f] = true
  return n
end

local function writeBack()
  local sets, dels = {}, {}
  for f in pairs(dirty) do
    local v = cached[f]
    if v == true then
      sets[#sets + 1] = f
      sets[#sets + 1] = string.format("%d", numbers[f])
    elseif v then
      sets[#sets + 1] = f
      sets[#sets + 1] = v
    else
      dels[#dels + 1] = f
    end
  end
  -- In runs of 500 fields and values: unpack() meets Lua's stack limit long before a tree's batch ends.
  for i = 1, #sets, 1000 do redis.call("HSET", h, unpack(sets, i, math.min(i + 999, #sets))) end
  for i = 1, #dels, 500 do redis.call("HDEL", h, unpack(dels, i, math.min(i + 499, #dels))) end
  dirty = {}
end
