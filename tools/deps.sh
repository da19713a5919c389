#!/bin/sh
# SPDX-License-Identifier: MIT
# Install what the build and the tests need and the machine lacks: Debian packages through
# apt-get (as root), and the pinned npm tools of package-lock.json. Nothing else is downloaded.
# Debian's chromium is the browser of the console's tests and bench (puppeteer-core drives it;
# no browser is downloaded).
set -eu
cd "$(dirname "$0")/.."

PKGS="gcc make pkg-config python3 libmicrohttpd-dev libjansson-dev libsqlite3-dev libssl-dev libcurl4-openssl-dev \
clang libclang-rt-14-dev clang-format libunistring-dev poppler-utils libzip-dev libxml2-dev libseccomp-dev groff pandoc qpdf \
libpq-dev postgresql-15 libhiredis-dev redis-server chromium libargon2-dev"

missing=""
for p in $PKGS; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing="$missing $p"
    fi
done
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    missing="$missing nodejs npm"
fi
if [ -n "$missing" ]; then
    echo "deps: installing$missing"
    if [ "$(id -u)" != 0 ]; then
        echo "deps: run as root (or install:$missing)" >&2
        exit 1
    fi
    export DEBIAN_FRONTEND=noninteractive
    # PostgreSQL is only the tests' (they start their own on a free port): no cluster of the
    # package's own, so nothing starts on port 5432 at install.
    case "$missing" in *postgresql-15*)
        mkdir -p /etc/postgresql-common
        grep -qs '^create_main_cluster' /etc/postgresql-common/createcluster.conf ||
            echo 'create_main_cluster = false' >> /etc/postgresql-common/createcluster.conf ;;
    esac
    # Nor a Redis of the package's own on port 6379: services the install would start are
    # refused (policy-rc.d exit 101) while it runs; the tests start their own redis-server.
    policy=/usr/sbin/policy-rc.d
    own_policy=""
    if [ ! -e "$policy" ]; then
        printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod 755 "$policy" && own_policy=1
    fi
    ok=1
    apt-get update -qq || ok=""
    # shellcheck disable=SC2086
    [ -z "$ok" ] || apt-get install -y -qq $missing >/dev/null || ok=""
    [ -z "$own_policy" ] || rm -f "$policy"
    [ -n "$ok" ] || { echo "deps: apt-get failed" >&2; exit 1; }
fi

# npm tools (OpenAPI lint, mock LLM, SSE client, the OpenAI, MCP and Standard Webhooks clients,
# the typed-client generator and tsc, puppeteer-core and axe-core) and the console's library
# (htm, embedded in the binary), exactly as locked.
if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
    echo "deps: npm ci"
    npm ci --no-audit --no-fund --loglevel=error >/dev/null
fi
