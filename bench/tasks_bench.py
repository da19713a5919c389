#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""bench/tasks_bench.py: the tasks figures (contract §10, issue 5) against build/workforce on a
free 127.0.0.1 port, Python 3 standard library only. A test key of an agency org, so every run
uses the builtin engine (no model call: what is measured is the queue, the bookkeeping and the
builtin reply), and generous rate limits (bench/wfbench.py).

  (1) runs/s: with the employees offline, N one-time tasks (spread over several employees) are
      created through the API, then the employees are set idle and the queue drains; runs/s =
      N / (last completed_at - first started_at), from the tasks' own timestamps (ms). With the
      default pool (WORKFORCE_TASK_WORKERS unset: 4 workers), then with 1 worker (another server,
      fresh database). Reference in the same run, on the same server: N blocking POST /v1/chat
      (builtin engine, a new conversation each) from 4 concurrent keep-alive clients; a run does
      the same engine work plus the queue bookkeeping (claim and finish transactions), a chat
      the HTTP round trip instead.
  (2) scheduling latency: on a fresh server (4 workers), first the reference: U urgent tasks for
      an idle employee, one every ~10 ms (an open loop over several keep-alive clients), with an
      empty queue; p50/p99/max of (started_at - created_at). Then a backlog of B low-priority
      tasks for an offline employee; it is set idle (the release) and, while the backlog drains,
      U urgent tasks for another idle employee the same way: the same latency over the urgent
      tasks created while backlog tasks still waited, the ratio to the reference, the backlog's
      own (started_at - release) p50/p99/max and its drain rate, and how deep the queue was
      (backlog tasks not yet started) when each urgent task was created. Also shown: started_at
      minus the moment the POST was answered (client clock: the task is committed by then, so
      this leaves out the insert's own wait) and the POST round trip seen by the client.

Timestamps are the API's (ISO strings, ms resolution; the server's CLOCK_REALTIME, which the
client clock used for the release and the answers shares on this machine). Every server is
stopped by its own PID (also on SIGTERM/SIGINT). Prints tables (measurements, no goals) and the
count of warn/error lines in each server log; exits 1 only when something failed to run: an HTTP
error, a crash, tasks not done in time, or a task left in progress for 15 s with nothing pending
(then that task, its runs and the log lines about it are printed).
Usage: tasks_bench.py --bin build/workforce --tmp DIR [-n 2000] [--backlog 10000] [--urgent 200].
"""

import argparse
import bisect
import calendar
import http.client
import json
import os
import signal
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import wfbench  # noqa: E402
from wfbench import log, pct  # noqa: E402

ORG = "tbench"
TEXT = "Give me a one-line status update."
CREATE_THREADS = 4
CHAT_THREADS = 4
# Test keys are held to the starter tier's limits whatever the org's tier: lift them all (values
# are capped at 1000000 by the parser; see bench/run.sh).
RATE_LIMITS = ("starter:1000000/1000000/100000,manager:1000000/1000000/100000,"
               "agency:1000000/1000000/100000")


class BenchError(Exception):
    pass


# ---------------------------------------------------------------- stopping

RUNNING = []  # the servers started and not yet stopped


def on_signal(signum, _frame):
    """SIGTERM/SIGINT: stop our servers by their PIDs and leave at once. Done here rather than by
    raising SystemExit, which Python drops when the handler happens to run inside a finalizer."""
    for srv in list(RUNNING):
        try:
            srv.stop(grace=10)
        except Exception:  # noqa: BLE001
            pass
    os._exit(128 + signum)


def stop_server(srv):
    try:
        return srv.stop()
    finally:
        if srv in RUNNING:
            RUNNING.remove(srv)


def client_thread():
    """In each client thread: leave SIGTERM/SIGINT to the main thread, so that a signal interrupts
    whatever the main thread waits for (a join) and the handler runs at once."""
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM, signal.SIGINT})


# ---------------------------------------------------------------- HTTP


class Api:
    """One keep-alive connection with the bench key; JSON in and out."""

    def __init__(self, port, key):
        self.port = port
        self.hdr = {"Authorization": "Bearer " + key, "Content-Type": "application/json"}
        self.c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)

    def call(self, method, path, body=None, ok=(200,)):
        data = None if body is None else json.dumps(body)
        try:
            self.c.request(method, path, body=data, headers=self.hdr)
            r = self.c.getresponse()
            raw = r.read()
        except (OSError, http.client.HTTPException) as e:
            self.c.close()
            self.c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
            raise BenchError("%s %s: %r" % (method, path, e)) from e
        if r.status not in ok:
            raise BenchError("%s %s answered %d: %s" % (method, path, r.status,
                                                        raw[:300].decode("utf-8", "replace")))
        return json.loads(raw) if raw else None

    def close(self):
        self.c.close()


def iso_ms(s):
    """'2026-11-21T08:38:33.842Z' -> ms since the epoch (the API always writes this form)."""
    if s is None:
        return None
    base, _, frac = s.rstrip("Z").partition(".")
    t = calendar.timegm(time.strptime(base, "%Y-%m-%dT%H:%M:%S"))
    return t * 1000 + int((frac + "000")[:3])


def now_ms():
    return time.time() * 1000.0


def set_status(api, emp, status):
    api.call("PATCH", "/v1/employees/" + emp, {"status": status})


def employees(api, n):
    body = api.call("GET", "/v1/employees?limit=100")
    ids = [e["id"] for e in body["employees"] if e["status"] != "offline"]
    if len(ids) < n:
        raise BenchError("need %d employees, the org has %d online" % (n, len(ids)))
    return ids[:n]


def create_tasks(port, key, specs, threads=CREATE_THREADS):
    """POST /v1/tasks for every (employee_id, priority) of 'specs' from 'threads' keep-alive
    clients -> (task ids, wall seconds)."""
    out = [None] * len(specs)
    errs = []

    def work(i):
        client_thread()
        api = Api(port, key)
        try:
            for j in range(i, len(specs), threads):
                emp, prio = specs[j]
                out[j] = api.call("POST", "/v1/tasks", {"employee_id": emp, "title": TEXT,
                                                        "priority": prio})["id"]
        except BenchError as e:
            errs.append(str(e))
        finally:
            api.close()

    ts = [threading.Thread(target=work, args=(i,)) for i in range(threads)]
    t0 = time.perf_counter()
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    wall = time.perf_counter() - t0
    if errs:
        raise BenchError("creating tasks: " + errs[0])
    return out, wall


def paced_urgent(port, key, emp, n, interval_s, conns):
    """'n' urgent tasks for 'emp', the i-th sent at t0 + i * interval_s (an open loop: slot i goes
    out on keep-alive client i % conns, so that one slow answer does not hold back the next
    slots) -> list of per-slot dicts: id (None when the POST failed), error, post_ms (client
    latency), answered (wall-clock ms of the answer: the task is committed by then), late_ms
    (how much later than scheduled the POST went out)."""
    slots = [None] * n
    t0 = time.perf_counter() + 0.05

    def work(k):
        client_thread()
        api = Api(port, key)
        try:
            for i in range(k, n, conns):
                due = t0 + i * interval_s
                delay = due - time.perf_counter()
                if delay > 0:
                    time.sleep(delay)
                t1 = time.perf_counter()
                slot = {"late_ms": (t1 - due) * 1000.0, "id": None, "error": None}
                try:
                    slot["id"] = api.call("POST", "/v1/tasks", {"employee_id": emp, "title": TEXT,
                                                                "priority": "urgent"})["id"]
                except BenchError as e:
                    slot["error"] = str(e)
                slot["answered"] = now_ms()
                slot["post_ms"] = (time.perf_counter() - t1) * 1000.0
                slots[i] = slot
        finally:
            api.close()

    ts = [threading.Thread(target=work, args=(k,)) for k in range(min(conns, n))]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return slots


def queue_busy(api):
    """True while some task is pending or in progress (two cheap one-row listings)."""
    for st in ("pending", "in_progress"):
        if api.call("GET", "/v1/tasks?limit=1&status=" + st)["tasks"]:
            return True
    return False


def log_lines(srv, words):
    """Lines of the server log that contain any of 'words'."""
    try:
        with open(srv.logpath, "rb") as f:
            text = f.read().decode("utf-8", "replace")
    except OSError:
        return []
    return [ln for ln in text.splitlines() if any(w in ln for w in words)]


def problems(srv):
    """The server log's warn and error lines."""
    return log_lines(srv, (" warn ", " error "))


