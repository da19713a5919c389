# SPDX-License-Identifier: MIT
"""The MCP servers of an organization (issue 27, contract §19), black-box, against a real peer:
an MCP server built with the official TypeScript SDK (tests/npm/mcp_server.mjs) on 127.0.0.1,
answering JSON or event streams, with a tools/list of 3 pages, a read-only tool, a tool error
and a path that needs an Authorization header.

- CRUD: create (the tool list read at once), read, list (newest first, `before`, `limit`),
  update, delete, refresh; every member of a bad body refused with its `param`; a name taken is
  409 `mcp_server_name_taken`; at most 16 servers per organization and mode.
- Header values are sent to the peer, never answered, logged, or written in clear to the
  database (the SQLite files' bytes are read; on PostgreSQL the table is).
- A server that cannot be read is stored with status "error" (200); a failed refresh keeps the
  tools last read, shown unavailable by GET /v1/tools, which lists `mcp.<server>.<tool>` for the
  enabled servers (names that are not well formed skipped).
- Addresses: the peer is on 127.0.0.1, so these classes run with
  WORKFORCE_MCP_ALLOW_PRIVATE=1; a server without it refuses private addresses (a literal at
  once, 400; a name when connecting, status "error"); cloud metadata is refused with it too.
- Another organization, and the other key mode, see none of it.
"""

import glob
import json
import os
import select
import socket
import subprocess
import time
import uuid

import harness
from harness import GENEROUS_LIMITS, REPO_ROOT, TS_RE, ServerTestCase

SERVER_FIELDS = {"id", "name", "url", "header_names", "enabled", "status", "error", "tools",
                 "refreshed_at", "created_at"}
PEER_TOOLS = ["echo", "add", "fail", "secret", "sleep", "structured", "mixed", "files.read",
              "Bad Name!"]
NO_SERVER = "mcp_" + "Z" * 24


