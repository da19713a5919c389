#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A strict mock of the five integration providers' HTTP APIs (Python standard library only).

Run it:     python3 tests/mock/provider_mock.py [PORT | --port N] [-v]
            -> first stdout line is the ready line {"port": N} (PORT 0 or none: a free port)
Or import:  m = provider_mock.ProviderMock().start(); m.base_url ("http://127.0.0.1:N");
            m.url("github") -> "http://127.0.0.1:N/github"; m.stop()
            (module level start()/stop() manage one shared instance, like openai_mock.py).

Point the server at it with WORKFORCE_OAUTH_<PROVIDER>_{AUTH,TOKEN,REVOKE,API}_URL (env_for()
returns all of them for a running mock):
  provider          API_URL              AUTH_URL / TOKEN_URL / REVOKE_URL
  slack             {base}/slack/api     /slack/oauth/v2/authorize, /slack/api/oauth.v2.access,
                                         /slack/api/auth.revoke
  google_calendar   {base}/google        /google/o/oauth2/v2/auth, /google/token, /google/revoke
  outlook           {base}/graph         /microsoft/common/oauth2/v2.0/authorize, .../token, (none)
  github            {base}/github        /github/login/oauth/authorize,
                                         /github/login/oauth/access_token, /github/applications
  hubspot           {base}/hubspot       /hubspot/oauth/authorize, /hubspot/oauth/v1/token,
                                         /hubspot/oauth/v1/refresh-tokens
Real upstream shapes and the doc URL of each are in tests/mock/PROVIDERS.md.

