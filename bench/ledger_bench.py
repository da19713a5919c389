#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""bench/ledger_bench.py: what the ledger costs (issue 29), in one run on one machine.

chat:   blocking POST /v1/chat (bench/chat_overhead.py's client: http.client, one keep-alive
        connection per client thread, a new conversation each time; the in-process upstream of
        bench/llm_upstream.py, no delay) against build/workforce and against the same server
        built with -DWORKFORCE_BENCH_NO_LEDGER (bench/ledger.sh: no ledger entry and no usage
        sum written), each with its own SQLite database on the same disk and a live key with
        10^8 credits (each chat holds one credit at its start: one entry and its hour's usage
        sum; the small reply costs 1 credit, settled against the hold). Sequentially and from
        8 client threads, in R short rounds (many short ones: the pairs of a round see the same
        load from whatever else the machine runs) whose order alternates (the one server first,
        then the other, then the other way round). Each round gives a time ratio, the reference's
        requests per second over the product's (how much longer a chat takes with its entry);
        the goal is the median of the rounds' ratios <= 1.10, for both. The mean latencies and
        their ratio are printed too, and what each server itself spent a chat over all rounds
        (CPU time, from /proc/PID/stat; bytes and write calls, /proc/PID/io), which the
        machine's other load moves far less than the requests per second. The entries written
        by each server are counted after.
reads:  bench/ledger_bench.c writes a ledger of 1,000,000 entries through the store's own chat
        path (500,000 chats over the last 90 days and 20 employees of one organization; see its
        header), `workforce credits check` checks every balance against its entries, and
        build/workforce serves that database: GET /v1/account/usage?period=90d&group_by=day,
        ...&group_by=employee and GET /v1/account/credit_transactions?limit=50 (the first page),
        50 times each after a warm-up, one keep-alive connection, alternating with the same
        requests of an organization whose ledger has one entry (the reference) and with
        GET /v1/account; median and p95. Goal: usage < 50 ms. With --database URL the same on
        PostgreSQL (an empty database: not part of bench/ledger.sh). The ledger is written in
        --seed-dir (bench/ledger.sh: on tmpfs when there is one, the writing is this bench's
        slow part; the reads come from the page cache either way).

Prints a summary and the figures as one JSON line on stdout.

Usage: ledger_bench.py --bin build/workforce --noledger-bin build/bench-noledger/workforce
       --seed-bin build/bench/ledger_bench --tmp DIR [--seed-dir DIR] [--rounds 31]
       [--seq 100] [--conc 25] [--entries 1000000] [--requests 50] [--employees 20]
       [--parts chat,reads] [--database URL]
