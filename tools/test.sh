#!/bin/sh
# SPDX-License-Identifier: MIT
# `make test` after the builds: run every suite, keep each one's output in build/test-logs,
# and end with one line "N passed, N failed" summing all of them (", N skipped" when a suite
# skipped some: a TAP "# SKIP" line or a suite's own count).
#   unit (TAP)         build/tests/*, the ASan+UBSan build, and the TSan build of ratelimit
#   fuzz-replay (TAP)  the committed corpora through both builds
#   http (python)      the black-box suite against build/workforce and the ASan+UBSan binary,
#                      and against two nodes of build/workforce on a PostgreSQL of its own,
#                      with the shared limits in it and then in a Redis of its own
#   browser (node)     the web console in Debian's Chromium (puppeteer-core) against
#                      build/workforce: flows, inert user content, a11y (axe-core), headers
#   openapi            generated document up to date + redocly lint
#   check              clang-format + banned functions
set -u
cd "$(dirname "$0")/.."
SAN=build/san-address,undefined
LOGS=build/test-logs
rm -rf "$LOGS" && mkdir -p "$LOGS"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export TSAN_OPTIONS=halt_on_error=1

passed=0
failed=0
skipped=0
add_tap() { # name log: a TAP "ok N - ... # SKIP why" (any case) is skipped, not passed
    s=$(grep -Ec '^ok [^#]*#[[:space:]]*[Ss][Kk][Ii][Pp]' "$2" || true)
    p=$(($(grep -c '^ok ' "$2" || true) - s))
    f=$(grep -c '^not ok ' "$2" || true)
    passed=$((passed + p))
    failed=$((failed + f))
    skipped=$((skipped + s))
    if [ "$s" -gt 0 ]; then
        echo "$1: $p passed, $f failed, $s skipped"
    else
        echo "$1: $p passed, $f failed"
    fi
}
add_line() { # name log: reads the "name: N passed, N failed" line the suite printed
    line=$(grep -E '^[a-z-]+: [0-9]+ passed, [0-9]+ failed' "$2" | tail -n 1)
    if [ -z "$line" ]; then
        echo "$1: no result line (see $2)"
        failed=$((failed + 1))
        return
    fi
    p=$(echo "$line" | sed -E 's/.*: ([0-9]+) passed.*/\1/')
    f=$(echo "$line" | sed -E 's/.* ([0-9]+) failed.*/\1/')
    s=0
    case "$line" in *skipped*) s=$(echo "$line" | sed -E 's/.* ([0-9]+) skipped.*/\1/') ;; esac
    passed=$((passed + p))
    failed=$((failed + f))
    skipped=$((skipped + s))
    echo "$line"
}
run_tap_bins() { # name dir
    log="$LOGS/$1.log"
    : >"$log"
    for t in "$2"/test_*; do
        [ -x "$t" ] || continue
        if ! "$t" >>"$log" 2>&1; then
            # a crash or a non-zero exit without a 'not ok' line still counts as a failure
            if ! grep -q "^not ok .*$(basename "$t")" "$log"; then
                echo "not ok - $(basename "$t") exited with an error" >>"$log"
            fi
        fi
    done
    add_tap "$1" "$log"
}
run_replay() { # name dir
    log="$LOGS/$1.log"
    : >"$log"
    for t in "$2"/fuzz_*; do
        [ -x "$t" ] || continue
        name=$(basename "$t" | sed 's/^fuzz_//')
        "$t" "tests/fuzz/corpus/$name" >>"$log" 2>&1 || echo "not ok - $(basename "$t") crashed" >>"$log"
    done
    add_tap "$1" "$log"
}

# A PostgreSQL of the tests' own (tests/pg/pg.sh: initdb in a temp dir, 127.0.0.1, a free
# port), stopped by its PID on exit: the store's driver test runs on it as well as on SQLite.
PG_DIR=$(mktemp -d /tmp/workforce-pg.XXXXXX)
REDIS_DIR=$(mktemp -d /tmp/workforce-redis.XXXXXX)
trap 'sh tests/pg/pg.sh stop "$PG_DIR" >/dev/null 2>&1; rm -rf "$PG_DIR";
      sh tests/redis/redis.sh stop "$REDIS_DIR" >/dev/null 2>&1; rm -rf "$REDIS_DIR"' EXIT INT TERM
