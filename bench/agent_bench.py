#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""bench/agent_bench.py: what the tool loop itself costs per step (contract §19, issue 27).

build/workforce runs with WORKFORCE_LLM=openai against the scripted tool-calling model of
tests/mock/openai_mock.py, in this process. A test key's employee may call tasks.get. The
bench sends blocking POST /v1/chat turns, one at a time on one keep-alive connection:
  plain:  the model answers at once (1 model call, no tool);
  loop:   the model calls tasks.get K times, one step each, then answers (K + 1 model calls).
Every model request the server made is then replayed, as it was sent, straight to the model
(the same client code, one keep-alive connection): what the model itself took for each turn.
The loop's own cost per step (journal, the call's hand-over to the tool pool, the tool, the
result journaled, the next request built) is

    ((loop turn - its model time) - (plain turn - its model time)) / K

per pair of turns, reported as p50 (goal < 1 ms) and p90. It counts the tool (tasks.get of a
task that does not exist: one read) and the model's connection setup as the loop's, so it is an
upper bound. Usage: agent_bench.py --bin build/workforce --tmp DIR [-n 200] [-k 4].
"""

import argparse
import base64
import http.client
import json
import os
import sys
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "tests", "mock"))
import openai_mock  # noqa: E402
import wfbench  # noqa: E402
from wfbench import log, pct  # noqa: E402

MODEL = "bench-model"


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "this machine"


def script(k):
    steps = [{"calls": [{"name": "tasks__get",
                         "arguments": {"task_id": "task_%024d" % i}}]} for i in range(k)]
    steps.append({"say": "Done."})
    return "[[tools:%s]]" % base64.b64encode(json.dumps(steps).encode()).decode()


def post(conn, path, body, headers):
    t0 = time.perf_counter()
    conn.request("POST", path, body=body, headers=headers)
    r = conn.getresponse()
    data = r.read()
    return (time.perf_counter() - t0) * 1000.0, r.status, data


def model_time(mock, message):
    """Replay the model requests of the turn of user message 'message' to the mock: ms."""
    reqs = [r for r in mock.requests() if r["last_user"] == message]
    conn = http.client.HTTPConnection("127.0.0.1", mock.port, timeout=30)
    total = 0.0
    for r in reqs:
        ms, status, _ = post(conn, "/v1/chat/completions", json.dumps(r["body"]),
                             {"Content-Type": "application/json",
                              "Authorization": "Bearer none"})
        if status != 200:
            raise RuntimeError("replay answered %d" % status)
        total += ms
    conn.close()
    return total, len(reqs)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default="build/workforce")
    ap.add_argument("--tmp", required=True)
    ap.add_argument("-n", type=int, default=200, help="pairs of turns")
    ap.add_argument("-k", type=int, default=4, help="tool steps of a loop turn")
    args = ap.parse_args()

    mock = openai_mock.MockLLM().start()
    srv = wfbench.Server(args.bin, args.tmp, {
        "WORKFORCE_LLM": "openai", "WORKFORCE_LLM_BASE_URL": mock.base_url,
        "WORKFORCE_LLM_MODEL": MODEL, "WORKFORCE_TEST_LLM": "provider",
        "WORKFORCE_AGENT_MAX_STEPS": str(args.k + 1)}, name="agent")
    try:
        key = srv.key("bench-agent")
        srv.start()
        hdr = {"Authorization": "Bearer " + key, "Content-Type": "application/json"}
        conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=60)
        _, status, data = post(conn, "/v1/employees", json.dumps({
            "name": "Bench agent", "role": "Bench", "category": "operations",
            "tools": [{"name": "tasks.get", "policy": "auto"}]}), hdr)
        if status != 200:
            raise RuntimeError("employee: %d %s" % (status, data[:200]))
        emp = json.loads(data)["id"]
        per_step, plain, loop = [], [], []
        for i in range(args.n + 10):
            pair = {}
            for kind, k in (("plain", 0), ("loop", args.k)) if i % 2 else \
                    (("loop", args.k), ("plain", 0)):
                msg = "Bench %s %s %s" % (kind, uuid.uuid4().hex[:8], script(k))
                ms, status, data = post(conn, "/v1/chat", json.dumps(
                    {"employee_id": emp, "message": msg}), hdr)
                if status != 200 or json.loads(data)["stop_reason"] != "completed":
                    raise RuntimeError("turn: %d %s" % (status, data[:300]))
                m, calls = model_time(mock, msg)
                if calls != k + 1:
                    raise RuntimeError("%s turn made %d model calls, not %d" % (kind, calls,
                                                                                k + 1))
                pair[kind] = (ms, m)
            mock.reset()
            if i < 10:
                continue  # warm-up
            plain.append(pair["plain"][0])
            loop.append(pair["loop"][0])
            per_step.append(((pair["loop"][0] - pair["loop"][1]) -
                             (pair["plain"][0] - pair["plain"][1])) / args.k)
        conn.close()
    finally:
        srv.stop()
        mock.stop()
    p50 = pct(per_step, 50)
    print("\nThe tool loop's own cost per step (issue 27): %s, %d pairs, K = %d"
          % (cpu_name(),
             args.n, args.k))
    print("| figure | p50 | p90 |")
    print("| --- | ---: | ---: |")
    print("| plain turn (1 model call), ms | %.2f | %.2f |" % (pct(plain, 50), pct(plain, 90)))
    print("| loop turn (%d steps, %d model calls), ms | %.2f | %.2f |"
          % (args.k, args.k + 1, pct(loop, 50), pct(loop, 90)))
    print("| the loop's own cost per step, ms | %.3f | %.3f |" % (p50, pct(per_step, 90)))
    print("goal: p50 < 1 ms per step: %s" % ("PASS" if p50 < 1.0 else "FAIL"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
