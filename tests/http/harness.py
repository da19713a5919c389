# SPDX-License-Identifier: MIT
"""Black-box harness for the Workforce server (Python 3.11 standard library only).

Starts build/workforce (or $WORKFORCE_BIN) on a free 127.0.0.1 port with a fresh
temporary database, waits for /healthz, and stops it with SIGTERM (or SIGKILL for
the crash test) by its own PID. The server's stderr goes to a file in the temp dir
(`server.log`) so tests can read it and a failure can show its tail.

Also: CLI helpers (keys create/list/revoke, orgs update), an http.client request
helper returning status, headers and parsed JSON, a raw-socket helper for requests
http.client cannot send (huge Content-Length without a body, slow uploads,
chunked bodies), and a ServerTestCase base class (one server per test class).

With WORKFORCE_HTTP_PG_URL set (a PostgreSQL the test scripts started: tests/pg/pg.sh), every
Server is instead WORKFORCE_HTTP_NODES nodes (default 2) on a database of its own in that
PostgreSQL, and its requests alternate between the nodes; a test of a SQLite-only feature is
skipped there (sqlite_only), and a test of several nodes is skipped on SQLite (pg_only). One node
can be killed (kill_node) and started again on its port (start_node).

With WORKFORCE_HTTP_ANSWERS set (tests/http/run.py sets it), every answer read by
Server.request() or read_response() is appended to that file as one JSON line (method, path,
status, content type, the body when it is JSON), and tests/openapi/validate_answers.mjs checks
each against the API document's response for its operation and status.
"""

import collections
import gzip
import http.client
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
PG_URL = os.environ.get("WORKFORCE_HTTP_PG_URL", "")
PG_NODES = int(os.environ.get("WORKFORCE_HTTP_NODES", "2") or "2")
# With PostgreSQL, the nodes' shared rate limits in this Redis (else in the database).
REDIS_URL = os.environ.get("WORKFORCE_HTTP_REDIS_URL", "")


# Leases in the PostgreSQL runs: short, so that a test that kills every node sees the work of
# the dead ones taken back by their successors within its deadline.
PG_LEASE_SECONDS = "6"


def sqlite_only(why):
    """Skip a test (or class) on the PostgreSQL runs: 'why' it is SQLite's alone."""
    return unittest.skipIf(bool(PG_URL), "SQLite only: " + why)


def pg_only(why):
    """Skip a test (or class) on the SQLite runs: 'why' it needs PostgreSQL (several nodes)."""
    return unittest.skipUnless(bool(PG_URL), "PostgreSQL only: " + why)


def pg_database_url(name):
    """The URL of database 'name' in the PostgreSQL of WORKFORCE_HTTP_PG_URL."""
    return PG_URL.rsplit("/", 1)[0] + "/" + name


def pg_admin(sql):
    """Run 'sql' on the PostgreSQL of WORKFORCE_HTTP_PG_URL (psql)."""
    subprocess.run(["psql", PG_URL, "-q", "-v", "ON_ERROR_STOP=1", "-c", sql], check=True,
                   stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, timeout=60)
REPO_ROOT = os.path.dirname(os.path.dirname(HERE))

# ---- Constants from the contract and /work/spec-issue2.md ----

MIB = 1024 * 1024
TS_RE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
REQ_ID_RE = re.compile(r"^req_[A-Za-z0-9]{24}$")
KEY_RE = re.compile(r"^svc_(live|test)_sk_[A-Za-z0-9]{40}$")
KEY_ID_RE = re.compile(r"^key_[A-Za-z0-9]{24}$")
EMP_ID_RE = re.compile(r"^emp_[A-Za-z0-9]{20,}$")
ORG_ID_RE = re.compile(r"^org_[A-Za-z0-9]{20,}$")
CAPABILITY_RE = re.compile(r"^[a-z][a-z0-9_]{0,63}$")

