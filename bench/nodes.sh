#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# bench/nodes.sh: the multi-node benchmarks (run at the end of bench/run.sh, or alone from the
# repository root after the build). Starts a throwaway PostgreSQL (tests/pg/pg.sh) and Redis
# (tests/redis/redis.sh) and stops both by their PIDs in a trap; bench/nodes_bench.py does the
# rest, in one run, on one database per configuration:
#   - GET /v1/employees?limit=50 req/s and p99, and blocking POST /v1/chat req/s (mock upstream,
#     bench/llm_upstream.py) with (a) 1 node on SQLite, (b) 1 node on PostgreSQL, (c) 2 nodes on
#     PostgreSQL, (d) 2 nodes on PostgreSQL + Redis (WORKFORCE_REDIS_URL; "n/a" when the server
#     refuses the setting); the ratios (b)/(a) and (c)/(b), the goal (c)/(b) >= 1.6 on reads
#     (PASS/FAIL), with the machine's CPU model and core count;
#   - task runs/s with 1 and with 3 nodes on PostgreSQL (the mock upstream).
# How the load reaches 2 nodes without a load balancer: one wrk, its threads pointed at the nodes
# in turn (bench/nodes.lua, wrk's thread.addr), so one histogram covers every request.
# Prints tables; exits non-zero only when something failed to run. About 2.5 minutes with the
# defaults. Tunables (environment): BENCH_BINARY (build/workforce), BENCH_NODES_DURATION (5s, one
# wrk run), BENCH_NODES_ROUNDS (3 runs per figure, the median shown), BENCH_NODES_WARMUP (2s),
# BENCH_NODES_THREADS (2), BENCH_NODES_CONNECTIONS (64, list), BENCH_NODES_CHAT_CONNECTIONS (16), BENCH_NODES_TASKS_N (1000, 0 skips the tasks part),
# BENCH_NODES_KEEP=1 keeps the temporary directory (logs, wrk outputs; PostgreSQL and Redis are
# stopped all the same), BENCH_NODES=0 skips this part.

if [ -z "${BASH_VERSION:-}" ]; then exec bash "$0" "$@"; fi

set -u

BIN=${BENCH_BINARY:-build/workforce}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
TMP=""
PY_PID=""
PG_DIR=""
REDIS_DIR=""

log() { printf 'bench: %s\n' "$*" >&2; }
die() { printf 'bench: error: %s\n' "$*" >&2; exit 1; }

cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    if [ -n "$PY_PID" ] && kill -0 "$PY_PID" 2>/dev/null; then
        kill -TERM "$PY_PID" 2>/dev/null   # its signal handler stops its nodes by PID
        wait "$PY_PID" 2>/dev/null
    fi
    [ -n "$REDIS_DIR" ] && sh "$ROOT/tests/redis/redis.sh" stop "$REDIS_DIR" >/dev/null 2>&1
    [ -n "$PG_DIR" ] && sh "$ROOT/tests/pg/pg.sh" stop "$PG_DIR" >/dev/null 2>&1
    if [ -n "$TMP" ] && [ -d "$TMP" ]; then
        if [ "${BENCH_NODES_KEEP:-0}" = 1 ]; then
            log "kept $TMP (node logs, wrk outputs: $TMP/run)"
        else
            rm -rf "$TMP"
        fi
    fi
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

[ "${BENCH_NODES:-1}" = "0" ] && { log "nodes benchmarks skipped (BENCH_NODES=0)"; exit 0; }
command -v python3 >/dev/null 2>&1 || die "python3 not found (the nodes benchmarks need it)"
command -v wrk >/dev/null 2>&1 || die "wrk not found (bench/run.sh installs it)"
command -v psql >/dev/null 2>&1 || die "psql not found (sh tools/deps.sh installs PostgreSQL 15)"
[ -x "$BIN" ] || die "$BIN not found; run make first (from the repository root)"

# Under /tmp, readable by all: run as root, PostgreSQL runs as "postgres" and needs its DIR.
TMP=$(mktemp -d /tmp/workforce-bench-nodes.XXXXXX) || die "mktemp failed"
chmod 755 "$TMP"

PG_DIR="$TMP/pg"
PG_URL=$(sh "$ROOT/tests/pg/pg.sh" start "$PG_DIR") || die "PostgreSQL did not start"
log "PostgreSQL at $PG_URL"

REDIS_URL=""
REDIS_WHY=""
if command -v redis-server >/dev/null 2>&1; then
    REDIS_DIR="$TMP/redis"
    REDIS_URL=$(sh "$ROOT/tests/redis/redis.sh" start "$REDIS_DIR") || {
        REDIS_URL=""
        REDIS_WHY="Redis did not start"
    }
    [ -n "$REDIS_URL" ] && log "Redis at $REDIS_URL"
else
    REDIS_WHY="redis-server not installed"
fi

# Their CPU time is the bench's own (nodes_bench.py counts the rest as other processes').
OWN_PIDS=$(head -n 1 "$PG_DIR/data/postmaster.pid" 2>/dev/null)
[ -n "$REDIS_DIR" ] && [ -f "$REDIS_DIR/redis.pid" ] && OWN_PIDS="$OWN_PIDS,$(cat "$REDIS_DIR/redis.pid")"

mkdir -p "$TMP/run"
TASKS_N=${BENCH_NODES_TASKS_N:-1000}
TASKS=1
[ "$TASKS_N" = 0 ] && { TASKS=0; TASKS_N=1; }
python3 "$HERE/nodes_bench.py" --bin "$BIN" --tmp "$TMP/run" --pg "$PG_URL" \
    --redis "$REDIS_URL" --redis-missing "$REDIS_WHY" --own-pids "$OWN_PIDS" \
    --duration "${BENCH_NODES_DURATION:-5s}" --rounds "${BENCH_NODES_ROUNDS:-3}" \
    --warmup "${BENCH_NODES_WARMUP:-2s}" \
    --threads "${BENCH_NODES_THREADS:-2}" --conns "${BENCH_NODES_CONNECTIONS:-64}" \
    --chat-conns "${BENCH_NODES_CHAT_CONNECTIONS:-16}" --tasks-n "$TASKS_N" --tasks "$TASKS" &
PY_PID=$!
wait "$PY_PID"
rc=$?
PY_PID=""
[ "$rc" -eq 0 ] || log "nodes bench failed"
exit "$rc"
