#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""bench/workflows_bench.py: the workflow figures (contract §12) against build/workforce on a free
127.0.0.1 port, Python 3 standard library only. A test key of an agency org, so every step uses
the builtin engine (no model call, no credits), and generous rate limits (bench/tasks_bench.py,
whose helpers and reference measurement this file reuses).

  (1) classify accuracy: one workflow with a single classify step (input "{{trigger.text}}",
      options.labels = the set's labels as {name, description}), one run per text of the set
      (tests/data/classify_set.json) with input {"text": ...}; accuracy = correct / total. The
      same with the bare label names (labels as strings) for comparison. The confusion matrix
      and every misclassified text (expected -> chosen, score) are printed. Goal: accuracy with
      descriptions >= 0.9.
  (2) throughput: a 5-step workflow of cheap builtin actions (extract -> summarize -> draft_email
      -> extract -> respond, inputs rendered from the trigger and earlier steps; the summarize
      input is short enough that no embedding is needed) per employee; with the employees
      offline, N runs are queued (spread over the employees' workflows), then the employees are
      set idle and the queue drains; runs/s = N / (last completed_at - first started_at), steps/s
      = 5 N / the same span. With the default pool (WORKFORCE_TASK_WORKERS unset: 4 workers),
      then with 1 worker (another server, fresh database). Reference in the same run, on the same
      server, with the same employees: M one-time tasks drained the same way (as tasks_bench.py
      does). Per-step cost ratio = (1 / steps/s) / (1 / task runs/s); goal <= 1.5. Also measured
      (no goal): the same with a 5-step chain that classifies (extract -> classify -> summarize ->
      draft_email -> respond, classify embeds the input and the labels).
  (3) latency: on a fresh server (4 workers) with an idle queue, L runs started one at a time
      (each after the previous one completed): p50/p99/max of completed_at - created_at for the
      cheap 5-step workflow, the classifying 5-step one, a one-step workflow (respond) and a
      one-time task (the reference), plus where the 5-step time goes (queue wait, handoffs
      between steps, the steps themselves).

Timestamps are the API's (ISO strings, ms resolution). Every server is stopped by its own PID
(also on SIGTERM/SIGINT). Exits 1 only when something failed to run (an HTTP error, a crash, a
run or task that failed or did not end in time); a FAIL goal is a figure, not an error.
Usage: workflows_bench.py --bin build/workforce --tmp DIR [-n 1000] [--tasks 0] [--mixed-runs 200]
[--latency 100] [--one-worker 1] [--employees 4] [--classify-set tests/data/classify_set.json].
"""

import argparse
import json
import os
import signal
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tasks_bench as tb  # noqa: E402
from tasks_bench import Api, BenchError, iso_ms, now_ms  # noqa: E402
from wfbench import log, pct  # noqa: E402

CREATE_THREADS = 4
TERMINAL = ("completed", "failed", "cancelled")
TRIGGER_TEXT = ("Hello, I was charged twice for order 4471 and need a refund of 49.90 EUR. "
                "Please write back to jane.doe@example.com or call +1 415 555 0100.")
GOAL_ACCURACY = 0.9
GOAL_STEP_RATIO = 1.5


# ---------------------------------------------------------------- workflows


def cheap_steps(emp):
    """extract -> summarize -> draft_email -> extract -> respond: no embedding on the way (the
    trigger text has 2 sentences, at most max_sentences, so summarize keeps them as they are)."""
    return [
        {"employee_id": emp, "action": "extract", "input": "{{trigger.text}}",
         "options": {"fields": {"email": "email", "amount": "number", "phone": "phone"}}},
        {"employee_id": emp, "action": "summarize", "input": "{{trigger.text}}",
         "options": {"max_sentences": 3}},
        {"employee_id": emp, "action": "draft_email", "input": "{{steps[1].output}}",
         "options": {"to": "{{steps[0].output.email}}", "tone": "friendly"}},
        {"employee_id": emp, "action": "extract", "input": "{{steps[2].output.body}}",
         "options": {"fields": {"email": "email", "amount": "number"}}},
        {"employee_id": emp, "action": "respond",
         "input": "{{steps[2].output.subject}} (amount {{steps[3].output.amount}})"},
    ]


def classify_steps(emp, labels):
    """extract -> classify -> summarize -> draft_email -> respond (classify embeds)."""
    return [
        {"employee_id": emp, "action": "extract", "input": "{{trigger.text}}",
         "options": {"fields": {"email": "email", "amount": "number", "phone": "phone"}}},
        {"employee_id": emp, "action": "classify", "input": "{{trigger.text}}",
         "options": {"labels": labels}},
        {"employee_id": emp, "action": "summarize", "input": "{{trigger.text}}",
         "options": {"max_sentences": 3}},
        {"employee_id": emp, "action": "draft_email", "input": "{{steps[2].output}}",
         "options": {"to": "{{steps[0].output.email}}", "tone": "friendly"}},
        {"employee_id": emp, "action": "respond",
         "input": "{{steps[3].output.subject}} ({{steps[1].output.label}})"},
    ]


def one_step(emp):
    return [{"employee_id": emp, "action": "respond", "input": "{{trigger.text}}"}]


def create_workflow(api, name, steps):
    return api.call("POST", "/v1/workflows", {"name": name, "trigger": {"type": "manual"},
                                              "steps": steps})["id"]


def start_run(api, wf, data):
    return api.call("POST", "/v1/workflows/%s/run" % wf, {"input": data})["id"]


def get_run(api, wf, run):
    return api.call("GET", "/v1/workflows/%s/runs/%s" % (wf, run))


def create_runs(port, key, specs, threads=CREATE_THREADS):
    """POST /v1/workflows/{id}/run for every (workflow id, input) of 'specs' from 'threads'
    keep-alive clients -> (run ids, wall seconds)."""
    out = [None] * len(specs)
    errs = []

    def work(i):
        tb.client_thread()
        api = Api(port, key)
        try:
            for j in range(i, len(specs), threads):
                out[j] = start_run(api, specs[j][0], specs[j][1])
        except BenchError as e:
            errs.append(str(e))
        finally:
            api.close()

    ts = [threading.Thread(target=work, args=(i,)) for i in range(min(threads, len(specs)))]
    t0 = time.perf_counter()
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    wall = time.perf_counter() - t0
    if errs:
        raise BenchError("starting runs: " + errs[0])
    return out, wall


def list_runs(api, wf):
    """Every run of workflow 'wf' (GET /v1/workflows/{id}/runs pages of 100) -> {id: run}."""
    got = {}
    path = "/v1/workflows/%s/runs?limit=100" % wf
    while True:
        body = api.call("GET", path)
        for r in body["runs"]:
            got[r["id"]] = r
        if not body["has_more"]:
            return got
        path = "/v1/workflows/%s/runs?limit=100&before=%s" % (wf, body["next_cursor"])


def run_report(r):
    out = ["run %s: status %s, error %r, created_at %s, started_at %s, completed_at %s"
           % (r["id"], r["status"], r["error"], r["created_at"], r["started_at"],
              r["completed_at"])]
    for s in r["steps"]:
        out.append("  step %d %s: %s, attempts %d, error %r, started_at %s, completed_at %s"
                   % (s["index"], s["action"], s["status"], s["attempts"], s["error"],
                      s["started_at"], s["completed_at"]))
    return "\n".join(out)


def wait_runs(api, srv, runs, timeout_s, what):
    """Wait until every run of 'runs' [(workflow id, run id)] has ended -> {run id: run}. Polls
    the last one started every 100 ms, then lists them all; error when one did not complete."""
    t0 = time.perf_counter()
    wf_last, run_last = runs[-1]
    want = {rid for _, rid in runs}
    wfs = sorted({w for w, _ in runs})
    while True:
        if not srv.alive():
            raise BenchError("workforce exited (%s) while %s" % (srv.proc.returncode, what))
        if get_run(api, wf_last, run_last)["status"] in TERMINAL:
            got = {}
            for w in wfs:
                got.update({k: v for k, v in list_runs(api, w).items() if k in want})
            missing = want - set(got)
            if missing:
                raise BenchError("%s: %d of %d runs missing from the runs lists"
                                 % (what, len(missing), len(want)))
            if all(r["status"] in TERMINAL for r in got.values()):
                bad = [r for r in got.values() if r["status"] != "completed"]
                if bad:
                    raise BenchError("%s: %d of %d runs did not complete, e.g.\n%s\n%s"
                                     % (what, len(bad), len(want), run_report(bad[0]),
                                        "\n".join(tb.problems(srv)[:10])))
                return got
        if time.perf_counter() - t0 > timeout_s:
            left = {}
            for w in wfs:
                for r in list_runs(api, w).values():
                    if r["id"] in want and r["status"] not in TERMINAL:
                        left[r["id"]] = r
            if left:
                r = next(iter(left.values()))
                raise BenchError("%s: %d of %d runs still not ended after %.0f s, e.g.\n%s"
                                 % (what, len(left), len(want), timeout_s, run_report(r)))
        time.sleep(0.1)


def check_queued(api, runs, what):
    """The runs of offline employees must wait: a sample of them is still queued."""
    for wf, rid in runs[:: max(1, len(runs) // 5)]:
        st = get_run(api, wf, rid)["status"]
        if st != "queued":
            raise BenchError("%s: a run of an offline employee is %s, not queued" % (what, st))


def set_all(api, emps, status):
    """PATCH every employee of 'emps' to 'status' -> the slowest round trip (ms)."""
    worst = 0.0
    for e in emps:
        t1 = time.perf_counter()
        tb.set_status(api, e, status)
        worst = max(worst, (time.perf_counter() - t1) * 1000.0)
    return worst


# ---------------------------------------------------------------- (1) classify accuracy


def classify_accuracy(args, cset):
    srv, key = tb.start_server(args, "wf-classify")
    api = Api(srv.port, key)
    try:
        emp = tb.employees(api, 1)[0]
        names = [l_["name"] for l_ in cset["labels"]]
        variants = [("descriptions", cset["labels"]), ("bare names", names)]
        wfs = {v: create_workflow(api, "classify " + v,
                                  [{"employee_id": emp, "action": "classify",
                                    "input": "{{trigger.text}}", "options": {"labels": labels}}])
               for v, labels in variants}
        texts = cset["texts"]
        res = {}
        for v, _ in variants:
            ids, _ = create_runs(srv.port, key, [(wfs[v], {"text": t["text"]}) for t in texts])
            runs = wait_runs(api, srv, [(wfs[v], i) for i in ids], max(60, len(ids)),
                             "classify runs (%s)" % v)
            rows, dur = [], []
            for t, rid in zip(texts, ids):
                st = runs[rid]["steps"][0]
                out = st["output"] or {}
                rows.append({"text": t["text"], "want": t["label"], "got": out.get("label"),
                             "score": out.get("score")})
                dur.append(iso_ms(st["completed_at"]) - iso_ms(st["started_at"]))
            ok = sum(1 for r in rows if r["got"] == r["want"])
            res[v] = {"rows": rows, "correct": ok, "total": len(rows),
                      "accuracy": ok / len(rows) if rows else float("nan"),
                      "dur_p50": pct(dur, 50), "dur_p99": pct(dur, 99)}
        if not srv.alive():
            raise BenchError("workforce died")
    except BaseException:
        api.close()
        tb.stop_server(srv)
        log("wf-classify: %s" % tb.failure_log(srv))
        raise
    api.close()
    rc, _ = tb.stop_server(srv)
    if rc != 0:
        raise BenchError("workforce exited %s on SIGTERM" % rc)
    return {"names": names, "variants": res, "problems": tb.problems(srv)}


# ---------------------------------------------------------------- (2) throughput


def gap(starts):
    """The longest time between two consecutive starts of a sorted list (ms): a stall."""
    return max((b - a for a, b in zip(starts, starts[1:])), default=0)


def drain_runs(api, srv, key, wfs, n, nsteps, what):
    """Queue 'n' runs over the workflows 'wfs' {employee: workflow} with the employees offline,
    release them, wait -> figures."""
    emps = list(wfs)
    set_all(api, emps, "offline")
    specs = [(wfs[emps[i % len(emps)]], {"text": TRIGGER_TEXT}) for i in range(n)]
    ids, cwall = create_runs(srv.port, key, specs)
    runs_l = [(s[0], i) for s, i in zip(specs, ids)]
    check_queued(api, runs_l, what)
    rel = now_ms()
    patch_max = set_all(api, emps, "idle")
    runs = wait_runs(api, srv, runs_l, max(60, n * nsteps / 50), what)
    started = [iso_ms(r["started_at"]) for r in runs.values()]
    done = [iso_ms(r["completed_at"]) for r in runs.values()]
    span = max(done) - min(started)
    per_action = {}
    starts = sorted(iso_ms(s["started_at"]) for r in runs.values() for s in r["steps"])
    for r in runs.values():
        for s in r["steps"]:
            per_action.setdefault((s["index"], s["action"]), []).append(
                iso_ms(s["completed_at"]) - iso_ms(s["started_at"]))
    return {"n": n, "span_ms": span, "create_wall": cwall,
            "rps": n / (span / 1000.0) if span > 0 else float("inf"),
            "sps": n * nsteps / (span / 1000.0) if span > 0 else float("inf"),
            "first_start_ms": min(started) - rel, "patch_max": patch_max, "gap_ms": gap(starts),
            "per_action": {k: (pct(v, 50), pct(v, 99), max(v)) for k, v in per_action.items()}}


def drain_tasks(api, srv, key, emps, m):
    """The reference: 'm' one-time tasks over 'emps' created offline, released (tasks_bench)."""
    set_all(api, emps, "offline")
    ids, cwall = tb.create_tasks(srv.port, key, [(emps[i % len(emps)], "medium")
                                                 for i in range(m)])
    if not tb.queue_busy(api):
        raise BenchError("the tasks of offline employees did not stay pending")
    rel = now_ms()
    patch_max = set_all(api, emps, "idle")
    tb.wait_idle(api, srv, max(60, m / 20), "%d task runs" % m)
    tasks = tb.fetch_tasks(api, ids)
    tb.check_completed(tasks, "reference tasks")
    started = [iso_ms(t["started_at"]) for t in tasks.values()]
    done = [iso_ms(t["completed_at"]) for t in tasks.values()]
    span = max(done) - min(started)
    return {"n": m, "span_ms": span, "create_wall": cwall,
            "rps": m / (span / 1000.0) if span > 0 else float("inf"),
            "first_start_ms": min(started) - rel, "patch_max": patch_max,
            "gap_ms": gap(sorted(started))}


def throughput(args, name, workers, labels):
    srv, key = tb.start_server(args, name, workers)
    api = Api(srv.port, key)
    try:
        emps = tb.employees(api, args.employees)
        cheap = {e: create_workflow(api, "cheap %d" % i, cheap_steps(e))
                 for i, e in enumerate(emps)}
        mixed = {e: create_workflow(api, "classify %d" % i, classify_steps(e, labels))
                 for i, e in enumerate(emps)} if args.mixed_runs else None
        # Warm-up: a few of each (connections, SQLite pages, the engine, the embedding model).
        tb.warm_up(srv, key, api, emps)
        for wfs in (cheap, mixed):
            if wfs:
                w = list(wfs.values())
                ids, _ = create_runs(srv.port, key, [(w[i % len(w)], {"text": TRIGGER_TEXT})
                                                     for i in range(20)], 2)
                wait_runs(api, srv, [(w[i % len(w)], r) for i, r in enumerate(ids)], 60,
                          "warm-up runs")
        ref = drain_tasks(api, srv, key, emps, args.tasks)
        wf = drain_runs(api, srv, key, cheap, args.n, 5, "%d cheap runs" % args.n)
        mx = drain_runs(api, srv, key, mixed, args.mixed_runs, 5,
                        "%d classifying runs" % args.mixed_runs) if mixed else None
        if not srv.alive():
            raise BenchError("workforce died")
    except BaseException:
        api.close()
        tb.stop_server(srv)
        log("%s: %s" % (name, tb.failure_log(srv)))
        raise
    api.close()
    rc, _ = tb.stop_server(srv)
    if rc != 0:
        log("%s: workforce exited %s on SIGTERM; log tail:\n%s" % (name, rc, srv.log_tail(30)))
        raise BenchError("workforce exited %s on SIGTERM" % rc)
    return {"ref": ref, "wf": wf, "mixed": mx, "problems": tb.problems(srv)}


# ---------------------------------------------------------------- (3) latency


def sequential(n, start, poll, timeout_s, what):
    """'n' items one at a time: start() -> handle; poll(handle) -> record when ended, else None.
    -> the records."""
    out = []
    for _ in range(n):
        h = start()
        t0 = time.perf_counter()
        while True:
            rec = poll(h)
            if rec is not None:
                out.append(rec)
                break
            if time.perf_counter() - t0 > timeout_s:
                raise BenchError("%s: %r not ended after %.0f s" % (what, h, timeout_s))
            time.sleep(0.002)
    return out


def latency(args, labels):
    srv, key = tb.start_server(args, "wf-latency")
    api = Api(srv.port, key)
    try:
        emp = tb.employees(api, 1)[0]
        wf5 = create_workflow(api, "cheap", cheap_steps(emp))
        wfc = create_workflow(api, "classify", classify_steps(emp, labels))
        wf1 = create_workflow(api, "one step", one_step(emp))
        tb.warm_up(srv, key, api, [emp])

        def run_poll(wf):
            def poll(rid):
                r = get_run(api, wf, rid)
                if r["status"] not in TERMINAL:
                    return None
                if r["status"] != "completed":
                    raise BenchError("a latency run did not complete:\n" + run_report(r))
                return r
            return poll

        def task_start():
            return api.call("POST", "/v1/tasks", {"employee_id": emp, "title": tb.TEXT,
                                                  "priority": "medium"})["id"]

        def task_poll(tid):
            t = api.call("GET", "/v1/tasks/" + tid)
            if t["status"] in ("pending", "in_progress"):
                return None
            if t["status"] != "completed":
                raise BenchError("a latency task did not complete: %s %r" % (t["status"],
                                                                              t["error"]))
            return t

        res = {}
        for label, wf in (("5-step (cheap)", wf5), ("5-step (classify)", wfc),
                          ("1-step (respond)", wf1)):
            sequential(5, lambda wf=wf: start_run(api, wf, {"text": TRIGGER_TEXT}),
                       run_poll(wf), 30, "warm-up")
            recs = sequential(args.latency, lambda wf=wf: start_run(api, wf, {"text": TRIGGER_TEXT}),
                              run_poll(wf), 30, label)
            res[label] = recs
        res["one-time task"] = sequential(args.latency, task_start, task_poll, 30, "tasks")
        if not srv.alive():
            raise BenchError("workforce died")
    except BaseException:
        api.close()
        tb.stop_server(srv)
        log("wf-latency: %s" % tb.failure_log(srv))
        raise
    api.close()
    rc, _ = tb.stop_server(srv)
    if rc != 0:
        raise BenchError("workforce exited %s on SIGTERM" % rc)

    out = {}
    for label, recs in res.items():
        tot = [iso_ms(r["completed_at"]) - iso_ms(r["created_at"]) for r in recs]
        wait = [iso_ms(r["started_at"]) - iso_ms(r["created_at"]) for r in recs]
        x = {"p50": pct(tot, 50), "p99": pct(tot, 99), "max": max(tot),
             "wait_p50": pct(wait, 50), "wait_max": max(wait)}
        if "steps" in recs[0]:
            hand, work = [], []
            for r in recs:
                s = r["steps"]
                hand.append(sum(iso_ms(s[i + 1]["started_at"]) - iso_ms(s[i]["completed_at"])
                                for i in range(len(s) - 1)))
                work.append(sum(iso_ms(z["completed_at"]) - iso_ms(z["started_at"]) for z in s))
            x.update({"hand_p50": pct(hand, 50), "hand_p99": pct(hand, 99),
                      "work_p50": pct(work, 50), "work_p99": pct(work, 99)})
        out[label] = x
    return {"rows": out, "problems": tb.problems(srv)}


# ---------------------------------------------------------------- report


def cpu_model():
    try:
        r = subprocess.run(["lscpu"], capture_output=True, text=True, timeout=10)
        for line in r.stdout.splitlines():
            k, _, v = line.partition(":")
            if k.strip() == "Model name":
                return v.strip()
    except (OSError, subprocess.SubprocessError):
        pass
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.partition(":")[2].strip() + " (from /proc/cpuinfo)"
    except OSError:
        pass
    return "unknown"


def pf(ok):
    return "PASS" if ok else "FAIL"


def short(s, n=78):
    return s if len(s) <= n else s[: n - 3] + "..."


def print_classify(c):
    names = c["names"]
    print("workflows (1): classify accuracy of the builtin engine (embedding similarity), "
          "%d texts, %d labels," % (c["variants"]["descriptions"]["total"], len(names)))
    print("  one run per text of a 1-step workflow (classify, input {{trigger.text}})")
    print()
    print("  %-34s %10s %10s %14s" % ("labels given as", "correct", "accuracy", "step p50/p99"))
    for v, x in c["variants"].items():
        print("  %-34s %10s %10.3f %14s" % (v if v != "descriptions" else "{name, description}",
                                            "%d/%d" % (x["correct"], x["total"]), x["accuracy"],
                                            "%d / %d ms" % (x["dur_p50"], x["dur_p99"])))
    for v, x in c["variants"].items():
        print()
        print("  confusion (%s): rows = expected, columns = chosen" % v)
        w = max(len(n) for n in names) + 2
        print("    %-*s" % (w, "") + "".join("%*s" % (w, n) for n in names) + "%*s" % (w, "recall"))
        for a in names:
            row = [sum(1 for r in x["rows"] if r["want"] == a and r["got"] == b) for b in names]
            tot = sum(1 for r in x["rows"] if r["want"] == a)
            print("    %-*s" % (w, a) + "".join("%*d" % (w, k) for k in row) +
                  "%*s" % (w, "%.2f" % (row[names.index(a)] / tot) if tot else "n/a"))
        wrong = [r for r in x["rows"] if r["got"] != r["want"]]
        print("  misclassified (%s): %d" % (v, len(wrong)))
        for r in sorted(wrong, key=lambda r: (r["want"], str(r["got"]))):
            print("    %-9s -> %-9s %6s  %s" % (r["want"], r["got"],
                                                "%.3f" % r["score"] if r["score"] is not None
                                                else "-", short(r["text"])))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default="build/workforce")
    ap.add_argument("--tmp", required=True)
    ap.add_argument("--classify-set", default="tests/data/classify_set.json")
    ap.add_argument("-n", type=int, default=1000, help="runs of the cheap 5-step workflow")
    ap.add_argument("--tasks", type=int, default=0,
                    help="reference one-time tasks (0: 5 x n, as many queue items as steps)")
    ap.add_argument("--mixed-runs", type=int, default=200,
                    help="runs of the classifying 5-step workflow (0: not measured)")
    ap.add_argument("--employees", type=int, default=4)
    ap.add_argument("--one-worker", type=int, default=1, help="also part 2 with 1 worker (0: no)")
    ap.add_argument("--latency", type=int, default=100, help="sequential runs per kind, part 3")
    args = ap.parse_args()
    if args.tasks <= 0:
        args.tasks = 5 * args.n
    signal.signal(signal.SIGTERM, tb.on_signal)
    signal.signal(signal.SIGINT, tb.on_signal)
    try:
        with open(args.classify_set) as f:
            cset = json.load(f)
    except (OSError, ValueError) as e:
        log("workflows bench: error: cannot read %s: %s" % (args.classify_set, e))
        return 1
    model = cpu_model()

    t0 = time.perf_counter()
    try:
        cls = classify_accuracy(args, cset)
        r4 = throughput(args, "wf-runs-4", None, cset["labels"])
        r1 = throughput(args, "wf-runs-1", 1, cset["labels"]) if args.one_worker else None
        lat = latency(args, cset["labels"])
    except (BenchError, RuntimeError, OSError, ValueError, KeyError, TypeError) as e:
        log("workflows bench: error: %s" % e)
        return 1
    total = time.perf_counter() - t0

    print()
    print("workflows bench, CPU: %s (%d cores shared by the clients and the server)"
          % (model, os.cpu_count() or 0))
    print()
    print_classify(cls)
    acc = cls["variants"]["descriptions"]["accuracy"]

    print()
    print("workflows (2): throughput with the builtin engine (test key), runs queued while their "
          "%d employees were" % args.employees)
    print("  offline, then set idle; runs/s = N / (last completed_at - first started_at), steps/s "
          "= 5 N / the same span")
    print("  cheap 5-step: extract -> summarize -> draft_email -> extract -> respond (no "
          "embedding), %d runs" % args.n)
    if args.mixed_runs:
        print("  classify 5-step: extract -> classify -> summarize -> draft_email -> respond, "
              "%d runs" % args.mixed_runs)
    print("  reference: %d one-time tasks over the same employees, same server, drained the same "
          "way" % args.tasks)
    print()
    cols = [("4 workers (default)", r4)] + ([("1 worker", r1)] if r1 else [])
    print("  %-48s" % "" + "".join("%20s" % c for c, _ in cols))

    def row(label, f):
        print("  %-48s" % label + "".join("%20s" % f(r) for _, r in cols))

    row("task runs/s (reference)", lambda r: "%.0f" % r["ref"]["rps"])
    row("cheap 5-step: runs/s", lambda r: "%.1f" % r["wf"]["rps"])
    row("cheap 5-step: steps/s", lambda r: "%.0f" % r["wf"]["sps"])
    row("per-step cost / task run cost",
        lambda r: "%.2f" % (r["ref"]["rps"] / r["wf"]["sps"]))
    row("drain span, tasks / cheap runs (ms)",
        lambda r: "%d / %d" % (r["ref"]["span_ms"], r["wf"]["span_ms"]))
    row("release -> first start, tasks / runs (ms)",
        lambda r: "%d / %d" % (r["ref"]["first_start_ms"], r["wf"]["first_start_ms"]))
    row("longest gap between two starts, tasks / steps",
        lambda r: "%d / %d" % (r["ref"]["gap_ms"], r["wf"]["gap_ms"]))
    row("slowest PATCH employee idle, tasks / runs (ms)",
        lambda r: "%.1f / %.1f" % (r["ref"]["patch_max"], r["wf"]["patch_max"]))
    row("queued/s: tasks / runs (POST, %d clients)" % CREATE_THREADS,
        lambda r: "%.0f / %.0f" % (r["ref"]["n"] / r["ref"]["create_wall"],
                                   r["wf"]["n"] / r["wf"]["create_wall"]))
    if args.mixed_runs:
        row("classify 5-step: runs/s", lambda r: "%.1f" % r["mixed"]["rps"])
        row("classify 5-step: steps/s", lambda r: "%.0f" % r["mixed"]["sps"])
        row("classify per-step cost / task run cost",
            lambda r: "%.2f" % (r["ref"]["rps"] / r["mixed"]["sps"]))
    print()
    print("  step duration (completed_at - started_at) p50 / p99 / max ms, 4 workers")
    for kind, x in (("cheap", r4["wf"]), ("classify", r4["mixed"])):
        if not x:
            continue
        for (i, a), (p50, p99, mx) in sorted(x["per_action"].items()):
            print("    %-10s step %d %-12s %6d / %d / %d" % (kind, i, a, p50, p99, mx))

    print()
    print("workflows (3): latency with an idle queue, %d runs (or tasks) one at a time, each "
          "started after the previous" % args.latency)
    print("  ended; one server, 4 workers, one employee")
    print()
    print("  %-36s %7s %7s %7s %12s %14s %14s" % ("completed_at - created_at (ms)", "p50", "p99",
                                                  "max", "queue p50/max", "handoffs p50/99",
                                                  "in steps p50/99"))
    for label, x in lat["rows"].items():
        hand = "%d / %d" % (x["hand_p50"], x["hand_p99"]) if "hand_p50" in x else "-"
        work = "%d / %d" % (x["work_p50"], x["work_p99"]) if "work_p50" in x else "-"
        print("  %-36s %7d %7d %7d %12s %14s %14s" % (label, x["p50"], x["p99"], x["max"],
                                                      "%d / %d" % (x["wait_p50"], x["wait_max"]),
                                                      hand, work))
    print("  (queue: started_at - created_at; handoffs: the sum over a run of next step's "
          "started_at - this step's completed_at)")

    print()
    print("goals")
    print("  %-58s %8.3f %s" % ("classify accuracy (descriptions) >= %.1f" % GOAL_ACCURACY, acc,
                                 pf(acc >= GOAL_ACCURACY)))
    for c, r in cols:
        ratio = r["ref"]["rps"] / r["wf"]["sps"]
        print("  %-58s %8.2f %s" % ("per-step cost within %.1fx of a task run, %s"
                                     % (GOAL_STEP_RATIO, c), ratio, pf(ratio <= GOAL_STEP_RATIO)))
    print()
    servers = [("classify", cls), ("runs, 4 workers", r4)] + \
        ([("runs, 1 worker", r1)] if r1 else []) + [("latency", lat)]
    print("  server log warn/error lines: " +
          ", ".join("%s %d" % (n, len(x["problems"])) for n, x in servers))
    for n, x in servers:
        for line in x["problems"][:5]:
            print("    %s: %s" % (n, short(line, 160)))
    print("  (timestamps: the API's, ms resolution; the workflows bench took %.0f s)" % total)
    return 0


if __name__ == "__main__":
    sys.exit(main())
