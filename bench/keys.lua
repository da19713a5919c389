-- SPDX-License-Identifier: MIT
-- bench/keys.lua: a wrk script that gives each wrk thread an API key of its own, taken in turn
-- from WRK_KEYS (comma-separated), so that a run's load is spread over several organizations (a
-- rate-limit tenant is capped at 1,000,000 requests a minute, which one fast run passes), and,
-- when WRK_PATHS is set (comma-separated, one per key), the path that key asks for (a resource
-- of that key's own organization). Only setup() and init() are defined: wrk still builds each
-- thread's request once, so it costs nothing per request.
local function split(v)
    local out = {}
    for item in string.gmatch(v or "", "[^,]+") do
        out[#out + 1] = item
    end
    return out
end

local keys, paths, n = split(os.getenv("WRK_KEYS")), split(os.getenv("WRK_PATHS")), 0

function setup(thread)
    local i = (n % #keys) + 1
    n = n + 1
    thread:set("key", keys[i])
    if paths[i] then
        thread:set("path", paths[i])
    end
end

function init(args)
    if key then
        wrk.headers["Authorization"] = "Bearer " .. key
    end
    if path then
        wrk.path = path
    end
end
