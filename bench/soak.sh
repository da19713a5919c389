#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# bench/soak.sh: the soak of bench/soak.py (mixed traffic, kill -9 restarts, no lost writes,
# no 5xx, flat memory and files). SOAK_SECONDS (600), SOAK_CONNECTIONS (64), SOAK_RESTARTS (20).
set -u
cd "$(dirname "$0")/.."
echo
echo "== soak: ${SOAK_SECONDS:-600} s, ${SOAK_CONNECTIONS:-64} connections, ${SOAK_RESTARTS:-20} kill -9 restarts"
python3 bench/soak.py
