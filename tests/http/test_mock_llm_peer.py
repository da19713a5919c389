# SPDX-License-Identifier: MIT
"""Mock language models checked against independent peers.

- The openai engine against an independent OpenAI-compatible mock: the npm package
  @dwmkerr/mock-llm (pinned in package.json, installed by `npm ci`). Its default rule echoes the
  last message; it streams 50-character chunks and reports no usage.
- Our own stand-in, tests/mock/openai_mock.py, against the official `openai` npm client: its
  scripted tool calls ([[tools:B64]]), blocking and streamed, are read, assembled and run by the
  SDK as OpenAI's own (tests/npm/openai_mock_tools.mjs; once per `make test`, in the plain
  SQLite run: no server is involved)."""

import http.client
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
import unittest

from chatlib import ChatTestCase, credits_for, openai_mock, uniq
from harness import GENEROUS_LIMITS, PG_URL, REPO_ROOT, free_port

PEER_DIR = os.path.join(REPO_ROOT, "node_modules", "@dwmkerr", "mock-llm")
PEER_MAIN = os.path.join(PEER_DIR, "dist", "main.js")


def peer_missing():
    if not os.path.exists(PEER_MAIN):
        return "node_modules/@dwmkerr/mock-llm is not installed (run npm ci)"
    if shutil.which("node") is None:
        return "node is not installed"
    return None


@unittest.skipIf(peer_missing(), peer_missing() or "")
class MockLLMPeerTest(ChatTestCase):

    peer = None

    @classmethod
    def setUpClass(cls):
        cls.peer_tmp = tempfile.mkdtemp(prefix="workforce-mockllm-")
        cls.peer_port = free_port()
        env = dict(os.environ, HOST="127.0.0.1", PORT=str(cls.peer_port))
        cls.peer_log = open(os.path.join(cls.peer_tmp, "mock-llm.log"), "wb")
        # cwd: an empty directory, so no mock-llm.yaml is picked up (the default echo rule)
        cls.peer = subprocess.Popen(["node", PEER_MAIN], cwd=cls.peer_tmp, env=env,
                                    stdin=subprocess.DEVNULL, stdout=cls.peer_log,
                                    stderr=subprocess.STDOUT)
        try:
            cls.wait_peer()
            cls.server_env = {"WORKFORCE_RATE_LIMITS": GENEROUS_LIMITS, "WORKFORCE_LLM": "openai",
                              "WORKFORCE_LLM_BASE_URL": "http://127.0.0.1:%d/v1" % cls.peer_port,
                              "WORKFORCE_LLM_MODEL": "gpt-4",
                              "WORKFORCE_LLM_API_KEY": "mock-key"}
            super().setUpClass()
        except BaseException:
            cls.stop_peer()
            raise

    @classmethod
    def wait_peer(cls, timeout=20):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if cls.peer.poll() is not None:
                raise RuntimeError("mock-llm exited with %s: %s" % (cls.peer.returncode,
                                                                   cls.peer_output()))
            try:
                c = http.client.HTTPConnection("127.0.0.1", cls.peer_port, timeout=2)
                c.request("GET", "/health")
                if c.getresponse().status == 200:
                    c.close()
                    return
                c.close()
            except OSError:
                pass
            time.sleep(0.1)
        raise RuntimeError("mock-llm did not answer /health: %s" % cls.peer_output())

    @classmethod
    def peer_output(cls):
        try:
            with open(os.path.join(cls.peer_tmp, "mock-llm.log"), "rb") as f:
                return f.read().decode("utf-8", "replace")[-2000:]
        except OSError:
            return ""

    @classmethod
    def stop_peer(cls):
        if cls.peer is not None and cls.peer.poll() is None:
            os.kill(cls.peer.pid, signal.SIGTERM)
            try:
                cls.peer.wait(10)
            except subprocess.TimeoutExpired:
                os.kill(cls.peer.pid, signal.SIGKILL)
                cls.peer.wait(10)
        cls.peer_log.close()
        shutil.rmtree(cls.peer_tmp, ignore_errors=True)

    @classmethod
    def tearDownClass(cls):
        try:
            super().tearDownClass()
        finally:
            cls.stop_peer()

    @classmethod
    def setUpServer(cls):
        cls.live = cls.server.create_key("peer", credits=1000)

    def test_peer_listens_on_loopback_only(self):
        out = subprocess.run(["ss", "-ltnp"], capture_output=True, text=True) \
            if shutil.which("ss") else None
        if out is None or out.returncode != 0:
            self.skipTest("ss is not available")
        lines = [ln for ln in out.stdout.splitlines() if ":%d " % self.peer_port in ln]
        self.assertTrue(lines, out.stdout)
        for ln in lines:
            self.assertIn("127.0.0.1:%d" % self.peer_port, ln)

    def test_blocking(self):
        emp = self.employee(self.live, "starter")
        msg = "Hello peer mock please echo this sentence back " + uniq("id")
        b0 = self.balance(self.live)
        m = self.chat_ok(self.live, emp, msg)
        self.assertTrue(m["content"].strip(), "empty reply")
        self.assertEqual(m["credits_used"], credits_for(m["usage"]))
        self.assertGreaterEqual(m["credits_used"], 1)
        self.assertEqual(self.balance(self.live), b0 - m["credits_used"])
        conv = self.conversation(self.live, m["conversation_id"])
        self.assertEqual([(x["role"], x["content"]) for x in conv["messages"]],
                         [("user", msg), ("assistant", m["content"])])

    def test_stream(self):
        emp = self.employee(self.live, "starter")
        msg = ("A longer message so that the peer sends it back in more than one chunk of "
               "fifty characters " + uniq("id"))
        res = self.stream(self.live, emp, msg)
        done = self.checkStream(res, emp)
        self.assertTrue(done["content"].strip())
        self.assertGreaterEqual(done["credits_used"], 1)
        conv = self.conversation(self.live, done["conversation_id"])
        self.assertEqual(conv["messages"][-1]["content"], res.deltas())



NODE = shutil.which("node")
SDK_SKIP = ("the SDK check of the mock runs once per make test (plain SQLite run)"
            if os.environ.get("WORKFORCE_BIN") or PG_URL else
            "node is not installed" if not NODE else
            "node_modules/openai is missing (npm ci)"
            if not os.path.isdir(os.path.join(REPO_ROOT, "node_modules", "openai")) else None)


@unittest.skipIf(SDK_SKIP, SDK_SKIP or "")
class OpenAIMockToolsTest(unittest.TestCase):
    """tests/mock/openai_mock.py's tool calls as the official openai npm client reads them."""

    def test_official_sdk_reads_and_runs_the_mock_tool_calls(self):
        mock = openai_mock.MockLLM().start()
        try:
            env = dict(os.environ, MOCK_BASE_URL=mock.base_url)
            p = subprocess.run([NODE, os.path.join(REPO_ROOT, "tests", "npm",
                                                   "openai_mock_tools.mjs")],
                               capture_output=True, text=True, timeout=60, env=env,
                               cwd=REPO_ROOT, stdin=subprocess.DEVNULL)
        finally:
            mock.stop()
        self.assertEqual(p.returncode, 0,
                         "openai_mock_tools.mjs failed:\n%s\n%s" % (p.stdout, p.stderr))
        self.assertIn("ok - all", p.stdout, p.stdout)


if __name__ == "__main__":
    unittest.main()
