# SPDX-License-Identifier: MIT
"""A real OAuth 2.0 authorization server for black-box tests, and a browser to drive it
(Python 3 standard library only).

AuthzServer runs tests/oauth/authz_server.mjs (oidc-provider 9.13.3 from node_modules) on a
127.0.0.1 port: authorization code + PKCE S256, client_secret_post and client_secret_basic,
a refresh token on every code exchange (rotated by default), RFC 7009 revocation, no login
page (the user "user-1" approves every scope at once, or denies when the authorization
request carries login_hint=deny or deny is switched on), and a small control API under
/__control. The header of tests/oauth/authz_server.mjs documents the protocol details.

    reason = authz_missing()          # a skip reason, or None
    with AuthzServer().start(clients=[{"client_id": "c1", "client_secret": "s1",
                                       "redirect_uris": [cb]}],
                             scopes=["chat:write"]) as az:
        verifier, challenge = pkce_pair()
        url = az.authorization_url("c1", cb, "chat:write", state="xyz",
                                   code_challenge=challenge)
        loc = follow_authorization(url, cb)            # cb?code=...&state=xyz&iss=...
        code = query_params(loc)["code"]
        st, tok = az.token({"grant_type": "authorization_code", "code": code,
                            "redirect_uri": cb, "code_verifier": verifier}, "c1", "s1")

follow_authorization() acts as the user's browser: it follows redirects with a cookie jar,
submits any HTML form it is shown, and stops at (without requesting) the first Location
that starts with the client's redirect_uri.

browser_connect() is that browser on a Workforce connect: from the authorization_url that
POST /v1/integrations/{provider}/connect answered (a page of the server, which binds the flow to
the browser with a cookie) through the provider and back to the server's callback, which it
requests with the same cookies (the callback refuses a browser that did not start the flow).
"""

import base64
import hashlib
import html.parser
import http.client
import http.cookiejar
import json
import os
import re
import secrets
import shutil
import time
import urllib.error
import urllib.parse
import urllib.request

from harness import REPO_ROOT, free_port  # noqa: F401  (free_port is re-exported for tests)
from peerlib import NodePeer

SCRIPT = os.path.join(REPO_ROOT, "tests", "oauth", "authz_server.mjs")
OIDC_PROVIDER_DIR = os.path.join(REPO_ROOT, "node_modules", "oidc-provider")


def authz_missing():
    """Why AuthzServer cannot run here (a skip reason), or None when it can."""
    if not os.path.exists(os.path.join(OIDC_PROVIDER_DIR, "package.json")):
        return "node_modules/oidc-provider is not installed (run npm ci)"
    if shutil.which("node") is None:
        return "node is not installed"
    if not os.path.exists(SCRIPT):
        return "tests/oauth/authz_server.mjs is missing"
    return None


skip_reason = authz_missing


class AuthorizationFlowError(AssertionError):
    """follow_authorization() did not reach the client's redirect_uri."""


# ---- PKCE and URLs ----

def pkce_pair(length=64):
    """(code_verifier, S256 code_challenge) as RFC 7636 builds them."""
    verifier = secrets.token_urlsafe(length)[:length]
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    challenge = base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")
    return verifier, challenge


def query_params(url):
    """The query parameters of 'url' as a dict (last value wins)."""
    return dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(url).query, keep_blank_values=True))


def basic_auth(client_id, client_secret):
    """The Authorization header value for client_secret_basic (RFC 6749 2.3.1: each part is
    form-urlencoded before base64)."""
    raw = "%s:%s" % (urllib.parse.quote_plus(client_id), urllib.parse.quote_plus(client_secret))
    return "Basic " + base64.b64encode(raw.encode("utf-8")).decode("ascii")


def http_request(method, url, body=None, headers=None, timeout=10.0):
    """One request, no redirects followed. Returns (status, headers as a lowercase-keyed dict,
    body bytes)."""
    u = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(u.hostname, u.port or 80, timeout=timeout)
    try:
        path = u.path or "/"
        if u.query:
            path += "?" + u.query
        conn.request(method, path, body=body, headers=headers or {})
        r = conn.getresponse()
        data = r.read()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, data
    finally:
        conn.close()


def post_form(url, params, headers=None, timeout=10.0):
    """POST application/x-www-form-urlencoded; returns (status, headers, parsed JSON or None,
    raw body bytes)."""
    h = {"Content-Type": "application/x-www-form-urlencoded", "Accept": "application/json"}
    h.update(headers or {})
    body = urllib.parse.urlencode(params).encode("ascii")
    status, rh, data = http_request("POST", url, body=body, headers=h, timeout=timeout)
    try:
        doc = json.loads(data) if data else None
    except ValueError:
        doc = None
    return status, rh, doc, data


# ---- The server ----

