#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""bench/approvals_bench.py: what a chat turn that waits for a person costs (issue 27).

build/workforce runs with WORKFORCE_LLM=openai against the scripted tool-calling model of
tests/mock/openai_mock.py, in this process, which notes when each model request arrives
(time.perf_counter, after the mock has read it). Employees have the rule
{"name": "tasks.create", "policy": "approve"}; a turn whose model calls tasks__create pauses and
the blocking POST /v1/chat answers at the pause (status requires_approval).

resume:  on an idle server, N times in turn (after 10 not counted):
           a plain blocking turn: from sending POST /v1/chat to its model call arriving (the
             reference: the same server, mock and client reaching the model);
           a turn that pauses; then POST /v1/approvals/{id}/approve (a key whose scopes name
             approvals): from sending it to the turn's next model call arriving (goal: p50 <
             50 ms). That time holds the decision's commit, the turn taken and rebuilt from the
             store, the approved tasks.create run and journaled, and the request built.
           Each turn is let end before the next one starts.
paused:  a server of its own; P turns that pause (blocking, each in a new conversation, C
         clients, E employees, one live key) after W of warm-up (the pools reach their working
         size); VmRSS and Threads of /proc/PID/status once the server is quiet again, before and
         after: goals < 20 MiB added and no thread added. Every one of them is then checked to
         be paused, in the database (approvals pending, messages requires_approval). The
         reference: the same on another server with P turns that end (no tool), which shows
         what any P turns add (SQLite's page caches fill as the database grows).

The mock answers with TCP_NODELAY (see main()).

Usage: approvals_bench.py --bin build/workforce --tmp DIR [--parts resume,paused] [-n 200]
       [--paused 10000] [--clients 4] [--employees 8] [--warmup 200]
"""

import argparse
import base64
import http.client
import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "tests", "mock"))
import openai_mock  # noqa: E402
import wfbench  # noqa: E402
from wfbench import log, pct  # noqa: E402

MODEL = "bench-model"
RULES = [{"name": "tasks.create", "policy": "approve"}]
MIB = 1024.0


def cpu_name():
    """lscpu's model name (else /proc/cpuinfo's)."""
    try:
        r = subprocess.run(["lscpu"], capture_output=True, text=True, timeout=10)
        for line in r.stdout.splitlines():
            if line.startswith("Model name:"):
                return line.split(":", 1)[1].strip()
    except (OSError, subprocess.SubprocessError):
        pass
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "this machine"


def pausing(label):
    """A message whose model calls tasks__create (which waits for a person), then answers."""
    steps = [{"calls": [{"name": "tasks__create", "arguments": {"title": "Bench " + label}}]},
             {"say": "Done."}]
    return "Bench %s [[tools:%s]]" % (label, base64.b64encode(json.dumps(steps).encode())
                                        .decode())


class Arrivals:
    """When each model request arrived at the mock, by the text of its last user message
    (forgotten with the mock's requests, by mock.reset())."""

    def __init__(self, mock):
        self.cv = threading.Condition()
        self.seen = {}
        self.record, self.reset = mock.record, mock.reset
        mock.record, mock.reset = self.note, self.forget

    def note(self, handler, raw, body, last_user):
        t = time.perf_counter()
        rec = self.record(handler, raw, body, last_user)
        with self.cv:
            self.seen.setdefault(last_user, []).append(t)
            self.cv.notify_all()
        return rec

    def wait(self, message, n, timeout=30.0):
        """The time of the n-th model request of 'message' (waits for it, up to 'timeout')."""
        deadline = time.monotonic() + timeout
        with self.cv:
            while len(self.seen.get(message, ())) < n:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise RuntimeError("model request %d of a turn did not arrive in %d s"
                                       % (n, timeout))
                self.cv.wait(left)
            return self.seen[message][n - 1]

    def forget(self):
        self.reset()
        with self.cv:
            self.seen = {}


class Client:
    """One keep-alive connection to the server with one key."""

    def __init__(self, port, key):
        self.port, self.key = port, key
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)

    def call(self, method, path, body=None):
        hdr = {"Authorization": "Bearer " + self.key}
        data = None
        if body is not None:
            data = json.dumps(body)
            hdr["Content-Type"] = "application/json"
        self.conn.request(method, path, body=data, headers=hdr)
        r = self.conn.getresponse()
        raw = r.read()
        return r.status, (json.loads(raw) if raw else None)

    def ok(self, method, path, body=None):
        status, obj = self.call(method, path, body)
        if status != 200:
            raise RuntimeError("%s %s answered %d: %s" % (method, path, status,
                                                          json.dumps(obj)[:300]))
        return obj

    def close(self):
        self.conn.close()


