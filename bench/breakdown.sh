#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# bench/breakdown.sh: where the time of one authenticated GET goes (docs/performance.md).
# Run by hand from the repository root, as root (perf needs tracepoints and uprobes):
#
#     bash bench/breakdown.sh            # about 10 minutes on 2 cores
#
# It builds (make -s -j2 all), copies build/workforce to the results folder (so that a rebuild
# during the run changes nothing), starts it the way bench/run.sh does (an org and an agency key
# made with `workforce keys create`, WORKFORCE_RATE_LIMITS=agency:1000000/1000000/100000, the
# default 2 worker threads) and nginx serving the same bytes as static files, then for
#   list     GET /v1/employees?limit=50
#   detail   GET /v1/employees/{id}
#   account  GET /v1/account
# measures, each in its own phase:
#   1. throughput: wrk -t2 -c64 -d10s --latency after a 2 s warm-up, and nginx on a file of the
#      same bytes;
#   2. counts: perf stat (task-clock, context switches, migrations, every syscall and each
#      common one by name) on the server while wrk runs; requests counted exactly by the
#      server's own /metrics counter (read before and after, outside the window);
#   3. where the CPU goes: perf record --call-graph dwarf on the server under the same wrk load;
#      each sample is put in a stage by the innermost pipeline function on its stack (see
#      STAGES in classify.py below);
#   4. futex calls under load: perf record of syscalls:sys_enter_futex with stacks, by lock;
#   5. locks and allocations per request: uprobes on libc's pthread_mutex_lock (with the
#      mutex address), pthread_mutex_trylock, pthread_rwlock_rdlock/wrlock,
#      pthread_cond_signal/broadcast, malloc and free, counted over an exact number of
#      sequential keep-alive requests (uprobes cost microseconds each, so not under wrk), and
#      recorded with stacks to name each lock;
#   6. syscalls by site: the common syscalls' tracepoints recorded with stacks over the same
#      kind of sequential requests.
# Nothing is added to `make bench`. Results (text) stay in BD_OUT (default a new
# /tmp/workforce-breakdown.XXXXXX); the script prints a summary at the end.
#
# Tunables (environment): BD_DURATION (10s), BD_CONNECTIONS (64), BD_THREADS (2), BD_WARMUP (2s),
# BD_REPS (3 perf stat runs per route), BD_FREQ (999, perf record sampling Hz), BD_LOCK_REQUESTS (2000, counted with uprobes),
# BD_LOCK_STACK_REQUESTS (200, recorded with stacks), BD_OUT, BD_KEEP_DATA (1 keeps perf.data),
# BD_NO_BUILD (1 skips make), BD_QUIET_WAIT (300: seconds to wait for a quiet machine before
# each measured phase; the wait and the CPU other processes used are in the summary).

if [ -z "${BASH_VERSION:-}" ]; then exec bash "$0" "$@"; fi
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
set -o pipefail

DURATION=${BD_DURATION:-10s}
CONNS=${BD_CONNECTIONS:-64}
THREADS=${BD_THREADS:-2}
WARMUP=${BD_WARMUP:-2s}
FREQ=${BD_FREQ:-999}
LOCK_N=${BD_LOCK_REQUESTS:-2000}
LOCK_STACK_N=${BD_LOCK_STACK_REQUESTS:-200}
REPS=${BD_REPS:-3}
RATE_LIMITS="agency:1000000/1000000/100000"
LIBC=/lib/x86_64-linux-gnu/libc.so.6
PROBE_GROUP=wfbd

WF_PID=""
NGX_PID=""
NGX_DIR=""
PROBES_ADDED=0

log() { printf 'breakdown: %s\n' "$*" >&2; }
die() { printf 'breakdown: error: %s\n' "$*" >&2; exit 1; }

stop_pid() { # pid name
    local pid=$1 i
    [ -n "$pid" ] || return 0
    kill -0 "$pid" 2>/dev/null || return 0
    kill -TERM "$pid" 2>/dev/null
    for i in $(seq 1 100); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.05
    done
    if kill -0 "$pid" 2>/dev/null; then
        log "$2 (pid $pid) did not stop on SIGTERM; sending SIGKILL"
        kill -KILL "$pid" 2>/dev/null
    fi
    wait "$pid" 2>/dev/null
    return 0
}

cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    if [ -n "${PERF_PID:-}" ]; then
        kill -INT "$PERF_PID" 2>/dev/null
        wait "$PERF_PID" 2>/dev/null
    fi
    stop_pid "$WF_PID" workforce
    stop_pid "$NGX_PID" nginx
    [ "$PROBES_ADDED" = 1 ] && perf probe -q -d "$PROBE_GROUP:*" >/dev/null 2>&1
    if [ -n "${NGX_DIR:-}" ] && [ -d "$NGX_DIR" ]; then
        cp "$NGX_DIR/nginx.conf" "$OUT/nginx.conf" 2>/dev/null
        rm -rf "$NGX_DIR"
    fi
    if [ "${BD_KEEP_DATA:-0}" != 1 ] && [ -n "${OUT:-}" ]; then
        rm -f "$OUT"/*.data "$OUT"/*.data.old
    fi
    [ -n "${OUT:-}" ] && log "results in $OUT"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

[ "$(id -u)" -eq 0 ] || die "run as root (perf tracepoints and uprobes)"
[ -f Makefile ] && [ -d src ] || die "run from the repository root"

# ---------------------------------------------------------------- tools
need=()
command -v wrk >/dev/null 2>&1 || need+=(wrk)
command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || need+=(nginx-light)
command -v curl >/dev/null 2>&1 || need+=(curl)
command -v perf >/dev/null 2>&1 || need+=(linux-perf)
command -v python3 >/dev/null 2>&1 || need+=(python3)
if [ ${#need[@]} -gt 0 ]; then
    log "installing ${need[*]}"
    apt-get update -qq >&2 || die "apt-get update failed"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >&2 \
        || die "apt-get install ${need[*]} failed"
fi
NGINX=$(command -v nginx 2>/dev/null || echo /usr/sbin/nginx)
perf stat -e task-clock,raw_syscalls:sys_enter true >/dev/null 2>&1 \
    || die "perf cannot count task-clock and raw_syscalls:sys_enter here"

OUT=${BD_OUT:-$(mktemp -d /tmp/workforce-breakdown.XXXXXX)}
mkdir -p "$OUT" || die "cannot create $OUT"
chmod 755 "$OUT"

# ---------------------------------------------------------------- build and snapshot
if [ "${BD_NO_BUILD:-0}" != 1 ]; then
    log "make -s -j2 all"
    make -s -j2 all >&2 || die "build failed"
fi
cp build/workforce "$OUT/workforce" || die "build/workforce not found"
BIN="$OUT/workforce"

# ---------------------------------------------------------------- helpers (Python)
cat >"$OUT/client.py" <<'EOF'
# Exactly N sequential GETs on one keep-alive connection; exits non-zero on any non-200.
import http.client, sys
port, path, key, n = int(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4])
c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
h = {"Authorization": "Bearer " + key}
for _ in range(n):
    c.request("GET", path, headers=h)
    r = c.getresponse()
    r.read()
    if r.status != 200:
        sys.exit("status %d" % r.status)
EOF

cat >"$OUT/runwrk.py" <<'EOF'
# Run wrk (argv[3:]) and account for the machine's CPU over the run: what wrk, the server
# (argv[2]: pids, comma-separated) and everything else used. The machine may be shared: a busy
# neighbour shows up as "other". wrk's output goes to argv[1]; the accounting to argv[1].cpu.
import json, os, resource, subprocess, sys, time
HZ = os.sysconf("SC_CLK_TCK")
def machine():
    v = [int(x) for x in open("/proc/stat").readline().split()[1:]]
    return (v[0] + v[1] + v[2] + v[5] + v[6]) / HZ, v[7] / HZ  # busy, steal
def proc(pid):
    try:
        f = open("/proc/%s/stat" % pid).read().rsplit(")", 1)[1].split()
        return (int(f[11]) + int(f[12])) / HZ
    except OSError:
        return 0.0
pids = [p for p in sys.argv[2].split(",") if p]
ignore = [p for p in os.environ.get("RUNWRK_IGNORE", "").split(",") if p]  # perf itself
def every():
    d = {}
    for p in os.listdir("/proc"):
        if p.isdigit() and p not in pids and p not in ignore:
            try:
                f = open("/proc/%s/stat" % p).read()
                d[p] = (f[f.index("(") + 1:f.rindex(")")], proc(p))
            except (OSError, ValueError):
                pass
    return d
e0 = every()
b0, s0 = machine(); p0 = sum(proc(p) for p in pids); i0 = sum(proc(p) for p in ignore)
t0 = time.time()
with open(sys.argv[1], "w") as out:
    rc = subprocess.call(sys.argv[3:], stdout=out, stderr=subprocess.STDOUT)
t1 = time.time(); b1, s1 = machine(); p1 = sum(proc(p) for p in pids)
i1 = sum(proc(p) for p in ignore)
e1 = every()
top = sorted(((e1[p][1] - e0[p][1], e1[p][0]) for p in e1 if p in e0), reverse=True)[:3]
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
w = ru.ru_utime + ru.ru_stime
busy, srv, prf = b1 - b0, p1 - p0, i1 - i0
json.dump({"wall_s": t1 - t0, "busy_cpu_s": busy, "steal_s": s1 - s0, "wrk_cpu_s": w,
           "server_cpu_s": srv, "perf_cpu_s": prf, "other_cpu_s": max(0.0, busy - w - srv - prf),
           "top_others": ["%s %.2f" % (c, v) for v, c in top if v > 0]}, open(sys.argv[1] + ".cpu", "w"))
sys.exit(rc)
EOF

cat >"$OUT/quiet.py" <<'EOF'
# Wait (up to argv[1] s) until the machine is quiet: under argv[2] CPUs busy over 2 s.
# Prints the busy CPUs seen last; exit 1 if it never got quiet.
import os, sys, time
def busy():
    v = [int(x) for x in open("/proc/stat").readline().split()[1:]]
    return v[0] + v[1] + v[2] + v[5] + v[6], sum(v[:8])
end = time.time() + float(sys.argv[1])
while True:
    a, ta = busy(); time.sleep(2); b, tb = busy()
    frac = (b - a) / max(1, tb - ta) * os.cpu_count()
    if frac < float(sys.argv[2]):
        print("%.2f" % frac); sys.exit(0)
    if time.time() > end:
        print("%.2f" % frac); sys.exit(1)
EOF

cat >"$OUT/metric.py" <<'EOF'
# The workforce_http_requests_total of one route (status 200), from /metrics on stdin.
import re, sys
route = sys.argv[1]
total = 0
for line in sys.stdin:
    m = re.match(r'workforce_http_requests_total\{route="([^"]*)",method="GET",status="200"\} (\d+)', line)
    if m and m.group(1) == route:
        total += int(m.group(2))
print(total)
EOF

cat >"$OUT/pstat.py" <<'EOF'
# perf stat -x, --per-thread output -> per-request figures, split MHD workers / other threads.
import sys, json
# argv: csv requests [thread-prefix [voluntary involuntary wrk-output]]
path, n = sys.argv[1], float(sys.argv[2])
prefix = sys.argv[3] if len(sys.argv) > 3 else "MHD-worker"
extra = {}
if len(sys.argv) > 6:
    extra["proc_voluntary_per_request"] = float(sys.argv[4]) / n
    extra["proc_involuntary_per_request"] = float(sys.argv[5]) / n
    for line in open(sys.argv[6]):
        if line.startswith("Requests/sec:"):
            extra["wrk_rps"] = float(line.split()[1])
agg = {}
for line in open(path):
    f = line.strip().split(",")
    if len(f) < 4 or f[0].startswith("#"):
        continue
    thread, val, ev = f[0], f[1], f[3]
    try:
        v = float(val)
    except ValueError:
        continue
    grp = "worker" if thread.startswith(prefix) else "other"
    agg.setdefault(ev, {"worker": 0.0, "other": 0.0})
    agg[ev][grp] += v
out = {ev: {"worker": d["worker"] / n, "other": d["other"] / n, "total": (d["worker"] + d["other"]) / n}
       for ev, d in agg.items()}
d = {"requests": n, "per_request": out}
d.update(extra)
json.dump(d, sys.stdout, indent=1)
EOF

cat >"$OUT/classify.py" <<'EOF'
# perf script output (with callchains) -> samples per stage of the request pipeline.
# A sample belongs to the stage of the innermost pipeline function on its stack (STAGES); with
# none, to the libc syscall wrapper or library it is in. Usage:
#   classify.py cpu  REQUESTS FREQ   < perf-script.txt      (cpu-clock samples)
#   classify.py lock REQUESTS        < perf-script.txt      (uprobe / futex events)
import sys, re, collections, json

STAGES = [
    ("auth: HMAC-SHA256 of the key (OpenSSL)", ["auth_key_hash", "crypto_hmac_sha256",
                                                "crypto_hmac_sign"]),
    ("auth: key cache (generation check + copy)", ["find_key", "store_generation",
                                                   "s_data_version", "cache_get_into",
                                                   "cache_put", "store_note_commit"]),
    ("list answer cache (lookup + copy)", ["cache_get"]),
    ("auth: key + org lookup (SQLite)", ["s_key_auth", "store_key_auth", "read_key", "org_cols"]),
    ("auth: header parse + checks", ["authenticate", "auth_bearer_parse", "auth_key_wellformed",
                                     "auth_scopes_parse", "crypto_equal", "id_is_base62"]),
    ("rate limiter (+ X-RateLimit headers)", ["admit", "ratelimit_enter", "ratelimit_leave",
                                              "set_limit_headers"]),
    ("store pool get/put", ["store_pool_get", "store_pool_put"]),
    ("store reads (SQLite)", ["s_employee_list", "store_employee_list", "employee_page",
                              "s_employee_get", "store_employee_get", "read_employee",
                              "s_employee_summary", "store_employee_summary", "bind_filter"]),
    ("handler: JSON building", ["api_employees_list", "api_employees_get", "respond_detail",
                                "api_account_get", "write_item", "render", "jo_dump",
                                "router_respond_jw", "router_respond", "router_cursor_encode"]),
    ("request id (RAND_bytes)", ["id_new", "crypto_random", "id_base62"]),
    ("metrics", ["metrics_observe"]),
    ("routing + query parse", ["router_match", "router_query_parse", "check_query",
                               "router_query_limit", "router_query", "match"]),
    ("HTTP framing checks (server.c)", ["check_framing", "scan_header", "one_line", "is_tchar"]),
    ("response hand-off to MHD (send_response)", ["send_response", "after_handle",
                                                   "MHD_create_response_from_buffer",
                                                   "MHD_queue_response"]),
    ("request bookkeeping (server.c: lists, arena, free)",
     ["on_completed", "on_done", "req_new", "on_uri", "reading_add", "reading_remove",
      "unpark", "arena_cleanup"]),
    ("pipeline glue (on_begin/on_handle/on_request)", ["on_begin", "on_handle", "on_request"]),
]
STAGE_OF = {}
for st, names in STAGES:
    for nm in names:
        STAGE_OF[nm] = st
JSON_PREFIX = ("jw_", "put_string", "jo_")
SQL_COMPILE = {"sqlite3_exec", "sqlite3_prepare_v2", "sqlite3_prepare_v3", "sqlite3_finalize"}
SYSCALL_STAGE = [
    ({"__libc_sendmsg", "sendmsg", "__send", "__libc_send", "send", "writev", "__writev"},
     "response send (sendmsg, kernel TCP)"),
    ({"__libc_recv", "recv", "recvfrom", "__libc_recvfrom", "read", "__libc_read"},
     "request read (recv, kernel TCP)"),
    ({"epoll_wait", "__epoll_wait", "epoll_pwait"}, "event loop (epoll_wait)"),
    ({"epoll_ctl", "accept4", "__libc_accept4", "close", "__close", "shutdown", "setsockopt",
      "__libc_close"}, "connections (accept/epoll_ctl/close)"),
]
LOCKWAIT = ("__lll_lock_wait", "futex_wait", "__futex_abstimed_wait", "lll_lock_wait",
            "__GI___lll_lock_wait", "futex_wake", "__lll_lock_wake", "__GI___lll_lock_wake")

SCHED = {"finish_task_switch.isra.0", "finish_task_switch", "__schedule", "schedule"}

def frames_of(block):
    fr = []
    for ln in block[1:]:
        m = re.match(r"\s*([0-9a-f]+)\s+(.*?)\s+\((.*)\)\s*$", ln)
        if not m:
            continue
        sym = m.group(2)
        sym = re.sub(r"\+0x[0-9a-f]+$", "", sym)
        sym = sym.replace(" (inlined)", "")
        dso = m.group(3)
        fr.append((m.group(1), sym, dso))
    return fr

def base(dso):
    return dso.rsplit("/", 1)[-1]

def stage_of(comm, fr):
    if not comm.startswith("MHD-worker"):
        return "background threads (not MHD workers)", None
    for i, (_, sym, dso) in enumerate(fr):
        st = STAGE_OF.get(sym)
        if st is None and sym.startswith(JSON_PREFIX) and "workforce" in base(dso):
            st = "handler: JSON building"
        if st:
            sub = None
            if st == "store reads (SQLite)":
                inner = {s for _, s, _ in fr[:i]}
                sub = ("store: SQL compiled per call (sqlite3_exec BEGIN/COMMIT, prepare_v2/finalize)"
                       if inner & SQL_COMPILE else "store: execute cached statements (step/column/reset)")
            return st, sub
    syms = {s for _, s, _ in fr}
    for names, st in SYSCALL_STAGE:
        if syms & names:
            return st, None
    if any("libmicrohttpd" in d for _, _, d in fr):
        return "libmicrohttpd own code (request parse, response head, state machine)", None
    if fr and all("kernel" in d for _, _, d in fr):
        return "kernel only (interrupts, softirq)", None
    return "other", None

def blocks(stream):
    cur = []
    for ln in stream:
        ln = ln.rstrip("\n")
        if not ln.strip():
            if cur:
                yield cur
            cur = []
        else:
            cur.append(ln)
    if cur:
        yield cur

def cpu(nreq, freq):
    n = 0
    st = collections.Counter()
    sub = collections.Counter()
    kern = collections.Counter()
    wait = collections.Counter()
    sched = collections.Counter()
    selfsym = collections.Counter()
    selfst = collections.defaultdict(collections.Counter)
    for b in blocks(sys.stdin):
        head = b[0].split()
        comm = head[0] if head else "?"
        fr = frames_of(b)
        if not fr:
            continue
        n += 1
        s, ss = stage_of(comm, fr)
        st[s] += 1
        if ss:
            sub[ss] += 1
        if "kernel" in fr[0][2]:
            kern[s] += 1
        if any(any(w in sym for w in LOCKWAIT) for _, sym, _ in fr):
            wait[s] += 1
        if any(sym in SCHED for _, sym, dso in fr if "kernel" in dso):
            sched[s] += 1
        key = "%s (%s)" % (fr[0][1] if fr[0][1] != "[unknown]" else "0x" + fr[0][0], base(fr[0][2]))
        selfsym[key] += 1
        selfst[key][s] += 1
    us_per_req = n / freq / nreq * 1e6  # cpu-clock: one sample per 1/freq s of CPU
    res = {"samples": n, "requests": nreq, "freq": freq, "us_per_request": us_per_req,
           "stages": [], "sub": [], "top": []}
    for s, c in st.most_common():
        res["stages"].append({"stage": s, "samples": c, "share": c / n, "us": us_per_req * c / n,
                              "kernel_share_of_stage": kern[s] / c, "lock_wait_share_of_stage": wait[s] / c,
                              "sched_share_of_stage": sched[s] / c})
    for s, c in sub.most_common():
        res["sub"].append({"stage": s, "samples": c, "share": c / n, "us": us_per_req * c / n})
    for k, c in selfsym.most_common(30):
        res["top"].append({"symbol": k, "share": c / n, "us": us_per_req * c / n,
                           "stage": selfst[k].most_common(1)[0][0]})
    json.dump(res, sys.stdout, indent=1)

SKIP_SITE = {"sqlite3_mutex_enter", "sqlite3_mutex_leave", "pthreadMutexEnter", "pthreadMutexTry",
             "CRYPTO_THREAD_read_lock", "CRYPTO_THREAD_write_lock", "CRYPTO_THREAD_unlock",
             "sqlite3_mutex_try"}

def lock(nreq):
    per = collections.Counter()
    addrs = collections.defaultdict(collections.Counter)
    events = collections.Counter()
    for b in blocks(sys.stdin):
        head = b[0]
        comm = head.split()[0]
        if not comm.startswith("MHD-worker"):
            continue
        m = re.search(r"(\S+:\S+):", head)
        ev = m.group(1).split(":")[-1] if m else "?"
        op = re.search(r"op: (0x[0-9a-f]+)", head)
        if op:
            o = int(op.group(1), 16) & 0x7f
            ev = "futex " + {0: "WAIT", 1: "WAKE", 9: "WAIT_BITSET", 10: "WAKE_BITSET"}.get(o, "op%d" % o)
        sc = re.search(r"syscalls:sys_enter_(\w+):", head)
        if sc and not op:
            ev = sc.group(1)
            cmd = re.search(r"cmd: (0x[0-9a-f]+)", head)
            if ev == "fcntl" and cmd:
                ev = "fcntl " + {5: "F_GETLK", 6: "F_SETLK", 7: "F_SETLKW", 3: "F_GETFL", 4: "F_SETFL"}.get(int(cmd.group(1), 16), cmd.group(1))
        ma = re.search(r"mutex=(0x[0-9a-f]+)", head)
        fr = frames_of(b)
        site = "?"
        for addr, sym, dso in fr:
            if "libc.so" in dso or "kernel" in dso or sym in SKIP_SITE:
                continue
            site = "%s (%s)" % (sym if sym != "[unknown]" else "+0x" + addr, base(dso))
            break
        s, _ = stage_of(comm, fr)
        key = (ev, site, s)
        per[key] += 1
        events[ev] += 1
        if ma:
            addrs[key][ma.group(1)] += 1
    res = {"requests": nreq, "events": {e: c / nreq for e, c in events.items()}, "sites": []}
    for (ev, site, s), c in per.most_common():
        res["sites"].append({"event": ev, "site": site, "stage": s, "per_request": c / nreq,
                             "distinct_mutexes": len(addrs[(ev, site, s)]),
                             "mutexes": [a for a, _ in addrs[(ev, site, s)].most_common(2)]})
    json.dump(res, sys.stdout, indent=1)

if __name__ == "__main__":
    if sys.argv[1] == "cpu":
        cpu(float(sys.argv[2]), float(sys.argv[3]))
    else:
        lock(float(sys.argv[2]))
EOF

cat >"$OUT/report.py" <<'EOF'
# All JSON results of the run -> summary.md (the figures docs/performance.md quotes).
import json, os, statistics, sys
out, reps = sys.argv[1], int(sys.argv[2])
routes = ["list", "detail", "account"]
def load(name):
    p = os.path.join(out, name)
    return json.load(open(p)) if os.path.exists(p) else None
L = []
P = L.append
P("# breakdown summary\n")
P(open(os.path.join(out, "machine.txt")).read())
P("\n## Throughput (wrk -t%s -c%s -d%s --latency, after a warm-up)\n" % tuple(open(os.path.join(out, "wrkargs.txt")).read().split()))
P("| target | body bytes | req/s | p99 ms | non-2xx | socket errors | server CPU s | wrk CPU s | other CPU s |")
P("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
for line in open(os.path.join(out, "throughput.txt")):
    f = line.split()
    c = json.load(open(os.path.join(out, "wrk-%s.txt.cpu" % f[6])))
    P("| %s | %s | %s | %s | %s | %s | %.2f | %.2f | %.2f |" % (tuple(f[:6]) + (c["server_cpu_s"], c["wrk_cpu_s"], c["other_cpu_s"])))
P("\n(server CPU s: workforce or nginx, both processes; other: every other process and kernel thread)")
P("\nquiet checks before each phase (busy CPUs over 2 s): " + ", ".join(l.strip() for l in open(os.path.join(out, "quiet.txt"))))

# ---- counts
stats = {r: [load("stat-%s-%d.json" % (r, i)) for i in range(1, reps + 1)] for r in routes}
stats["nginx"] = [load("stat-nginx-1.json")]
cols = routes + ["nginx"]
def fmt(vals, scale=1.0, d=2):
    vals = [v * scale for v in vals if v is not None]
    if not vals:
        return ""
    m = statistics.median(vals)
    if len(vals) == 1:
        return "%.*f" % (d, m)
    return "%.*f (%.*f-%.*f)" % (d, m, d, min(vals), d, max(vals))
def ev(r, e, part="total"):
    return [s["per_request"].get(e, {}).get(part, 0.0) for s in stats[r] if s]
P("\n## Counts per request under wrk (perf stat; median of %d runs for workforce, (min-max); nginx 1 run)\n" % reps)
P("| | " + " | ".join(cols) + " |")
P("|---|" + "---:|" * len(cols))
P("| requests in the window | " + " | ".join(fmt([s["requests"] for s in stats[r] if s], d=0) for r in cols) + " |")
P("| wrk req/s in the window | " + " | ".join(fmt([s.get("wrk_rps") for s in stats[r] if s and s.get("wrk_rps")], d=0) for r in cols) + " |")
P("| CPU us/request (task-clock, whole process) | " + " | ".join(fmt(ev(r, "task-clock"), 1000.0, 1) for r in cols) + " |")
P("| syscalls/request (raw_syscalls:sys_enter) | " + " | ".join(fmt(ev(r, "raw_syscalls:sys_enter")) for r in cols) + " |")
names = set()
for r in cols:
    for s in stats[r]:
        if s:
            names |= {e for e, d in s["per_request"].items() if e.startswith("syscalls:") and d["total"] >= 0.005}
for e in sorted(names, key=lambda e: -statistics.median(ev("list", e) or [0])):
    P("| - %s | " % e.split("sys_enter_")[-1] + " | ".join(fmt(ev(r, e)) for r in cols) + " |")
P("| context switches/request (perf) | " + " | ".join(fmt(ev(r, "context-switches"), d=3) for r in cols) + " |")
P("| - of the MHD workers, voluntary (/proc) | " + " | ".join(fmt([s.get("proc_voluntary_per_request") for s in stats[r] if s and "proc_voluntary_per_request" in s], d=3) for r in cols) + " |")
P("| - of the MHD workers, involuntary (/proc) | " + " | ".join(fmt([s.get("proc_involuntary_per_request") for s in stats[r] if s and "proc_involuntary_per_request" in s], d=3) for r in cols) + " |")
P("| cpu-migrations/request | " + " | ".join(fmt(ev(r, "cpu-migrations"), d=4) for r in cols) + " |")
P("| CPU us/request in other threads than the MHD workers | " + " | ".join(fmt(ev(r, "task-clock", "other"), 1000.0, 2) for r in routes) + " | |")
for r in routes:
    for i, s in enumerate(stats[r], 1):
        c = load("wrk-stat-%s-%d.txt.cpu" % (r, i))
        if c and c["other_cpu_s"] > 0.5:
            P("\nnote: stat run %s %d had %.2f CPU s of other processes" % (r, i, c["other_cpu_s"]))
idle = load("stat-idle-per-second.json")
if idle:
    pr = idle["per_request"]
    P("\nidle server, per second: %.2f ms CPU, %.1f syscalls, %.1f context switches" % (
        pr["task-clock"]["total"], pr["raw_syscalls:sys_enter"]["total"], pr["context-switches"]["total"]))

# ---- CPU by stage
for r in routes:
    c = load("cpu-%s.json" % r)
    if not c:
        continue
    P("\n## CPU by stage: %s (%d samples at %d Hz over %d requests = %.1f us CPU per request)\n" % (r, c["samples"], c["freq"], c["requests"], c["us_per_request"]))
    P("| stage | us/request | share | of it in kernel | of it scheduler (context switch) | of it in futex (wait or wake) |")
    P("|---|---:|---:|---:|---:|---:|")
    for s in c["stages"]:
        P("| %s | %.2f | %.1f%% | %.0f%% | %.0f%% | %.0f%% |" % (s["stage"], s["us"], 100 * s["share"], 100 * s["kernel_share_of_stage"], 100 * s["sched_share_of_stage"], 100 * s["lock_wait_share_of_stage"]))
    for s in c["sub"]:
        P("| (of store reads) %s | %.2f | %.1f%% | | | |" % (s["stage"], s["us"], 100 * s["share"]))
    rc = load("wrk-rec-%s.txt.cpu" % r)
    if rc:
        P("\nmachine over this run: server %.2f CPU s, wrk %.2f, other %.2f" % (rc["server_cpu_s"], rc["wrk_cpu_s"], rc["other_cpu_s"]))
    P("\nTop functions (self):\n")
    P("| function (library) | us/request | share | stage |")
    P("|---|---:|---:|---|")
    for t in c["top"][:25]:
        P("| %s | %.2f | %.1f%% | %s |" % (t["symbol"], t["us"], 100 * t["share"], t["stage"]))

# ---- locks, futex, syscalls by site
for r in routes:
    a = load("probecount-%s.json" % r)
    if a:
        P("\n## uprobe counts: %s (%d sequential requests, MHD workers), per request\n" % (r, a["requests"]))
        P(", ".join("%s %.2f" % (e.split(":")[-1], d["worker"]) for e, d in sorted(a["per_request"].items())))
    for kind in ("locks", "futex", "syscalls"):
        k = load("%s-%s.json" % (kind, r))
        if not k:
            continue
        # Events lost to perf's ring buffer: lock sites are scaled so that each event's total
        # matches the exact uprobe count of the same route.
        scale = {}
        if kind == "locks" and a:
            for e, v in k["events"].items():
                exact = a["per_request"].get("wfbd:" + e, {}).get("worker")
                if exact and v:
                    scale[e] = exact / v
        P("\n## %s by site: %s (%d requests)\n" % (kind, r, k["requests"]))
        P("totals per request as recorded: " + ", ".join("%s %.2f" % (e, v) for e, v in sorted(k["events"].items())))
        if scale:
            P("\nscaled to the exact uprobe counts by: " + ", ".join("%s x%.3f" % (e, v) for e, v in sorted(scale.items())))
        P("\n| event | site (innermost non-libc frame) | stage | per request | distinct mutexes (top addresses) |")
        P("|---|---|---|---:|---|")
        for s in k["sites"]:
            v = s["per_request"] * scale.get(s["event"], 1.0)
            if v < 0.01:
                continue
            m = ("%d (%s)" % (s["distinct_mutexes"], " ".join(s["mutexes"]))) if s["distinct_mutexes"] else ""
            P("| %s | %s | %s | %.2f | %s |" % (s["event"], s["site"], s["stage"], v, m))
open(os.path.join(out, "summary.md"), "w").write("\n".join(L) + "\n")
print("\n".join(L))
EOF

# ---------------------------------------------------------------- machine
{
    echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')"
    echo "cpu: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores ($(lscpu | sed -n 's/^Hypervisor vendor: *//p') guest)"
    echo "kernel: $(uname -r)"
    echo "commit: $(git rev-parse --short HEAD 2>/dev/null) ($(git status --short src 2>/dev/null | wc -l) files under src/ differ from it)"
    echo "libmicrohttpd $(dpkg-query -W -f='${Version}' libmicrohttpd12 2>/dev/null), sqlite $(dpkg-query -W -f='${Version}' libsqlite3-0 2>/dev/null), openssl $(dpkg-query -W -f='${Version}' libssl3 2>/dev/null), jansson $(dpkg-query -W -f='${Version}' libjansson4 2>/dev/null)"
    echo "tools: $(wrk -v 2>&1 | head -1 | cut -d' ' -f1-2), $($NGINX -v 2>&1), $(perf --version)"
} >"$OUT/machine.txt"
echo "$THREADS $CONNS $DURATION" >"$OUT/wrkargs.txt"
cat "$OUT/machine.txt" >&2

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# ---------------------------------------------------------------- workforce
WF_PORT=$(free_port)
# the server makes the database folder private (0700): nginx has its own folder below
mkdir -p "$OUT/db"
DB="$OUT/db/workforce.db"
WF_ENV=(env)
for v in $(compgen -e | grep '^WORKFORCE_' || true); do WF_ENV+=(-u "$v"); done
WF_ENV+=(WORKFORCE_RATE_LIMITS="$RATE_LIMITS")
"${WF_ENV[@]}" "$BIN" --database "$DB" keys create --org bd-setup --tier agency --mode live \
    >"$OUT/setup.key" 2>"$OUT/keys.err" || { cat "$OUT/keys.err" >&2; die "keys create failed"; }