class Peer:
    """`node tests/npm/mcp_server.mjs` on a free port of 127.0.0.1 (it prints the port)."""

    def __init__(self):
        self.proc = subprocess.Popen(
            ["node", os.path.join(REPO_ROOT, "tests", "npm", "mcp_server.mjs")], cwd=REPO_ROOT,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        deadline = time.time() + 30
        line = b""
        fd = self.proc.stdout.fileno()
        while not line.endswith(b"\n"):
            left = deadline - time.time()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                break
            c = os.read(fd, 64)
            if not c:
                break
            line += c
        if not line.startswith(b"listening "):
            self.stop()
            raise RuntimeError("the MCP peer did not start: %r" % line)
        self.port = int(line.split()[1])

    def url(self, path):
        return "http://127.0.0.1:%d/%s" % (self.port, path)

    def stats(self):
        import http.client
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        try:
            c.request("GET", "/stats")
            return json.loads(c.getresponse().read())
        finally:
            c.close()

    def stop(self):
        if self.proc.poll() is None:
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def closed_port():
    """A port of 127.0.0.1 nobody listens on."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class McpServersBase(ServerTestCase):
    server_env = {"WORKFORCE_RATE_LIMITS": GENEROUS_LIMITS, "WORKFORCE_MCP_ALLOW_PRIVATE": "1"}
    peer = None

    @classmethod
    def setUpServer(cls):
        cls.peer = Peer()
        cls.org = "mcps-" + uuid.uuid4().hex[:6]
        cls.key = cls.server.create_key(cls.org, mode="test")

    @classmethod
    def tearDownClass(cls):
        if cls.peer:
            cls.peer.stop()
        super().tearDownClass()

    def new_tenant(self, mode="test"):
        return self.server.create_key("mcps-" + uuid.uuid4().hex[:8], mode=mode)

    def create(self, key=None, **body):
        body.setdefault("name", "s" + uuid.uuid4().hex[:10])
        body.setdefault("url", self.peer.url("json"))
        return self.server.post("/v1/mcp_servers", body, key=key or self.key, timeout=60)

    def created(self, key=None, **body):
        r = self.create(key=key, **body)
        return self.assertServer(self.assertJson(r))

    def delete(self, sid, key=None):
        return self.server.request("DELETE", "/v1/mcp_servers/" + sid, key=key or self.key)

    def assertServer(self, s):
        self.assertEqual(set(s), SERVER_FIELDS, s)
        self.assertRegex(s["id"], r"^mcp_[A-Za-z0-9]{20,}$")
        self.assertIn(s["status"], ("ok", "error"))
        self.assertEqual(s["error"] is None, s["status"] == "ok", s)
        self.assertRegex(s["created_at"], TS_RE)
        for t in s["tools"]:
            self.assertEqual(set(t), {"name", "description", "effect"}, t)
        return s


class McpServersTest(McpServersBase):

    def test_create_read_list_delete(self):
        srv = self.server
        r = self.create(name="crm", url=self.peer.url("json"),
                        headers={"Authorization": "Bearer s3cret"})
        s = self.assertServer(self.assertJson(r))
        self.assertEqual((s["name"], s["url"], s["enabled"], s["status"], s["error"]),
                         ("crm", self.peer.url("json"), True, "ok", None))
        self.assertEqual(s["header_names"], ["Authorization"])
        self.assertEqual([t["name"] for t in s["tools"]], PEER_TOOLS)
        effects = {t["name"]: t["effect"] for t in s["tools"]}
        self.assertEqual(effects["echo"], "read")
        self.assertEqual(effects["files.read"], "read")
        self.assertEqual(effects["fail"], "write")
        self.assertEqual(effects["secret"], "write")
        self.assertEqual({t["name"]: t["description"] for t in s["tools"]}["add"],
                         "Add two numbers.")
        self.assertRegex(s["refreshed_at"], TS_RE)
        self.assertNotIn(b"s3cret", r.body)
        got = self.assertJson(srv.get("/v1/mcp_servers/" + s["id"], key=self.key))
        self.assertEqual(got, s)
        page = self.assertJson(srv.get("/v1/mcp_servers", key=self.key))
        self.assertIn(s["id"], [x["id"] for x in page["mcp_servers"]])
        self.assertEqual(self.peer.stats()["last"]["json"]["authorization"], "Bearer s3cret",
                         "the header reached the server")
        d = self.assertJson(self.delete(s["id"]))
        self.assertEqual(d, {"id": s["id"], "deleted": True})
        self.assertError(srv.get("/v1/mcp_servers/" + s["id"], key=self.key), 404,
                         "mcp_server_not_found", "id")
        self.assertError(self.delete(s["id"]), 404, "mcp_server_not_found", "id")

    def test_answers_of_every_kind(self):
        for path in ("json", "sse", "stateless"):
            with self.subTest(path=path):
                s = self.created(url=self.peer.url(path))
                self.assertEqual(s["status"], "ok", s)
                self.assertEqual([t["name"] for t in s["tools"]], PEER_TOOLS)
                self.delete(s["id"])

    def test_disabled_at_creation(self):
        s = self.created(enabled=False)
        self.assertFalse(s["enabled"])
        self.assertEqual(s["status"], "ok", "its tools are read all the same")
        self.delete(s["id"])

    def test_validation(self):
        srv = self.server
        long_name = "a" * 33
        cases = [
            ({"url": self.peer.url("json")}, "name"),
            ({"name": "", "url": self.peer.url("json")}, "name"),
            ({"name": "Bad-Name", "url": self.peer.url("json")}, "name"),
            ({"name": "has.dot", "url": self.peer.url("json")}, "name"),
            ({"name": long_name, "url": self.peer.url("json")}, "name"),
            ({"name": 5, "url": self.peer.url("json")}, "name"),
            ({"name": "ok_name"}, "url"),
            ({"name": "ok_name", "url": ""}, "url"),
            ({"name": "ok_name", "url": "ftp://example.com/"}, "url"),
            ({"name": "ok_name", "url": "example.com/mcp"}, "url"),
            ({"name": "ok_name", "url": "https://user:pw@example.com/mcp"}, "url"),
            ({"name": "ok_name", "url": "https://example.com/mcp#frag"}, "url"),
            ({"name": "ok_name", "url": "https://example.com/" + "a" * 2040}, "url"),
            ({"name": "ok_name", "url": "http://169.254.169.254/latest"}, "url"),
            ({"name": "ok_name", "url": "http://[fd00:ec2::254]/"}, "url"),
            ({"name": "ok_name", "url": "http://[::ffff:169.254.169.254]/"}, "url"),
            ({"name": "ok_name", "url": 7}, "url"),
            ({"name": "ok_name", "url": self.peer.url("json"), "headers": []}, "headers"),
            ({"name": "ok_name", "url": self.peer.url("json"), "headers": "x"}, "headers"),
            ({"name": "ok_name", "url": self.peer.url("json"), "headers": {"Bad Name": "v"}},
             "headers"),
            ({"name": "ok_name", "url": self.peer.url("json"), "headers": {"": "v"}}, "headers"),
            ({"name": "ok_name", "url": self.peer.url("json"), "headers": {"Host": "evil"}},
             "headers"),
            ({"name": "ok_name", "url": self.peer.url("json"),
              "headers": {"content-type": "text/plain"}}, "headers"),
            ({"name": "ok_name", "url": self.peer.url("json"),
              "headers": {"Mcp-Session-Id": "x"}}, "headers"),
            ({"name": "ok_name", "url": self.peer.url("json"),
              "headers": {"X-A": "1", "x-a": "2"}}, "headers"),
            ({"name": "ok_name", "url": self.peer.url("json"),
              "headers": {"X-%d" % i: "v" for i in range(17)}}, "headers"),
            ({"name": "ok_name", "url": self.peer.url("json"),
              "headers": {"X-Key": "a\r\nInjected: 1"}}, "headers.X-Key"),
            ({"name": "ok_name", "url": self.peer.url("json"), "headers": {"X-Key": "a\nb"}},
             "headers.X-Key"),
            ({"name": "ok_name", "url": self.peer.url("json"), "headers": {"X-Key": ""}},
             "headers.X-Key"),
            ({"name": "ok_name", "url": self.peer.url("json"), "headers": {"X-Key": 5}},
             "headers.X-Key"),
            ({"name": "ok_name", "url": self.peer.url("json"), "headers": {"X-Key": None}},
             "headers.X-Key"),
            ({"name": "ok_name", "url": self.peer.url("json"),
              "headers": {"X-Key": "v" * 4097}}, "headers.X-Key"),
            ({"name": "ok_name", "url": self.peer.url("json"), "enabled": "yes"}, "enabled"),
            ({"name": "ok_name", "url": self.peer.url("json"), "tools": []}, "tools"),
        ]
        before = len(self.assertJson(srv.get("/v1/mcp_servers?limit=100",
                                             key=self.key))["mcp_servers"])
        for body, param in cases:
            with self.subTest(body=json.dumps(body)[:120]):
                r = srv.post("/v1/mcp_servers", body, key=self.key)
                err = self.assertError(r, 400, "invalid_request", param)
                self.assertNotIn("Injected", err["message"])
        after = len(self.assertJson(srv.get("/v1/mcp_servers?limit=100",
                                            key=self.key))["mcp_servers"])
        self.assertEqual(before, after, "nothing was created")
        ok = self.created(headers={"X-" + "k" * 98: "v" * 4096, "Authorization": "Bearer x"})
        self.assertEqual(sorted(ok["header_names"]), sorted(["X-" + "k" * 98, "Authorization"]))
        self.delete(ok["id"])
        s = self.created()
        for body, param in (({"name": "Bad"}, "name"), ({"url": "gopher://x/"}, "url"),
                            ({"headers": {"A": "b\rc"}}, "headers.A"),
                            ({"enabled": 1}, "enabled"), ({"id": "mcp_x"}, "id")):
            with self.subTest(patch=body):
                r = srv.patch("/v1/mcp_servers/" + s["id"], body, key=self.key)
                self.assertError(r, 400, "invalid_request", param)
        self.assertEqual(self.assertJson(srv.get("/v1/mcp_servers/" + s["id"], key=self.key)), s,
                         "a refused PATCH changes nothing")
        self.assertError(srv.post("/v1/mcp_servers/%s/refresh" % s["id"], {"x": 1}, key=self.key),
                         400, "invalid_request", "x")
        self.delete(s["id"])

    def test_name_taken(self):
        srv = self.server
        name = "dup_" + uuid.uuid4().hex[:6]
        a = self.created(name=name)
        self.assertError(self.create(name=name), 409, "mcp_server_name_taken", "name")
        other = self.new_tenant()
        b = self.created(key=other, name=name)  # names are per organization
        self.delete(b["id"], key=other)
        c = self.created()
        self.assertError(srv.patch("/v1/mcp_servers/" + c["id"], {"name": name}, key=self.key),
                         409, "mcp_server_name_taken", "name")
        same = srv.patch("/v1/mcp_servers/" + a["id"], {"name": name}, key=self.key)
        self.assertEqual(self.assertJson(same)["name"], name, "its own name is no conflict")
        self.delete(a["id"])
        self.delete(c["id"])

    def test_bound(self):
        key = self.new_tenant()
        ids = [self.created(key=key, url=self.peer.url("stateless"))["id"] for _ in range(16)]
        err = self.assertError(self.create(key=key), 400, "invalid_request")
        self.assertIn("16", err["message"])
        for sid in ids:
            self.delete(sid, key=key)

    def test_headers_never_in_clear(self):
        srv = self.server
        canary = "canary-" + uuid.uuid4().hex
        s = self.created(url=self.peer.url("auth"),
                         headers={"Authorization": "Bearer s3cret", "X-Canary": canary})
        self.assertEqual(s["status"], "ok", s)
        self.assertEqual(sorted(s["header_names"]), ["Authorization", "X-Canary"])
        answers = [srv.get("/v1/mcp_servers/" + s["id"], key=self.key),
                   srv.get("/v1/mcp_servers", key=self.key),
                   srv.post("/v1/mcp_servers/%s/refresh" % s["id"], key=self.key),
                   srv.patch("/v1/mcp_servers/" + s["id"], {"enabled": True}, key=self.key),
                   srv.patch("/v1/mcp_servers/" + s["id"], {"url": self.peer.url("auth")},
                             key=self.key),
                   srv.get("/v1/tools", key=self.key)]
        for r in answers:
            self.assertEqual(r.status, 200, r)
            self.assertNotIn(canary.encode(), r.body)
            self.assertNotIn(b"s3cret", r.body)
        self.assertEqual(self.assertJson(answers[4])["status"], "ok",
                         "the sealed headers were opened and sent again")
        if harness.PG_URL:
            out = subprocess.run(
                ["psql", harness.pg_database_url(srv.pg_db), "-At", "-c",
                 "SELECT id, url, header_names, encode(headers, 'escape'), tools FROM mcp_servers"],
                capture_output=True, timeout=60, stdin=subprocess.DEVNULL).stdout
            self.assertIn(s["id"].encode(), out)
        else:
            out = b"".join(open(f, "rb").read() for f in glob.glob(srv.db + "*"))
            self.assertIn(s["id"].encode(), out, "the database files were read")
        self.assertIn(b"X-Canary", out, "the names are kept in clear")
        self.assertNotIn(canary.encode(), out)
        self.assertNotIn(b"s3cret", out)
        self.assertNotIn(canary, srv.log_text())
        self.delete(s["id"])

    def test_refresh_and_patch(self):
        srv = self.server
        s = self.created(url=self.peer.url("auth"), headers={"Authorization": "Bearer s3cret"})
        self.assertEqual(s["status"], "ok", s)
        harness.next_millisecond()  # the refresh's time is then later than the creation's
        r = self.assertServer(self.assertJson(
            srv.post("/v1/mcp_servers/%s/refresh" % s["id"], key=self.key, timeout=60)))
        self.assertEqual(r["status"], "ok")
        self.assertGreater(r["refreshed_at"], s["refreshed_at"])
        # the headers removed: the server refuses, the tools last read are kept
        p = self.assertServer(self.assertJson(
            srv.patch("/v1/mcp_servers/" + s["id"], {"headers": {}}, key=self.key, timeout=60)))
        self.assertEqual(p["status"], "error")
        self.assertEqual(p["header_names"], [])
        self.assertIn("401", p["error"])
        self.assertEqual([t["name"] for t in p["tools"]], PEER_TOOLS)
        tools = {t["name"]: t for t in self.assertJson(srv.get("/v1/tools", key=self.key))["tools"]}
        self.assertFalse(tools["mcp.%s.echo" % s["name"]]["available"],
                         "a server in error: its tools are unavailable")
        p = self.assertJson(srv.patch("/v1/mcp_servers/" + s["id"],
                                      {"headers": {"Authorization": "Bearer s3cret"}},
                                      key=self.key, timeout=60))
        self.assertEqual((p["status"], p["error"]), ("ok", None))
        # a new URL: read there; one that does not answer has no tools
        down = "http://127.0.0.1:%d/mcp" % closed_port()
        p = self.assertJson(srv.patch("/v1/mcp_servers/" + s["id"], {"url": down}, key=self.key,
                                      timeout=60))
        self.assertEqual((p["status"], p["error"], p["tools"], p["url"]),
                         ("error", "connection refused", [], down))
        r = self.assertJson(srv.post("/v1/mcp_servers/%s/refresh" % s["id"], key=self.key))
        self.assertEqual(r["status"], "error")
        p = self.assertJson(srv.patch("/v1/mcp_servers/" + s["id"],
                                      {"url": self.peer.url("sse"), "name": "renamed_" +
                                       s["name"][:8], "enabled": False}, key=self.key,
                                      timeout=60))
        self.assertEqual((p["status"], p["enabled"], p["name"]),
                         ("ok", False, "renamed_" + s["name"][:8]))
        self.assertEqual(len(p["tools"]), len(PEER_TOOLS))
        self.assertEqual(self.assertJson(srv.get("/v1/mcp_servers/" + s["id"], key=self.key)), p)
        self.assertError(srv.post("/v1/mcp_servers/%s/refresh" % NO_SERVER, key=self.key), 404,
                         "mcp_server_not_found", "id")
        self.assertError(srv.patch("/v1/mcp_servers/" + NO_SERVER, {"enabled": True},
                                   key=self.key), 404, "mcp_server_not_found", "id")
        self.delete(s["id"])

    def test_unreachable_at_creation(self):
        url = "http://127.0.0.1:%d/mcp" % closed_port()
        s = self.created(url=url)
        self.assertEqual((s["status"], s["error"], s["tools"]), ("error", "connection refused", []))
        self.assertRegex(s["refreshed_at"], TS_RE)
        for path, why in (("raw/text", "neither JSON nor an event stream"),
                          ("raw/old", "protocol version 2024-11-05"),
                          ("nowhere", "HTTP 404"), ("pages70", "more than 64 pages"),
                          ("tools1001", "more than 1000 tools")):
            with self.subTest(path=path):
                s2 = self.created(url=self.peer.url(path))
                self.assertEqual(s2["status"], "error")
                self.assertIn(why, s2["error"])
                self.delete(s2["id"])
        self.delete(s["id"])

    def test_pagination(self):
        srv = self.server
        key = self.new_tenant()
        ids = []
        for _ in range(5):
            ids.append(self.created(key=key, url=self.peer.url("stateless"))["id"])
            harness.next_millisecond()
        seen, cursor = [], None
        while True:
            path = "/v1/mcp_servers?limit=2" + ("&before=" + cursor if cursor else "")
            page = self.assertJson(srv.get(path, key=key))
            self.assertLessEqual(len(page["mcp_servers"]), 2)
            seen += [x["id"] for x in page["mcp_servers"]]
            if not page["has_more"]:
                self.assertIsNone(page["next_cursor"])
                break
            cursor = page["next_cursor"]
        self.assertEqual(seen, list(reversed(ids)), "newest first, each once")
        for q in ("limit=0", "limit=101", "limit=x"):
            self.assertError(srv.get("/v1/mcp_servers?" + q, key=key), 400, "invalid_request",
                             "limit")
        self.assertError(srv.get("/v1/mcp_servers?before=nope", key=key), 400, "invalid_request",
                         "before")
        self.assertError(srv.get("/v1/mcp_servers?status=ok", key=key), 400, "invalid_request",
                         "status")
        for sid in ids:
            self.delete(sid, key=key)

    def test_isolation(self):
        srv = self.server
        s = self.created()
        org_b = self.new_tenant()
        live = self.server.create_key(self.org, mode="live")
        for k in (org_b, live):
            with self.subTest(key=k[:12]):
                self.assertEqual(self.assertJson(srv.get("/v1/mcp_servers", key=k))["mcp_servers"],
                                 [])
                path = "/v1/mcp_servers/" + s["id"]
                self.assertError(srv.get(path, key=k), 404, "mcp_server_not_found", "id")
                self.assertError(srv.patch(path, {"enabled": False}, key=k), 404,
                                 "mcp_server_not_found", "id")
                self.assertError(srv.post(path + "/refresh", key=k), 404, "mcp_server_not_found",
                                 "id")
                self.assertError(self.delete(s["id"], key=k), 404, "mcp_server_not_found", "id")
                names = [t["name"] for t in self.assertJson(srv.get("/v1/tools", key=k))["tools"]]
                self.assertFalse([n for n in names if n.startswith("mcp.")], names)
        self.assertTrue(self.assertJson(srv.get("/v1/mcp_servers/" + s["id"], key=self.key))
                        ["enabled"], "untouched")
        self.delete(s["id"])

    def test_scopes(self):
        srv = self.server
        for scopes, status in (("tools", 200), ("employees:read", 403), ("webhooks", 403)):
            with self.subTest(scopes=scopes):
                k = srv.create_key(self.org, mode="test", scopes=scopes)
                r = srv.get("/v1/mcp_servers", key=k)
                self.assertEqual(r.status, status, r)
                if status == 403:
                    self.assertError(r, 403, "permission_denied")
                    self.assertError(srv.post("/v1/mcp_servers", {"name": "x", "url": "https://e.x/"},
                                              key=k), 403, "permission_denied")

    def test_tools_listing(self):
        srv = self.server
        key = self.new_tenant()
        a = self.created(key=key, name="peer_a", url=self.peer.url("sse"))
        off = self.created(key=key, name="peer_off", url=self.peer.url("json"), enabled=False)
        tools = {t["name"]: t for t in self.assertJson(srv.get("/v1/tools", key=key))["tools"]}
        mcp = sorted(n for n in tools if n.startswith("mcp."))
        self.assertEqual(mcp, sorted("mcp.peer_a." + n for n in PEER_TOOLS if n != "Bad Name!"),
                         "the enabled server's tools, well-formed names only")
        echo = tools["mcp.peer_a.echo"]
        self.assertEqual((echo["source"], echo["effect"], echo["available"], echo["description"]),
                         ("mcp", "read", True, "Echo the text back."))
        self.assertEqual(echo["input_schema"]["required"], ["text"])
        self.assertEqual(tools["mcp.peer_a.fail"]["effect"], "write")
        self.assertIn("mcp.peer_a.files.read", tools)
        self.assertIn("knowledge.search", tools, "the built-in tools are still there")
        # enabling the other adds its tools; a rule may name them
        self.assertJson(srv.patch("/v1/mcp_servers/" + off["id"], {"enabled": True}, key=key))
        names = {t["name"] for t in self.assertJson(srv.get("/v1/tools", key=key))["tools"]}
        self.assertIn("mcp.peer_off.add", names)
        self.delete(a["id"], key=key)
        names = {t["name"] for t in self.assertJson(srv.get("/v1/tools", key=key))["tools"]}
        self.assertNotIn("mcp.peer_a.echo", names, "a deleted server's tools are gone")
        self.delete(off["id"], key=key)


class McpServersPrivateTest(McpServersBase):
    """A server without WORKFORCE_MCP_ALLOW_PRIVATE: the peer on 127.0.0.1 is out of reach."""

    server_env = {"WORKFORCE_RATE_LIMITS": GENEROUS_LIMITS}

    def test_private_refused(self):
        r = self.create(url=self.peer.url("json"))
        err = self.assertError(r, 400, "invalid_request", "url")
        self.assertIn("127.0.0.1 is a loopback address", err["message"])
        for url in ("http://10.0.0.1/mcp", "http://[::1]:%d/json" % self.peer.port,
                    "http://192.168.1.1/", "http://169.254.169.254/"):
            with self.subTest(url=url):
                self.assertError(self.create(url=url), 400, "invalid_request", "url")
        # a name is judged when connecting: stored, in error
        s = self.created(url="http://localhost:%d/json" % self.peer.port)
        self.assertEqual(s["status"], "error")
        self.assertRegex(s["error"], r"^address refused: (127\.0\.0\.1|::1) is a loopback address$")
        p = self.server.patch("/v1/mcp_servers/" + s["id"], {"url": self.peer.url("json")},
                              key=self.key)
        self.assertError(p, 400, "invalid_request", "url")
        self.delete(s["id"])