class AuthzServer(NodePeer):
    """One authz_server.mjs process with its own temp dir (config.json, stdout, server.log)."""

    what = "authz server"
    script = SCRIPT
    log_name = "server.log"
    prefix = "workforce-authz-"

    def __init__(self):
        super().__init__()
        self.config = None

    # -- lifecycle --

    def start(self, clients, scopes, access_ttl=3600, refresh_ttl=86400, port=0,
              rotate_refresh=True, timeout=20.0):
        """Write the config, spawn node, wait (at most 'timeout' s) for the ready line."""
        reason = authz_missing()
        if reason:
            raise RuntimeError(reason)
        self.config = {
            "port": port,
            "clients": [dict(c) for c in clients],
            "scopes": list(scopes),
            "access_ttl": access_ttl,
            "refresh_ttl": refresh_ttl,
            "rotate_refresh": rotate_refresh,
        }
        return self.spawn(self.config, timeout)

    # -- the ready line --

    @property
    def issuer(self):
        return self.info["issuer"]

    @property
    def port(self):
        return self.info["port"]

    @property
    def authorization_endpoint(self):
        return self.info["authorization_endpoint"]

    @property
    def token_endpoint(self):
        return self.info["token_endpoint"]

    @property
    def revocation_endpoint(self):
        return self.info["revocation_endpoint"]

    @property
    def control_url(self):
        return self.info["control_url"]

    # -- control API --

    def control(self, method, name, body=None):
        """(status, JSON) of /__control/<name>."""
        data = json.dumps(body).encode() if body is not None else None
        headers = {"Content-Type": "application/json"} if data is not None else {}
        status, _, raw = http_request(method, self.control_url + "/" + name, body=data,
                                      headers=headers)
        return status, json.loads(raw)

    def _ok(self, method, name, body=None):
        status, doc = self.control(method, name, body)
        if status != 200:
            raise RuntimeError("control %s %s -> %d %s" % (method, name, status, doc))
        return doc

    def tokens(self):
        """{"access_tokens", "refresh_tokens", "authorization_codes", "grants", "fail_mode",
        "deny"}: counts of live artifacts and the switches."""
        return self._ok("GET", "tokens")

    def token_values(self):
        """The live tokens' values: {"access_tokens": [...], "refresh_tokens": [...]}."""
        return self._ok("GET", "token_values")

    def revoke_all_refresh(self):
        """Delete every refresh token; returns how many there were."""
        return self._ok("POST", "revoke_all_refresh")["revoked"]

    def fail_token_endpoint(self, mode):
        """mode: "html", "500", "hang", "garbage" or "off"."""
        return self._ok("POST", "fail_token_endpoint", {"mode": mode})["fail_mode"]

    def set_deny(self, enabled):
        """While enabled, the user denies every authorization request."""
        return self._ok("POST", "deny", {"enabled": bool(enabled)})["deny"]

    # -- client-side helpers (for tests that talk to the server directly) --

    def authorization_url(self, client_id, redirect_uri, scope, state=None,
                          code_challenge=None, code_challenge_method="S256", **extra):
        """An authorization request URL; None values are left out."""
        params = {"response_type": "code", "client_id": client_id,
                  "redirect_uri": redirect_uri, "scope": scope, "state": state,
                  "code_challenge": code_challenge,
                  "code_challenge_method": code_challenge_method if code_challenge else None}
        params.update(extra)
        params = {k: v for k, v in params.items() if v is not None}
        return self.authorization_endpoint + "?" + urllib.parse.urlencode(params)

    def _client_auth(self, params, client_id, client_secret, auth):
        params = dict(params)
        headers = {}
        if auth == "post":
            params["client_id"] = client_id
            params["client_secret"] = client_secret
        elif auth == "basic":
            headers["Authorization"] = basic_auth(client_id, client_secret)
        else:
            raise ValueError("auth must be 'post' or 'basic'")
        return params, headers

    def token(self, params, client_id, client_secret, auth="post", timeout=10.0):
        """POST the token endpoint; returns (status, JSON or None)."""
        p, h = self._client_auth(params, client_id, client_secret, auth)
        status, _, doc, _ = post_form(self.token_endpoint, p, h, timeout=timeout)
        return status, doc

    def revoke(self, token, client_id, client_secret, hint=None, auth="post"):
        """POST the revocation endpoint; returns (status, JSON or None)."""
        params = {"token": token}
        if hint:
            params["token_type_hint"] = hint
        p, h = self._client_auth(params, client_id, client_secret, auth)
        status, _, doc, _ = post_form(self.revocation_endpoint, p, h)
        return status, doc


# ---- The browser ----

class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, req, fp, code, msg, headers, newurl):
        return None


