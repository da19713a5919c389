#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""bench/webhooks_bench.py: outbound webhook delivery (issue 14 item 7), run by bench/webhooks.sh.
Python 3 standard library only. One server (SQLite, WORKFORCE_WEBHOOKS_ALLOW_PRIVATE=1) and a
receiver of its own (a threaded HTTP server on 127.0.0.1 that answers 200 at once and notes when
each delivery arrived, by webhook-id), both stopped by their own PIDs / in-process.

  (1) latency with an idle outbox: one endpoint; a task is created with a test key (built-in
      engine), its run ends and records task.completed; the figure is the delivery's arrival at
      the receiver minus the event's created_at (the commit that recorded it), the two clocks
      being this machine's. One task at a time, each after the previous delivery arrived:
      p50 / p99 / max over N samples. Goal: p99 < 100 ms.
  (2) deliveries per second: 16 endpoints (the most one organization may have) take every event;
      M tasks are created as fast as one client can, so the outbox fills faster than it drains;
      deliveries/s = deliveries received / (last arrival - first arrival), with the default 4
      delivery threads; every delivery must arrive exactly once.

Usage: webhooks_bench.py --bin build/workforce --tmp DIR [-n 50] [-m 100]
"""

import argparse
import calendar
import http.client
import http.server
import json
import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import wfbench  # noqa: E402
from wfbench import log  # noqa: E402


class Receiver:
    def __init__(self):
        self.lock = threading.Lock()
        self.arrivals = {}  # (webhook-id, path) -> [arrival unix seconds]
        rec = self

        class H(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self):
                n = int(self.headers.get("Content-Length", "0"))
                self.rfile.read(n)
                at = time.time()
                with rec.lock:
                    rec.arrivals.setdefault((self.headers.get("webhook-id"), self.path),
                                            []).append(at)
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *a):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def count(self):
        with self.lock:
            return sum(len(v) for v in self.arrivals.values())

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def call(port, method, path, key, body=None):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    hdrs = {"Authorization": "Bearer " + key}
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        hdrs["Content-Type"] = "application/json"
    c.request(method, path, body=data, headers=hdrs)
    r = c.getresponse()
    out = r.read()
    c.close()
    if r.status != 200:
        raise RuntimeError("%s %s: %d %s" % (method, path, r.status, out[:300]))
    return json.loads(out)


def ts(iso):
    """A contract timestamp (2026-11-26T19:00:00.123Z) as Unix seconds."""
    base, ms = iso[:-1].split(".")
    return calendar.timegm(time.strptime(base, "%Y-%m-%dT%H:%M:%S")) + int(ms) / 1000.0


def wait(cond, what, timeout=60):
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise RuntimeError("%s: not within %d s" % (what, timeout))
        time.sleep(0.002)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--tmp", required=True)
    ap.add_argument("-n", type=int, default=50)
    ap.add_argument("-m", type=int, default=100)
    a = ap.parse_args()

    rec = Receiver()
    # test keys keep the starter tier's limits: lift them (the values are capped at 1000000)
    srv = wfbench.Server(a.bin, a.tmp, {"WORKFORCE_WEBHOOKS_ALLOW_PRIVATE": "1",
                                        "WORKFORCE_RATE_LIMITS": "starter:1000000/1000000/100000"},
                         "webhooks")
    try:
        srv.start()
        key = wfbench.cli(a.bin, srv.db, srv.env, "keys", "create", "--org", "hooks-bench",
                          "--mode", "test").split()[0]
        emp = [e for e in call(srv.port, "GET", "/v1/employees?limit=100", key)["employees"]
               if e["tier"] == "starter"][0]["id"]

        # (1) latency with an idle outbox
        ep = call(srv.port, "POST", "/v1/webhook_endpoints", key,
                  {"url": "http://127.0.0.1:%d/one" % rec.port, "events": ["task.completed"]})
        lat = []
        for i in range(a.n):
            t = call(srv.port, "POST", "/v1/tasks", key, {"employee_id": emp,
                                                          "title": "latency %d" % i})
            def ev():
                for e in call(srv.port, "GET", "/v1/events?type=task.completed&limit=5",
                              key)["events"]:
                    if e["data"]["object"]["id"] == t["id"]:
                        return e
                return None
            wait(lambda: ev() is not None, "event of task %d" % i)
            e = ev()
            wait(lambda: (e["id"], "/one") in rec.arrivals, "delivery %d" % i)
            lat.append((rec.arrivals[(e["id"], "/one")][0] - ts(e["created_at"])) * 1000.0)
        call(srv.port, "DELETE", "/v1/webhook_endpoints/" + ep["id"], key)
        p50, p99, mx = wfbench.pct(lat, 50), wfbench.pct(lat, 99), max(lat)

        # (2) deliveries per second
        for i in range(16):
            call(srv.port, "POST", "/v1/webhook_endpoints", key,
                 {"url": "http://127.0.0.1:%d/many%d" % (rec.port, i), "events": ["*"]})
        before = rec.count()
        with rec.lock:
            rec.arrivals.clear()
        t0 = time.monotonic()
        for i in range(a.m):
            call(srv.port, "POST", "/v1/tasks", key, {"employee_id": emp,
                                                      "title": "burst %d" % i})
        want = 16 * a.m
        wait(lambda: rec.count() >= want, "%d deliveries" % want, timeout=300)
        created_s = time.monotonic() - t0
        with rec.lock:
            times = sorted(x for v in rec.arrivals.values() for x in v)
            dup = sum(1 for v in rec.arrivals.values() if len(v) > 1)
        span = times[-1] - times[0]
        rate = len(times) / span if span > 0 else float("inf")
        del before

        print("")
        print("Outbound webhooks (SQLite, 4 delivery threads, receiver on 127.0.0.1)")
        print("| figure | value | goal |")
        print("| --- | ---: | --- |")
        print("| event -> first attempt, idle outbox, p50 (%d events) | %.1f ms | |" % (a.n, p50))
        print("| event -> first attempt, idle outbox, p99 | %.1f ms | < 100 ms: %s |"
              % (p99, "PASS" if p99 < 100 else "FAIL"))
        print("| event -> first attempt, idle outbox, max | %.1f ms | |" % mx)
        print("| deliveries/s (%d tasks x 16 endpoints = %d, first to last arrival) | %.0f | |"
              % (a.m, want, rate))
        print("| deliveries that arrived twice | %d | 0 |" % dup)
        print("| the %d tasks were created in | %.2f s | |" % (a.m, created_s))
        return 0 if dup == 0 else 1
    finally:
        srv.stop()
        rec.close()


if __name__ == "__main__":
    sys.exit(main())
