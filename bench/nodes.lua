-- SPDX-License-Identifier: MIT
-- bench/nodes.lua: the wrk script of bench/nodes.sh. Like bench/keys.lua (an API key of its own
-- per wrk thread, from WRK_KEYS, comma-separated), and also:
--   WRK_ADDRS   "host:port,host:port,...": thread i sends to address i mod n. wrk cannot pick a
--               host per request, but each thread holds its own connections, and setup() may set
--               the thread's address (thread.addr): with as many threads as nodes (or a
--               multiple), every node gets the same share of the connections, and one wrk
--               process measures the whole load: one requests/s sum and one latency histogram
--               over all nodes (no load balancer in between, as a client-side round robin).
--   WRK_EMPS    comma-separated employee ids, one per key: with WRK_METHOD=POST the thread sends
--               POST {employee_id, message} (blocking chat, a new conversation each time).
--   WRK_BODY    a fixed JSON body instead (the mock upstream measured alone).
-- Only setup() and init() are defined: wrk builds each thread's request once.
local function split(v)
    local out = {}
    for item in string.gmatch(v or "", "[^,]+") do
        out[#out + 1] = item
    end
    return out
end

local keys, emps, addrs, n = split(os.getenv("WRK_KEYS")), split(os.getenv("WRK_EMPS")),
    split(os.getenv("WRK_ADDRS")), 0
local method = os.getenv("WRK_METHOD") or "GET"
local body = os.getenv("WRK_BODY")

function setup(thread)
    local i = n
    n = n + 1
    if #addrs > 0 then
        local a = addrs[(i % #addrs) + 1]
        local host, port = string.match(a, "^(.+):(%d+)$")
        thread.addr = wrk.lookup(host, port)[1]
    end
    if #keys > 0 then
        thread:set("key", keys[(i % #keys) + 1])
    end
    if #emps > 0 then
        thread:set("emp", emps[(i % #emps) + 1])
    end
end

function init(args)
    if key then
        wrk.headers["Authorization"] = "Bearer " .. key
    end
    wrk.method = method
    if body and body ~= "" then
        wrk.headers["Content-Type"] = "application/json"
        wrk.body = body
    elseif method == "POST" and emp then
        wrk.headers["Content-Type"] = "application/json"
        wrk.body = '{"employee_id":"' .. emp .. '","message":"Give me a one-line status update."}'
    end
end