log "starting workforce on 127.0.0.1:$WF_PORT"
"${WF_ENV[@]}" "$BIN" --database "$DB" serve --listen "127.0.0.1:$WF_PORT" >"$OUT/workforce.log" 2>&1 &
WF_PID=$!
for _ in $(seq 1 600); do
    [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$WF_PORT/healthz")" = 200 ] && break
    kill -0 "$WF_PID" 2>/dev/null || die "workforce exited: $(tail -5 "$OUT/workforce.log")"
    sleep 0.05
done
sleep 1
BASE="http://127.0.0.1:$WF_PORT"

declare -A PATHS=([list]="/v1/employees?limit=50" [account]="/v1/account")
declare -A METRIC=([list]="/v1/employees" [detail]="/v1/employees/{id}" [account]="/v1/account")
declare -A FILE=([list]=employees [detail]=employee [account]=account)
ROUTES="list detail account"
KEY=""
AUTH=""
DETAIL_PATHS=""

# Every measured phase gets an organization (a rate-limit tenant) of its own: one tenant is
# capped at 1,000,000 requests a minute, which the phases together would pass.
# Under wrk each thread sends with a key (and organization) of its own (bench/keys.lua reads
# WRK_KEYS), so that even a phase of 2 + 10 s past 90k req/s stays under each tenant's cap.
new_tenant() { # label -> KEY, AUTH, WRK_KEYS, PATHS[detail]
    local emp i k paths=""
    WRK_KEYS=""
    for i in $(seq 1 "$THREADS"); do
        k=$("${WF_ENV[@]}" "$BIN" --database "$DB" keys create --org "bd-$1-$i" --tier agency \
            --mode live 2>>"$OUT/keys.err") || die "keys create bd-$1-$i failed"
        k=${k%%[[:space:]]*}
        WRK_KEYS="$WRK_KEYS${WRK_KEYS:+,}$k"
        emp=$(curl -s -H "Authorization: Bearer $k" "$BASE/v1/employees?limit=1" \
              | python3 -c 'import json,sys; print(json.load(sys.stdin)["employees"][0]["id"])') \
            || die "no employee for bd-$1-$i"
        paths="$paths${paths:+,}/v1/employees/$emp"
    done
    export WRK_KEYS
    # The detail route: each wrk thread asks for an employee of its own key's organization.
    DETAIL_PATHS=$paths
    KEY=${WRK_KEYS%%,*}
    AUTH="Authorization: Bearer $KEY"
    emp=$(curl -s -H "$AUTH" "$BASE/v1/employees?limit=1" \
          | python3 -c 'import json,sys; print(json.load(sys.stdin)["employees"][0]["id"])') \
        || die "no employee for bd-$1"
    PATHS[detail]="/v1/employees/$emp"
}

