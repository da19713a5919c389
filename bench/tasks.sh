#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# bench/tasks.sh: the tasks benchmarks (run at the end of bench/run.sh, or alone from the
# repository root after the build), all in bench/tasks_bench.py, with a test key (builtin engine):
#   (1) runs/s: N one-time tasks created while their employees are offline, then released;
#       N / (last completed_at - first started_at) with the default 4 workers and with 1 worker,
#       against N POST /v1/chat from 4 concurrent clients on the same server (the reference);
#   (2) scheduling latency: p50/p99/max of started_at - created_at of urgent tasks (one every
#       ~10 ms) with an empty queue (the reference) and while a backlog of 10,000 low-priority
#       tasks drains; the backlog's started_at - release and its drain rate.
# Measurements only (no goals). Everything on 127.0.0.1 on free ports; every process is stopped
# by its own PID. Python 3 standard library only. Exits non-zero only when something failed to
# run. Tunables (environment): BENCH_BINARY (build/workforce), BENCH_TASKS_N (2000),
# BENCH_TASKS_BACKLOG (10000), BENCH_TASKS_URGENT (200), BENCH_TASKS_ONE_WORKER (1),
# BENCH_TASKS=0 skips this part.

if [ -z "${BASH_VERSION:-}" ]; then exec bash "$0" "$@"; fi

set -u

BIN=${BENCH_BINARY:-build/workforce}
HERE=$(cd "$(dirname "$0")" && pwd)
TMP=""
PY_PID=""

log() { printf 'bench: %s\n' "$*" >&2; }
die() { printf 'bench: error: %s\n' "$*" >&2; exit 1; }

cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    if [ -n "$PY_PID" ] && kill -0 "$PY_PID" 2>/dev/null; then
        kill -TERM "$PY_PID" 2>/dev/null   # its finally blocks stop its servers by PID
        wait "$PY_PID" 2>/dev/null
    fi
    [ -n "$TMP" ] && [ -d "$TMP" ] && rm -rf "$TMP"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

[ "${BENCH_TASKS:-1}" = "0" ] && { log "tasks benchmarks skipped (BENCH_TASKS=0)"; exit 0; }
command -v python3 >/dev/null 2>&1 || die "python3 not found (the tasks benchmarks need it)"
[ -x "$BIN" ] || die "$BIN not found; run make first (from the repository root)"

TMP=$(mktemp -d /tmp/workforce-bench-tasks.XXXXXX) || die "mktemp failed"

python3 "$HERE/tasks_bench.py" --bin "$BIN" --tmp "$TMP" -n "${BENCH_TASKS_N:-2000}" \
    --backlog "${BENCH_TASKS_BACKLOG:-10000}" --urgent "${BENCH_TASKS_URGENT:-200}" \
    --one-worker "${BENCH_TASKS_ONE_WORKER:-1}" &
PY_PID=$!
wait "$PY_PID"
rc=$?
PY_PID=""
[ "$rc" -eq 0 ] || log "tasks bench failed"
exit "$rc"
