#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# bench/people.sh: what people cost (issue 28), in bench/people_bench.py: GET /v1/employees with
# a person's session against the same with an API key (goal: within 10%), and a write with its
# audit entry against the write alone (bench/audit_bench.c, built here; goal: within 10%). Run
# at the end of bench/run.sh, or alone from the repository root after the build. Tunables
# (environment): BENCH_BINARY (build/workforce), BENCH_PEOPLE_THREADS (2),
# BENCH_PEOPLE_CONNECTIONS (32), BENCH_PEOPLE_SECONDS (5), BENCH_PEOPLE_ROUNDS (3);
# BENCH_PEOPLE=0 skips this part.

if [ -z "${BASH_VERSION:-}" ]; then exec bash "$0" "$@"; fi
set -u
[ "${BENCH_PEOPLE:-1}" = "0" ] && exit 0
command -v wrk >/dev/null 2>&1 || { echo "bench: wrk is missing (bench/run.sh installs it)" >&2; exit 1; }
OUT=build/bench
mkdir -p "$OUT"
make --no-print-directory -s build/libworkforce.a >&2 || exit 1
PKGS=$(sed -n 's/^PKGS := //p' Makefile) # the Makefile's list
# shellcheck disable=SC2046,SC2086
${CC:-gcc} -std=c17 -D_GNU_SOURCE -O2 -g -Wall -Wextra -Werror $(pkg-config --cflags $PKGS) \
    -o "$OUT/audit_bench" bench/audit_bench.c build/libworkforce.a \
    $(pkg-config --libs $PKGS) -lunistring -lpthread -lm || exit 1
# the reference server of the write: the same sources built without audit entries
make --no-print-directory -s OUT=build/bench-noaudit CFLAGS=-DWORKFORCE_BENCH_NO_AUDIT \
    build/bench-noaudit/workforce >&2 || exit 1
TMP=$(mktemp -d /tmp/workforce-bench-people.XXXXXX) || exit 1
trap 'rm -rf "$TMP"' EXIT
python3 bench/people_bench.py --bin "${BENCH_BINARY:-build/workforce}" --tmp "$TMP" \
    --audit-bench "$OUT/audit_bench" --noaudit-bin build/bench-noaudit/workforce --threads "${BENCH_PEOPLE_THREADS:-2}" \
    --connections "${BENCH_PEOPLE_CONNECTIONS:-32}" --seconds "${BENCH_PEOPLE_SECONDS:-5}" \
    --rounds "${BENCH_PEOPLE_ROUNDS:-3}"
