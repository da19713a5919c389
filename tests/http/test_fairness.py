# SPDX-License-Identifier: MIT
"""Fair shares between organizations (issue 26), black-box, one test per finding:

1. Paused deliveries cost nothing: 100,000 pending deliveries to 16 disabled endpoints (written
   into the SQLite file while the server is stopped, as a long history leaves them) do not make
   the delivery threads work harder for another organization's deliveries (the server's CPU
   time for the same deliveries, against the same measurement before they were written).
2. Webhook delivery is fair between organizations: a free test key with 16 endpoints pointing
   at a receiver that never answers, and 5 tasks (80 deliveries, each attempt ending at the
   1 s timeout of this server), does not delay another organization's delivery.
3. The task queue is fair between organizations: another organization's one-step task
   completes at once beside 24 queued runs whose steps each take 1.5 s (the mock model pauses).

Every wait is on a condition with a deadline of at most 30 s; the bounds asserted are far from
what the unfair queue gives (tens of seconds, or several times the CPU).
"""

import os
import socket
import sqlite3
import threading
import time
import http.server
import uuid

from chatlib import MockChatTestCase, uniq
from harness import GENEROUS_LIMITS, ServerTestCase, parse_ts, sqlite_only


class Receiver:
    """Answers 200 at once; notes when each event arrived (by webhook-id)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.arrivals = {}
        rec = self

        class H(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                self.rfile.read(int(self.headers.get("Content-Length", "0")))
                with rec.lock:
                    rec.arrivals.setdefault(self.headers.get("webhook-id"), time.time())
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *a):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.httpd.daemon_threads = True
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        self.url = "http://127.0.0.1:%d/hook" % self.httpd.server_address[1]

    def arrived(self, event_id):
        with self.lock:
            return self.arrivals.get(event_id)

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


class DeadReceiver:
    """Accepts connections and never answers: every attempt ends at the server's timeout."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(512)
        self.sock.settimeout(0.1)
        self.url = "http://127.0.0.1:%d/dead" % self.sock.getsockname()[1]
        self.held = []
        self.accepted = 0
        self.stopping = False
        self.thread = threading.Thread(target=self.loop, daemon=True)
        self.thread.start()

    def loop(self):
        while not self.stopping:
            try:
                c, _ = self.sock.accept()
            except OSError:
                continue
            self.accepted += 1
            self.held.append(c)

    def close(self):
        self.stopping = True
        self.thread.join()
        for c in self.held:
            c.close()
        self.sock.close()


class FairHooks:
    """Mixed into the test cases: organizations, endpoints, tasks and their events."""

    def org_key(self, mode="test"):
        return self.server.create_key("fair-%s" % uuid.uuid4().hex[:8], mode=mode,
                                      credits=100000)

    def starter(self, key):
        body = self.assertJson(self.server.get("/v1/employees?limit=100", key=key))
        return [e for e in body["employees"] if e["tier"] == "starter"][0]["id"]

    def endpoint(self, key, url, **kw):
        body = {"url": url, "events": ["*"]}
        body.update(kw)
        return self.assertJson(self.server.post("/v1/webhook_endpoints", body, key=key))

    def task(self, key, emp, title):
        return self.assertJson(self.server.post("/v1/tasks", {"employee_id": emp,
                                                              "title": title}, key=key))

    def event_of(self, key, task_id):
        def find():
            for ev in self.assertJson(self.server.get("/v1/events?type=task.completed&limit=50",
                                                      key=key))["events"]:
                if ev["data"]["object"]["id"] == task_id:
                    return ev
            return None
        return self.poll(find, "the task.completed event of %s" % task_id, timeout=30,
                         step=0.01)

    def deliveries_of(self, key, emp, recv, n, what):
        """'n' tasks of 'key', one after the other, each delivered to 'recv': the seconds from
        each event to its arrival."""
        took = []
        for i in range(n):
            t = self.task(key, emp, "%s %d" % (what, i))
            ev = self.event_of(key, t["id"])
            at = self.poll(lambda: recv.arrived(ev["id"]), "%s: delivery %d" % (what, i),
                           timeout=30, step=0.005)
            took.append(at - parse_ts(ev["created_at"]))
        return took


class FairDeliveryTest(FairHooks, ServerTestCase):
    server_env = {"WORKFORCE_RATE_LIMITS": GENEROUS_LIMITS,
                  "WORKFORCE_WEBHOOKS_ALLOW_PRIVATE": "1",
                  "WORKFORCE_WEBHOOKS_TIMEOUT_MS": "1000"}

    def test_dead_endpoints_of_another_organization_do_not_hold_a_delivery(self):
        dead, recv = DeadReceiver(), Receiver()
        self.addCleanup(recv.close)
        self.addCleanup(dead.close)
        b = self.org_key()  # a free test key
        emp_b = self.starter(b)
        for i in range(16):
            self.endpoint(b, dead.url + str(i))
        for i in range(5):
            self.task(b, emp_b, "B %d" % i)
        # B's 80 deliveries are being attempted (each holds its thread for the 1 s timeout)
        self.poll(lambda: dead.accepted >= 3, "B's attempts under way", timeout=30, step=0.01)
        a = self.org_key()
        self.endpoint(a, recv.url, events=["task.completed"])
        took = self.deliveries_of(a, self.starter(a), recv, 3, "A beside B")
        self.assertLess(max(took), 2.5, "A's deliveries waited for B's dead endpoints: %s s"
                        % ["%.2f" % x for x in took])
        self.assertGreaterEqual(dead.accepted, 3)


