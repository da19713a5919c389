-- SPDX-License-Identifier: MIT
-- bench/header.lua: a wrk script that gives each wrk thread a header of its own, taken in turn
-- from WRK_HEADERS (entries separated by "|", each "Name: value"): an API key's Authorization
-- or a person's session Cookie (bench/people_bench.py). Only setup() and init() are defined:
-- wrk builds each thread's request once, so it costs nothing per request.
local function split(v)
    local out = {}
    for item in string.gmatch(v or "", "[^|]+") do
        out[#out + 1] = item
    end
    return out
end

local headers, n = split(os.getenv("WRK_HEADERS")), 0

function setup(thread)
    local i = (n % #headers) + 1
    n = n + 1
    thread:set("header", headers[i])
end

function init(args)
    if header then
        local name, value = string.match(header, "^([^:]+):%s*(.*)$")
        wrk.headers[name] = value
    end
end
