#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A deterministic OpenAI-compatible chat-completions mock (Python standard library only).

Run it:     python3 tests/mock/openai_mock.py [--port N]   -> first stdout line `PORT <n>`
Or import:  m = openai_mock.MockLLM().start(); m.base_url ("http://127.0.0.1:N/v1"); m.stop()
            (module level start()/stop() manage one shared instance).

Endpoints
  POST /v1/chat/completions, POST /chat/completions   the model
  POST /v1/embeddings, POST /embeddings   vectors (see below)
  POST /__embeddings  {"down": true|false}: while down, every embeddings request gets 503
  GET  /__requests    every chat and embeddings request seen so far: [{path, headers, body, marker, reply}]
                      (`reply` is {status, content, usage} of what the mock answered, or null)
  POST /__reset       forget the recorded requests and the per-message attempt counters
  GET  /health        {"status":"ok"}

Behaviour is chosen by markers in the content of the LAST user message:
  (none)              reply "Hello from the mock. You said: <first 40 chars of that message>",
                      streamed (stream: true) as a role chunk, ~5 content chunks, a finish chunk,
                      a usage chunk {"choices":[],"usage":{...}} (only when the request has
                      stream_options.include_usage, as OpenAI does) and `data: [DONE]`;
                      non-streamed: an ordinary chat.completion object with usage.
  [[slow:MS]]         sleep MS milliseconds before each content chunk after the first
  [[pause:MS]]        sleep MS milliseconds once, before the first content chunk
  [[fail:STATUS]]     answer HTTP STATUS with an OpenAI-style JSON error, before any chunk
  [[fail-first:N]]    answer 500 to the first N attempts of this exact message text, then succeed
  [[cut]]             send the role chunk and 2 content chunks, then drop the connection
                      (no terminating chunk, no [DONE])
  [[garbage]]         send `data:` lines that are not JSON, then [DONE]
  [[hang]]            accept the request and never answer (until the mock stops)
  [[bigusage]]        usage.total_tokens 2500 (prompt_tokens = 2500 - completion_tokens)
  [[nousage]]         no usage chunk / no usage object
  [[say:B64,B64,...]] reply exactly these texts (base64 of UTF-8): the Nth request whose last
                      user message holds this same marker gets the Nth text, the last one
                      repeating (a step's first answer and its repair read different messages
                      that both repeat the marker)
  [[tools:B64]]       a scripted model that calls tools. B64 is base64 of a JSON list of steps;
                      the step answered is the number of assistant messages after this (last)
                      user message in the request (0 for a turn's first model call), the last
                      step repeating past the end. A step is
                        {"say": "text"}   an ordinary answer with that text, or
                        {"fail": STATUS}  an OpenAI-style error of HTTP STATUS (400..599), or
                        {"calls": [{"name": N, "arguments": <object, or raw text>, "id"?: ID}]}
                                          tool calls (ids default to call_mock<step>_<i>),
                                          finish_reason "tool_calls". Streamed as OpenAI does:
                                          per call one chunk with index, id, type and name
                                          (arguments ""), then its arguments split over several
                                          chunks carrying only index and arguments; not
                                          streamed: message.tool_calls, content null.
                                          With "say" too, that text comes first (the content,
                                          streamed in pieces before the calls).
                      A call's name is the tool's as the server showed it: an employee's own
                      tool (`knowledge__search`), or a tool the server's client gave (the
                      OpenAI door's `tools`, under their own names).
                      `reply` records {status, tool_calls, usage} (what the server sent back is
                      in `body`: its assistant and tool messages).
Tokens: prompt_tokens = words over all request messages, completion_tokens = words of the reply.

Embeddings: each input becomes a 64-d bag of its lower-case words (word -> crc32 % 64, +1 each),
NOT normalised (the server must normalise), answered in reverse order of index (the server must
use `index`). Markers in any input: [[fail:STATUS]] answers STATUS; [[fail-first:N]] answers 500
to the first N attempts of that input list; [[garbage]] answers one embedding too few.
"""

import base64
import json
import re
import zlib
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SAY_RE = re.compile(r"\[\[say:([A-Za-z0-9+/=,]+)\]\]")
TOOLS_RE = re.compile(r"\[\[tools:([A-Za-z0-9+/=]+)\]\]")
MARK_RE = re.compile(r"\[\[(slow|pause|fail|fail-first|cut|garbage|hang|bigusage|nousage)"
                     r"(?::(\d+))?\]\]")
CHAT_PATHS = ("/v1/chat/completions", "/chat/completions")
EMBED_PATHS = ("/v1/embeddings", "/embeddings")
EMBED_DIM = 64


def bag_vector(text):
    """The mock's embedding of one text: counts of its words hashed into EMBED_DIM slots."""
    v = [0.0] * EMBED_DIM
    for w in re.findall(r"[a-z0-9]+", text.lower()):
        v[zlib.crc32(w.encode()) % EMBED_DIM] += 1.0
    if not any(v):
        v[0] = 1.0
    return v
MODEL_DEFAULT = "mock-default"


def _text_of(content):
    """The text of a message content: a string, or OpenAI content parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        out = []
        for p in content:
            if isinstance(p, dict) and isinstance(p.get("text"), str):
                out.append(p["text"])
        return "".join(out)
    return ""


def _words(s):
    return len(s.split())


def tools_step(msgs, b64):
    """The step of the [[tools:B64]] script this request asks for (see the module docstring)."""
    steps = json.loads(base64.b64decode(b64).decode("utf-8"))
    if not isinstance(steps, list) or not steps:
        raise ValueError("[[tools:...]] must hold a non-empty JSON list of steps")
    last = max(i for i, m in enumerate(msgs) if isinstance(m, dict) and m.get("role") == "user")
    n = sum(1 for m in msgs[last + 1:] if isinstance(m, dict) and m.get("role") == "assistant")
    return n, steps[min(n, len(steps) - 1)]


def tool_calls_of(step_no, step):
    """OpenAI's tool_calls (whole) for the "calls" of a step."""
    out = []
    for i, c in enumerate(step["calls"]):
        args = c.get("arguments", {})
        out.append({"id": c.get("id") or "call_mock%d_%d" % (step_no, i), "type": "function",
                    "function": {"name": c["name"],
                                 "arguments": args if isinstance(args, str) else json.dumps(args)}})
    return out


def reply_text(last_user):
    return "Hello from the mock. You said: " + last_user[:40]


def split_chunks(text, n=5):
    """Split text into about n pieces at character positions (deterministic)."""
    if not text:
        return [""]
    size = max(1, -(-len(text) // n))
    return [text[i:i + size] for i in range(0, len(text), size)]


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "openai-mock/1.0"
    # An answer's head and body are two sends: without TCP_NODELAY the body waited for the
    # server's delayed ACK, about 40 ms on every model call.
    disable_nagle_algorithm = True

    def log_message(self, fmt, *args):  # quiet
        if self.server.mock.verbose:
            sys.stderr.write("openai-mock: " + (fmt % args) + "\n")

    # -- plumbing --

    def _read_body(self):
        te = (self.headers.get("Transfer-Encoding") or "").lower()
        if "chunked" in te:
            data = b""
            while True:
                line = self.rfile.readline()
                size = int(line.split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    break
                data += self.rfile.read(size)
                self.rfile.readline()
            return data
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n > 0 else b""

    def _send_json(self, status, obj, close=False):
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        if close:
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()

    def _chunk(self, data):
        if isinstance(data, str):
            data = data.encode()
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def _event(self, obj):
        payload = obj if isinstance(obj, str) else json.dumps(obj)
        self._chunk("data: " + payload + "\n\n")

    # -- routes --

    def do_GET(self):
        mock = self.server.mock
        if self.path == "/__requests":
            self._send_json(200, mock.requests())
        elif self.path in ("/health", "/healthz"):
            self._send_json(200, {"status": "ok"})
        else:
            self._send_json(404, {"error": {"message": "not found", "type": "invalid_request_error",
                                            "code": None}})

    def do_POST(self):
        mock = self.server.mock
        raw = self._read_body()
        if self.path == "/__reset":
            mock.reset()
            self._send_json(200, {"reset": True})
            return
        if self.path == "/__embeddings":
            mock.embeddings_down = bool(json.loads(raw.decode("utf-8") or "{}").get("down"))
            self._send_json(200, {"down": mock.embeddings_down})
            return
        if self.path in EMBED_PATHS:
            self._embeddings(mock, raw)
            return
        if self.path not in CHAT_PATHS:
            self._send_json(404, {"error": {"message": "not found", "type": "invalid_request_error",
                                            "code": None}})
            return
        try:
            body = json.loads(raw.decode("utf-8"))
            if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
                raise ValueError("messages missing")
        except (ValueError, UnicodeDecodeError) as e:
            rec = mock.record(self, raw, None, None)
            rec["reply"] = {"status": 400}
            self._send_json(400, {"error": {"message": "bad request: %s" % e,
                                            "type": "invalid_request_error", "code": None}})
            return
        self._chat(mock, body, raw)

    def _embeddings(self, mock, raw):
        try:
            body = json.loads(raw.decode("utf-8"))
            inputs = body.get("input")
            if isinstance(inputs, str):
                inputs = [inputs]
            if not isinstance(inputs, list) or not all(isinstance(x, str) for x in inputs):
                raise ValueError("input must be a string or an array of strings")
        except (ValueError, UnicodeDecodeError, AttributeError) as e:
            rec = mock.record(self, raw, None, None)
            rec["reply"] = {"status": 400}
            self._send_json(400, {"error": {"message": "bad request: %s" % e,
                                            "type": "invalid_request_error", "code": None}})
            return
        joined = "\n".join(inputs)
        rec = mock.record(self, raw, body, joined)
        attempt = mock.count_attempt("embeddings:" + joined)
        marks = {}
        for name, arg in MARK_RE.findall(joined):
            marks[name] = int(arg) if arg else True
        status = 0
        if mock.embeddings_down:
            status = 503
        elif "fail" in marks:
            status = marks["fail"] if isinstance(marks["fail"], int) else 500
        elif "fail-first" in marks and attempt <= marks["fail-first"]:
            status = 500
        if status:
            rec["reply"] = {"status": status}
            self._send_json(status, {"error": {"message": "mock failure (HTTP %d)" % status,
                                               "type": "server_error", "code": None}})
            return
        data = [{"object": "embedding", "index": i, "embedding": bag_vector(t)}
                for i, t in enumerate(inputs)]
        data.reverse()
        if "garbage" in marks:
            data = data[1:]
        words = sum(_words(t) for t in inputs)
        rec["reply"] = {"status": 200, "count": len(data)}
        self._send_json(200, {"object": "list", "data": data,
                              "model": body.get("model") or MODEL_DEFAULT,
                              "usage": {"prompt_tokens": words, "total_tokens": words}})

    def _chat(self, mock, body, raw):
        msgs = body["messages"]
        last_user = ""
        for m in reversed(msgs):
            if isinstance(m, dict) and m.get("role") == "user":
                last_user = _text_of(m.get("content"))
                break
        marks = {}
        for name, arg in MARK_RE.findall(last_user):
            marks[name] = int(arg) if arg else True
        rec = mock.record(self, raw, body, last_user)
        attempt = mock.count_attempt(last_user)
        rec["attempt"] = attempt
        model = body.get("model") or MODEL_DEFAULT
        stream = body.get("stream") is True
        include_usage = bool(isinstance(body.get("stream_options"), dict)
                             and body["stream_options"].get("include_usage"))

        if "hang" in marks:
            rec["reply"] = {"status": None, "hang": True}
            mock.stopping.wait(600)
            self.close_connection = True
            return
        if "fail" in marks or ("fail-first" in marks and attempt <= marks["fail-first"]):
            status = marks.get("fail") if "fail" in marks else 500
            if not isinstance(status, int) or status < 400 or status > 599:
                status = 500
            rec["reply"] = {"status": status}
            self._send_json(status, {"error": {"message": "mock failure (HTTP %d)" % status,
                                               "type": "server_error" if status >= 500
                                               else "invalid_request_error",
                                               "param": None, "code": None}})
            return

        text = reply_text(last_user)
        calls = None
        tools = TOOLS_RE.search(last_user)
        if tools:
            try:
                step_no, step = tools_step(msgs, tools.group(1))
                if "fail" in step:
                    status = int(step["fail"])
                    if status < 400 or status > 599:
                        raise ValueError("a step's fail must be an HTTP status from 400 to 599")
                    rec["reply"] = {"status": status}
                    self._send_json(status, {"error": {"message": "mock failure (HTTP %d)"
                                                       % status, "type": "server_error",
                                                       "param": None, "code": None}})
                    return
                if "calls" in step:
                    calls = tool_calls_of(step_no, step)
                    text = str(step.get("say", ""))
                else:
                    text = str(step.get("say", ""))
            except (ValueError, KeyError, TypeError, AttributeError) as e:
                rec["reply"] = {"status": 400}
                self._send_json(400, {"error": {"message": "bad [[tools:...]] script: %s" % e,
                                                "type": "invalid_request_error", "code": None}})
                return
        say = None if tools else SAY_RE.search(last_user)
        if say:
            texts = [base64.b64decode(t).decode("utf-8") for t in say.group(1).split(",")]
            n = mock.count_attempt("say:" + say.group(1))
            text = texts[min(n, len(texts)) - 1]
        completion = _words(text) + sum(1 + _words(c["function"]["arguments"])
                                        for c in calls or [])
        prompt = sum(_words(_text_of(m.get("content"))) for m in msgs if isinstance(m, dict))
        if "bigusage" in marks:
            prompt = max(0, 2500 - completion)
        usage = None if "nousage" in marks else {
            "prompt_tokens": prompt, "completion_tokens": completion,
            "total_tokens": prompt + completion}
        cid = "chatcmpl-mock%06d" % attempt
        created = int(time.time())
        rec["reply"] = {"status": 200, "content": text, "usage": usage}
        if calls is not None:
            rec["reply"] = {"status": 200, "tool_calls": calls, "usage": usage}

        if not stream:
            message = {"role": "assistant", "content": text}
            if calls is not None:
                message = {"role": "assistant", "content": text or None, "tool_calls": calls,
                           "refusal": None}
            obj = {"id": cid, "object": "chat.completion", "created": created, "model": model,
                   "choices": [{"index": 0, "message": message,
                                "finish_reason": "tool_calls" if calls is not None else "stop"}]}
            if usage is not None:
                obj["usage"] = usage
            self._send_json(200, obj)
            return

        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

        def chunk(delta, finish=None):
            return {"id": cid, "object": "chat.completion.chunk", "created": created,
                    "model": model, "choices": [{"index": 0, "delta": delta,
                                                 "finish_reason": finish}]}
        try:
            if calls is not None:
                self._stream_calls(chunk, calls, text)
                if usage is not None and include_usage:
                    self._event({"id": cid, "object": "chat.completion.chunk",
                                 "created": created, "model": model, "choices": [],
                                 "usage": usage})
                self._event("[DONE]")
                self._chunk(b"")
                return
            self._event(chunk({"role": "assistant", "content": ""}))
            if "garbage" in marks:
                self._event("this is not json {{{")
                self._event("<html>502 Bad Gateway</html>")
                self._event("[DONE]")
                self._chunk(b"")
                return
            pieces = split_chunks(text)
            slow = marks.get("slow") if isinstance(marks.get("slow"), int) else 0
            pause = marks.get("pause") if isinstance(marks.get("pause"), int) else 0
            for i, piece in enumerate(pieces):
                if i == 0 and pause:
                    time.sleep(pause / 1000.0)
                if i > 0 and slow:
                    time.sleep(slow / 1000.0)
                self._event(chunk({"content": piece}))
                if "cut" in marks and i == 1:
                    rec["reply"]["cut"] = True
                    self.close_connection = True
                    self.connection.shutdown(2)
                    return
            self._event(chunk({}, "stop"))
            if usage is not None and include_usage:
                self._event({"id": cid, "object": "chat.completion.chunk", "created": created,
                             "model": model, "choices": [], "usage": usage})
            self._event("[DONE]")
            self._chunk(b"")
        except OSError:
            rec["reply"]["client_gone"] = True
            self.close_connection = True


    def _stream_calls(self, chunk, calls, text=""):
        """Tool calls as OpenAI streams them: a first chunk per call (index, id, type, name,
        empty arguments; the role with the first), then its arguments in several pieces. A
        text comes first, after the role, in pieces."""
        if text:
            self._event(chunk({"role": "assistant", "content": ""}))
            for piece in split_chunks(text):
                self._event(chunk({"content": piece}))
        for i, c in enumerate(calls):
            head = {"index": i, "id": c["id"], "type": "function",
                    "function": {"name": c["function"]["name"], "arguments": ""}}
            delta = {"tool_calls": [head]}
            if i == 0 and not text:
                delta = {"role": "assistant", "content": None, "tool_calls": [head],
                         "refusal": None}
            self._event(chunk(delta))
            for piece in split_chunks(c["function"]["arguments"], 4):
                if piece:
                    self._event(chunk({"tool_calls": [{"index": i,
                                                       "function": {"arguments": piece}}]}))
        self._event(chunk({}, "tool_calls"))


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    allow_reuse_address = True


class MockLLM:
    """One mock server on 127.0.0.1 in a background thread."""

    def __init__(self, host="127.0.0.1", port=0, verbose=False):
        self.host = host
        self.want_port = port
        self.verbose = verbose
        self.lock = threading.Lock()
        self._requests = []
        self._attempts = {}
        self.embeddings_down = False
        self.stopping = threading.Event()
        self.httpd = None
        self.thread = None

    # -- state --

    def record(self, handler, raw, body, last_user):
        hdrs = {k.lower(): v for k, v in handler.headers.items()}
        rec = {"path": handler.path, "headers": hdrs,
               "body": body if body is not None else raw.decode("utf-8", "replace"),
               "last_user": last_user, "reply": None, "time": time.time()}
        with self.lock:
            self._requests.append(rec)
        return rec

    def count_attempt(self, text):
        with self.lock:
            n = self._attempts.get(text, 0) + 1
            self._attempts[text] = n
            return n

    def requests(self):
        with self.lock:
            return json.loads(json.dumps(self._requests))

    def attempts(self, text):
        with self.lock:
            return self._attempts.get(text, 0)

    def reset(self):
        with self.lock:
            self._requests = []
            self._attempts = {}

    # -- lifecycle --

    def start(self):
        self.httpd = _Server((self.host, self.want_port), _Handler)
        self.httpd.mock = self
        self.thread = threading.Thread(target=self.httpd.serve_forever, name="openai-mock",
                                       daemon=True)
        self.thread.start()
        return self

    @property
    def port(self):
        return self.httpd.server_address[1]

    @property
    def base_url(self):
        return "http://%s:%d/v1" % (self.host, self.port)

    def stop(self):
        self.stopping.set()
        if self.httpd is not None:
            self.httpd.shutdown()
            self.httpd.server_close()
            self.httpd = None


_default = None


def start(port=0):
    """Start the shared module-level mock (idempotent) and return it."""
    global _default
    if _default is None:
        _default = MockLLM(port=port).start()
    return _default


def stop():
    global _default
    if _default is not None:
        _default.stop()
        _default = None


def main(argv):
    port = 0
    verbose = False
    i = 0
    while i < len(argv):
        if argv[i] == "--port" and i + 1 < len(argv):
            port = int(argv[i + 1])
            i += 2
        elif argv[i] == "-v":
            verbose = True
            i += 1
        else:
            sys.stderr.write("usage: openai_mock.py [--port N] [-v]\n")
            return 2
    m = MockLLM(port=port, verbose=verbose).start()
    print("PORT %d" % m.port, flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        m.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