Provider routes (every one checks the Authorization: Bearer token against the accepted set;
a token in the "expired" set gets the provider's expired-token answer):
  POST /slack/api/chat.postMessage       JSON (charset optional -> warning) or form; channel,text
  GET|POST /slack/api/chat.getPermalink  channel, message_ts
  GET|POST /slack/api/conversations.list types, exclude_archived, limit (1..1000), cursor; at
                                         most SLACK_PAGE_MAX (2) a page, next_cursor
                                         (invalid_limit, invalid_types, invalid_cursor)
  GET|POST /slack/api/auth.test
  POST /slack/api/auth.revoke            revokes the calling token (test=1: not really)
  POST /github/repos/{owner}/{repo}/issues   User-Agent and Accept required; title required
  GET  /github/repos/{owner}/{repo}/issues   state (open|closed|all), sort, direction,
                                         per_page (<= 100), page; pull requests included;
                                         created issues are listed too
  GET  /github/user
  DELETE /github/applications/{client_id}/token   Basic client_id:client_secret, {access_token}
  POST /google/calendar/v3/calendars/{calendarId}/events   summary,start,end(+timezone)
  GET  /google/calendar/v3/calendars/{calendarId}/events   timeMin/timeMax (RFC 3339 with an
                                         offset), maxResults, singleEvents (weekly
                                         recurrences expanded), orderBy (startTime needs
                                         singleEvents=true), pageToken; created events too
  GET  /google/openidconnect/v1/userinfo  (alias /google/oauth2/v3/userinfo)
  POST /graph/v1.0/me/sendMail           202, no body, request-id / client-request-id headers
  GET  /graph/v1.0/me/messages           $top (1..1000), $skip, $select, $search="..." (no
                                         $orderby or $filter with it), $orderby
                                         receivedDateTime [asc|desc]; @odata.nextLink
  GET  /graph/v1.0/me
  POST /hubspot/crm/v3/objects/notes     properties.hs_timestamp required; associations checked
  POST /hubspot/crm/v3/objects/contacts/search   filterGroups/filters (EQ, NEQ, IN, ...), query
                                         (each word starts a word of a name, the email, phone
                                         or company), properties, limit (<= 200), after
  GET  /hubspot/oauth/v1/access-tokens/{token}   token metadata (hub_domain, user, ...)
  DELETE /hubspot/oauth/v1/refresh-tokens/{token}
OAuth (the authorization-code flow end to end, so a test can follow the server's
authorization_url and land on its callback):
  GET  {authorize path}?client_id&redirect_uri&state&scope&code_challenge&code_challenge_method
       -> 302 to redirect_uri?code=mock-code-N&state=...; add mock_error=access_denied to get
       ?error=access_denied&state=... instead. The fixed code "test-code" is always accepted at
       the token endpoint (no PKCE / redirect_uri check, reusable).
  POST {token path}  grant_type=authorization_code|refresh_token, client credentials (form or
       Basic), code (single use), redirect_uri (must match the authorize one), code_verifier
       (must match an S256/plain challenge); answers in each provider's own format, errors too.
  POST /google/revoke (token=...), GET /hubspot/oauth/v1/access-tokens/{token}.
  Issued access tokens join the accepted set; issued refresh tokens the refresh set.

Fixtures (fixed, deterministic):
  Slack channels  C0MOCKGEN "general", C0MOCKRND "random" (bot is a member), C0MOCKPRV
                  "private-no-bot" (not_in_channel), C0MOCKARC "archived" (is_archived);
                  a channel may be given as ID, "name" or "#name".
  GitHub repos    acme/widgets (ok), acme/no-issues (410 issues disabled), acme/locked (403),
                  acme/tracker (ok: issues #1-#5, #2 closed, #4 a pull request); anything
                  else 404. Names are case-insensitive like GitHub's.
  Google          calendars "primary" (= mock.user@example.com), team@group.calendar.google.com;
                  the primary has GOOGLE_SEED_EVENTS (one in 2024, three in 2099, one weekly)
  Graph           the mailbox GRAPH_MESSAGES (four, one with a 247-character bodyPreview)
  HubSpot         contacts 1001 jane@example.com (Jane Doe, Acme Corp), 1002 bob@example.com
                  (Bob Smith, Globex), 1003 john.doe@initech.example (John Doe, no company)
Ids are counters, reset by /__control/reset: Slack ts "1700000000.000001"...; GitHub issue
id 9000001..., number per repo 1, 2, ...; Google event id "mockev0001"...; HubSpot note id
"50001"...; Graph request-id "00000000-0000-4000-8000-000000000001"...; codes mock-code-1...;
tokens xoxb-mock-1 / gho_mock0001 / ya29.mock-1 / mock-ms-access-1 / mock-hubspot-access-1.

Control API (never recorded, never failed):
  POST /__control/tokens   {"valid": [...], "expired": [...], "refresh": [...]} replaces each
                           list given (default valid ["test-token"], refresh
                           ["test-refresh-token"], expired []); answers the current lists
  GET  /__control/tokens
  POST /__control/fail     {"path_prefix": "/slack", "mode": "500"|"html"|"hang"|"off"|"<3-digit
                           status>"|"html:<status>", "count": N?}: requests under the prefix get
                           that failure ("html": a 200 text/html page; "hang": never answered
                           until the rule is turned off or the mock stops; "429" adds
                           Retry-After: 1); with count, only the next N requests
  POST /__control/client   {"client_id", "client_secret"} accepted at the token endpoints
                           (default test-client-id / test-client-secret)
  POST /__control/options  {"slack_token_rotation": bool, "github_expiring_tokens": bool,
                           "expires_in": seconds in every token answer (0: the provider's own)}
                           (both false by default, as the providers' own defaults)
  POST /__control/reset    (alias POST /__reset) forget requests, counters, codes, objects,
                           failures, options; restore the default tokens and client
  GET  /__control/state    tokens, failures, options, client, pending codes
  GET  /__requests         every provider request in order: {seq, method, path, query, headers
                           (lower-case names), body (parsed JSON / form dict / text / null),
                           raw, provider, status}; ?prefix=/github keeps those under a prefix
  GET  /health             {"status": "ok"}

Helpers for inbound-event tests: slack_signature_headers(), github_signature_headers(),
hubspot_v3_signature_headers() build the providers' real signature headers.
"""

import base64
import calendar
import hashlib
import hmac
import json
import re
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

DEFAULT_TOKENS = ("test-token",)
DEFAULT_REFRESH = ("test-refresh-token",)
DEFAULT_CLIENT = ("test-client-id", "test-client-secret")
TEST_CODE = "test-code"

SLACK_TEAM = {"id": "T0MOCKTEAM", "name": "Mock Workspace"}
SLACK_CHANNELS = {
    "C0MOCKGEN": {"name": "general", "member": True, "archived": False,
                  "topic": "Company-wide announcements", "created": 1600000000},
    "C0MOCKRND": {"name": "random", "member": True, "archived": False,
                  "topic": "", "created": 1600000100},
    "C0MOCKPRV": {"name": "private-no-bot", "member": False, "archived": False,
                  "topic": "The bot is not in here", "created": 1600000200},
    "C0MOCKARC": {"name": "archived", "member": True, "archived": True,
                  "topic": "Old things", "created": 1600000300},
}
SLACK_PAGE_MAX = 2  # conversations.list answers at most this many a page (Slack may answer
                    # fewer than asked before the end; clients follow next_cursor)
GITHUB_REPOS = {"acme/widgets": "ok", "acme/no-issues": "gone", "acme/locked": "forbidden",
                "acme/tracker": "ok"}
# acme/tracker's issues before any test creates one (GET .../issues lists them, newest first by
# default); #4 is a pull request, which GitHub lists among the issues.
GITHUB_SEED_ISSUES = {"acme/tracker": [
    (1, "open", "Crash on start", "2024-01-01T10:00:00Z", False),
    (2, "closed", "Typo in README", "2024-01-02T10:00:00Z", False),
    (3, "open", "Slow search", "2024-01-03T10:00:00Z", False),
    (4, "open", "Fix the crash on start", "2024-01-04T10:00:00Z", True),
    (5, "open", "Dark mode", "2024-01-05T10:00:00Z", False),
]}
GITHUB_USER = {"login": "mock-user", "id": 583231, "node_id": "MDQ6VXNlcjU4MzIzMQ==",
               "type": "User", "name": "Mock User", "site_admin": False,
               "html_url": "https://github.com/mock-user",
               "avatar_url": "https://avatars.githubusercontent.com/u/583231?v=4"}
GOOGLE_USER = {"sub": "110169484474386276334", "email": "mock.user@example.com",
               "email_verified": True, "name": "Mock User", "given_name": "Mock",
               "family_name": "User"}
GOOGLE_CALENDARS = {"primary": "mock.user@example.com",
                    "mock.user@example.com": "mock.user@example.com",
                    "team@group.calendar.google.com": "team@group.calendar.google.com"}
GRAPH_ME = {"@odata.context": "https://graph.microsoft.com/v1.0/$metadata#users/$entity",
            "businessPhones": [], "displayName": "Mock User", "givenName": "Mock",
            "jobTitle": None, "mail": "mock.user@contoso.example", "mobilePhone": None,
            "officeLocation": None, "preferredLanguage": "en-US", "surname": "User",
            "userPrincipalName": "mock.user@contoso.example",
            "id": "6f1e8c1a-0000-4000-8000-0000000000aa"}
HUBSPOT_HUB = {"hub_id": 62515, "hub_domain": "mock-portal.hubspot.com", "app_id": 1234567,
               "user": "mock.user@example.com", "user_id": 7654321}
HUBSPOT_CONTACTS = {
    "1001": {"email": "jane@example.com", "firstname": "Jane", "lastname": "Doe",
             "company": "Acme Corp", "phone": "+1 555 0100"},
    "1002": {"email": "bob@example.com", "firstname": "Bob", "lastname": "Smith",
             "company": "Globex"},
    "1003": {"email": "john.doe@initech.example", "firstname": "John", "lastname": "Doe"},
}
# The properties a search's "query" looks in (HubSpot's default searchable properties of
# contacts: names, email, phone, company, ...).
HUBSPOT_SEARCHABLE = ("firstname", "lastname", "email", "phone", "company")
# Events of the primary calendar (mock.user@example.com) before any test creates one: one
# past, three ahead (one all-day, one recurring weekly, expanded with singleEvents=true).
GOOGLE_SEED_EVENTS = [
    {"id": "seedpast01", "summary": "Kickoff", "start": {"dateTime": "2024-01-10T09:00:00Z"},
     "end": {"dateTime": "2024-01-10T10:00:00Z"}},
    {"id": "seedfut001", "summary": "Planning", "start": {"dateTime": "2099-03-01T09:00:00Z"},
     "end": {"dateTime": "2099-03-01T10:00:00Z"}},
    {"id": "seedfut002", "summary": "Offsite", "start": {"date": "2099-03-05"},
     "end": {"date": "2099-03-06"}},
    {"id": "seedweekly", "summary": "Weekly sync", "start": {"dateTime": "2099-03-02T15:00:00Z"},
     "end": {"dateTime": "2099-03-02T15:30:00Z"}, "recurrence": ["RRULE:FREQ=WEEKLY;COUNT=2"]},
]
# The signed-in user's mailbox (GET /graph/v1.0/me/messages), newest first.
GRAPH_MESSAGES = [
    {"id": "AAMkMOCK0001", "subject": "Quarterly report", "receivedDateTime":
     "2024-03-04T09:15:00Z", "from": ("Jane Doe", "jane@example.com"),
     "bodyPreview": "Hi, the quarterly report is attached. " + "Numbers look good. " * 11},
    {"id": "AAMkMOCK0002", "subject": "Lunch on Friday?", "receivedDateTime":
     "2024-03-03T12:00:00Z", "from": ("Bob Smith", "bob@example.com"),
     "bodyPreview": "Pizza or sushi?"},
    {"id": "AAMkMOCK0003", "subject": "Invoice 2024-017", "receivedDateTime":
     "2024-03-02T08:30:00Z", "from": ("Billing", "billing@vendor.example"),
     "bodyPreview": "Your invoice for February is ready."},
    {"id": "AAMkMOCK0004", "subject": "Re: quarterly numbers", "receivedDateTime":
     "2024-03-01T17:45:00Z", "from": ("Jane Doe", "jane@example.com"),
     "bodyPreview": "See the \"final\" figures below."},
]
FIXED_TIME = "2024-01-01T00:00:00.000Z"

GH_DOC_ISSUE = "https://docs.github.com/rest/issues/issues#create-an-issue"
GH_DOC_ISSUES = "https://docs.github.com/rest/issues/issues#list-repository-issues"
GH_DOC_USER = "https://docs.github.com/rest/users/users#get-the-authenticated-user"
GH_DOC_TOKEN = "https://docs.github.com/rest/apps/oauth-applications#delete-an-app-token"
GH_UA_TEXT = ("Request forbidden by administrative rules. Please make sure your request has a "
              "User-Agent header (https://docs.github.com/en/rest/overview/resources-in-the-rest-"
              "api#user-agent-required). Check https://developer.github.com for other possible "
              "causes.\n")
GOOGLE_MISSING_AUTH = ("Request is missing required authentication credential. Expected OAuth 2 "
                       "access token, login cookie or other valid authentication credential. See "
                       "https://developers.google.com/identity/sign-in/web/devconsole-project.")
GOOGLE_BAD_AUTH = ("Request had invalid authentication credentials. Expected OAuth 2 access "
                   "token, login cookie or other valid authentication credential. See "
                   "https://developers.google.com/identity/sign-in/web/devconsole-project.")
HUBSPOT_NO_AUTH = ("Authentication credentials not found. This API supports OAuth 2.0 "
                   "authentication and you can find more details at "
                   "https://developers.hubspot.com/docs/methods/auth/oauth-overview")

# The OAuth endpoints of each provider inside the mock (see the module docstring).
OAUTH = {
    "slack": {"authorize": ["/slack/oauth/v2/authorize"],
              "token": ["/slack/api/oauth.v2.access"]},
    "github": {"authorize": ["/github/login/oauth/authorize"],
               "token": ["/github/login/oauth/access_token"]},
    "google": {"authorize": ["/google/o/oauth2/v2/auth"], "token": ["/google/token"]},
    "microsoft": {"authorize": [re.compile(r"^/microsoft/[^/]+/oauth2/v2\.0/authorize$")],
                  "token": [re.compile(r"^/microsoft/[^/]+/oauth2/v2\.0/token$")]},
    "hubspot": {"authorize": ["/hubspot/oauth/authorize"],
                "token": ["/hubspot/oauth/v1/token", "/hubspot/oauth/2026-03/token"]},
}
PREFIX_PROVIDER = (("/slack", "slack"), ("/github", "github"), ("/google", "google"),
                   ("/graph", "graph"), ("/microsoft", "microsoft"), ("/hubspot", "hubspot"))


# ---------------------------------------------------------------- signature helpers

def slack_signature_headers(secret, body, timestamp=None):
    """X-Slack-Request-Timestamp and X-Slack-Signature (v0=hex HMAC-SHA256 of
    "v0:{ts}:{body}") for a raw body (bytes or str)."""
    if isinstance(body, str):
        body = body.encode()
    ts = str(int(time.time()) if timestamp is None else int(timestamp))
    mac = hmac.new(secret.encode(), b"v0:" + ts.encode() + b":" + body, hashlib.sha256)
    return {"X-Slack-Request-Timestamp": ts, "X-Slack-Signature": "v0=" + mac.hexdigest()}


def github_signature_headers(secret, body, event="issues", delivery="00000000-0000-0000-0000"
                             "-000000000001"):
    """X-Hub-Signature-256 (sha256=hex HMAC-SHA256 of the raw body), X-GitHub-Event and
    X-GitHub-Delivery."""
    if isinstance(body, str):
        body = body.encode()
    mac = hmac.new(secret.encode(), body, hashlib.sha256)
    return {"X-Hub-Signature-256": "sha256=" + mac.hexdigest(), "X-GitHub-Event": event,
            "X-GitHub-Delivery": delivery, "User-Agent": "GitHub-Hookshot/mock"}


def hubspot_v3_signature_headers(secret, method, uri, body, timestamp_ms=None):
    """X-HubSpot-Signature-v3 (base64 HMAC-SHA256 of method + uri + body + timestamp, keyed by
    the app's client secret) and X-HubSpot-Request-Timestamp (milliseconds)."""
    if isinstance(body, bytes):
        body = body.decode()
    ts = str(int(time.time() * 1000) if timestamp_ms is None else int(timestamp_ms))
    mac = hmac.new(secret.encode(), (method + uri + body + ts).encode(), hashlib.sha256)
    return {"X-HubSpot-Signature-v3": base64.b64encode(mac.digest()).decode(),
            "X-HubSpot-Request-Timestamp": ts}


def pkce_s256(verifier):
    """The S256 code_challenge of a code_verifier."""
    d = hashlib.sha256(verifier.encode()).digest()
    return base64.urlsafe_b64encode(d).decode().rstrip("=")


# ---------------------------------------------------------------- small helpers

def _uuid(n):
    return "00000000-0000-4000-8000-%012d" % n


def _now_iso():
    return time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime())


def _http_date():
    return time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime())


_TZ_RE = re.compile(r"(Z|[+-]\d\d:?\d\d)$")
_DT_RE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d(:\d\d(\.\d+)?)?(Z|[+-]\d\d:?\d\d)?$")
_EMAIL_RE = re.compile(r"^[^@\s;,]+@[^@\s;,]+\.[^@\s;,]+$")


def _dt_key(s):
    """A sortable key of an RFC 3339 dateTime (seconds since epoch, offset applied)."""
    m = re.match(r"^(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d)(?::(\d\d)(?:\.\d+)?)?(.*)$", s)
    if not m:
        return None
    y, mo, d, h, mi, sec, tz = m.groups()
    t = calendar.timegm((int(y), int(mo), int(d), int(h), int(mi), int(sec or 0), 0, 0, 0))
    tz = tz or "Z"
    if tz != "Z":
        sign = 1 if tz[0] == "+" else -1
        hh, mm = int(tz[1:3]), int(tz[-2:])
        t -= sign * (hh * 3600 + mm * 60)
    return t


class Req:
    """One parsed request."""

    def __init__(self, method, raw_path, headers, raw):
        self.method = method
        u = urllib.parse.urlsplit(raw_path)
        self.path = u.path
        self.query = {k: v[-1] for k, v in urllib.parse.parse_qs(u.query,
                                                                 keep_blank_values=True).items()}
        self.headers = headers  # email.message.Message: case-insensitive get()
        self.raw = raw
        self.content_type = (headers.get("Content-Type") or "").strip()
        self.ctype = self.content_type.split(";")[0].strip().lower()
        self.json = None
        self.json_error = None
        self.form = None
        if self.ctype == "application/x-www-form-urlencoded":
            try:
                self.form = {k: v[-1] for k, v in urllib.parse.parse_qs(
                    raw.decode("utf-8"), keep_blank_values=True).items()}
            except UnicodeDecodeError:
                self.form = {}
        elif raw and (self.ctype.endswith("json") or self.ctype == ""):
            try:
                self.json = json.loads(raw.decode("utf-8"))
            except (ValueError, UnicodeDecodeError) as e:
                self.json_error = str(e)

    def header(self, name):
        return self.headers.get(name)

    def bearer(self):
        """('missing'|'malformed'|'ok', token)"""
        a = self.headers.get("Authorization")
        if a is None or not a.strip():
            return "missing", None
        parts = a.strip().split(None, 1)
        if len(parts) != 2 or parts[0].lower() != "bearer" or not parts[1].strip():
            return "malformed", a
        return "ok", parts[1].strip()

    def basic(self):
        a = self.headers.get("Authorization") or ""
        parts = a.strip().split(None, 1)
        if len(parts) != 2 or parts[0].lower() != "basic":
            return None
        try:
            user, _, pw = base64.b64decode(parts[1]).decode().partition(":")
        except (ValueError, UnicodeDecodeError):
            return None
        return urllib.parse.unquote_plus(user), urllib.parse.unquote_plus(pw)

    def recorded_body(self):
        if self.json is not None:
            return self.json
        if self.form is not None:
            return self.form
        if self.raw:
            return self.raw.decode("utf-8", "replace")
        return None


class Resp:
    def __init__(self, status, body=None, headers=None, ctype="application/json; charset=utf-8"):
        self.status = status
        self.headers = dict(headers or {})
        if body is None:
            self.data = b""
        elif isinstance(body, bytes):
            self.data = body
        elif isinstance(body, str):
            self.data = body.encode()
        else:
            self.data = json.dumps(body).encode()
        if body is not None:
            self.headers.setdefault("Content-Type", ctype)


def _json(status, obj, headers=None):
    return Resp(status, obj, headers)


# ---------------------------------------------------------------- the mock

class ProviderMock:
    """One mock server on 127.0.0.1 in a background thread."""

    def __init__(self, host="127.0.0.1", port=0, verbose=False):
        self.host = host
        self.want_port = port
        self.verbose = verbose
        self.lock = threading.Condition()
        self.stopping = False
        self.httpd = None
        self.thread = None
        self.reset()

    # -- state --

    def reset(self):
        with self.lock:
            self._requests = []
            self.counters = {}
            self.valid = set(DEFAULT_TOKENS)
            self.expired = set()
            self.refresh = {t: "any" for t in DEFAULT_REFRESH}
            self.client = DEFAULT_CLIENT
            self.options = {"slack_token_rotation": False, "github_expiring_tokens": False,
                            "expires_in": 0}
            self.fails = {}
            self.codes = {}
            self.slack_messages = {}
            self.github_numbers = {r: len(v) for r, v in GITHUB_SEED_ISSUES.items()}
            self.github_issues = {r: [_github_seed(r, *i) for i in v]
                                  for r, v in GITHUB_SEED_ISSUES.items()}
            self.google_events = {"mock.user@example.com": [dict(e) for e in
                                                            GOOGLE_SEED_EVENTS]}
            self.lock.notify_all()

    def next(self, kind):
        with self.lock:
            n = self.counters.get(kind, 0) + 1
            self.counters[kind] = n
            return n

    def record(self, req, provider):
        hdrs = {k.lower(): v for k, v in req.headers.items()}
        rec = {"seq": 0, "method": req.method, "path": req.path, "query": req.query,
               "headers": hdrs, "body": req.recorded_body(),
               "raw": req.raw.decode("utf-8", "replace"), "provider": provider,
               "status": None, "time": time.time()}
        with self.lock:
            self._requests.append(rec)
            rec["seq"] = len(self._requests)
        return rec

    def requests(self, prefix=None):
        with self.lock:
            out = [r for r in self._requests if not prefix or r["path"].startswith(prefix)]
            return json.loads(json.dumps(out))

    def token_state(self, token):
        with self.lock:
            if token in self.valid:
                return "valid"
            if token in self.expired:
                return "expired"
            return "invalid"

    def set_tokens(self, valid=None, expired=None, refresh=None):
        with self.lock:
            if valid is not None:
                self.valid = set(valid)
            if expired is not None:
                self.expired = set(expired)
            if refresh is not None:
                self.refresh = {t: "any" for t in refresh}
            return self.tokens()

    def tokens(self):
        with self.lock:
            return {"valid": sorted(self.valid), "expired": sorted(self.expired),
                    "refresh": sorted(self.refresh)}

    def fail(self, path_prefix, mode="500", count=None):
        with self.lock:
            if mode in (None, "off", ""):
                self.fails.pop(path_prefix, None)
            else:
                self.fails[path_prefix] = {"mode": str(mode), "count": count}
            self.lock.notify_all()

    def _failure_for(self, path):
        with self.lock:
            best = None
            for p, rule in self.fails.items():
                if path.startswith(p) and (best is None or len(p) > len(best)):
                    best = p
            if best is None:
                return None, None
            rule = self.fails[best]
            mode = rule["mode"]
            if rule["count"] is not None:
                rule["count"] -= 1
                if rule["count"] <= 0:
                    del self.fails[best]
            return best, mode

    def wait_hang(self, prefix):
        """Block until the hang rule for 'prefix' is gone or the mock stops."""
        with self.lock:
            while not self.stopping:
                rule = self.fails.get(prefix)
                if rule is None or rule["mode"] != "hang":
                    return
                self.lock.wait(0.5)

    def state(self):
        with self.lock:
            return {"tokens": self.tokens(), "fails": dict(self.fails),
                    "options": dict(self.options),
                    "client": {"client_id": self.client[0], "client_secret": self.client[1]},
                    "codes": {c: {k: v for k, v in d.items()} for c, d in self.codes.items()},
                    "counters": dict(self.counters)}

    # -- lifecycle --

    def start(self):
        self.stopping = False
        self.httpd = _Server((self.host, self.want_port), _Handler)
        self.httpd.mock = self
        self.thread = threading.Thread(target=self.httpd.serve_forever, name="provider-mock",
                                       daemon=True)
        self.thread.start()
        return self

    @property
    def port(self):
        return self.httpd.server_address[1]

    @property
    def base_url(self):
        return "http://%s:%d" % (self.host, self.port)

    def url(self, prefix):
        return self.base_url + "/" + prefix.strip("/")

    def env_for(self, client_id=None, client_secret=None):
        """WORKFORCE_OAUTH_* settings pointing every provider at this mock."""
        b = self.base_url
        cid, sec = client_id or self.client[0], client_secret or self.client[1]
        urls = {
            "SLACK": (b + "/slack/oauth/v2/authorize", b + "/slack/api/oauth.v2.access",
                      b + "/slack/api/auth.revoke", b + "/slack/api"),
            "GOOGLE_CALENDAR": (b + "/google/o/oauth2/v2/auth", b + "/google/token",
                                b + "/google/revoke", b + "/google"),
            "OUTLOOK": (b + "/microsoft/common/oauth2/v2.0/authorize",
                        b + "/microsoft/common/oauth2/v2.0/token", "", b + "/graph"),
            "GITHUB": (b + "/github/login/oauth/authorize",
                       b + "/github/login/oauth/access_token", b + "/github/applications",
                       b + "/github"),
            "HUBSPOT": (b + "/hubspot/oauth/authorize", b + "/hubspot/oauth/v1/token",
                        b + "/hubspot/oauth/v1/refresh-tokens", b + "/hubspot"),
        }
        env = {}
        for p, (a, t, r, api) in urls.items():
            pre = "WORKFORCE_OAUTH_%s_" % p
            env.update({pre + "CLIENT_ID": cid, pre + "CLIENT_SECRET": sec, pre + "AUTH_URL": a,
                        pre + "TOKEN_URL": t, pre + "API_URL": api})
            if r:
                env[pre + "REVOKE_URL"] = r
        return env

    def stop(self):
        with self.lock:
            self.stopping = True
            self.lock.notify_all()
        if self.httpd is not None:
            self.httpd.shutdown()
            self.httpd.server_close()
            self.httpd = None


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True


# ---------------------------------------------------------------- HTTP plumbing

class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "provider-mock/1.0"

    def log_message(self, fmt, *args):
        if self.server.mock.verbose:
            sys.stderr.write("provider-mock: " + (fmt % args) + "\n")

    def _read_body(self):
        te = (self.headers.get("Transfer-Encoding") or "").lower()
        if "chunked" in te:
            data = b""
            while True:
                line = self.rfile.readline()
                size = int(line.split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    break
                data += self.rfile.read(size)
                self.rfile.readline()
            return data
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n > 0 else b""

    def _send(self, resp):
        self.send_response(resp.status)
        for k, v in resp.headers.items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(resp.data)))
        self.end_headers()
        if self.command != "HEAD" and resp.data:
            self.wfile.write(resp.data)
        self.wfile.flush()

    def do_GET(self):
        self._dispatch("GET")

    def do_POST(self):
        self._dispatch("POST")

    def do_DELETE(self):
        self._dispatch("DELETE")

    def do_PUT(self):
        self._dispatch("PUT")

    def do_PATCH(self):
        self._dispatch("PATCH")

    def _dispatch(self, method):
        mock = self.server.mock
        raw = self._read_body()
        req = Req(method, self.path, self.headers, raw)
        if req.path.startswith("/__") or req.path in ("/health", "/healthz"):
            self._send(_control(mock, req))
            return
        provider = next((name for pre, name in PREFIX_PROVIDER
                         if req.path == pre or req.path.startswith(pre + "/")), None)
        rec = mock.record(req, provider)
        prefix, mode = mock._failure_for(req.path)
        if mode is not None:
            resp = _failure(mock, prefix, mode)
            if resp is None:  # hang: drop the connection without an answer
                rec["status"] = "hang"
                self.close_connection = True
                return
        else:
            try:
                resp = _route(mock, req, provider)
            except Exception as e:  # a mock bug must show, not hang the client
                resp = Resp(500, {"mock_internal_error": repr(e)})
        with mock.lock:
            rec["status"] = resp.status
        self._send(resp)


def _failure(mock, prefix, mode):
    if mode == "hang":
        mock.wait_hang(prefix)
        return None
    if mode.startswith("html"):
        status = int(mode.split(":", 1)[1]) if ":" in mode else 200
        page = ("<!DOCTYPE html><html><head><title>Service Unavailable</title></head><body>"
                "<h1>Something went wrong</h1><p>provider-mock injected HTML</p></body></html>")
        return Resp(status, page, ctype="text/html; charset=utf-8")
    try:
        status = int(mode)
    except ValueError:
        status = 500
    hdrs = {"Retry-After": "1"} if status in (429, 503) else {}
    return Resp(status, {"error": "mock_injected_failure", "status": status,
                         "message": "provider-mock injected HTTP %d" % status}, hdrs)


def _control(mock, req):
    p, m = req.path, req.method
    body = req.json if isinstance(req.json, dict) else {}
    if p in ("/health", "/healthz"):
        return _json(200, {"status": "ok"})
    if p == "/__requests" and m == "GET":
        return _json(200, mock.requests(req.query.get("prefix")))
    if p in ("/__control/reset", "/__reset") and m == "POST":
        mock.reset()
        return _json(200, {"reset": True})
    if p == "/__control/tokens":
        if m == "POST":
            lists = {}
            for k in ("valid", "expired", "refresh"):
                if k in body:
                    v = body[k]
                    if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
                        return _json(400, {"error": "%s must be a list of strings" % k})
                    lists[k] = v
            return _json(200, mock.set_tokens(**lists))
        return _json(200, mock.tokens())
    if p == "/__control/fail" and m == "POST":
        prefix, mode = body.get("path_prefix"), body.get("mode", "500")
        if not isinstance(prefix, str) or not prefix.startswith("/"):
            return _json(400, {"error": "path_prefix must start with /"})
        mode = str(mode)
        if not re.match(r"^(off|hang|html(:\d{3})?|\d{3})$", mode):
            return _json(400, {"error": "mode must be 500|html|hang|off|<status>|html:<status>"})
        count = body.get("count")
        if count is not None and (not isinstance(count, int) or count < 1):
            return _json(400, {"error": "count must be a positive integer"})
        mock.fail(prefix, mode, count)
        return _json(200, {"fails": mock.state()["fails"]})
    if p == "/__control/client" and m == "POST":
        cid, sec = body.get("client_id"), body.get("client_secret")
        if not isinstance(cid, str) or not isinstance(sec, str):
            return _json(400, {"error": "client_id and client_secret (strings) required"})
        with mock.lock:
            mock.client = (cid, sec)
        return _json(200, {"client_id": cid})
    if p == "/__control/options" and m == "POST":
        with mock.lock:
            for k in ("slack_token_rotation", "github_expiring_tokens"):
                if k in body:
                    mock.options[k] = bool(body[k])
            if "expires_in" in body:  # seconds in every token answer; 0: each provider's own
                mock.options["expires_in"] = int(body["expires_in"] or 0)
            return _json(200, dict(mock.options))
    if p == "/__control/state" and m == "GET":
        return _json(200, mock.state())
    return _json(404, {"error": "unknown control endpoint %s %s" % (m, p)})


# ---------------------------------------------------------------- routing

def _route(mock, req, provider):
    p, m = req.path, req.method
    for prov, eps in OAUTH.items():
        for kind in ("authorize", "token"):
            for pat in eps[kind]:
                hit = (pat == p) if isinstance(pat, str) else bool(pat.match(p))
                if hit:
                    if kind == "authorize":
                        if m != "GET":
                            return Resp(405, "Method Not Allowed\n", {"Allow": "GET"},
                                        ctype="text/plain")
                        return oauth_authorize(mock, req, prov)
                    if m != "POST":
                        return Resp(405, "Method Not Allowed\n", {"Allow": "POST"},
                                    ctype="text/plain")
                    return oauth_token(mock, req, prov)
    if provider == "slack":
        return slack_route(mock, req)
    if provider == "github":
        return github_route(mock, req)
    if provider == "google":
        return google_route(mock, req)
    if provider == "graph":
        return graph_route(mock, req)
    if provider == "hubspot":
        return hubspot_route(mock, req)
    return _json(404, {"error": "not found", "path": p})


# ---------------------------------------------------------------- OAuth

def _redirect_with(uri, params):
    u = urllib.parse.urlsplit(uri)
    q = urllib.parse.parse_qsl(u.query, keep_blank_values=True) + list(params.items())
    return urllib.parse.urlunsplit((u.scheme, u.netloc, u.path, urllib.parse.urlencode(q),
                                    u.fragment))


def _html_error(status, text):
    return Resp(status, "<!DOCTYPE html><html><body><h1>Error</h1><p>%s</p></body></html>"
                % text, ctype="text/html; charset=utf-8")


def oauth_authorize(mock, req, prov):
    q = req.query
    if q.get("client_id") != mock.client[0]:
        return _html_error(400, "invalid_client: unknown client_id %r" % q.get("client_id"))
    redirect = q.get("redirect_uri")
    if not redirect:
        return _html_error(400, "invalid_request: redirect_uri is required by this mock")
    if prov in ("google", "microsoft") and q.get("response_type") != "code":
        return _html_error(400, "invalid_request: response_type=code required")
    if prov == "slack" and not (q.get("scope") or q.get("user_scope")):
        return _html_error(400, "invalid_scope: scope or user_scope required")
    if prov in ("google", "microsoft", "hubspot") and not q.get("scope"):
        return _html_error(400, "invalid_request: Missing required parameter: scope")
    challenge, method = q.get("code_challenge"), q.get("code_challenge_method")
    if challenge is not None:
        method = method or "plain"
        if method not in ("S256", "plain") or (prov == "github" and method != "S256"):
            return _html_error(400, "invalid_request: code_challenge_method %r" % method)
    out = {}
    if q.get("mock_error"):
        out["error"] = q["mock_error"]
        out["error_description"] = "The user denied the request (provider-mock)"
    else:
        code = "mock-code-%d" % mock.next("code")
        with mock.lock:
            mock.codes[code] = {"provider": prov, "client_id": q["client_id"],
                                "redirect_uri": redirect, "challenge": challenge,
                                "method": method, "scope": q.get("scope", ""),
                                "user_scope": q.get("user_scope", ""),
                                "access_type": q.get("access_type", ""), "used": False}
        out["code"] = code
    if "state" in q:
        out["state"] = q["state"]
    return Resp(302, None, {"Location": _redirect_with(redirect, out)})


def _oauth_error(prov, kind, detail=""):
    """The provider's token-endpoint error for 'kind' (client|grant|pkce|redirect|
    refresh|grant_type|request)."""
    if prov == "slack":
        err = {"client": "invalid_client_id", "secret": "bad_client_secret",
               "grant": "invalid_code", "pkce": "invalid_code",
               "redirect": "bad_redirect_uri", "refresh": "invalid_refresh_token",
               "grant_type": "invalid_grant_type", "request": "invalid_arguments"}.get(kind,
                                                                                      kind)
        return _json(200, {"ok": False, "error": err})
    if prov == "github":
        e = {"client": ("incorrect_client_credentials",
                        "The client_id and/or client_secret passed are incorrect."),
             "secret": ("incorrect_client_credentials",
                        "The client_id and/or client_secret passed are incorrect."),
             "grant": ("bad_verification_code", "The code passed is incorrect or expired."),
             "pkce": ("bad_verification_code", "The code passed is incorrect or expired."),
             "redirect": ("redirect_uri_mismatch",
                          "The redirect_uri MUST match the registered callback URL for this "
                          "application."),
             "refresh": ("bad_refresh_token", "The refresh token passed is incorrect or "
                         "expired."),
             "grant_type": ("unsupported_grant_type", "The grant type is not supported."),
             "request": ("bad_verification_code", "The code passed is incorrect or expired.")
             }[kind]
        return ("github-out", {"error": e[0], "error_description": e[1],
                                 "error_uri": "https://docs.github.com/apps/managing-oauth-apps/"
                                              "troubleshooting-oauth-app-access-token-request-"
                                              "errors/#" + e[0].replace("_", "-")})
    if prov == "google":
        e = {"client": (401, "invalid_client", "The OAuth client was not found."),
             "secret": (401, "invalid_client", "Unauthorized"),
             "grant": (400, "invalid_grant", "Malformed auth code."),
             "pkce": (400, "invalid_grant", detail or "Invalid code verifier."),
             "redirect": (400, "redirect_uri_mismatch", "Bad Request"),
             "refresh": (400, "invalid_grant", "Token has been expired or revoked."),
             "grant_type": (400, "unsupported_grant_type", "Invalid grant_type: " + detail),
             "request": (400, "invalid_request", detail or "Bad Request")}[kind]
        return _json(e[0], {"error": e[1], "error_description": e[2]})
    if prov == "microsoft":
        e = {"client": (400, "unauthorized_client", 700016,
                        "Application with identifier was not found in the directory."),
             "secret": (401, "invalid_client", 7000215, "Invalid client secret provided."),
             "grant": (400, "invalid_grant", 70000, "The provided value for the 'code' "
                       "parameter is not valid."),
             "pkce": (400, "invalid_grant", 501481, "The Code_Verifier does not match the "
                      "code_challenge supplied in the authorization request."),
             "redirect": (400, "invalid_grant", 70000, "The provided value for the "
                          "'redirect_uri' is not valid."),
             "refresh": (400, "invalid_grant", 70000, "The provided value for the "
                         "'refresh_token' is not valid."),
             "grant_type": (400, "unsupported_grant_type", 70003, "The app requested an "
                            "unsupported grant type."),
             "request": (400, "invalid_request", 900144, detail or "The request body must "
                         "contain the following parameter: 'grant_type'.")}[kind]
        return _json(e[0], {"error": e[1], "error_description": "AADSTS%d: %s Trace ID: %s "
                            "Correlation ID: %s Timestamp: %s" % (e[2], e[3], _uuid(0),
                                                                 _uuid(0), _now_iso()),
                            "error_codes": [e[2]], "timestamp": _now_iso(),
                            "trace_id": _uuid(0), "correlation_id": _uuid(0)})
    # hubspot
    e = {"client": ("BAD_CLIENT_ID", "invalid_client", "missing or unknown client id"),
         "secret": ("BAD_CLIENT_SECRET", "invalid_client", "missing or invalid client secret"),
         "grant": ("BAD_AUTH_CODE", "invalid_grant", "missing or unknown auth code"),
         "pkce": ("BAD_AUTH_CODE", "invalid_grant", "code_verifier does not match"),
         "redirect": ("BAD_REDIRECT_URI", "invalid_grant", "redirect_uri does not match"),
         "refresh": ("BAD_REFRESH_TOKEN", "invalid_grant",
                     "refresh token is invalid, expired or revoked"),
         "grant_type": ("BAD_GRANT_TYPE", "unsupported_grant_type", "unknown grant type"),
         "request": ("BAD_REQUEST", "invalid_request", detail or "bad request")}[kind]
    return _json(400, {"status": e[0], "message": e[2], "correlationId": _uuid(0),
                       "error": e[1], "error_description": e[2]})


def _github_token_out(req, obj):
    """GitHub answers form-encoded unless the request Accepts JSON (errors too, HTTP 200)."""
    accept = (req.header("Accept") or "").lower()
    if "json" in accept:
        return _json(200, obj)
    return Resp(200, urllib.parse.urlencode(obj),
                ctype="application/x-www-form-urlencoded; charset=utf-8")


def oauth_token(mock, req, prov):
    resp = _oauth_token(mock, req, prov)
    if isinstance(resp, tuple) and resp[0] == "github-out":
        return _github_token_out(req, resp[1])
    return resp


def _oauth_token(mock, req, prov):
    params = req.form
    if params is None and prov in ("slack", "github") and isinstance(req.json, dict):
        params = {k: str(v) for k, v in req.json.items()}
    if params is None:
        return _oauth_error(prov, "request", "Content-Type must be "
                            "application/x-www-form-urlencoded")
    basic = req.basic()
    cid = params.get("client_id") or (basic[0] if basic else None)
    secret = params.get("client_secret") or (basic[1] if basic else None)
    if cid != mock.client[0]:
        return _oauth_error(prov, "client")
    if secret != mock.client[1]:
        return _oauth_error(prov, "secret")
    grant = params.get("grant_type") or ("authorization_code" if prov in ("slack", "github")
                                         else "")
    if not grant:
        return _oauth_error(prov, "request", "grant_type is required")
    if grant == "authorization_code":
        code = params.get("code")
        if not code:
            return _oauth_error(prov, "grant")
        if code == TEST_CODE:
            info = {"provider": prov, "scope": "", "user_scope": "", "access_type": "offline",
                    "challenge": None}
        else:
            with mock.lock:
                info = mock.codes.get(code)
                if info is None or info["used"] or info["provider"] != prov:
                    return _oauth_error(prov, "grant")
                if info["redirect_uri"] and params.get("redirect_uri", info["redirect_uri"]) \
                        != info["redirect_uri"]:
                    return _oauth_error(prov, "redirect")
                if prov in ("google", "microsoft", "hubspot") and \
                        params.get("redirect_uri") != info["redirect_uri"]:
                    return _oauth_error(prov, "redirect")
                if info["challenge"] is not None:
                    v = params.get("code_verifier")
                    if not v:
                        return _oauth_error(prov, "pkce", "Missing code verifier.")
                    want = pkce_s256(v) if info["method"] == "S256" else v
                    if not hmac.compare_digest(want, info["challenge"]):
                        return _oauth_error(prov, "pkce", "Invalid code verifier.")
                info["used"] = True
        return _issue(mock, prov, info, refresh=None, params=params)
    if grant == "refresh_token":
        rt = params.get("refresh_token")
        with mock.lock:
            owner = mock.refresh.get(rt) if rt else None
        if owner is None or owner not in ("any", prov):
            return _oauth_error(prov, "refresh")
        if prov == "github" and not (mock.options["github_expiring_tokens"] or owner == "any"):
            return _oauth_error(prov, "refresh")
        return _issue(mock, prov, {"scope": params.get("scope", ""), "access_type": "",
                                   "user_scope": ""}, refresh=rt, params=params)
    return _oauth_error(prov, "grant_type", grant)


def _fake_jwt(claims):
    enc = lambda o: base64.urlsafe_b64encode(json.dumps(o).encode()).decode().rstrip("=")
    return enc({"alg": "none", "typ": "JWT"}) + "." + enc(claims) + ".mock-signature"


def _issue(mock, prov, info, refresh, params):
    """Mint tokens in the provider's own token-response format."""
    n = mock.next("token_" + prov)
    rn = mock.next("refresh_" + prov)

    def accept(access, new_refresh=None, drop_old=False):
        with mock.lock:
            mock.valid.add(access)
            if new_refresh:
                mock.refresh[new_refresh] = prov
            if drop_old and refresh and refresh != new_refresh:
                mock.refresh.pop(refresh, None)

    if prov == "slack":
        access = "xoxb-mock-%d" % n
        scope = info.get("scope") or "chat:write,channels:read"
        out = {"ok": True, "app_id": "A0MOCKAPP", "authed_user": {"id": "U0MOCKUSR"},
               "scope": scope, "token_type": "bot", "access_token": access,
               "bot_user_id": "U0MOCKBOT", "team": dict(SLACK_TEAM), "enterprise": None,
               "is_enterprise_install": False}
        if mock.options["slack_token_rotation"] or refresh:
            new_rt = "xoxe-1-mock-%d" % rn
            out["refresh_token"] = new_rt
            out["expires_in"] = _exp(mock, 43200)
            accept(access, new_rt, drop_old=True)
        else:
            accept(access)
        return _json(200, out)
    if prov == "github":
        access = "gho_mock%04d" % n
        scope = ",".join((info.get("scope") or "repo").split())
        out = {"access_token": access, "token_type": "bearer", "scope": scope}
        if mock.options["github_expiring_tokens"] or refresh:
            new_rt = "ghr_mock%04d" % rn
            out = {"access_token": "ghu_mock%04d" % n, "expires_in": _exp(mock, 28800),
                   "refresh_token": new_rt, "refresh_token_expires_in": 15897600,
                   "scope": "", "token_type": "bearer"}
            accept(out["access_token"], new_rt, drop_old=True)
        else:
            accept(access)
        return ("github-out", out)
    if prov == "google":
        access = "ya29.mock-%d" % n
        scope = info.get("scope") or "https://www.googleapis.com/auth/calendar.events"
        out = {"access_token": access, "expires_in": _exp(mock, 3599), "scope": scope,
               "token_type": "Bearer"}
        if refresh is None and info.get("access_type") == "offline":
            out["refresh_token"] = "1//mock-refresh-%d" % rn
            accept(access, out["refresh_token"])
        else:
            accept(access)
        if "openid" in scope.split():
            out["id_token"] = _fake_jwt({"iss": "https://accounts.google.com",
                                         "aud": mock.client[0], "sub": GOOGLE_USER["sub"],
                                         "email": GOOGLE_USER["email"], "email_verified": True,
                                         "iat": int(time.time()),
                                         "exp": int(time.time()) + 3599})
        return _json(200, out)
    if prov == "microsoft":
        access = "mock-ms-access-%d" % n
        requested = (params.get("scope") or info.get("scope")
                     or "offline_access User.Read Mail.Send").split()
        granted = [s for s in requested if s != "offline_access"]
        out = {"token_type": "Bearer", "scope": " ".join(granted), "expires_in": _exp(mock, 3599),
               "ext_expires_in": 3599, "access_token": access}
        if "offline_access" in requested or refresh:
            out["refresh_token"] = "mock-ms-refresh-%d" % rn
            accept(access, out["refresh_token"])  # the old one stays valid, as at Microsoft
        else:
            accept(access)
        if "openid" in requested:
            out["id_token"] = _fake_jwt({"aud": mock.client[0], "preferred_username":
                                         GRAPH_ME["userPrincipalName"], "name": "Mock User"})
        return _json(200, out)
    # hubspot: the refresh token does not change on refresh
    access = "mock-hubspot-access-%d" % n
    rt = refresh or "na1-mock-refresh-%d" % rn
    scopes = (info.get("scope") or "oauth crm.objects.contacts.read crm.objects.contacts.write"
              ).split()
    accept(access, rt)
    return _json(200, {"token_type": "bearer", "refresh_token": rt, "access_token": access,
                       "expires_in": _exp(mock, 1800), "hub_id": HUBSPOT_HUB["hub_id"], "scopes": scopes})


# ---------------------------------------------------------------- Slack

def _exp(mock, default):
    """expires_in of a token answer: the provider's own, unless a test set one."""
    return mock.options.get("expires_in") or default


def _slack_err(error, **extra):
    out = {"ok": False, "error": error}
    out.update(extra)
    return _json(200, out)


def _slack_auth(mock, req, args):
    """None when the token is good, else the Slack error answer."""
    kind, tok = req.bearer()
    if kind == "missing" and req.form is not None and args.get("token"):
        kind, tok = "ok", args.get("token")
    if kind == "missing":
        return _slack_err("not_authed")
    if kind == "malformed":
        return _slack_err("invalid_auth")
    st = mock.token_state(tok)
    if st == "expired":
        return _slack_err("token_expired")
    if st != "valid":
        return _slack_err("invalid_auth")
    return None


def _slack_args(req):
    """(args dict, error answer or None, warnings)"""
    warnings = []
    if req.method == "GET":
        return dict(req.query), None, warnings
    if req.ctype == "application/json":
        if req.json_error is not None or not isinstance(req.json, dict):
            return {}, _slack_err("invalid_json"), warnings
        if "charset" not in req.content_type.lower():
            warnings.append("missing_charset")
        args = dict(req.query)
        args.update(req.json)
        args.pop("token", None)  # JSON bodies cannot carry the token
        return args, None, warnings
    if req.ctype == "application/x-www-form-urlencoded":
        args = dict(req.query)
        args.update(req.form or {})
        return args, None, warnings
    if not req.raw:
        return dict(req.query), None, warnings
    return {}, _slack_err("invalid_post_type" if req.ctype else "missing_post_type"), warnings


def _with_warnings(resp, warnings):
    if warnings:
        obj = json.loads(resp.data)
        obj["warning"] = ",".join(warnings)
        obj["response_metadata"] = {"warnings": warnings}
        return _json(resp.status, obj)
    return resp


def _slack_channel(ref):
    if not isinstance(ref, str) or not ref:
        return None
    if ref in SLACK_CHANNELS:
        return ref
    name = ref[1:] if ref.startswith("#") else ref
    for cid, c in SLACK_CHANNELS.items():
        if c["name"] == name:
            return cid
    return None


def slack_route(mock, req):
    m = re.match(r"^/slack/api/([A-Za-z0-9_.]+)$", req.path)
    if not m:
        return Resp(404, "<html><body>404 Not Found</body></html>", ctype="text/html")
    method = m.group(1)
    known = {"chat.postMessage", "chat.getPermalink", "auth.test", "auth.revoke",
             "conversations.list"}
    if method not in known:
        return _slack_err("unknown_method", req_method=method)
    args, err, warnings = _slack_args(req)
    if err:
        return err
    err = _slack_auth(mock, req, args)
    if err:
        return _with_warnings(err, warnings)
    if method == "chat.postMessage":
        if req.method != "POST":
            return _slack_err("invalid_post_type")
        resp = _slack_post(mock, args)
    elif method == "chat.getPermalink":
        resp = _slack_permalink(mock, args)
    elif method == "conversations.list":
        resp = _slack_conversations(mock, args)
    elif method == "auth.test":
        resp = _json(200, {"ok": True, "url": "https://mock-workspace.slack.com/",
                           "team": SLACK_TEAM["name"], "user": "workforce-bot",
                           "team_id": SLACK_TEAM["id"], "user_id": "U0MOCKBOT",
                           "bot_id": "B0MOCKBOT", "is_enterprise_install": False})
    else:
        test = str(args.get("test", "")).lower() in ("1", "true")
        if not test:
            kind, tok = req.bearer()
            if kind != "ok":
                tok = args.get("token")
            with mock.lock:
                mock.valid.discard(tok)
        resp = _json(200, {"ok": True, "revoked": not test})
    return _with_warnings(resp, warnings)


def _slack_post(mock, args):
    ch = args.get("channel")
    if ch is None or ch == "":
        return _slack_err("channel_not_found")
    if not isinstance(ch, str):
        return _slack_err("invalid_arguments")
    text = args.get("text")
    if text is not None and not isinstance(text, str):
        return _slack_err("invalid_arguments")
    if not text and not args.get("blocks") and not args.get("attachments"):
        return _slack_err("no_text")
    if text and len(text) > 40000:
        return _slack_err("msg_too_long")
    cid = _slack_channel(ch)
    if cid is None:
        return _slack_err("channel_not_found")
    c = SLACK_CHANNELS[cid]
    if not c["member"]:
        return _slack_err("not_in_channel")
    if c["archived"]:
        return _slack_err("is_archived")
    ts = "1700000000.%06d" % mock.next("slack_ts")
    with mock.lock:
        mock.slack_messages.setdefault(cid, set()).add(ts)
    return _json(200, {"ok": True, "channel": cid, "ts": ts,
                       "message": {"user": "U0MOCKBOT", "type": "message", "ts": ts,
                                   "bot_id": "B0MOCKBOT", "app_id": "A0MOCKAPP",
                                   "text": text or "", "team": SLACK_TEAM["id"]}})


def _slack_conversation(cid):
    """A channel as conversations.list shows it (Slack's conversation object)."""
    c = SLACK_CHANNELS[cid]
    return {"id": cid, "name": c["name"], "is_channel": True, "is_group": False,
            "is_im": False, "is_mpim": False, "is_private": False, "created": c["created"],
            "is_archived": c["archived"], "is_general": cid == "C0MOCKGEN", "unlinked": 0,
            "name_normalized": c["name"], "is_shared": False, "is_org_shared": False,
            "is_pending_ext_shared": False, "pending_shared": [],
            "context_team_id": SLACK_TEAM["id"], "updated": c["created"] * 1000,
            "parent_conversation": None, "creator": "U0MOCKUSR", "is_ext_shared": False,
            "shared_team_ids": [SLACK_TEAM["id"]], "pending_connected_team_ids": [],
            "is_member": c["member"],
            "topic": {"value": c["topic"], "creator": "U0MOCKUSR" if c["topic"] else "",
                      "last_set": c["created"] if c["topic"] else 0},
            "purpose": {"value": "", "creator": "", "last_set": 0}, "previous_names": [],
            "num_members": 3 if c["member"] else 2}


def _slack_conversations(mock, args):
    """conversations.list: public channels only exist here; a page holds at most
    SLACK_PAGE_MAX of them; the cursor is base64 of "next:<index>"."""
    limit = args.get("limit", 100)
    try:
        limit = int(limit)
    except (TypeError, ValueError):
        return _slack_err("invalid_limit")
    if limit < 1 or limit > 1000:
        return _slack_err("invalid_limit")
    types = str(args.get("types") or "public_channel").split(",")
    if any(t.strip() not in ("public_channel", "private_channel", "mpim", "im") for t in types):
        return _slack_err("invalid_types")
    start = 0
    cursor = args.get("cursor")
    if cursor:
        try:
            kind, _, n = base64.b64decode(str(cursor), validate=True).decode().partition(":")
            start = int(n)
            if kind != "next" or start < 0:
                raise ValueError(cursor)
        except (ValueError, UnicodeDecodeError):
            return _slack_err("invalid_cursor")
    exclude = str(args.get("exclude_archived", "")).lower() in ("1", "true")
    ids = [cid for cid in sorted(SLACK_CHANNELS, key=lambda c: SLACK_CHANNELS[c]["created"])
           if "public_channel" in [t.strip() for t in types]
           and not (exclude and SLACK_CHANNELS[cid]["archived"])]
    page = ids[start:start + min(limit, SLACK_PAGE_MAX)]
    end = start + len(page)
    nxt = base64.b64encode(("next:%d" % end).encode()).decode() if end < len(ids) else ""
    return _json(200, {"ok": True, "channels": [_slack_conversation(c) for c in page],
                       "response_metadata": {"next_cursor": nxt}})


def _slack_permalink(mock, args):
    cid = _slack_channel(args.get("channel"))
    if cid is None:
        return _slack_err("channel_not_found")
    ts = args.get("message_ts")
    with mock.lock:
        found = ts in mock.slack_messages.get(cid, set())
    if not found:
        return _slack_err("message_not_found")
    return _json(200, {"ok": True, "channel": cid, "permalink":
                       "https://mock-workspace.slack.com/archives/%s/p%s"
                       % (cid, ts.replace(".", ""))})


# ---------------------------------------------------------------- GitHub

def _gh(status, message, doc, **extra):
    out = {"message": message, "documentation_url": doc, "status": str(status)}
    out.update(extra)
    return _json(status, out, {"X-GitHub-Media-Type": "github.v3; format=json",
                               "X-GitHub-Request-Id": "MOCK:0000:%d" % status})


def _github_common(mock, req, doc):
    """User-Agent, Accept, API version and the bearer token; None when all good."""
    if not (req.header("User-Agent") or "").strip():
        return Resp(403, GH_UA_TEXT, ctype="text/plain; charset=utf-8")
    accept = (req.header("Accept") or "").strip().lower()
    ok_accept = ("application/vnd.github+json", "application/vnd.github.v3+json",
                 "application/json", "*/*")
    if not any(a.strip().split(";")[0] in ok_accept for a in accept.split(",")):
        return _gh(415, "Unsupported 'Accept' header: %r. Must accept 'application/json' "
                   "(provider-mock requires application/vnd.github+json, as GitHub's docs "
                   "recommend)" % (req.header("Accept"),), doc)
    ver = req.header("X-GitHub-Api-Version")
    if ver is not None and ver != "2022-11-28":
        return _gh(400, "API version '%s' is not supported." % ver, doc)
    a = (req.header("Authorization") or "").strip()
    parts = a.split(None, 1)
    if not a:
        return _gh(401, "Requires authentication", doc)
    if len(parts) != 2 or parts[0].lower() not in ("bearer", "token"):
        return _gh(401, "Bad credentials", "https://docs.github.com/rest")
    st = mock.token_state(parts[1].strip())
    if st != "valid":
        return _gh(401, "Bad credentials", "https://docs.github.com/rest")
    return None


def github_route(mock, req):
    p = req.path
    m = re.match(r"^/github/repos/([^/]+)/([^/]+)/issues$", p)
    if m:
        if req.method == "GET":
            return _github_issues(mock, req, m.group(1), m.group(2))
        if req.method != "POST":
            return _gh(404, "Not Found", GH_DOC_ISSUE)
        return _github_issue(mock, req, m.group(1), m.group(2))
    if p == "/github/user":
        if req.method != "GET":
            return _gh(404, "Not Found", GH_DOC_USER)
        err = _github_common(mock, req, GH_DOC_USER)
        if err:
            return err
        out = dict(GITHUB_USER)
        out["url"] = "https://api.github.com/users/mock-user"
        return _json(200, out, {"X-OAuth-Scopes": "repo", "X-Accepted-OAuth-Scopes": ""})
    m = re.match(r"^/github/applications/([^/]+)/token$", p)
    if m:
        return _github_revoke(mock, req, urllib.parse.unquote(m.group(1)))
    return _gh(404, "Not Found", "https://docs.github.com/rest")


def _github_issue(mock, req, owner, repo):
    err = _github_common(mock, req, GH_DOC_ISSUE)
    if err:
        return err
    full = ("%s/%s" % (owner, repo)).lower()
    kind = GITHUB_REPOS.get(full)
    if kind is None:
        return _gh(404, "Not Found", GH_DOC_ISSUE)
    if kind == "gone":
        return _gh(410, "Issues are disabled for this repo", GH_DOC_ISSUE)
    if kind == "forbidden":
        return _gh(403, "Resource not accessible by integration", GH_DOC_ISSUE)
    if req.json_error is not None or not isinstance(req.json, dict):
        if req.raw and req.json_error is not None:
            return _gh(400, "Problems parsing JSON", GH_DOC_ISSUE)
        if not isinstance(req.json, dict) and req.json is not None:
            return _gh(400, "Problems parsing JSON", GH_DOC_ISSUE)
        return _gh(422, "Invalid request.\n\n\"title\" wasn't supplied.", GH_DOC_ISSUE)
    b = req.json
    if "title" not in b or b["title"] is None:
        return _gh(422, "Invalid request.\n\n\"title\" wasn't supplied.", GH_DOC_ISSUE)
    if not isinstance(b["title"], (str, int)) or isinstance(b["title"], bool):
        return _gh(422, "Invalid request.\n\nFor 'properties/title', %s is not a string or "
                   "integer." % json.dumps(b["title"]), GH_DOC_ISSUE)
    if isinstance(b["title"], str) and not b["title"].strip():
        return _gh(422, "Validation Failed", GH_DOC_ISSUE,
                   errors=[{"resource": "Issue", "code": "missing_field", "field": "title"}])
    if "body" in b and b["body"] is not None and not isinstance(b["body"], str):
        return _gh(422, "Invalid request.\n\nFor 'properties/body', %s is not a string or "
                   "null." % json.dumps(b["body"]), GH_DOC_ISSUE)
    gid = 9000000 + mock.next("gh_issue_id")
    with mock.lock:
        num = mock.github_numbers.get(full, 0) + 1
        mock.github_numbers[full] = num
    api = "https://api.github.com/repos/%s/%s/issues/%d" % (owner, repo, num)
    html = "https://github.com/%s/%s/issues/%d" % (owner, repo, num)
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    issue = {"id": gid, "node_id": "I_mock%d" % gid, "url": api, "html_url": html,
             "repository_url": "https://api.github.com/repos/%s/%s" % (owner, repo),
             "number": num, "state": "open", "title": str(b["title"]),
             "body": b.get("body"), "user": {"login": GITHUB_USER["login"],
                                             "id": GITHUB_USER["id"], "type": "User"},
             "labels": [], "assignee": None, "assignees": [], "milestone": None,
             "locked": False, "comments": 0, "created_at": now, "updated_at": now,
             "closed_at": None, "author_association": "OWNER"}
    with mock.lock:
        mock.github_issues.setdefault(full, []).append(issue)
    return _json(201, issue, {"Location": api})


def _github_seed(full, num, state, title, created, is_pr):
    """A fixture issue (or pull request) of repository 'full' as GitHub lists it."""
    api = "https://api.github.com/repos/%s/issues/%d" % (full, num)
    out = {"id": 8000000 + num, "node_id": "I_seed%d" % num, "url": api,
           "html_url": "https://github.com/%s/%s/%d" % (full, "pull" if is_pr else "issues",
                                                        num),
           "repository_url": "https://api.github.com/repos/" + full, "number": num,
           "state": state, "title": title, "body": None,
           "user": {"login": GITHUB_USER["login"], "id": GITHUB_USER["id"], "type": "User"},
           "labels": [], "assignee": None, "assignees": [], "milestone": None,
           "locked": False, "comments": 0, "created_at": created, "updated_at": created,
           "closed_at": created if state == "closed" else None,
           "author_association": "OWNER"}
    if is_pr:
        out["pull_request"] = {"url": "https://api.github.com/repos/%s/pulls/%d" % (full, num),
                               "html_url": out["html_url"],
                               "diff_url": out["html_url"] + ".diff",
                               "patch_url": out["html_url"] + ".patch", "merged_at": None}
    return out


def _github_issues(mock, req, owner, repo):
    """GET /repos/{owner}/{repo}/issues: state (open|closed|all, default open), sort
    (created|updated|comments), direction (default desc), per_page (default 30, at most 100),
    page; pull requests are listed too (with a pull_request member); Link when more."""
    err = _github_common(mock, req, GH_DOC_ISSUES)
    if err:
        return err
    full = ("%s/%s" % (owner, repo)).lower()
    kind = GITHUB_REPOS.get(full)
    if kind is None:
        return _gh(404, "Not Found", GH_DOC_ISSUES)
    if kind == "gone":
        return _gh(410, "Issues are disabled for this repo", GH_DOC_ISSUES)
    if kind == "forbidden":
        return _gh(403, "Resource not accessible by integration", GH_DOC_ISSUES)
    q = req.query
    state = q.get("state", "open")
    if state not in ("open", "closed", "all"):
        return _gh(422, "Validation Failed", GH_DOC_ISSUES,
                   errors=[{"value": state, "resource": "Issue", "field": "state",
                            "code": "invalid"}])
    sort, direction = q.get("sort", "created"), q.get("direction", "desc")
    if sort not in ("created", "updated", "comments") or direction not in ("asc", "desc"):
        return _gh(422, "Validation Failed", GH_DOC_ISSUES,
                   errors=[{"resource": "Issue", "field": "sort", "code": "invalid"}])
    try:
        per_page = min(max(int(q.get("per_page", 30)), 1), 100)
        page = max(int(q.get("page", 1)), 1)
    except ValueError:
        per_page, page = 30, 1
    with mock.lock:
        items = [dict(i) for i in mock.github_issues.get(full, [])]
    items = [i for i in items if state == "all" or i["state"] == state]
    key = {"created": "created_at", "updated": "updated_at", "comments": "comments"}[sort]
    items.sort(key=lambda i: (i[key], i["number"]), reverse=direction == "desc")
    chunk = items[(page - 1) * per_page:page * per_page]
    hdrs = {}
    if page * per_page < len(items):
        hdrs["Link"] = ('<https://api.github.com/repos/%s/%s/issues?per_page=%d&page=%d>; '
                        'rel="next"' % (owner, repo, per_page, page + 1))
    return _json(200, chunk, hdrs)


def _github_revoke(mock, req, client_id):
    if req.method != "DELETE":
        return _gh(404, "Not Found", GH_DOC_TOKEN)
    if not (req.header("User-Agent") or "").strip():
        return Resp(403, GH_UA_TEXT, ctype="text/plain; charset=utf-8")
    basic = req.basic()
    if basic is None:
        return _gh(401, "Requires authentication", GH_DOC_TOKEN)
    if basic != mock.client or client_id != mock.client[0]:
        return _gh(404, "Not Found", GH_DOC_TOKEN)
    if req.json_error is not None:
        return _gh(400, "Problems parsing JSON", GH_DOC_TOKEN)
    tok = req.json.get("access_token") if isinstance(req.json, dict) else None
    if not isinstance(tok, str) or not tok:
        return _gh(422, "Invalid request.\n\n\"access_token\" wasn't supplied.", GH_DOC_TOKEN)
    with mock.lock:
        known = tok in mock.valid or tok in mock.expired
        mock.valid.discard(tok)
        mock.expired.discard(tok)
    if not known:
        return _gh(404, "Not Found", GH_DOC_TOKEN)
    return Resp(204, None)


# ---------------------------------------------------------------- Google

def _g_err(code, message, errors=None, status=None, headers=None):
    err = {"code": code, "message": message}
    if errors is not None:
        err["errors"] = errors
    if status:
        err["status"] = status
    return _json(code, {"error": err}, headers)


def _google_auth(mock, req):
    kind, tok = req.bearer()
    if kind == "missing":
        return _g_err(401, GOOGLE_MISSING_AUTH,
                      [{"message": "Login Required.", "domain": "global", "reason": "required",
                        "location": "Authorization", "locationType": "header"}],
                      "UNAUTHENTICATED", {"WWW-Authenticate": 'Bearer realm="https://accounts.'
                                                              'google.com/"'})
    if kind == "malformed" or mock.token_state(tok) != "valid":
        return _g_err(401, GOOGLE_BAD_AUTH,
                      [{"message": "Invalid Credentials", "domain": "global",
                        "reason": "authError", "location": "Authorization",
                        "locationType": "header"}],
                      "UNAUTHENTICATED", {"WWW-Authenticate": 'Bearer realm="https://accounts.'
                                                              'google.com/", error='
                                                              '"invalid_token"'})
    return None


def _g_bad(message, reason="required", domain="global"):
    return _g_err(400, message, [{"domain": domain, "reason": reason, "message": message}])


def google_route(mock, req):
    p = req.path
    if p in ("/google/openidconnect/v1/userinfo", "/google/oauth2/v3/userinfo"):
        err = _google_auth(mock, req)
        return err or _json(200, dict(GOOGLE_USER))
    if p == "/google/revoke":
        if req.method != "POST":
            return _json(405, {"error": "invalid_request"})
        tok = (req.form or {}).get("token") or req.query.get("token")
        with mock.lock:
            known = tok in mock.valid or tok in mock.refresh or tok in mock.expired
            mock.valid.discard(tok)
            mock.expired.discard(tok)
            mock.refresh.pop(tok, None)
        if not known:
            return _json(400, {"error": "invalid_token", "error_description": "Token expired "
                                                                              "or revoked"})
        return _json(200, {})
    m = re.match(r"^/google/calendar/v3/calendars/([^/]+)/events$", p)
    if not m:
        return _g_err(404, "Not Found", [{"domain": "global", "reason": "notFound",
                                          "message": "Not Found"}])
    if req.method == "GET":
        return _google_events(mock, req, urllib.parse.unquote(m.group(1)))
    if req.method != "POST":
        return _g_err(405, "Method Not Allowed", [{"domain": "global", "reason":
                                                   "httpMethodNotAllowed", "message":
                                                   "Method Not Allowed"}])
    err = _google_auth(mock, req)
    if err:
        return err
    cal = urllib.parse.unquote(m.group(1))
    if cal not in GOOGLE_CALENDARS:
        return _g_err(404, "Not Found", [{"domain": "global", "reason": "notFound",
                                          "message": "Not Found"}])
    if req.ctype != "application/json" or req.json_error is not None or \
            not isinstance(req.json, dict):
        return _g_bad("Parse Error", "parseError")
    b = req.json
    for k in ("summary", "description", "location"):
        if k in b and b[k] is not None and not isinstance(b[k], str):
            return _g_bad("Invalid value for: %s" % k, "invalid")
    times = {}
    for which in ("start", "end"):
        t = b.get(which)
        if not isinstance(t, dict) or not (t.get("dateTime") or t.get("date")):
            return _g_bad("Missing %s time." % which)
        if t.get("dateTime") is not None:
            dt = t["dateTime"]
            if not isinstance(dt, str) or not _DT_RE.match(dt):
                return _g_bad("Invalid %s time." % which, "invalid")
            if not _TZ_RE.search(dt) and not t.get("timeZone"):
                return _g_bad("Missing time zone definition for %s time." % which)
            times[which] = ("dateTime", _dt_key(dt))
        else:
            d = t["date"]
            if not isinstance(d, str) or not re.match(r"^\d{4}-\d\d-\d\d$", d):
                return _g_bad("Invalid %s time." % which, "invalid")
            times[which] = ("date", _dt_key(d + "T00:00:00Z"))
    if times["start"][0] != times["end"][0]:
        return _g_bad("Start and end times must either both be date or both be dateTime.",
                      "invalid")
    if times["end"][1] < times["start"][1] or (times["start"][0] == "date"
                                                and times["end"][1] == times["start"][1]):
        return _g_err(400, "The specified time range is empty.",
                      [{"domain": "calendar", "reason": "timeRangeEmpty",
                        "message": "The specified time range is empty.",
                        "locationType": "parameter", "location": "end.dateTime"}])
    n = mock.next("g_event")
    eid = "mockev%04d" % n
    email = GOOGLE_CALENDARS[cal]
    link_eid = base64.b64encode(("%s %s" % (eid, email)).encode()).decode().rstrip("=")
    now = _now_iso()
    ev = {"kind": "calendar#event", "etag": '"%d"' % (3400000000000000 + n), "id": eid,
          "status": "confirmed",
          "htmlLink": "https://www.google.com/calendar/event?eid=" + link_eid,
          "created": now, "updated": now, "summary": b.get("summary"),
          "creator": {"email": GOOGLE_USER["email"], "self": True},
          "organizer": {"email": email, "self": email == GOOGLE_USER["email"]},
          "start": b["start"], "end": b["end"], "iCalUID": eid + "@google.com", "sequence": 0,
          "reminders": {"useDefault": True}, "eventType": "default"}
    if b.get("description") is not None:
        ev["description"] = b["description"]
    if ev["summary"] is None:
        del ev["summary"]
    with mock.lock:
        mock.google_events.setdefault(email, []).append(ev)
    return _json(200, ev)


_RFC3339_RE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$")


def _g_when(t):
    """(sort key in seconds, all-day) of an event's start or end."""
    if t.get("dateTime"):
        return _dt_key(t["dateTime"]), False
    return _dt_key(t["date"] + "T00:00:00Z"), True


def _g_expand(ev):
    """An event with singleEvents=true: a weekly recurrence becomes its instances."""
    m = re.match(r"^RRULE:FREQ=WEEKLY;COUNT=(\d+)$", (ev.get("recurrence") or [""])[0])
    if not m:
        return [ev]
    out = []
    for k in range(int(m.group(1))):
        inst = {x: v for x, v in ev.items() if x != "recurrence"}
        inst["id"] = "%s_%d" % (ev["id"], k)
        inst["recurringEventId"] = ev["id"]
        for which in ("start", "end"):
            t = _dt_key(ev[which]["dateTime"]) + k * 7 * 86400
            inst[which] = {"dateTime": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))}
        out.append(inst)
    return out


def _google_events(mock, req, cal):
    """events.list: timeMin (exclusive bound on an event's end) and timeMax (on its start), both
    RFC 3339 with an offset; maxResults (default 250, at most 2500); singleEvents; orderBy
    startTime (only with singleEvents=true) or updated; pageToken."""
    err = _google_auth(mock, req)
    if err:
        return err
    if cal not in GOOGLE_CALENDARS:
        return _g_err(404, "Not Found", [{"domain": "global", "reason": "notFound",
                                          "message": "Not Found"}])
    q = req.query
    bounds = {}
    for name in ("timeMin", "timeMax"):
        if name in q:
            if not _RFC3339_RE.match(q[name]):
                return _g_bad("Bad Request", "badRequest")
            bounds[name] = _dt_key(q[name])
    if "timeMin" in bounds and "timeMax" in bounds and bounds["timeMin"] >= bounds["timeMax"]:
        return _g_bad("The specified time range is empty.", "timeRangeEmpty", "calendar")
    try:
        top = int(q.get("maxResults", 250))
    except ValueError:
        return _g_bad("Invalid value '%s'. Values must match the following regular expression: "
                      "'[0-9]+'" % q.get("maxResults"), "invalidParameter")
    if top < 1:
        return _g_bad("Invalid value '%d'. Values must be within the range: [1, 2500]" % top,
                      "invalidParameter")
    top = min(top, 2500)
    single = q.get("singleEvents", "false").lower() == "true"
    order = q.get("orderBy")
    if order not in (None, "startTime", "updated"):
        return _g_bad("Invalid value for: %s is not a valid value" % order, "invalidParameter")
    if order == "startTime" and not single:
        return _g_bad("The requested ordering is not available for the particular query.",
                      "badRequest")
    email = GOOGLE_CALENDARS[cal]
    with mock.lock:
        evs = [json.loads(json.dumps(e)) for e in mock.google_events.get(email, [])]
    if single:
        evs = [i for e in evs for i in _g_expand(e)]
    kept = []
    for e in evs:
        start, _ = _g_when(e["start"])
        end, _ = _g_when(e["end"])
        if "timeMin" in bounds and not end > bounds["timeMin"]:
            continue
        if "timeMax" in bounds and not start < bounds["timeMax"]:
            continue
        kept.append(e)
    if order == "startTime":
        kept.sort(key=lambda e: (_g_when(e["start"])[0], e["id"]))
    try:
        skip = int(base64.b64decode(q.get("pageToken", "")).decode() or 0)
    except (ValueError, UnicodeDecodeError):
        return _g_bad("Invalid page token value.", "invalid")
    page = kept[skip:skip + top]
    for e in page:
        e.setdefault("kind", "calendar#event")
        e.setdefault("status", "confirmed")
        e.setdefault("htmlLink", "https://www.google.com/calendar/event?eid=" +
                     base64.b64encode(("%s %s" % (e["id"], email)).encode()).decode()
                     .rstrip("="))
        e.setdefault("organizer", {"email": email, "self": email == GOOGLE_USER["email"]})
    out = {"kind": "calendar#events", "etag": '"p33c8mock"', "summary": email,
           "description": "", "updated": _now_iso(), "timeZone": "UTC", "accessRole": "owner",
           "defaultReminders": [{"method": "popup", "minutes": 10}], "items": page}
    if skip + top < len(kept):
        out["nextPageToken"] = base64.b64encode(str(skip + top).encode()).decode()
    else:
        out["nextSyncToken"] = "CPjmock0001="
    return _json(200, out)


# ---------------------------------------------------------------- Microsoft Graph

def _graph_ids(mock, req):
    rid = _uuid(mock.next("graph_request"))
    crid = req.header("client-request-id") or rid
    return rid, crid


def _graph_err(mock, req, status, code, message):
    rid, crid = _graph_ids(mock, req)
    return _json(status, {"error": {"code": code, "message": message, "innerError": {
        "date": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime()), "request-id": rid,
        "client-request-id": crid}}}, {"request-id": rid, "client-request-id": crid,
                                       "Date": _http_date()})


def _graph_auth(mock, req):
    kind, tok = req.bearer()
    if kind == "missing":
        return _graph_err(mock, req, 401, "InvalidAuthenticationToken",
                          "Access token is empty.")
    st = mock.token_state(tok) if kind == "ok" else "invalid"
    if st == "expired":
        return _graph_err(mock, req, 401, "InvalidAuthenticationToken",
                          "Lifetime validation failed, the token is expired.")
    if st != "valid":
        return _graph_err(mock, req, 401, "InvalidAuthenticationToken",
                          "IDX14100: JWT is not well formed, there are no dots (.).\nThe token "
                          "needs to be in JWS or JWE Compact Serialization Format. (JWS): "
                          "'EncodedHeader.EndcodedPayload.EncodedSignature'. (JWE): "
                          "'EncodedProtectedHeader.EncodedEncryptedKey.EncodedInitialization"
                          "Vector.EncodedCiphertext.EncodedAuthenticationTag'.")
    return None


def graph_route(mock, req):
    p = req.path
    if p == "/graph/v1.0/me":
        if req.method != "GET":
            return _graph_err(mock, req, 405, "Request_BadRequest",
                              "Specified HTTP method is not allowed for the request target.")
        err = _graph_auth(mock, req)
        if err:
            return err
        rid, crid = _graph_ids(mock, req)
        return _json(200, dict(GRAPH_ME), {"request-id": rid, "client-request-id": crid})
    if p == "/graph/v1.0/me/messages":
        if req.method != "GET":
            return _graph_err(mock, req, 405, "BadRequest",
                              "Specified HTTP method is not allowed for the request target.")
        err = _graph_auth(mock, req)
        if err:
            return err
        return _graph_messages(mock, req)
    if p == "/graph/v1.0/me/sendMail":
        if req.method != "POST":
            return _graph_err(mock, req, 405, "BadRequest",
                              "Specified HTTP method is not allowed for the request target.")
        err = _graph_auth(mock, req)
        if err:
            return err
        return _graph_send(mock, req)
    return _graph_err(mock, req, 400, "BadRequest",
                      "Resource not found for the segment '%s'." % p.rsplit("/", 1)[-1])


def _graph_message(m, select):
    """A message of GRAPH_MESSAGES with the properties $select asked for (all when none)."""
    full = {"@odata.etag": 'W/"CQAAABYAAACmock"', "id": m["id"],
            "createdDateTime": m["receivedDateTime"], "receivedDateTime": m["receivedDateTime"],
            "sentDateTime": m["receivedDateTime"], "hasAttachments": False,
            "subject": m["subject"], "bodyPreview": m["bodyPreview"], "importance": "normal",
            "isRead": False, "isDraft": False,
            "webLink": "https://outlook.office365.com/owa/?ItemID=%s" % m["id"],
            "body": {"contentType": "html", "content": "<html><body>%s</body></html>"
                     % m["bodyPreview"]},
            "from": {"emailAddress": {"name": m["from"][0], "address": m["from"][1]}},
            "sender": {"emailAddress": {"name": m["from"][0], "address": m["from"][1]}},
            "toRecipients": [{"emailAddress": {"name": GRAPH_ME["displayName"],
                                               "address": GRAPH_ME["mail"]}}]}
    if not select:
        return full
    return {k: v for k, v in full.items() if k in select or k in ("@odata.etag", "id")}


def _graph_messages(mock, req):
    """GET /me/messages: $top (default 10, 1..1000), $skip, $select, $search="..." (from,
    subject and body; sorted by date, and taking neither $orderby nor $filter), $orderby
    receivedDateTime [asc|desc]; @odata.nextLink when more."""
    q = req.query
    try:
        top = int(q.get("$top", 10))
        skip = int(q.get("$skip", 0))
    except ValueError:
        return _graph_err(mock, req, 400, "BadRequest", "Invalid $top or $skip value.")
    if top < 1:
        return _graph_err(mock, req, 400, "BadRequest", "Invalid $top value: %d." % top)
    if top > 1000:
        return _graph_err(mock, req, 400, "BadRequest", "The limit of '1000' for Top query has "
                          "been exceeded. The value from the incoming request is '%d'." % top)
    search = q.get("$search")
    for other in ("$orderby", "$filter"):
        if search is not None and other in q:
            return _graph_err(mock, req, 400, "BadRequest", "The query parameter '%s' is not "
                              "supported with '$search'." % other.replace("by", "By"))
    msgs = list(GRAPH_MESSAGES)
    if search is not None:
        if len(search) < 2 or search[0] != '"' or search[-1] != '"':
            return _graph_err(mock, req, 400, "BadRequest", "Syntax error: character '%s' is "
                              "not valid at position 0 in '%s'." % (search[:1], search))
        words = re.sub(r'\\(.)', r"\1", search[1:-1]).lower().split()
        msgs = [m for m in msgs if all(w in " ".join((m["subject"], m["bodyPreview"],
                                                      m["from"][0], m["from"][1])).lower()
                                       for w in words)]
    order = q.get("$orderby", "receivedDateTime desc").split()
    if order[0] != "receivedDateTime" or order[1:] not in ([], ["asc"], ["desc"]):
        return _graph_err(mock, req, 400, "BadRequest", "Could not find a property named '%s' "
                          "on type 'Microsoft.OutlookServices.Message'." % order[0])
    msgs.sort(key=lambda m: m["receivedDateTime"], reverse=order[1:] != ["asc"])
    select = [x.strip() for x in q["$select"].split(",")] if q.get("$select") else None
    out = {"@odata.context": "https://graph.microsoft.com/v1.0/$metadata#users('%s')/messages"
           % GRAPH_ME["id"], "value": [_graph_message(m, select) for m in msgs[skip:skip + top]]}
    if skip + top < len(msgs):
        nq = dict(q)
        nq["$skip"] = str(skip + top)
        out["@odata.nextLink"] = "https://graph.microsoft.com/v1.0/me/messages?" + \
            urllib.parse.urlencode(nq)
    rid, crid = _graph_ids(mock, req)
    return _json(200, out, {"request-id": rid, "client-request-id": crid})


def _graph_send(mock, req):
    if not req.raw:
        return _graph_err(mock, req, 400, "BadRequest", "Empty Payload. JSON content expected.")
    if req.ctype != "application/json" or req.json_error is not None or \
            not isinstance(req.json, dict):
        return _graph_err(mock, req, 400, "BadRequest", "Unable to read JSON request payload. "
                          "Please ensure Content-Type header is set and payload is of valid "
                          "JSON format.")
    b = req.json
    msg = b.get("message")
    if not isinstance(msg, dict):
        return _graph_err(mock, req, 400, "ErrorInvalidParameter",
                          "The value of the parameter 'Message' is empty.")
    if "saveToSentItems" in b and not isinstance(b["saveToSentItems"], bool):
        return _graph_err(mock, req, 400, "RequestBodyRead",
                          "Cannot convert a primitive value to the expected type 'Edm.Boolean'."
                          " See the inner exception for more details.")
    if "subject" in msg and msg["subject"] is not None and not isinstance(msg["subject"], str):
        return _graph_err(mock, req, 400, "RequestBodyRead", "Cannot convert the literal to "
                          "the expected type 'Edm.String'.")
    body = msg.get("body")
    if body is not None:
        if not isinstance(body, dict):
            return _graph_err(mock, req, 400, "RequestBodyRead", "Invalid JSON. An unexpected "
                              "value was found for property 'body'.")
        ct = body.get("contentType", "text")
        if not isinstance(ct, str) or ct.lower() not in ("text", "html"):
            return _graph_err(mock, req, 400, "RequestBodyRead",
                              "Requested value '%s' was not found." % (ct,))
        if "content" in body and body["content"] is not None and \
                not isinstance(body["content"], str):
            return _graph_err(mock, req, 400, "RequestBodyRead", "Cannot convert the literal "
                              "to the expected type 'Edm.String'.")
    recips = []
    for field in ("toRecipients", "ccRecipients", "bccRecipients"):
        lst = msg.get(field)
        if lst is None:
            continue
        if not isinstance(lst, list):
            return _graph_err(mock, req, 400, "RequestBodyRead", "Invalid JSON. A collection "
                              "was expected for property '%s'." % field)
        for r in lst:
            addr = r.get("emailAddress", {}).get("address") if isinstance(r, dict) and \
                isinstance(r.get("emailAddress"), dict) else None
            recips.append(addr)
    if not recips:
        return _graph_err(mock, req, 400, "ErrorInvalidRecipients", "At least one recipient "
                          "is not valid., A message can't be sent because it contains no "
                          "recipients.")
    for a in recips:
        if not isinstance(a, str) or not _EMAIL_RE.match(a):
            return _graph_err(mock, req, 400, "ErrorInvalidRecipients", "At least one "
                              "recipient is not valid., Recipient '%s' is not resolved. All "
                              "recipients must be resolved before a message can be submitted."
                              % (a,))
    rid, crid = _graph_ids(mock, req)
    return Resp(202, None, {"request-id": rid, "client-request-id": crid, "Date": _http_date()})


# ---------------------------------------------------------------- HubSpot

def _hs(status, message, category, **extra):
    out = {"status": "error", "message": message, "correlationId": _uuid(status),
           "category": category}
    out.update(extra)
    return _json(status, out)


def _hubspot_auth(mock, req):
    kind, tok = req.bearer()
    if kind != "ok":
        return _hs(401, HUBSPOT_NO_AUTH, "INVALID_AUTHENTICATION")
    st = mock.token_state(tok)
    if st == "expired":
        return _hs(401, "The OAuth token used to make this call expired 0 second(s) ago.",
                   "EXPIRED_AUTHENTICATION")
    if st != "valid":
        return _hs(401, HUBSPOT_NO_AUTH, "INVALID_AUTHENTICATION")
    return None


def _hs_json_body(req):
    if req.ctype != "application/json":
        return None, _hs(415, "Content type '%s' not supported" % (req.content_type or ""),
                         "VALIDATION_ERROR")
    if req.json_error is not None:
        return None, _hs(400, "Invalid input JSON on line 1: %s" % req.json_error,
                         "VALIDATION_ERROR")
    if not isinstance(req.json, dict):
        return None, _hs(400, "Invalid input JSON: expected an object", "VALIDATION_ERROR")
    return req.json, None


def _hs_timestamp(v):
    if isinstance(v, int) and not isinstance(v, bool):
        return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(v / 1000)) + \
            ".%03dZ" % (v % 1000)
    if isinstance(v, str) and v.isdigit():
        return _hs_timestamp(int(v))
    if isinstance(v, str) and _DT_RE.match(v) and _TZ_RE.search(v):
        return v
    return None