worker_tids() {
    local t
    for t in /proc/"$WF_PID"/task/*; do
        [ "$(cat "$t/comm" 2>/dev/null)" = MHD-worker ] && echo "${t##*/}"
    done
}
ctx_of_workers() { # -> "voluntary nonvoluntary" summed over the MHD workers
    local t v=0 nv=0 a b
    for t in $(worker_tids); do
        a=$(awk '/^voluntary_ctxt_switches/ {print $2}' "/proc/$WF_PID/task/$t/status")
        b=$(awk '/^nonvoluntary_ctxt_switches/ {print $2}' "/proc/$WF_PID/task/$t/status")
        v=$((v + a)); nv=$((nv + b))
    done
    echo "$v $nv"
}
served() { # route -> 200 answers the server counted so far on that route
    curl -s "$BASE/metrics" | python3 "$OUT/metric.py" "${METRIC[$1]}"
}

# perf sessions start with events disabled and are switched on and off around the load through
# a control FIFO, so that a window holds exactly the requests counted around it.
PERF_PID=""
perf_begin() { # perf subcommand and options (without -D/--control)
    local sub=$1
    shift
    rm -f "$OUT/ctl" "$OUT/ack"
    mkfifo "$OUT/ctl" "$OUT/ack" || die "mkfifo failed"
    perf "$sub" -D -1 --control "fifo:$OUT/ctl,$OUT/ack" "$@" >/dev/null 2>>"$OUT/perf.err" &
    PERF_PID=$!
    exec 7<>"$OUT/ctl" 8<>"$OUT/ack"
}
perf_cmd() { # enable | disable
    echo "$1" >&7
    read -r -t 120 _ <&8 || die "perf did not acknowledge '$1' (see $OUT/perf.err)"
}
perf_end() {
    kill -INT "$PERF_PID" 2>/dev/null
    wait "$PERF_PID" 2>/dev/null
    PERF_PID=""
    exec 7>&- 8>&-
    rm -f "$OUT/ctl" "$OUT/ack"
}