CATEGORIES = ["operations", "sales", "engineering", "marketing", "support", "finance", "hr"]
EMP_TIERS = ["starter", "manager"]
STATUSES = ["active", "idle", "offline"]
SCOPES = ["employees:read", "employees:write", "chat", "conversations", "tasks",
          "knowledge", "workflows", "integrations"]

LIST_ITEM_FIELDS = {"id", "name", "role", "category", "status", "capabilities", "tier"}
# the detail of the reference, and the tool rules of contract §19
DETAIL_FIELDS = LIST_ITEM_FIELDS | {"description", "tools", "stats", "created_at"}
DETAIL_STATS_FIELDS = {"tasks_completed_today", "avg_response_time_ms", "satisfaction_score"}
STATS_FIELDS = {"employee_id", "period", "from", "to", "messages", "conversations",
                "tasks_completed", "tasks_failed", "workflow_steps", "avg_response_time_ms",
                "p95_response_time_ms", "credits_used", "satisfaction_score", "ratings", "series"}
SERIES_FIELDS = {"start", "messages", "tasks_completed", "credits_used"}

DEFAULT_TIER_LIMITS = {
    "starter": {"requests_per_minute": 60, "burst": 10, "concurrent": 5},
    "manager": {"requests_per_minute": 300, "burst": 50, "concurrent": 20},
    "agency": {"requests_per_minute": 1000, "burst": 200, "concurrent": 100},
}

ERROR_CODES = {
    "invalid_request": 400, "idempotency_key_reused": 400, "integration_not_configured": 400,
    "missing_api_key": 401, "invalid_api_key": 401,
    "insufficient_credits": 402,
    "permission_denied": 403,
    "route_not_found": 404, "employee_not_found": 404, "conversation_not_found": 404,
    "message_not_found": 404, "task_not_found": 404, "document_not_found": 404,
    "workflow_not_found": 404, "run_not_found": 404, "provider_not_found": 404,
    "method_not_allowed": 405,
    "employee_offline": 409, "idempotency_key_in_use": 409,
    "request_too_large": 413, "file_too_large": 413,
    "unsupported_media_type": 415, "unsupported_file_type": 415,
    "rate_limit_exceeded": 429, "concurrency_limit_exceeded": 429,
    "internal_error": 500, "upstream_error": 502, "service_unavailable": 503,
}

# 'param' of a missing resource named in the path: absent, or "id" as Stripe does
# (the contract only says param is present when a parameter is at fault).
ID_PARAM = frozenset({None, "id"})

# Generous limits for servers whose tests are not about rate limiting (test keys always get
# the starter row, so every row is raised).
GENEROUS_LIMITS = "starter:100000/100000/100,manager:100000/100000/100,agency:100000/100000/100"


def binary_path():
    """The server binary: $WORKFORCE_BIN (relative to the cwd) or build/workforce in the repo."""
    b = os.environ.get("WORKFORCE_BIN")
    if b:
        return os.path.abspath(b)
    return os.path.join(REPO_ROOT, "build", "workforce")


