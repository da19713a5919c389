#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""bench/openai_bench.py: chat through the OpenAI-compatible door against POST /v1/chat.

One build/workforce with WORKFORCE_LLM=openai in front of the in-process asyncio upstream of
bench/llm_upstream.py (a fixed small streamed reply, no delay), one key of an agency
organization. The same http.client code (bench/chat_overhead.py's clients: one keep-alive
connection per client thread) sends the same message, a new conversation each time, as
  chat:    POST /v1/chat {employee_id, message}
  openai:  POST /v1/openai/chat/completions {model, messages: [{role: user, content}]}
blocking and streamed (stream: true, read to the end), sequentially and from 8 concurrent
threads, in 10 rounds of alternating order so that drift (other load on the machine) hits
both alike. Prints p50/p99 and req/s of each and the ratio openai/chat of the p50 latency and
of the throughput, with the goal "within 5%" (p50 ratio <= 1.05 and req/s ratio >= 0.95 in
every mode) as PASS/FAIL.
Exits 1 only when something failed to run.
Usage: openai_bench.py --bin build/workforce --tmp DIR [-n 4000].
"""

import argparse
import json
import os
import signal
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import chat_overhead  # noqa: E402
import llm_upstream  # noqa: E402
import wfbench  # noqa: E402
from wfbench import log, pct  # noqa: E402

MODEL = "bench-model"
GOAL = 0.05


def measure(args, up):
    srv = wfbench.Server(args.bin, args.tmp, {
        "WORKFORCE_LLM": "openai", "WORKFORCE_LLM_BASE_URL": up.base_url,
        "WORKFORCE_LLM_MODEL": MODEL}, name="openai-bench")
    try:
        key = srv.key("bench-openai")
        srv.start()
        log("openai bench: workforce pid %d on 127.0.0.1:%d, upstream %s (in-process)"
            % (srv.pid, srv.port, up.base_url))
        emp = wfbench.employee_id(srv.port, key)
        message = "Give me a one-line status update."
        hdr = {"Authorization": "Bearer " + key, "Content-Type": "application/json"}
        reply = b"Hello from the bench upstream."
        targets = {}
        for stream in (False, True):
            chat = {"employee_id": emp, "message": message}
            oa = {"model": emp, "messages": [{"role": "user", "content": message}]}
            if stream:
                chat["stream"] = True
                oa["stream"] = True
            targets[("chat", stream)] = ("/v1/chat", json.dumps(chat),
                                         b"message.completed" if stream else reply)
            targets[("openai", stream)] = ("/v1/openai/chat/completions", json.dumps(oa),
                                           b"[DONE]" if stream else reply)
        for name, (path, body, exp) in targets.items():
            _, fails, _ = chat_overhead.run(srv.port, path, body, hdr, args.warmup, 1, exp)
            if fails:
                raise RuntimeError("%s warm-up failed: %s" % (name, fails[:3]))
        results = {}
        for stream in (False, True):
            for threads in (1, args.concurrency):
                per = args.n if threads == 1 else max(1, args.n // 2)
                acc = {k: ([], [], 0.0) for k in ("chat", "openai")}
                rounds = 10
                for rnd in range(rounds):
                    order = ("chat", "openai") if rnd % 2 == 0 else ("openai", "chat")
                    for door in order:
                        path, body, exp = targets[(door, stream)]
                        lat, fails, wall = chat_overhead.run(
                            srv.port, path, body, hdr, per // rounds + (rnd < per % rounds),
                            threads, exp)
                        a_ = acc[door]
                        acc[door] = (a_[0] + lat, a_[1] + fails, a_[2] + wall)
                for door, (lat, fails, wall) in acc.items():
                    results[(stream, threads, door)] = {
                        "n": len(lat) + len(fails), "fail": len(fails), "fails": fails[:3],
                        "p50": pct(lat, 50), "p99": pct(lat, 99),
                        "rps": len(lat) / wall if wall else 0}
                if not srv.alive():
                    raise RuntimeError("workforce died: " + srv.log_tail())
    except BaseException:
        srv.stop()
        log("workforce log tail:\n" + srv.log_tail())
        raise
    srv.stop()
    return results


def cpu_model():
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    except OSError:
        return "?"
    for line in out.splitlines():
        if line.startswith("Model name:"):
            return line.split(":", 1)[1].strip()
    return "?"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default="build/workforce")
    ap.add_argument("--tmp", required=True)
    ap.add_argument("-n", type=int, default=int(os.environ.get("BENCH_OPENAI_N", "4000")))
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--warmup", type=int, default=100)
    args = ap.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))

    up = llm_upstream.Upstream(interval=0).start_in_thread()
    try:
        results = measure(args, up)
    except Exception as e:  # noqa: BLE001
        log("openai bench: error: %s" % e)
        return 1
    finally:
        up.stop()

    print()
    print("openai door: POST /v1/openai/chat/completions vs POST /v1/chat, same server, same "
          "upstream, same run")
    print("  machine: %s; %d cores shared by the clients, the upstream and the server"
          % (cpu_model(), os.cpu_count() or 0))
    print("  a new conversation per request; http.client keep-alive; rounds in alternating "
          "order")
    print()
    print("  %-34s %8s %6s %10s %10s %10s" % ("", "requests", "fail", "p50 (ms)", "p99 (ms)",
                                              "req/s"))
    verdicts = []
    for stream in (False, True):
        for threads in (1, args.concurrency):
            for door in ("chat", "openai"):
                r = results[(stream, threads, door)]
                label = "%s, %s, %s" % (door, "stream" if stream else "blocking",
                                        "sequential" if threads == 1 else
                                        "%d concurrent" % threads)
                print("  %-34s %8d %6d %10.3f %10.3f %10.0f" % (label, r["n"], r["fail"],
                                                                r["p50"], r["p99"], r["rps"]))
            c, o = results[(stream, threads, "chat")], results[(stream, threads, "openai")]
            lat = o["p50"] / c["p50"] if c["p50"] else 0
            thr = o["rps"] / c["rps"] if c["rps"] else 0
            verdicts.append(("%s, %s" % ("stream" if stream else "blocking",
                                         "sequential" if threads == 1 else
                                         "%d concurrent" % threads), lat, thr))
    print()
    print("  goals: openai within 5%% of chat (p50 ratio <= %.2f, req/s ratio >= %.2f)"
          % (1 + GOAL, 1 - GOAL))
    for label, lat, thr in verdicts:
        ok = lat <= 1 + GOAL and thr >= 1 - GOAL
        print("    %-30s p50 ratio %6.3f  req/s ratio %6.3f  %s"
              % (label, lat, thr, "PASS" if ok else "FAIL"))
    nfail = sum(r["fail"] for r in results.values())
    if nfail:
        print("  warning: %d failed requests, e.g. %s" % (
            nfail, [r["fails"] for r in results.values() if r["fails"]][0]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