# ---------------------------------------------------------------- nginx
NGX_DIR=$(mktemp -d /tmp/workforce-breakdown-nginx.XXXXXX) || die "mktemp failed"
chmod 755 "$NGX_DIR"
mkdir -p "$NGX_DIR/html/v1" "$NGX_DIR/tmp"
new_tenant bodies
for r in $ROUTES; do
    code=$(curl -sS -o "$NGX_DIR/html/v1/${FILE[$r]}" -w '%{http_code}' -H "$AUTH" "$BASE${PATHS[$r]}") \
        || die "curl ${PATHS[$r]} failed"
    [ "$code" = 200 ] || die "GET ${PATHS[$r]} answered $code"
done
chmod 755 "$NGX_DIR/html" "$NGX_DIR/html/v1"
chmod 644 "$NGX_DIR"/html/v1/*
NGX_PORT=$(free_port)
cat >"$NGX_DIR/nginx.conf" <<EOF
daemon off;
master_process on;
worker_processes 1;
pid $NGX_DIR/nginx.pid;
error_log $NGX_DIR/error.log warn;
events { worker_connections 1024; }
http {
    access_log off;
    client_body_temp_path $NGX_DIR/tmp/body;
    proxy_temp_path $NGX_DIR/tmp/proxy;
    fastcgi_temp_path $NGX_DIR/tmp/fastcgi;
    uwsgi_temp_path $NGX_DIR/tmp/uwsgi;
    scgi_temp_path $NGX_DIR/tmp/scgi;
    default_type application/json;
    sendfile on;
    tcp_nopush on;
    keepalive_requests 1000000;
    server {
        listen 127.0.0.1:$NGX_PORT;
        root $NGX_DIR/html;
        location / { default_type application/json; }
    }
}
EOF
log "starting nginx on 127.0.0.1:$NGX_PORT"
"$NGINX" -e "$NGX_DIR/error.log" -c "$NGX_DIR/nginx.conf" -p "$NGX_DIR" >"$NGX_DIR/stdout.log" 2>&1 &
NGX_PID=$!
for _ in $(seq 1 500); do
    [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$NGX_PORT/v1/employees")" = 200 ] && break
    kill -0 "$NGX_PID" 2>/dev/null || die "nginx exited: $(cat "$NGX_DIR/error.log")"
    sleep 0.02
done
for f in employees employee account; do
    cmp -s <(curl -s "http://127.0.0.1:$NGX_PORT/v1/$f") "$NGX_DIR/html/v1/$f" || die "nginx body of $f differs"
done
NGX_WORKER=$(pgrep -P "$NGX_PID" | head -1)
[ -n "$NGX_WORKER" ] || die "no nginx worker process"

# ---------------------------------------------------------------- load helpers
parse_wrk() { # -> "req_per_s p99_ms non2xx errors requests"
    awk '
        function ms(v,   n) { n = v + 0; if (v ~ /us$/) return n / 1000; if (v ~ /ms$/) return n;
                              if (v ~ /s$/) return n * 1000; return n }
        /^Requests\/sec:/ { rps = $2 }
        $1 == "99%"       { p99 = ms($2) }
        / requests in /   { reqs = $1 }
        /Non-2xx or 3xx responses:/ { bad = $NF }
        /Socket errors:/  { gsub(/,/, ""); err = $4 + $6 + $8 + $10 }
        END { if (rps == "") exit 1; printf "%s %.3f %d %d %d\n", rps, p99 + 0, bad + 0, err + 0, reqs }'
}
quiet() { # label: wait for the machine to be quiet (another session may share it)
    local q
    if q=$(python3 "$OUT/quiet.py" "${BD_QUIET_WAIT:-300}" 0.15); then
        echo "$1 quiet $q" >>"$OUT/quiet.txt"
    else
        log "warning: the machine is still busy ($q CPUs) before $1; measuring anyway"
        echo "$1 BUSY $q" >>"$OUT/quiet.txt"
    fi
}
WRK_LINE=""
wrk_run() { # name url auth(0/1) duration [extra wrk args...] -> WRK_LINE; raw in wrk-name.txt
    local name=$1 url=$2 auth=$3 dur=$4 bad
    shift 4
    local hdr=()
    [ "$auth" = 1 ] && hdr=(-s "$HERE/keys.lua")
    WRK_PATHS=""
    case "$url" in */v1/employees/emp_*) WRK_PATHS=$DETAIL_PATHS ;; esac
    export WRK_PATHS
    RUNWRK_IGNORE="${PERF_PID:-}" python3 "$OUT/runwrk.py" "$OUT/wrk-$name.txt" "$WF_PID,$NGX_PID,$NGX_WORKER" \
        wrk -t"$THREADS" -c"$CONNS" -d"$dur" "$@" "${hdr[@]}" "$url" \
        || die "wrk $name failed: $(cat "$OUT/wrk-$name.txt")"
    WRK_LINE=$(parse_wrk <"$OUT/wrk-$name.txt") || die "cannot parse wrk output of $name"
    read -r _ _ bad _ _ <<<"$WRK_LINE"
    [ "$bad" = 0 ] || log "warning: $name had $bad non-2xx answers"
}

