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

from harness import REPO_ROOT
from peerlib import NodePeer
from oauthlib import http_request  # noqa: F401

SCRIPT = os.path.join(REPO_ROOT, "tests", "oidc", "provider.mjs")


def provider_missing():
    """Why OidcProvider cannot run here (a skip reason), or None when it can."""
    if not os.path.exists(os.path.join(REPO_ROOT, "node_modules", "oidc-provider", "package.json")):
        return "node_modules/oidc-provider is not installed (run npm ci)"
    if shutil.which("node") is None:
        return "node is not installed"
    return None


class OidcProvider(NodePeer):
    """One provider.mjs process with its own temp dir (config.json, stdout, provider.log)."""

    what = "oidc provider"
    script = SCRIPT
    log_name = "provider.log"
    prefix = "workforce-oidc-"

    def start(self, client_id, client_secret, redirect_uris, account=None, timeout=20.0):
        """Write the config, spawn node, wait (at most 'timeout' s) for the ready line."""
        reason = provider_missing()
        if reason:
            raise RuntimeError(reason)
        cfg = {"port": 0, "client_id": client_id, "client_secret": client_secret,
               "redirect_uris": list(redirect_uris)}
        if account:
            cfg["account"] = account
        return self.spawn(cfg, timeout)

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