def hubspot_route(mock, req):
    p = req.path
    m = re.match(r"^/hubspot/oauth/v1/access-tokens/(.+)$", p)
    if m:
        if req.method != "GET":
            return _hs(405, "Method not allowed", "VALIDATION_ERROR")
        tok = urllib.parse.unquote(m.group(1))
        if mock.token_state(tok) != "valid":
            return _hs(404, "Token not found", "OBJECT_NOT_FOUND")
        out = {"token": tok, "user": HUBSPOT_HUB["user"], "hub_domain":
               HUBSPOT_HUB["hub_domain"], "scopes": ["oauth", "crm.objects.contacts.read",
                                                     "crm.objects.contacts.write"],
               "hub_id": HUBSPOT_HUB["hub_id"], "app_id": HUBSPOT_HUB["app_id"],
               "expires_in": 1800, "user_id": HUBSPOT_HUB["user_id"], "token_type": "access"}
        return _json(200, out)
    m = re.match(r"^/hubspot/oauth/v1/refresh-tokens/(.+)$", p)
    if m:
        tok = urllib.parse.unquote(m.group(1))
        if req.method == "DELETE":
            with mock.lock:
                known = mock.refresh.pop(tok, None) is not None
            if not known:
                return _hs(404, "Refresh token not found", "OBJECT_NOT_FOUND")
            return Resp(204, None)
        return _hs(405, "Method not allowed", "VALIDATION_ERROR")
    if p == "/hubspot/crm/v3/objects/notes":
        if req.method != "POST":
            return _hs(405, "Method not allowed", "VALIDATION_ERROR")
        return _hubspot_note(mock, req)
    if p == "/hubspot/crm/v3/objects/contacts/search":
        if req.method != "POST":
            return _hs(405, "Method not allowed", "VALIDATION_ERROR")
        return _hubspot_search(mock, req)
    return _hs(404, "Unable to infer object type from: %s" % p.rsplit("/", 1)[-1],
               "OBJECT_NOT_FOUND")


