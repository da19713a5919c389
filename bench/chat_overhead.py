#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""bench/chat_overhead.py: what blocking POST /v1/chat adds on top of the model call.

An asyncio OpenAI-compatible upstream runs in this process (bench/llm_upstream.py, a fixed small
streamed reply, no delay); build/workforce runs with WORKFORCE_LLM=openai against it. The same
client code (http.client, one keep-alive connection per client thread) then sends
  direct:    POST /v1/chat/completions to the upstream (what workforce itself sends it)
  workforce: POST /v1/chat {employee_id, message} to workforce (a new conversation each time)
N times sequentially and N times from 8 concurrent threads, after a warm-up, and prints p50/p99
of both and the p50 difference (goal: < 1 ms sequential); then once more, sequentially, with the
database on tmpfs (/dev/shm), where fsync costs nothing, to show what the commits cost. Prints a
table; exits 1 only when something failed to run. Usage: chat_overhead.py --bin build/workforce --tmp DIR [-n 2000].
"""

import argparse
import http.client
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import llm_upstream  # noqa: E402
import wfbench  # noqa: E402
from wfbench import log, pct  # noqa: E402

MODEL = "bench-model"


def run_client(port, path, body, headers, n, expect):
    """'n' sequential POSTs on one keep-alive connection -> (latencies ms, failures)."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    lat, fails = [], []
    for _ in range(n):
        t0 = time.perf_counter()
        try:
            c.request("POST", path, body=body, headers=headers)
            r = c.getresponse()
            data = r.read()
        except (OSError, http.client.HTTPException) as e:
            fails.append(repr(e))
            c.close()
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            continue
        dt = (time.perf_counter() - t0) * 1000.0
        if r.status != 200 or expect not in data:
            fails.append("%d %s" % (r.status, data[:200]))
            continue
        lat.append(dt)
    c.close()
    return lat, fails


def run(port, path, body, headers, n, threads, expect):
    """'n' requests per thread; returns (all latencies, failures, wall seconds)."""
    if threads == 1:
        t0 = time.perf_counter()
        lat, fails = run_client(port, path, body, headers, n, expect)
        return lat, fails, time.perf_counter() - t0
    res = [None] * threads

    def work(i):
        res[i] = run_client(port, path, body, headers, n, expect)

    ts = [threading.Thread(target=work, args=(i,)) for i in range(threads)]
    t0 = time.perf_counter()
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    wall = time.perf_counter() - t0
    lat, fails = [], []
    for l_, f in res:
        lat += l_
        fails += f
    return lat, fails, wall


