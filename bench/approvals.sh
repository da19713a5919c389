#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# bench/approvals.sh: what a chat turn that waits for a person's approval costs (issue 27), in
# bench/approvals_bench.py: the time from POST /v1/approvals/{id}/approve to the turn's next
# model call, on an idle server, against a plain turn's model call in the same run (goal: p50 <
# 50 ms); and the server's RSS and threads before and after 10,000 paused turns, against as
# many turns that end (goals: < 20 MiB added, no thread added). Run at the end of bench/run.sh,
# or alone from the repository root after the build. Tunables (environment): BENCH_BINARY
# (build/workforce), BENCH_APPROVALS_PARTS (resume,paused), BENCH_APPROVALS_TURNS (200),
# BENCH_APPROVALS_PAUSED (10000), BENCH_APPROVALS_CLIENTS (4), BENCH_APPROVALS_EMPLOYEES (8),
# BENCH_APPROVALS=0 skips this part.

if [ -z "${BASH_VERSION:-}" ]; then exec bash "$0" "$@"; fi
set -u
[ "${BENCH_APPROVALS:-1}" = "0" ] && exit 0
TMP=$(mktemp -d /tmp/workforce-bench-approvals.XXXXXX) || exit 1
trap 'rm -rf "$TMP"' EXIT
python3 bench/approvals_bench.py --bin "${BENCH_BINARY:-build/workforce}" --tmp "$TMP" \
    --parts "${BENCH_APPROVALS_PARTS:-resume,paused}" -n "${BENCH_APPROVALS_TURNS:-200}" \
    --paused "${BENCH_APPROVALS_PAUSED:-10000}" --clients "${BENCH_APPROVALS_CLIENTS:-4}" \
    --employees "${BENCH_APPROVALS_EMPLOYEES:-8}"
