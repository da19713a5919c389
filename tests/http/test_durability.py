# SPDX-License-Identifier: MIT
"""Durability and process behaviour: acknowledged writes survive kill -9, graceful SIGTERM,
configuration errors stop `serve` with exit 2 naming the variable."""

import json
import os
import signal
import stat
import subprocess
import tempfile
import shutil
import time
import unittest

from harness import (GENEROUS_LIMITS, Server, ServerTestCase, binary_path, clean_env, free_port,
                     raw_head, read_response)

NEW = {"role": "Archivist", "category": "operations"}


class CrashTest(unittest.TestCase):

    def setUp(self):
        self.server = Server(env={"WORKFORCE_RATE_LIMITS": GENEROUS_LIMITS})
        self.addCleanup(self.server.cleanup)

    def test_kill9_keeps_acknowledged_writes(self):
        s = self.server.start()
        key = s.create_key("dur-org", tier="agency")
        test_key = s.create_key("dur-org", mode="test")
        catalog = s.get("/v1/employees?limit=1", key=key).json["total"]
        acked = {}
        for i in range(50):
            r = s.post("/v1/employees", dict(NEW, name="Durable %02d" % i,
                                             capabilities=["keep_%d" % i]), key=key)
            self.assertEqual(r.status, 200, r)
            acked[r.json["id"]] = r.json
        r = s.patch("/v1/employees/" + next(iter(acked)), {"status": "offline"}, key=key)
        self.assertEqual(r.status, 200, r)
        first = r.json
        s.kill()
        self.assertFalse(s.alive())

        s.start()
        for eid, want in acked.items():
            if eid == first["id"]:
                want = first
            r = s.get("/v1/employees/" + eid, key=key)
            self.assertEqual(r.status, 200, (eid, r))
            self.assertEqual(r.json, want)
        r = s.get("/v1/employees?limit=100", key=key)
        self.assertEqual(r.json["total"], catalog + 50)
        ids = set()
        after = None
        while True:
            r = s.get("/v1/employees?limit=100" + ("&after=" + after if after else ""), key=key)
            ids |= {e["id"] for e in r.json["employees"]}
            if not r.json["has_more"]:
                break
            after = r.json["next_cursor"]
        self.assertTrue(set(acked) <= ids)
        # Keys survive too, and test mode was not touched.
        r = s.get("/v1/employees?limit=1", key=test_key)
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json["total"], catalog)
        self.assertEqual(s.stop(), 0)

    def test_kill9_during_parallel_writes(self):
        import threading
        s = self.server.start()
        key = s.create_key("dur-par", tier="agency")
        acked, lock = [], threading.Lock()

        def writer(n):
            for i in range(10):
                try:
                    r = s.post("/v1/employees", dict(NEW, name="Par %d-%d" % (n, i)), key=key,
                               timeout=10)
                except OSError:
                    return
                if r.status == 200:
                    with lock:
                        acked.append(r.json["id"])

        threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
        for t in threads:
            t.start()
        while True:
            with lock:
                if len(acked) >= 15:
                    break
            if not any(t.is_alive() for t in threads):
                break
            time.sleep(0.005)
        s.kill()
        with lock:
            snapshot = list(acked)
        for t in threads:
            t.join(15)
        self.assertGreaterEqual(len(snapshot), 15)
        s.start()
        for eid in snapshot:
            r = s.get("/v1/employees/" + eid, key=key)
            self.assertEqual(r.status, 200, (eid, r))
        self.assertEqual(s.stop(), 0)


class ShutdownTest(unittest.TestCase):

    def setUp(self):
        self.server = Server(env={"WORKFORCE_RATE_LIMITS": GENEROUS_LIMITS})
        self.addCleanup(self.server.cleanup)

    def test_sigterm_exits_0(self):
        s = self.server.start()
        self.assertEqual(s.get("/healthz").status, 200)
        t0 = time.time()
        self.assertEqual(s.stop(timeout=35), 0)
        self.assertLess(time.time() - t0, 10, "an idle server stops promptly")

    def test_ready_line(self):
        s = self.server.start()
        self.assertIn("workforce: listening on http://127.0.0.1:%d" % s.port, s.log_text())
        self.assertEqual(s.stop(), 0)

    def test_sigint_exits_0(self):
        s = self.server.start()
        os.kill(s.proc.pid, signal.SIGINT)
        self.assertEqual(s.proc.wait(35), 0)

    @staticmethod
    def within(fn, timeout):
        """A bounded wait on a condition: whether it held within 'timeout' seconds."""
        deadline = time.time() + timeout
        while not fn():
            if time.time() > deadline:
                return False
            time.sleep(0.02)
        return True

    def until(self, fn, what, timeout=20.0):
        if not self.within(fn, timeout):
            self.fail("%s: not within %.0fs\n%s" % (what, timeout, self.server.log_tail()))

    def hold_slot(self, s, key, body, attempts=5):
        """
        A socket whose POST has its headers and a part of its body in, and holds the key's one
        concurrency slot. The probe (GET /v1/account, 429 while the slot is held) is itself a
        request: when it reaches the server before the POST's headers do, it takes the slot,
        the POST is refused (answered once its body is in) and every later probe passes. That
        attempt is finished and another one made.
        """
        for _ in range(attempts):
            sock = s.connect(timeout=20)
            sock.sendall(raw_head("POST", "/v1/employees", "127.0.0.1", {
                "Authorization": "Bearer " + key, "Content-Type": "application/json",
                "Content-Length": str(len(body)), "Connection": "close"}) + body[:7])
            if self.within(lambda: s.get("/v1/account", key=key).status == 429, 10):
                return sock
            try:
                sock.sendall(body[7:])
                read_response(sock, timeout=20)
            finally:
                sock.close()
        self.fail("the server has the request: not in %d attempts\n%s" %
                  (attempts, self.server.log_tail()))

    def test_sigterm_finishes_request_in_flight(self):
        # one request at a time for this tier: a second one is refused while the first is
        # in flight, which is how the test knows the server has it
        self.server.extra_env["WORKFORCE_RATE_LIMITS"] = GENEROUS_LIMITS.replace(
            "agency:100000/100000/100", "agency:100000/100000/1")
        s = self.server.start()
        key = s.create_key("dur-term", tier="agency")
        body = json.dumps(dict(NEW, name="Last Words")).encode()
        sock = self.hold_slot(s, key, body)
        try:
            os.kill(s.proc.pid, signal.SIGTERM)
            self.until(lambda: "draining requests in flight" in s.log_text() or
                       s.proc.poll() is not None, "the server took the signal")
            self.assertIsNone(s.proc.poll(), "exited with a request in flight")
            sock.sendall(body[7:])
            r = read_response(sock, timeout=20)
        finally:
            sock.close()
        self.assertEqual(r.status, 200, r)
        self.assertEqual(s.proc.wait(35), 0)
        # The write it acknowledged is there after a restart.
        s.start()
        r = s.get("/v1/employees/" + json.loads(r.body)["id"], key=key)
        self.assertEqual(r.status, 200, r)
        self.assertEqual(s.stop(), 0)


