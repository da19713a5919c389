#!/bin/sh
# SPDX-License-Identifier: MIT
#
# fuzz.sh SECONDS: libFuzzer campaigns, SECONDS each, for every tests/fuzz/fuzz_<name>.c.
#
#   - installs clang and libclang-rt-14-dev (libFuzzer) with apt when missing;
#   - runs `make` so build/gen/*.c exist, then builds each target with clang
#     -fsanitize=fuzzer,address,undefined straight from the sources (src/ without main.c, plus
#     build/gen/*.c) into build/fuzz/bin/fuzz_<name>;
#   - fuzzes a fresh copy of tests/fuzz/corpus/<name> in build/fuzz/work/<name> with the dict
#     tests/fuzz/<name>.dict. New interesting inputs stay there: they are NOT copied back, so
#     promote one by hand (cp build/fuzz/work/<name>/<file> tests/fuzz/corpus/<name>/<meaning>);
#   - crash, leak, timeout and OOM inputs land in build/fuzz/crashes/<name>/, the full log in
#     build/fuzz/log/<name>.log.
#
# Prints one summary line per target (executions, exec/s, coverage, new units) and exits 1
# when any target crashed (or did not build), 0 otherwise. FUZZ_TARGETS="cursor query" limits
# the run to those targets; FUZZ_ARGS adds libFuzzer flags.
set -u

secs=${1:-60}
case $secs in
'' | *[!0-9]*)
    echo "usage: sh tools/fuzz.sh SECONDS" >&2
    exit 2
    ;;
esac

cd "$(dirname "$0")/.." || exit 2

# the packages are the Makefile's (one list: a library added there is linked here too)
PKGS=$(sed -n 's/^PKGS := //p' Makefile)
OUT=build/fuzz

# ---- Toolchain ----
as_root() {
    if [ "$(id -u)" -eq 0 ]; then
        "$@"
    elif command -v sudo >/dev/null 2>&1; then
        sudo "$@"
    else
        echo "fuzz.sh: need root (or sudo) to run: $*" >&2
        return 1
    fi
}

missing=""
command -v clang >/dev/null 2>&1 || missing="$missing clang"
dpkg -s libclang-rt-14-dev >/dev/null 2>&1 || missing="$missing libclang-rt-14-dev"
if [ -n "$missing" ]; then
    echo "fuzz.sh: installing$missing"
    as_root apt-get update || exit 1
    # shellcheck disable=SC2086
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y $missing || exit 1
fi

# ---- Generated sources ----
make --no-print-directory all || {
    echo "fuzz.sh: make failed" >&2
    exit 1
}

LIB_SRC=$(find src -name '*.c' ! -path src/main.c | sort)
GEN_SRC=$(ls build/gen/*.c)
CFLAGS="-std=c17 -D_GNU_SOURCE -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
PKG_CFLAGS="$(pkg-config --cflags $PKGS) -Isrc" # build/gen/console.c includes api/console_assets.h
PKG_LIBS=$(pkg-config --libs $PKGS)

mkdir -p "$OUT/bin" "$OUT/work" "$OUT/crashes" "$OUT/log"

if [ -n "${FUZZ_TARGETS:-}" ]; then
    targets=""
    for t in $FUZZ_TARGETS; do
        targets="$targets tests/fuzz/fuzz_$t.c"
    done
else
    targets=$(ls tests/fuzz/fuzz_*.c)
fi

# Last value of 'key:' (or 'key: ') on libFuzzer's progress lines, e.g. "cov" or "ft".
last_stat() {
    grep -E "^#[0-9]+" "$2" | tail -n 1 | sed -n "s/.* $1: \([0-9][0-9]*\).*/\1/p"
}
final_stat() {
    sed -n "s/^stat::$1: *\([0-9][0-9]*\).*/\1/p" "$2" | tail -n 1
}

failed=0
summary=""
for src in $targets; do
    prog=$(basename "$src" .c)
    name=${prog#fuzz_}
    bin=$OUT/bin/$prog
    log=$OUT/log/$name.log
    work=$OUT/work/$name
    crashes=$OUT/crashes/$name
    dict=tests/fuzz/$name.dict

    echo "fuzz.sh: building $prog"
    # shellcheck disable=SC2086
    if ! clang $CFLAGS $PKG_CFLAGS -o "$bin" "$src" $LIB_SRC $GEN_SRC $PKG_LIBS -lunistring -lpthread -lm; then
        summary="$summary
not ok - $name: build failed"
        failed=1
        continue
    fi

    rm -rf "$work" "$crashes"
    mkdir -p "$work" "$crashes"
    if [ -d "tests/fuzz/corpus/$name" ]; then
        cp -R "tests/fuzz/corpus/$name/." "$work/"
    fi
    set -- -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
        -artifact_prefix="$crashes/"
    [ -f "$dict" ] && set -- "$@" -dict="$dict"

    echo "fuzz.sh: fuzzing $prog for ${secs}s (corpus $work)"
    # shellcheck disable=SC2086
    ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0} \
        UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
        "$bin" "$@" ${FUZZ_ARGS:-} "$work" >"$log" 2>&1
    rc=$?

    execs=$(final_stat number_of_executed_units "$log")
    rate=$(final_stat average_exec_per_sec "$log")
    added=$(final_stat new_units_added "$log")
    cov=$(last_stat cov "$log")
    ft=$(last_stat ft "$log")
    corp=$(ls "$work" | wc -l | tr -d ' ')
    line="$name: ${execs:-?} execs, ${rate:-?} exec/s, cov ${cov:-?}, ft ${ft:-?}, ${added:-?} new units, corpus $corp"
    artifacts=$(ls "$crashes" 2>/dev/null)
    if [ "$rc" -ne 0 ] || [ -n "$artifacts" ]; then
        failed=1
        summary="$summary
not ok - $line (exit $rc)"
        echo "fuzz.sh: $prog FAILED (exit $rc); log $log"
        grep -E "ERROR: |SUMMARY: |check failed|runtime error|Test unit written" "$log" | head -n 20
        for a in $artifacts; do
            echo "fuzz.sh:   input $crashes/$a ($(wc -c <"$crashes/$a" | tr -d ' ') bytes)"
            echo "fuzz.sh:   replay: build/fuzz-replay/$prog $crashes/$a"
        done
    else
        summary="$summary
ok - $line"
    fi
done

echo "fuzz.sh: results (${secs}s per target; new inputs stay in $OUT/work, not copied back)$summary"
exit $failed
