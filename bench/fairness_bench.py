#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""bench/fairness_bench.py: fair shares between organizations (issue 26), run by
bench/fairness.sh. Python 3 standard library only (sqlite3 to write history directly). Each part
starts its own server (SQLite, on a free 127.0.0.1 port) and measures organization A's figure
first alone (the reference, same server, same run) and then beside organization B's load:

  (1) webhooks: A's delivery latency (the event's created_at to its arrival at A's receiver)
      beside B, a free test key (starter tier, test mode) with 16 endpoints pointing at a
      receiver that accepts connections and never answers, and 5 tasks (80 deliveries, each
      attempt ending at the 3 s timeout: WORKFORCE_WEBHOOKS_TIMEOUT_MS=3000). Goal: p99 < 1 s.
  (2) tasks: the time A's one-step task takes from its creation to its completion beside B's
      10 runs of a 20-step `summarize` workflow over a ~253 KB text, at the default workers
      (WORKFORCE_TASK_WORKERS unset: 4). Goal: every sample (the max) < 1.5 s.
  (3) paused deliveries: another organization's POST /v1/chat p99 with 200,000 paused
      deliveries stored (12,500 events x 16 disabled endpoints of B, written directly into the
      SQLite file while the server is stopped, as a long history would leave them) against a
      second server set up alike with none, both loaded at once with open-loop traffic (50
      chats a second each, latency counted from when a chat was due), so that both see the same
      machine and a stall delays every chat due during it. Goal: within 20% of the reference.

Prints one table with each figure, its reference and PASS/FAIL, and the machine (lscpu model
name). Exits 1 only when something failed to run. Every server and receiver is stopped by its
own PID / in-process.
Usage: fairness_bench.py --bin build/workforce --tmp DIR [--parts webhooks,tasks,chat]
"""

import argparse
import calendar
import http.client
import http.server
import json
import os
import random
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import wfbench  # noqa: E402
from wfbench import log  # noqa: E402

LIFTED = "starter:1000000/1000000/100000,agency:1000000/1000000/100000"


def call(port, method, path, key, body=None, timeout=60):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
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


def wait(cond, what, timeout=60, step=0.002):
    deadline = time.monotonic() + timeout
    while True:
        v = cond()
        if v:
            return v
        if time.monotonic() > deadline:
            raise RuntimeError("%s: not within %d s" % (what, timeout))
        time.sleep(step)


def key(srv, org, tier, mode):
    return wfbench.cli(srv.binary, srv.db, srv.env, "keys", "create", "--org", org, "--tier", tier,
                       "--mode", mode).split()[0]


def starter_employee(port, k):
    return [e for e in call(port, "GET", "/v1/employees?limit=100", k)["employees"]
            if e["tier"] == "starter" and e["status"] != "offline"][0]["id"]


def figures(v):
    return wfbench.pct(v, 50), wfbench.pct(v, 99), max(v)


class Receiver:
    """Answers 200 at once; notes when each delivery arrived, by webhook-id."""

    def __init__(self):
        self.lock = threading.Lock()
        self.arrivals = {}
        rec = self

        class H(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self):
                self.rfile.read(int(self.headers.get("Content-Length", "0")))
                at = time.time()
                with rec.lock:
                    rec.arrivals.setdefault(self.headers.get("webhook-id"), at)
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *a):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def at(self, event_id):
        with self.lock:
            return self.arrivals.get(event_id)

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


class DeadReceiver:
    """Accepts connections and never answers (nor reads): every attempt ends at the timeout."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(256)
        self.port = self.sock.getsockname()[1]
        self.held = []
        self.accepted = 0
        self.stop = False
        threading.Thread(target=self.loop, daemon=True).start()

    def loop(self):
        self.sock.settimeout(0.2)
        while not self.stop:
            try:
                c, _ = self.sock.accept()
            except OSError:
                continue
            self.accepted += 1
            self.held.append(c)
            self.held = [h for h in self.held if h.fileno() >= 0][-512:]

    def close(self):
        self.stop = True
        for h in self.held:
            h.close()
        self.sock.close()


# ---------------------------------------------------------------- (1) webhooks

def delivery_latency(port, k, emp, rec, n, what, pace=0.3):
    """'n' tasks of A one after the other, each started 'pace' seconds after the previous one at
    the soonest (so that the samples span several of B's 3 s attempts); each one's
    task.completed event -> arrival (ms)."""
    lat = []
    next_at = time.monotonic()
    for i in range(n):
        time.sleep(max(0.0, next_at - time.monotonic()))
        next_at = time.monotonic() + pace
        t = call(port, "POST", "/v1/tasks", k, {"employee_id": emp, "title": "%s %d" % (what, i)})

        def ev():
            for e in call(port, "GET", "/v1/events?type=task.completed&limit=10", k)["events"]:
                if e["data"]["object"]["id"] == t["id"]:
                    return e
            return None
        e = wait(ev, "event of A's task %d" % i, timeout=60, step=0.01)
        at = wait(lambda: rec.at(e["id"]), "A's delivery %d (%s)" % (i, what), timeout=120,
                  step=0.002)
        lat.append((at - ts(e["created_at"])) * 1000.0)
    return lat