def _hubspot_note(mock, req):
    err = _hubspot_auth(mock, req)
    if err:
        return err
    b, err = _hs_json_body(req)
    if err:
        return err
    props = b.get("properties")
    if not isinstance(props, dict):
        return _hs(400, "Invalid input JSON on line 1: Missing required creator property "
                   "'properties'", "VALIDATION_ERROR")
    for k, v in props.items():
        if v is not None and not isinstance(v, (str, int, float, bool)):
            return _hs(400, "Property values were not valid: [{\"isValid\":false,\"message\":"
                       "\"%s must be a scalar\",\"error\":\"INVALID_PROPERTY_VALUE\",\"name\":"
                       "\"%s\"}]" % (k, k), "VALIDATION_ERROR")
    if "hs_timestamp" not in props or props["hs_timestamp"] in (None, ""):
        return _hs(400, "Property values were not valid: [{\"isValid\":false,\"message\":"
                   "\"hs_timestamp is required\",\"error\":\"REQUIRED_PROPERTY\",\"name\":"
                   "\"hs_timestamp\"}]", "VALIDATION_ERROR")
    ts = _hs_timestamp(props["hs_timestamp"])
    if ts is None:
        return _hs(400, "Property values were not valid: [{\"isValid\":false,\"message\":"
                   "\"%s was not a valid long or a valid datetime.\",\"error\":"
                   "\"INVALID_DATE\",\"name\":\"hs_timestamp\"}]" % props["hs_timestamp"],
                   "VALIDATION_ERROR")
    assoc = b.get("associations", [])
    if not isinstance(assoc, list):
        return _hs(400, "Invalid input JSON: 'associations' must be an array",
                   "VALIDATION_ERROR")
    for a in assoc:
        to = a.get("to") if isinstance(a, dict) else None
        types = a.get("types") if isinstance(a, dict) else None
        if not isinstance(to, dict) or "id" not in to or not isinstance(types, list) or \
                not types:
            return _hs(400, "Invalid input JSON: each association needs 'to.id' and 'types'",
                       "VALIDATION_ERROR")
        for t in types:
            if not isinstance(t, dict) or t.get("associationCategory") not in (
                    "HUBSPOT_DEFINED", "USER_DEFINED", "INTEGRATOR_DEFINED") or \
                    not isinstance(t.get("associationTypeId"), int) or \
                    isinstance(t.get("associationTypeId"), bool):
                return _hs(400, "Invalid input JSON: association types need "
                           "associationCategory and an integer associationTypeId",
                           "VALIDATION_ERROR")
            if t["associationCategory"] == "HUBSPOT_DEFINED" and t["associationTypeId"] != 202:
                return _hs(400, "provider-mock knows only note->contact (202) associations",
                           "VALIDATION_ERROR")
        if str(to["id"]) not in HUBSPOT_CONTACTS:
            return _hs(400, "One or more associations are invalid: contact %s does not exist"
                       % to["id"], "VALIDATION_ERROR")
    nid = str(50000 + mock.next("hs_note"))
    now = _now_iso()
    out_props = {k: (None if v is None else str(v)) for k, v in props.items()}
    out_props.update({"hs_timestamp": ts, "hs_createdate": now, "hs_lastmodifieddate": now,
                      "hs_object_id": nid})
    return _json(201, {"id": nid, "properties": out_props, "createdAt": now,
                       "updatedAt": now, "archived": False})