def failure_log(srv):
    p = problems(srv)
    return ("workforce log, warn/error lines (%d):\n%s\nlog tail:\n%s"
            % (len(p), "\n".join(p[:20]), srv.log_tail(10)))


def stuck_report(api, srv, ids):
    out = []
    for tid in ids:
        t = api.call("GET", "/v1/tasks/" + tid)
        out.append("task %s: status %s, run_count %d, created_at %s, started_at %s, updated_at %s"
                   % (tid, t["status"], t["run_count"], t["created_at"], t["started_at"],
                      t["updated_at"]))
        for r in api.call("GET", "/v1/tasks/%s/runs" % tid)["runs"]:
            out.append("  run %s: status %s, started_at %s, completed_at %s, error %r"
                       % (r["id"], r["status"], r["started_at"], r["completed_at"], r["error"]))
        for ln in log_lines(srv, (tid,)):
            out.append("  log: " + ln)
    out += ["log: " + ln for ln in problems(srv)[:20]]
    return "\n".join(out)


def wait_idle(api, srv, timeout_s, what, stuck_s=15.0):
    """Poll every 100 ms until nothing is pending or in progress. With nothing pending, a task
    in progress for more than 'stuck_s' (a builtin run takes milliseconds) is stuck: error."""
    t0 = time.perf_counter()
    seen = {}
    while True:
        if not srv.alive():
            raise BenchError("workforce exited (%s) while %s" % (srv.proc.returncode, what))
        now = time.perf_counter()
        if not api.call("GET", "/v1/tasks?limit=1&status=pending")["tasks"]:
            ip = [t["id"] for t in api.call("GET", "/v1/tasks?limit=100&status=in_progress")["tasks"]]
            if not ip:
                return now - t0
            seen = {tid: seen.get(tid, now) for tid in ip}
            stuck = [tid for tid, since in seen.items() if now - since > stuck_s]
            if stuck:
                raise BenchError("%s: nothing pending, but %d tasks in progress for more than "
                                 "%.0f s:\n%s" % (what, len(stuck), stuck_s,
                                                  stuck_report(api, srv, stuck[:3])))
        if now - t0 > timeout_s:
            left = {st: len(api.call("GET", "/v1/tasks?limit=100&status=" + st)["tasks"])
                    for st in ("pending", "in_progress")}
            raise BenchError("%s: tasks still not done after %.0f s (first page: %d pending, "
                             "%d in progress)" % (what, timeout_s, left["pending"],
                                                  left["in_progress"]))
        time.sleep(0.1)


