#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# bench/chat.sh: the chat benchmarks (run at the end of bench/run.sh, or alone from the
# repository root after the build):
#   (a) bench/chat_overhead.py  what blocking POST /v1/chat adds to the model call: the same
#       http.client code against workforce and straight against an in-process asyncio
#       OpenAI-compatible upstream; p50/p99 of both; goal p50 overhead < 1 ms.
#   (b) bench/streams.py  10,000 concurrent POST /v1/chat/stream against a slow upstream (a chunk
#       every 5 s); while they are open: p99 of 500 GET /v1/employees?limit=10 of another org and
#       the server's VmRSS; goals p99 < 20 ms, RSS < 500 MB.
# Everything on 127.0.0.1 on free ports; every process is stopped by its own PID. Python 3
# standard library only. Prints tables with PASS/FAIL; exits non-zero only when something failed
# to run. Tunables (environment): BENCH_BINARY (build/workforce), BENCH_CHAT_N (2000),
# BENCH_STREAMS (10000), BENCH_NOFILE (65536), BENCH_CHAT=0 skips this part.

if [ -z "${BASH_VERSION:-}" ]; then exec bash "$0" "$@"; fi

set -u

BIN=${BENCH_BINARY:-build/workforce}
NOFILE=${BENCH_NOFILE:-65536}
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

[ "${BENCH_CHAT:-1}" = "0" ] && { log "chat benchmarks skipped (BENCH_CHAT=0)"; exit 0; }
command -v python3 >/dev/null 2>&1 || die "python3 not found (the chat benchmarks need it)"
[ -x "$BIN" ] || die "$BIN not found; run make first (from the repository root)"

# Each open stream costs the server two descriptors (client and upstream connections).
hard=$(ulimit -Hn)
if ! ulimit -n "$NOFILE" 2>/dev/null; then
    ulimit -Hn "$NOFILE" 2>/dev/null && ulimit -n "$NOFILE" 2>/dev/null \
        || ulimit -n "$hard" 2>/dev/null
fi
log "open files limit: $(ulimit -n) (hard $(ulimit -Hn); wanted $NOFILE)"

TMP=$(mktemp -d /tmp/workforce-bench-chat.XXXXXX) || die "mktemp failed"

run_py() { # script args...: run in the background so that a TERM reaches it, wait for it
    python3 "$@" &
    PY_PID=$!
    wait "$PY_PID"
    local rc=$?
    PY_PID=""
    return "$rc"
}

echo
echo "workforce chat bench: $(nproc) cores shared by the clients, the upstreams and the server;" \
     "open files limit $(ulimit -n)"
rc=0
mkdir -p "$TMP/a" "$TMP/b"
run_py "$HERE/chat_overhead.py" --bin "$BIN" --tmp "$TMP/a" || { log "chat overhead bench failed"; rc=1; }
run_py "$HERE/streams.py" --bin "$BIN" --tmp "$TMP/b" || { log "streams bench failed"; rc=1; }
exit "$rc"
