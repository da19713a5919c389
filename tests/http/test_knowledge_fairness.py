# SPDX-License-Identifier: MIT
"""Fair document processing (hardening finding 5), black-box.

- One organization's large documents do not hold up another's: with the default two workers,
  organization B's tiny file is ready while A's large one is still processing.
- With one worker, tenants are served round-robin: B's file comes before A's second one.
- Deleting a document stops its processing at once: the next document of the same
  organization is ready soon after, the deleted one is 404 and nothing of it is searchable.
- A bad WORKFORCE_KNOWLEDGE_WORKERS stops the server with exit 2, naming the setting.
"""

import random
import subprocess
import uuid

from harness import GENEROUS_LIMITS, ServerTestCase, binary_path, clean_env
from test_knowledge import DOCS, QUERY, multipart

BIG_WORDS = 80000  # ~16 s of embedding in the release build, minutes under ASan


def big_text(seed):
    rnd = random.Random(seed)
    words = ["w%dq" % i for i in range(5000)]
    return " ".join(rnd.choice(words) for _ in range(BIG_WORDS)).encode()


class FairnessCase(ServerTestCase):
    def org(self, prefix):
        return self.server.create_key("%s-%s" % (prefix, uuid.uuid4().hex[:6]), credits=100)

    def upload(self, key, data, name="a.txt"):
        body, ctype = multipart([], [("file", name, "text/plain", data)])
        r = self.server.request("POST", DOCS, body=body, key=key, content_type=ctype, timeout=60)
        self.assertEqual(r.status, 200, r)
        return r.json["id"]

    def status(self, key, doc):
        return self.server.get(DOCS + "/" + doc, key=key).json["status"]

    def started(self, doc):
        return ("processing document %s" % doc) in self.server.log_text()

    def delete(self, key, doc):
        self.server.request("DELETE", DOCS + "/" + doc, key=key)


class TwoWorkersTest(FairnessCase):
    server_env = {"WORKFORCE_RATE_LIMITS": GENEROUS_LIMITS}

    def test_small_file_not_stuck_behind_another_orgs_large_ones(self):
        a, b = self.org("fa"), self.org("fb")
        big = [self.upload(a, big_text(i), "big%d.txt" % i) for i in range(2)]
        small = self.upload(b, b"The zqfairword policy is short.")
        try:
            self.poll(lambda: self.status(b, small) == "ready", "B's small document", 120)
            self.assertIn("processing", [self.status(a, d) for d in big],
                          "A's large documents finished before B's small one was ready")
        finally:
            for d in big:
                self.delete(a, d)

    def test_delete_stops_processing(self):
        a = self.org("fd")
        big = self.upload(a, big_text(7), "big.txt")
        # deleted while a worker processes it; a second document of the same organization
        # then waits for that worker (one organization holds at most one of the two)
        self.poll(lambda: self.started(big), "processing of the large document")
        self.delete(a, big)
        small = self.upload(a, b"The zqafterword note.")
        self.poll(lambda: self.status(a, small) == "ready", "the next document", 60)
        r = self.server.get(DOCS + "/" + big, key=a)
        self.assertError(r, 404, "document_not_found", {None, "id"})
        hits = self.server.post(QUERY, {"query": "w12q w99q w4000q"}, key=a).json["results"]
        self.assertEqual([h for h in hits if h["document_id"] == big], [])
        self.assertNotIn("cannot store the result of document %s" % big,
                         self.server.log_text())


class OneWorkerTest(FairnessCase):
    server_env = {"WORKFORCE_RATE_LIMITS": GENEROUS_LIMITS, "WORKFORCE_KNOWLEDGE_WORKERS": "1"}
    single_node = True  # the order of one worker's work: one node, one worker
    def test_round_robin_by_organization(self):
        a, b = self.org("oa"), self.org("ob")
        first = self.upload(a, big_text(11), "first.txt")
        # wait until the single worker has taken A's first document up (the others queue)
        self.poll(lambda: self.started(first), "processing of A's first document")
        second = self.upload(a, big_text(12), "second.txt")
        small = self.upload(b, b"The zqroundword policy.")
        try:
            self.poll(lambda: self.status(b, small) == "ready", "B's document", 600)
            self.assertEqual(self.status(a, second), "processing",
                             "A's second document went before B's")
        finally:
            self.delete(a, first)
            self.delete(a, second)


class SettingTest(ServerTestCase):
    def test_bad_setting(self):
        for v in ("0", "65", "two", ""):
            with self.subTest(v=v):
                p = subprocess.run([binary_path(), "serve", "--listen", "127.0.0.1:0",
                                    "--database", self.server.tmpdir + "/other.db"],
                                   env=clean_env({"WORKFORCE_KNOWLEDGE_WORKERS": v}),
                                   capture_output=True, text=True, timeout=30)
                self.assertEqual(p.returncode, 2, p.stderr)
                self.assertIn("WORKFORCE_KNOWLEDGE_WORKERS", p.stderr)