class ConfigTest(unittest.TestCase):
    """Environment handling of `serve`."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="workforce-http-cfg-")
        self.addCleanup(shutil.rmtree, self.tmp, True)

    def serve(self, env, timeout=10):
        port = free_port()
        try:
            return subprocess.run(
                [binary_path(), "serve", "--listen", "127.0.0.1:%d" % port, "--database",
                 os.path.join(self.tmp, "workforce.db")],
                capture_output=True, text=True, env=clean_env(env), timeout=timeout,
                stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            self.fail("serve kept running with env %r" % env)

    def test_unknown_variable_exits_2(self):
        for name in ("WORKFORCE_FOO", "WORKFORCE_LISTN", "WORKFORCE_RATE_LIMIT",
                     "WORKFORCE_"):
            with self.subTest(name=name):
                p = self.serve({name: "1"})
                self.assertEqual(p.returncode, 2, p.stderr)
                self.assertIn(name, p.stderr)

    def test_malformed_rate_limits_exits_2(self):
        for value in ("starter:5/3", "bogus:5/3/2", "starter:a/b/c", "starter", "starter:5/3/2/1",
                      "starter:-5/3/2", "starter=5/3/2", "starter:5/3/x,manager:1/1/1"):
            with self.subTest(value=value):
                p = self.serve({"WORKFORCE_RATE_LIMITS": value})
                self.assertEqual(p.returncode, 2, p.stderr)
                self.assertIn("WORKFORCE_RATE_LIMITS", p.stderr)

    def test_malformed_threads_exits_2(self):
        for value in ("abc", "-1", "2x"):
            with self.subTest(value=value):
                p = self.serve({"WORKFORCE_THREADS": value})
                self.assertEqual(p.returncode, 2, p.stderr)
                self.assertIn("WORKFORCE_THREADS", p.stderr)

    def test_tolerated_and_known_variables_start(self):
        env = {"WORKFORCE_TEST_PG_URL": "postgres://nobody@127.0.0.1:1/none",
               "WORKFORCE_THREADS": "3",
               "WORKFORCE_RATE_LIMITS": "starter:60/10/5,manager:300/50/20"}
        srv = Server(env=env, tmpdir=self.tmp)
        try:
            srv.start()
            self.assertEqual(srv.get("/healthz").status, 200)
            self.assertEqual(srv.stop(), 0)
        finally:
            srv.kill()

    def test_public_url_in_doc_url(self):
        srv = Server(env={"WORKFORCE_PUBLIC_URL": "https://api.example.test"}, tmpdir=self.tmp)
        try:
            srv.start()
            r = srv.get("/v1/employees")
            self.assertEqual(r.status, 401)
            self.assertEqual(r.json["error"]["doc_url"],
                             "https://api.example.test/docs/errors/missing_api_key")
            self.assertEqual(srv.stop(), 0)
        finally:
            srv.kill()

    def test_secret_file_mode_0600(self):
        srv = Server(tmpdir=self.tmp)
        try:
            srv.start()
            srv.create_key("cfg-secret")
            path = os.path.join(self.tmp, "server.secret")
            self.assertTrue(os.path.exists(path), "server.secret beside the database")
            self.assertEqual(stat.S_IMODE(os.stat(path).st_mode), 0o600)
            self.assertEqual(srv.stop(), 0)
        finally:
            srv.kill()

    def test_secret_file_setting(self):
        path = os.path.join(self.tmp, "elsewhere.secret")
        srv = Server(env={"WORKFORCE_SECRET_FILE": path}, tmpdir=self.tmp)
        try:
            srv.start()
            key = srv.cli("keys", "create", "--org", "cfg-sf",
                          env={"WORKFORCE_SECRET_FILE": path}).stdout.strip()
            self.assertTrue(os.path.exists(path))
            self.assertEqual(srv.get("/v1/account", key=key).status, 200)
            self.assertEqual(srv.stop(), 0)
        finally:
            srv.kill()
