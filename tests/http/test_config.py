# SPDX-License-Identifier: MIT
"""`workforce config`: every setting with its effective value and source, secrets masked, as
text and as JSON; `--defaults` describes the table whatever the environment (and is what
docs/settings.json holds); a malformed or unknown setting stops `config` and `serve` with exit
status 2 and a message naming it."""

import json
import os
import shutil
import tempfile
import unittest

from harness import REPO_ROOT, free_port, run_cli

SECRETS = {
    "WORKFORCE_LLM_API_KEY": "sk-live-Qw3Er5Ty7",
    "WORKFORCE_EMBEDDINGS_API_KEY": "emb-Ui9Op1As3",
    "WORKFORCE_OAUTH_SLACK_CLIENT_SECRET": "slk-Df5Gh7Jk9",
    "WORKFORCE_OAUTH_GITHUB_SIGNING_SECRET": "ghs-Lz2Xc4Vb6",
}
PASSWORD = "pg-Nm8Qa1Ws3"


def rows_by_name(stdout):
    return {row["name"]: row for row in json.loads(stdout)}


def text_lines(stdout):
    """{name: (source, value)} of the text output (after its header line)."""
    out = {}
    for line in stdout.splitlines()[1:]:
        name, source, value = line.split(None, 2)
        out[name] = (source, value)
    return out


class ConfigCommandTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="workforce-config-")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.db = os.path.join(self.tmp, "w.db")
        self.env = dict(SECRETS)
        self.env.update({
            "WORKFORCE_REDIS_URL": "redis://:%s@127.0.0.1:6379/0" % PASSWORD,
            "WORKFORCE_TASK_WORKERS": "7",
            "WORKFORCE_LLM": "openai",
            "WORKFORCE_LLM_BASE_URL": "http://127.0.0.1:9/v1",
        })

    def config(self, *args, env=None):
        return run_cli(["config"] + list(args), env=self.env if env is None else env)

    def assert_no_secret(self, text):
        for name, secret in list(SECRETS.items()) + [("password", PASSWORD)]:
            self.assertNotIn(secret, text, name)
            self.assertNotIn(secret[3:], text, name)  # nor a tail of one

    def test_text(self):
        p = self.config("--database", self.db, "--listen", "127.0.0.1:7777")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assert_no_secret(p.stdout)
        lines = text_lines(p.stdout)
        for name in SECRETS:
            self.assertEqual(lines[name], ("environment", "(set)"), name)
        self.assertEqual(lines["WORKFORCE_OAUTH_HUBSPOT_CLIENT_SECRET"], ("default", "(not set)"))
        self.assertEqual(lines["WORKFORCE_TASK_WORKERS"], ("environment", "7"))
        self.assertEqual(lines["WORKFORCE_LLM"], ("environment", "openai"))
        self.assertEqual(lines["WORKFORCE_LISTEN"], ("flag", "127.0.0.1:7777"))
        self.assertEqual(lines["WORKFORCE_DATABASE"], ("flag", self.db))
        self.assertEqual(lines["WORKFORCE_KNOWLEDGE_WORKERS"], ("default", "2"))
        self.assertEqual(lines["WORKFORCE_PUBLIC_URL"], ("default", "http://127.0.0.1:7777"))
        self.assertEqual(lines["WORKFORCE_SECRET_FILE"],
                         ("default", os.path.join(self.tmp, "server.secret")))
        self.assertEqual(lines["WORKFORCE_REDIS_URL"],
                         ("environment", "redis://:****@127.0.0.1:6379/0"))
        # the provider x field rows (WORKFORCE_OAUTH_REDIRECT_ORIGINS is one for all)
        self.assertEqual(len([n for n in lines if n.startswith("WORKFORCE_OAUTH_") and
                              n != "WORKFORCE_OAUTH_REDIRECT_ORIGINS"]), 40)

    def test_json(self):
        p = self.config("--json", "--database", self.db)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assert_no_secret(p.stdout)
        rows = rows_by_name(p.stdout)
        for row in rows.values():
            for key in ("name", "type", "default", "secret", "description", "value", "source"):
                self.assertIn(key, row, row["name"])
        for name in SECRETS:
            self.assertEqual((rows[name]["value"], rows[name]["source"], rows[name]["secret"]),
                             ("(set)", "environment", True), name)
        self.assertEqual(rows["WORKFORCE_OAUTH_OUTLOOK_CLIENT_SECRET"]["value"], "")
        self.assertEqual(rows["WORKFORCE_TASK_WORKERS"]["value"], "7")
        self.assertEqual((rows["WORKFORCE_TASK_WORKERS"]["min"],
                          rows["WORKFORCE_TASK_WORKERS"]["max"]), (1, 256))
        self.assertEqual(rows["WORKFORCE_VECTORS"]["values"], ["float32", "int8"])
        self.assertEqual(rows["WORKFORCE_DATABASE"]["source"], "flag")
        self.assertEqual(rows["WORKFORCE_LLM_MODEL"], dict(rows["WORKFORCE_LLM_MODEL"],
                                                           value="gpt-4o-mini", source="default"))

    def test_defaults_ignore_the_environment(self):
        quiet = self.config("--json", "--defaults", env={})
        noisy = self.config("--json", "--defaults",
                            env=dict(self.env, WORKFORCE_THREADS="bogus", WORKFORCE_NOPE="1"))
        self.assertEqual(quiet.returncode, 0, quiet.stderr)
        self.assertEqual(noisy.returncode, 0, noisy.stderr)
        self.assertEqual(quiet.stdout, noisy.stdout)
        table = json.loads(quiet.stdout)
        self.assertFalse([r for r in table if "value" in r or "source" in r])
        with open(os.path.join(REPO_ROOT, "docs", "settings.json"), encoding="utf-8") as f:
            self.assertEqual(table, json.load(f), "docs/settings.json is stale: make generated")
        text = self.config("--defaults", env={})
        self.assertEqual(text.returncode, 0, text.stderr)
        self.assertIn("integer 1..256", text_lines_raw(text.stdout, "WORKFORCE_TASK_WORKERS"))

    def test_malformed_and_unknown_stop_with_2(self):
        cases = [({"WORKFORCE_LLM_RETRIES": "11"}, "WORKFORCE_LLM_RETRIES",
                  "must be a whole number from 0 to 10"),
                 ({"WORKFORCE_VECTORS": "int4"}, "WORKFORCE_VECTORS", "must be float32 or int8"),
                 ({"WORKFORCE_OAUTH_GITHUB_TOKEN_URL": "ftp://x"},
                  "WORKFORCE_OAUTH_GITHUB_TOKEN_URL", "must start with http:// or https://"),
                 ({"WORKFORCE_NOPE": "1"}, "WORKFORCE_NOPE", "unknown setting")]
        for env, name, msg in cases:
            with self.subTest(name=name):
                p = self.config(env=env)
                self.assertEqual(p.returncode, 2, p.stderr)
                self.assertIn(name, p.stderr)
                self.assertIn(msg, p.stderr)
                self.assertEqual(p.stdout, "")
                s = run_cli(["serve", "--listen", "127.0.0.1:%d" % free_port(), "--database",
                             self.db], env=env, timeout=30)
                self.assertEqual(s.returncode, 2, s.stderr)
                self.assertIn(name, s.stderr)
                self.assertIn(msg, s.stderr)
        p = self.config("--listen", "127.0.0.1:0")
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("WORKFORCE_LISTEN", p.stderr)

    def test_bad_arguments(self):
        for args in (["--jsn"], ["extra"], ["--listen"]):
            with self.subTest(args=args):
                p = self.config(*args)
                self.assertEqual(p.returncode, 2, p.stderr)


def text_lines_raw(stdout, name):
    for line in stdout.splitlines():
        if line.split(None, 1)[0] == name:
            return line
    return ""


if __name__ == "__main__":
    unittest.main()
