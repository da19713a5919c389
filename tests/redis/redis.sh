#!/bin/sh
# SPDX-License-Identifier: MIT
# A throwaway Redis for the tests, on 127.0.0.1 only, on a free port, without persistence.
#
#   tests/redis/redis.sh start DIR [PORT]
#                                    start redis-server with its pid file and log in DIR (on
#                                    PORT, or a free port), wait until it answers, and print its
#                                    URL (the only line on stdout): redis://127.0.0.1:PORT/0
#   tests/redis/redis.sh stop DIR    stop the server of DIR by its PID (TERM, KILL after 5 s)
set -eu

usage() {
    echo "usage: $0 start DIR [PORT] | stop DIR" >&2
    exit 2
}

die() {
    echo "redis.sh: $*" >&2
    exit 1
}

free_port() {
    python3 -c 'import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])'
}

# Whether 'pid' is alive and a redis-server (not a process that reused the number).
is_redis() {
    kill -0 "$1" 2>/dev/null || return 1
    [ ! -r "/proc/$1/comm" ] || case "$(cat "/proc/$1/comm" 2>/dev/null)" in redis*) return 0 ;; *) return 1 ;; esac
}

# Whether something answers PING on 127.0.0.1:'port' (python: redis-cli is not required).
answers() {
    python3 -c 'import socket, sys
try:
    s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=1)
    s.sendall(b"PING\r\n")
    sys.exit(0 if s.recv(16).startswith(b"+PONG") else 1)
except OSError:
    sys.exit(1)' "$1"
}

start() {
    command -v redis-server >/dev/null 2>&1 || die "redis-server is missing (apt-get install redis-server)"
    mkdir -p "$1"
    dir=$(cd "$1" && pwd)
    tries=0
    while :; do
        port=${2:-$(free_port)}
        redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no \
            --daemonize no --dir "$dir" --logfile "$dir/redis.log" >/dev/null 2>&1 &
        pid=$!
        echo "$pid" >"$dir/redis.pid"
        i=0
        # alive (not yet necessarily named redis-server: the shell that starts it execs it)
        while [ "$i" -lt 100 ] && kill -0 "$pid" 2>/dev/null; do
            if answers "$port"; then
                echo "redis://127.0.0.1:$port/0"
                return 0
            fi
            sleep 0.05
            i=$((i + 1))
        done
        stop "$dir" 2>/dev/null || true
        tries=$((tries + 1))
        if [ "$tries" -ge 3 ] || [ -n "${2:-}" ]; then
            tail -n 20 "$dir/redis.log" >&2 2>/dev/null || true
            die "the server did not start (the end of $dir/redis.log is above)"
        fi
    done
}

stop() {
    pidfile=$1/redis.pid
    [ -f "$pidfile" ] || {
        echo "redis.sh: no server runs in $1 ($pidfile is absent)" >&2
        return 0
    }
    pid=$(cat "$pidfile")
    case "$pid" in
    '' | *[!0-9]*) die "$pidfile does not hold a PID" ;;
    esac
    rm -f "$pidfile"
    is_redis "$pid" || return 0
    kill -TERM "$pid" 2>/dev/null || true
    i=0
    while [ "$i" -lt 50 ] && is_redis "$pid"; do
        sleep 0.1
        i=$((i + 1))
    done
    if is_redis "$pid"; then
        echo "redis.sh: PID $pid did not stop within 5 s: killing it" >&2
        kill -KILL "$pid" 2>/dev/null || true
    fi
}

[ $# -ge 2 ] && [ $# -le 3 ] || usage
case "$1" in
start) start "$2" "${3:-}" ;;
stop) stop "$2" ;;
*) usage ;;
esac
