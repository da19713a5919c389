#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""bench/wfbench.py: shared helpers of the chat benchmarks (Python 3 standard library only).

Starting build/workforce on a free 127.0.0.1 port with only our WORKFORCE_* variables, keys and
credits through the CLI, stopping by PID, /proc figures, percentiles, and a latency probe that
also runs as its own process (`python3 bench/wfbench.py probe ...`, prints one JSON line), so that
the probe shares no interpreter lock with an asyncio load generator.
"""

import argparse
import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import time

RATE_LIMITS = "agency:1000000/1000000/100000"


def log(msg):
    print("bench: " + msg, file=sys.stderr, flush=True)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def clean_env(extra):
    """The environment minus every WORKFORCE_* variable (unknown ones stop serve), plus 'extra'."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("WORKFORCE_")}
    env.update(extra)
    return env


def cli(binary, db, env, *args):
    r = subprocess.run([binary, "--database", db] + list(args), env=env, capture_output=True,
                       text=True, timeout=60)
    if r.returncode != 0:
        raise RuntimeError("%s %s failed (%d): %s" % (binary, " ".join(args), r.returncode,
                                                       r.stderr.strip()))
    return r.stdout.strip()


def agency_key(binary, db, env, org, credits=100000000):
    """A live key of agency org 'org' (created when missing) with 'credits' credits."""
    key = cli(binary, db, env, "keys", "create", "--org", org, "--tier", "agency", "--mode", "live")
    cli(binary, db, env, "orgs", "update", org, "--tier", "agency", "--credits", str(credits))
    return key.split()[0]


class Server:
    """build/workforce serve on a free port; stop() ends it by its own PID."""

    def __init__(self, binary, tmp, env_extra, name="workforce"):
        self.binary, self.tmp, self.name = binary, tmp, name
        self.db = os.path.join(tmp, name + ".db")
        self.env = clean_env(dict({"WORKFORCE_RATE_LIMITS": RATE_LIMITS}, **env_extra))
        self.port = None
        self.proc = None
        self.logpath = os.path.join(tmp, name + ".log")
        self.start_s = None

    def key(self, org, credits=100000000):
        return agency_key(self.binary, self.db, self.env, org, credits)

    def start(self, timeout=30):
        self.port = free_port()
        self.logf = open(self.logpath, "wb")
        t0 = time.monotonic()
        self.proc = subprocess.Popen([self.binary, "--database", self.db, "serve", "--listen",
                                      "127.0.0.1:%d" % self.port], env=self.env,
                                     stdout=self.logf, stderr=subprocess.STDOUT)
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError("%s exited (%d) before it was ready: %s"
                                   % (self.name, self.proc.returncode, self.log_tail()))
            try:
                c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=1)
                c.request("GET", "/healthz")
                if c.getresponse().status == 200:
                    c.close()
                    break
                c.close()
            except OSError:
                pass
            if time.monotonic() - t0 > timeout:
                raise RuntimeError("%s not ready after %d s" % (self.name, timeout))
            time.sleep(0.01)
        self.start_s = time.monotonic() - t0
        return self

    @property
    def pid(self):
        return self.proc.pid

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def log_tail(self, n=20):
        try:
            with open(self.logpath, "rb") as f:
                return b"\n".join(f.read().splitlines()[-n:]).decode("utf-8", "replace")
        except OSError:
            return ""

    def stop(self, grace=40):
        """SIGTERM, wait up to 'grace' seconds, then SIGKILL. Returns (exit code, seconds)."""
        if self.proc is None:
            return None, 0.0
        t0 = time.monotonic()
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(grace)
            except subprocess.TimeoutExpired:
                log("%s (pid %d) did not stop in %d s; SIGKILL" % (self.name, self.proc.pid, grace))
                self.proc.kill()
                self.proc.wait()
        self.logf.close()
        return self.proc.returncode, time.monotonic() - t0


def stop_proc(proc, grace=10):
    """End a child Popen by its PID: SIGTERM, then SIGKILL after 'grace' seconds."""
    if proc is None or proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(grace)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def proc_status(pid):
    """Selected /proc/PID/status fields in KiB (or counts), plus open fds."""
    out = {}
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                k, _, v = line.partition(":")
                if k in ("VmRSS", "VmHWM", "RssAnon", "RssFile", "VmData", "Threads"):
                    out[k] = int(v.split()[0])
        out["fds"] = len(os.listdir("/proc/%d/fd" % pid))
    except OSError:
        pass
    return out


def smaps_rollup(pid):
    try:
        with open("/proc/%d/smaps_rollup" % pid) as f:
            return f.read()
    except OSError:
        return ""


def pct(values, p):
    """Nearest-rank percentile of 'values' (any order)."""
    if not values:
        return float("nan")
    v = sorted(values)
    k = max(0, min(len(v) - 1, int(-(-p * len(v) // 100)) - 1))
    return v[k]


def employee_id(port, key):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    c.request("GET", "/v1/employees?limit=100", headers={"Authorization": "Bearer " + key})
    r = c.getresponse()
    body = json.loads(r.read())
    c.close()
    if r.status != 200:
        raise RuntimeError("GET /v1/employees answered %d: %s" % (r.status, body))
    for e in body["employees"]:
        if e["status"] != "offline":
            return e["id"]
    raise RuntimeError("no employee online")


def probe(port, key, n, path="/v1/employees?limit=10", conn=None):
    """'n' sequential GETs on one keep-alive connection: latencies (ms) and non-200 count."""
    c = conn or http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    hdr = {"Authorization": "Bearer " + key}
    lat, bad, errors = [], 0, 0
    for _ in range(n):
        t0 = time.perf_counter()
        try:
            c.request("GET", path, headers=hdr)
            r = c.getresponse()
            r.read()
            if r.status != 200:
                bad += 1
        except (OSError, http.client.HTTPException):
            errors += 1
            c.close()
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            continue
        lat.append((time.perf_counter() - t0) * 1000.0)
    if conn is None:
        c.close()
    return {"n": n, "ok": len(lat) - bad, "non200": bad, "errors": errors,
            "p50_ms": pct(lat, 50), "p99_ms": pct(lat, 99), "max_ms": max(lat) if lat else None}


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("probe")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--key", required=True)
    p.add_argument("-n", type=int, default=500)
    p.add_argument("--path", default="/v1/employees?limit=10")
    p.add_argument("--rounds", type=int, default=1,
                   help="measure this many times on the same connection, each after a line on stdin"
                        " (the first one right away); the connection is opened first")
    args = ap.parse_args()
    if args.cmd == "probe":
        # Connect (and warm up) first: a server short of descriptors later still has this one.
        c = http.client.HTTPConnection("127.0.0.1", args.port, timeout=30)
        probe(args.port, args.key, 20, args.path, c)
        for i in range(args.rounds):
            if i and not sys.stdin.readline():
                break
            print(json.dumps(probe(args.port, args.key, args.n, args.path, c)), flush=True)
        c.close()


if __name__ == "__main__":
    main()
