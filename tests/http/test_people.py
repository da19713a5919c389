# SPDX-License-Identifier: MIT
"""People, sessions, roles, API keys from the API and the audit log (contract §20).

- The first owner from the command line (its one-time link), invitations, set-password links
  used once, password rules, sign-in failures that all look the same, the lockout of an
  (email, address) pair, sessions (cookie attributes, a new id at each sign-in, revoked at
  sign-out, at a password change and when the user is disabled), the CSRF token, a key's
  header judged alone, test mode for a session.
- The roles: every route of the route table (`workforce routes`) is walked with a session of
  each role: a role below the route's gets 403 permission_denied, the route's own role does not
  (the table is the C's: docs/roles.md is generated from it).
- Roles never grant more than they have; the last owner stays; keys never manage keys or people.
- API keys made, listed (last4, created_by, last_used_at) and deleted (401 at once).
- The audit log: entries for changes by people, keys and the command line, sign-ins and failed
  ones, filters and pages, admins only (a key only with `audit` named), no secret in any entry,
  nothing that changes or deletes an entry; another organization's people, keys and entries
  never seen.
"""

import json
import re
import sqlite3
import time

from harness import PG_URL, ServerTestCase, sqlite_only

PASSWORD = "correct horse battery staple"
ROLES = ["viewer", "member", "developer", "admin", "owner"]


class People:
    """Sessions of a test's server: made with the CLI, an invitation link and a sign-in."""

    def __init__(self, case):
        self.case = case
        self.srv = case.server

    def owner(self, org, email, password=PASSWORD):
        p = self.srv.cli("users", "create", "--org", org, "--email", email, "--role", "owner")
        self.case.assertEqual(p.returncode, 0, p.stderr)
        link = p.stdout.strip().splitlines()[-1]
        self.case.assertRegex(link, r"^http://[^/]+/console/#/set-password\?token=wfp_[A-Za-z0-9_-]{43}$")
        self.set_password(link, password)
        return self.sign_in(email, password)

    def set_password(self, link, password=PASSWORD):
        tok = link.split("token=", 1)[1]
        r = self.srv.post("/v1/users/set_password", {"token": tok, "password": password})
        self.case.assertEqual(r.status, 200, r)
        return r.json

    def sign_in(self, email, password=PASSWORD, headers=None):
        r = self.srv.post("/v1/sessions", {"email": email, "password": password}, headers=headers)
        self.case.assertEqual(r.status, 200, r)
        cookie = r.header("Set-Cookie")
        m = re.match(r"wf_session=(wfs_[A-Za-z0-9_-]{43});", cookie or "")
        self.case.assertTrue(m, cookie)
        return {"cookie": "wf_session=" + m.group(1), "csrf": r.json["csrf_token"],
                "user": r.json["user"]}

    def invite(self, s, email, role):
        r = self.call(s, "POST", "/v1/users", {"email": email, "role": role})
        self.case.assertEqual(r.status, 200, r)
        return r.json

    def member_of(self, s, email, role, password=PASSWORD):
        inv = self.invite(s, email, role)
        self.set_password(inv["set_password_url"], password)
        return self.sign_in(email, password)

    def call(self, s, method, path, body=None, csrf=True, headers=None, **kw):
        h = {"Cookie": s["cookie"]}
        if csrf and method not in ("GET", "HEAD"):
            h["X-CSRF-Token"] = s["csrf"]
        h.update(headers or {})
        return self.srv.request(method, path, json_body=body, headers=h, **kw)


