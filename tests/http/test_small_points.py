# SPDX-License-Identifier: MIT
"""The smaller points of issue 26 (finding 8) that are the server's own, black-box.

- Every answer carries X-Content-Type-Options: nosniff once: JSON successes and errors (those
  of the router, of a handler, and of the HTTP layer's own framing checks), the event stream
  of a chat, the metrics text and the API document.
- An error message never quotes a path or method that holds anything but the characters routes
  are made of (a path decoded to markup, a lowercase method): before, "No such route: GET
  /v1/<script>..." sent back whatever the client had put there.
- One client address holds at most WORKFORCE_CONNECTIONS_PER_ADDRESS connections: one more is
  closed at once, the ones it holds keep working, a place freed is taken again, and the log
  says so without a line per refused connection.
- `serve` with a postgres:// database that does not answer exits with status 2, naming
  WORKFORCE_DATABASE (it was 1).
"""

import os
import socket
import subprocess
import uuid

from harness import (GENEROUS_LIMITS, ServerTestCase, binary_path, clean_env, free_port,
                     raw_head, read_response)


class NosniffAndMessagesTest(ServerTestCase):
    server_env = {"WORKFORCE_RATE_LIMITS": GENEROUS_LIMITS}

    @classmethod
    def setUpServer(cls):
        cls.key = cls.server.create_key("ns-" + uuid.uuid4().hex[:6], mode="test", credits=10)

    def nosniff(self, r, what):
        self.assertEqual(r.header_all("X-Content-Type-Options"), ["nosniff"], "%s: %r" % (what, r))

    def test_every_answer_says_nosniff(self):
        srv, key = self.server, self.key
        emp = srv.get("/v1/employees?limit=1", key=key).json["employees"][0]["id"]
        cases = [
            ("GET /v1/account", srv.get("/v1/account", key=key), 200),
            ("no key", srv.get("/v1/account"), 401),
            ("no route", srv.get("/v1/nothing-here", key=key), 404),
            ("wrong method", srv.request("PUT", "/v1/account", key=key), 405),
            ("bad body", srv.post("/v1/tasks", {"nope": 1}, key=key), 400),
            ("a handler's 404", srv.get("/v1/tasks/task_missing", key=key), 404),
            ("metrics", srv.get("/metrics"), 200),
            ("healthz", srv.get("/healthz"), 200),
            ("openapi", srv.get("/v1/openapi.json"), 200),
            ("chat stream", srv.post("/v1/chat/stream", {"employee_id": emp, "message": "hi"},
                                     key=key), 200),
        ]
        for what, r, status in cases:
            with self.subTest(what=what):
                self.assertEqual(r.status, status, r)
                self.nosniff(r, what)
        # refused by the HTTP layer before any route (two Content-Length headers)
        with socket.create_connection(("127.0.0.1", srv.port), timeout=15) as s:
            s.sendall(b"POST /v1/chat HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n"
                      b"Content-Length: 2\r\n\r\n{}")
            r = read_response(s)
        self.assertEqual(r.status, 400, r)
        self.nosniff(r, "framing")

    def test_messages_never_quote_other_characters(self):
        srv, key = self.server, self.key
        r = srv.get("/v1/nothing-here", key=key)
        msg = self.assertError(r, 404, "route_not_found")["message"]
        self.assertIn("GET /v1/nothing-here", msg)
        for path in ("/v1/%3Cscript%3Ealert(1)%3C/script%3E", "/v1/%22%27%0d%0aX-Evil:%201",
                     "/v1/" + "a" * 300, "/v1/%E2%80%AE%F0%9F%98%80"):
            with self.subTest(path=path[:40]):
                for k in (key, None):
                    r = srv.get(path, key=k)
                    msg = self.assertError(r, 404, "route_not_found")["message"]
                    for bad in ("<", ">", "script", "\"", "'", "\r", "\n", "aaaa", "\u202e"):
                        self.assertNotIn(bad, msg)
        # an unknown hook token: the path is quoted only because it is made of route characters
        r = srv.post("/v1/hooks/%3Cb%3E", {}, key=None)
        self.assertNotIn("<b>", self.assertError(r, 404, "route_not_found")["message"])
        # an events route of a provider that does not exist (or receives no events): the same
        for path in ("/v1/integrations/%3Cb%3Ex/events/tok", "/v1/integrations/%3Cb%3E/events",
                     "/v1/integrations/hubspot/events/%3Cb%3E"):
            with self.subTest(path=path):
                r = srv.post(path, {}, key=None)
                msg = self.assertError(r, 404, "route_not_found")["message"]
                self.assertNotIn("<b>", msg)
        # a method that is not capital letters is not quoted either
        with socket.create_connection(("127.0.0.1", srv.port), timeout=15) as s:
            s.sendall(raw_head("get", "/v1/account", "x", {"Authorization": "Bearer " + key}))
            r = read_response(s)
        err = self.assertError(r, 405, "method_not_allowed")
        self.assertNotIn("get", err["message"])
        self.assertIn("Allowed: GET", err["message"])
        r = srv.request("PUT", "/v1/account", key=key)
        self.assertIn("Method PUT", self.assertError(r, 405, "method_not_allowed")["message"])