if WORKFORCE_TEST_PG_URL=$(sh tests/pg/pg.sh start "$PG_DIR" 2>"$LOGS/pg-start.log"); then
    export WORKFORCE_TEST_PG_URL
else
    echo "postgres: cannot start a test server (see $LOGS/pg-start.log)"
    failed=$((failed + 1))
fi

run_tap_bins unit build/tests
run_tap_bins unit-asan "$SAN/tests"
run_tap_bins unit-tsan build/san-thread/tests
run_replay fuzz-replay build/fuzz-replay
run_replay fuzz-replay-asan "$SAN/fuzz-replay"

# The release run includes the slow tests (the 15 s SSE ping); the ASan run skips them.
WORKFORCE_SLOW_TESTS=1 python3 tests/http/run.py >"$LOGS/http.log" 2>&1
add_line http "$LOGS/http.log"
WORKFORCE_BIN="$SAN/workforce" python3 tests/http/run.py >"$LOGS/http-asan.log" 2>&1
sed -i 's/^http: /http-asan: /' "$LOGS/http-asan.log"
add_line http-asan "$LOGS/http-asan.log"

# The same suite against two nodes on one PostgreSQL (the tests' own, started above), each
# request going to the next node (tests/http/harness.py): once with the shared rate limits in
# the database, once in a Redis of the tests' own (tests/redis/redis.sh).
if [ -n "${WORKFORCE_TEST_PG_URL:-}" ]; then
    WORKFORCE_HTTP_PG_URL=$WORKFORCE_TEST_PG_URL python3 tests/http/run.py >"$LOGS/http-pg.log" 2>&1
    sed -i 's/^http: /http-pg: /' "$LOGS/http-pg.log"
    add_line http-pg "$LOGS/http-pg.log"
    if REDIS_URL=$(sh tests/redis/redis.sh start "$REDIS_DIR" 2>"$LOGS/redis-start.log"); then
        WORKFORCE_HTTP_PG_URL=$WORKFORCE_TEST_PG_URL WORKFORCE_HTTP_REDIS_URL=$REDIS_URL \
            python3 tests/http/run.py >"$LOGS/http-pg-redis.log" 2>&1
        sed -i 's/^http: /http-pg-redis: /' "$LOGS/http-pg-redis.log"
        add_line http-pg-redis "$LOGS/http-pg-redis.log"
        sh tests/redis/redis.sh stop "$REDIS_DIR" >/dev/null 2>&1
    else
        echo "redis: cannot start a test server (see $LOGS/redis-start.log)"
        failed=$((failed + 1))
    fi
fi

# The console in a browser (tests/browser/console.mjs): servers of build/workforce of its own,
# screenshots in build/test-artifacts/console/. `timeout` bounds a hung browser (the suite then
# stops its servers and prints a failing result line; no line at all counts as a failure).
timeout -k 15 600 node tests/browser/console.mjs >"$LOGS/browser.log" 2>&1
add_line browser "$LOGS/browser.log"

bash tests/openapi/run.sh >"$LOGS/openapi.log" 2>&1
add_line openapi "$LOGS/openapi.log"

sh tools/check.sh >"$LOGS/check.log" 2>&1
add_line check "$LOGS/check.log"

# What failed, in the output itself (CI keeps only what is printed): each failing test with the
# line that ended it, cut to 300 characters.
failures() { # log
    awk '
        /^not ok / { print "  " substr($0, 1, 300); next }
        /^(FAIL|ERROR): / { if (head != "") print "  " head (last != "" ? ": " last : ""); head = $0; last = ""; inblk = 1; next }
        inblk && /^(=+|-+)$/ && last != "" { print "  " head ": " last; head = ""; last = ""; inblk = 0; next }
        inblk && /^[A-Za-z_.]*(Error|Exception|Interrupt|Exit)(:|$)/ { last = substr($0, 1, 300) }
        END { if (head != "") print "  " head (last != "" ? ": " last : "") }
    ' "$1"
}
if [ "$failed" -gt 0 ]; then
    echo "failures: see the logs in $LOGS:"
    for log in $(grep -l -E '^not ok|^FAIL|^ERROR' "$LOGS"/*.log 2>/dev/null); do
        echo "  $log"
        failures "$log" | head -n 20
    done
fi
if [ "$skipped" -gt 0 ]; then
    echo "$passed passed, $failed failed, $skipped skipped"
else
    echo "$passed passed, $failed failed"
fi
[ "$failed" -eq 0 ]