OTHER_MAX=${BD_OTHER_MAX:-0.5}
clean_run() { # name: true when other processes used at most OTHER_MAX CPU s during wrk-name
    python3 - "$OUT/wrk-$1.txt.cpu" "$OTHER_MAX" <<'EOF'
import json, sys
c = json.load(open(sys.argv[1]))
sys.exit(0 if c["other_cpu_s"] <= float(sys.argv[2]) else 1)
EOF
}
with_retry() { # name function args...: run it (up to 3 times) until no other process disturbed it
    local name=$1 try
    shift
    for try in 1 2 3; do
        quiet "$name"
        "$@"
        clean_run "$name" && return 0
        log "$name was disturbed by other processes ($(cat "$OUT/wrk-$name.txt.cpu")); again"
        echo "$name DISTURBED try $try" >>"$OUT/quiet.txt"
    done
    log "warning: $name stayed disturbed after 3 tries; keeping the last"
}

# ---------------------------------------------------------------- 1. throughput
: >"$OUT/throughput.txt"
tp_workforce() { # route
    new_tenant "tp-$1"
    WRK_PATHS=""
    [ "$1" = detail ] && WRK_PATHS=$DETAIL_PATHS
    WRK_PATHS=$WRK_PATHS wrk -t"$THREADS" -c"$CONNS" -d"$WARMUP" -s "$HERE/keys.lua" \
        "$BASE${PATHS[$1]}" >/dev/null 2>&1
    wrk_run "tp-$1" "$BASE${PATHS[$1]}" 1 "$DURATION" --latency
}
tp_nginx() { # route
    wrk -t"$THREADS" -c"$CONNS" -d"$WARMUP" "http://127.0.0.1:$NGX_PORT/v1/${FILE[$1]}" >/dev/null 2>&1
    wrk_run "tp-nginx-$1" "http://127.0.0.1:$NGX_PORT/v1/${FILE[$1]}" 0 "$DURATION" --latency
}
for r in $ROUTES; do
    log "throughput: workforce $r"
    with_retry "tp-$r" tp_workforce "$r"
    read -r rps p99 bad err _ <<<"$WRK_LINE"
    echo "workforce-$r $(stat -c %s "$NGX_DIR/html/v1/${FILE[$r]}") $rps $p99 $bad $err tp-$r" >>"$OUT/throughput.txt"
