#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# bench/webhooks.sh: outbound webhook delivery (run at the end of bench/run.sh, or alone from the
# repository root after the build), all in bench/webhooks_bench.py: the time from an event to
# its first delivery attempt with an idle outbox (goal: p99 < 100 ms), and deliveries per second
# to a local receiver. Everything on 127.0.0.1 on free ports; every process is stopped by its
# own PID. Tunables (environment): BENCH_BINARY (build/workforce), BENCH_WEBHOOKS_N (50),
# BENCH_WEBHOOKS_M (100), BENCH_WEBHOOKS=0 skips this part.

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

[ "${BENCH_WEBHOOKS:-1}" = "0" ] && { log "webhook benchmarks skipped (BENCH_WEBHOOKS=0)"; exit 0; }
command -v python3 >/dev/null 2>&1 || die "python3 not found (the webhook benchmarks need it)"
[ -x "$BIN" ] || die "$BIN not found; run make first (from the repository root)"

TMP=$(mktemp -d /tmp/workforce-bench-webhooks.XXXXXX) || die "mktemp failed"

python3 "$HERE/webhooks_bench.py" --bin "$BIN" --tmp "$TMP" -n "${BENCH_WEBHOOKS_N:-50}" \
    -m "${BENCH_WEBHOOKS_M:-100}" &
PY_PID=$!
wait "$PY_PID"
rc=$?
PY_PID=""
[ "$rc" -eq 0 ] || log "webhooks bench failed"
exit "$rc"