def part_webhooks(a, out):
    rec, dead = Receiver(), DeadReceiver()
    srv = wfbench.Server(a.bin, tempfile.mkdtemp(dir=a.tmp),
                         {"WORKFORCE_WEBHOOKS_ALLOW_PRIVATE": "1",
                          "WORKFORCE_WEBHOOKS_TIMEOUT_MS": "3000",
                          "WORKFORCE_RATE_LIMITS": LIFTED}, "fair-webhooks")
    try:
        srv.start()
        ka = key(srv, "fair-a", "agency", "test")
        kb = key(srv, "fair-b", "starter", "test")  # a free test key
        emp_a, emp_b = starter_employee(srv.port, ka), starter_employee(srv.port, kb)
        call(srv.port, "POST", "/v1/webhook_endpoints", ka,
             {"url": "http://127.0.0.1:%d/a" % rec.port, "events": ["task.completed"]})
        log("webhooks: A's reference (%d deliveries, B idle)" % a.samples)
        ref = delivery_latency(srv.port, ka, emp_a, rec, a.samples, "reference")
        for i in range(16):
            call(srv.port, "POST", "/v1/webhook_endpoints", kb,
                 {"url": "http://127.0.0.1:%d/b%d" % (dead.port, i), "events": ["*"]})
        for i in range(5):
            call(srv.port, "POST", "/v1/tasks", kb, {"employee_id": emp_b, "title": "b %d" % i})
        wait(lambda: dead.accepted >= 3, "B's first attempts", timeout=60, step=0.01)
        log("webhooks: A beside B's 16 dead endpoints (%d deliveries)" % a.samples)
        t0 = dead.accepted
        got = delivery_latency(srv.port, ka, emp_a, rec, a.samples, "beside B")
        b_attempts = dead.accepted - t0
        out.append(("webhooks: A's delivery, event -> arrival", "ms", ref, got,
                    "p99 < 1000 ms", wfbench.pct(got, 99) < 1000.0,
                    "B: 16 endpoints that never answer, 5 tasks (80 deliveries), 3 s timeout;"
                    " %d attempts of B began while A was measured" % b_attempts))
    finally:
        srv.stop()
        rec.close()
        dead.close()


# ---------------------------------------------------------------- (2) tasks

def long_text(nbytes, seed=26):
    """~nbytes of English-like sentences (deterministic)."""
    rnd = random.Random(seed)
    words = ("the order shipment invoice customer refund account support team delivery payment "
             "warehouse schedule report update review request policy product service contract "
             "meeting budget quarter region manager question answer issue ticket").split()
    out, n = [], 0
    while n < nbytes:
        s = " ".join(rnd.choice(words) for _ in range(rnd.randint(8, 20))).capitalize() + ". "
        out.append(s)
        n += len(s)
    return "".join(out)[:nbytes]


def task_times(port, k, emp, n, what):
    """'n' one-step tasks of A one after the other: created_at -> completed_at (ms)."""
    took = []
    for i in range(n):
        t = call(port, "POST", "/v1/tasks", k, {"employee_id": emp, "title": "%s %d" % (what, i)})
        done = wait(lambda: (lambda x: x if x["status"] in ("completed", "failed") else None)(
            call(port, "GET", "/v1/tasks/" + t["id"], k)), "A's task %d (%s)" % (i, what),
            timeout=300, step=0.01)
        if done["status"] != "completed":
            raise RuntimeError("A's task failed: %s" % done.get("error"))
        took.append((ts(done["completed_at"]) - ts(done["created_at"])) * 1000.0)
    return took


