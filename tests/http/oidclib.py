# SPDX-License-Identifier: MIT
"""A real OpenID Connect provider for black-box tests of sign-in (Python 3 standard library).

OidcProvider runs tests/oidc/provider.mjs (oidc-provider 9.13.3 from node_modules) on a
127.0.0.1 port with one client (client_secret_basic, PKCE S256 required) whose redirect_uris
are given, and no login page: the current account (control: account()) logs in and consents
at once. Its control API rotates the signing key (rotate()), and makes the token endpoint
answer deliberately bad ID tokens (tamper("expired" | "wrong_nonce" | "resigned" | "alg_none"
| "off")); state() counts the JWKS, discovery and token requests. The header of
tests/oidc/provider.mjs documents the details.

    with OidcProvider().start("wf", "s3cret", [cb]) as op:
        loc = follow_authorization(authorization_url, cb)   # oauthlib: cb?code=...&state=...

The browser side (follow_authorization, cookie_header) is oauthlib's.
"""

import json
import os
import shutil
import signal
import subprocess
import tempfile
import time

from harness import REPO_ROOT
from oauthlib import http_request  # noqa: F401

SCRIPT = os.path.join(REPO_ROOT, "tests", "oidc", "provider.mjs")


def provider_missing():
    """Why OidcProvider cannot run here (a skip reason), or None when it can."""
    if not os.path.exists(os.path.join(REPO_ROOT, "node_modules", "oidc-provider", "package.json")):
        return "node_modules/oidc-provider is not installed (run npm ci)"
    if shutil.which("node") is None:
        return "node is not installed"
    return None


class OidcProvider:
    """One provider.mjs process with its own temp dir (config.json, stdout, provider.log)."""

    def __init__(self):
        self.proc = None
        self.tmpdir = None
        self.info = None

    def start(self, client_id, client_secret, redirect_uris, account=None, timeout=20.0):
        """Write the config, spawn node, wait (at most 'timeout' s) for the ready line."""
        reason = provider_missing()
        if reason:
            raise RuntimeError(reason)
        self.tmpdir = tempfile.mkdtemp(prefix="workforce-oidc-")
        cfg = {"port": 0, "client_id": client_id, "client_secret": client_secret,
               "redirect_uris": list(redirect_uris)}
        if account:
            cfg["account"] = account
        cfg_path = os.path.join(self.tmpdir, "config.json")
        with open(cfg_path, "w") as f:
            json.dump(cfg, f)
        out_path = os.path.join(self.tmpdir, "stdout")
        with open(out_path, "wb") as out, open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(["node", SCRIPT, "--config", cfg_path],
                                         stdin=subprocess.DEVNULL, stdout=out, stderr=log,
                                         cwd=REPO_ROOT)
        deadline = time.time() + timeout
        while True:
            with open(out_path, "rb") as f:
                data = f.read()
            if b"\n" in data:
                self.info = json.loads(data.split(b"\n", 1)[0])
                return self
            if self.proc.poll() is not None:
                raise RuntimeError("oidc provider exited with %s during start:\n%s"
                                   % (self.proc.returncode, self.log_tail()))
            if time.time() > deadline:
                self.stop()
                raise RuntimeError("oidc provider not ready within %.0fs:\n%s"
                                   % (timeout, self.log_tail()))
            time.sleep(0.05)

    def stop(self, timeout=5.0):
        """SIGTERM by PID, SIGKILL after 'timeout' s."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                os.kill(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)
        if self.tmpdir and not os.environ.get("WORKFORCE_HTTP_KEEP"):
            shutil.rmtree(self.tmpdir, ignore_errors=True)
            self.tmpdir = None
        return self.proc.returncode

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
        return False

    @property
    def log_path(self):
        return os.path.join(self.tmpdir, "provider.log")

    def log_tail(self, n=4000):
        try:
            with open(self.log_path, "rb") as f:
                return f.read()[-n:].decode("utf-8", "replace")
        except OSError:
            return "(no log)"

    @property
    def issuer(self):
        return self.info["issuer"]

    # -- control --

    def control(self, method, name, body=None):
        data = json.dumps(body).encode() if body is not None else None
        st, _, raw = http_request(method, "%s/%s" % (self.info["control_url"], name), data,
                                  {"Content-Type": "application/json"} if data else None)
        if st != 200:
            raise AssertionError("control %s %s: HTTP %d %r" % (method, name, st, raw[:200]))
        return json.loads(raw)

    def state(self):
        return self.control("GET", "state")

    def rotate(self, alg="RS256"):
        return self.control("POST", "rotate", {"alg": alg})

    def account(self, email, email_verified=True, name=None):
        return self.control("POST", "account", {"email": email, "email_verified": email_verified,
                                                "name": name or email})

    def tamper(self, mode):
        return self.control("POST", "tamper", {"mode": mode})