_HS_OPS = {"EQ", "NEQ", "LT", "LTE", "GT", "GTE", "BETWEEN", "IN", "NOT_IN", "HAS_PROPERTY",
           "NOT_HAS_PROPERTY", "CONTAINS_TOKEN", "NOT_CONTAINS_TOKEN"}


def _hs_match(contact, f):
    name, op = f.get("propertyName"), f.get("operator", "EQ")
    have = contact.get(name)
    val = f.get("value")
    low = lambda s: str(s).lower()
    if op == "HAS_PROPERTY":
        return have is not None
    if op == "NOT_HAS_PROPERTY":
        return have is None
    if op == "EQ":
        return have is not None and low(have) == low(val)
    if op == "NEQ":
        return have is None or low(have) != low(val)
    if op in ("IN", "NOT_IN"):
        vals = [low(v) for v in (f.get("values") or [])]
        inside = have is not None and low(have) in vals
        return inside if op == "IN" else not inside
    if op in ("CONTAINS_TOKEN", "NOT_CONTAINS_TOKEN"):
        tok = low(val).strip("*")
        inside = have is not None and tok in low(have)
        return inside if op == "CONTAINS_TOKEN" else not inside
    return False


def _hubspot_search(mock, req):
    err = _hubspot_auth(mock, req)
    if err:
        return err
    b, err = _hs_json_body(req)
    if err:
        return err
    groups = b.get("filterGroups", [])
    if not isinstance(groups, list) or len(groups) > 5:
        return _hs(400, "There was a problem with the request: filterGroups must be an array "
                   "of at most 5 groups", "VALIDATION_ERROR")
    for g in groups:
        fl = g.get("filters") if isinstance(g, dict) else None
        if not isinstance(fl, list):
            return _hs(400, "There was a problem with the request: each filter group needs "
                       "'filters'", "VALIDATION_ERROR")
        for f in fl:
            if not isinstance(f, dict) or not isinstance(f.get("propertyName"), str) or \
                    f.get("operator", "EQ") not in _HS_OPS:
                return _hs(400, "There was a problem with the request: invalid filter %s"
                           % json.dumps(f), "VALIDATION_ERROR")
            if f.get("operator", "EQ") in ("EQ", "NEQ", "CONTAINS_TOKEN",
                                           "NOT_CONTAINS_TOKEN") and "value" not in f:
                return _hs(400, "There was a problem with the request: filter on %s needs a "
                           "value" % f["propertyName"], "VALIDATION_ERROR")
    limit = b.get("limit", 10)
    if not isinstance(limit, int) or isinstance(limit, bool) or limit < 0 or limit > 200:
        return _hs(400, "There was a problem with the request: limit must be 0..200",
                   "VALIDATION_ERROR")
    query = b.get("query")
    if query is not None and not isinstance(query, str):
        return _hs(400, "Invalid input JSON on line 1: 'query' must be a string",
                   "VALIDATION_ERROR")
    try:
        after = int(b.get("after") or 0)
    except (TypeError, ValueError):
        return _hs(400, "There was a problem with the request: invalid 'after'",
                   "VALIDATION_ERROR")
    hits = []
    for cid in sorted(HUBSPOT_CONTACTS):
        c = HUBSPOT_CONTACTS[cid]
        if groups and not any(all(_hs_match(c, f) for f in g["filters"]) for g in groups):
            continue
        # "query": every word of it starts a word of one of the default searchable properties
        if query and not all(any(re.search(r"(^|[^a-z0-9])" + re.escape(w), str(c.get(k) or
                                                                                "").lower())
                                 for k in HUBSPOT_SEARCHABLE)
                             for w in query.lower().split()):
            continue
        hits.append(cid)
    want = b.get("properties")
    results = []
    for cid in hits[after:after + limit]:
        c = HUBSPOT_CONTACTS[cid]
        props = {"createdate": FIXED_TIME, "email": c["email"], "firstname": c["firstname"],
                 "hs_object_id": cid, "lastmodifieddate": FIXED_TIME,
                 "lastname": c["lastname"]}
        if isinstance(want, list) and want:
            props = {k: props.get(k, c.get(k)) for k in set(want) | {"hs_object_id",
                                                                     "createdate",
                                                                     "lastmodifieddate"}}
        results.append({"id": cid, "properties": props, "createdAt": FIXED_TIME,
                        "updatedAt": FIXED_TIME, "archived": False})
    out = {"total": len(hits), "results": results}
    if after + limit < len(hits):
        out["paging"] = {"next": {"after": str(after + limit),
                                  "link": "?after=%d" % (after + limit)}}
    return _json(200, out)


# ---------------------------------------------------------------- module API / CLI

_default = None


def start(port=0):
    """Start the shared module-level mock (idempotent) and return it."""
    global _default
    if _default is None:
        _default = ProviderMock(port=port).start()
    return _default


def stop():
    global _default
    if _default is not None:
        _default.stop()
        _default = None


def main(argv):
    port = 0
    verbose = False
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--port" and i + 1 < len(argv):
            port = int(argv[i + 1])
            i += 2
        elif a == "-v":
            verbose = True
            i += 1
        elif a.isdigit():
            port = int(a)
            i += 1
        else:
            sys.stderr.write("usage: provider_mock.py [PORT | --port N] [-v]\n")
            return 2
    m = ProviderMock(port=port, verbose=verbose).start()
    print(json.dumps({"port": m.port}), flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        m.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