def fetch_tasks(api, ids):
    """Every task of the org (GET /v1/tasks pages of 100), restricted to 'ids' -> {id: task}."""
    want = set(ids)
    got = {}
    path = "/v1/tasks?limit=100"
    while True:
        body = api.call("GET", path)
        for t in body["tasks"]:
            if t["id"] in want:
                got[t["id"]] = t
        if not body["has_more"]:
            break
        path = "/v1/tasks?limit=100&before=" + body["next_cursor"]
    missing = len(want) - len(got)
    if missing:
        raise BenchError("%d of %d tasks missing from GET /v1/tasks" % (missing, len(want)))
    return got


def check_completed(tasks, what):
    bad = [t for t in tasks.values() if t["status"] != "completed" or t["run_count"] != 1]
    if bad:
        t = bad[0]
        raise BenchError("%s: %d tasks not completed exactly once, e.g. %s status %s run_count %d "
                         "error %r" % (what, len(bad), t["id"], t["status"], t["run_count"],
                                       t["error"]))


def start_server(args, name, workers=None):
    extra = {"WORKFORCE_RATE_LIMITS": RATE_LIMITS}
    if workers is not None:
        extra["WORKFORCE_TASK_WORKERS"] = str(workers)
    srv = wfbench.Server(args.bin, args.tmp, extra, name=name)
    key = wfbench.cli(args.bin, srv.db, srv.env, "keys", "create", "--org", ORG, "--tier",
                      "agency", "--mode", "test").split()[0]
    RUNNING.append(srv)
    srv.start()
    log("%s: workforce pid %d on 127.0.0.1:%d (%s workers)"
        % (name, srv.pid, srv.port, workers or "default 4"))
    return srv, key