class PerAddressLimitTest(ServerTestCase):
    server_env = {"WORKFORCE_RATE_LIMITS": GENEROUS_LIMITS,
                  "WORKFORCE_CONNECTIONS_PER_ADDRESS": "3"}

    def open_conn(self):
        return socket.create_connection(("127.0.0.1", self.server.port), timeout=15)

    def ask(self, s):
        """GET /healthz on the open connection 's' (keep-alive): its status, or None when the
        server closed the connection without an answer."""
        try:
            s.sendall(raw_head("GET", "/healthz", "x", {}))
            return read_response(s).status
        except (ConnectionError, OSError, ValueError, IndexError):
            return None

    def a_place(self, held):
        """Open a connection and ask on it; keep it in 'held' when it was answered."""
        s = self.open_conn()
        if self.ask(s) == 200:
            held.append(s)
            return True
        s.close()
        return False

    def test_one_address_holds_at_most_the_limit(self):
        srv = self.server
        held = []
        try:
            # (the server may not have seen the close of the harness's own first connection
            # yet: a place taken by it comes free within moments)
            for i in range(3):
                self.poll(lambda: self.a_place(held), "connection %d" % (i + 1), timeout=15,
                          step=0.05)
            for _ in range(5):  # over the limit: closed without an answer, each time
                extra = self.open_conn()
                try:
                    self.assertIsNone(self.ask(extra))
                finally:
                    extra.close()
            for s in held:  # the ones held still work
                self.assertEqual(self.ask(s), 200)
            held.pop().close()
            self.poll(lambda: self.a_place(held), "a connection once one was closed",
                      timeout=15, step=0.05)
        finally:
            for s in held:
                s.close()
        lines = [ln for ln in srv.log_text().splitlines() if "closed at once" in ln]
        self.assertGreaterEqual(len(lines), 1, srv.log_tail())
        self.assertLess(len(lines), 5, "one log line per refused connection:\n" + "\n".join(lines))
        self.assertIn("per client address (3)", lines[0])


class UnreachableDatabaseTest(ServerTestCase):
    def test_serve_exits_2_naming_the_setting(self):
        tmp = self.server.tmpdir
        port = free_port()  # nothing listens there
        env = clean_env({"WORKFORCE_SECRET_FILE": os.path.join(tmp, "pg.secret"),
                         "WORKFORCE_FILES_DIR": os.path.join(tmp, "pg-files")})
        for url in ("postgres://nobody:pw@127.0.0.1:%d/none" % port,
                    "postgresql://127.0.0.1:%d/none?connect_timeout=5" % port):
            with self.subTest(url=url):
                p = subprocess.run([binary_path(), "serve", "--listen",
                                    "127.0.0.1:%d" % free_port(), "--database", url],
                                   env=env, capture_output=True, text=True, timeout=60,
                                   stdin=subprocess.DEVNULL)
                self.assertEqual(p.returncode, 2, p.stderr)
                self.assertIn("WORKFORCE_DATABASE", p.stderr)
                self.assertNotIn(":pw@", p.stderr)
