#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# bench/ledger.sh: what the ledger costs (issue 29), in bench/ledger_bench.py: blocking
# POST /v1/chat with its ledger entry against the same server built without entries
# (-DWORKFORCE_BENCH_NO_LEDGER, built here; goal: within 10%, sequential and 8 clients), and
# GET /v1/account/usage over a ledger of 1,000,000 entries written through the store's chat path
# (bench/ledger_bench.c, built here; goal: < 50 ms). Run at the end of bench/run.sh, or alone
# from the repository root after the build. Tunables (environment): BENCH_BINARY
# (build/workforce), BENCH_LEDGER_ROUNDS (31), BENCH_LEDGER_SEQ (100 sequential chats a round),
# BENCH_LEDGER_CONC (25 chats per client a round, 8 clients), BENCH_LEDGER_ENTRIES (1000000),
# BENCH_LEDGER_REQUESTS (50); BENCH_LEDGER=0 skips this part.

if [ -z "${BASH_VERSION:-}" ]; then exec bash "$0" "$@"; fi
set -u
[ "${BENCH_LEDGER:-1}" = "0" ] && exit 0
command -v python3 >/dev/null 2>&1 || { echo "bench: python3 is missing" >&2; exit 1; }
OUT=build/bench
mkdir -p "$OUT"
make --no-print-directory -s build/libworkforce.a >&2 || exit 1
PKGS=$(sed -n 's/^PKGS := //p' Makefile) # the Makefile's list
# shellcheck disable=SC2046,SC2086
${CC:-gcc} -std=c17 -D_GNU_SOURCE -O2 -g -Wall -Wextra -Werror $(pkg-config --cflags $PKGS) \
    -o "$OUT/ledger_bench" bench/ledger_bench.c build/libworkforce.a \
    $(pkg-config --libs $PKGS) -lunistring -lpthread -lm || exit 1
# the reference server of the chat: the same sources built without ledger entries
make --no-print-directory -s OUT=build/bench-noledger CFLAGS=-DWORKFORCE_BENCH_NO_LEDGER \
    build/bench-noledger/workforce >&2 || exit 1
TMP=$(mktemp -d /tmp/workforce-bench-ledger.XXXXXX) || exit 1
# The ledger of the reads is written on tmpfs when there is one (no flush to wait for: the
# seeding is the slow part of this bench; the reads come from the page cache either way).
SEED=$(mktemp -d /dev/shm/workforce-bench-ledger.XXXXXX 2>/dev/null) || SEED=""
trap 'rm -rf "$TMP" ${SEED:+"$SEED"}' EXIT
python3 bench/ledger_bench.py --bin "${BENCH_BINARY:-build/workforce}" \
    --noledger-bin build/bench-noledger/workforce --seed-bin "$OUT/ledger_bench" --tmp "$TMP" \
    --seed-dir "${SEED:-$TMP}" \
    --rounds "${BENCH_LEDGER_ROUNDS:-31}" --seq "${BENCH_LEDGER_SEQ:-100}" \
    --conc "${BENCH_LEDGER_CONC:-25}" --entries "${BENCH_LEDGER_ENTRIES:-1000000}" \
    --requests "${BENCH_LEDGER_REQUESTS:-50}"