def warm_up(srv, key, api, emps):
    """A few tasks and chats first (connections, SQLite pages, the engine)."""
    ids, _ = create_tasks(srv.port, key, [(emps[i % len(emps)], "medium") for i in range(20)], 2)
    wait_idle(api, srv, 30, "warm-up")
    for i in range(20):
        api.call("POST", "/v1/chat", {"employee_id": emps[i % len(emps)], "message": TEXT})


# ---------------------------------------------------------------- (1) runs per second


def chat_reference(srv, key, emps, n):
    """'n' POST /v1/chat from CHAT_THREADS keep-alive clients -> dict."""
    res = [None] * CHAT_THREADS

    def work(i):
        client_thread()
        api = Api(srv.port, key)
        lat, errs = [], []
        for j in range(i, n, CHAT_THREADS):
            t0 = time.perf_counter()
            try:
                api.call("POST", "/v1/chat", {"employee_id": emps[j % len(emps)], "message": TEXT})
            except BenchError as e:
                errs.append(str(e))
                continue
            lat.append((time.perf_counter() - t0) * 1000.0)
        api.close()
        res[i] = (lat, errs)

    ts = [threading.Thread(target=work, args=(i,)) for i in range(CHAT_THREADS)]
    t0 = time.perf_counter()
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    wall = time.perf_counter() - t0
    lat = [x for l_, _ in res for x in l_]
    errs = [x for _, e in res for x in e]
    if errs:
        raise BenchError("chat reference: %d of %d failed, e.g. %s" % (len(errs), n, errs[0]))
    return {"n": n, "wall": wall, "rps": n / wall, "p50": pct(lat, 50), "p99": pct(lat, 99)}


def throughput(args, name, workers, with_chat):
    srv, key = start_server(args, name, workers)
    api = Api(srv.port, key)
    try:
        emps = employees(api, args.employees)
        warm_up(srv, key, api, emps)
        chat = chat_reference(srv, key, emps, args.n) if with_chat else None
        for e in emps:
            set_status(api, e, "offline")
        ids, cwall = create_tasks(srv.port, key, [(emps[i % len(emps)], "medium")
                                                  for i in range(args.n)])
        if not queue_busy(api):
            raise BenchError("the tasks of offline employees did not stay pending")
        rel = now_ms()
        patch_ms = []
        for e in emps:
            t1 = time.perf_counter()
            set_status(api, e, "idle")
            patch_ms.append((time.perf_counter() - t1) * 1000.0)
        wait_idle(api, srv, max(60, args.n / 20), "%d runs" % args.n)
        waited = (now_ms() - rel) / 1000.0
        tasks = fetch_tasks(api, ids)
        check_completed(tasks, name)
        started = [iso_ms(t["started_at"]) for t in tasks.values()]
        done = [iso_ms(t["completed_at"]) for t in tasks.values()]
        span_ms = max(done) - min(started)
        dur = [iso_ms(t["completed_at"]) - iso_ms(t["started_at"]) for t in tasks.values()]
        st = sorted(started)
        gap = max(b - a for a, b in zip(st, st[1:])) if len(st) > 1 else 0
        r = {"n": args.n, "create_wall": cwall, "span_ms": span_ms, "gap_ms": gap,
             "patch_max": max(patch_ms),
             "rps": args.n / (span_ms / 1000.0) if span_ms > 0 else float("inf"),
             "first_start_ms": min(started) - rel, "wall_rps": args.n / waited,
             "dur_p50": pct(dur, 50), "dur_p99": pct(dur, 99), "chat": chat}
        if not srv.alive():
            raise BenchError("workforce died")
    except BaseException:
        api.close()
        stop_server(srv)
        log("%s: %s" % (name, failure_log(srv)))
        raise
    api.close()
    rc, _ = stop_server(srv)
    if rc != 0:
        log("%s: workforce exited %s on SIGTERM; log tail:\n%s" % (name, rc, srv.log_tail(30)))
        raise BenchError("workforce exited %s on SIGTERM" % rc)
    r["problems"] = problems(srv)
    return r


# ---------------------------------------------------------------- (2) scheduling latency