def part_tasks(a, out):
    srv = wfbench.Server(a.bin, tempfile.mkdtemp(dir=a.tmp), {"WORKFORCE_RATE_LIMITS": LIFTED},
                         "fair-tasks")
    try:
        srv.start()
        ka = key(srv, "fair-a", "agency", "test")
        kb = key(srv, "fair-b", "agency", "test")
        emp_a, emp_b = starter_employee(srv.port, ka), starter_employee(srv.port, kb)
        log("tasks: A's reference (%d one-step tasks, B idle)" % a.samples)
        ref = task_times(srv.port, ka, emp_a, a.samples, "reference")
        text = long_text(253 * 1024)
        wf = call(srv.port, "POST", "/v1/workflows", kb, {
            "name": "long", "trigger": {"type": "manual"},
            "steps": [{"employee_id": emp_b, "action": "summarize", "input": "{{trigger.text}}",
                       "options": {"max_sentences": 3}} for _ in range(20)]})
        runs = [call(srv.port, "POST", "/v1/workflows/%s/run" % wf["id"], kb,
                     {"input": {"text": text}})["id"] for _ in range(10)]
        # B's steps are under way on every worker before A starts
        wait(lambda: sum(1 for s in call(srv.port, "GET", "/v1/workflows/%s/runs/%s"
                                         % (wf["id"], runs[0]), kb)["steps"]
                         if s["status"] == "completed") >= 1, "B's first step", timeout=300,
             step=0.05)
        log("tasks: A beside B's 10 runs of 20 summarize steps (%d tasks)" % a.samples)
        got = task_times(srv.port, ka, emp_a, a.samples, "beside B")
        step_ms = []
        r = call(srv.port, "GET", "/v1/workflows/%s/runs/%s" % (wf["id"], runs[0]), kb)
        for s in r["steps"]:
            if s["status"] == "completed":
                step_ms.append((ts(s["completed_at"]) - ts(s["started_at"])) * 1000.0)
        left = sum(1 for rid in runs for s in call(srv.port, "GET", "/v1/workflows/%s/runs/%s"
                                                   % (wf["id"], rid), kb)["steps"]
                   if s["status"] == "pending")
        for rid in runs:
            c = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=30)
            c.request("POST", "/v1/workflows/%s/runs/%s/cancel" % (wf["id"], rid), body=b"{}",
                      headers={"Authorization": "Bearer " + kb,
                               "Content-Type": "application/json"})
            c.getresponse().read()
            c.close()
        out.append(("tasks: A's one-step task, created -> completed", "ms", ref, got,
                    "max < 1500 ms", max(got) < 1500.0,
                    "B: 10 runs x 20 summarize steps over %d KB; a step of B took %.0f ms"
                    " (median); %d of B's steps still pending at the end"
                    % (len(text) // 1024, wfbench.pct(step_ms, 50) if step_ms else float("nan"),
                       left)))
    finally:
        srv.stop()


# ---------------------------------------------------------------- (3) paused deliveries

def chat_load(servers, rate, seconds, threads=8):
    """Open-loop chat traffic to each of 'servers' ((port, key, employee) each) at once: 'rate'
    POST /v1/chat a second to each for 'seconds', as independent users send them (request i is
    due at t0 + i / rate, whether or not earlier answers came). A request's latency counts from
    the time it was due, so that a stall delays every request due during it, as it would a
    user's. Latencies (ms) per server."""
    n = int(rate * seconds)
    t0 = time.monotonic() + 0.2
    lat = [[] for _ in servers]
    lock = threading.Lock()

    def worker(j, port, k, emp, me):
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        hdr = {"Authorization": "Bearer " + k, "Content-Type": "application/json"}
        for i in range(me, n, threads):
            due = t0 + i / rate
            time.sleep(max(0.0, due - time.monotonic()))
            body = json.dumps({"employee_id": emp,
                               "message": "What is the status of order %d?" % i})
            c.request("POST", "/v1/chat", body=body, headers=hdr)
            r = c.getresponse()
            r.read()
            took = (time.monotonic() - due) * 1000.0
            if r.status != 200:
                raise RuntimeError("POST /v1/chat answered %d" % r.status)
            with lock:
                lat[j].append(took)
        c.close()

    ts_ = [threading.Thread(target=worker, args=(j,) + srv + (me,))
           for j, srv in enumerate(servers) for me in range(threads)]
    for t in ts_:
        t.start()
    for t in ts_:
        t.join()
    if any(len(x) != n for x in lat):
        raise RuntimeError("chat load: some requests failed")
    return lat


def write_paused(db, org_id, endpoints, events):
    """'events' task.completed events of 'org_id' and one pending delivery of each to each of
    'endpoints' (disabled), written directly, as the server writes them."""
    now = int(time.time() * 1000)
    con = sqlite3.connect(db, timeout=30)
    with con:
        con.execute("WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n WHERE x < ?)"
                    " INSERT INTO events (id, org_id, mode, type, created_at, data) SELECT"
                    " printf('evt_paused%016d', x), ?, 'test', 'task.completed', ? - 3600000 + x,"
                    " '{\"object\":{}}' FROM n", (events, org_id, now))
        for ep in endpoints:
            con.execute("INSERT INTO webhook_deliveries (id, org_id, mode, endpoint_id, event_id,"
                        " status, attempts, next_attempt_at, created_at, updated_at) SELECT"
                        " 'wdl_' || substr(?, 4) || substr(v.id, 5), v.org_id, 'test', ?, v.id,"
                        " 'pending', 0, v.created_at, v.created_at, v.created_at FROM events v"
                        " WHERE v.org_id = ? AND v.id LIKE 'evt_paused%'", (ep, ep, org_id))
    n = con.execute("SELECT count(*) FROM webhook_deliveries WHERE status = 'pending'"
                    ).fetchone()[0]
    con.close()
    return n


