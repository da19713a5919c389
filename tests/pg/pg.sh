#!/bin/sh
# SPDX-License-Identifier: MIT
# A throwaway PostgreSQL 15 for the tests, on 127.0.0.1 only (TCP on a free port, and a Unix
# socket inside DIR), with durability off (fsync, full_page_writes, synchronous_commit): its
# data dies with DIR.
#
#   tests/pg/pg.sh start DIR   initialise a cluster in DIR/data, start it, create the database
#                              "workforce" and print its URL (the only line on stdout):
#                              postgres://workforce@127.0.0.1:PORT/workforce
#   tests/pg/pg.sh stop DIR    stop the server of DIR by its postmaster's PID (TERM, INT after
#                              5 s, KILL after 10 s); DIR itself is left for the caller to remove
#   tests/pg/pg.sh restart DIR start the stopped server of DIR again, on the same port (the
#                              fault tests: a database that goes away and comes back)
#
# Run as root, the server runs as the "postgres" user (PostgreSQL refuses root) and DIR is
# given to that user. PG_BIN overrides the directory of the PostgreSQL programs.
set -eu

PG_BIN=${PG_BIN:-/usr/lib/postgresql/15/bin}

usage() {
    echo "usage: $0 start DIR | stop DIR | restart DIR" >&2
    exit 2
}

die() {
    echo "pg.sh: $*" >&2
    exit 1
}

# Run "$@" as the user that owns the cluster: postgres when we are root, else ourselves.
as_owner() {
    if [ "$(id -u)" -eq 0 ]; then
        runuser -u postgres -- "$@"
    else
        "$@"
    fi
}

# A TCP port on 127.0.0.1 that nothing listens on now (the kernel's pick for port 0).
free_port() {
    python3 -c 'import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])'
}

start() {
    [ -x "$PG_BIN/initdb" ] ||
        die "$PG_BIN/initdb is missing: install PostgreSQL 15 (apt-get install postgresql-15) or set PG_BIN"
    command -v python3 >/dev/null 2>&1 || die "python3 is missing (it picks a free port)"
    mkdir -p "$1"
    dir=$(cd "$1" && pwd)
    [ ! -e "$dir/data" ] || die "$dir/data exists already: stop that server and remove it first"
    if [ "$(id -u)" -eq 0 ]; then
        id postgres >/dev/null 2>&1 || die "there is no postgres user (it comes with postgresql-15)"
        chown postgres "$dir"
        runuser -u postgres -- test -w "$dir" ||
            die "the postgres user cannot reach $dir: choose a directory under /tmp"
    fi
    # --locale=C: text sorts by bytes, as in SQLite; UTF8 is the encoding the server speaks.
    as_owner "$PG_BIN/initdb" -D "$dir/data" -A trust -U workforce --no-sync -E UTF8 \
        --locale=C >"$dir/initdb.log" 2>&1 || {
        cat "$dir/initdb.log" >&2
        die "initdb failed (its output is above)"
    }
    # A port can be taken between free_port and the server's bind: try a few.
    tries=0
    while :; do
        port=$(free_port)
        if as_owner "$PG_BIN/pg_ctl" -D "$dir/data" -l "$dir/log" -w -t 30 \
            -o "-h 127.0.0.1 -p $port -k $dir -c fsync=off -c full_page_writes=off -c synchronous_commit=off" \
            start >/dev/null 2>&1; then
            break
        fi
        tries=$((tries + 1))
        if [ "$tries" -ge 3 ]; then
            tail -n 20 "$dir/log" >&2 2>/dev/null || true
            die "the server did not start (the end of $dir/log is above)"
        fi
    done
    echo "$port" >"$dir/port"
    as_owner "$PG_BIN/createdb" -h 127.0.0.1 -p "$port" -U workforce workforce >&2 || {
        stop "$dir"
        die "createdb failed"
    }
    echo "postgres://workforce@127.0.0.1:$port/workforce"
}

restart() {
    dir=$(cd "$1" && pwd)
    [ -f "$dir/port" ] || die "$dir/port is absent: start a server with '$0 start DIR' first"
    port=$(cat "$dir/port")
    as_owner "$PG_BIN/pg_ctl" -D "$dir/data" -l "$dir/log" -w -t 30 \
        -o "-h 127.0.0.1 -p $port -k $dir -c fsync=off -c full_page_writes=off -c synchronous_commit=off" \
        start >/dev/null 2>&1 || {
        tail -n 20 "$dir/log" >&2 2>/dev/null || true
        die "the server did not start again on port $port (the end of $dir/log is above)"
    }
}

# Whether PID 'pid' is alive and a PostgreSQL server (not a process that reused the number).
is_postgres() {
    kill -0 "$1" 2>/dev/null || return 1
    [ ! -r "/proc/$1/comm" ] || [ "$(cat "/proc/$1/comm" 2>/dev/null)" = postgres ]
}

stop() {
    dir=$1
    pidfile=$dir/data/postmaster.pid
    if [ ! -f "$pidfile" ]; then
        echo "pg.sh: no server runs in $dir ($pidfile is absent)" >&2
        return 0
    fi
    pid=$(head -n 1 "$pidfile")
    case "$pid" in
    '' | *[!0-9]*) die "$pidfile does not start with a PID" ;;
    esac
    if ! is_postgres "$pid"; then
        echo "pg.sh: the server of $dir (PID $pid) is not running" >&2
        return 0
    fi
    # TERM is PostgreSQL's smart shutdown, which waits for the clients to leave; INT, halfway
    # through the 10 s, is its fast one, which disconnects them.
    kill -TERM "$pid" 2>/dev/null || true
    i=0
    while [ "$i" -lt 50 ] && is_postgres "$pid"; do
        [ "$i" -ne 25 ] || kill -INT "$pid" 2>/dev/null || true
        sleep 0.2
        i=$((i + 1))
    done
    if is_postgres "$pid"; then
        echo "pg.sh: PID $pid did not stop within 10 s: killing it" >&2
        kill -KILL "$pid" 2>/dev/null || true
    fi
}

[ $# -eq 2 ] || usage
case "$1" in
start) start "$2" ;;
stop) stop "$2" ;;
restart) restart "$2" ;;
*) usage ;;
esac