def urgent_stats(slots, tasks, keep=None):
    """Figures of one round of urgent tasks ('tasks': id -> task); the latencies only over the
    tasks for which keep(slot) is true (all by default)."""
    ok = [x for x in slots if x["id"] and (keep is None or keep(x))]
    failed = [x for x in slots if not x["id"]]
    w = [iso_ms(tasks[x["id"]]["started_at"]) - iso_ms(tasks[x["id"]]["created_at"]) for x in ok]
    # From the POST's answer (client clock, same machine): the insert's own wait left out.
    a = [iso_ms(tasks[x["id"]]["started_at"]) - x["answered"] for x in ok]
    post = [x["post_ms"] for x in slots]
    return {"n": len(slots), "failed": len(failed), "kept": len(ok),
            "first_error": failed[0]["error"] if failed else None,
            "p50": pct(w, 50), "p99": pct(w, 99), "max": max(w) if w else float("nan"),
            "a_p50": pct(a, 50), "a_p99": pct(a, 99), "a_max": max(a) if a else float("nan"),
            "post_p50": pct(post, 50), "post_p99": pct(post, 99), "post_max": max(post),
            "late_max": max(x["late_ms"] for x in slots)}


def latency(args):
    srv, key = start_server(args, "tasks-latency")
    api = Api(srv.port, key)
    interval = args.interval / 1000.0
    try:
        back_emp, urg_emp = employees(api, 2)
        warm_up(srv, key, api, [back_emp, urg_emp])

        # Reference: the same urgent tasks with an empty queue.
        ref = paced_urgent(srv.port, key, urg_emp, args.urgent, interval, args.urgent_conns)
        wait_idle(api, srv, 60, "urgent tasks (empty queue)")
        ref_tasks = fetch_tasks(api, [x["id"] for x in ref if x["id"]])
        check_completed(ref_tasks, "urgent tasks (empty queue)")

        # The backlog, released; the urgent tasks while it drains.
        set_status(api, back_emp, "offline")
        back_ids, cwall = create_tasks(srv.port, key, [(back_emp, "low")] * args.backlog)
        log("tasks-latency: %d low tasks created in %.1f s" % (args.backlog, cwall))
        if not queue_busy(api):
            raise BenchError("the tasks of the offline employee did not stay pending")
        rel_send = now_ms()
        set_status(api, back_emp, "idle")
        rel_recv = now_ms()
        time.sleep(args.urgent_after / 1000.0)
        deep = paced_urgent(srv.port, key, urg_emp, args.urgent, interval, args.urgent_conns)
        wait_idle(api, srv, max(60, args.backlog / 100), "draining the backlog")
        t_all = fetch_tasks(api, back_ids + [x["id"] for x in deep if x["id"]])
        check_completed(t_all, "backlog + urgent tasks")
        if not srv.alive():
            raise BenchError("workforce died")
    except BaseException:
        api.close()
        stop_server(srv)
        log("tasks-latency: %s" % failure_log(srv))
        raise
    api.close()
    rc, _ = stop_server(srv)
    if rc != 0:
        log("tasks-latency: workforce exited %s on SIGTERM; log tail:\n%s" % (rc, srv.log_tail(30)))
        raise BenchError("workforce exited %s on SIGTERM" % rc)

    back = [t_all[i] for i in back_ids]
    urg_ok = [x for x in deep if x["id"]]
    bstart = sorted(iso_ms(t["started_at"]) for t in back)
    bdone = max(iso_ms(t["completed_at"]) for t in back)
    since_rel = [x - rel_send for x in bstart]
    # Queue depth met by each urgent task: backlog tasks not yet started when it was created.
    for x in urg_ok:
        x["depth"] = len(bstart) - bisect.bisect_right(bstart,
                                                       iso_ms(t_all[x["id"]]["created_at"]))
    depth = [x["depth"] for x in urg_ok]
    # Backlog tasks that started after an urgent task was surely queued (its POST answered) and
    # before it started: with a strict priority order at most the runs already being claimed.
    overtaken = 0
    for x in urg_ok:
        c, st = int(x["answered"]) + 1, iso_ms(t_all[x["id"]]["started_at"])
        overtaken = max(overtaken, bisect.bisect_left(bstart, st) - bisect.bisect_left(bstart, c))
    return {
        "ref": urgent_stats(ref, ref_tasks),
        # Only the urgent tasks created while backlog tasks were still waiting: answers held up
        # by the drain can push the last ones past its end.
        "deep": urgent_stats(deep, t_all, lambda x: x["depth"] > 0),
        "backlog": {"p50": pct(since_rel, 50), "p99": pct(since_rel, 99), "max": max(since_rel),
                    "first": since_rel[0]},
        "drain_s": (bdone - rel_send) / 1000.0,
        "drain_rps": args.backlog / ((bdone - bstart[0]) / 1000.0) if bdone > bstart[0] else 0,
        "create_wall": cwall, "patch_ms": rel_recv - rel_send,
        "depth_min": min(depth) if depth else 0, "depth_max": max(depth) if depth else 0,
        "overtaken": overtaken, "problems": problems(srv),
    }