def start_server(args, mock, name):
    srv = wfbench.Server(args.bin, args.tmp, {
        "WORKFORCE_LLM": "openai", "WORKFORCE_LLM_BASE_URL": mock.base_url,
        "WORKFORCE_LLM_MODEL": MODEL, "WORKFORCE_TEST_LLM": "provider"}, name=name)
    org = "bench-" + name
    key = srv.key(org)
    decider = wfbench.cli(args.bin, srv.db, srv.env, "keys", "create", "--org", org, "--tier",
                          "agency", "--mode", "live", "--scopes", "approvals").split()[0]
    srv.start()
    return srv, key, decider


def employee(c, i):
    e = c.ok("POST", "/v1/employees", {"name": "Bench approver %d" % i, "role": "Bench",
                                        "category": "operations"})
    c.ok("PATCH", "/v1/employees/" + e["id"], {"tools": RULES})
    return e["id"]


def wait_ended(c, m, timeout=30.0):
    """Wait (bounded) until the turn of message 'm' has ended."""
    path = "/v1/conversations/%s/messages/%s" % (m["conversation_id"], m["id"])
    deadline = time.monotonic() + timeout
    delay = 0.001
    while True:
        got = c.ok("GET", path)
        if got["status"] in ("completed", "failed"):
            if got["status"] != "completed":
                raise RuntimeError("a resumed turn failed: %s" % json.dumps(got)[:300])
            return got
        if time.monotonic() > deadline:
            raise RuntimeError("the turn of %s did not end in %d s" % (m["id"], timeout))
        time.sleep(delay)
        delay = min(delay * 2, 0.05)


def pause(c, emp, label):
    m = c.ok("POST", "/v1/chat", {"employee_id": emp, "message": pausing(label)})
    if m["status"] != "requires_approval":
        raise RuntimeError("the turn did not pause: %s" % json.dumps(m)[:300])
    return m


def part_resume(args, mock, arrivals):
    srv, key, decider = start_server(args, mock, "resume")
    try:
        c, d = Client(srv.port, key), Client(srv.port, decider)
        emp = employee(c, 0)
        start = None
        plain, first, resume, answered, after_answer = [], [], [], [], []
        for i in range(args.n + 10):
            msg = "Bench plain %d %s" % (i, uuid.uuid4().hex[:8])
            t0 = time.perf_counter()
            m = c.ok("POST", "/v1/chat", {"employee_id": emp, "message": msg})
            if m["status"] != "completed":
                raise RuntimeError("plain turn: %s" % json.dumps(m)[:300])
            t_plain = arrivals.wait(msg, 1) - t0

            label = "%d %s" % (i, uuid.uuid4().hex[:8])
            msg = pausing(label)
            t0 = time.perf_counter()
            m = pause(c, emp, label)
            t_first = arrivals.wait(msg, 1) - t0
            apr = m["tool_calls"][0]["approval_id"]

            t0 = time.perf_counter()
            a = d.ok("POST", "/v1/approvals/%s/approve" % apr, {})
            t1 = time.perf_counter()
            if a["status"] != "approved":
                raise RuntimeError("approve: %s" % json.dumps(a)[:300])
            t_model = arrivals.wait(msg, 2)
            wait_ended(c, m)
            if i % 50 == 49:
                mock.reset()
            if i < 10:
                continue  # warm-up
            if start is None:
                start = wfbench.proc_status(srv.pid)
            plain.append(t_plain * 1000.0)
            first.append(t_first * 1000.0)
            resume.append((t_model - t0) * 1000.0)
            answered.append((t1 - t0) * 1000.0)
            after_answer.append((t_model - t1) * 1000.0)
        c.close()
        d.close()
        end = wfbench.proc_status(srv.pid)
    finally:
        srv.stop()
    mock.reset()
    p50 = pct(resume, 50)
    ref = pct(plain, 50)
    print("\nResuming a paused turn (issue 27): %s, %d turns, one at a time, idle server"
          % (cpu_name(), args.n))
    print("| from ... to the model request arriving at the mock, ms | p50 | p90 |")
    print("| --- | ---: | ---: |")
    print("| reference: POST /v1/chat of a plain turn | %.2f | %.2f |" % (ref, pct(plain, 90)))
    print("| POST /v1/chat of a turn that then pauses (its first call) | %.2f | %.2f |"
          % (pct(first, 50), pct(first, 90)))
    print("| POST /v1/approvals/{id}/approve (the turn's next call) | %.2f | %.2f |"
          % (p50, pct(resume, 90)))
    print("| the approve's answer received (negative: the call came first) | %.2f | %.2f |"
          % (pct(after_answer, 50), pct(after_answer, 90)))
    print("approve answered in (ms): p50 %.2f, p90 %.2f; resume / reference (p50): %.1f"
          % (pct(answered, 50), pct(answered, 90), p50 / ref if ref > 0 else float("nan")))
    print("server threads %d before the %d resumes, %d after; VmRSS %.1f MiB, %.1f MiB"
          % (start["Threads"], args.n, end["Threads"], start["VmRSS"] / MIB,
             end["VmRSS"] / MIB))
    ok = p50 < 50.0
    print("goal: resume p50 < 50 ms: %s" % ("PASS" if ok else "FAIL"))
    return ok


