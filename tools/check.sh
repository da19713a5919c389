#!/bin/sh
# SPDX-License-Identifier: MIT
# `make check`: the source rules a compiler does not enforce (style.md G6): clang-format
# cleanliness, the banned C library functions (curl checksrc style), and the module edges of
# tools/modules.txt (dependencies point down; each third-party header has one owner).
set -u
cd "$(dirname "$0")/.."
n=0
fail=0
files=$(find src tests/unit tests/fuzz -name '*.[ch]' | sort)

n=$((n + 1))
bad=""
for f in $files; do
    if ! clang-format --dry-run --Werror "$f" >/dev/null 2>&1; then
        bad="$bad $f"
    fi
done
if [ -z "$bad" ]; then
    echo "ok $n - clang-format"
else
    echo "not ok $n - clang-format:$bad"
    fail=$((fail + 1))
fi

n=$((n + 1))
hits=$(grep -nE '\b(sprintf|strcpy|strcat|strncpy|strtok|gets|atoi|atol|system)\(' $files \
    | grep -vE '(snprintf|vsnprintf)\(' || true)
if [ -z "$hits" ]; then
    echo "ok $n - no banned functions"
else
    echo "not ok $n - banned functions:"
    echo "$hits" | sed 's/^/#   /'
    fail=$((fail + 1))
fi

out=$(python3 tools/check_modules.py "$n")
echo "$out"
k=$(echo "$out" | grep -c '^ok ' || true)
f=$(echo "$out" | grep -c '^not ok ' || true)
if [ "$((k + f))" -eq 0 ]; then
    n=$((n + 1))
    echo "not ok $n - tools/check_modules.py printed no result"
    fail=$((fail + 1))
fi
n=$((n + k + f))
fail=$((fail + f))
echo "check: $((n - fail)) passed, $fail failed"
[ "$fail" -eq 0 ]
