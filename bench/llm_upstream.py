#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""bench/llm_upstream.py: a minimal asyncio OpenAI-compatible upstream for the chat benchmarks.

POST {any}/chat/completions answers HTTP/1.1 200, chunked `text/event-stream`: a role chunk, the
content chunks, a finish chunk, a usage chunk and `data: [DONE]`. Keep-alive is honoured (libcurl's
connection cache reuses connections, and so does the benchmark client).

  fast (interval 0):  the fixed small reply in one write, no delay (blocking chat overhead)
  slow (interval S):  one content chunk now, then one every S seconds, `chunks` in all, so the
                      stream stays open about S * (chunks - 1) seconds (10k open streams)

Import it (Upstream(...).start_in_thread()) or run it: `python3 bench/llm_upstream.py
--interval 5 --chunks 9`; the first stdout line is `PORT <n>`. SIGTERM/SIGINT stop it.
Python 3 standard library only.
"""

import argparse
import asyncio
import json
import signal
import sys
import threading
import time

REPLY = ["Hello", " from", " the", " bench", " upstream."]


def _event(obj):
    data = b"data: " + (obj if isinstance(obj, bytes) else json.dumps(obj, separators=(",", ":")).encode()) + b"\n\n"
    return b"%x\r\n%s\r\n" % (len(data), data)


def _chunk(cid, created, model, delta, finish=None):
    return {"id": cid, "object": "chat.completion.chunk", "created": created, "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


class Upstream:
    def __init__(self, interval=0.0, chunks=len(REPLY), host="127.0.0.1", port=0):
        self.interval = float(interval)
        self.chunks = max(1, int(chunks))
        self.host, self.port = host, port
        self.server = None
        self.loop = None
        self.thread = None
        self.requests = 0
        self.open_streams = 0
        self.max_open_streams = 0
        self.completed = 0
        self.client_gone = 0
        self._writers = set()
        self._fast_cache = {}

    # -- protocol --

    async def _handle(self, reader, writer):
        self._writers.add(writer)
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
                    return
                lines = head.split(b"\r\n")
                parts = lines[0].split(b" ")
                if len(parts) < 3:
                    return
                clen, close, chunked = 0, parts[2] == b"HTTP/1.0", False
                for ln in lines[1:]:
                    k, _, v = ln.partition(b":")
                    k = k.strip().lower()
                    v = v.strip()
                    if k == b"content-length":
                        clen = int(v)
                    elif k == b"connection" and v.lower() == b"close":
                        close = True
                    elif k == b"transfer-encoding" and b"chunked" in v.lower():
                        chunked = True
                if chunked:
                    body = b""
                    while True:
                        size = int((await reader.readline()).split(b";")[0].strip() or b"0", 16)
                        if size == 0:
                            while (await reader.readline()) not in (b"\r\n", b"\n", b""):
                                pass
                            break
                        body += await reader.readexactly(size)
                        await reader.readline()
                else:
                    body = await reader.readexactly(clen) if clen else b""
                self.requests += 1
                if not parts[1].split(b"?")[0].endswith(b"/chat/completions") or parts[0] != b"POST":
                    msg = b'{"error":{"message":"not found","type":"invalid_request_error"}}'
                    writer.write(b"HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\n"
                                 b"Content-Length: %d\r\n\r\n%s" % (len(msg), msg))
                    await writer.drain()
                else:
                    try:
                        req = json.loads(body)
                        model = str(req.get("model") or "bench-model")
                    except ValueError:
                        model = "bench-model"
                    if self.interval > 0:
                        await self._slow(writer, model)
                    else:
                        writer.write(self._fast(model))
                        await writer.drain()
                if close:
                    return
        except (ConnectionError, asyncio.IncompleteReadError):
            self.client_gone += 1
        except asyncio.CancelledError:
            pass  # stopping: end quietly (asyncio logs a cancelled connection task)
        finally:
            self._writers.discard(writer)
            try:
                writer.close()
            except Exception:
                pass

    def _fast(self, model):
        # The same bytes for every request of one model (a fixed reply): built once.
        out = self._fast_cache.get(model)
        if out is None:
            cid, created = "chatcmpl-bench", int(time.time())
            parts = [b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                     b"Cache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n\r\n",
                     _event(_chunk(cid, created, model, {"role": "assistant", "content": ""}))]
            for piece in REPLY:
                parts.append(_event(_chunk(cid, created, model, {"content": piece})))
            parts.append(_event(_chunk(cid, created, model, {}, "stop")))
            parts.append(_event({"id": cid, "object": "chat.completion.chunk", "created": created,
                                 "model": model, "choices": [],
                                 "usage": {"prompt_tokens": 20, "completion_tokens": len(REPLY),
                                           "total_tokens": 20 + len(REPLY)}}))
            parts.append(_event(b"[DONE]"))
            parts.append(b"0\r\n\r\n")
            out = b"".join(parts)
            self._fast_cache[model] = out
        return out

    async def _slow(self, writer, model):
        cid, created = "chatcmpl-slow", int(time.time())
        self.open_streams += 1
        self.max_open_streams = max(self.max_open_streams, self.open_streams)
        try:
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                         b"Cache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n\r\n" +
                         _event(_chunk(cid, created, model, {"role": "assistant", "content": ""})))
            for i in range(self.chunks):
                if i:
                    await asyncio.sleep(self.interval)
                writer.write(_event(_chunk(cid, created, model, {"content": "tick%d " % i})))
                await writer.drain()
            writer.write(_event(_chunk(cid, created, model, {}, "stop")) +
                         _event({"id": cid, "object": "chat.completion.chunk", "created": created,
                                 "model": model, "choices": [],
                                 "usage": {"prompt_tokens": 20, "completion_tokens": self.chunks,
                                           "total_tokens": 20 + self.chunks}}) +
                         _event(b"[DONE]") + b"0\r\n\r\n")
            await writer.drain()
            self.completed += 1
        finally:
            self.open_streams -= 1

    # -- lifecycle --

    async def serve(self, ready=None):
        self.server = await asyncio.start_server(self._handle, self.host, self.port,
                                                 backlog=4096, limit=1 << 20)
        self.port = self.server.sockets[0].getsockname()[1]
        if ready:
            ready()
        async with self.server:
            await self.server.serve_forever()

    def start_in_thread(self):
        """Serve on a daemon thread with its own event loop; returns self once listening."""
        started = threading.Event()

        def run():
            self.loop = asyncio.new_event_loop()
            asyncio.set_event_loop(self.loop)
            try:
                self.loop.run_until_complete(self.serve(started.set))
            except asyncio.CancelledError:
                pass
            finally:
                self.loop.close()

        self.thread = threading.Thread(target=run, name="llm-upstream", daemon=True)
        self.thread.start()
        if not started.wait(10):
            raise RuntimeError("upstream did not start")
        return self

    def stop(self):
        if self.loop and self.server:
            def _close():
                self.server.close()
                for w in list(self._writers):
                    w.close()
                for t in asyncio.all_tasks(self.loop):
                    t.cancel()
            self.loop.call_soon_threadsafe(_close)
            self.thread.join(5)

    @property
    def base_url(self):
        return "http://%s:%d/v1" % (self.host, self.port)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--interval", type=float, default=0.0, help="seconds between content chunks")
    ap.add_argument("--chunks", type=int, default=len(REPLY), help="content chunks (slow mode)")
    args = ap.parse_args()
    up = Upstream(args.interval, args.chunks, port=args.port)

    async def run():
        loop = asyncio.get_running_loop()
        stop = loop.create_future()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, lambda: stop.done() or stop.set_result(None))
        task = asyncio.ensure_future(up.serve(lambda: print("PORT %d" % up.port, flush=True)))
        await asyncio.wait([task, stop], return_when=asyncio.FIRST_COMPLETED)
        print("upstream: requests %d, streams completed %d, max open %d, clients gone %d"
              % (up.requests, up.completed, up.max_open_streams, up.client_gone),
              file=sys.stderr, flush=True)
        up.server.close()
        for w in list(up._writers):
            w.close()
        task.cancel()

    asyncio.run(run())


if __name__ == "__main__":
    main()
