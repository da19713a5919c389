#!/usr/bin/env bash
# OpenAPI checks, run from the repository root: tests/openapi/run.sh
#   1. docs/openapi.json is what tools/gen_openapi.py generates (not stale)
#   2. redocly lint (recommended ruleset, redocly.yaml) reports no errors
#   3. the document describes the binary's route table, request bindings and error table
#      (tests/openapi/check_routes.py over `build/workforce routes`)
#   4. the document has none of the shapes that typed-client generators turn into types a
#      strict program cannot use (tests/openapi/check_client.py)
#   5. docs/settings.json and the README's Settings table are the binary's settings table
#      (tools/gen_settings.py --check over `build/workforce config --json --defaults`)
#   6. docs/api-facts.json, from which the document is generated, is the binary's facts
#      (tools/gen_api_facts.py --check over `build/workforce describe`)
#   7. docs/roles.md, the table of route x role, is the route table's (tools/gen_roles.py)
# Needs python3 and the pinned npm tools (`npm ci` once; works offline afterwards).
# Prints TAP lines and a summary; exits 0 when all passed, else 1.
set -u

cd "$(dirname "$0")/../.." || exit 1

export REDOCLY_TELEMETRY=off
export REDOCLY_SUPPRESS_UPDATE_NOTICE=true

n=0
passed=0
failed=0

# check DESCRIPTION COMMAND...: run COMMAND, print its output as TAP comments
# when it fails, and count the result.
check() {
    local name=$1 out rc
    shift
    n=$((n + 1))
    out=$("$@" 2>&1)
    rc=$?
    if [ "$rc" -eq 0 ]; then
        echo "ok $n - $name"
        # Keep warnings visible (they do not fail the check).
        printf '%s\n' "$out" | grep -E '^ +[0-9]+:[0-9]+ +warning ' | sed 's/^ */# /'
        passed=$((passed + 1))
    else
        echo "not ok $n - $name"
        printf '%s\n' "$out" | sed 's/^/# /'
        failed=$((failed + 1))
    fi
}

echo "1..7"
check "openapi.json is up to date" python3 tools/gen_openapi.py --check
if [ -x node_modules/.bin/redocly ]; then
    check "redocly lint" npx --no-install redocly lint --format=stylish docs/openapi.json
else
    n=$((n + 1))
    echo "not ok $n - redocly lint"
    echo "# node_modules/.bin/redocly is missing: run 'npm ci' in the repository root"
    failed=$((failed + 1))
fi

check "the document agrees with the route table" python3 tests/openapi/check_routes.py
check "the document generates a usable typed client" python3 tests/openapi/check_client.py
check "the settings reference is the settings table" python3 tools/gen_settings.py --check
check "docs/api-facts.json is the binary's facts" python3 tools/gen_api_facts.py --check
check "docs/roles.md is the route table's roles" python3 tools/gen_roles.py --check

echo "openapi: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
