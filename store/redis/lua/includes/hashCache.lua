-- A write-back cache of the hash h (the including script sets h first): each field is read
-- once, counters are parsed once, and writeBack() writes every changed field in one HSET (and
-- removed ones in one HDEL), so a script of many steps costs one read per field.
local cached, numbers, dirty = {}, {}, {}

-- redis.call(command, key, ...args) in runs of at most `run` arguments: unpack() meets Lua's
-- stack limit long before a batch of a tree's or a month's steps ends.
local function callInRuns(command, key, args, run)
  for i = 1, #args, run do redis.call(command, key, unpack(args, i, math.min(i + run - 1, #args))) end
end

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
  callInRuns("HSET", h, sets, 1000) -- 500 fields and their values a call
  callInRuns("HDEL", h, dels, 500)
  dirty = {}
end
