#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""bench/nodes_bench.py: the multi-node figures of bench/nodes.sh (which starts PostgreSQL and
Redis and stops them; this script starts and stops everything else, each by its own PID).
Python 3 standard library only, plus wrk.

  reads and chat, one run per configuration, each on a database of its own:
      (a) 1 node on SQLite   (b) 1 node on PostgreSQL   (c) 2 nodes on PostgreSQL
      (d) 2 nodes on PostgreSQL + Redis (WORKFORCE_REDIS_URL; a node that refuses to start with
          it makes the row "n/a", the rest of the bench goes on)
    - GET /v1/employees?limit=50 with wrk (bench/nodes.lua): a fresh organization and key per wrk
      thread for the warm-up and again for each measured run (as bench/run.sh), generous rate
      limits; each figure is the median of --rounds runs (this machine's runs vary a lot), shown
      with every run's req/s, each node's share of the answers and the answers the nodes timed
      over 100 ms (their /metrics), and how busy the CPUs were, and how much of that was not ours;
    - blocking POST /v1/chat {employee_id, message} with wrk, live keys (with credits) and
      WORKFORCE_LLM=openai against the mock upstream (bench/llm_upstream.py, fast mode: a fixed
      streamed reply, no delay) run as a process of its own; a new conversation per request.
    How the load reaches 2 nodes: there is no load balancer. One wrk process runs a multiple of
    'nodes' threads and bench/nodes.lua points thread i at node i mod nodes (wrk's thread.addr),
    so each node gets the same number of connections and the figures are one wrk's: req/s over
    both nodes and the p99 of one histogram of every request (a client-side round robin by
    connection, which is what a load balancer with keep-alive connections does too).
  tasks: runs/s on PostgreSQL with 1 node and with 3 nodes (4 task workers each, the default),
    live key, the same mock upstream: N one-time tasks over several employees are created while
    the employees are offline, then the employees are set idle (employee i through node i mod
    nodes: an API call wakes only its own node's workers, the others poll every 2 s), and the
    queue drains; runs/s = N / (last completed_at - first started_at) from the tasks' own
    timestamps, and how many runs each node carried out (task_runs.node_id, through psql).

Prints tables with PASS/FAIL for the goal (2 nodes + Redis >= 1.6 x 1 node on reads); exits 1 only when
something failed to run.
Usage: nodes_bench.py --bin build/workforce --tmp DIR --pg URL [--redis URL]
"""

import argparse
import http.client
import json
import os
import re
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import wfbench  # noqa: E402
import tasks_bench  # noqa: E402
from wfbench import log  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
MODEL = "bench-model"
# Test keys keep the starter tier's limits; ours are live agency keys: lift agency's (and the
# others', harmlessly). Values are capped at 1000000 by the parser (bench/run.sh).
RATE_LIMITS = ("starter:1000000/1000000/100000,manager:1000000/1000000/100000,"
               "agency:1000000/1000000/100000")
LIST_PATH = "/v1/employees?limit=50"
REPLY = b'"content":"Hello from the bench upstream."'


class BenchError(Exception):
    pass


RUNNING = []  # servers and processes started and not yet stopped


def on_signal(signum, _frame):
    for p in list(RUNNING):
        try:
            if isinstance(p, wfbench.Server):
                p.stop(grace=10)
            else:
                wfbench.stop_proc(p, 5)
        except Exception:  # noqa: BLE001
            pass
    os._exit(128 + signum)


# ---------------------------------------------------------------- databases


def pg_url(base, name):
    return base.rsplit("/", 1)[0] + "/" + name


def psql(url, sql, capture=False):
    r = subprocess.run(["psql", url, "-q", "-X", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-c", sql],
                       stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        raise BenchError("psql %r failed: %s" % (sql, r.stderr.strip()))
    return r.stdout if capture else None


def new_database(args, name):
    """A fresh PostgreSQL database 'name' (C collation, as docs/deployment.md asks) -> its URL."""
    psql(args.pg, "CREATE DATABASE %s TEMPLATE template0 LOCALE 'C' ENCODING 'UTF8'" % name)
    return pg_url(args.pg, name)


# ---------------------------------------------------------------- nodes


class Config:
    """One configuration: its database, its environment, its nodes."""

    def __init__(self, args, label, nodes, backend, redis=None, task_workers=None, threads=None):
        self.args, self.label, self.n = args, label, nodes
        self.dir = os.path.join(args.tmp, label)
        os.makedirs(self.dir, exist_ok=True)
        self.env_extra = {"WORKFORCE_RATE_LIMITS": RATE_LIMITS, "WORKFORCE_LLM": "openai",
                          "WORKFORCE_LLM_BASE_URL": args.upstream_url,
                          "WORKFORCE_LLM_MODEL": MODEL}
        if task_workers:
            self.env_extra["WORKFORCE_TASK_WORKERS"] = str(task_workers)
        if threads:
            self.env_extra["WORKFORCE_THREADS"] = str(threads)
        if backend == "pg":
            # The same secret file and files directory for every node (docs/deployment.md).
            self.env_extra["WORKFORCE_SECRET_FILE"] = os.path.join(self.dir, "server.secret")
            self.env_extra["WORKFORCE_FILES_DIR"] = os.path.join(self.dir, "files")
            self.db = new_database(args, "nodes_" + re.sub(r"[^a-z0-9_]", "_", label.lower()))
        else:
            self.db = os.path.join(self.dir, "db", "workforce.db")
        if redis:
            self.env_extra["WORKFORCE_REDIS_URL"] = redis
        self.servers = []
        self.env = wfbench.clean_env(self.env_extra)

    def start(self):
        """Start the nodes one after the other (the first migrates); BenchError on a failure,
        with the failing node's log tail."""
        for i in range(self.n):
            srv = wfbench.Server(self.args.bin, self.dir, self.env_extra,
                                 name="%s-node%d" % (self.label, i + 1))
            srv.db = self.db
            RUNNING.append(srv)
            self.servers.append(srv)
            try:
                srv.start()
                OURS.add(srv.pid)
            except RuntimeError as e:
                raise BenchError("%s: node %d did not start: %s" % (self.label, i + 1, e)) from e
        log("%s: %d node(s), ports %s, pids %s, database %s" % (
            self.label, self.n, " ".join(str(s.port) for s in self.servers),
            " ".join(str(s.pid) for s in self.servers), self.db_kind()))

    def db_kind(self):
        return "PostgreSQL" if self.db.startswith("postgres") else "SQLite"

    def stop(self):
        """SIGTERM every node (all at once: they drain together), wait -> exit codes."""
        for s in self.servers:
            if s.alive():
                s.proc.send_signal(signal.SIGTERM)
        rcs = []
        for s in self.servers:
            rc, _ = s.stop()
            rcs.append(rc)
            if s in RUNNING:
                RUNNING.remove(s)
        return rcs

    def alive(self):
        return all(s.alive() for s in self.servers)

    def problems(self):
        """warn/error lines of every node's log."""
        out = []
        for s in self.servers:
            out += ["%s: %s" % (s.name, ln) for ln in tasks_bench.log_lines(s, (" warn ", " error "))
                    if "no embedding model" not in ln]
        return out

    def key(self, org):
        return wfbench.agency_key(self.args.bin, self.db, self.env, org)

    @property
    def addrs(self):
        return ",".join("127.0.0.1:%d" % s.port for s in self.servers)


# ---------------------------------------------------------------- wrk

WRK_NUM = re.compile(r"^([\d.]+)(us|ms|s|m)?$")


def ms(v):
    m = WRK_NUM.match(v)
    if not m:
        return float("nan")
    n = float(m.group(1))
    return {"us": n / 1000, "ms": n, "s": n * 1000, "m": n * 60000}.get(m.group(2), n)


def parse_wrk(text):
    rps = p99 = None
    bad = err = 0
    for line in text.splitlines():
        f = line.split()
        if line.startswith("Requests/sec:"):
            rps = float(f[1])
        elif f and f[0] == "99%":
            p99 = ms(f[1])
        elif "Non-2xx or 3xx responses:" in line:
            bad = int(f[-1])
        elif line.strip().startswith("Socket errors:"):
            nums = re.findall(r"\d+", line)
            err = sum(int(x) for x in nums)
    if rps is None or p99 is None:
        raise BenchError("cannot parse wrk output:\n" + text)
    return {"rps": rps, "p99": p99, "bad": bad, "err": err}


def wrk(args, name, url, addrs, threads, conns, duration, keys=(), emps=(), method="GET",
        body=None):
    env = dict(os.environ, WRK_KEYS=",".join(keys), WRK_EMPS=",".join(emps), WRK_ADDRS=addrs,
               WRK_METHOD=method)
    env.pop("WRK_BODY", None)
    if body is not None:
        env["WRK_BODY"] = body
    cmd = ["wrk", "-t%d" % threads, "-c%d" % conns, "-d%s" % duration, "--latency",
           "--timeout", "10s", "-s", os.path.join(HERE, "nodes.lua"), url]
    log("%s: %s" % (name, " ".join(cmd[:5])))
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True)
    RUNNING.append(p)
    out, _ = p.communicate()
    RUNNING.remove(p)
    with open(os.path.join(args.tmp, "wrk-%s.txt" % name), "w") as f:
        f.write(out)
    if p.returncode != 0:
        raise BenchError("wrk %s failed (%d):\n%s" % (name, p.returncode, out))
    r = parse_wrk(out)
    if r["bad"] or r["err"]:
        log("warning: %s: %d non-2xx answers, %d socket errors" % (name, r["bad"], r["err"]))
    return r


def split_threads(args, nodes, conns):
    """wrk threads: at least one per node and a multiple of the nodes; connections a multiple of
    the threads (each node gets the same number)."""
    t = max(args.threads, nodes)
    t += (-t) % nodes
    c = max(conns, t)
    c += (-c) % t
    return t, c


# ---------------------------------------------------------------- per-node counts (/metrics)

METRIC = re.compile(r'^(workforce_http_requests_total|workforce_cache_(?:hits|misses)_total|'
                    r'workforce_http_request_duration_seconds_bucket)\{([^}]*)\} (\d+)$')


def metrics(port):
    """A node's counters: {(name, labels): value} of its requests and cache hits/misses."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    c.request("GET", "/metrics")
    r = c.getresponse()
    text = r.read().decode("utf-8", "replace")
    c.close()
    out = {}
    for line in text.splitlines():
        m = METRIC.match(line)
        if m:
            out[(m.group(1), m.group(2))] = int(m.group(3))
    return out


OURS = set()  # PIDs of this bench's processes (their children are ours too)


def proc_ticks():
    """{pid: (comm, ppid, user+system clock ticks)} of every process."""
    out = {}
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % p) as f:
                st = f.read()
        except OSError:
            continue
        comm = st[st.index("(") + 1:st.rindex(")")]
        f = st[st.rindex(")") + 2:].split()
        out[int(p)] = (comm, int(f[1]), int(f[11]) + int(f[12]))
    return out


def others(a, b, total):
    """Share (%) of the machine's CPU time 'total' (ticks) that processes not of this bench took
    between the snapshots 'a' and 'b', and the name of the busiest of them."""
    ours = OURS | {os.getpid()}
    by = {}
    for pid, (comm, ppid, t) in b.items():
        if pid in ours or ppid in ours or pid not in a:
            continue
        by[comm] = by.get(comm, 0) + t - a[pid][2]
    top = max(by.items(), key=lambda x: x[1]) if by else ("", 0)
    return (100.0 * sum(by.values()) / total if total else 0.0), (top[0] if top[1] > 0 else "")


def cpu_times():
    """The machine's CPU time counters (/proc/stat 'cpu' line: user nice system idle iowait ...)."""
    with open("/proc/stat") as f:
        return [int(x) for x in f.readline().split()[1:]]


def measured(cfg, route, fn):
    """Run 'fn' and count, from each node's /metrics, the 'route' answers each node gave and the
    answers-cache hits and misses over all nodes, and how busy the machine's CPUs were (all
    processes, /proc/stat) -> fn's result with those added."""
    before = [metrics(s.port) for s in cfg.servers]
    p0, cpu0 = proc_ticks(), cpu_times()
    r = fn()
    p1, cpu1 = proc_ticks(), cpu_times()
    after = [metrics(s.port) for s in cfg.servers]
    total = sum(cpu1) - sum(cpu0)
    r["cpu"] = 100.0 * (1 - (cpu1[3] + cpu1[4] - cpu0[3] - cpu0[4]) / total) if total else 0.0
    r["other"], r["other_top"] = others(p0, p1, total)

    def delta(i, pred):
        return sum(v - before[i].get(k, 0) for k, v in after[i].items() if pred(k))

    per = [delta(i, lambda k: k[0] == "workforce_http_requests_total" and
                 'route="%s"' % route in k[1]) for i in range(cfg.n)]
    non200 = sum(delta(i, lambda k: k[0] == "workforce_http_requests_total" and
                       'route="%s"' % route in k[1] and 'status="200"' not in k[1])
                 for i in range(cfg.n))
    hits = sum(delta(i, lambda k: k == ("workforce_cache_hits_total", 'cache="answers"'))
               for i in range(cfg.n))
    miss = sum(delta(i, lambda k: k == ("workforce_cache_misses_total", 'cache="answers"'))
               for i in range(cfg.n))
    # Answers slower than 100 ms as the nodes measured them (their histogram, every route).
    slow = sum(delta(i, lambda k: k == ("workforce_http_request_duration_seconds_bucket",
                                        'le="+Inf"')) -
               delta(i, lambda k: k == ("workforce_http_request_duration_seconds_bucket",
                                        'le="0.1"')) for i in range(cfg.n))
    over1s = sum(delta(i, lambda k: k == ("workforce_http_request_duration_seconds_bucket",
                                          'le="+Inf"')) -
                 delta(i, lambda k: k == ("workforce_http_request_duration_seconds_bucket",
                                          'le="1"')) for i in range(cfg.n))
    r["slow"], r["over1s"] = slow, over1s
    tot = sum(per) or 1
    r["split"] = "/".join("%.0f" % (100.0 * x / tot) for x in per)
    r["node_non200"] = non200
    r["answers_hit"] = 100.0 * hits / (hits + miss) if hits + miss else float("nan")
    return r


# ---------------------------------------------------------------- (a)..(d) reads and chat


def fresh(cfg, what, n, with_emp):
    """'n' fresh organizations (live agency keys with credits) -> keys[, employee ids]."""
    keys, emps = [], []
    for i in range(n):
        k = cfg.key("nb-%s-%s-%d" % (cfg.label, what, i))
        keys.append(k)
        if with_emp:
            emps.append(wfbench.employee_id(cfg.servers[i % cfg.n].port, k))
    return keys, emps


def chat_once(port, key, emp):
    """One blocking chat: it must carry the mock upstream's reply (the live path is used)."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    c.request("POST", "/v1/chat", body=json.dumps({"employee_id": emp, "message": "hi"}),
              headers={"Authorization": "Bearer " + key, "Content-Type": "application/json"})
    r = c.getresponse()
    data = r.read()
    c.close()
    if r.status != 200 or REPLY not in data:
        raise BenchError("POST /v1/chat on port %d answered %d without the upstream's reply: %s"
                         % (port, r.status, data[:300]))


def rounds(args, cfg, what, url, t, c, with_emp, method):
    """args.rounds wrk runs of args.duration, each with fresh organizations -> one result: the
    median req/s and the median p99 of the runs, their range, and the sums of the errors."""
    runs = []
    for i in range(args.rounds):
        keys, emps = fresh(cfg, "%s%d" % (what[0], i), t, with_emp)
        runs.append(wrk(args, "%s-%s-%d" % (cfg.label, what, i + 1), url, cfg.addrs, t, c,
                        args.duration, keys, emps, method))
    med = sorted(runs, key=lambda r: r["rps"])[len(runs) // 2]
    return {"rps": med["rps"], "p99": sorted(r["p99"] for r in runs)[len(runs) // 2],
            "rps_min": min(r["rps"] for r in runs), "rps_max": max(r["rps"] for r in runs),
            "rps_all": [r["rps"] for r in runs], "p99_all": [r["p99"] for r in runs],
            "bad": sum(r["bad"] for r in runs), "err": sum(r["err"] for r in runs)}


def reads_and_chat(args, cfg):
    res = {"label": cfg.label, "nodes": cfg.n, "db": cfg.db_kind()}
    url = "http://127.0.0.1:%d%s" % (cfg.servers[0].port, LIST_PATH)
    t, c = split_threads(args, cfg.n, args.conns)
    res["list_tc"] = (t, c)
    keys, _ = fresh(cfg, "lw", t, False)
    wrk(args, cfg.label + "-list-warm", url, cfg.addrs, t, c, args.warmup, keys)
    res["list"] = measured(cfg, "/v1/employees", lambda: rounds(args, cfg, "list", url, t, c,
                                                                 False, "GET"))
    if not cfg.alive():
        raise BenchError("%s: a node died under the list load" % cfg.label)

    curl = "http://127.0.0.1:%d/v1/chat" % cfg.servers[0].port
    t, c = split_threads(args, cfg.n, args.chat_conns)
    res["chat_tc"] = (t, c)
    keys, emps = fresh(cfg, "cw", t, True)
    for i, s in enumerate(cfg.servers):
        chat_once(s.port, keys[i % len(keys)], emps[i % len(emps)])
    wrk(args, cfg.label + "-chat-warm", curl, cfg.addrs, t, c, args.warmup, keys, emps, "POST")
    res["chat"] = measured(cfg, "/v1/chat", lambda: rounds(args, cfg, "chat", curl, t, c, True,
                                                           "POST"))
    if not cfg.alive():
        raise BenchError("%s: a node died under the chat load" % cfg.label)
    return res


def upstream_alone(args):
    """The mock upstream straight (POST /v1/chat/completions, what a node sends it), as a
    ceiling of the chat figures: same wrk threads and chat connections."""
    body = json.dumps({"model": MODEL, "stream": True, "stream_options": {"include_usage": True},
                       "messages": [{"role": "system", "content": "You are a bench."},
                                    {"role": "user", "content": "hi"}]})
    t, c = split_threads(args, 1, args.chat_conns)
    return wrk(args, "upstream-alone", args.upstream_url + "/chat/completions", "", t, c,
               args.warmup, method="POST", body=body)


def run_config(args, label, nodes, backend, redis=None, threads=None):
    cfg = Config(args, label, nodes, backend, redis, threads=threads)
    try:
        try:
            cfg.start()
        except BenchError as e:
            if redis is None:
                raise
            tail = " | ".join(ln for ln in cfg.servers[-1].log_tail(5).splitlines() if ln.strip())
            log("%s: %s" % (label, e))
            cfg.stop()
            refused = "WORKFORCE_REDIS_URL" in tail or "REDIS" in tail.upper()
            return {"label": label, "nodes": nodes, "db": "PostgreSQL", "na": (
                "n/a (server refused WORKFORCE_REDIS_URL)" if refused else
                "n/a (a node did not start with WORKFORCE_REDIS_URL)"), "why": tail}
        res = reads_and_chat(args, cfg)
    except BaseException:
        cfg.stop()
        for s in cfg.servers:
            log("%s log tail:\n%s" % (s.name, s.log_tail(15)))
        raise
    res["rcs"] = cfg.stop()
    res["problems"] = cfg.problems()
    if redis:
        res["redis_in_log"] = any("redis" in s.log_tail(200).lower() for s in cfg.servers)
    return res


# ---------------------------------------------------------------- tasks


def tasks_run(args, nodes):
    label = "tasks-%dnode" % nodes
    cfg = Config(args, label, nodes, "pg")
    try:
        cfg.start()
        key = cfg.key("nb-tasks")
        ports = [s.port for s in cfg.servers]
        api = tasks_bench.Api(ports[0], key)
        apis = [tasks_bench.Api(p, key) for p in ports]
        srv0 = cfg.servers[0]
        emps = tasks_bench.employees(api, args.task_employees)
        # Warm-up: a few tasks through every node (connections, the engine, the upstream).
        ids = []
        for p in ports:
            got, _ = tasks_bench.create_tasks(p, key, [(emps[i % len(emps)], "medium")
                                                       for i in range(10)], 2)
            ids += got
        tasks_bench.wait_idle(api, srv0, 60, "%s warm-up" % label)
        for e in emps:
            tasks_bench.set_status(api, e, "offline")
        ids, cwall = tasks_bench.create_tasks(ports[0], key, [(emps[i % len(emps)], "medium")
                                                              for i in range(args.tasks_n)])
        if not tasks_bench.queue_busy(api):
            raise BenchError("%s: the tasks of offline employees did not stay pending" % label)
        p0, cpu0 = proc_ticks(), cpu_times()
        rel = tasks_bench.now_ms()
        for i, e in enumerate(emps):
            tasks_bench.set_status(apis[i % nodes], e, "idle")
        tasks_bench.wait_idle(api, srv0, max(60, args.tasks_n / 10), "%s: %d runs"
                              % (label, args.tasks_n))
        waited = (tasks_bench.now_ms() - rel) / 1000.0
        p1, cpu1 = proc_ticks(), cpu_times()
        tot = sum(cpu1) - sum(cpu0)
        cpu = 100.0 * (1 - (cpu1[3] + cpu1[4] - cpu0[3] - cpu0[4]) / tot) if tot else 0.0
        other, other_top = others(p0, p1, tot)
        tasks = tasks_bench.fetch_tasks(api, ids)
        tasks_bench.check_completed(tasks, label)
        started = [tasks_bench.iso_ms(t["started_at"]) for t in tasks.values()]
        done = [tasks_bench.iso_ms(t["completed_at"]) for t in tasks.values()]
        span = max(done) - min(started)
        per_node = psql(cfg.db, "SELECT count(*) FROM task_runs WHERE task_id IN (SELECT id FROM"
                        " tasks WHERE id = ANY(string_to_array('%s', ','))) GROUP BY node_id"
                        " ORDER BY 1 DESC" % ",".join(ids), capture=True).split()
        if not cfg.alive():
            raise BenchError("%s: a node died" % label)
        for a in [api] + apis:
            a.close()
    except BaseException:
        cfg.stop()
        for s in cfg.servers:
            log("%s log tail:\n%s" % (s.name, s.log_tail(15)))
        raise
    rcs = cfg.stop()
    return {"nodes": nodes, "n": args.tasks_n, "span_ms": span,
            "rps": args.tasks_n / (span / 1000.0) if span > 0 else float("inf"),
            "wall_rps": args.tasks_n / waited, "first_ms": min(started) - rel,
            "create_rps": args.tasks_n / cwall, "per_node": per_node, "rcs": rcs, "cpu": cpu,
            "other": other, "other_top": other_top,
            "problems": cfg.problems()}


# ---------------------------------------------------------------- report


def f0(v):
    return "%.0f" % v


def ratio(a, b):
    return a / b if b else float("nan")


def lscpu():
    model, cores = "?", os.cpu_count() or 0
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
        for line in out.splitlines():
            k, _, v = line.partition(":")
            if k.strip() == "Model name" and model == "?":
                model = v.strip()
            elif k.strip() == "CPU(s)":
                cores = int(v.strip())
    except (OSError, ValueError):
        pass
    return model, cores


def report(args, rows, up, tasks, total_s):
    model, cores = lscpu()
    print()
    print("workforce nodes bench: GET %s (wrk) and blocking POST /v1/chat (wrk, mock upstream),"
          % LIST_PATH)
    print("  one database per configuration; the load spread over the nodes by wrk thread "
          "(bench/nodes.lua), no load balancer")
    print("machine: %s, %d cores (lscpu), shared by the nodes, PostgreSQL, Redis, wrk and the "
          "mock upstream" % (model, cores))
    print("wrk: list -t/-c %s, chat -t/-c %s per configuration (threads spread evenly over the "
          "nodes); each figure: %d runs of -d%s" % (
              "/".join("%d/%d" % r["list_tc"] for r in rows if "list" in r) or "-",
              "/".join("%d/%d" % r["chat_tc"] for r in rows if "chat" in r) or "-",
              args.rounds, args.duration))
    print("  (fresh organizations each), after a %s warm-up; req/s and p99: the medians of the "
          "runs; every run's req/s below the table" % args.warmup)
    print()
    hdr = "  %-28s %5s | %8s %8s %6s %4s %5s %6s | %7s %8s %6s %4s %5s %6s | %7s %7s"
    print(hdr % ("", "", "list", "", "", "", "", "", "chat", "", "", "", "", "", "", ""))
    print(hdr % ("configuration", "nodes", "req/s", "p99 ms", "split%", "cpu%", "othr%", "slow",
                 "req/s", "p99 ms", "split%", "cpu%", "othr%", "slow", "non-2xx", "sockerr"))
    for r in rows:
        name = "(%s) %s" % (r["id"], r["title"])
        if "na" in r:
            print("  %-28s %5d | %s" % (name, r["nodes"], r["na"]))
            continue
        l_, c_ = r["list"], r["chat"]
        print(hdr % (name, r["nodes"], f0(l_["rps"]), "%.2f" % l_["p99"], l_["split"],
                     f0(l_["cpu"]), f0(l_["other"]), "%d/%d" % (l_["slow"], l_["over1s"]),
                     f0(c_["rps"]), "%.2f" % c_["p99"], c_["split"], f0(c_["cpu"]),
                     f0(c_["other"]), "%d/%d" % (c_["slow"], c_["over1s"]),
                     l_["bad"] + c_["bad"] + l_["node_non200"] + c_["node_non200"],
                     l_["err"] + c_["err"]))
    print("  %-28s %5s | %8s %8s %6s %4s %5s %6s | %7s %8.2f" % (
        "mock upstream alone", "-", "", "", "", "", "", "", f0(up["rps"]), up["p99"]))
    print("  split%: each node's share of the answers; slow: answers over 100 ms / over 1 s as "
          "the nodes timed them (both from the nodes' /metrics);")
    print("  cpu%: the machine's CPUs busy (/proc/stat); othr%: the share of it taken by "
          "processes that are not this bench's. p99 is wrk's, which corrects for")
    print("  coordinated omission: each answer slower than the mean interval adds samples, so a "
          "few stalls of 1 s make a p99 of ~1 s.")
    print("  req/s of every run:")
    for r in rows:
        if "na" not in r:
            print("    (%s) list %s; chat %s" % (r["id"], " ".join(f0(x) for x in r["list"]["rps_all"]),
                                             " ".join(f0(x) for x in r["chat"]["rps_all"])))
    busy = [(r["id"], w, r[w]["other"], r[w]["other_top"]) for r in rows if "na" not in r
            for w in ("list", "chat") if r[w]["other"] >= 5]
    if busy:
        print("  warning: other processes took CPU during the runs (%s): the figures are noisy" %
              ", ".join("(%s) %s %.0f%% %s" % b for b in busy))
    hits = ["(%s) %s" % (r["id"], f0(r["list"]["answers_hit"])) for r in rows if "na" not in r]
    print("  answers-cache hits during the list runs (%%): %s" % ", ".join(hits))
    by = {r["id"]: r for r in rows}

    def rr(x, y, what):
        if x not in by or y not in by or "na" in by[x] or "na" in by[y]:
            return float("nan")
        return ratio(by[x][what]["rps"], by[y][what]["rps"])

    print()
    print("  ratios (req/s)                                  list      chat")
    for lab, x, y in (("1 node PG / 1 node SQLite      (b)/(a)", "b", "a"),
                      ("2 nodes PG / 1 node PG         (c)/(b)", "c", "b"),
                      ("2 nodes PG / 1 node PG, 2x thr (c)/(b')", "c", "b'"),
                      ("2 nodes PG+Redis / 1 node PG   (d)/(b)", "d", "b"),
                      ("2 nodes PG+Redis / 2 nodes PG  (d)/(c)", "d", "c")):
        a_, b_ = rr(x, y, "list"), rr(x, y, "chat")
        print("  %-44s %8s %9s" % (lab, "%.2f" % a_ if a_ == a_ else "n/a",
                                   "%.2f" % b_ if b_ == b_ else "n/a"))
    # The configuration for the goal is "2 nodes on PostgreSQL (+ Redis)": the shared
    # limits in Redis, as the operator's guide recommends for several nodes. Without Redis the
    # limits cost each request two more round trips to the database (row (c)), shown as well.
    goal = rr("d", "b", "list")
    plain = rr("c", "b", "list")
    print()
    print("  goal: reads, 2 nodes PG + Redis >= 1.6 x 1 node PG: %.2f  %s" % (
        goal, "PASS" if goal >= 1.6 else "FAIL"))
    print("  (without Redis, limits in the database: 2 nodes / 1 node = %.2f)" % plain)
    print("  note: %d cores run every node, PostgreSQL, wrk and the upstream: a second node "
          "adds a process, not CPU, so (c)/(b) is bounded by these cores (what 2 processes get "
          "out of them), not a measure of scaling by machines; (b') = 1 node, threads of 2."
          % cores)
    for r in rows:
        if "na" in r:
            print("  (%s) did not start: %s" % (r["id"], r["why"][:300]))
        elif "redis_in_log" in r and not r["redis_in_log"]:
            print("  (%s) note: the nodes started with WORKFORCE_REDIS_URL, and their logs do not "
                  "mention redis" % r["id"])
    if tasks:
        print()
        print("tasks: runs/s on PostgreSQL, %d one-time tasks over %d employees created while "
              "they were offline, then set idle" % (args.tasks_n, args.task_employees))
        print("  (employee i through node i mod nodes), live key, the mock upstream; runs/s = N / "
              "(last completed_at - first started_at)")
        print()
        th = "  %-10s %10s %12s %14s %14s %6s %6s %12s  %s"
        print(th % ("nodes", "runs/s", "span (ms)", "wall runs/s", "release->1st", "cpu%",
                    "othr%", "created/s", "runs per node"))
        for t in tasks:
            print(th % ("%d x 4 wk" % t["nodes"], f0(t["rps"]), "%d" % t["span_ms"],
                        f0(t["wall_rps"]), "%d ms" % t["first_ms"], f0(t["cpu"]),
                        f0(t["other"]), f0(t["create_rps"]), "/".join(t["per_node"])))
        if len(tasks) == 2:
            print("  %-10s %10.2f" % ("3 / 1", ratio(tasks[1]["rps"], tasks[0]["rps"])))
    print()
    allr = [r for r in rows if "na" not in r] + list(tasks)
    print("  server log warn/error lines (but 'no embedding model' at start): " + ", ".join(
        "%s %d" % (r.get("label") or "tasks-%d" % r["nodes"], len(r["problems"])) for r in allr))
    for r in allr:
        for line in r["problems"][:3]:
            print("    " + (line if len(line) <= 160 else line[:157] + "..."))
    bad_rc = ["%s %s" % (r.get("label") or "tasks-%d" % r["nodes"], r["rcs"]) for r in allr
              if any(rc != 0 for rc in r["rcs"])]
    if bad_rc:
        print("  warning: exit status on SIGTERM not 0: " + ", ".join(bad_rc))
    print("  (the nodes bench took %.0f s)" % total_s)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default="build/workforce")
    ap.add_argument("--tmp", required=True)
    ap.add_argument("--pg", required=True, help="postgres:// URL of a server we may create "
                    "databases on (tests/pg/pg.sh)")
    ap.add_argument("--redis", default="", help="redis:// URL for configuration (d)")
    ap.add_argument("--own-pids", default="", help="comma-separated PIDs of our PostgreSQL "
                    "postmaster and Redis (their CPU is not counted as other processes')")
    ap.add_argument("--redis-missing", default="", help="why there is no Redis (for the row)")
    ap.add_argument("--duration", default="5s", help="one wrk run")
    ap.add_argument("--rounds", type=int, default=3, help="wrk runs per figure (median)")
    ap.add_argument("--warmup", default="2s")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--conns", type=int, default=64)
    ap.add_argument("--chat-conns", type=int, default=16)
    ap.add_argument("--tasks-n", type=int, default=1000)
    ap.add_argument("--task-employees", type=int, default=6)
    ap.add_argument("--tasks", type=int, default=1, help="0: skip the tasks part")
    ap.add_argument("--threads-row", type=int, default=1,
                    help="0: skip row (b'), 1 node on PostgreSQL with twice the default threads")
    args = ap.parse_args()
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)

    OURS.update(int(x) for x in args.own_pids.split(",") if x.strip().isdigit())
    t0 = time.perf_counter()
    # The mock upstream, a process of its own (not this interpreter's lock).
    up = subprocess.Popen([sys.executable, os.path.join(HERE, "llm_upstream.py")],
                          stdout=subprocess.PIPE, stderr=open(os.path.join(args.tmp,
                                                                           "upstream.log"), "wb"),
                          text=True)
    RUNNING.append(up)
    OURS.add(up.pid)
    try:
        line = up.stdout.readline().split()
        if len(line) != 2 or line[0] != "PORT":
            raise BenchError("the mock upstream did not start")
        args.upstream_url = "http://127.0.0.1:%s/v1" % line[1]
        log("mock upstream pid %d at %s" % (up.pid, args.upstream_url))
        rows = []
        cores = os.cpu_count() or 1
        # id, label (files, database), title, nodes, backend, Redis, WORKFORCE_THREADS
        for rid, label, title, nodes, backend, redis, threads in (
                ("a", "a-sqlite-1", "SQLite", 1, "sqlite", None, None),
                ("b", "b-pg-1", "PostgreSQL", 1, "pg", None, None),
                ("b'", "b2-pg-1-threads", "PostgreSQL, %d threads" % (2 * cores), 1, "pg", None,
                 2 * cores),
                ("c", "c-pg-2", "PostgreSQL", 2, "pg", None, None),
                ("d", "d-pg-redis-2", "PostgreSQL + Redis", 2, "pg", args.redis or None, None)):
            if rid == "b'" and not args.threads_row:
                continue
            if rid == "d" and not args.redis:
                r = {"label": label, "nodes": nodes,
                     "na": "n/a (%s)" % (args.redis_missing or "no Redis"),
                     "why": args.redis_missing or "no Redis"}
            else:
                r = run_config(args, label, nodes, backend, redis, threads)
            r["id"], r["title"] = rid, title
            rows.append(r)
        upr = upstream_alone(args)
        tasks = [tasks_run(args, 1), tasks_run(args, 3)] if args.tasks else []
    except BenchError as e:
        log("nodes bench: error: %s" % e)
        return 1
    finally:
        wfbench.stop_proc(up)
        if up in RUNNING:
            RUNNING.remove(up)
    report(args, rows, upr, tasks, time.perf_counter() - t0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
