# SPDX-License-Identifier: MIT
"""Faults of the services several nodes share (issue "Scale-out"): two nodes on a PostgreSQL
and a Redis of this test's own (tests/pg/pg.sh, tests/redis/redis.sh), each stopped and started
again on its port while the nodes run.

- Redis goes: the limits are kept in the database, with a warning in the log, and still hold
  across the nodes (no outage); /readyz answers 503 meanwhile. Redis comes back: the nodes use
  it again by themselves.
- PostgreSQL goes: every request that needs it is answered 503 service_unavailable (never a
  wrong answer, never a 500); /readyz answers 503. It comes back: the nodes answer again by
  themselves.
Run on the PostgreSQL run of the suite only (it needs PostgreSQL's programs and is about
several nodes)."""

import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

from harness import PG_URL, REDIS_URL, ServerTestCase, Server, wait_for_safe_window

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def script(name, *args):
    """Run tests/<name> with 'args': its stdout (stripped); raises when it fails."""
    p = subprocess.run(["sh", os.path.join(ROOT, "tests", name)] + list(args),
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=120)
    if p.returncode != 0:
        raise RuntimeError("%s %s failed (%d): %s" % (name, " ".join(args), p.returncode, p.stderr))
    return p.stdout.strip()


@unittest.skipUnless(PG_URL, "PostgreSQL run only: the faults of the services nodes share")
@unittest.skipIf(bool(REDIS_URL), "run once, on the PostgreSQL run without Redis (it starts "
                 "a PostgreSQL and a Redis of its own)")
class SharedServicesFaultTest(ServerTestCase):
    # starter: 100 a minute, a bucket as large, 20 at once
    server_env = {"WORKFORCE_RATE_LIMITS": "starter:100/100/20"}

    @classmethod
    def setUpClass(cls):
        cls.pg_dir = tempfile.mkdtemp(prefix="workforce-faults-pg-")
        cls.redis_dir = tempfile.mkdtemp(prefix="workforce-faults-redis-")
        cls.server = None
        try:
            cls.pg_url = script("pg/pg.sh", "start", cls.pg_dir)
            cls.redis_url = script("redis/redis.sh", "start", cls.redis_dir)
            cls.redis_port = cls.redis_url.rsplit(":", 1)[1].split("/")[0]
            env = dict(cls.server_env)
            env["WORKFORCE_REDIS_URL"] = cls.redis_url
            cls.server = Server(env=env, nodes=2)
            cls.server.db = cls.pg_url  # this test's own database, not the suite's
            cls.server.start()
        except BaseException:
            cls.stop_services()
            raise

    @classmethod
    def stop_services(cls):
        if cls.server:
            cls.server.cleanup()
        for name, d in (("redis/redis.sh", cls.redis_dir), ("pg/pg.sh", cls.pg_dir)):
            try:
                script(name, "stop", d)
            except (RuntimeError, subprocess.SubprocessError):
                pass
            shutil.rmtree(d, ignore_errors=True)

    @classmethod
    def tearDownClass(cls):
        try:
            super().tearDownClass()
        finally:
            cls.server = None
            cls.stop_services()

    def each_node(self, path, key=None):
        return [self.server.get(path, key=key, port=p) for p in self.server.ports]

    def test_1_redis_lost_and_back(self):
        key = self.server.create_key("faults-redis")
        wait_for_safe_window(30)
        seen = []
        for r in self.each_node("/v1/employees", key) + self.each_node("/readyz"):
            self.assertEqual(r.status, 200, r)
        seen += [int(r.header("X-RateLimit-Remaining")) for r in self.each_node("/v1/account", key)]

        script("redis/redis.sh", "stop", self.redis_dir)
        try:
            # no outage: every request is answered, and the limits still hold across the
            # nodes (one window, kept in the database meanwhile)
            for _ in range(3):
                for r in self.each_node("/v1/account", key):
                    self.assertJson(r)
                    seen.append(int(r.header("X-RateLimit-Remaining")))
            for r in self.each_node("/readyz"):
                self.assertError(r, 503, "service_unavailable")
            self.poll(lambda: self.server.log_text().count(
                "ratelimit: redis does not answer: limits are kept in the database") >= 2,
                "a warning on each node", 10)
        finally:
            script("redis/redis.sh", "start", self.redis_dir, self.redis_port)
            back_at = time.time()
        self.assertEqual(seen[:2], [97, 96], "in Redis, one window for both nodes (after 2 reads)")
        after = seen[2:]
        self.assertEqual(after, sorted(after, reverse=True), after)
        self.assertEqual(len(set(after)), len(after), "in the database, one window: %s" % after)

        # back by itself (tried again every 2 s): ready, and the limits in Redis again
        self.poll(lambda: all(r.status == 200 for r in self.each_node("/readyz")),
                  "/readyz 200 on both nodes", 20)

        def back():
            for r in self.each_node("/v1/account", key):
                self.assertJson(r)
            return self.server.log_text().count("ratelimit: redis answers again") >= 2
        self.poll(back, "both nodes on Redis again", 20, step=0.3)
        sys.stderr.write("\nfaults: both nodes kept their limits in Redis again %.1f s after it"
                         " came back\n" % (time.time() - back_at))

    def test_2_database_lost_and_back(self):
        key = self.server.create_key("faults-db")
        for r in self.each_node("/v1/employees", key):
            self.assertJson(r)
        script("pg/pg.sh", "stop", self.pg_dir)
        try:
            statuses = []
            for _ in range(3):
                for path in ("/v1/employees", "/v1/account", "/v1/tasks"):
                    for r in self.each_node(path, key):
                        statuses.append(r.status)
                        # never a wrong answer: not a 200 from a cache, not a 500
                        self.assertError(r, 503, "service_unavailable")
                        self.assertEqual(r.header("Retry-After"), "1", r)
            r = self.server.post("/v1/tasks", {"employee_id": "emp_x", "title": "t",
                                               "description": "d"}, key=key)
            self.assertError(r, 503, "service_unavailable")
            for r in self.each_node("/readyz"):
                self.assertError(r, 503, "service_unavailable")
        finally:
            script("pg/pg.sh", "restart", self.pg_dir)
            back_at = time.time()

        def answers():
            return all(r.status == 200 for r in self.each_node("/v1/employees", key))
        self.poll(answers, "both nodes answer again", 30, step=0.2)
        sys.stderr.write("\nfaults: both nodes answered 200 again %.1f s after the database"
                         " came back (%d answers during the outage, all 503)\n"
                         % (time.time() - back_at, len(statuses) + 1))
        for r in self.each_node("/readyz"):
            self.assertJson(r)
        self.assertTrue(self.server.alive(), "no node died with the database")


if __name__ == "__main__":
    unittest.main()
