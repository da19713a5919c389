# SPDX-License-Identifier: MIT
"""The `openai` embeddings provider (issue 4, contract §9) against tests/mock/openai_mock.py,
black-box.

- documents are embedded in batches of at most 16 texts, one POST /v1/embeddings each, with
  the configured model and key; the mock answers out of order and unnormalised;
- a query's vector comes from the provider (one request with the query as its only input);
- a provider that fails: retried (5xx), not retried (4xx), a short answer refused; the
  document is ready anyway and found by its words, queries still answer;
- chunks without a vector of the current model (provider down, model changed) are embedded
  again in the background at the next start;
- settings: WORKFORCE_EMBEDDINGS=openai without a base URL stops the start with exit 2.
"""

import os
import shutil
import tempfile
import time
import unittest

from chatlib import openai_mock
from harness import GENEROUS_LIMITS, free_port, run_cli
from test_knowledge import KnowledgeCase, marker

EMBED_MODEL = "mock-embed-1"
EMBED_KEY = "sk-embed-test-0123456789"
BATCH = 16


def words_doc(tag, paragraphs):
    """A text of 'paragraphs' paragraphs of about 100 words, each with 'tag'."""
    out = []
    for i in range(paragraphs):
        words = ["%s paragraph%d" % (tag, i)]
        words += ["word%d" % ((i * 7 + k) % 50) for k in range(98)]
        out.append(" ".join(words) + ".")
    return "\n\n".join(out).encode()


