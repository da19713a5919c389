#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# bench/console.sh: the web console's speed in headless Chromium (run at the end of
# bench/run.sh, or alone from the repository root after the build), all measured by
# bench/console.mjs (puppeteer-core from node_modules): the first load of /console/ with a cold
# cache (goal: usable, median of 10, < 1 s on loopback), its bytes as sent (goal: < 300 KB), a
# 1,000-message conversation rendered and scrolled (goals: p95 frame < 50 ms, no long task over
# 200 ms), and the time to render the API reference at /docs. A server of its own with a test
# key, on a free port of 127.0.0.1, stopped by its PID. Without Chromium (`make deps` installs
# it), Node or puppeteer-core the part is skipped with a message, not failed. Exits non-zero only
# when something failed to run. Tunables (environment): BENCH_BINARY (build/workforce),
# CHROMIUM (/usr/bin/chromium), BENCH_CONSOLE_LOADS (10), BENCH_CONSOLE_TURNS (500),
# BENCH_CONSOLE_CLIENTS (4), BENCH_CONSOLE_STEP (200 px a frame), BENCH_CONSOLE_WHEEL (240 px a
# wheel event), BENCH_CONSOLE_DOCS_LOADS (5), BENCH_CONSOLE=0 skips this part.

if [ -z "${BASH_VERSION:-}" ]; then exec bash "$0" "$@"; fi

set -u

BIN=${BENCH_BINARY:-build/workforce}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
# The test tiers' limits out of the way: 500 chat calls in a few seconds, and every page load.
L=1000000/1000000/100000
RATE_LIMITS="starter:$L,manager:$L,agency:$L"
TMP=""
WF_PID=""
NODE_PID=""

log() { printf 'bench: %s\n' "$*" >&2; }
die() { printf 'bench: error: %s\n' "$*" >&2; exit 1; }
# Said in the report (stdout) too, where the tables are read.
skip() {
    printf '\nworkforce bench: the web console: SKIPPED: %s\n' "$*"
    printf 'bench: console benchmark skipped: %s\n' "$*" >&2
    exit 0
}

stop_pid() { # pid name
    local pid=$1
    [ -n "$pid" ] || return 0
    kill -0 "$pid" 2>/dev/null || return 0
    kill -TERM "$pid" 2>/dev/null
    for _ in $(seq 1 100); do
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
    stop_pid "$NODE_PID" node   # puppeteer closes its Chromium on SIGTERM
    stop_pid "$WF_PID" workforce
    if [ -n "$TMP" ] && [ -d "$TMP" ]; then
        if [ "$rc" -ne 0 ] && [ -s "$TMP/workforce.log" ]; then
            log "last lines of the server's log:"
            tail -n 20 "$TMP/workforce.log" >&2
        fi
        rm -rf "$TMP"
    fi
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

[ "${BENCH_CONSOLE:-1}" = "0" ] && skip "BENCH_CONSOLE=0"
[ -x "$BIN" ] || die "$BIN not found; run make first (from the repository root)"
command -v curl >/dev/null 2>&1 || die "curl not found (the console bench needs it)"

# ---------------------------------------------------------------- the browser and its driver
CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
if [ ! -x "$CHROMIUM" ]; then
    c=$(command -v chromium 2>/dev/null || true)
    [ -n "$c" ] && CHROMIUM=$c
fi
[ -x "$CHROMIUM" ] || skip "Chromium not found at $CHROMIUM (install Debian's chromium" \
    "package, as make deps does, or set CHROMIUM=/path/to/chrome)"
command -v node >/dev/null 2>&1 || skip "node not found (make deps installs it)"
[ -f "$ROOT/node_modules/puppeteer-core/package.json" ] ||
    skip "node_modules/puppeteer-core not found (make deps runs npm ci)"

TMP=$(mktemp -d /tmp/workforce-bench-console.XXXXXX) || die "mktemp failed"

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])'
}

# ---------------------------------------------------------------- the server
PORT=$(free_port) || die "no free port found"
DB="$TMP/db/workforce.db"
# Only our variables reach the server (any unknown WORKFORCE_* stops serve).
WF_ENV=(env)
for v in $(compgen -e | grep '^WORKFORCE_' || true); do WF_ENV+=(-u "$v"); done
WF_ENV+=(WORKFORCE_RATE_LIMITS="$RATE_LIMITS")

KEY=$("${WF_ENV[@]}" "$BIN" --database "$DB" keys create --org bench-console --tier agency \
      --mode test 2>"$TMP/keys.err") || { cat "$TMP/keys.err" >&2; die "keys create failed"; }
KEY=${KEY%%[[:space:]]*}
[ -n "$KEY" ] || die "keys create printed no key"

log "console: starting workforce on 127.0.0.1:$PORT"
"${WF_ENV[@]}" "$BIN" --database "$DB" serve --listen "127.0.0.1:$PORT" \
    >"$TMP/workforce.log" 2>&1 &
WF_PID=$!
ok=""
for _ in $(seq 1 600); do
    kill -0 "$WF_PID" 2>/dev/null || die "workforce exited before it was ready"
    if [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/healthz")" = 200 ]; then
        ok=1
        break
    fi
    sleep 0.05
done
[ -n "$ok" ] || die "workforce not ready after 30 s"

# ---------------------------------------------------------------- the browser part
MACHINE="$(lscpu | sed -n 's/^Model name: *//p' | head -1)"
MACHINE="$MACHINE, $(nproc) cores shared by the server and the browser"
WF_URL="http://127.0.0.1:$PORT" WF_KEY="$KEY" CHROMIUM="$CHROMIUM" MACHINE="$MACHINE" \
    node "$HERE/console.mjs" &
NODE_PID=$!
wait "$NODE_PID"
rc=$?
NODE_PID=""
kill -0 "$WF_PID" 2>/dev/null || { log "workforce died during the console bench"; rc=1; }
[ "$rc" -eq 0 ] || log "console bench failed"
exit "$rc"