class PeopleTest(ServerTestCase):
    server_env = {
        "WORKFORCE_RATE_LIMITS": "starter:100000/100000/100,manager:100000/100000/100,"
                                 "agency:100000/100000/100",
        "WORKFORCE_SESSION_RATE_LIMIT": "100000/100000/100",
        # the tests pose as clients behind a proxy of 127.0.0.1 (the lockout's addresses)
        "WORKFORCE_TRUSTED_PROXIES": "127.0.0.1, ::1",
    }

    @classmethod
    def setUpServer(cls):
        pass

    def setUp(self):
        self.p = People(self)

    def org(self, name):
        """A fresh organization (its slug unique per test) with an owner signed in."""
        slug = "%s-%d" % (name, int(time.time() * 1e6) % 10**9)
        return slug, self.p.owner(slug, "owner@%s.test" % slug)

    # -- users, links and passwords --

    def test_first_owner_and_invitations(self):
        slug, owner = self.org("inv")
        self.assertEqual(owner["user"]["role"], "owner")
        inv = self.p.invite(owner, "Sam@Example.TEST", "member")
        self.assertEqual(inv["user"]["email"], "sam@example.test")
        self.assertEqual(inv["user"]["status"], "active")
        self.assertIsNone(inv["user"]["last_login_at"])
        # the same email again, in this organization or any other: 409
        r = self.p.call(owner, "POST", "/v1/users", {"email": "sam@example.test", "role": "viewer"})
        self.assertError(r, 409, "user_exists", "email")
        _, other = self.org("inv-b")
        r = self.p.call(other, "POST", "/v1/users", {"email": "SAM@example.test", "role": "viewer"})
        self.assertError(r, 409, "user_exists", "email")
        # bad input
        for body, param in (({"email": "nope", "role": "member"}, "email"),
                            ({"email": "a@b.test", "role": "boss"}, "role"),
                            ({"role": "member"}, "email"),
                            ({"email": "a@b.test", "role": "member", "extra": 1}, "extra")):
            with self.subTest(body=body):
                self.assertError(self.p.call(owner, "POST", "/v1/users", body), 400,
                                 "invalid_request", param)
        # the link: a short password is refused and does not use it up; then it works once
        tok = inv["set_password_url"].split("token=")[1]
        r = self.server.post("/v1/users/set_password", {"token": tok, "password": "short pw"})
        self.assertError(r, 400, "invalid_request", "password")
        r = self.server.post("/v1/users/set_password", {"token": tok, "password": PASSWORD})
        self.assertEqual(r.status, 200, r)
        r = self.server.post("/v1/users/set_password", {"token": tok, "password": PASSWORD})
        self.assertError(r, 400, "invalid_token", "token")
        for bad in ("wfp_" + "A" * 43, "nope", "wfs_" + tok[4:]):
            r = self.server.post("/v1/users/set_password", {"token": bad, "password": PASSWORD})
            self.assertError(r, 400, "invalid_token", "token")
        sam = self.p.sign_in("sam@example.test")
        self.assertEqual(sam["user"]["role"], "member")
        self.assertIsNotNone(sam["user"]["last_login_at"])
        # the list, newest first, paged
        r = self.p.call(owner, "GET", "/v1/users?limit=1")
        body = self.assertJson(r)
        self.assertEqual([u["email"] for u in body["users"]], ["sam@example.test"])
        self.assertTrue(body["has_more"])
        r = self.p.call(owner, "GET", "/v1/users?limit=1&before=" + body["next_cursor"])
        self.assertEqual([u["email"] for u in r.json["users"]], ["owner@%s.test" % slug])
        self.assertFalse(r.json["has_more"])
        # get, patch, delete
        sid = sam["user"]["id"]
        self.assertEqual(self.p.call(owner, "GET", "/v1/users/" + sid).json["email"],
                         "sam@example.test")
        r = self.p.call(owner, "PATCH", "/v1/users/" + sid, {"name": "Sam", "role": "developer"})
        self.assertEqual((r.json["name"], r.json["role"]), ("Sam", "developer"), r)
        r = self.p.call(owner, "PATCH", "/v1/users/" + sid, {"email": "x@y.test"})
        self.assertError(r, 400, "invalid_request", "email")
        self.assertError(self.p.call(owner, "GET", "/v1/users/usr_nothing"), 404, "user_not_found",
                         "id")
        r = self.p.call(owner, "DELETE", "/v1/users/" + sid)
        self.assertEqual(r.json, {"id": sid, "deleted": True})
        self.assertError(self.p.call(sam, "GET", "/v1/employees"), 401, "invalid_session")
        self.assertError(self.p.call(owner, "GET", "/v1/users/" + sid), 404, "user_not_found",
                         "id")

    def test_sign_in_failures_look_the_same(self):
        slug, owner = self.org("fail")
        email = "owner@%s.test" % slug
        answers = []
        for body in ({"email": email, "password": "wrong password here"},
                     {"email": "nobody@nowhere.test", "password": PASSWORD},
                     {"email": email.upper(), "password": PASSWORD + "x"}):
            r = self.server.post("/v1/sessions", body)
            err = self.assertError(r, 401, "invalid_credentials")
            self.assertIsNone(r.header("Set-Cookie"))
            answers.append(err["message"])
        self.assertEqual(len(set(answers)), 1, answers)
        # a disabled user's right password fails the same way
        inv = self.p.invite(owner, "gone@%s.test" % slug, "viewer")
        self.p.set_password(inv["set_password_url"])
        r = self.p.call(owner, "PATCH", "/v1/users/" + inv["user"]["id"], {"status": "disabled"})
        self.assertEqual(r.json["status"], "disabled")
        r = self.server.post("/v1/sessions", {"email": "gone@%s.test" % slug, "password": PASSWORD})
        self.assertEqual(r.json["error"]["message"], answers[0])
        # the password is never in the log nor an answer
        self.assertNotIn(PASSWORD, self.server.log_text())
        self.assertNotIn("wrong password here", self.server.log_text())

    def test_lockout_of_an_email_and_address(self):
        slug, _ = self.org("lock")
        email = "owner@%s.test" % slug
        a = {"X-Forwarded-For": "198.51.100.7"}
        for i in range(10):
            r = self.server.post("/v1/sessions", {"email": email, "password": "not it %d!!!!" % i},
                                 headers=a)
            self.assertError(r, 401, "invalid_credentials")
        r = self.server.post("/v1/sessions", {"email": email, "password": PASSWORD}, headers=a)
        self.assertError(r, 429, "too_many_sign_in_attempts")
        self.assertIsNotNone(r.header("Retry-After"))
        # another address, or another email from the same address, is not locked
        self.p.sign_in(email, headers={"X-Forwarded-For": "198.51.100.8"})
        r = self.server.post("/v1/sessions", {"email": "x@%s.test" % slug, "password": "nope"},
                             headers=a)
        self.assertError(r, 401, "invalid_credentials")
        # an address from a peer not trusted as a proxy is the peer's own: covered by the
        # trusted-proxy list of this server (127.0.0.1); see test_untrusted_forwarded_for

    def test_sessions(self):
        slug, owner = self.org("ses")
        email = "owner@%s.test" % slug
        r = self.server.post("/v1/sessions", {"email": email, "password": PASSWORD})
        cookie = r.header("Set-Cookie")
        for attr in ("HttpOnly", "SameSite=Lax", "Path=/"):
            self.assertIn(attr, cookie)
        self.assertNotIn("Secure", cookie)  # the public URL is http here
        self.assertEqual(r.json["mode"], "live")
        second = self.p.sign_in(email)
        self.assertNotEqual(second["cookie"], owner["cookie"])  # a new session each sign-in
        cur = self.assertJson(self.p.call(owner, "GET", "/v1/sessions/current"))
        self.assertEqual(cur["csrf_token"], owner["csrf"])
        self.assertEqual(cur["user"]["email"], email)
        # CSRF: needed by a change, not by a read
        r = self.p.call(owner, "POST", "/v1/users", {"email": "c@d.test", "role": "viewer"},
                        csrf=False)
        self.assertError(r, 403, "csrf_token_invalid", "X-CSRF-Token")
        r = self.p.call(owner, "POST", "/v1/users", {"email": "c@d.test", "role": "viewer"},
                        csrf=False, headers={"X-CSRF-Token": second["csrf"]})
        self.assertError(r, 403, "csrf_token_invalid", "X-CSRF-Token")
        self.assertEqual(self.p.call(owner, "GET", "/v1/users").status, 200)
        # a key in Authorization is judged alone: a bad key with a good cookie is 401
        r = self.p.call(owner, "GET", "/v1/employees", headers={"Authorization": "Bearer nope"})
        self.assertError(r, 401, "invalid_api_key")
        # a cookie that names nothing
        r = self.server.get("/v1/employees", headers={"Cookie": "wf_session=wfs_" + "x" * 43})
        self.assertError(r, 401, "invalid_session")
        # test mode for a session
        r = self.p.call(owner, "GET", "/v1/sessions/current", headers={"Workforce-Mode": "test"})
        self.assertEqual(r.json["mode"], "test")
        r = self.p.call(owner, "GET", "/v1/employees", headers={"Workforce-Mode": "prod"})
        self.assertError(r, 400, "invalid_request", "Workforce-Mode")
        # sign-out ends this session only
        r = self.p.call(owner, "DELETE", "/v1/sessions/current")
        self.assertEqual(r.status, 200, r)
        self.assertIn("Max-Age=0", r.header("Set-Cookie"))
        self.assertError(self.p.call(owner, "GET", "/v1/sessions/current"), 401, "invalid_session")
        self.assertEqual(self.p.call(second, "GET", "/v1/sessions/current").status, 200)
        # a password change ends every session of the user
        third = self.p.sign_in(email)
        r = self.p.call(second, "POST", "/v1/users/me/password",
                        {"current_password": "wrong password!", "new_password": PASSWORD + "2"})
        self.assertError(r, 400, "invalid_request", "current_password")
        r = self.p.call(second, "POST", "/v1/users/me/password",
                        {"current_password": PASSWORD, "new_password": "short"})
        self.assertError(r, 400, "invalid_request", "new_password")
        r = self.p.call(second, "POST", "/v1/users/me/password",
                        {"current_password": PASSWORD, "new_password": PASSWORD + "2"})
        self.assertEqual(r.status, 200, r)
        for s in (second, third):
            self.assertError(self.p.call(s, "GET", "/v1/sessions/current"), 401, "invalid_session")
        self.p.sign_in(email, PASSWORD + "2")
        # a key on a route of sessions only
        key = self.server.create_key(slug)
        r = self.server.get("/v1/sessions/current", key=key)
        self.assertError(r, 403, "permission_denied")

    def test_disabled_user_sessions_end(self):
        slug, owner = self.org("dis")
        m = self.p.member_of(owner, "m@%s.test" % slug, "member")
        self.assertEqual(self.p.call(m, "GET", "/v1/employees").status, 200)
        r = self.p.call(owner, "PATCH", "/v1/users/" + m["user"]["id"], {"status": "disabled"})
        self.assertEqual(r.status, 200, r)
        self.assertError(self.p.call(m, "GET", "/v1/employees"), 401, "invalid_session")
        self.p.call(owner, "PATCH", "/v1/users/" + m["user"]["id"], {"status": "active"})
        self.assertError(self.p.call(m, "GET", "/v1/employees"), 401, "invalid_session")

    # -- roles --

    def test_every_route_by_role(self):
        """The route table walked: below a route's role 403, at it anything but 403."""
        slug, owner = self.org("walk")
        sessions = {"owner": owner}
        for role in ROLES[:-1]:
            sessions[role] = self.p.member_of(owner, "%s@%s.test" % (role, slug), role)
        routes = json.loads(self.server.cli("routes").stdout)["routes"]
        walked = 0
        for rt in routes:
            if rt["public"] or rt["path"] in ("/v1/mcp",):
                continue
            if rt["method"] == "DELETE" and rt["path"] == "/v1/sessions/current":
                continue  # signs the walker out: test_sessions covers it
            path = re.sub(r"\{[a-z_]+\}", "nothing", rt["path"])
            if "{provider}" in rt["path"]:
                path = rt["path"].replace("{provider}", "slack").replace("{id}", "nothing")
            need = ROLES.index(rt["role"])
            for i, role in enumerate(ROLES):
                r = self.p.call(sessions[role], rt["method"], path,
                                {} if rt["method"] in ("POST", "PATCH") else None)
                with self.subTest(route="%s %s" % (rt["method"], rt["path"]), role=role):
                    if i < need:
                        self.assertEqual(r.status, 403, r)
                        self.assertEqual(r.json["error"]["code"], "permission_denied", r)
                    else:
                        self.assertFalse(r.status == 403 and r.json and
                                         r.json["error"]["code"] == "permission_denied", r)
                walked += 1
        self.assertGreater(walked, 300)

    def test_no_role_grants_more_than_it_has(self):
        slug, owner = self.org("esc")
        admin = self.p.member_of(owner, "a@%s.test" % slug, "admin")
        dev = self.p.member_of(owner, "d@%s.test" % slug, "developer")
        member = self.p.member_of(owner, "m@%s.test" % slug, "member")
        # an admin grants at most admin, and never touches an owner
        r = self.p.call(admin, "POST", "/v1/users", {"email": "o2@%s.test" % slug, "role": "owner"})
        self.assertError(r, 403, "permission_denied", "role")
        r = self.p.call(admin, "PATCH", "/v1/users/" + member["user"]["id"], {"role": "owner"})
        self.assertError(r, 403, "permission_denied", "role")
        for body in ({"role": "viewer"}, {"status": "disabled"}):
            r = self.p.call(admin, "PATCH", "/v1/users/" + owner["user"]["id"], body)
            self.assertError(r, 403, "permission_denied", "role")
        r = self.p.call(admin, "DELETE", "/v1/users/" + owner["user"]["id"])
        self.assertError(r, 403, "permission_denied", "role")
        r = self.p.call(admin, "PATCH", "/v1/users/" + member["user"]["id"], {"role": "admin"})
        self.assertEqual(r.json["role"], "admin")
        # below admin: no users at all
        for s in (dev, ):
            self.assertError(self.p.call(s, "POST", "/v1/users", {"email": "z@z.test",
                                                                  "role": "viewer"}),
                             403, "permission_denied")
        # a developer makes test keys, not live ones; an admin both
        r = self.p.call(dev, "POST", "/v1/api_keys", {"name": "t", "mode": "test"})
        self.assertEqual(r.status, 200, r)
        r = self.p.call(dev, "POST", "/v1/api_keys", {"name": "l", "mode": "live"})
        self.assertError(r, 403, "permission_denied", "mode")
        r = self.p.call(admin, "POST", "/v1/api_keys", {"name": "l", "mode": "live"})
        self.assertEqual(r.status, 200, r)
        live_id = r.json["id"]
        self.assertError(self.p.call(dev, "DELETE", "/v1/api_keys/" + live_id), 403,
                         "permission_denied", "mode")

    def test_secrets_are_not_shown_below_developer(self):
        slug, owner = self.org("sec")
        viewer = self.p.member_of(owner, "v@%s.test" % slug, "viewer")
        dev = self.p.member_of(owner, "d@%s.test" % slug, "developer")
        key = self.server.create_key(slug)
        emp = self.server.post("/v1/employees", {"name": "E", "role": "r", "category": "sales"},
                               key=key).json["id"]
        wf = self.p.call(owner, "POST", "/v1/workflows",
                         {"name": "hooked", "trigger": {"type": "webhook"},
                          "steps": [{"employee_id": emp, "action": "respond", "input": "hi"}]})
        wid = self.assertJson(wf)["id"]
        self.assertIn("webhook_url", wf.json)
        for s, sees in ((viewer, False), (dev, True)):
            got = self.assertJson(self.p.call(s, "GET", "/v1/workflows/" + wid))
            self.assertEqual("webhook_url" in got, sees, got)
            listed = self.p.call(s, "GET", "/v1/workflows").json["workflows"]
            self.assertEqual(any("webhook_url" in w for w in listed), sees)
        self.assertIn("webhook_url", self.server.get("/v1/workflows/" + wid, key=key).json)

    def test_the_last_owner_stays(self):
        slug, owner = self.org("last")
        oid = owner["user"]["id"]
        for method, body in (("PATCH", {"role": "admin"}), ("PATCH", {"status": "disabled"}),
                             ("DELETE", None)):
            r = self.p.call(owner, method, "/v1/users/" + oid, body)
            self.assertError(r, 409, "last_owner", {"role", "status", None})
        self.assertEqual(self.p.call(owner, "GET", "/v1/users/" + oid).json["role"], "owner")
        # with a second owner, the first may step down
        o2 = self.p.member_of(owner, "o2@%s.test" % slug, "owner")
        r = self.p.call(owner, "PATCH", "/v1/users/" + oid, {"role": "admin"})
        self.assertEqual(r.json["role"], "admin", r)
        r = self.p.call(o2, "DELETE", "/v1/users/" + o2["user"]["id"])
        self.assertError(r, 409, "last_owner")
        # no entry for the refused changes
        r = self.p.call(o2, "GET", "/v1/audit_events?action=user.delete")
        self.assertEqual(r.json["audit_events"], [])

    # -- keys --

    def test_keys_from_the_api(self):
        slug, owner = self.org("keys")
        r = self.p.call(owner, "POST", "/v1/api_keys",
                        {"name": "ci", "mode": "test", "scopes": ["chat", "employees:read"]})
        k = self.assertJson(r)
        self.assertRegex(k["key"], r"^svc_test_sk_[0-9A-Za-z]{40}$")
        self.assertEqual((k["name"], k["mode"], k["last4"], k["scopes"], k["created_by"]),
                         ("ci", "test", k["key"][-4:], ["employees:read", "chat"],
                          owner["user"]["id"]))
        self.assertIsNone(k["last_used_at"])
        self.assertEqual(self.server.get("/v1/employees", key=k["key"]).status, 200)
        self.assertError(self.server.get("/v1/tasks", key=k["key"]), 403, "permission_denied")
        lst = self.assertJson(self.p.call(owner, "GET", "/v1/api_keys"))
        mine = [x for x in lst["api_keys"] if x["id"] == k["id"]][0]
        self.assertNotIn("key", mine)
        self.assertIsNotNone(mine["last_used_at"])
        # bad input
        for body, param in (({"name": "x", "mode": "prod"}, "mode"),
                            ({"name": "x", "mode": "test", "scopes": ["root"]}, "scopes"),
                            ({"name": "x", "mode": "test", "expires_at": 1000}, "expires_at"),
                            ({"mode": "test"}, "name")):
            with self.subTest(body=body):
                self.assertError(self.p.call(owner, "POST", "/v1/api_keys", body), 400,
                                 "invalid_request", param)
        # keys never make keys, nor list them
        r = self.server.post("/v1/api_keys", {"name": "x", "mode": "test"}, key=k["key"])
        self.assertError(r, 403, "permission_denied")
        full = self.server.create_key(slug)
        self.assertError(self.server.get("/v1/api_keys", key=full), 403, "permission_denied")
        self.assertError(self.server.get("/v1/users", key=full), 403, "permission_denied")
        # deleted: refused at once (on every node: the requests alternate between them)
        r = self.p.call(owner, "DELETE", "/v1/api_keys/" + k["id"])
        self.assertEqual(r.json, {"id": k["id"], "deleted": True})
        for _ in range(4):
            self.assertError(self.server.get("/v1/employees", key=k["key"]), 401,
                             "invalid_api_key")
        self.assertError(self.p.call(owner, "DELETE", "/v1/api_keys/" + k["id"]), 404,
                         "api_key_not_found", "id")
        ids = [x["id"] for x in self.p.call(owner, "GET", "/v1/api_keys").json["api_keys"]]
        self.assertNotIn(k["id"], ids)

    def test_secret_answers_replay_sealed(self):
        slug, owner = self.org("seal")
        h = {"Idempotency-Key": "mk-1"}
        a = self.p.call(owner, "POST", "/v1/api_keys", {"name": "n", "mode": "test"}, headers=h)
        b = self.p.call(owner, "POST", "/v1/api_keys", {"name": "n", "mode": "test"}, headers=h)
        self.assertEqual(b.header("Idempotent-Replayed"), "true")
        self.assertEqual(a.json, b.json)
        inv_h = {"Idempotency-Key": "inv-1"}
        i1 = self.p.call(owner, "POST", "/v1/users", {"email": "s@%s.test" % slug, "role": "viewer"},
                         headers=inv_h)
        i2 = self.p.call(owner, "POST", "/v1/users", {"email": "s@%s.test" % slug, "role": "viewer"},
                         headers=inv_h)
        self.assertEqual(i1.json, i2.json)
        if not PG_URL:
            db = sqlite3.connect("file:%s?mode=ro" % self.server.db, uri=True)
            try:
                bodies = b"".join(bytes(row[0] or b"") for row in
                                  db.execute("SELECT body FROM idempotency_keys"))
            finally:
                db.close()
            self.assertNotIn(a.json["key"].encode(), bodies)
            self.assertNotIn(i1.json["set_password_url"].split("token=")[1].encode(), bodies)

    # -- the audit log --

    def test_audit_log(self):
        slug, owner = self.org("aud")
        t0 = int(time.time()) - 1
        member = self.p.member_of(owner, "m@%s.test" % slug, "member")
        self.server.post("/v1/sessions", {"email": "m@%s.test" % slug, "password": "bad guess!!!!"})
        key = self.server.create_key(slug)
        r = self.server.post("/v1/employees", {"name": "Eve", "role": "r", "category": "sales"},
                             key=key)
        emp = self.assertJson(r)["id"]
        r = self.p.call(owner, "PATCH", "/v1/employees/" + emp, {"name": "Eva"})
        self.assertEqual(r.status, 200, r)
        r = self.p.call(owner, "POST", "/v1/workflows",
                        {"name": "w", "trigger": {"type": "manual"},
                         "steps": [{"employee_id": emp, "action": "respond",
                                    "input": "{{trigger.text}}"}]})
        wf = self.assertJson(r)["id"]
        self.p.call(owner, "PATCH", "/v1/workflows/" + wf, {"name": "w2"})
        log = self.assertJson(self.p.call(owner, "GET", "/v1/audit_events?limit=100"))
        entries = log["audit_events"]
        acts = [(e["actor"]["type"], e["action"], (e["target"] or {}).get("id")) for e in entries]
        mid = member["user"]["id"]
        for want in (("user", "workflow.update", wf), ("user", "workflow.create", wf),
                     ("user", "employee.update", emp), ("api_key", "employee.create", emp),
                     ("user", "session.create_failed", mid), ("user", "session.create", None),
                     ("user", "user.set_password", mid), ("user", "user.create", mid),
                     ("cli", "user.create", owner["user"]["id"]), ("cli", "api_key.create", None)):
            with self.subTest(want=want):
                self.assertTrue(any(a[:2] == want[:2] and (want[2] is None or a[2] == want[2])
                                    for a in acts), acts)
        # newest first; who, where, which request
        times = [e["created_at"] for e in entries]
        self.assertEqual(times, sorted(times, reverse=True))
        wu = [e for e in entries if e["action"] == "workflow.update"][0]
        self.assertEqual(wu["actor"], {"type": "user", "id": owner["user"]["id"],
                                       "label": "owner@%s.test" % slug})
        self.assertEqual(wu["ip"], "127.0.0.1")
        self.assertEqual(wu["mode"], "live")
        self.assertRegex(wu["request_id"], r"^req_")
        ec = [e for e in entries if e["action"] == "employee.create"][0]
        self.assertEqual(ec["actor"]["label"], "svc_live_sk_…" + key[-4:])
        # filters
        for q, pred in (("action=workflow.update", lambda e: e["action"] == "workflow.update"),
                        ("actor_id=" + mid, lambda e: e["actor"]["id"] == mid),
                        ("target_id=" + emp, lambda e: (e["target"] or {}).get("id") == emp),
                        ("since=%d" % t0, lambda e: True)):
            got = self.p.call(owner, "GET", "/v1/audit_events?" + q).json["audit_events"]
            self.assertTrue(got and all(pred(e) for e in got), (q, got))
        self.assertEqual(self.p.call(owner, "GET", "/v1/audit_events?since=%d" % (t0 + 100000))
                         .json["audit_events"], [])
        self.assertError(self.p.call(owner, "GET", "/v1/audit_events?since=yesterday"), 400,
                         "invalid_request", "since")
        # pages
        p1 = self.p.call(owner, "GET", "/v1/audit_events?limit=2").json
        p2 = self.p.call(owner, "GET", "/v1/audit_events?limit=2&before=" + p1["next_cursor"]).json
        self.assertEqual([e["id"] for e in p1["audit_events"] + p2["audit_events"]],
                         [e["id"] for e in entries[:4]])
        # who reads it: admins and owners, a key only with `audit` named
        self.assertError(self.p.call(member, "GET", "/v1/audit_events"), 403, "permission_denied")
        self.assertError(self.server.get("/v1/audit_events", key=key), 403, "permission_denied")
        akey = self.server.create_key(slug, scopes="audit")
        self.assertEqual(self.server.get("/v1/audit_events", key=akey).status, 200)
        # no entry holds a secret
        text = json.dumps(self.p.call(owner, "GET", "/v1/audit_events?limit=100").json)
        for secret in (PASSWORD, "bad guess", key, owner["cookie"].split("=")[1], owner["csrf"]):
            self.assertNotIn(secret, text)
        # nothing changes or deletes an entry
        eid = entries[0]["id"]
        for method in ("PATCH", "DELETE", "PUT"):
            r = self.p.call(owner, method, "/v1/audit_events/" + eid, {} if method != "DELETE"
                            else None)
            self.assertIn(r.status, (404, 405), r)
        self.assertEqual(self.p.call(owner, "GET", "/v1/audit_events?limit=100").json
                         ["audit_events"][-1]["id"], entries[-1]["id"])

    def test_the_cli_reads_the_log(self):
        slug, owner = self.org("cli")
        self.p.invite(owner, "v@%s.test" % slug, "viewer")
        p = self.server.cli("audit", "--org", slug, "--limit", "5")
        self.assertEqual(p.returncode, 0, p.stderr)
        lines = p.stdout.strip().splitlines()
        self.assertIn("\tuser.create\t", lines[0])
        self.assertIn("\towner@%s.test\t" % slug, lines[0])
        p = self.server.cli("users", "list", "--org", slug)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("v@%s.test\tviewer\tactive" % slug, p.stdout)
        p = self.server.cli("users", "disable", "--org", slug, "--email", "owner@%s.test" % slug)
        self.assertNotEqual(p.returncode, 0)  # the last owner
        self.assertIn("last owner", p.stderr)
        p = self.server.cli("users", "disable", "--org", slug, "--email", "v@%s.test" % slug)
        self.assertEqual(p.returncode, 0, p.stderr)
        p = self.server.cli("users", "create", "--org", slug, "--email", "nope", "--role", "owner")
        self.assertEqual(p.returncode, 2)
        # the command line's other changes are entries too, the cli their actor
        key = self.server.create_key(slug, mode="test")
        emp = self.server.get("/v1/employees?limit=1", key=key).json["employees"][0]["id"]
        self.assertEqual(self.server.cli("orgs", "update", slug, "--credits", "5").returncode, 0)
        self.assertEqual(self.server.cli("employees", "update", emp, "--tier", "manager")
                         .returncode, 0)
        kid = self.server.key_id(slug, key)
        self.assertEqual(self.server.revoke(kid).returncode, 0)
        log = self.p.call(owner, "GET", "/v1/audit_events?limit=10").json["audit_events"]
        got = [(e["actor"]["type"], e["action"], e["target"]["id"], e["mode"]) for e in log[:4]]
        self.assertEqual(got, [("cli", "api_key.delete", kid, "test"),
                               ("cli", "employee.update", emp, "test"),
                               ("cli", "organization.update", log[2]["target"]["id"], "live"),
                               ("cli", "api_key.create", kid, "test")])

    def test_organizations_are_apart(self):
        _, a = self.org("iso-a")
        slug_b, b = self.org("iso-b")
        self.p.invite(b, "x@%s.test" % slug_b, "viewer")
        kb = self.p.call(b, "POST", "/v1/api_keys", {"name": "b", "mode": "test"}).json
        users_a = [u["email"] for u in self.p.call(a, "GET", "/v1/users").json["users"]]
        self.assertEqual(len(users_a), 1)
        self.assertError(self.p.call(a, "GET", "/v1/users/" + b["user"]["id"]), 404,
                         "user_not_found", "id")
        self.assertError(self.p.call(a, "PATCH", "/v1/users/" + b["user"]["id"],
                                     {"role": "viewer"}), 404, "user_not_found", "id")
        self.assertError(self.p.call(a, "DELETE", "/v1/api_keys/" + kb["id"]), 404,
                         "api_key_not_found", "id")
        self.assertNotIn(kb["id"], json.dumps(self.p.call(a, "GET", "/v1/api_keys").json))
        log_a = json.dumps(self.p.call(a, "GET", "/v1/audit_events?limit=100").json)
        self.assertNotIn(b["user"]["id"], log_a)
        self.assertNotIn(kb["id"], log_a)


