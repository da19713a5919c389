# SPDX-License-Identifier: MIT
"""Hardening findings 4, 6, 10, 11 and the small points of 13, black-box.

- 4: two uploads with the same X-Request-Id (two organizations) both succeed: temporary files
  are named by the server; leftovers of a crash are removed at start.
- 6: an employee's tier is never writable through the API (400 param tier, nothing changed,
  the tier gate still holds); the operator's `workforce employees update ID --tier T` sets it.
- 10: a chat message far longer than the FTS query buffer still finds the knowledge it names,
  and the server logs no error for it.
- 11: the database, its WAL and shared memory, the files directory and uploads are created
  0600/0700; a database left 0644 by an older version is tightened at start.
- 13: an out-of-range integer names its member; JSON errors speak our words, not the parser's
  option names; `recurring: null` is refused on create; WORKFORCE_RATE_LIMITS over 1,000,000
  says where the limit is.
"""

import os
import stat
import subprocess
import threading
import uuid

from harness import GENEROUS_LIMITS, Server, ServerTestCase, clean_env, binary_path, sqlite_only
from test_knowledge import DOCS, multipart


class UploadTempNamesTest(ServerTestCase):
    server_env = {"WORKFORCE_RATE_LIMITS": GENEROUS_LIMITS}

    def test_same_request_id_two_orgs(self):
        keys = [self.server.create_key("tmp-%d-%s" % (i, uuid.uuid4().hex[:6]), credits=10)
                for i in range(2)]
        body, ctype = multipart([], [("file", "a.txt", "text/plain", b"x" * (4 << 20))])
        results = [None, None]

        def up(i):
            results[i] = self.server.request("POST", DOCS, body=body, key=keys[i],
                                             content_type=ctype, timeout=60,
                                             headers={"X-Request-Id": "same-id-123"})
        threads = [threading.Thread(target=up, args=(i,)) for i in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for r in results:
            self.assertEqual(r.status, 200, r)
        # sequential too: the same id again, same org
        r = self.server.request("POST", DOCS, body=body, key=keys[0], content_type=ctype,
                                headers={"X-Request-Id": "same-id-123"})
        self.assertEqual(r.status, 200, r)

    def test_leftovers_removed_at_start(self):
        files = os.path.join(self.server.tmpdir, "files")
        self.assertTrue(os.path.isdir(files), os.listdir(self.server.tmpdir))
        self.assertEqual(self.server.stop(), 0)
        left = os.path.join(files, ".upload-req_crashed")
        with open(left, "wb") as f:
            f.write(b"partial")
        self.server.start()
        self.assertFalse(os.path.exists(left))


class TierTest(ServerTestCase):
    server_env = {"WORKFORCE_RATE_LIMITS": GENEROUS_LIMITS}

    def test_tier_not_writable_through_the_api(self):
        key = self.server.create_key("tier-" + uuid.uuid4().hex[:6], tier="starter",
                                     credits=100)
        emps = self.server.get("/v1/employees?limit=100", key=key).json["employees"]
        mgr = [e for e in emps if e["tier"] == "manager"][0]["id"]
        r = self.server.patch("/v1/employees/" + mgr, {"tier": "starter"}, key=key)
        self.assertError(r, 400, "invalid_request", "tier")
        self.assertEqual(self.server.get("/v1/employees/" + mgr, key=key).json["tier"],
                         "manager")
        r = self.server.post("/v1/chat", {"employee_id": mgr, "message": "hi"}, key=key)
        self.assertError(r, 403, "permission_denied", "employee_id")
        r = self.server.post("/v1/employees", {"name": "N", "role": "R", "category": "sales",
                                               "tier": "manager"}, key=key)
        self.assertError(r, 400, "invalid_request", "tier")
        # the operator's command line sets it
        p = self.server.cli("employees", "update", mgr, "--tier", "starter")
        self.assertEqual(p.returncode, 0, p.stderr)
        # the CLI is another process: its change is seen within 1 s (the contract)
        self.poll(lambda: self.server.get("/v1/employees/" + mgr, key=key).json["tier"]
                  == "starter", "the new tier shown", timeout=1.0, step=0.02)
        r = self.server.post("/v1/chat", {"employee_id": mgr, "message": "hi"}, key=key)
        self.assertEqual(r.status, 200, r)
        p = self.server.cli("employees", "update", "emp_" + "Z" * 24, "--tier", "starter")
        self.assertEqual(p.returncode, 1)
        p = self.server.cli("employees", "update", mgr, "--tier", "agency")
        self.assertEqual(p.returncode, 2)


class LongChatKnowledgeTest(ServerTestCase):
    server_env = {"WORKFORCE_RATE_LIMITS": GENEROUS_LIMITS}

    def test_long_message_still_searches(self):
        key = self.server.create_key("fts-" + uuid.uuid4().hex[:6], tier="manager",
                                     credits=100000)
        word = "zqplumbawing"
        body, ctype = multipart([], [("file", "p.txt", "text/plain",
                                      ("The %s budget closes on Friday." % word).encode())])
        doc = self.server.request("POST", DOCS, body=body, key=key, content_type=ctype).json
        self.poll(lambda: self.server.get(DOCS + "/" + doc["id"], key=key).json["status"]
                 == "ready", "document ready")
        emp = self.server.get("/v1/employees?limit=1", key=key).json["employees"][0]["id"]
        # 7,900 distinct three-character CJK words (31,600 characters, ~110 KB as an FTS
        # query) after the word: the old query was cut at 64 KiB and became invalid; a bounded
        # one keeps the first terms, so the word is searched.
        filler = " ".join(chr(0x4E00 + i // 400) + chr(0x4E00 + (i // 20) % 20) +
                          chr(0x4E00 + i % 20) for i in range(7900))
        msg = "%s? %s" % (word, filler)
        self.assertLessEqual(len(msg), 32000)
        r = self.server.post("/v1/chat", {"employee_id": emp, "message": msg}, key=key)
        self.assertEqual(r.status, 200, r)
        log = self.server.log_text()
        self.assertNotIn(" error ", log)
        self.assertNotIn("syntax", log)
        # the same words in a short message still find the document
        r = self.server.post("/v1/chat", {"employee_id": emp, "message": word + "?"}, key=key)
        self.assertTrue(r.json["sources"], r)


@sqlite_only("the modes of the SQLite files")
class FileModesTest(ServerTestCase):
    server_env = {"WORKFORCE_RATE_LIMITS": GENEROUS_LIMITS}

    def mode(self, p):
        return stat.S_IMODE(os.stat(p).st_mode)

    def test_data_files_are_private(self):
        key = self.server.create_key("mode-" + uuid.uuid4().hex[:6], credits=10)
        body, ctype = multipart([], [("file", "a.txt", "text/plain", b"hello world")])
        self.assertEqual(self.server.request("POST", DOCS, body=body, key=key,
                                             content_type=ctype).status, 200)
        db = self.server.db
        for p in (db, db + "-wal", db + "-shm"):
            self.assertEqual(self.mode(p) & 0o077, 0, "%s is %o" % (p, self.mode(p)))
        files = os.path.join(self.server.tmpdir, "files")
        self.assertEqual(self.mode(files) & 0o077, 0)
        for name in os.listdir(files):
            self.assertEqual(self.mode(os.path.join(files, name)) & 0o077, 0, name)

    def test_loose_database_is_tightened_at_start(self):
        self.assertEqual(self.server.stop(), 0)
        os.chmod(self.server.db, 0o644)
        self.server.start()
        self.assertEqual(self.mode(self.server.db) & 0o077, 0)
        self.assertIn("readable by other users", self.server.log_text())


class SmallPointsTest(ServerTestCase):
    server_env = {"WORKFORCE_RATE_LIMITS": GENEROUS_LIMITS}

    @classmethod
    def setUpServer(cls):
        cls.key = cls.server.create_key("small-" + uuid.uuid4().hex[:6], credits=10)

    def raw(self, path, text):
        return self.server.request("POST", path, body=text.encode(), key=self.key,
                                   content_type="application/json")

    def test_out_of_range_integer_names_its_member(self):
        r = self.raw("/v1/knowledge/query", '{"query": "x", "limit": 1' + "0" * 30 + "}")
        self.assertError(r, 400, "invalid_request", "limit")

    def test_parser_words_stay_inside(self):
        r = self.raw("/v1/knowledge/query", '{"query": "a\\u0000b"}')
        err = self.assertError(r, 400, "invalid_request")
        self.assertNotIn("JSON_", err["message"])
        self.assertIn("\\u0000", err["message"])

    def test_recurring_null_refused_on_create(self):
        emp = self.server.get("/v1/employees?limit=1", key=self.key).json["employees"][0]["id"]
        r = self.server.post("/v1/tasks", {"employee_id": emp, "title": "t", "recurring": None},
                             key=self.key)
        self.assertError(r, 400, "invalid_request", "recurring")
        self.assertEqual(self.server.get("/v1/tasks", key=self.key).json["tasks"], [])

    def test_rate_limit_setting_names_its_bound(self):
        p = subprocess.run([binary_path(), "serve", "--listen", "127.0.0.1:0", "--database",
                            os.path.join(self.server.tmpdir, "other.db")],
                           env=clean_env({"WORKFORCE_RATE_LIMITS": "starter:2000000/10/5"}),
                           capture_output=True, text=True, timeout=30)
        self.assertEqual(p.returncode, 2)
        self.assertIn("1,000,000", p.stderr)
