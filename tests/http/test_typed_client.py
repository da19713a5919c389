# SPDX-License-Identifier: MIT
"""A typed TypeScript client generated from the served document calls every operation.

The document is fetched from the running server (GET /v1/openapi.json) by openapi-typescript
itself (7.13.0, default options) into build/ts/workforce-api.d.ts; tests/ts/typed_client.mts,
which calls every operation that is not planned through openapi-fetch's createClient, is
compiled with `tsc -p tests/ts` (strict) and run with node against the same server. A document
that generates a client a strict program cannot use fails the compile; an operation the
program does not call fails the compile (its steps are keyed by operationId) and the run (it
checks the requests it made against the served document).

Runs once per `make test`: skipped on the runs with WORKFORCE_BIN (the sanitizer build) or
WORKFORCE_HTTP_PG_URL (PostgreSQL) set, since the document and the client do not change with
them."""

import json
import os
import shutil
import subprocess
import time
import unittest
import urllib.request
import uuid

from harness import GENEROUS_LIMITS, REPO_ROOT, ServerTestCase

BIN = os.path.join(REPO_ROOT, "node_modules", ".bin")
OUT = os.path.join(REPO_ROOT, "build", "ts")
TYPES = os.path.join(OUT, "workforce-api.d.ts")
PROGRAM = os.path.join(OUT, "out", "typed_client.mjs")
SLACK_SECRET = "typed-slack-" + uuid.uuid4().hex
STRIPE_SECRET = "whsec_typed_" + uuid.uuid4().hex


def skip_reason():
    for var in ("WORKFORCE_BIN", "WORKFORCE_HTTP_PG_URL"):
        if os.environ.get(var):
            return "%s is set: the typed client runs once, on the plain SQLite run" % var
    for tool in ("openapi-typescript", "tsc"):
        if not os.path.exists(os.path.join(BIN, tool)):
            return "node_modules/.bin/%s is missing (run npm ci)" % tool
    if not os.path.exists(os.path.join(REPO_ROOT, "node_modules", "openapi-fetch",
                                       "package.json")):
        return "node_modules/openapi-fetch is missing (run npm ci)"
    if shutil.which("node") is None:
        return "node is not installed"
    return None


@unittest.skipIf(skip_reason(), skip_reason() or "")
class TypedClientTest(ServerTestCase):

    server_env = {
        "WORKFORCE_RATE_LIMITS": GENEROUS_LIMITS,
        # connect needs client credentials (no request leaves the server for it); inbound
        # events need the signing secret
        "WORKFORCE_OAUTH_SLACK_CLIENT_ID": "typed-client",
        "WORKFORCE_OAUTH_SLACK_CLIENT_SECRET": "typed-secret",
        "WORKFORCE_OAUTH_SLACK_SIGNING_SECRET": SLACK_SECRET,
        "WORKFORCE_STRIPE_TEST_WEBHOOK_SECRET": STRIPE_SECRET,
    }

    def run_tool(self, args, what, timeout=120, env=None):
        t0 = time.time()
        p = subprocess.run(args, cwd=REPO_ROOT, capture_output=True, text=True,
                           timeout=timeout, stdin=subprocess.DEVNULL, env=env)
        self.assertEqual(p.returncode, 0, "%s failed (%d):\n%s\n%s"
                         % (what, p.returncode, p.stdout[-4000:], p.stderr[-4000:]))
        return p, time.time() - t0

    def test_every_operation(self):
        srv = self.server
        key = srv.create_key("typed-" + uuid.uuid4().hex[:8], mode="test")
        os.makedirs(OUT, exist_ok=True)
        for stale in (TYPES, PROGRAM):
            if os.path.exists(stale):
                os.remove(stale)
        url = srv.base_url + "/v1/openapi.json"
        # 1. types from the served document, with the tool's default options
        self.run_tool([os.path.join(BIN, "openapi-typescript"), url, "-o", TYPES],
                      "openapi-typescript")
        self.assertTrue(os.path.exists(TYPES))
        # 2. the program, strict
        self.run_tool([os.path.join(BIN, "tsc"), "-p", os.path.join("tests", "ts")],
                      "tsc -p tests/ts")
        self.assertTrue(os.path.exists(PROGRAM))
        # 3. the run
        # the first owner of an organization of its own, by the command line (contract §20)
        org = "typed-people-" + uuid.uuid4().hex[:8]
        p = srv.cli("users", "create", "--org", org, "--email", "owner@%s.test" % org,
                    "--role", "owner")
        self.assertEqual(p.returncode, 0, p.stderr)
        token = p.stdout.strip().splitlines()[-1].split("token=")[1]
        env = dict(os.environ, WF_URL=srv.base_url, WF_KEY=key,
                   WF_SLACK_SIGNING_SECRET=SLACK_SECRET, WF_STRIPE_WEBHOOK_SECRET=STRIPE_SECRET,
                   WF_OWNER_EMAIL="owner@%s.test" % org,
                   WF_OWNER_TOKEN=token)
        p, _ = self.run_tool(["node", PROGRAM], "the typed client", env=env)
        lines = p.stdout.strip().splitlines()
        self.assertTrue(lines, p.stderr)
        result = json.loads(lines[-1])
        self.assertTrue(result["ok"], result)
        # every operation of the served document, as seen from here too
        with urllib.request.urlopen(url, timeout=30) as r:
            doc = json.load(r)
        ops = [op for item in doc["paths"].values() for op in item.values()
               if isinstance(op, dict) and "operationId" in op]
        wanted = {op["operationId"] for op in ops if op.get("x-workforce-status") != "planned"}
        self.assertGreaterEqual(len(wanted), 40)
        called = set(result["called"])
        self.assertEqual(wanted - called, set(), "operations never called")
        self.assertEqual(called - {op["operationId"] for op in ops}, set(),
                         "calls of operations the document does not have")


if __name__ == "__main__":
    unittest.main()
