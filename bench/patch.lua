-- SPDX-License-Identifier: MIT
-- bench/patch.lua: a wrk script whose every request is PATCH WRK_PATH with the JSON body
-- WRK_BODY and the key WRK_KEY (bench/people_bench.py: a write and its audit entry).
wrk.method = "PATCH"
wrk.path = os.getenv("WRK_PATH")
wrk.body = os.getenv("WRK_BODY")
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer " .. os.getenv("WRK_KEY")
