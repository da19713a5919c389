#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# bench/fairness.sh: fair shares between organizations (issue 26; run at the end of
# bench/run.sh, or alone from the repository root after the build), all in
# bench/fairness_bench.py: organization A's webhook delivery beside B's 16 dead endpoints (goal:
# p99 < 1 s), A's one-step task beside B's 10 long workflow runs (goal: < 1.5 s), and another
# organization's chat p99 with 200,000 paused deliveries stored (goal: within 20% of the
# reference measured in the same run). Everything on 127.0.0.1 on free ports; every process is
# stopped by its own PID. Tunables (environment): BENCH_BINARY (build/workforce),
# BENCH_FAIRNESS_PARTS (webhooks,tasks,chat), BENCH_FAIRNESS_SAMPLES (20),
# BENCH_FAIRNESS=0 skips this part.

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
        kill -TERM "$PY_PID" 2>/dev/null
        wait "$PY_PID" 2>/dev/null
    fi
    [ -n "$TMP" ] && [ -d "$TMP" ] && rm -rf "$TMP"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

if [ "${BENCH_FAIRNESS:-1}" = "0" ]; then
    log "fairness benchmarks skipped (BENCH_FAIRNESS=0)"
    exit 0
fi
command -v python3 >/dev/null 2>&1 || die "python3 not found (the fairness benchmarks need it)"
[ -x "$BIN" ] || die "$BIN not found; run make first (from the repository root)"

TMP=$(mktemp -d /tmp/workforce-bench-fairness.XXXXXX) || die "mktemp failed"

python3 "$HERE/fairness_bench.py" --bin "$BIN" --tmp "$TMP" \
    --parts "${BENCH_FAIRNESS_PARTS:-webhooks,tasks,chat}" \
    --samples "${BENCH_FAIRNESS_SAMPLES:-20}" &
PY_PID=$!
wait "$PY_PID"
rc=$?
PY_PID=""
[ "$rc" -eq 0 ] || log "fairness bench failed"
exit "$rc"