def measure(args, db_dir, concurrencies, up):
    """Start workforce with its database in 'db_dir', run both targets -> (results, status, rc)."""
    srv = wfbench.Server(args.bin, db_dir, {
        "WORKFORCE_LLM": "openai", "WORKFORCE_LLM_BASE_URL": up.base_url,
        "WORKFORCE_LLM_MODEL": MODEL}, name="chat-overhead")
    try:
        key = srv.key("bench-chat")
        srv.start()
        log("chat overhead: workforce pid %d on 127.0.0.1:%d (database in %s), upstream %s "
            "(in-process)" % (srv.pid, srv.port, db_dir, up.base_url))
        emp = wfbench.employee_id(srv.port, key)
        message = "Give me a one-line status update."
        wf_body = json.dumps({"employee_id": emp, "message": message})
        wf_hdr = {"Authorization": "Bearer " + key, "Content-Type": "application/json"}
        up_body = json.dumps({"model": MODEL, "stream": True,
                              "stream_options": {"include_usage": True},
                              "messages": [{"role": "system", "content": "You are a bench."},
                                           {"role": "user", "content": message}]})
        up_hdr = {"Authorization": "Bearer none", "Content-Type": "application/json"}
        targets = {
            "direct": (up.port, "/v1/chat/completions", up_body, up_hdr, b"[DONE]"),
            "workforce": (srv.port, "/v1/chat", wf_body, wf_hdr,
                          b'"content":"Hello from the bench upstream."'),
        }
        # Warm-up both paths (connections, caches, SQLite pages).
        for name, (p, path, b, h, exp) in targets.items():
            _, fails, _ = run(p, path, b, h, args.warmup, 1, exp)
            if fails:
                raise RuntimeError("%s warm-up failed: %s" % (name, fails[:3]))
        results = {}
        for threads in concurrencies:
            # Concurrent: each client thread sends 'n / 2' requests, so that the p50 of the
            # 8-client run rests on 4 x n requests (a run of n in all moved by +-0.5 ms).
            per = args.n if threads == 1 else max(1, args.n // 2)
            # Rounds in alternating orders, so that drift (page cache, CPU clock, the other
            # process on the machine) hits both targets alike.
            acc = {k: ([], [], 0.0) for k in targets}
            rounds = 4
            for rnd in range(rounds):
                for name in (("direct", "workforce") if rnd % 2 == 0 else ("workforce", "direct")):
                    p, path, b, h, exp = targets[name]
                    lat, fails, wall = run(p, path, b, h, per // rounds + (rnd < per % rounds),
                                           threads, exp)
                    a_ = acc[name]
                    acc[name] = (a_[0] + lat, a_[1] + fails, a_[2] + wall)
            for name, (lat, fails, wall) in acc.items():
                results[(threads, name)] = {"n": len(lat) + len(fails), "ok": len(lat),
                                            "fail": len(fails), "fails": fails[:3],
                                            "p50": pct(lat, 50), "p99": pct(lat, 99),
                                            "rps": len(lat) / wall if wall else 0}
            if not srv.alive():
                raise RuntimeError("workforce died: " + srv.log_tail())
        st = wfbench.proc_status(srv.pid)
    except BaseException:
        srv.stop()
        log("workforce log tail:\n" + srv.log_tail())
        raise
    rc, _ = srv.stop()
    return results, st, rc


def fs_type(path):
    try:
        r = subprocess.run(["df", "--output=fstype", path], capture_output=True, text=True)
        return r.stdout.split()[-1] if r.returncode == 0 and r.stdout.split() else "?"
    except OSError:
        return "?"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default="build/workforce")
    ap.add_argument("--tmp", required=True)
    ap.add_argument("-n", type=int, default=int(os.environ.get("BENCH_CHAT_N", "2000")))
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--warmup", type=int, default=200)
    ap.add_argument("--tmpfs", default="/dev/shm",
                    help="also measure sequentially with the database here ('' to skip)")
    args = ap.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))

    up = llm_upstream.Upstream(interval=0).start_in_thread()
    shm = None
    try:
        results, st, rc = measure(args, args.tmp, (1, args.concurrency), up)
        shm_res = None
        if args.tmpfs and os.path.isdir(args.tmpfs) and os.access(args.tmpfs, os.W_OK):
            shm = tempfile.mkdtemp(prefix="workforce-bench-chat.", dir=args.tmpfs)
            shm_res, _, _ = measure(args, shm, (1,), up)
    except Exception as e:  # noqa: BLE001
        log("chat overhead: error: %s" % e)
        return 1
    finally:
        up.stop()
        if shm:
            shutil.rmtree(shm, ignore_errors=True)

    print()
    print("chat (a): blocking POST /v1/chat through workforce vs the same client straight to the "
          "upstream")
    print("  upstream: asyncio, in-process, streamed 5-chunk reply + usage + [DONE], no delay; "
          "http.client keep-alive;")
    print("  a new conversation per request; database on %s (%s), SQLite synchronous=FULL"
          % (args.tmp, fs_type(args.tmp)))
    print()
    print("  %-26s %8s %6s %10s %10s %10s" % ("", "requests", "fail", "p50 (ms)", "p99 (ms)",
                                              "req/s"))
    for threads in (1, args.concurrency):
        for name in ("direct", "workforce"):
            r = results[(threads, name)]
            label = "%s, %s" % (name, "sequential" if threads == 1 else "%d concurrent" % threads)
            print("  %-26s %8d %6d %10.3f %10.3f %10.0f" % (label, r["n"], r["fail"], r["p50"],
                                                            r["p99"], r["rps"]))
    print()
    seq = results[(1, "workforce")]["p50"] - results[(1, "direct")]["p50"]
    seq99 = results[(1, "workforce")]["p99"] - results[(1, "direct")]["p99"]
    con = (results[(args.concurrency, "workforce")]["p50"] -
           results[(args.concurrency, "direct")]["p50"])
    print("  %-44s %10.3f" % ("p50 overhead, sequential (ms)", seq))
    print("  %-44s %10.3f" % ("p99 overhead, sequential (ms)", seq99))
    print("  %-44s %10.3f" % ("p50 overhead, %d concurrent (ms)" % args.concurrency, con))
    if shm_res:
        shm_seq = shm_res[(1, "workforce")]["p50"] - shm_res[(1, "direct")]["p50"]
        print("  %-44s %10.3f" % ("p50 overhead, sequential, database on %s (%s)"
                                  % (args.tmpfs, fs_type(args.tmpfs)), shm_seq))
        print("  %-44s %10.0f" % ("  workforce req/s there, sequential", shm_res[(1, "workforce")]["rps"]))
    print("  %-44s %10.1f" % ("workforce RSS after (MiB)", st.get("VmRSS", 0) / 1024))
    print("  %-44s %10s" % ("workforce exit status on SIGTERM", rc))
    print()
    print("  goals")
    print("    %-40s %-10s %s" % ("p50 overhead < 1 ms (sequential)", "%.3f ms" % seq,
                                  "PASS" if seq < 1.0 else "FAIL"))
    print("    %-40s %-10s %s" % ("p50 overhead < 1.5 ms (%d concurrent)" % args.concurrency,
                                  "%.3f ms" % con, "PASS" if con < 1.5 else "FAIL"))
    nfail = sum(r["fail"] for r in results.values())
    if nfail:
        print("  warning: %d failed requests, e.g. %s" % (
            nfail, [r["fails"] for r in results.values() if r["fails"]][0]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