"""

import argparse
import http.client
import json
import os
import sqlite3
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import chat_overhead  # noqa: E402
import llm_upstream  # noqa: E402
import wfbench  # noqa: E402
from wfbench import log, pct  # noqa: E402

MODEL = "bench-model"
CLIENTS = 8


def entries_in(db, where="", table="credit_transactions"):
    """Rows of the ledger (or of 'table') in database 'db' (read-only, no server on it)."""
    con = sqlite3.connect("file:%s?mode=ro" % db, uri=True)
    try:
        return con.execute("SELECT count(*) FROM %s %s" % (table, where)).fetchone()[0]
    finally:
        con.close()


def chat(a):
    """POST /v1/chat on the product and on the reference build, alternating rounds."""
    up = llm_upstream.Upstream(interval=0).start_in_thread()
    env = {"WORKFORCE_LLM": "openai", "WORKFORCE_LLM_BASE_URL": up.base_url,
           "WORKFORCE_LLM_MODEL": MODEL}
    servers = [wfbench.Server(a.bin, a.tmp, env, name="ledger"),
               wfbench.Server(a.noledger_bin, a.tmp, env, name="reference")]
    got = {(c, s.name): [] for c in (1, CLIENTS) for s in servers}
    try:
        targets, pids = {}, {}
        for srv in servers:
            key = srv.key("bench-chat")  # a live key, 10^8 credits
            srv.start()
            pids[srv.name] = srv.pid
            emp = wfbench.employee_id(srv.port, key)
            body = json.dumps({"employee_id": emp,
                               "message": "Give me a one-line status update."})
            hdr = {"Authorization": "Bearer " + key, "Content-Type": "application/json"}
            targets[srv.name] = (srv.port, "/v1/chat", body, hdr,
                                 b'"content":"Hello from the bench upstream."')
            _, fails, _ = chat_overhead.run(*targets[srv.name][:4], a.warmup, 1,
                                            targets[srv.name][4])
            if fails:
                raise RuntimeError("%s warm-up failed: %s" % (srv.name, fails[:3]))
        for r in range(a.rounds):
            order = ("ledger", "reference") if r % 2 == 0 else ("reference", "ledger")
            for clients in (1, CLIENTS):
                n = a.seq if clients == 1 else a.conc
                for name in order:
                    p, path, b, h, exp = targets[name]
                    before = server_use(pids[name])
                    lat, fails, wall = chat_overhead.run(p, path, b, h, n, clients, exp)
                    after = server_use(pids[name])
                    if fails:
                        raise RuntimeError("%s: %d failed, e.g. %s" % (name, len(fails), fails[:2]))
                    got[(clients, name)].append({"rps": len(lat) / wall,
                                                 "mean": statistics.fmean(lat),
                                                 "p50": pct(lat, 50), "n": len(lat),
                                                 "use": [y - x for x, y in zip(before, after)]})
                log("chat round %d, %s: %.0f req/s with entries, %.0f without"
                    % (r + 1, "sequential" if clients == 1 else "%d clients" % clients,
                       got[(clients, "ledger")][-1]["rps"], got[(clients, "reference")][-1]["rps"]))
        for srv in servers:
            if not srv.alive():
                raise RuntimeError("%s died: %s" % (srv.name, srv.log_tail()))
    finally:
        for srv in servers:
            srv.stop()
        up.stop()
    out = {}
    for clients in (1, CLIENTS):
        w, wo = got[(clients, "ledger")], got[(clients, "reference")]
        ratios = [y["rps"] / x["rps"] for x, y in zip(w, wo)]
        mratios = [x["mean"] / y["mean"] for x, y in zip(w, wo)]
        out["chat_c%d" % clients] = {
            "requests_per_round": sum(x["n"] for x in w) // len(w),
            "with_rps": statistics.median(x["rps"] for x in w),
            "without_rps": statistics.median(x["rps"] for x in wo),
            "with_mean_ms": statistics.median(x["mean"] for x in w),
            "without_mean_ms": statistics.median(x["mean"] for x in wo),
            "with_p50_ms": statistics.median(x["p50"] for x in w),
            "without_p50_ms": statistics.median(x["p50"] for x in wo),
            "time_ratio": statistics.median(ratios),
            "with_cpu_us": per_chat(w, 0) * 1e6, "without_cpu_us": per_chat(wo, 0) * 1e6,
            "with_wchar": per_chat(w, 1), "without_wchar": per_chat(wo, 1),
            "with_syscw": per_chat(w, 2), "without_syscw": per_chat(wo, 2),
            "time_ratio_q1": statistics.quantiles(ratios, n=4)[0],
            "time_ratio_q3": statistics.quantiles(ratios, n=4)[2],
            "time_ratios": [round(x, 3) for x in ratios],
            "mean_ratio": statistics.median(mratios)}
    out["chat_entries_with"] = entries_in(servers[0].db, "WHERE reason = 'chat'")
    out["chat_entries_without"] = entries_in(servers[1].db)
    return out


def server_use(pid):
    """(CPU seconds, bytes written, write calls) of process 'pid' so far, all its threads."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    cpu = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime
    io = {}
    with open("/proc/%d/io" % pid) as f:
        for line in f:
            k, _, v = line.partition(":")
            io[k] = int(v)
    return cpu, io.get("wchar", 0), io.get("syscw", 0)


def per_chat(rounds, i):
    """Figure 'i' of server_use() over all 'rounds', a chat."""
    return sum(r["use"][i] for r in rounds) / sum(r["n"] for r in rounds)


def timed_get(conn, path, key):
    t0 = time.perf_counter()
    conn.request("GET", path, headers={"Authorization": "Bearer " + key})
    r = conn.getresponse()
    data = r.read()
    dt = (time.perf_counter() - t0) * 1000.0
    if r.status != 200:
        raise RuntimeError("GET %s answered %d: %s" % (path, r.status, data[:200]))
    return dt, json.loads(data)


