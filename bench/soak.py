#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Soak: mixed traffic from many connections with kill -9 restarts (make bench, not make test).

SOAK_SECONDS (600) of traffic from SOAK_CONNECTIONS (64) client threads, each with its own
keep-alive connection: reads (employee, conversation, task and document lists and details),
blocking and streamed chats, small uploads, task creations and updates, over five
organizations. SOAK_RESTARTS (20) times, evenly spread, the server is killed with SIGKILL and
started again on the same database and port. Then it is stopped gracefully, started once more,
and every acknowledged write is looked up.

Goals, printed PASS/FAIL in one table:
- lost writes: 0 (every 200 of a chat, upload, task creation is found afterwards);
- 5xx outside the restart windows: 0 (a window runs from the kill to 2 s after the server
  answers again; connection errors are expected inside it and counted apart);
- RSS and open files flat: in every server life, the value at its end is within 25% (RSS) /
  16 descriptors (files) of the value at 10 s of that life (warm). Across lives the data grows,
  so the first and last lives are printed, not judged.

Exit status: 0 when the soak ran (whatever the goals), 1 when it could not run.
"""

import http.client
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from wfbench import free_port  # noqa: E402
BIN = os.environ.get("BENCH_BINARY", os.path.join(ROOT, "build", "workforce"))
SECONDS = int(os.environ.get("SOAK_SECONDS", "600"))
CONNS = int(os.environ.get("SOAK_CONNECTIONS", "64"))
RESTARTS = int(os.environ.get("SOAK_RESTARTS", "20"))
LIMITS = "starter:1000000/1000000/1000,manager:1000000/1000000/1000,agency:1000000/1000000/1000"


class Server:
    def __init__(self, tmp, port):
        self.tmp, self.port, self.proc = tmp, port, None
        self.db = os.path.join(tmp, "workforce.db")
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("WORKFORCE_")}
        self.env["WORKFORCE_RATE_LIMITS"] = LIMITS

    def cli(self, *args):
        return subprocess.run([BIN] + list(args) + ["--database", self.db], env=self.env,
                              capture_output=True, text=True, timeout=60)

    def start(self):
        log = open(os.path.join(self.tmp, "server.log"), "ab")
        self.proc = subprocess.Popen([BIN, "serve", "--listen", "127.0.0.1:%d" % self.port,
                                      "--database", self.db], stdin=subprocess.DEVNULL,
                                     stdout=log, stderr=log, env=self.env, cwd=self.tmp)
        log.close()
        deadline = time.time() + 60
        while time.time() < deadline:
            try:
                c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=2)
                c.request("GET", "/healthz")
                if c.getresponse().status == 200:
                    return
            except OSError:
                pass
            time.sleep(0.05)
        raise RuntimeError("server did not start")

    def kill(self):
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait()

    def stop(self):
        os.kill(self.proc.pid, signal.SIGTERM)
        return self.proc.wait(60)

    def sample(self):
        pid = self.proc.pid
        try:
            with open("/proc/%d/status" % pid) as f:
                rss = next(int(ln.split()[1]) for ln in f if ln.startswith("VmRSS:"))
            fds = len(os.listdir("/proc/%d/fd" % pid))
        except (OSError, StopIteration):
            return None
        return rss, fds


class Stats:
    def __init__(self):
        self.lock = threading.Lock()
        self.by_kind = {}
        self.acked = []  # (kind, key, id, extra)
        self.err5xx_out = []
        self.conn_err_in = 0
        self.conn_err_out = []
        self.windows = []  # [start, end or None]

    def in_window(self, t):
        for a, b in self.windows:
            if a <= t and (b is None or t <= b):
                return True
        return False

    def count(self, kind, status):
        with self.lock:
            k = self.by_kind.setdefault(kind, {})
            k[status] = k.get(status, 0) + 1


def multipart(data):
    b = "soak" + uuid.uuid4().hex
    body = ("--%s\r\nContent-Disposition: form-data; name=\"file\"; filename=\"n.txt\"\r\n"
            "Content-Type: text/plain\r\n\r\n" % b).encode() + data + \
        ("\r\n--%s--\r\n" % b).encode()
    return body, "multipart/form-data; boundary=" + b


def client(n, port, keys, emps, stats, stop):
    rnd = random.Random(n)
    conn = None
    my_tasks = []
    my_convs = []
    while not stop.is_set():
        key = rnd.choice(keys)
        emp = emps[key]
        r = rnd.random()
        hdrs = {"Authorization": "Bearer " + key}
        if r < 0.45:
            kind = "read"
            path = rnd.choice(["/v1/employees?limit=20", "/v1/conversations", "/v1/tasks",
                               "/v1/knowledge/documents", "/v1/account",
                               "/v1/employees/" + emp])
            if my_convs and rnd.random() < 0.3:
                key, conv = rnd.choice(my_convs)
                hdrs["Authorization"] = "Bearer " + key
                path = "/v1/conversations/" + conv
            method, body = "GET", None
        elif r < 0.60:
            kind, method, path = "chat", "POST", "/v1/chat"
            body = json.dumps({"employee_id": emp, "message": "soak %d" % rnd.randrange(10**9)})
            hdrs["Content-Type"] = "application/json"
        elif r < 0.65:
            kind, method, path = "stream", "POST", "/v1/chat/stream"
            body = json.dumps({"employee_id": emp, "message": "stream %d" % rnd.randrange(10**9)})
            hdrs["Content-Type"] = "application/json"
        elif r < 0.73:
            kind, method, path = "upload", "POST", "/v1/knowledge/documents"
            body, ct = multipart(("soak note %d about zq%d" % (n, rnd.randrange(10**9))).encode())
            hdrs["Content-Type"] = ct
        elif r < 0.90 or not my_tasks:
            kind, method, path = "task", "POST", "/v1/tasks"
            body = json.dumps({"employee_id": emp, "title": "soak %d" % rnd.randrange(10**9)})
            hdrs["Content-Type"] = "application/json"
        else:
            kind, method = "patch", "PATCH"
            key, task = rnd.choice(my_tasks)
            hdrs["Authorization"] = "Bearer " + key
            path = "/v1/tasks/" + task
            body = json.dumps({"priority": rnd.choice(["low", "medium", "high"])})
            hdrs["Content-Type"] = "application/json"
        t = time.time()
        try:
            if conn is None:
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            conn.request(method, path, body=body, headers=hdrs)
            resp = conn.getresponse()
            data = resp.read()
            status = resp.status
        except (OSError, http.client.HTTPException):
            if conn:
                conn.close()
            conn = None
            with stats.lock:
                if stats.in_window(t) or stats.in_window(time.time()):
                    stats.conn_err_in += 1
                else:
                    stats.conn_err_out.append((kind, t))
            time.sleep(0.05)
            continue
        stats.count(kind, status)
        if status >= 500:
            with stats.lock:
                if not (stats.in_window(t) or stats.in_window(time.time())):
                    stats.err5xx_out.append((kind, path, status, data[:200]))
            continue
        if status != 200:
            continue
        if kind == "chat":
            j = json.loads(data)
            stats.acked.append(("chat", key, j["conversation_id"], j["id"]))
            my_convs.append((key, j["conversation_id"]))
        elif kind == "task":
            j = json.loads(data)
            stats.acked.append(("task", key, j["id"], None))
            my_tasks.append((key, j["id"]))
        elif kind == "upload":
            stats.acked.append(("document", key, json.loads(data)["id"], None))


def lives_at(samples, age):
    """Per server life that reached 'age' seconds: (sample at 'age', last sample)."""
    out = []
    for life in samples:
        if not life or life[-1][0] - life[0][0] < age + 5:
            continue
        t0 = life[0][0]
        out.append((next(s for s in life if s[0] - t0 >= age), life[-1]))
    return out


def main():
    if not os.path.exists(BIN):
        print("soak: %s not found (make first)" % BIN, file=sys.stderr)
        return 1
    tmp = tempfile.mkdtemp(prefix="workforce-soak-")
    port = free_port()
    srv = Server(tmp, port)
    stats = Stats()
    samples = [[]]
    try:
        keys = []
        for i in range(4):
            p = srv.cli("keys", "create", "--org", "soak%d" % i, "--tier", "agency",
                        "--credits", "100000000")
            keys.append(p.stdout.strip())
        keys.append(srv.cli("keys", "create", "--org", "soak0", "--mode", "test").stdout.strip())
        srv.start()
        emps = {}
        for k in keys:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            c.request("GET", "/v1/employees?limit=1", headers={"Authorization": "Bearer " + k})
            emps[k] = json.loads(c.getresponse().read())["employees"][0]["id"]
        stop = threading.Event()
        threads = [threading.Thread(target=client, args=(n, port, keys, emps, stats, stop),
                                    daemon=True) for n in range(CONNS)]
        t_begin = time.time()
        for t in threads:
            t.start()
        every = SECONDS / (RESTARTS + 1)
        next_kill = t_begin + every
        restarts = 0
        while time.time() - t_begin < SECONDS:
            s = srv.sample()
            if s:
                samples[-1].append((time.time(), s[0], s[1]))
            if restarts < RESTARTS and time.time() >= next_kill:
                with stats.lock:
                    stats.windows.append([time.time(), None])
                srv.kill()
                srv.start()
                with stats.lock:
                    stats.windows[-1][1] = time.time() + 2.0
                samples.append([])
                restarts += 1
                next_kill += every
            time.sleep(2.0)
        stop.set()
        for t in threads:
            t.join(60)
        rc_stop = srv.stop()
        srv.start()
        lost = []
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        for kind, key, oid, extra in stats.acked:
            path = {"chat": "/v1/conversations/", "task": "/v1/tasks/",
                    "document": "/v1/knowledge/documents/"}[kind] + oid
            c.request("GET", path, headers={"Authorization": "Bearer " + key})
            resp = c.getresponse()
            body = resp.read()
            if resp.status != 200 or (kind == "chat" and extra.encode() not in body):
                lost.append((kind, oid, resp.status))
        srv.stop()
    finally:
        if srv.proc and srv.proc.poll() is None:
            srv.kill()

    # Flat: within each life, from 10 s (warm) to its end, RSS grows by at most 25% and open
    # files by at most 16. Across lives the data grows (tens of thousands of writes: SQLite's
    # page caches and the vector index hold more), so the first and last lives are printed,
    # not judged.
    lives = lives_at(samples, 10)
    rss_ok = bool(lives) and all(end[1] <= 1.25 * at[1] for at, end in lives)
    fds_ok = bool(lives) and all(end[2] <= at[2] + 16 for at, end in lives)
    all_s = [s for life in samples for s in life]
    model = ""
    try:
        model = next(ln.split(":", 1)[1].strip() for ln in subprocess.run(
            ["lscpu"], capture_output=True, text=True).stdout.splitlines()
            if ln.startswith("Model name"))
    except StopIteration:
        pass
    total = sum(sum(v.values()) for v in stats.by_kind.values())
    print("soak: %s" % model)
    print("| figure | value |")
    print("|---|---|")
    print("| duration / connections / kill -9 restarts | %d s / %d / %d |"
          % (SECONDS, CONNS, restarts))
    print("| requests answered | %d |" % total)
    for k in sorted(stats.by_kind):
        print("| %s by status | %s |" % (k, ", ".join("%s: %d" % kv for kv in
                                                      sorted(stats.by_kind[k].items()))))
    print("| acknowledged writes (chats, tasks, uploads) | %d |" % len(stats.acked))
    print("| lost writes | %d |" % len(lost))
    print("| 5xx outside restart windows | %d |" % len(stats.err5xx_out))
    print("| connection errors inside / outside restart windows | %d / %d |"
          % (stats.conn_err_in, len(stats.conn_err_out)))
    if all_s:
        print("| RSS KiB first / last / max | %d / %d / %d |"
              % (all_s[0][1], all_s[-1][1], max(s[1] for s in all_s)))
        print("| open files first / last / max | %d / %d / %d |"
              % (all_s[0][2], all_s[-1][2], max(s[2] for s in all_s)))
    if lives:
        print("| lives judged (reached 15 s) | %d of %d |" % (len(lives), len(samples)))
        print("| RSS KiB at 10 s -> end, first life / last life | %d -> %d / %d -> %d |"
              % (lives[0][0][1], lives[0][1][1], lives[-1][0][1], lives[-1][1][1]))
        print("| largest growth within a life: RSS / files | %.1f%% / %+d |"
              % (max(100.0 * (e[1] - a[1]) / a[1] for a, e in lives),
                 max(e[2] - a[2] for a, e in lives)))
    print("| graceful stop exit status | %s |" % rc_stop)
    print("rule: flat = in every life, RSS at its end <= 1.25 x RSS at 10 s and open files <= "
          "those at 10 s + 16 (across lives the data grows: printed, not judged)")
    for name, ok in (("no acknowledged write lost", not lost),
                     ("no 5xx outside restart windows", not stats.err5xx_out),
                     ("no connection error outside restart windows", not stats.conn_err_out),
                     ("RSS flat", rss_ok), ("open files flat", fds_ok)):
        print("%s: %s" % ("PASS" if ok else "FAIL", name))
    for x in lost[:5]:
        print("  lost: %s" % (x,))
    for x in stats.err5xx_out[:5]:
        print("  5xx: %s" % (x,))
    for x in stats.conn_err_out[:5]:
        print("  connection error outside a window: %s" % (x,))
    shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
