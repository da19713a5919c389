# SPDX-License-Identifier: MIT
"""`workforce backup` and `workforce restore`, black-box.

- A backup taken while four clients keep writing (tasks and employees through the API) is
  restored into a fresh database; a server on it has every write acknowledged before the backup
  started, each whole. The backup, the restored database and the kept copy are 0600.
- A backup never overwrites an existing file without --force; a restore of a file that is not
  a sound Workforce database, or while a server runs on the target, changes nothing.
- A restore checks the backup's whole schema against the one its recorded version must hold
  (issue 26, finding 5): schema_migrations rows deleted, a table missing (api_keys), or a
  trigger added (one that sets every balance on the first chat) are each refused with exit
  status 1 and a message naming the reason, and the current database stays byte for byte as it
  was, with no file left beside it. A backup of an older schema is migrated (as a copy) and
  restored.
"""

import glob
import hashlib
import os
import sqlite3
import stat
import threading
import time
import uuid

from harness import GENEROUS_LIMITS, REPO_ROOT, Server, ServerTestCase, run_cli, sqlite_only

MIGRATIONS = sorted(glob.glob(os.path.join(REPO_ROOT, "src", "store", "sql", "*.sql")))


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


def digest(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


@sqlite_only("workforce restore copies a SQLite file")
class RestoreChecksTest(ServerTestCase):
    """Each backup is made by `workforce backup` from a server with data, then altered."""

    server_env = {"WORKFORCE_RATE_LIMITS": GENEROUS_LIMITS}

    def setUp(self):
        srv = self.server
        if not srv.alive():
            srv.start()
        self.key = srv.create_key("rs-" + uuid.uuid4().hex[:6], credits=100)
        self.assertEqual(srv.get("/v1/account", key=self.key).status, 200)

    def backup(self, name, alter=None):
        """A fresh backup of the running server at 'name', then 'alter(conn)' applied to it."""
        out = os.path.join(self.server.tmpdir, name)
        if os.path.exists(out):
            os.unlink(out)
        p = self.server.cli("backup", "--to", out)
        self.assertEqual(p.returncode, 0, p.stderr)
        if alter:
            conn = sqlite3.connect(out)
            try:
                alter(conn)
                conn.commit()
            finally:
                conn.close()
        return out

    def refused(self, bad, reason):
        """Stop the server, restore 'bad': refused (1, 'reason' in the message), the database
        and its directory as they were; then the server starts again on it."""
        srv = self.server
        self.assertEqual(srv.stop(), 0)
        before = digest(srv.db)
        files = sorted(os.listdir(srv.tmpdir))
        p = srv.cli("restore", "--from", bad)
        self.assertEqual(p.returncode, 1, (p.stdout, p.stderr))
        self.assertEqual(digest(srv.db), before, "the current database was changed")
        self.assertEqual(sorted(os.listdir(srv.tmpdir)), files, "files were left or removed")
        self.assertIn(reason, p.stderr)
        self.assertIn("nothing was restored", p.stderr)
        srv.start()
        self.assertEqual(srv.get("/v1/account", key=self.key).status, 200)

    def test_migrations_rows_deleted_refused_before_anything_changes(self):
        # The schema is version 13's but schema_migrations says 11: the migrations would run
        # again over tables that exist. Before: exit 1 with the database already replaced.
        bad = self.backup("rows.db", lambda c: c.execute(
            "DELETE FROM schema_migrations WHERE version > 11"))
        self.refused(bad, "is not part of it")
        bad = self.backup("hole.db", lambda c: c.execute(
            "DELETE FROM schema_migrations WHERE version = 5"))
        self.refused(bad, "schema_migrations table is damaged")

    def test_missing_table_refused(self):
        # Before: restored with exit status 0, a database without keys.
        bad = self.backup("nokeys.db", lambda c: c.execute("DROP TABLE api_keys"))
        self.refused(bad, "table api_keys is missing")

    def test_hostile_trigger_refused(self):
        # Before: restored, and the trigger gave the organization 999,999,999 credits on its
        # first chat.
        bad = self.backup("trigger.db", lambda c: c.execute(
            "CREATE TRIGGER evil AFTER INSERT ON messages BEGIN UPDATE orgs SET credits ="
            " 999999999; END"))
        self.refused(bad, "trigger evil is not part of it")
        for sql in ("CREATE VIEW v AS SELECT 1", "CREATE INDEX orgs_credits ON orgs (credits)",
                    "CREATE TABLE extra (x)"):
            with self.subTest(sql=sql):
                self.refused(self.backup("extra.db", lambda c: c.execute(sql)),
                             "is not part of it")
        # the same name, another definition
        bad = self.backup("changed.db", lambda c: c.executescript(
            "DROP INDEX api_keys_org; CREATE INDEX api_keys_org ON api_keys (org_id);"))
        self.refused(bad, "index api_keys_org has another definition")

    def test_older_backup_is_migrated_and_restored(self):
        # A database of schema version 10, made as the server would have made it then.
        old = os.path.join(self.server.tmpdir, "v10.db")
        conn = sqlite3.connect(old)
        conn.execute("CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY,"
                     " applied_at INTEGER NOT NULL)")
        for v, path in enumerate(MIGRATIONS[:10], 1):
            with open(path) as f:
                conn.executescript(f.read())
            conn.execute("INSERT INTO schema_migrations VALUES (?, 0)", (v,))
        conn.commit()
        conn.close()
        srv = self.server
        self.assertEqual(srv.stop(), 0)
        p = srv.cli("restore", "--from", old)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("restored %s" % srv.db, p.stdout)
        self.assertEqual([n for n in os.listdir(srv.tmpdir) if ".restore-" in n], [])
        conn = sqlite3.connect(srv.db)
        try:
            self.assertEqual(conn.execute("SELECT max(version), count(*) FROM"
                                          " schema_migrations").fetchone(),
                             (len(MIGRATIONS), len(MIGRATIONS)))
        finally:
            conn.close()
        self.assertEqual(mode(srv.db) & 0o077, 0)
        srv.start()
        self.assertEqual(srv.get("/v1/account", key=self.key).status, 401)  # an empty database