class OpenAIEmbeddingsTest(KnowledgeCase):
    mock = None

    @classmethod
    def setUpClass(cls):
        cls.mock = openai_mock.MockLLM().start()
        cls.server_env = {"WORKFORCE_RATE_LIMITS": GENEROUS_LIMITS,
                          "WORKFORCE_EMBEDDINGS": "openai",
                          "WORKFORCE_EMBEDDINGS_BASE_URL": cls.mock.base_url,
                          "WORKFORCE_EMBEDDINGS_MODEL": EMBED_MODEL,
                          "WORKFORCE_EMBEDDINGS_API_KEY": EMBED_KEY,
                          "WORKFORCE_LLM_RETRIES": "2"}
        try:
            super().setUpClass()
        except BaseException:
            cls.mock.stop()
            raise

    @classmethod
    def tearDownClass(cls):
        try:
            super().tearDownClass()
        finally:
            cls.mock.stop()

    def setUp(self):
        self.mock.embeddings_down = False

    def embed_requests(self, containing=None):
        reqs = [r for r in self.mock.requests() if r["path"].endswith("/embeddings")]
        if containing is not None:
            reqs = [r for r in reqs if containing in (r["last_user"] or "")]
        return reqs

    def inputs_of(self, reqs):
        out = []
        for r in reqs:
            out += r["body"]["input"]
        return out

    def restart(self, **env):
        self.assertEqual(self.server.stop(), 0, self.server.log_tail())
        self.server.extra_env.update(env)
        self.server.start()

    def wait_inputs(self, tag, count, model, timeout=30.0):
        """Wait until the mock has embedded 'count' texts holding 'tag' with 'model'."""
        deadline = time.time() + timeout
        while True:
            reqs = [r for r in self.embed_requests(tag)
                    if r["reply"] and r["reply"]["status"] == 200 and r["body"]["model"] == model]
            got = [t for t in self.inputs_of(reqs) if tag in t]
            if len(got) >= count or time.time() > deadline:
                return got
            time.sleep(0.1)

    # -- the happy path --

    def test_documents_are_embedded_in_batches(self):
        key = self.org()
        tag = marker()
        doc = self.upload(key, words_doc(tag, 40), filename="batches.txt")
        n = doc["chunk_count"]
        self.assertGreater(n, BATCH, doc)
        reqs = self.embed_requests(tag)
        self.assertEqual(len(reqs), -(-n // BATCH), [len(r["body"]["input"]) for r in reqs])
        for r in reqs:
            self.assertEqual(r["body"]["model"], EMBED_MODEL)
            self.assertEqual(r["body"].get("encoding_format"), "float")
            self.assertEqual(r["headers"].get("authorization"), "Bearer " + EMBED_KEY)
            self.assertLessEqual(len(r["body"]["input"]), BATCH)
        self.assertEqual(len(self.inputs_of(reqs)), n)

    def test_query_vector_comes_from_the_provider(self):
        key = self.org()
        tag = marker()
        self.upload(key, ("%s the reimbursement of travel costs is made monthly." % tag).encode(),
                    filename="travel.txt")
        q = "%s reimbursement travel monthly qqalpha qqbeta qqgamma qqdelta" % tag
        hits = self.query(key, q)
        self.assertTrue(hits, "no result")
        self.assertIn(tag, hits[0]["content"])
        reqs = [r for r in self.embed_requests() if r["body"]["input"] == [q]]
        self.assertEqual(len(reqs), 1, "the query was not embedded by the provider once")

    def test_words_still_match_when_the_query_cannot_be_embedded(self):
        key = self.org()
        tag = marker()
        self.upload(key, ("%s invoices are archived for ten years." % tag).encode(),
                    filename="archive.txt")
        self.mock.embeddings_down = True
        hits = self.query(key, "%s archived invoices" % tag)
        self.assertTrue(hits and tag in hits[0]["content"], hits)

    # -- failures --

    def test_a_server_error_is_retried(self):
        key = self.org()
        tag = marker()
        doc = self.upload(key, ("%s [[fail-first:1]] policy text." % tag).encode(),
                          filename="retry.txt")
        reqs = self.embed_requests(tag)
        self.assertEqual([r["reply"]["status"] for r in reqs], [500, 200], reqs)
        self.assertEqual(doc["status"], "ready")

    def test_a_client_error_is_not_retried_and_the_document_is_found_by_words(self):
        key = self.org()
        tag = marker()
        doc = self.upload(key, ("%s [[fail:400]] holiday calendar." % tag).encode(),
                          filename="fail400.txt")
        self.assertEqual(doc["status"], "ready", doc)
        reqs = self.embed_requests(tag)
        self.assertEqual([r["reply"]["status"] for r in reqs], [400], reqs)
        hits = self.query(key, "%s holiday calendar" % tag)
        self.assertTrue(hits and hits[0]["document_id"] == doc["id"], hits)

    def test_a_short_answer_is_refused(self):
        key = self.org()
        tag = marker()
        doc = self.upload(key, ("%s [[garbage]] parking rules." % tag).encode(),
                          filename="short.txt")
        self.assertEqual(doc["status"], "ready", doc)
        self.assertIn("embedding", self.server.log_text())
        hits = self.query(key, "%s parking rules" % tag)
        self.assertTrue(hits and hits[0]["document_id"] == doc["id"], hits)
        self.assertTrue(self.server.alive())

    # -- embedding again in the background --

    def test_chunks_are_embedded_again_after_an_outage_and_a_model_change(self):
        key = self.org()
        tag = marker()
        self.mock.embeddings_down = True
        doc = self.upload(key, words_doc(tag, 3), filename="outage.txt")
        self.assertEqual(doc["status"], "ready", doc)
        n = doc["chunk_count"]
        self.assertEqual(self.wait_inputs(tag, n, EMBED_MODEL, timeout=0), [])
        self.mock.embeddings_down = False
        self.restart()
        got = self.wait_inputs(tag, n, EMBED_MODEL)
        self.assertEqual(len(got), n, "the chunks were not embedded after the outage")
        # Another model: every chunk of every document is embedded again with it.
        self.restart(WORKFORCE_EMBEDDINGS_MODEL="mock-embed-2")
        got = self.wait_inputs(tag, n, "mock-embed-2")
        self.assertEqual(len(got), n, "the chunks were not embedded with the new model")
        hits = self.query(key, "%s paragraph1" % tag)
        self.assertTrue(hits and hits[0]["document_id"] == doc["id"], hits)
        self.restart(WORKFORCE_EMBEDDINGS_MODEL=EMBED_MODEL)


class EmbeddingsSettingsTest(unittest.TestCase):
    def test_openai_without_a_base_url_stops_the_start(self):
        tmp = tempfile.mkdtemp(prefix="workforce-embed-")
        try:
            p = run_cli(["serve", "--listen", "127.0.0.1:%d" % free_port(), "--database",
                         os.path.join(tmp, "w.db")],
                        env={"WORKFORCE_EMBEDDINGS": "openai"}, timeout=30)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("WORKFORCE_EMBEDDINGS_BASE_URL", p.stderr)

    def test_a_bad_setting_is_refused(self):
        for name, value in (("WORKFORCE_EMBEDDINGS_BASE_URL", "ftp://x"),
                            ("WORKFORCE_EMBEDDINGS_THREADS", "0"),
                            ("WORKFORCE_TASK_WORKERS", "x")):
            p = run_cli(["serve", "--listen", "127.0.0.1:%d" % free_port(), "--database", "/nonexistent/x.db"],
                        env={name: value}, timeout=30)
            self.assertEqual(p.returncode, 2, (name, p.stderr))
            self.assertIn(name, p.stderr)


if __name__ == "__main__":
    unittest.main()