class _FormParser(html.parser.HTMLParser):
    """The first <form> of a page: its action, method and named input values."""

    def __init__(self):
        super().__init__()
        self.form = None
        self.done = False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if self.done:
            return
        if tag == "form" and self.form is None:
            self.form = {"action": a.get("action") or "",
                         "method": (a.get("method") or "get").upper(), "fields": []}
        elif self.form is not None and tag in ("input", "button") and a.get("name"):
            kind = (a.get("type") or ("submit" if tag == "button" else "text")).lower()
            if kind in ("checkbox", "radio") and "checked" not in a:
                return
            if kind == "submit" and any(f[2] == "submit" for f in self.form["fields"]):
                return
            self.form["fields"].append((a["name"], a.get("value") or "", kind))

    def handle_endtag(self, tag):
        if tag == "form" and self.form is not None:
            self.done = True


def _page_text(body):
    text = re.sub(r"(?s)<(script|style)\b.*?</\1>", " ", body)
    text = re.sub(r"<[^>]+>", " ", text)
    return re.sub(r"\s+", " ", html.unescape(text)).strip()[:600]


def follow_authorization(url, stop_prefix, timeout=10, jar=None, max_hops=25):
    """Act as the user's browser from 'url' until a redirect to 'stop_prefix'.

    Follows 301/302/303/307/308 Location headers (relative or absolute) with a cookie jar
    (a fresh one unless 'jar' is given), submits any HTML form shown on the way, and returns
    the first Location that starts with 'stop_prefix' without requesting it. Raises
    AuthorizationFlowError with the status, URL and page text otherwise."""
    jar = jar if jar is not None else http.cookiejar.CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar), _NoRedirect())
    deadline = time.time() + timeout
    method, data, current = "GET", None, url
    trail = []
    for _ in range(max_hops):
        if current.startswith(stop_prefix):
            return current
        left = deadline - time.time()
        if left <= 0:
            raise AuthorizationFlowError("authorization flow timed out after %ss; visited:\n  %s"
                                         % (timeout, "\n  ".join(trail)))
        trail.append("%s %s" % (method, current))
        req = urllib.request.Request(current, data=data, method=method)
        if data is not None:
            req.add_header("Content-Type", "application/x-www-form-urlencoded")
        req.add_header("Accept", "text/html,application/xhtml+xml")
        try:
            resp = opener.open(req, timeout=max(left, 0.1))
            status, headers, body = resp.status, resp.headers, resp.read()
        except urllib.error.HTTPError as e:
            status, headers, body = e.code, e.headers, e.read()
        except OSError as e:
            raise AuthorizationFlowError("request failed: %s %s: %s; visited:\n  %s"
                                         % (method, current, e, "\n  ".join(trail)))
        location = headers.get("Location")
        if status in (301, 302, 303, 307, 308) and location:
            nxt = urllib.parse.urljoin(current, location)
            if nxt.startswith(stop_prefix):
                return nxt
            if status in (307, 308):
                current = nxt  # same method and body
            else:
                method, data, current = "GET", None, nxt
            continue
        ctype = headers.get("Content-Type") or ""
        text = body.decode("utf-8", "replace")
        if status == 200 and "html" in ctype:
            p = _FormParser()
            p.feed(text)
            if p.form is not None:
                action = urllib.parse.urljoin(current, p.form["action"] or current)
                fields = [(n, v) for n, v, _ in p.form["fields"]]
                if p.form["method"] == "POST":
                    method, data, current = "POST", urllib.parse.urlencode(fields).encode(), action
                else:
                    sep = "&" if "?" in action else "?"
                    method, data = "GET", None
                    current = action + (sep + urllib.parse.urlencode(fields) if fields else "")
                continue
        raise AuthorizationFlowError(
            "authorization flow stopped at %s %s with HTTP %d (%s) before reaching %s: %s\n"
            "visited:\n  %s" % (method, current, status, ctype or "no content type", stop_prefix,
                                _page_text(text), "\n  ".join(trail)))
    raise AuthorizationFlowError("more than %d hops without reaching %s; visited:\n  %s"
                                 % (max_hops, stop_prefix, "\n  ".join(trail)))


def cookie_header(jar, url):
    """The Cookie header a browser with 'jar' sends to 'url' (None when it sends none)."""
    req = urllib.request.Request(url)
    jar.add_cookie_header(req)
    return req.get_header("Cookie")


def browser_connect(server, base, authorization_url, provider, jar=None, timeout=10):
    """As the user's browser (cookie jar 'jar', a fresh one by default): through the
    authorization of a connect to the callback of 'server' (whose public URL is 'base'), and
    the callback itself with the browser's cookies. Returns the callback's harness Response."""
    jar = jar if jar is not None else http.cookiejar.CookieJar()
    cb = "%s/v1/integrations/%s/callback" % (base, provider)
    url = follow_authorization(authorization_url, cb, timeout=timeout, jar=jar)
    cookie = cookie_header(jar, url)
    return server.request("GET", url[len(base):], headers={"Cookie": cookie} if cookie else None)