def clean_env(extra=None):
    """The environment for the binary: ours minus every WORKFORCE_* variable, plus 'extra'."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("WORKFORCE_")}
    if extra:
        env.update(extra)
    return env


def next_millisecond(gap=10):
    """Until the clock has moved 'gap' milliseconds on, so that the next record the server makes
    has a later created_at than the last one (timestamps are in milliseconds). A condition on
    the clock, not a pause on the server."""
    start = int(time.time() * 1000)
    while int(time.time() * 1000) < start + gap:
        time.sleep(0.001)


def free_port():
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def parse_ts(ts):
    """Seconds since the epoch of a contract timestamp such as 2026-11-21T09:30:00.123Z."""
    import datetime
    dt = datetime.datetime.strptime(ts, "%Y-%m-%dT%H:%M:%S.%fZ")
    return dt.replace(tzinfo=datetime.timezone.utc).timestamp()


# ---- Responses ----

class Response:
    """A finished HTTP exchange: status, headers (case-insensitive), raw body, parsed JSON."""

    def __init__(self, status, headers, body):
        self.status = status
        self.headers = headers  # list of (name, value)
        self.body = body
        self.json = None
        try:
            self.json = json.loads(body.decode("utf-8")) if body else None
        except (ValueError, UnicodeDecodeError):
            self.json = None

    def header(self, name, default=None):
        name = name.lower()
        for k, v in self.headers:
            if k.lower() == name:
                return v
        return default

    def header_all(self, name):
        name = name.lower()
        return [v for k, v in self.headers if k.lower() == name]

    @property
    def error(self):
        if isinstance(self.json, dict) and isinstance(self.json.get("error"), dict):
            return self.json["error"]
        return None

    def __repr__(self):
        b = self.body[:600]
        return "<Response %s %r>" % (self.status, b)


# ---- Answers for the response-schema check ----

# The test running now (tests/http/run.py sets it), named in each recorded answer.
current_test = None
_answers_lock = threading.Lock()
ANSWER_BODY_MAX = 1024 * 1024


def _trimmed(v):
    if isinstance(v, list):
        return [_trimmed(x) for x in v[:100]]
    if isinstance(v, dict):
        return {k: _trimmed(x) for k, x in v.items()}
    if isinstance(v, str):
        return v[:10000]
    return v


def record_answer(method, path, r):
    """Append the answer 'r' to 'method path' as one JSON line to $WORKFORCE_HTTP_ANSWERS
    (nothing when it is unset): tests/openapi/validate_answers.mjs validates each answer against
    the API document's response for its operation and status. The body is kept when the content
    type is JSON (as text when it does not parse, which the check reports); other bodies are not
    kept, only their content type. method and path are None when not known."""
    out = os.environ.get("WORKFORCE_HTTP_ANSWERS")
    if not out or method == "HEAD":
        return
    ct = r.header("Content-Type", "") or ""
    line = {"test": current_test, "method": method, "path": path, "status": r.status,
            "content_type": ct}
    media = ct.split(";", 1)[0].strip().lower()
    if media == "application/json" or media.endswith("+json"):
        raw, parsed = r.body, r.json
        if (r.header("Content-Encoding") or "").lower() == "gzip":
            try:
                raw = gzip.decompress(raw)
                parsed = json.loads(raw.decode("utf-8"))
            except (OSError, EOFError, ValueError):
                parsed = None
        if parsed is not None or raw == b"null":
            line["body"] = parsed
            if len(raw) > ANSWER_BODY_MAX:
                # a very large answer (a long conversation): its first array items and the
                # beginning of its long strings, which only makes it smaller
                line["body"] = _trimmed(parsed)
                line["trimmed_from"] = len(raw)
        else:
            line["text"] = raw[:2000].decode("utf-8", "replace")
    data = (json.dumps(line, separators=(",", ":")) + "\n").encode("utf-8")
    with _answers_lock:
        with open(out, "ab") as f:
            f.write(data)


class RecordingSocket:
    """A socket of Server.connect(), which notes the request line of each request sent on it
    (a send that begins with one), so that read_response() can record its answer with its
    method and path. Everything else is the socket's own."""

    REQUEST_LINE = re.compile(rb"([A-Z]+) (\S+) HTTP/1\.[01]\r\n")

    def __init__(self, sock):
        self._sock = sock
        self.requests = collections.deque()

    def _note(self, data):
        m = self.REQUEST_LINE.match(bytes(data[:8192]))
        if m:
            self.requests.append((m.group(1).decode(), m.group(2).decode("latin-1")))

    def sendall(self, data, *args):
        self._note(data)
        return self._sock.sendall(data, *args)

    def send(self, data, *args):
        self._note(data)
        return self._sock.send(data, *args)

    def __getattr__(self, name):
        return getattr(self._sock, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self._sock.close()


# ---- The server process ----

class Server:
    """One workforce server with its own temp dir and database."""

    def __init__(self, env=None, tmpdir=None, nodes=None):
        self.bin = binary_path()
        self.nodes = nodes or (PG_NODES if PG_URL else 1)
        self.extra_env = dict(env or {})
        self.own_tmp = tmpdir is None
        self.tmpdir = tmpdir or tempfile.mkdtemp(prefix="workforce-http-")
        self.db = os.path.join(self.tmpdir, "workforce.db")
        self.log_path = os.path.join(self.tmpdir, "server.log")
        self.proc = None
        self.procs = []
        self.port = None
        self.ports = []
        self.turn = 0
        self.host = "127.0.0.1"
        self.starts = 0
        self.pg_db = None
        if PG_URL:
            self.pg_db = "wf_" + os.path.basename(self.tmpdir).replace("-", "_").lower()
            pg_admin("CREATE DATABASE %s" % self.pg_db)
            self.db = pg_database_url(self.pg_db)
            self.extra_env.setdefault("WORKFORCE_SECRET_FILE",
                                      os.path.join(self.tmpdir, "server.secret"))
            self.extra_env.setdefault("WORKFORCE_FILES_DIR", os.path.join(self.tmpdir, "files"))
            self.extra_env.setdefault("WORKFORCE_LEASE_SECONDS", PG_LEASE_SECONDS)
            if REDIS_URL:
                self.extra_env.setdefault("WORKFORCE_REDIS_URL", REDIS_URL)
        self.pin = None  # a node index: every request goes to it (per-node observations)

    # -- lifecycle --

    def start(self, timeout=15.0, port=None):
        """Start (again) on 'port', or on a free one (on PostgreSQL: every node)."""
        if not os.path.exists(self.bin):
            raise RuntimeError("server binary not found: %s (run make, or set WORKFORCE_BIN)"
                               % self.bin)
        n = self.nodes
        ports = [port or free_port()] + [free_port() for _ in range(n - 1)]
        self.starts += 1
        # Nodes of an earlier start that a test left running (it stopped only the first, as
        # one node would be stopped) are killed, not orphaned: they would outlive the run.
        self.kill()
        self.procs, self.ports = [], []
        env = dict(self.extra_env)
        if n > 1:
            # behind one address, as behind a load balancer: links name the same place
            env.setdefault("WORKFORCE_PUBLIC_URL", "http://%s:%d" % (self.host, ports[0]))
        for i, p in enumerate(ports):
            for attempt in range(3):
                self.port = p
                log = open(self.log_path, "ab")
                log.write(("\n==== start %d port %d ====\n" % (self.starts, p)).encode())
                log.flush()
                proc = subprocess.Popen(
                    [self.bin, "serve", "--listen", "%s:%d" % (self.host, p),
                     "--database", self.db],
                    stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                    env=clean_env(env), cwd=self.tmpdir)
                log.close()
                self.procs.append(proc)
                self.proc = proc
                try:
                    self.wait_healthy(proc, p, timeout)
                except RuntimeError:
                    # exited during start: retried below only when its port was taken
                    if proc.poll() is None or ("cannot listen on %s:%d" % (self.host, p)) not in \
                            self.log_text().rsplit("port %d ====" % p, 1)[-1]:
                        raise
                # A port picked free can be taken before the node binds it (by another
                # listener of the test, or a connection's local port): then the health check
                # may have reached that other listener. The node's own log line decides.
                if self.listened(proc, p, timeout):
                    break
                self.procs.remove(proc)
                if proc.poll() is None:
                    proc.kill()
                proc.wait(10)
                if (i == 0 and port) or attempt == 2:
                    raise RuntimeError("server could not listen on port %d:\n%s"
                                       % (p, self.log_tail()))
                p = free_port()
                if i == 0 and n > 1 and "WORKFORCE_PUBLIC_URL" not in self.extra_env:
                    env["WORKFORCE_PUBLIC_URL"] = "http://%s:%d" % (self.host, p)
            self.ports.append(p)
        self.proc, self.port = self.procs[0], self.ports[0]
        return self

    def wait_healthy(self, proc, port, timeout):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if proc.poll() is not None:
                raise RuntimeError("server exited with %s during start:\n%s"
                                   % (proc.returncode, self.log_tail()))
            try:
                r = self.request("GET", "/healthz", timeout=2, port=port)
                if r.status == 200:
                    return
            except OSError:
                pass
            time.sleep(0.05)
        self.kill()
        raise RuntimeError("server did not answer /healthz within %.0fs:\n%s"
                           % (timeout, self.log_tail()))

    def listened(self, proc, port, timeout):
        """Whether 'proc' says it listens on 'port' (True) or could not (False), from the log."""
        ok = "listening on http://%s:%d" % (self.host, port)
        bad = "cannot listen on %s:%d" % (self.host, port)
        deadline = time.time() + timeout
        while time.time() < deadline:
            # what this node wrote since its start line (a restart may reuse the port)
            text = self.log_text().rsplit("port %d ====" % port, 1)[-1]
            if bad in text:
                return False
            if ok in text:
                return True
            if proc.poll() is not None:
                return False
            time.sleep(0.02)
        return False

    def alive(self):
        return bool(self.procs) and all(p.poll() is None for p in self.procs)

    # The server's own bound on a stop: 30 s of drain, 5 s more before it stops the HTTP
    # library, 2 s for parked streams, then the workers' current round. Waiting less would
    # call a stop the server makes by design a failure.
    STOP_TIMEOUT = 60.0

    def stop(self, timeout=STOP_TIMEOUT):
        """SIGTERM by PID (each node) and wait; the exit status (the first that is not 0; None
        if one had to be killed)."""
        if not self.procs:
            return None
        for p in self.procs:
            if p.poll() is None:
                os.kill(p.pid, signal.SIGTERM)
        rc = 0
        for p in self.procs:
            try:
                p.wait(timeout)
            except subprocess.TimeoutExpired:
                self.kill()
                return None
            if rc == 0:
                rc = p.returncode
        return rc

    def kill(self):
        """SIGKILL by PID (the crash test), every node."""
        for p in self.procs:
            if p.poll() is None:
                os.kill(p.pid, signal.SIGKILL)
                p.wait(10)

    def kill_node(self, i):
        """SIGKILL node i by its PID and wait for it (the others go on)."""
        p = self.procs[i]
        if p.poll() is None:
            os.kill(p.pid, signal.SIGKILL)
            p.wait(10)

    def start_node(self, i, timeout=15.0):
        """Start node i again (after kill_node or a stop) on its own port, with the same
        environment and database, and wait until it answers /healthz."""
        if self.procs[i].poll() is None:
            raise RuntimeError("node %d is still running" % i)
        env = dict(self.extra_env)
        if self.nodes > 1:
            env.setdefault("WORKFORCE_PUBLIC_URL", "http://%s:%d" % (self.host, self.ports[0]))
        port = self.ports[i]
        with open(self.log_path, "ab") as log:
            log.write(("\n==== start node %d port %d ====\n" % (i, port)).encode())
            log.flush()
            proc = subprocess.Popen(
                [self.bin, "serve", "--listen", "%s:%d" % (self.host, port),
                 "--database", self.db],
                stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                env=clean_env(env), cwd=self.tmpdir)
        self.procs[i] = proc
        if i == 0:
            self.proc = proc
        self.wait_healthy(proc, port, timeout)
        return proc

    def cleanup(self):
        self.kill()
        if self.pg_db and not os.environ.get("WORKFORCE_HTTP_KEEP"):
            try:
                pg_admin("DROP DATABASE IF EXISTS %s WITH (FORCE)" % self.pg_db)
            except (OSError, subprocess.SubprocessError):
                pass
        if self.own_tmp and not os.environ.get("WORKFORCE_HTTP_KEEP"):
            shutil.rmtree(self.tmpdir, ignore_errors=True)

    def log_text(self):
        try:
            with open(self.log_path, "rb") as f:
                return f.read().decode("utf-8", "replace")
        except OSError:
            return ""

    def log_tail(self, n=40):
        return "\n".join(self.log_text().splitlines()[-n:])

    @property
    def base_url(self):
        return "http://%s:%d" % (self.host, self.port)

    # -- CLI --

    def cli(self, *args, env=None, timeout=30):
        """Run 'workforce ARGS --database DB'; returns CompletedProcess (text)."""
        if self.pg_db:
            both = {k: v for k, v in self.extra_env.items()
                    if k in ("WORKFORCE_SECRET_FILE", "WORKFORCE_FILES_DIR")}
            both.update(env or {})
            env = both
        return run_cli(list(args) + ["--database", self.db], env=env, timeout=timeout)

    def create_key(self, org, mode="live", tier=None, scopes=None, expires_in=None,
                   credits=None):
        args = ["keys", "create", "--org", org, "--mode", mode]
        if tier is not None:
            args += ["--tier", tier]
        if scopes is not None:
            args += ["--scopes", scopes if isinstance(scopes, str) else ",".join(scopes)]
        if expires_in is not None:
            args += ["--expires-in", expires_in]
        if credits is not None:
            args += ["--credits", str(credits)]
        p = self.cli(*args)
        if p.returncode != 0:
            raise RuntimeError("keys create failed (%d): %s %s" % (p.returncode, p.stdout, p.stderr))
        return p.stdout.strip()

    def keys_list(self, org):
        """Rows of 'keys list --org ORG' as dicts."""
        p = self.cli("keys", "list", "--org", org)
        if p.returncode != 0:
            raise RuntimeError("keys list failed (%d): %s" % (p.returncode, p.stderr))
        rows = []
        names = ["id", "mode", "last4", "scopes", "created_at", "expires_at", "status"]
        for line in p.stdout.splitlines():
            if not line.strip():
                continue
            rows.append(dict(zip(names, line.split("\t"))))
        return rows

    def key_id(self, org, secret):
        for row in self.keys_list(org):
            if row.get("last4") == secret[-4:]:
                return row["id"]
        raise RuntimeError("key ending %s not listed for %s" % (secret[-4:], org))

    def revoke(self, key_id):
        return self.cli("keys", "revoke", key_id)

    def orgs_update(self, slug, tier=None, credits=None):
        args = ["orgs", "update", slug]
        if tier is not None:
            args += ["--tier", tier]
        if credits is not None:
            args += ["--credits", str(credits)]
        return self.cli(*args)

    # -- HTTP --

    def request(self, method, path, body=None, key=None, headers=None, json_body=None,
                content_type=None, timeout=30, port=None):
        """One request on a fresh connection. 'json_body' is serialised; 'body' is sent as is
        (str is UTF-8 encoded). Content-Type defaults to application/json when a body is sent.
        With several nodes, each request goes to the next one (unless 'port' names one)."""
        hdrs = {}
        if json_body is not None:
            body = json.dumps(json_body).encode()
        if isinstance(body, str):
            body = body.encode("utf-8")
        if body is not None and content_type is None:
            content_type = "application/json"
        if content_type is not None:
            hdrs["Content-Type"] = content_type
        if key is not None:
            hdrs["Authorization"] = "Bearer " + key
        if headers:
            hdrs.update(headers)
        if port is None:
            port = self.next_port()
        conn = http.client.HTTPConnection(self.host, port, timeout=timeout)
        try:
            conn.request(method, path, body=body, headers=hdrs)
            resp = conn.getresponse()
            data = resp.read()
            r = Response(resp.status, resp.getheaders(), data)
            record_answer(method, path, r)
            return r
        finally:
            conn.close()

    def next_port(self):
        """The port of the node the next request goes to (they take turns)."""
        if len(self.ports) < 2:
            return self.port
        if self.pin is not None:
            return self.ports[self.pin]
        self.turn += 1
        return self.ports[self.turn % len(self.ports)]

    def get(self, path, key=None, **kw):
        return self.request("GET", path, key=key, **kw)

    def post(self, path, json_body=None, key=None, **kw):
        return self.request("POST", path, key=key, json_body=json_body, **kw)

    def patch(self, path, json_body=None, key=None, **kw):
        return self.request("PATCH", path, key=key, json_body=json_body, **kw)

    def connect(self, timeout=30):
        s = socket.create_connection((self.host, self.port), timeout=timeout)
        return RecordingSocket(s)


def run_cli(args, env=None, timeout=30):
    return subprocess.run([binary_path()] + list(args), capture_output=True, text=True,
                          env=clean_env(env), timeout=timeout, stdin=subprocess.DEVNULL)


# ---- Raw HTTP over a socket ----

def raw_head(method, path, host, headers):
    lines = ["%s %s HTTP/1.1" % (method, path), "Host: %s" % host]
    lines += ["%s: %s" % (k, v) for k, v in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def read_response(sock, timeout=15.0):
    """Read one HTTP/1.1 response from a socket (Content-Length, chunked, or until close)."""
    sock.settimeout(timeout)
    f = sock.makefile("rb")
    try:
        status_line = f.readline()
        if not status_line:
            raise ConnectionResetError("connection closed before a response")
        parts = status_line.decode("latin-1").split(" ", 2)
        status = int(parts[1])
        headers = []
        while True:
            line = f.readline()
            if line in (b"\r\n", b"\n", b""):
                break
            k, _, v = line.decode("latin-1").partition(":")
            headers.append((k.strip(), v.strip()))
        hd = {k.lower(): v for k, v in headers}
        body = b""
        if "content-length" in hd:
            body = f.read(int(hd["content-length"]))
        elif hd.get("transfer-encoding", "").lower() == "chunked":
            while True:
                size = int(f.readline().split(b";")[0].strip(), 16)
                if size == 0:
                    f.readline()
                    break
                body += f.read(size)
                f.readline()
        else:
            body = f.read()
        r = Response(status, headers, body)
        sent = getattr(sock, "requests", None)
        method, path = sent.popleft() if sent else (None, None)
        record_answer(method, path, r)
        return r
    finally:
        f.close()


# ---- Test base class ----

class ServerTestCase(unittest.TestCase):
    """One server per test class. Subclasses set 'server_env' and may override setUpServer."""

    server_env = {"WORKFORCE_RATE_LIMITS": GENEROUS_LIMITS}
    server = None
    # What a class observes of one node (its metrics, its caches' counters, its rate limiter):
    # with several nodes, every request of the class goes to the first.
    one_node = False
    # What a class needs of one process (the order of one worker's work): one node only.
    single_node = False

    @classmethod
    def setUpClass(cls):
        global current_test
        current_test = "%s.%s (setUpClass)" % (cls.__module__, cls.__qualname__)
        cls.server = Server(env=cls.server_env, nodes=1 if cls.single_node else None)
        if cls.one_node:
            cls.server.pin = 0
        try:
            cls.server.start()
            cls.setUpServer()
        except BaseException:
            cls.server.cleanup()
            raise

    @classmethod
    def setUpServer(cls):
        pass

    @classmethod
    def tearDownClass(cls):
        srv = cls.server
        crashed = srv.proc is not None and srv.proc.poll() is not None
        t0 = time.time()
        rc = srv.stop()
        took = time.time() - t0
        tail = srv.log_tail()
        # Issue 29: whatever the class did, every balance equals the sum of its ledger entries
        # (on SQLite, and on PostgreSQL with several nodes)
        ledger = srv.cli("credits", "check") if rc == 0 and not crashed else None
        srv.cleanup()
        if crashed:
            raise AssertionError("server died during %s (exit %s):\n%s" % (cls.__name__, rc, tail))
        if rc != 0:
            # A graceful stop exits 0; anything else is a failed drain, or a sanitizer report
            # (leaks are reported at exit under ASan).
            raise AssertionError("server of %s exited with %s on SIGTERM after %.1f s:\n%s"
                                 % (cls.__name__, rc, took, tail))
        if ledger is not None and ledger.returncode != 0:
            raise AssertionError("after %s, a balance differs from the sum of its ledger:\n%s%s"
                                 % (cls.__name__, ledger.stdout, ledger.stderr))
        if took > 10:
            # not a failure (the drain is bounded by design), but a test left work behind
            sys.stderr.write("\nnote: the server of %s took %.1f s to stop\n" % (cls.__name__, took))

    # -- waiting and assertions shared by the suites --

    def poll(self, fn, what, timeout=240.0, step=0.05):
        """Call fn() until it returns something true (returned) or 'timeout' seconds pass (a
        failure naming 'what', with the server log's tail): a bounded wait on a condition."""
        deadline = time.time() + timeout
        while True:
            v = fn()
            if v:
                return v
            if time.time() > deadline:
                self.fail("%s: not within %.0fs\n%s" % (what, timeout, self.server.log_tail()))
            time.sleep(step)

    def metrics(self):
        """/metrics of every node, one after the other (counters are per node)."""
        srv = self.server
        return "\n".join(srv.get("/metrics", port=p).body.decode() for p in srv.ports or [srv.port])

    def finished(self, route, method):
        """How many requests of 'method route' the server has finished (any status, or the
        client gone), from /metrics of every node: a request's concurrency slot is released
        when it ends."""
        m = self.metrics()
        pat = re.compile(r'^workforce_http_requests_total\{route="%s",method="%s",status="[^"]*"\}'
                         r' (\d+)$' % (re.escape(route), method), re.M)
        return sum(int(v) for v in pat.findall(m))

    def wait_finished(self, route, method, n, timeout=15.0):
        """Until the server has finished 'n' requests of 'method route' (see finished())."""
        self.poll(lambda: self.finished(route, method) >= n,
                  "%d %s %s requests finished" % (n, method, route), timeout, step=0.02)

    def assertJson(self, r, status=200):
        """Status, JSON content type, X-Request-Id; returns the parsed body."""
        self.assertEqual(r.status, status, r)
        ct = r.header("Content-Type", "")
        self.assertTrue(ct.lower().startswith("application/json"), "Content-Type %r" % ct)
        self.assertIsNotNone(r.json, "body is not JSON: %r" % r.body[:300])
        self.assertRequestId(r)
        return r.json

    def assertRequestId(self, r):
        rid = r.header("X-Request-Id")
        self.assertIsNotNone(rid, "no X-Request-Id on %r" % r)
        self.assertRegex(rid, r"^[A-Za-z0-9._-]{1,128}$")

    def assertError(self, r, status, code, param=None, srv=None):
        """A contract error: status, body {"error":{code,message,param?,doc_url}}.
        'param' None means the field must be absent; a set means any of those values."""
        body = self.assertJson(r, status)
        self.assertEqual(set(body.keys()), {"error"}, body)
        err = body["error"]
        self.assertEqual(err.get("code"), code, body)
        self.assertTrue(set(err.keys()) <= {"code", "message", "param", "doc_url"}, body)
        self.assertIsInstance(err.get("message"), str, body)
        self.assertTrue(err["message"], body)
        if param is None:
            self.assertNotIn("param", err, body)
        elif isinstance(param, (set, frozenset, list, tuple)):
            # None in the set: the field may also be absent.
            self.assertIn(err.get("param"), param, body)
        else:
            self.assertEqual(err.get("param"), param, body)
        srv = srv or self.server
        self.assertEqual(err.get("doc_url"), "%s/docs/errors/%s" % (srv.base_url, code), body)
        return err


def wait_for_safe_window(need=10):
    """Sleep until at least 'need' seconds remain in the current clock minute."""
    sec = time.time() % 60
    if sec > 60 - need:
        time.sleep(60 - sec + 0.3)