class SecureCookieTest(ServerTestCase):
    server_env = {"WORKFORCE_PUBLIC_URL": "https://workforce.example.com"}

    def test_cookie_is_secure_behind_https(self):
        p = People(self)
        s = p.owner("sec", "owner@sec.test")
        r = self.server.post("/v1/sessions", {"email": "owner@sec.test", "password": PASSWORD})
        self.assertIn("; Secure", r.header("Set-Cookie"))
        self.assertTrue(s["csrf"])

    def test_untrusted_forwarded_for(self):
        """Without WORKFORCE_TRUSTED_PROXIES, X-Forwarded-For changes nothing: the lockout
        counts the peer's address whatever the header says."""
        p = People(self)
        p.owner("fwd", "owner@fwd.test")
        for i in range(10):
            self.server.post("/v1/sessions", {"email": "owner@fwd.test", "password": "x" * 12},
                             headers={"X-Forwarded-For": "203.0.113.%d" % i})
        r = self.server.post("/v1/sessions", {"email": "owner@fwd.test", "password": PASSWORD},
                             headers={"X-Forwarded-For": "203.0.113.99"})
        self.assertEqual(r.status, 429, r)
        self.assertEqual(r.json["error"]["code"], "too_many_sign_in_attempts")


class PeopleLimitsTest(ServerTestCase):
    """A person is limited per user, apart from the organization's keys; the MCP server's tools
    follow the roles too; passwords are kept as argon2id only."""

    server_env = {
        "WORKFORCE_RATE_LIMITS": "starter:100000/100000/100,manager:100000/100000/100,"
                                 "agency:100000/100000/100",
        "WORKFORCE_SESSION_RATE_LIMIT": "1000/8/5",
    }

    def test_a_person_has_limits_of_its_own(self):
        p = People(self)
        owner = p.owner("lim", "owner@lim.test")
        colleague = p.member_of(owner, "c@lim.test", "member")
        key = self.server.create_key("lim", mode="test")  # Starter limits would apply to it
        codes = [p.call(owner, "GET", "/v1/employees").status for _ in range(12)]
        self.assertIn(429, codes)
        r = p.call(owner, "GET", "/v1/employees")
        self.assertError(r, 429, "rate_limit_exceeded")
        self.assertEqual(r.header("X-RateLimit-Limit"), "1000")
        # the organization's key is not spent by the person, nor another person of it
        self.assertEqual(self.server.get("/v1/employees", key=key).status, 200)
        self.assertEqual(p.call(colleague, "GET", "/v1/employees").status, 200)

    def test_mcp_tools_by_role(self):
        p = People(self)
        owner = p.owner("mcp", "owner@mcp.test")
        viewer = p.member_of(owner, "v@mcp.test", "viewer")

        def rpc(s, method, params=None):
            msg = {"jsonrpc": "2.0", "id": 1, "method": method}
            if params is not None:
                msg["params"] = params
            return self.assertJson(p.call(s, "POST", "/v1/mcp", msg))

        owner_tools = {t["name"] for t in rpc(owner, "tools/list")["result"]["tools"]}
        viewer_tools = {t["name"] for t in rpc(viewer, "tools/list")["result"]["tools"]}
        self.assertIn("create_task", owner_tools)
        self.assertNotIn("create_task", viewer_tools)  # a member's tool
        self.assertIn("list_employees", viewer_tools)
        res = rpc(viewer, "tools/call", {"name": "create_task",
                                         "arguments": {"title": "x", "employee_id": "emp_x"}})
        self.assertTrue(res["result"]["isError"], res)
        self.assertIn("permission_denied", res["result"]["content"][0]["text"])

    @sqlite_only("reads the SQLite file")
    def test_passwords_at_rest(self):
        p = People(self)
        p.owner("rest", "owner@rest.test", "a secret password 42")
        db = sqlite3.connect("file:%s?mode=ro" % self.server.db, uri=True)
        try:
            rows = db.execute("SELECT password FROM users WHERE email = 'owner@rest.test'").fetchall()
            dump = "\n".join(db.iterdump())
        finally:
            db.close()
        self.assertTrue(rows[0][0].startswith("$argon2id$v=19$m=19456,t=2,p=1$"), rows)
        self.assertNotIn("a secret password 42", dump)
        self.assertNotIn("a secret password 42", self.server.log_text())
