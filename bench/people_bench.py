#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""bench/people_bench.py: what people cost (issue 28), in one run on one machine.

read:   GET /v1/employees?limit=10 under wrk (T threads, C connections, D seconds a round), once
        with an API key per wrk thread (the reference) and once with a person's session per wrk
        thread (cookie `wf_session`), alternating for R rounds, each round with fresh keys and
        fresh users (each is limited on its own), on one server whose limits are far above the
        load. The medians of the rounds' requests per second are compared: goal, the session's
        within 10% of the key's (ratio >= 0.90).
write:  PATCH /v1/employees/{id} {"name"} under wrk, one connection (each request waits for the
        one before: its cost is its latency), against build/workforce and against the same
        server built with -DWORKFORCE_BENCH_NO_AUDIT (bench/people.sh: no route writes an audit
        entry), each on a SQLite database of its own, alternating for R rounds of D seconds.
        The medians of the rounds' requests per second are compared: goal, the write with its
        entry within 10% of the write alone (ratio of the times <= 1.10). The same with 8
        connections is printed too (writes then queue for SQLite's one writer).
        And below the HTTP layer, bench/audit_bench.c: the store's write alone with and without
        its entry armed, alternating in blocks, on a SQLite file (see its header).

Prints a summary and the figures as one JSON line on stdout.

Usage: people_bench.py --bin build/workforce --tmp DIR [--audit-bench build/bench/audit_bench]
       [--noaudit-bin build/bench-noaudit/workforce] [--threads 2] [--connections 32]
       [--seconds 5] [--rounds 3]
"""

import argparse
import http.client
import json
import os
import re
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import wfbench  # noqa: E402
from wfbench import log  # noqa: E402

PASSWORD = "bench password of people"


def request(port, method, path, body=None, headers=None):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    h = {"Content-Type": "application/json"} if body is not None else {}
    h.update(headers or {})
    c.request(method, path, body=json.dumps(body) if body is not None else None, headers=h)
    r = c.getresponse()
    data = r.read()
    cookie = r.getheader("Set-Cookie")
    c.close()
    return r.status, (json.loads(data) if data else None), cookie


def person(srv, owner, email):
    """A member's session cookie: invited by the owner's session, password set, signed in."""
    st, inv, _ = request(srv.port, "POST", "/v1/users", {"email": email, "role": "member"},
                         {"Cookie": owner[0], "X-CSRF-Token": owner[1]})
    if st != 200:
        raise RuntimeError("invite %s: %d %s" % (email, st, inv))
    tok = inv["set_password_url"].split("token=")[1]
    request(srv.port, "POST", "/v1/users/set_password", {"token": tok, "password": PASSWORD})
    return sign_in(srv, email)


def sign_in(srv, email):
    st, body, cookie = request(srv.port, "POST", "/v1/sessions",
                               {"email": email, "password": PASSWORD})
    if st != 200:
        raise RuntimeError("sign-in %s: %d %s" % (email, st, body))
    return re.match(r"(wf_session=[^;]+)", cookie).group(1), body["csrf_token"]


def wrk(port, headers, threads, conns, seconds):
    env = dict(os.environ, WRK_HEADERS="|".join(headers))
    out = subprocess.run(["wrk", "-t%d" % threads, "-c%d" % conns, "-d%ds" % seconds,
                          "-s", os.path.join(HERE, "header.lua"),
                          "http://127.0.0.1:%d/v1/employees?limit=10" % port],
                         env=env, capture_output=True, text=True, timeout=seconds + 60).stdout
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    bad = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    if bad:
        raise RuntimeError("wrk saw %s non-2xx answers:\n%s" % (bad.group(1), out))
    return rps


def wrk_patch(port, key, emp, conns, seconds):
    env = dict(os.environ, WRK_PATH="/v1/employees/" + emp, WRK_KEY=key,
               WRK_BODY=json.dumps({"name": "Bench Ann"}))
    out = subprocess.run(["wrk", "-t1", "-c%d" % conns, "-d%ds" % seconds, "-s",
                          os.path.join(HERE, "patch.lua"), "http://127.0.0.1:%d" % port],
                         env=env, capture_output=True, text=True, timeout=seconds + 60).stdout
    bad = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    if bad:
        raise RuntimeError("wrk saw %s non-2xx answers:\n%s" % (bad.group(1), out))
    return float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))


def writes(a):
    """PATCH /v1/employees/{id} against the server and its build without audit entries."""
    env = {"WORKFORCE_RATE_LIMITS": "agency:1000000/1000000/100000"}
    servers = [wfbench.Server(a.bin, a.tmp, env, name="audited").start(),
               wfbench.Server(a.noaudit_bin, a.tmp, env, name="reference").start()]
    figures = {}
    try:
        targets = []
        for srv in servers:
            key = srv.key("bench-writes")
            st, body, _ = request(srv.port, "GET", "/v1/employees?limit=1", None,
                                  {"Authorization": "Bearer " + key})
            targets.append((srv, key, body["employees"][0]["id"]))
        for conns in (1, 8):
            got = {"audited": [], "reference": []}
            for srv, key, emp in targets:
                wrk_patch(srv.port, key, emp, conns, 2)  # warm-up, not counted
            for r in range(a.rounds):
                for srv, key, emp in targets:
                    got[srv.name].append(wrk_patch(srv.port, key, emp, conns, a.seconds))
                log("writes, %d connection(s), round %d: with entries %.0f req/s, without %.0f"
                    % (conns, r + 1, got["audited"][-1], got["reference"][-1]))
            with_rps = statistics.median(got["audited"])
            without_rps = statistics.median(got["reference"])
            figures["write_c%d" % conns] = {"with_rps": with_rps, "without_rps": without_rps,
                                            "time_ratio": without_rps / with_rps}
        # the entries were written by the one server and not by the other
        for srv, key, emp in targets:
            figures["entries_" + srv.name] = wfbench.cli(
                a.bin, srv.db, srv.env, "audit", "--org", "bench-writes",
                "--limit", "10").count("employee.update")
    finally:
        for srv in servers:
            srv.stop()
    return figures


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--tmp", required=True)
    ap.add_argument("--audit-bench")
    ap.add_argument("--noaudit-bin")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--connections", type=int, default=32)
    ap.add_argument("--seconds", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()

    srv = wfbench.Server(a.bin, a.tmp, {
        "WORKFORCE_RATE_LIMITS": "agency:1000000/1000000/100000,starter:1000000/1000000/100000",
        "WORKFORCE_SESSION_RATE_LIMIT": "1000000/1000000/100000",
    }, name="people").start()
    try:
        link = wfbench.cli(a.bin, srv.db, srv.env, "users", "create", "--org", "bench-people",
                           "--email", "owner@bench.test", "--role", "owner").splitlines()[-1]
        request(srv.port, "POST", "/v1/users/set_password",
                {"token": link.split("token=")[1], "password": PASSWORD})
        owner = sign_in(srv, "owner@bench.test")
        wfbench.cli(a.bin, srv.db, srv.env, "orgs", "update", "bench-people", "--tier", "agency")
        keys, sessions, n = [], [], 0
        # warm-up, not counted
        # keys of organizations of their own each round (an organization's keys share its
        # limits, at most 1,000,000 requests a minute), as each round's people are new users
        k = [("Authorization: Bearer " + srv.key("bench-warm-%d" % i)) for i in range(a.threads)]
        wrk(srv.port, k, a.threads, a.connections, 2)
        for r in range(a.rounds):
            hk = ["Authorization: Bearer " + srv.key("bench-r%d-%d" % (r, i))
                  for i in range(a.threads)]
            hs = []
            for _ in range(a.threads):
                n += 1
                hs.append("Cookie: " + person(srv, owner, "p%d@bench.test" % n)[0])
            kr = wrk(srv.port, hk, a.threads, a.connections, a.seconds)
            sr = wrk(srv.port, hs, a.threads, a.connections, a.seconds)
            log("round %d: key %.0f req/s, session %.0f req/s" % (r + 1, kr, sr))
            keys.append(kr)
            sessions.append(sr)
    finally:
        srv.stop()
    out = {"machine": wfbench_cpu(), "read_key_rps": statistics.median(keys),
           "read_session_rps": statistics.median(sessions)}
    out["read_ratio"] = out["read_session_rps"] / out["read_key_rps"]
    print("people: GET /v1/employees, median of %d rounds: key %.0f req/s, session %.0f req/s, "
          "session/key %.3f (goal >= 0.90: %s)"
          % (a.rounds, out["read_key_rps"], out["read_session_rps"], out["read_ratio"],
             "PASS" if out["read_ratio"] >= 0.90 else "FAIL"), file=sys.stderr)
    if a.audit_bench:
        w = json.loads(subprocess.run([a.audit_bench, a.tmp, "20", "200"], capture_output=True,
                                      text=True, check=True, timeout=600).stdout)
        out.update(w)
        print("people: a write and its audit entry (PATCH /v1/users/{id}'s, %d each): %.1f us "
              "without, %.1f us with, ratio %.3f (goal <= 1.10: %s); PATCH /v1/employees/{id}'s "
              "single statement: %.1f us alone, %.1f us with its entry (given a transaction)"
              % (w["writes_per_kind"], w["user_plain_us"], w["user_audited_us"], w["user_ratio"],
                 "PASS" if w["user_ratio"] <= 1.10 else "FAIL", w["employee_plain_us"],
                 w["employee_audited_us"]), file=sys.stderr)
    if a.noaudit_bin:
        w = writes(a)
        out.update(w)
        c1, c8 = w["write_c1"], w["write_c8"]
        print("people: PATCH /v1/employees/{id}, median of %d rounds, one connection: %.0f req/s "
              "with its audit entry, %.0f without (the same server built without entries): a "
              "write takes %.3f times as long (goal <= 1.10: %s); 8 connections: %.0f and %.0f "
              "req/s, %.3f; entries written: %d and %d"
              % (a.rounds, c1["with_rps"], c1["without_rps"], c1["time_ratio"],
                 "PASS" if c1["time_ratio"] <= 1.10 else "FAIL", c8["with_rps"],
                 c8["without_rps"], c8["time_ratio"], w["entries_audited"],
                 w["entries_reference"]), file=sys.stderr)
    print(json.dumps(out))


def wfbench_cpu():
    try:
        r = subprocess.run(["lscpu"], capture_output=True, text=True, timeout=10)
        for line in r.stdout.splitlines():
            if line.startswith("Model name:"):
                return line.split(":", 1)[1].strip()
    except (OSError, subprocess.SubprocessError):
        pass
    return "this machine"


if __name__ == "__main__":
    main()