def reads(a):
    """The usage and ledger reads over a ledger of 'a.entries' entries."""
    d = os.path.join(a.seed_dir or a.tmp, "reads")
    os.makedirs(d)
    db = a.database or os.path.join(d, "ledger.db")
    t0 = time.monotonic()
    seed = json.loads(subprocess.run([a.seed_bin, db, str(a.entries), "90", str(a.employees)],
                                     capture_output=True, text=True, check=True,
                                     timeout=900).stdout)
    log("reads: %d entries (%d chats) written in %.1f s" % (seed["entries"], seed["chats"],
                                                           time.monotonic() - t0))
    env = {} if not a.database else {  # what a server on PostgreSQL must be told
        "WORKFORCE_SECRET_FILE": os.path.join(d, "server.secret"),
        "WORKFORCE_FILES_DIR": os.path.join(d, "files")}
    srv = wfbench.Server(a.bin, d, env, name="ledger")
    srv.db = db
    t0 = time.monotonic()
    wfbench.cli(a.bin, db, srv.env, "credits", "check")  # exits 1 when a balance differs
    check_s = time.monotonic() - t0
    big = wfbench.cli(a.bin, db, srv.env, "keys", "create", "--org", "bench-ledger", "--mode",
                      "live").split()[0]
    ref = srv.key("bench-empty")  # a grant at its creation: a ledger of one entry
    paths = [("usage, period=90d, group_by=day", "/v1/account/usage?period=90d&group_by=day"),
             ("usage, period=90d, group_by=employee",
              "/v1/account/usage?period=90d&group_by=employee"),
             ("credit_transactions?limit=50, page 1", "/v1/account/credit_transactions?limit=50"),
             ("GET /v1/account (floor)", "/v1/account")]
    out = {"seed": seed, "seed_s": seed["seconds"], "check_s": check_s,
           "seed_fs": "PostgreSQL" if a.database else chat_overhead.fs_type(d),
           "db_mib": 0 if a.database else os.path.getsize(db) / 1048576.0,
           "usage_rows": -1 if a.database else entries_in(db, table="credit_usage")}
    srv.start()
    try:
        conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=30)
        for label, path in paths:
            lat = {"big": [], "ref": []}
            body = None
            for i in range(a.requests + 5):  # the first 5 are a warm-up
                for who, key in (("big", big), ("ref", ref)):
                    dt, b = timed_get(conn, path, key)
                    if i >= 5:
                        lat[who].append(dt)
                    if who == "big":
                        body = b
            fig = {"median_ms": statistics.median(lat["big"]), "p95_ms": pct(lat["big"], 95),
                   "ref_median_ms": statistics.median(lat["ref"]),
                   "ref_p95_ms": pct(lat["ref"], 95)}
            if "items" in body:
                fig["items"] = len(body["items"])
                fig["entries_counted"] = sum(x["count"] for x in body["items"])
                fig["credits"] = sum(x["credits"] for x in body["items"])
            elif "credit_transactions" in body:
                fig["items"] = len(body["credit_transactions"])
                fig["has_more"] = body.get("has_more")
            out[label] = fig
            log("reads: %s: median %.2f ms, p95 %.2f ms (one-entry ledger %.2f, %.2f)"
                % (label, fig["median_ms"], fig["p95_ms"], fig["ref_median_ms"],
                   fig["ref_p95_ms"]))
        conn.close()
        if not srv.alive():
            raise RuntimeError("workforce died: " + srv.log_tail())
    finally:
        srv.stop()
    out["paths"] = [p[0] for p in paths]
    return out


def cpu():
    try:
        r = subprocess.run(["lscpu"], capture_output=True, text=True, timeout=10)
        for line in r.stdout.splitlines():
            if line.startswith("Model name:"):
                return line.split(":", 1)[1].strip()
    except (OSError, subprocess.SubprocessError):
        pass
    return "this machine"


def verdict(ok):
    return "PASS" if ok else "FAIL"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--noledger-bin", required=True)
    ap.add_argument("--seed-bin", required=True)
    ap.add_argument("--tmp", required=True)
    ap.add_argument("--seed-dir", help="where the ledger of the reads is written (--tmp)")
    ap.add_argument("--rounds", type=int, default=31)
    ap.add_argument("--seq", type=int, default=100, help="sequential chats per round and server")
    ap.add_argument("--conc", type=int, default=25,
                    help="chats per client thread per round and server (8 threads)")
    ap.add_argument("--warmup", type=int, default=100)
    ap.add_argument("--entries", type=int, default=1000000)
    ap.add_argument("--requests", type=int, default=50)
    ap.add_argument("--employees", type=int, default=20, help="of the ledger of the reads")
    ap.add_argument("--parts", default="chat,reads", help="chat, reads or both (chat,reads)")
    ap.add_argument("--database", help="the reads' database instead of a SQLite file: an empty "
                    "PostgreSQL database's URL (tests/pg/pg.sh start DIR prints one)")
    a = ap.parse_args()

    t_start = time.monotonic()
    out = {"machine": cpu(), "cores": os.cpu_count(), "load_start": os.getloadavg()[0]}
    parts = a.parts.split(",")
    if "chat" in parts:
        out.update(chat(a))
    out["load_after_chat"] = os.getloadavg()[0]
    if "reads" in parts:
        out.update(reads(a))
    out["load_end"] = os.getloadavg()[0]
    out["seconds"] = time.monotonic() - t_start

    goals = []
    err("")
    err("ledger bench (issue 29): machine %s, %d cores shared by the clients, the upstream and "
        "the server" % (out["machine"], out["cores"]))
    if "chat" in parts:
        print_chat(a, out, goals)
    if "reads" in parts:
        print_reads(a, out, goals)
    err("")
    err("goals")
    for g in goals:
        err("  %-58s %-14s %s" % g)
    err("(ledger bench: %.0f s; 1-minute load average %.1f at the start, %.1f after the chat "
        "part, %.1f at the end: other work on the machine moves the figures)"
        % (out["seconds"], out["load_start"], out["load_after_chat"], out["load_end"]))
    print(json.dumps(out))