# ---------------------------------------------------------------- report


def iv(v):
    """An integer figure, or n/a for NaN (no sample)."""
    return "%d" % v if v == v else "n/a"


def ratio(a, b):
    """a / b; a reference of 0 (under 1 ms at ms resolution) is taken as 1 ms: '>= a'."""
    if b != b or a != a:
        return "n/a"
    return "%.2f" % (a / b) if b > 0 else ">=%.0f" % a


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default="build/workforce")
    ap.add_argument("--tmp", required=True)
    ap.add_argument("-n", type=int, default=2000, help="tasks (and chats) of part 1")
    ap.add_argument("--employees", type=int, default=4,
                    help="employees the tasks of part 1 are spread over")
    ap.add_argument("--one-worker", type=int, default=1, help="also part 1 with 1 worker (0: no)")
    ap.add_argument("--backlog", type=int, default=10000)
    ap.add_argument("--urgent", type=int, default=200)
    ap.add_argument("--interval", type=float, default=10.0, help="ms between urgent tasks")
    ap.add_argument("--urgent-conns", type=int, default=16,
                    help="keep-alive clients the urgent tasks go out on (open loop)")
    ap.add_argument("--urgent-after", type=float, default=200.0,
                    help="ms after the release before the first urgent task")
    args = ap.parse_args()
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)

    t0 = time.perf_counter()
    try:
        r4 = throughput(args, "tasks-runs-4", None, True)
        r1 = throughput(args, "tasks-runs-1", 1, False) if args.one_worker else None
        lat = latency(args)
    except BenchError as e:
        log("tasks bench: error: %s" % e)
        return 1
    total = time.perf_counter() - t0

    chat = r4["chat"]
    print()
    print("tasks (1): runs/s with the builtin engine (test key), %d one-time tasks over %d "
          "employees, created" % (args.n, args.employees))
    print("  while they were offline, then set idle; runs/s = N / (last completed_at - first "
          "started_at)")
    print("  reference: %d POST /v1/chat (builtin engine, a new conversation each) from %d "
          "keep-alive clients, same server" % (args.n, CHAT_THREADS))
    print()
    cols = [("4 workers (default)", r4)] + ([("1 worker", r1)] if r1 else [])
    print("  %-44s" % "" + "".join("%20s" % c for c, _ in cols))
    rows = [
        ("runs/s", lambda r: "%.0f" % r["rps"]),
        ("drain span, first start..last end (ms)", lambda r: "%d" % r["span_ms"]),
        ("runs/s, wall clock (release..done seen)", lambda r: "%.0f" % r["wall_rps"]),
        ("release -> first start (ms)", lambda r: "%d" % r["first_start_ms"]),
        ("longest gap between two starts (ms)", lambda r: "%d" % r["gap_ms"]),
        ("run duration p50 / p99 (ms)", lambda r: "%d / %d" % (r["dur_p50"], r["dur_p99"])),
        ("slowest PATCH employee idle (ms)", lambda r: "%.1f" % r["patch_max"]),
        ("tasks created/s (POST, %d clients)" % CREATE_THREADS,
         lambda r: "%.0f" % (args.n / r["create_wall"])),
    ]
    for label, f in rows:
        print("  %-44s" % label + "".join("%20s" % f(r) for _, r in cols))
    print("  %-44s%20.0f" % ("chats/s (%d clients)" % CHAT_THREADS, chat["rps"]))
    print("  %-44s%20s" % ("chat p50 / p99 (ms)", "%.2f / %.2f" % (chat["p50"], chat["p99"])))
    print("  %-44s" % "ratio runs/s / chats/s" + "".join("%20s" % ratio(r["rps"], chat["rps"])
                                                         for _, r in cols))

    ref, deep = lat["ref"], lat["deep"]
    print()
    print("tasks (2): scheduling latency of %d urgent tasks (one every %.0f ms, open loop over %d "
          "clients, another idle" % (args.urgent, args.interval, args.urgent_conns))
    print("  employee), with an empty queue and while a backlog of %d low tasks drains (released "
          "%.0f ms before the" % (args.backlog, args.urgent_after))
    print("  first urgent one); default 4 workers")
    print("  deep queue: the %d of %d urgent tasks created while backlog tasks still waited"
          % (deep["kept"], deep["n"]))
    print()
    print("  %-46s %9s %9s %9s" % ("(ms)", "p50", "p99", "max"))
    print("  %-46s %9s %9s %9s" % ("urgent started_at - created_at, empty queue", iv(ref["p50"]),
                                   iv(ref["p99"]), iv(ref["max"])))
    print("  %-46s %9s %9s %9s" % ("urgent started_at - created_at, deep queue", iv(deep["p50"]),
                                   iv(deep["p99"]), iv(deep["max"])))
    print("  %-46s %9s %9s %9s" % ("  ratio deep / empty", ratio(deep["p50"], ref["p50"]),
                                   ratio(deep["p99"], ref["p99"]), ratio(deep["max"], ref["max"])))
    print("  %-46s %9s %9s %9s" % ("urgent started_at - POST answered, empty", iv(ref["a_p50"]),
                                   iv(ref["a_p99"]), iv(ref["a_max"])))
    print("  %-46s %9s %9s %9s" % ("urgent started_at - POST answered, deep", iv(deep["a_p50"]),
                                   iv(deep["a_p99"]), iv(deep["a_max"])))
    print("  %-46s %9.1f %9.1f %9.1f" % ("urgent POST round trip (client), empty",
                                         ref["post_p50"], ref["post_p99"], ref["post_max"]))
    print("  %-46s %9.1f %9.1f %9.1f" % ("urgent POST round trip (client), deep, all",
                                         deep["post_p50"], deep["post_p99"], deep["post_max"]))
    print("  %-46s %9d %9d %9d" % ("backlog started_at - release", lat["backlog"]["p50"],
                                   lat["backlog"]["p99"], lat["backlog"]["max"]))
    print()
    print("  %-58s %12.0f" % ("backlog drain rate (runs/s, first start..last end)",
                              lat["drain_rps"]))
    print("  %-58s %12.1f" % ("backlog drained, release..last end (s)", lat["drain_s"]))
    print("  %-58s %12s" % ("queue depth when the urgent tasks were created",
                            "%d..%d" % (lat["depth_min"], lat["depth_max"])))
    print("  %-58s %12d" % ("most backlog starts between an urgent answer and its start",
                            lat["overtaken"]))
    print("  %-58s %12s" % ("urgent POSTs failed, empty / deep",
                            "%d / %d" % (ref["failed"], deep["failed"])))
    print("  %-58s %12s" % ("urgent POSTs sent late (client, max ms), empty / deep",
                            "%.0f / %.0f" % (ref["late_max"], deep["late_max"])))
    print("  %-58s %12.0f" % ("release -> first backlog start (ms)", lat["backlog"]["first"]))
    print("  %-58s %12.1f" % ("PATCH employee idle (the release) round trip (ms)",
                              lat["patch_ms"]))
    print("  %-58s %12.0f" % ("backlog tasks created/s (POST, %d clients)" % CREATE_THREADS,
                              args.backlog / lat["create_wall"]))
    for what, x in (("empty", ref), ("deep", deep)):
        if x["first_error"]:
            print("  warning: an urgent POST failed (%s queue): %s" % (what, x["first_error"]))
    print()
    servers = [("runs, 4 workers", r4)] + ([("runs, 1 worker", r1)] if r1 else []) + \
        [("latency", lat)]
    print("  server log warn/error lines: " +
          ", ".join("%s %d" % (n, len(x["problems"])) for n, x in servers))
    for n, x in servers:
        for line in x["problems"][:5]:
            print("    %s: %s" % (n, line if len(line) <= 160 else line[:157] + "..."))
    print("  (timestamps: the API's, ms resolution, so 0 means < 1 ms; %d cores shared by the "
          "clients and the server;" % (os.cpu_count() or 0))
    print("  the tasks bench took %.0f s)" % total)
    return 0


if __name__ == "__main__":
    sys.exit(main())