class FairTasksTest(MockChatTestCase):
    def test_another_organizations_long_steps_do_not_hold_a_task(self):
        org_b = uniq("fairb")
        b = self.server.create_key(org_b, credits=100000)
        emp_b = self.employee(b)
        tok = uniq("long")
        wf = self.assertJson(self.server.post("/v1/workflows", {
            "name": "Long", "trigger": {"type": "manual"},
            "steps": [{"employee_id": emp_b, "action": "respond",
                       "input": "%s %d [[pause:1500]]" % (tok, i)} for i in range(2)]}, key=b))
        runs = [self.assertJson(self.server.post("/v1/workflows/%s/run" % wf["id"], {},
                                                 key=b))["id"] for _ in range(24)]

        def cancel_b():
            for r in runs:
                self.server.post("/v1/workflows/%s/runs/%s/cancel" % (wf["id"], r), {}, key=b)
        self.addCleanup(cancel_b)
        self.poll(lambda: len([r for r in self.mock.requests()
                               if tok in (r.get("last_user") or "")]) >= 2,
                  "B's steps under way", timeout=30, step=0.01)
        a = self.server.create_key(uniq("faira"), credits=100000)
        t = self.assertJson(self.server.post("/v1/tasks", {"employee_id": self.employee(a),
                                                           "title": "Quick one"}, key=a))
        done = self.poll(lambda: (lambda x: x if x["status"] in ("completed", "failed") else None)(
            self.assertJson(self.server.get("/v1/tasks/" + t["id"], key=a))),
            "A's task ended", timeout=30, step=0.02)
        self.assertEqual(done["status"], "completed", done)
        took = parse_ts(done["completed_at"]) - parse_ts(done["created_at"])
        self.assertLess(took, 2.5, "A's task waited %.2f s for B's queued steps" % took)


@sqlite_only("the history is written into the SQLite file directly")
class FairPausedTest(FairHooks, ServerTestCase):
    server_env = {"WORKFORCE_RATE_LIMITS": GENEROUS_LIMITS,
                  "WORKFORCE_WEBHOOKS_ALLOW_PRIVATE": "1"}
    single_node = True

    def cpu_s(self):
        """The server process's CPU time so far (user + system), in seconds."""
        with open("/proc/%d/stat" % self.server.proc.pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def measure(self, key, emp, recv, what):
        """CPU seconds the server spent on 8 deliveries of 'key' (tasks, events, attempts)."""
        c0 = self.cpu_s()
        took = self.deliveries_of(key, emp, recv, 8, what)
        return self.cpu_s() - c0, took

    def test_paused_deliveries_cost_nothing(self):
        recv = Receiver()
        self.addCleanup(recv.close)
        b = self.org_key()
        eps = [self.endpoint(b, "https://hooks.example.com/b%d" % i)["id"] for i in range(16)]
        for ep in eps:
            self.assertJson(self.server.patch("/v1/webhook_endpoints/" + ep, {"enabled": False},
                                              key=b))
        org_b = self.assertJson(self.server.get("/v1/account", key=b))["id"]
        a = self.org_key()
        emp_a = self.starter(a)
        self.endpoint(a, recv.url, events=["task.completed"])
        ref_cpu, _ = self.measure(a, emp_a, recv, "reference")
        self.assertEqual(self.server.stop(), 0)
        now = int(time.time() * 1000)
        con = sqlite3.connect(self.server.db, timeout=30)
        with con:
            con.execute("WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n WHERE"
                        " x < 6250) INSERT INTO events (id, org_id, mode, type, created_at, data)"
                        " SELECT printf('evt_paused%016d', x), ?, 'test', 'task.completed',"
                        " ? - 3600000 + x, '{\"object\":{}}' FROM n", (org_b, now))
            for ep in eps:
                con.execute("INSERT INTO webhook_deliveries (id, org_id, mode, endpoint_id,"
                            " event_id, status, attempts, next_attempt_at, created_at,"
                            " updated_at) SELECT 'wdl_' || substr(?, 4) || substr(v.id, 5),"
                            " v.org_id, 'test', ?, v.id, 'pending', 0, v.created_at,"
                            " v.created_at, v.created_at FROM events v WHERE v.org_id = ? AND"
                            " v.id LIKE 'evt_paused%'", (ep, ep, org_b))
        paused = con.execute("SELECT count(*) FROM webhook_deliveries WHERE status = 'pending'"
                             " AND org_id = ?", (org_b,)).fetchone()[0]
        con.close()
        self.assertEqual(paused, 100000)
        self.server.start()
        cpu, took = self.measure(a, emp_a, recv, "beside 100,000 paused deliveries")
        self.assertLess(cpu, 2 * ref_cpu + 0.3,
                        "the same 8 deliveries took %.2f s of CPU with 100,000 paused deliveries"
                        " stored, %.2f s without (delivery latencies %s s)"
                        % (cpu, ref_cpu, ["%.3f" % x for x in took]))
        # the paused deliveries are still there, pending, and none was attempted
        for ep in eps[:2]:
            ds = self.assertJson(self.server.get("/v1/webhook_endpoints/%s/deliveries?limit=5"
                                                 % ep, key=b))["deliveries"]
            self.assertEqual([(d["status"], d["attempts"]) for d in ds], [("pending", 0)] * 5)