def err(line):
    print(line, file=sys.stderr)


def print_chat(a, out, goals):
    err("")
    err("chat: blocking POST /v1/chat, a live key, each chat's hold written as a ledger entry "
        "with its usage sum;")
    err("      reference: the same server built with -DWORKFORCE_BENCH_NO_LEDGER; median of %d "
        "alternating rounds" % a.rounds)
    err("  %-22s %10s %10s %10s %10s %10s %11s" % ("", "req/s", "ref req/s", "mean ms",
                                                    "ref mean", "mean ratio", "time ratio"))
    for clients in (1, CLIENTS):
        c = out["chat_c%d" % clients]
        label = "sequential" if clients == 1 else "%d clients" % clients
        err("  %-22s %10.0f %10.0f %10.3f %10.3f %10.3f %11.3f" % (
            "%s (%d/round)" % (label, c["requests_per_round"]), c["with_rps"],
            c["without_rps"], c["with_mean_ms"], c["without_mean_ms"], c["mean_ratio"],
            c["time_ratio"]))
        goals.append(("chat %s: time ratio <= 1.10" % label, "%.3f" % c["time_ratio"],
                      verdict(c["time_ratio"] <= 1.10)))
    c1, c8 = out["chat_c1"], out["chat_c%d" % CLIENTS]
    err("  (time ratio: the reference's req/s over the product's in a round, median of the "
        "rounds; quartiles: sequential %.3f..%.3f, %d clients %.3f..%.3f)"
        % (c1["time_ratio_q1"], c1["time_ratio_q3"], CLIENTS, c8["time_ratio_q1"],
           c8["time_ratio_q3"]))
    err("  the server's own use a chat, all rounds (robust to the machine's other load):")
    for clients in (1, CLIENTS):
        c = out["chat_c%d" % clients]
        err("    %-12s CPU %.0f us (ref %.0f, ratio %.3f); written %.0f bytes in %.1f calls "
            "(ref %.0f bytes, %.1f calls)"
            % ("sequential" if clients == 1 else "%d clients" % clients, c["with_cpu_us"],
               c["without_cpu_us"], c["with_cpu_us"] / c["without_cpu_us"], c["with_wchar"],
               c["with_syscw"], c["without_wchar"], c["without_syscw"]))
    err("  chat entries written: %d by the product, %d by the reference"
        % (out["chat_entries_with"], out["chat_entries_without"]))


def print_reads(a, out, goals):
    s = out["seed"]
    err("")
    err("reads: a ledger of %d entries (%d chats through store_chat_begin/_finish, 90 days, %d "
        "employees), %s, written in %.1f s; credits check %.1f s"
        % (s["entries"], s["chats"], a.employees,
           out["seed_fs"] if a.database else "SQLite %.0f MiB on %s" % (out["db_mib"],
                                                                        out["seed_fs"]),
           out["seed_s"], out["check_s"]))
    err("  %-40s %10s %10s %12s %12s" % ("%d requests each" % a.requests, "median ms", "p95 ms",
                                          "ref median", "ref p95"))
    for label in out["paths"]:
        f = out[label]
        err("  %-40s %10.2f %10.2f %12.2f %12.2f" % (label, f["median_ms"], f["p95_ms"],
                                                     f["ref_median_ms"], f["ref_p95_ms"]))
        if label.startswith("usage"):
            goals.append(("%s < 50 ms (median; p95)" % label,
                          "%.2f; %.2f" % (f["median_ms"], f["p95_ms"]),
                          verdict(f["median_ms"] < 50 and f["p95_ms"] < 50)))
    day = out[out["paths"][0]]
    err("  (ref: an organization whose ledger has one entry, same server; usage by day: %d days,"
        " %d entries counted%s)"
        % (day["items"], day["entries_counted"], "; %d usage rows (hours of the last two days, days before)" % out["usage_rows"]
           if out["usage_rows"] >= 0 else ""))


if __name__ == "__main__":
    main()