done
for r in $ROUTES; do
    log "throughput: nginx, the bytes of $r"
    with_retry "tp-nginx-$r" tp_nginx "$r"
    read -r rps p99 bad err _ <<<"$WRK_LINE"
    echo "nginx-$r $(stat -c %s "$NGX_DIR/html/v1/${FILE[$r]}") $rps $p99 $bad $err tp-nginx-$r" >>"$OUT/throughput.txt"
done
cat "$OUT/throughput.txt" >&2

# ---------------------------------------------------------------- 2. counts (perf stat)
SC="recvfrom sendmsg sendto writev write read epoll_wait epoll_ctl futex fcntl newfstatat getpid
accept4 close shutdown setsockopt pread64 pwrite64 mmap munmap madvise brk openat getrandom poll"
EVENTS="task-clock,context-switches,cpu-migrations,raw_syscalls:sys_enter"
for s in $SC; do EVENTS="$EVENTS,syscalls:sys_enter_$s"; done

log "idle baseline: perf stat 10 s without load"
quiet idle
perf stat --per-thread -x, -e "$EVENTS" -p "$WF_PID" -o "$OUT/stat-idle.csv" -- sleep 10 >/dev/null 2>&1
python3 "$OUT/pstat.py" "$OUT/stat-idle.csv" 10 >"$OUT/stat-idle-per-second.json"

stat_workforce() { # route rep
    local r=$1 rep=$2 n0 n1 c0 c1 v0 nv0 v1 nv1
    new_tenant "stat-$r-$rep"
    perf_begin stat --per-thread -x, -e "$EVENTS" -p "$WF_PID" -o "$OUT/stat-$r-$rep.csv"
    n0=$(served "$r")
    c0=$(ctx_of_workers)
    perf_cmd enable
    wrk_run "stat-$r-$rep" "$BASE${PATHS[$r]}" 1 "$DURATION"
    perf_cmd disable
    c1=$(ctx_of_workers)
    n1=$(served "$r")
    perf_end
    read -r v0 nv0 <<<"$c0"; read -r v1 nv1 <<<"$c1"
    python3 "$OUT/pstat.py" "$OUT/stat-$r-$rep.csv" "$((n1 - n0))" MHD-worker \
        "$((v1 - v0))" "$((nv1 - nv0))" "$OUT/wrk-stat-$r-$rep.txt" >"$OUT/stat-$r-$rep.json"
}
for rep in $(seq 1 "$REPS"); do
    for r in $ROUTES; do
        log "perf stat: $r, run $rep of $REPS"
        with_retry "stat-$r-$rep" stat_workforce "$r" "$rep"
    done
done

stat_nginx() {
    local nreq
    perf_begin stat --per-thread -x, -e "$EVENTS" -p "$NGX_WORKER" -o "$OUT/stat-nginx-1.csv"
    perf_cmd enable
    wrk_run stat-nginx-1 "http://127.0.0.1:$NGX_PORT/v1/employees" 0 "$DURATION"
    perf_cmd disable
    perf_end
    read -r _ _ _ _ nreq <<<"$WRK_LINE"
    python3 "$OUT/pstat.py" "$OUT/stat-nginx-1.csv" "$nreq" nginx 0 0 "$OUT/wrk-stat-nginx-1.txt" \
        >"$OUT/stat-nginx-1.json"
}
log "perf stat: nginx worker (pid $NGX_WORKER), the bytes of list"
with_retry stat-nginx-1 stat_nginx

