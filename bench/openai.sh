#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# bench/openai.sh: chat through the OpenAI-compatible door (POST /v1/openai/chat/completions)
# against POST /v1/chat, in the same run, on the same server, against the same mock upstream
# (bench/openai_bench.py; run at the end of bench/run.sh, or alone from the repository root
# after the build). Goal: the door within 5% of chat (p50 latency and requests per second),
# blocking and streamed, sequential and concurrent; PASS/FAIL per mode. Python 3 standard
# library only; every process is stopped by its own PID. Exits non-zero only when something
# failed to run. Tunables (environment): BENCH_BINARY (build/workforce), BENCH_OPENAI_N (4000),
# BENCH_OPENAI=0 skips this part.

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
        kill -TERM "$PY_PID" 2>/dev/null   # its own finally blocks stop its servers by PID
        wait "$PY_PID" 2>/dev/null
    fi
    [ -n "$TMP" ] && [ -d "$TMP" ] && rm -rf "$TMP"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

[ "${BENCH_OPENAI:-1}" = "0" ] && { log "openai door benchmark skipped (BENCH_OPENAI=0)"; exit 0; }
command -v python3 >/dev/null 2>&1 || die "python3 not found (the openai bench needs it)"
[ -x "$BIN" ] || die "$BIN not found; run make first (from the repository root)"

TMP=$(mktemp -d /tmp/workforce-bench-openai.XXXXXX) || die "mktemp failed"
python3 "$HERE/openai_bench.py" --bin "$BIN" --tmp "$TMP" &
PY_PID=$!
wait "$PY_PID"
rc=$?
PY_PID=""
[ "$rc" -eq 0 ] || log "openai door bench failed"
exit "$rc"