def quiet_status(pid, settle=0.3, timeout=30.0):
    """/proc figures once the process has used no CPU for 'settle' seconds (bounded)."""
    def cpu():
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])  # utime + stime, in ticks

    deadline = time.monotonic() + timeout
    last = cpu()
    while True:
        time.sleep(settle)
        now = cpu()
        if now == last:
            return wfbench.proc_status(pid)
        if time.monotonic() > deadline:
            log("approvals: the server was still busy after %d s; measured anyway" % timeout)
            return wfbench.proc_status(pid)
        last = now


def make_turns(port, key, emps, count, clients, tag, paused=True):
    """'count' turns over 'clients' connections, each in a new conversation: turns that pause
    (their approval ids are returned) or plain ones that end. Returns (seconds, ids)."""
    lock = threading.Lock()
    state = {"next": 0, "error": None}
    ids = []

    def run():
        c = Client(port, key)
        try:
            while True:
                with lock:
                    i = state["next"]
                    if i >= count or state["error"]:
                        return
                    state["next"] = i + 1
                label = "%s %d %s" % (tag, i, uuid.uuid4().hex[:6])
                emp = emps[i % len(emps)]
                if paused:
                    m = pause(c, emp, label)
                    with lock:
                        ids.append(m["tool_calls"][0]["approval_id"])
                    continue
                m = c.ok("POST", "/v1/chat", {"employee_id": emp, "message": "Bench " + label})
                if m["status"] != "completed":
                    raise RuntimeError("plain turn: %s" % json.dumps(m)[:300])
        except Exception as e:  # noqa: BLE001 (reported below)
            with lock:
                state["error"] = e
        finally:
            c.close()

    t0 = time.monotonic()
    threads = [threading.Thread(target=run) for _ in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if state["error"]:
        raise RuntimeError("making turns: %s" % state["error"])
    return time.monotonic() - t0, ids


def stored_pauses(db):
    """(pending approvals, messages requires_approval) as the database holds them."""
    con = sqlite3.connect("file:%s?mode=ro" % db, uri=True, timeout=30)
    try:
        a = con.execute("SELECT count(*) FROM approvals WHERE status = 'pending'").fetchone()[0]
        m = con.execute("SELECT count(*) FROM messages WHERE status = 'requires_approval'")\
            .fetchone()[0]
    finally:
        con.close()
    return a, m


def measure_turns(args, mock, name, paused):
    """A server of its own: 'args.warmup' turns, then 'args.paused' more, each kind as asked.
    Returns the /proc figures ("fresh", "before" and "after" the rest) and its "secs"."""
    srv, key, _ = start_server(args, mock, name)
    try:
        c = Client(srv.port, key)
        emps = [employee(c, i) for i in range(args.employees)]
        c.close()
        fresh = quiet_status(srv.pid)
        _, warm_ids = make_turns(srv.port, key, emps, args.warmup, args.clients, "warm", paused)
        mock.reset()
        before = quiet_status(srv.pid)
        secs, ids = make_turns(srv.port, key, emps, args.paused, args.clients, name, paused)
        mock.reset()
        after = quiet_status(srv.pid)
        if not srv.alive():
            raise RuntimeError("the server (%s) died" % name)
        if paused:
            want = args.warmup + args.paused
            pending, stored = stored_pauses(srv.db)
            if len(set(warm_ids + ids)) != want or pending != want or stored != want:
                raise RuntimeError("expected %d paused turns; the answers named %d approvals, "
                                   "the database holds %d pending approvals and %d paused "
                                   "messages" % (want, len(set(warm_ids + ids)), pending,
                                                 stored))
    finally:
        srv.stop()
    return {"fresh": fresh, "before": before, "after": after, "secs": secs}


def part_paused(args, mock):
    ref = measure_turns(args, mock, "ended", False)
    got = measure_turns(args, mock, "paused", True)
    print("\nPaused turns' cost (issue 27): %s; %d blocking turns, each in a new conversation, "
          "made by %d clients over %d employees after %d of warm-up, on a server of their own: "
          "turns that pause (all %d then paused in the database), and as the reference turns "
          "that end" % (cpu_name(), args.paused, args.clients, args.employees, args.warmup,
                        args.warmup + args.paused))
    print("| server, once quiet | fresh | after warm-up | after %d | added | reference: "
          "added by %d turns that end |" % (args.paused, args.paused))
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for k, label in (("VmRSS", "VmRSS, MiB"), ("RssAnon", "of it anonymous, MiB"),
                     ("RssFile", "of it file, MiB")):
        print("| %s | %.1f | %.1f | %.1f | %+.1f | %+.1f |"
              % (label, got["fresh"][k] / MIB, got["before"][k] / MIB, got["after"][k] / MIB,
                 (got["after"][k] - got["before"][k]) / MIB,
                 (ref["after"][k] - ref["before"][k]) / MIB))
    for k in ("Threads", "fds"):
        print("| %s | %d | %d | %d | %+d | %+d |"
              % (k, got["fresh"][k], got["before"][k], got["after"][k],
                 got["after"][k] - got["before"][k], ref["after"][k] - ref["before"][k]))
    added = (got["after"]["VmRSS"] - got["before"]["VmRSS"]) / MIB
    threads = got["after"]["Threads"] - got["before"]["Threads"]
    print("turns/s: %.0f pausing, %.0f ending; RSS per paused turn: %.0f bytes"
          % (args.paused / got["secs"], args.paused / ref["secs"],
             added * MIB * 1024 / args.paused))
    ok_rss = added < 20.0
    ok_threads = threads <= 0
    print("goal: < 20 MiB RSS added by %d paused turns: %s"
          % (args.paused, "PASS" if ok_rss else "FAIL"))
    print("goal: no thread added: %s" % ("PASS" if ok_threads else "FAIL"))
    return ok_rss and ok_threads


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default="build/workforce")
    ap.add_argument("--tmp", required=True)
    ap.add_argument("--parts", default="resume,paused")
    ap.add_argument("-n", type=int, default=200, help="resumed turns measured")
    ap.add_argument("--paused", type=int, default=10000, help="paused turns made")
    ap.add_argument("--clients", type=int, default=4)
    ap.add_argument("--employees", type=int, default=8)
    ap.add_argument("--warmup", type=int, default=200, help="paused turns before 'before'")
    args = ap.parse_args()
    parts = [p for p in args.parts.split(",") if p]
    # stopped by bench/run.sh or a person: the finally clauses stop the servers
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))

    mock = openai_mock.MockLLM().start()
    arrivals = Arrivals(mock)
    try:
        if "resume" in parts:
            log("approvals: resume latency, %d turns" % args.n)
            part_resume(args, mock, arrivals)
        if "paused" in parts:
            log("approvals: %d paused turns" % args.paused)
            part_paused(args, mock)
    finally:
        mock.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
