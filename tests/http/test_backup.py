# SPDX-License-Identifier: MIT
"""`workforce backup` and `workforce restore`, black-box.

- A backup taken while four clients keep writing (tasks and employees through the API) is
  restored into a fresh database; a server on it has every write acknowledged before the backup
  started, each whole. The backup, the restored database and the kept copy are 0600.
- A backup never overwrites an existing file without --force; a restore of a file that is not
  a sound Workforce database, or while a server runs on the target, changes nothing.
"""

import os
import stat
import threading
import time
import uuid

from harness import GENEROUS_LIMITS, Server, ServerTestCase, run_cli, sqlite_only


def mode(p):
    return stat.S_IMODE(os.stat(p).st_mode)


@sqlite_only("workforce backup and restore copy a SQLite file (PostgreSQL: pg_dump)")
class BackupTest(ServerTestCase):
    server_env = {"WORKFORCE_RATE_LIMITS": GENEROUS_LIMITS}

    def test_backup_under_write_load_restores_every_acknowledged_write(self):
        srv = self.server
        key = srv.create_key("bk-" + uuid.uuid4().hex[:6], credits=100)
        emp = srv.get("/v1/employees?limit=1", key=key).json["employees"][0]["id"]
        acked = []  # (time the 200 arrived, kind, id)
        lock = threading.Lock()
        stop = threading.Event()

        def writer(n):
            i = 0
            while not stop.is_set():
                i += 1
                if i % 3:
                    r = srv.post("/v1/tasks", {"employee_id": emp, "title": "t%d-%d" % (n, i),
                                               "description": "w" * 200}, key=key)
                    kind = "task"
                else:
                    r = srv.post("/v1/employees", {"name": "E%d-%d" % (n, i), "role": "R",
                                                   "category": "sales"}, key=key)
                    kind = "employee"
                if r.status == 200:
                    with lock:
                        acked.append((time.time(), kind, r.json["id"]))

        threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
        for t in threads:
            t.start()
        try:
            self.poll(lambda: len(acked) >= 100, "100 acknowledged writes", 60)
            out = os.path.join(srv.tmpdir, "backup.db")
            t_start = time.time()
            p = srv.cli("backup", "--to", out)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertIn("backup %s" % out, p.stdout)
            self.poll(lambda: len(acked) >= 200 and acked[-1][0] > time.time() - 1,
                      "writes after the backup", 60)
        finally:
            stop.set()
            for t in threads:
                t.join()
        self.assertEqual(mode(out) & 0o077, 0)
        before = [(k, i) for (t, k, i) in acked if t < t_start]
        self.assertGreaterEqual(len(before), 100)

        fresh = os.path.join(srv.tmpdir, "restored", "workforce.db")
        p = run_cli(["restore", "--from", out, "--database", fresh])
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(mode(fresh) & 0o077, 0)
        other = Server(env={"WORKFORCE_RATE_LIMITS": GENEROUS_LIMITS},
                       tmpdir=os.path.dirname(fresh))
        other.db = fresh
        try:
            # the same server secret: the keys of the backup stay valid
            os.link(os.path.join(srv.tmpdir, "server.secret"),
                    os.path.join(os.path.dirname(fresh), "server.secret"))
            other.start()
            missing = []
            for kind, oid in before:
                path = ("/v1/tasks/" if kind == "task" else "/v1/employees/") + oid
                r = other.get(path, key=key)
                if r.status != 200 or r.json.get("id") != oid:
                    missing.append((kind, oid, r.status))
            self.assertEqual(missing, [], "%d of %d acknowledged writes missing"
                             % (len(missing), len(before)))
            self.assertEqual(other.stop(), 0)
        finally:
            other.kill()

    def test_no_overwrite_without_force(self):
        out = os.path.join(self.server.tmpdir, "exists.db")
        with open(out, "wb") as f:
            f.write(b"keep me")
        p = self.server.cli("backup", "--to", out)
        self.assertEqual(p.returncode, 1)
        with open(out, "rb") as f:
            self.assertEqual(f.read(), b"keep me")
        self.assertEqual([n for n in os.listdir(self.server.tmpdir) if ".tmp-" in n], [])
        p = self.server.cli("backup", "--to", out, "--force")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(mode(out) & 0o077, 0)

    def test_restore_refuses_bad_files_and_a_running_server(self):
        srv = self.server
        junk = os.path.join(srv.tmpdir, "junk.db")
        with open(junk, "wb") as f:
            f.write(b"SQLite format 3\x00" + os.urandom(5000))
        with open(srv.db, "rb") as f:
            head = f.read(4096)
        for bad in (junk, os.path.join(srv.tmpdir, "missing.db")):
            with self.subTest(bad=bad):
                p = srv.cli("restore", "--from", bad)
                self.assertEqual(p.returncode, 1, p.stdout)
        good = os.path.join(srv.tmpdir, "good.db")
        self.assertEqual(srv.cli("backup", "--to", good).returncode, 0)
        p = srv.cli("restore", "--from", good)  # the server runs on srv.db
        self.assertEqual(p.returncode, 1)
        self.assertIn("stop it first", p.stderr)
        with open(srv.db, "rb") as f:
            self.assertEqual(f.read(4096), head)
        self.assertEqual([n for n in os.listdir(srv.tmpdir) if "before-restore" in n], [])
        # stopped: the restore keeps the current database beside it, 0600
        self.assertEqual(srv.stop(), 0)
        p = srv.cli("restore", "--from", good)
        self.assertEqual(p.returncode, 0, p.stderr)
        kept = [n for n in os.listdir(srv.tmpdir) if "before-restore" in n]
        self.assertEqual(len(kept), 1)
        self.assertEqual(mode(os.path.join(srv.tmpdir, kept[0])) & 0o077, 0)
        srv.start()
