#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# bench/agent.sh: the tool loop's own cost per step (issue 27), in bench/agent_bench.py: plain
# chat turns against turns of K tool steps, each with its model time replayed and taken away
# (goal: p50 < 1 ms per step). Run at the end of bench/run.sh, or alone from the repository
# root after the build. Tunables (environment): BENCH_BINARY (build/workforce),
# BENCH_AGENT_PAIRS (200), BENCH_AGENT_STEPS (4), BENCH_AGENT=0 skips this part.

if [ -z "${BASH_VERSION:-}" ]; then exec bash "$0" "$@"; fi
set -u
[ "${BENCH_AGENT:-1}" = "0" ] && exit 0
TMP=$(mktemp -d /tmp/workforce-bench-agent.XXXXXX) || exit 1
trap 'rm -rf "$TMP"' EXIT
python3 bench/agent_bench.py --bin "${BENCH_BINARY:-build/workforce}" --tmp "$TMP" \
    -n "${BENCH_AGENT_PAIRS:-200}" -k "${BENCH_AGENT_STEPS:-4}"