# ---------------------------------------------------------------- 3. CPU by stage (perf record)
rec_workforce() { # route
    local r=$1 n0 n1
    new_tenant "rec-$r"
    perf_begin record -q -F "$FREQ" --call-graph dwarf,8192 -m 1024 -p "$WF_PID" -o "$OUT/cpu-$r.data"
    n0=$(served "$r")
    perf_cmd enable
    wrk_run "rec-$r" "$BASE${PATHS[$r]}" 1 "$DURATION"
    perf_cmd disable
    n1=$(served "$r")
    perf_end
    echo "$((n1 - n0))" >"$OUT/rec-$r.requests"
}
for r in $ROUTES; do
    log "perf record (cpu-clock, dwarf stacks, ${FREQ} Hz): $r"
    with_retry "rec-$r" rec_workforce "$r"
    perf script -i "$OUT/cpu-$r.data" --no-inline -F comm,tid,ip,sym,dso 2>/dev/null \
        | python3 "$OUT/classify.py" cpu "$(cat "$OUT/rec-$r.requests")" "$FREQ" >"$OUT/cpu-$r.json" \
        || die "classify $r failed"
    perf report -i "$OUT/cpu-$r.data" --no-inline --stdio --no-children --sort dso,sym -g none \
        2>/dev/null | grep -v '^$' | head -80 >"$OUT/report-$r.txt"
done

# ---------------------------------------------------------------- 4. futex calls under load
futex_workforce() { # route
    local r=$1 n0 n1
    new_tenant "futex-$r"
    perf_begin record -q -e syscalls:sys_enter_futex --call-graph dwarf,8192 -m 4096 -p "$WF_PID" \
        -o "$OUT/futex-$r.data"
    n0=$(served "$r")
    perf_cmd enable
    wrk_run "futex-$r" "$BASE${PATHS[$r]}" 1 3s
    perf_cmd disable
    n1=$(served "$r")
    perf_end
    echo "$((n1 - n0))" >"$OUT/futex-$r.requests"
}
for r in $ROUTES; do
    log "perf record syscalls:sys_enter_futex with stacks: $r"
    with_retry "futex-$r" futex_workforce "$r"
    # events lost to the ring buffer make these counts low: the shares by lock are what is used
    perf script -i "$OUT/futex-$r.data" --no-inline -F comm,tid,event,trace,ip,sym,dso 2>/dev/null \
        | python3 "$OUT/classify.py" lock "$(cat "$OUT/futex-$r.requests")" >"$OUT/futex-$r.json"
done

# ---------------------------------------------------------------- 5. locks and allocations (uprobes)
log "adding uprobes ($PROBE_GROUP:*) on $LIBC"
perf probe -q -d "$PROBE_GROUP:*" >/dev/null 2>&1
PROBES_ADDED=1
perf probe -q -x "$LIBC" -a "$PROBE_GROUP:mutex_lock=pthread_mutex_lock mutex=%di:x64" >&2 || die "perf probe failed"
perf probe -q -x "$LIBC" -a "$PROBE_GROUP:mutex_trylock=pthread_mutex_trylock mutex=%di:x64" >&2
perf probe -q -x "$LIBC" -a "$PROBE_GROUP:rwlock_rdlock=pthread_rwlock_rdlock" >&2
perf probe -q -x "$LIBC" -a "$PROBE_GROUP:rwlock_wrlock=pthread_rwlock_wrlock" >&2
perf probe -q -x "$LIBC" -a "$PROBE_GROUP:cond_signal=pthread_cond_signal" >&2
perf probe -q -x "$LIBC" -a "$PROBE_GROUP:cond_broadcast=pthread_cond_broadcast" >&2
perf probe -q -x "$LIBC" -a "$PROBE_GROUP:malloc=malloc" >&2
perf probe -q -x "$LIBC" -a "$PROBE_GROUP:free=free" >&2
perf probe -q -x "$LIBC" -a "$PROBE_GROUP:calloc=calloc" >&2
perf probe -q -x "$LIBC" -a "$PROBE_GROUP:realloc=realloc" >&2
PEV=$(perf probe -l 2>/dev/null | awk -v g="$PROBE_GROUP:" 'index($1, g) == 1 {print $1}' | paste -sd,)
LEV=$(echo "$PEV" | tr , '\n' | grep -E 'lock|cond' | paste -sd,)
for r in $ROUTES; do
    log "uprobe counts over $LOCK_N requests: $r"
    new_tenant "locks-$r"
    python3 "$OUT/client.py" "$WF_PORT" "${PATHS[$r]}" "$KEY" 20 || die "client failed"
    perf_begin stat --per-thread -x, -e "$PEV" -p "$WF_PID" -o "$OUT/probecount-$r.csv"
    n0=$(served "$r")
    perf_cmd enable
    python3 "$OUT/client.py" "$WF_PORT" "${PATHS[$r]}" "$KEY" "$LOCK_N" || die "client failed"
    perf_cmd disable
    n1=$(served "$r")
    perf_end
    [ $((n1 - n0)) = "$LOCK_N" ] || log "warning: $r served $((n1 - n0)) requests, expected $LOCK_N"
    python3 "$OUT/pstat.py" "$OUT/probecount-$r.csv" "$LOCK_N" >"$OUT/probecount-$r.json"

    log "uprobe stacks over $LOCK_STACK_N requests: $r"
    perf_begin record -q -e "$LEV" --call-graph dwarf,8192 -m 8192 -p "$WF_PID" -o "$OUT/locks-$r.data"
    perf_cmd enable
    python3 "$OUT/client.py" "$WF_PORT" "${PATHS[$r]}" "$KEY" "$LOCK_STACK_N" || die "client failed"
    perf_cmd disable
    perf_end
    perf script -i "$OUT/locks-$r.data" --no-inline -F comm,tid,event,trace,ip,sym,dso 2>/dev/null \
        | python3 "$OUT/classify.py" lock "$LOCK_STACK_N" >"$OUT/locks-$r.json"
done
perf probe -q -d "$PROBE_GROUP:*" >/dev/null 2>&1
PROBES_ADDED=0

# ---------------------------------------------------------------- 6. syscalls by site
SEV=""
for s in recvfrom sendmsg fcntl newfstatat getpid futex epoll_wait epoll_ctl read write; do
    SEV="$SEV${SEV:+,}syscalls:sys_enter_$s"
done
for r in $ROUTES; do
    log "syscalls with stacks over $LOCK_STACK_N requests: $r"
    new_tenant "syscalls-$r"
    python3 "$OUT/client.py" "$WF_PORT" "${PATHS[$r]}" "$KEY" 20 || die "client failed"
    perf_begin record -q -e "$SEV" --call-graph dwarf,8192 -m 8192 -p "$WF_PID" -o "$OUT/syscalls-$r.data"
    perf_cmd enable
    python3 "$OUT/client.py" "$WF_PORT" "${PATHS[$r]}" "$KEY" "$LOCK_STACK_N" || die "client failed"
    perf_cmd disable
    perf_end
    perf script -i "$OUT/syscalls-$r.data" --no-inline -F comm,tid,event,trace,ip,sym,dso 2>/dev/null \
        | python3 "$OUT/classify.py" lock "$LOCK_STACK_N" >"$OUT/syscalls-$r.json"
done

# ---------------------------------------------------------------- summary
python3 "$OUT/report.py" "$OUT" "$REPS"
