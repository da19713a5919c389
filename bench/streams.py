#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""bench/streams.py: 10,000 concurrent POST /v1/chat/stream SSE streams held open on workforce.

A slow upstream (bench/llm_upstream.py in its own process: one content chunk every 5 s, 9 in
all, so each reply lasts ~40 s) feeds build/workforce (WORKFORCE_LLM=openai; each stream is also
one libcurl transfer to the upstream). An asyncio client ramps up the streams with at most
--window of them not yet past `event: message.created`, keeps reading them, and while all are
open measures, from a separate process (no shared interpreter lock), the latency of 500
sequential GET /v1/employees?limit=10 of another org, and the server's VmRSS. Then it closes the
streams, stops the upstream, and watches the server's VmRSS for --after seconds (30) from the
moment the last stream has ended (its descriptors are back near the idle count): the memory of a
burst must go back to the system, and stay back. Then it stops the server (by its PID) and prints
a table with PASS/FAIL: RSS < 500 MB with the streams open, probe p99 < 20 ms, and RSS < 64 MiB
within 30 s of the last stream's end (and still at the end of those 30 s). Exits 1 only when
something failed to run.

Needs RLIMIT_NOFILE well above 2 x streams for the server (client + upstream sockets); bench/chat.sh
raises it. Usage: streams.py --bin build/workforce --tmp DIR [--streams 10000].
"""

import argparse
import asyncio
import json
import os
import re
import resource
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import wfbench  # noqa: E402
from wfbench import log  # noqa: E402


class Stream:
    __slots__ = ("status", "created", "deltas", "completed", "error_event", "eof", "exc", "writer")

    def __init__(self):
        self.status = None
        self.created = False
        self.deltas = 0
        self.completed = False
        self.error_event = False
        self.eof = False
        self.exc = None
        self.writer = None


async def open_stream(port, req, st, created_evt):
    """Send one /v1/chat/stream request and read its (chunked) event stream until EOF."""
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", port, limit=1 << 16)
        st.writer = writer
        writer.write(req)
        head = await reader.readuntil(b"\r\n\r\n")
        st.status = int(head.split(b" ", 2)[1])
        chunked = b"transfer-encoding: chunked" in head.lower()
        if st.status != 200:
            st.exc = "HTTP %d: %s" % (st.status, (await reader.read(300))[:300])
            return
        pending = b""
        while True:
            if chunked:
                size = int((await reader.readline()).split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    break
                data = await reader.readexactly(size + 2)
                data = data[:-2]
            else:
                data = await reader.read(4096)
                if not data:
                    break
            pending += data
            *lines, pending = pending.split(b"\n")
            for ln in lines:
                if ln.startswith(b"event: "):
                    ev = ln[7:].strip()
                    if ev == b"message.created":
                        st.created = True
                        created_evt.set()
                    elif ev == b"message.delta":
                        st.deltas += 1
                    elif ev == b"message.completed":
                        st.completed = True
                    elif ev == b"error":
                        st.error_event = True
        st.eof = True
    except asyncio.CancelledError:
        raise
    except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError) as e:
        st.exc = type(e).__name__ + ": " + str(e)[:200]
        st.eof = True
    finally:
        created_evt.set()


async def load(args, port, key, probe_key, emp, pid):
    body = json.dumps({"employee_id": emp, "message": "Keep me company for a while."}).encode()
    req = (b"POST /v1/chat/stream HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " +
           key.encode() + b"\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n"
           % len(body) + body)
    res = {}
    # The latency probe: its own process (no shared interpreter lock with this loop), one
    # keep-alive connection opened now; it measures once on the idle server, then on a line.
    probe = await asyncio.create_subprocess_exec(
        sys.executable, os.path.join(HERE, "wfbench.py"), "probe", "--port", str(port),
        "--key", probe_key, "-n", str(args.probe_n), "--rounds", "2",
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE)
    try:
        res["base_probe"] = json.loads(await asyncio.wait_for(probe.stdout.readline(), 60))
        res["idle"] = wfbench.proc_status(pid)

        streams = []
        sem = asyncio.Semaphore(args.window)
        t0 = time.monotonic()
        deadline = t0 + args.ramp_timeout

        async def one(st):
            evt = asyncio.Event()
            await sem.acquire()
            task = asyncio.ensure_future(open_stream(port, req, st, evt))
            try:
                await asyncio.wait_for(evt.wait(), max(0.1, deadline - time.monotonic()))
            except asyncio.TimeoutError:
                pass
            sem.release()
            return task

        ramp = []
        for _ in range(args.streams):
            st = Stream()
            streams.append(st)
            ramp.append(asyncio.ensure_future(one(st)))
        while True:
            done, _ = await asyncio.wait(ramp, timeout=5)
            log("streams: %d/%d got message.created after %.1f s"
                % (sum(1 for s in streams if s.created), args.streams, time.monotonic() - t0))
            if len(done) == len(ramp):
                break
        tasks = [r.result() for r in ramp]
        res["ramp_s"] = time.monotonic() - t0
        res["created"] = sum(1 for s in streams if s.created)
        await asyncio.sleep(args.settle)  # first upstream chunk of the last streams

        def open_count():
            return sum(1 for s in streams if s.created and not s.eof)

        res["open_at_probe"] = open_count()
        res["with_delta"] = sum(1 for s in streams if s.deltas > 0)
        res["error_events"] = sum(1 for s in streams if s.error_event)
        res["status_open"] = wfbench.proc_status(pid)
        res["maps"] = mapping_sizes(pid)
        t_probe = time.monotonic()
        probe.stdin.write(b"go\n")
        await probe.stdin.drain()
        res["probe"] = json.loads(await asyncio.wait_for(probe.stdout.readline(), 120))
        res["probe_s"] = time.monotonic() - t_probe
        res["status_after_probe"] = wfbench.proc_status(pid)
        res["open_after_probe"] = open_count()
        res["error_events_after"] = sum(1 for s in streams if s.error_event)
    finally:
        if probe.returncode is None:
            try:
                probe.stdin.close()
                await asyncio.wait_for(probe.wait(), 10)
            except (asyncio.TimeoutError, OSError):
                probe.kill()
                await probe.wait()

    res["open_at_close"] = open_count()
    res["error_events_close"] = sum(1 for s in streams if s.error_event)
    res["held_s"] = time.monotonic() - t0 - res["ramp_s"]
    # Close every stream (the client side); the server finishes and stores those replies.
    for s in streams:
        if s.writer is not None:
            s.writer.close()
    for t in tasks:
        t.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)

    errs = {}
    for s in streams:
        if s.exc and not s.created:
            k = re.sub(r"\d+", "N", s.exc)[:80]
            errs[k] = errs.get(k, 0) + 1
    res.update({"refused": sum(1 for s in streams if not s.created), "errors": errs})
    return res


def mapping_sizes(pid):
    """Anonymous memory of 'pid' by mapping kind: (count, Rss KiB) per bucket of mapping size."""
    out = {}
    try:
        with open("/proc/%d/smaps" % pid) as f:
            cur = None
            for line in f:
                if re.match(r"^[0-9a-f]+-[0-9a-f]+ ", line):
                    a, b = line.split()[0].split("-")
                    size = (int(b, 16) - int(a, 16)) // 1024
                    name = line.split()[5] if len(line.split()) > 5 else "[anon]"
                    if name.startswith("/"):
                        name = "file"
                    cur = (name, "64MiB-arena" if size >= 60000 else "%dKiB" % size if size <= 256
                           else ">256KiB")
                elif line.startswith("Rss:") and cur:
                    c, r = out.get(cur, (0, 0))
                    out[cur] = (c + 1, r + int(line.split()[1]))
    except OSError:
        pass
    return sorted(((k, v) for k, v in out.items()), key=lambda kv: -kv[1][1])[:8]


def wait_fds(srv, limit_s, below):
    """Wait up to 'limit_s' s until the server holds fewer than 'below' fds -> (s, status)."""
    t0 = time.monotonic()
    st = wfbench.proc_status(srv.pid)
    while time.monotonic() - t0 < limit_s and srv.alive() and st.get("fds", 0) >= below:
        time.sleep(0.2)
        st = wfbench.proc_status(srv.pid)
    return time.monotonic() - t0, st


def wait_rss(srv, limit_s, below_kib):
    """Poll the server's VmRSS every 0.2 s for 'limit_s' s -> (seconds until it was first under
    'below_kib', or None; the status at the end; [(s, RSS KiB)] every second or so)."""
    t0 = time.monotonic()
    trace, next_mark, first = [], 0.0, None
    st = wfbench.proc_status(srv.pid)
    while srv.alive():
        el = time.monotonic() - t0
        if el >= next_mark:
            trace.append((el, st.get("VmRSS", 0)))
            next_mark += 1.0
        if first is None and st.get("VmRSS", 1 << 40) < below_kib:
            first = el
        if el >= limit_s:
            break
        time.sleep(0.2)
        st = wfbench.proc_status(srv.pid)
    return first, st, trace


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default="build/workforce")
    ap.add_argument("--tmp", required=True)
    ap.add_argument("--streams", type=int, default=int(os.environ.get("BENCH_STREAMS", "10000")))
    ap.add_argument("--window", type=int, default=256, help="streams not yet created at a time")
    ap.add_argument("--ramp-timeout", type=float, default=90.0)
    ap.add_argument("--probe-n", type=int, default=500)
    ap.add_argument("--interval", type=float, default=5.0)
    ap.add_argument("--chunks", type=int, default=9)
    ap.add_argument("--after", type=float, default=30.0,
                    help="seconds after the last stream ended within which RSS must be < 64 MiB")
    ap.add_argument("--settle", type=float, default=3.0,
                    help="seconds after the ramp before measuring (upstream retries take ~2 s)")
    args = ap.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    need = 2 * args.streams + 100
    if soft < need:
        try:
            want = max(need, 65536)
            resource.setrlimit(resource.RLIMIT_NOFILE, (want, max(want, hard)))
        except (ValueError, OSError):
            try:  # not allowed to raise the hard limit: as far as it goes
                resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            except (ValueError, OSError):
                pass
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < need:
        log("streams: warning: RLIMIT_NOFILE %d < %d needed by the server for %d streams"
            % (soft, need, args.streams))

    upstream = subprocess.Popen([sys.executable, os.path.join(HERE, "llm_upstream.py"),
                                 "--interval", str(args.interval), "--chunks", str(args.chunks)],
                                stdout=subprocess.PIPE, stderr=open(os.path.join(args.tmp, "upstream.log"), "wb"))
    srv = None
    res = None
    ok = True
    t_total = time.monotonic()
    try:
        line = upstream.stdout.readline().decode()
        if not line.startswith("PORT "):
            raise RuntimeError("slow upstream did not start")
        up_port = int(line.split()[1])
        srv = wfbench.Server(args.bin, args.tmp, {
            "WORKFORCE_LLM": "openai",
            "WORKFORCE_LLM_BASE_URL": "http://127.0.0.1:%d/v1" % up_port,
            "WORKFORCE_LLM_MODEL": "bench-slow",
            # every stream comes from 127.0.0.1: the per-address limit up to the total
            "WORKFORCE_CONNECTIONS_PER_ADDRESS": "20000"}, name="streams")
        key = srv.key("bench-streams")
        probe_key = srv.key("bench-probe")
        srv.start()
        log("streams: workforce pid %d on 127.0.0.1:%d, slow upstream pid %d on %d, "
            "RLIMIT_NOFILE %d" % (srv.pid, srv.port, upstream.pid, up_port, soft))
        emp = wfbench.employee_id(srv.port, key)
        time.sleep(0.5)
        res = asyncio.run(load(args, srv.port, key, probe_key, emp, srv.pid))
        res["alive_after"] = srv.alive()
        # The clients are gone; the server still reads the upstream (a reply is finished and
        # stored after a disconnect). Then stop the upstream: every transfer still running ends
        # as a cut stream (nothing stored, nothing charged). Bounded waits for the descriptors.
        res["close_clients_s"], res["status_clients_closed"] = wait_fds(
            srv, args.interval + 2, args.streams + 200)
        wfbench.stop_proc(upstream)
        res["close_upstream_s"], res["status_closed"] = wait_fds(
            srv, 20, res["idle"].get("fds", 0) + 50)
        # The last stream has ended: from now on the burst's memory must go back.
        res["rss_back_s"], res["status_after"], res["rss_trace"] = wait_rss(
            srv, args.after, RSS_AFTER_KIB)
    except Exception as e:  # noqa: BLE001
        log("streams: error: %s" % e)
        ok = False
    finally:
        wfbench.stop_proc(upstream)
        rc, stop_s = srv.stop() if srv else (None, 0.0)
    if not ok or res is None:
        if srv:
            log("workforce log tail:\n" + srv.log_tail())
        return 1
    report(args, res, rc, stop_s, time.monotonic() - t_total, soft)
    return 0


RSS_AFTER_KIB = 64 * 1024  # the goal: under 64 MiB within --after s of the last stream's end


def report(args, r, rc, stop_s, total_s, nofile):
    mib = lambda kib: kib / 1024.0  # noqa: E731
    so, sa, idle = r["status_open"], r["status_after_probe"], r["idle"]
    rss = max(so.get("VmRSS", 0), sa.get("VmRSS", 0))
    p = r["probe"]
    bp = r["base_probe"]
    n = max(1, r["open_at_probe"])
    print()
    print("chat (b): %d concurrent POST /v1/chat/stream (slow upstream: a chunk every %g s, "
          "~%g s per reply)" % (args.streams, args.interval, args.interval * (args.chunks - 1)))
    print("  ramp window %d, RLIMIT_NOFILE %d; probe: %d sequential GET /v1/employees?limit=10, "
          "another org, own process" % (args.window, nofile, args.probe_n))
    print()
    sc, sd = r["status_clients_closed"], r["status_closed"]
    rows = [
        ("streams with message.created", "%d / %d" % (r["created"], args.streams)),
        ("ramp-up time (s)", "%.1f" % r["ramp_s"]),
        ("streams open at probe start / end", "%d / %d" % (r["open_at_probe"], r["open_after_probe"])),
        ("streams with a message.delta by then", "%d" % r["with_delta"]),
        ("streams with an error event (probe end / close)", "%d / %d" % (r["error_events_after"], r["error_events_close"])),
        ("streams open at close (%.1f s after ramp)" % r["held_s"], "%d" % r["open_at_close"]),
        ("streams refused or failed before created", "%d" % r["refused"]),
        ("probe p50 / p99 / max (ms), streams open", "%.3f / %.3f / %.3f" % (p["p50_ms"], p["p99_ms"], p["max_ms"])),
        ("probe p50 / p99 / max (ms), idle server", "%.3f / %.3f / %.3f" % (bp["p50_ms"], bp["p99_ms"], bp["max_ms"])),
        ("probe non-200 / errors, streams open", "%d / %d" % (p["non200"], p["errors"])),
        ("RSS idle (MiB)", "%.1f" % mib(idle.get("VmRSS", 0))),
        ("RSS, streams open (MiB)", "%.1f" % mib(rss)),
        ("  RssAnon / RssFile (MiB)", "%.1f / %.1f" % (mib(so.get("RssAnon", 0)), mib(so.get("RssFile", 0)))),
        ("  RSS per open stream (KiB)", "%.1f" % ((rss - idle.get("VmRSS", 0)) / n)),
        ("  VmData (MiB)", "%.1f" % mib(so.get("VmData", 0))),
        ("server fds idle / streams open", "%d / %d" % (idle.get("fds", 0), so.get("fds", 0))),
        ("server threads", "%d" % so.get("Threads", 0)),
        ("clients closed: fds after %.1f s" % r["close_clients_s"], "%d" % sc.get("fds", 0)),
        ("upstream stopped: fds after %.1f s" % r["close_upstream_s"], "%d" % sd.get("fds", 0)),
        ("RSS when the last stream ended (MiB)", "%.1f" % mib(sd.get("VmRSS", 0))),
        ("RSS under 64 MiB after (s)", "%.1f" % r["rss_back_s"] if r["rss_back_s"] is not None
         else "not within %g s" % args.after),
        ("RSS %g s after the last stream ended (MiB)" % args.after,
         "%.1f" % mib(r["status_after"].get("VmRSS", 0))),
        ("  RSS each second after (MiB)", " ".join("%.0f" % mib(k) for _, k in r["rss_trace"])),
        ("server SIGTERM exit status / time (s)", "%s / %.1f" % (rc, stop_s)),
        ("total time of this part (s)", "%.1f" % total_s),
    ]
    for k, v in rows:
        print("  %-44s %s" % (k, v))
    if r["errors"]:
        print("  failures: " + "; ".join("%dx %s" % (c, k) for k, c in
                                        sorted(r["errors"].items(), key=lambda kv: -kv[1])[:4]))
    if r["maps"]:
        print("  largest resident mappings (kind, size bucket: count, RSS MiB): " + "; ".join(
            "%s %s: %d, %.1f" % (k[0], k[1], c, rss_ / 1024.0) for k, (c, rss_) in r["maps"][:5]))
    print()
    print("  goals")
    all_open = r["open_at_probe"] == args.streams
    print("    %-38s %-12s %s" % ("%d streams open and fed" % args.streams,
                                  min(r["open_at_probe"], r["with_delta"]),
                                  "PASS" if all_open and r["with_delta"] == args.streams else "FAIL"))
    print("    %-38s %-12s %s" % ("RSS < 500 MB with streams open", "%.1f MB" % (rss * 1024 / 1e6),
                                  "PASS" if rss * 1024 < 500e6 else "FAIL"))
    print("    %-38s %-12s %s" % ("probe p99 < 20 ms with streams open", "%.3f ms" % p["p99_ms"],
                                  "PASS" if p["p99_ms"] < 20 and p["ok"] == args.probe_n else "FAIL"))
    # under 64 MiB within the window, and still under at its end
    back, end_kib = r["rss_back_s"], r["status_after"].get("VmRSS", 1 << 40)
    print("    %-38s %-12s %s" % ("RSS < 64 MiB within %g s of the end" % args.after,
                                  "%.1f s" % back if back is not None else
                                  "%.1f MiB" % mib(end_kib),
                                  "PASS" if back is not None and end_kib < RSS_AFTER_KIB
                                  else "FAIL"))
    if not r["alive_after"]:
        print("  warning: the server was not running after the load")
    if nofile < 2 * args.streams + 100:
        print("  note: RLIMIT_NOFILE %d < %d: the server needs 2 descriptors per stream (client +"
              " upstream connection); streams past the limit cannot reach the upstream"
              % (nofile, 2 * args.streams + 100))


if __name__ == "__main__":
    sys.exit(main())