def part_chat(a, out):
    """Two servers with the same organizations: the reference with no paused delivery, and the
    other with 200,000 written into its file while it was stopped; both measured at once."""
    srvs = []
    try:
        for name in ("fair-chat-reference", "fair-chat-paused"):
            srv = wfbench.Server(a.bin, tempfile.mkdtemp(dir=a.tmp),
                                 {"WORKFORCE_RATE_LIMITS": LIFTED}, name)
            srvs.append(srv)
            srv.start()
            kc = key(srv, "fair-c", "agency", "test")
            kb = key(srv, "fair-b", "agency", "test")
            srv.chat = (kc, starter_employee(srv.port, kc))
            eps = [call(srv.port, "POST", "/v1/webhook_endpoints", kb,
                        {"url": "https://hooks.example.com/b%d" % i, "events": ["*"]})["id"]
                   for i in range(16)]
            for ep in eps:
                call(srv.port, "PATCH", "/v1/webhook_endpoints/" + ep, kb, {"enabled": False})
            srv.org_b = call(srv.port, "GET", "/v1/account", kb)["id"]
            srv.eps = eps
            srv.stop()
        t0 = time.monotonic()
        n = write_paused(srvs[1].db, srvs[1].org_b, srvs[1].eps, 12500)
        log("chat: %d paused deliveries written in %.1f s" % (n, time.monotonic() - t0))
        for srv in srvs:
            srv.start()
        # The p99 of a 1 ms request is the machine's hiccups: measured in rounds, each figure
        # is the median of the rounds' p99 (and the table's p99 column that of all samples).
        for srv in srvs:  # warm up
            chat_load([(srv.port,) + srv.chat], 50, 1)
        ref, got, r99s, g99s = [], [], [], []
        for r in range(a.rounds):
            log("chat: round %d of %d: %d chats a second to each server for %d s"
                % (r + 1, a.rounds, a.rate, a.seconds))
            x, y = chat_load([(s.port,) + s.chat for s in srvs], a.rate, a.seconds)
            ref += x
            got += y
            r99s.append(wfbench.pct(x, 99))
            g99s.append(wfbench.pct(y, 99))
        r99, g99 = wfbench.pct(r99s, 50), wfbench.pct(g99s, 50)
        out.append(("chat: another organization's POST /v1/chat", "ms", ref, got,
                    "p99 <= 1.2 x reference (%.1f <= 1.2 x %.1f ms)" % (g99, r99),
                    g99 <= 1.2 * r99,
                    "%d paused deliveries (12,500 events x 16 disabled endpoints) against none:"
                    " two servers started alike, loaded at once, %d chats a second each from"
                    " 8 connections, latency counted from when each was due; the goal compares"
                    " the medians of %d rounds' p99" % (n, a.rate, a.rounds)))
    finally:
        for srv in srvs:
            srv.stop()


def cpu_model():
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, timeout=10).stdout
        for line in out.splitlines():
            if line.startswith("Model name:"):
                return line.split(":", 1)[1].strip()
    except (OSError, subprocess.SubprocessError):
        pass
    return "unknown"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--tmp", required=True)
    ap.add_argument("--parts", default="webhooks,tasks,chat")
    ap.add_argument("--samples", type=int, default=20, help="A's deliveries and tasks per phase")
    ap.add_argument("--rate", type=int, default=50, help="chats a second to each server")
    ap.add_argument("--seconds", type=int, default=10, help="seconds of a round of chats")
    ap.add_argument("--rounds", type=int, default=5, help="rounds of chats")
    a = ap.parse_args()
    parts = {"webhooks": part_webhooks, "tasks": part_tasks, "chat": part_chat}
    out = []
    for p in a.parts.split(","):
        parts[p](a, out)
    print("")
    print("Fair shares between organizations (issue 26): %s, %d cores, SQLite"
          % (cpu_model(), os.cpu_count() or 0))
    print("| figure | reference p50 / p99 / max | beside B p50 / p99 / max | goal |")
    print("| --- | ---: | ---: | --- |")
    for name, unit, ref, got, goal, passed, note in out:
        print("| %s | %.1f / %.1f / %.1f %s | %.1f / %.1f / %.1f %s | %s: %s |"
              % ((name,) + figures(ref) + (unit,) + figures(got) + (unit, goal,
                                                                    "PASS" if passed else "FAIL")))
        print("|   (%s; %d samples each) | | | |" % (note, len(got)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
