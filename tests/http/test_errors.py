# SPDX-License-Identifier: MIT
"""Errors: routing (404/405), request ids, doc_url and /docs/errors pages, body size (413),
content type (415), JSON parsing and binding (400 with param), query parameters, and the
order of checks. The server must keep serving after every bad input."""

import json
import socket
import threading

from harness import (MIB, ERROR_CODES, REQ_ID_RE, ServerTestCase, raw_head, read_response)

VALID = {"name": "Ada", "role": "Analyst", "category": "finance"}


class RoutingTest(ServerTestCase):

    @classmethod
    def setUpServer(cls):
        cls.key = cls.server.create_key("err-routing")
        r = cls.server.get("/v1/employees?limit=1", key=cls.key)
        cls.emp_id = r.json["employees"][0]["id"]

    def test_route_not_found(self):
        cases = [
            ("GET", "/consoles"),
            ("GET", "/console/a/b"),
            ("GET", "/v1"),
            ("GET", "/v1/nope"),
            ("GET", "/v2/employees"),
            ("GET", "/v1/employees/%s/nope" % "emp_x"),
            ("GET", "/v1/employees/a/b/c/d"),
            ("POST", "/v1/nothing-here"),
            ("GET", "/docs/errors"),
            ("GET", "/healthzz"),
        ]
        for method, path in cases:
            for key in (None, self.key):
                with self.subTest(method=method, path=path, key=bool(key)):
                    r = self.server.request(method, path, key=key)
                    self.assertError(r, 404, "route_not_found")

    def test_method_not_allowed(self):
        e = self.emp_id
        cases = [
            ("DELETE", "/v1/employees", {"GET", "POST"}),
            ("PUT", "/v1/employees", {"GET", "POST"}),
            ("PUT", "/v1/employees/" + e, {"GET", "PATCH"}),
            ("DELETE", "/v1/employees/" + e, {"GET", "PATCH"}),
            ("POST", "/v1/employees/" + e, {"GET", "PATCH"}),
            ("POST", "/v1/employees/%s/stats" % e, {"GET"}),
            ("POST", "/healthz", {"GET"}),
            ("DELETE", "/readyz", {"GET"}),
            ("POST", "/metrics", {"GET"}),
            ("POST", "/v1/openapi.json", {"GET"}),
            ("PATCH", "/v1/account", {"GET"}),
            ("POST", "/docs/errors/invalid_request", {"GET"}),
        ]
        for method, path, allowed in cases:
            for key in (None, self.key):
                with self.subTest(method=method, path=path, key=bool(key)):
                    r = self.server.request(method, path, key=key)
                    self.assertError(r, 405, "method_not_allowed")
                    allow = r.header("Allow")
                    self.assertIsNotNone(allow, "no Allow header")
                    got = {m.strip().upper() for m in allow.split(",") if m.strip()}
                    got.discard("HEAD")
                    got.discard("OPTIONS")
                    self.assertEqual(got, allowed, allow)

    def test_route_checked_before_auth(self):
        # 404 and 405 come before 401, even with a bad key.
        r = self.server.get("/v1/nope", key="svc_live_sk_bogus")
        self.assertError(r, 404, "route_not_found")
        r = self.server.request("DELETE", "/v1/employees",
                                headers={"Authorization": "Basic abc"})
        self.assertError(r, 405, "method_not_allowed")


class RequestIdTest(ServerTestCase):

    @classmethod
    def setUpServer(cls):
        cls.key = cls.server.create_key("err-reqid")

    def test_generated_on_every_response(self):
        seen = set()
        reqs = [
            ("GET", "/healthz", None), ("GET", "/readyz", None), ("GET", "/metrics", None),
            ("GET", "/v1/openapi.json", None), ("GET", "/docs/errors/invalid_request", None),
            ("GET", "/v1/nope", None), ("DELETE", "/v1/employees", None),
            ("GET", "/v1/employees", None), ("GET", "/v1/employees", self.key),
            ("GET", "/v1/employees/emp_doesnotexist000000000", self.key),
            ("GET", "/v1/account", self.key),
        ]
        for method, path, key in reqs:
            with self.subTest(method=method, path=path):
                r = self.server.request(method, path, key=key)
                rid = r.header("X-Request-Id")
                self.assertIsNotNone(rid)
                self.assertRegex(rid, REQ_ID_RE)
                self.assertNotIn(rid, seen, "request ids must be unique")
                seen.add(rid)

    def test_sane_id_echoed(self):
        for rid in ["abc", "A.b-c_9", "x" * 128, "0123456789", "-", "req_custom.ID-1"]:
            for path, key in (("/healthz", None), ("/v1/account", self.key),
                              ("/v1/nope", None), ("/v1/employees", None)):
                with self.subTest(rid=rid, path=path):
                    r = self.server.get(path, key=key, headers={"X-Request-Id": rid})
                    self.assertEqual(r.header("X-Request-Id"), rid)

    def test_insane_id_replaced(self):
        for rid in ["x" * 129, "has space", "a/b", "semi;colon", "quote\"", "ümlaut".encode(
                "utf-8").decode("latin-1"), "a,b", "{json}", "tab\tin"]:
            for path, key in (("/healthz", None), ("/v1/account", self.key)):
                with self.subTest(rid=rid, path=path):
                    r = self.server.get(path, key=key, headers={"X-Request-Id": rid})
                    got = r.header("X-Request-Id")
                    self.assertNotEqual(got, rid)
                    self.assertRegex(got, REQ_ID_RE)

    def test_empty_id_replaced(self):
        s = self.server.connect()
        try:
            s.sendall(raw_head("GET", "/healthz", "127.0.0.1",
                               {"X-Request-Id": "", "Connection": "close"}))
            r = read_response(s)
        finally:
            s.close()
        self.assertEqual(r.status, 200)
        self.assertRegex(r.header("X-Request-Id", ""), REQ_ID_RE)


class DocsTest(ServerTestCase):

    @classmethod
    def setUpServer(cls):
        cls.key = cls.server.create_key("err-docs")

    def test_page_for_every_contract_code(self):
        for code in sorted(ERROR_CODES):
            with self.subTest(code=code):
                r = self.server.get("/docs/errors/" + code)
                self.assertEqual(r.status, 200, r)
                ct = r.header("Content-Type", "")
                self.assertTrue(ct.lower().startswith("text/html"), ct)
                self.assertIn(code.encode(), r.body)
                self.assertRequestId(r)

    def test_unknown_code_page(self):
        for code in ["no_such_code", "INVALID_REQUEST", "invalid_request.html", "x"]:
            with self.subTest(code=code):
                r = self.server.get("/docs/errors/" + code)
                self.assertError(r, 404, "route_not_found")

    def test_doc_url_is_served(self):
        r = self.server.get("/v1/employees")
        err = self.assertError(r, 401, "missing_api_key")
        self.assertTrue(err["doc_url"].startswith(self.server.base_url))
        path = err["doc_url"][len(self.server.base_url):]
        self.assertEqual(path, "/docs/errors/missing_api_key")
        r = self.server.get(path)
        self.assertEqual(r.status, 200)
        self.assertTrue(r.header("Content-Type", "").startswith("text/html"))


class BodyTest(ServerTestCase):
    """413, 415, malformed JSON and binding errors on POST/PATCH /v1/employees."""

    @classmethod
    def setUpServer(cls):
        cls.key = cls.server.create_key("err-body")
        cls.ro_key = cls.server.create_key("err-body", scopes="employees:read")
        r = cls.server.post("/v1/employees", dict(VALID), key=cls.key)
        assert r.status == 200, r
        cls.emp_id = r.json["id"]

    def tearDown(self):
        r = self.server.get("/healthz")
        self.assertEqual(r.status, 200, "server stopped serving")

    def test_a_long_multibyte_name_in_an_error_is_valid_json(self):
        # An unknown member of 60 two-byte characters: the param and message cut it, and the
        # cut must not split a character (the server once aborted on the invalid UTF-8).
        name = "\u00e9" * 60
        for path, body in (("/v1/employees", dict(VALID, **{name: 1})),
                           ("/v1/knowledge/query", {"query": "x", name: 1}),
                           ("/v1/knowledge/query", {"query": "x", "filters": {name: 1}})):
            with self.subTest(path=path):
                r = self.server.post(path, body, key=self.key)
                err = self.assertJson(r, 400)["error"]
                self.assertEqual(err["code"], "invalid_request", err)
                self.assertTrue(err["param"].startswith(("\u00e9", "filters.\u00e9")), err)
                self.assertIn("\u00e9" * 20, err["message"])

    # -- 413 --

    def _declared_too_large(self, method, path, length):
        s = self.server.connect()
        try:
            s.sendall(raw_head(method, path, "127.0.0.1", {
                "Authorization": "Bearer " + self.key,
                "Content-Type": "application/json",
                "Content-Length": str(length),
            }))
            # Only the head is sent: the server must answer without reading the body.
            return read_response(s, timeout=10)
        finally:
            s.close()

    def test_413_content_length_over_1mib(self):
        for method, path in (("POST", "/v1/employees"), ("PATCH", "/v1/employees/" + self.emp_id)):
            for length in (MIB + 1, 2 * MIB, 100 * MIB):
                with self.subTest(method=method, length=length):
                    r = self._declared_too_large(method, path, length)
                    self.assertError(r, 413, "request_too_large")

    def _padded(self, total, **extra):
        """A valid-JSON employee body padded with spaces to exactly 'total' bytes."""
        obj = dict(VALID)
        obj.update(extra)
        b = json.dumps(obj).encode()
        return b[:-1] + b" " * (total - len(b)) + b"}"

    def test_exactly_1mib_is_not_too_large(self):
        body = self._padded(MIB)
        self.assertEqual(len(body), MIB)
        r = self.server.request("POST", "/v1/employees", body=body, key=self.key)
        self.assertEqual(r.status, 200, r)
        # And one that is 1 MiB because of an over-long field is a 400 on that field.
        obj = dict(VALID)
        b = json.dumps(dict(obj, description="")).encode()
        obj["description"] = "d" * (MIB - len(b))
        body = json.dumps(obj).encode()
        self.assertEqual(len(body), MIB)
        r = self.server.request("POST", "/v1/employees", body=body, key=self.key)
        self.assertError(r, 400, "invalid_request", "description")

    def test_413_chunked_over_1mib(self):
        s = self.server.connect()
        result = {}

        def send():
            try:
                s.sendall(raw_head("POST", "/v1/employees", "127.0.0.1", {
                    "Authorization": "Bearer " + self.key,
                    "Content-Type": "application/json",
                    "Transfer-Encoding": "chunked",
                }))
                piece = b" " * 65536
                s.sendall(b"%x\r\n{\r\n" % 1)
                for _ in range(17):  # 17 * 64 KiB > 1 MiB
                    s.sendall(b"%x\r\n" % len(piece) + piece + b"\r\n")
                s.sendall(b"1\r\n}\r\n0\r\n\r\n")
            except OSError as e:
                result["send_error"] = e

        t = threading.Thread(target=send)
        t.start()
        try:
            try:
                r = read_response(s, timeout=15)
            except (ConnectionResetError, BrokenPipeError) as e:
                self.skipTest("connection reset before the 413 could be read (%s)" % e)
            self.assertError(r, 413, "request_too_large")
        finally:
            t.join(20)
            s.close()

    def test_413_before_content_type_and_json(self):
        s = self.server.connect()
        try:
            s.sendall(raw_head("POST", "/v1/employees", "127.0.0.1", {
                "Authorization": "Bearer " + self.key,
                "Content-Type": "text/plain",
                "Content-Length": str(MIB + 10),
            }))
            r = read_response(s, timeout=10)
        finally:
            s.close()
        self.assertError(r, 413, "request_too_large")

    # -- 415 --

    def test_415_not_json(self):
        body = json.dumps(VALID)
        for method, path in (("POST", "/v1/employees"),
                             ("PATCH", "/v1/employees/" + self.emp_id)):
            for ct in ("text/plain", "application/x-www-form-urlencoded",
                       "multipart/form-data; boundary=x", "application/jsonx", "text/json",
                       "application/xml"):
                with self.subTest(method=method, ct=ct):
                    r = self.server.request(method, path, body=body, key=self.key,
                                            content_type=ct)
                    self.assertError(r, 415, "unsupported_media_type")

    def test_415_missing_content_type_with_body(self):
        s = self.server.connect()
        body = json.dumps(VALID).encode()
        try:
            s.sendall(raw_head("POST", "/v1/employees", "127.0.0.1", {
                "Authorization": "Bearer " + self.key,
                "Content-Length": str(len(body)), "Connection": "close"}) + body)
            r = read_response(s)
        finally:
            s.close()
        self.assertError(r, 415, "unsupported_media_type")

    def test_json_with_charset_accepted(self):
        for ct in ("application/json; charset=utf-8", "application/json;charset=UTF-8",
                   "application/json"):
            with self.subTest(ct=ct):
                r = self.server.request("POST", "/v1/employees", body=json.dumps(VALID),
                                        key=self.key, content_type=ct)
                self.assertJson(r, 200)

    def test_415_before_json_parse(self):
        r = self.server.request("POST", "/v1/employees", body="{not json", key=self.key,
                                content_type="text/plain")
        self.assertError(r, 415, "unsupported_media_type")

    # -- malformed JSON: 400 without param --

    MALFORMED = [
        b"{",
        b"}",
        b"{\"name\":}",
        b"{\"name\": \"a\",}",
        b"{'name': 'a'}",
        b"nul",
        b"{\"name\":\"a\"} x",
        b"{\"name\":\"a\"}{}",
        b"[]",
        b"[{\"name\":\"a\"}]",
        b"\"string\"",
        b"123",
        b"null",
        b"true",
        b"{\"name\":\"a\",\"name\":\"b\",\"role\":\"r\",\"category\":\"sales\"}",
        b"{\"name\":\"a\xff\",\"role\":\"r\",\"category\":\"sales\"}",
        b"{\"name\":\"\xc3\x28\",\"role\":\"r\",\"category\":\"sales\"}",
        b"{\"name\":\"\xed\xa0\x80\",\"role\":\"r\",\"category\":\"sales\"}",
        b"{\"name\":\"a\\u0000b\",\"role\":\"r\",\"category\":\"sales\"}",
        b"{\"name\":\"\\ud800\",\"role\":\"r\",\"category\":\"sales\"}",
        b"{\"name\":\"a\\x41\",\"role\":\"r\",\"category\":\"sales\"}",
        b"{\"name\":\"a\",\"role\":\"r\",\"category\":\"sales\"",
        b"\xef\xbb\xbf\xff",
        b"{\"a\":" * 5000 + b"1" + b"}" * 5000,
    ]

    def test_malformed_json(self):
        for method, path in (("POST", "/v1/employees"),
                             ("PATCH", "/v1/employees/" + self.emp_id)):
            for body in self.MALFORMED:
                with self.subTest(method=method, body=body[:60]):
                    r = self.server.request(method, path, body=body, key=self.key)
                    self.assertError(r, 400, "invalid_request", None)

    def test_empty_body_is_empty_object(self):
        # POST: {} lacks the required fields; PATCH: {} changes nothing.
        r = self.server.request("POST", "/v1/employees", body=b"", key=self.key)
        self.assertError(r, 400, "invalid_request", {"name", "role", "category"})
        r = self.server.request("POST", "/v1/employees", body=None, key=self.key)
        self.assertError(r, 400, "invalid_request", {"name", "role", "category"})
        before = self.server.get("/v1/employees/" + self.emp_id, key=self.key).json
        r = self.server.request("PATCH", "/v1/employees/" + self.emp_id, body=b"",
                                key=self.key)
        self.assertEqual(self.assertJson(r, 200), before)

    # -- binding: param --

    BINDING = [
        # (body, param)
        ({"name": "a", "role": "r", "category": "sales", "foo": 1}, "foo"),
        ({"name": "a", "role": "r", "category": "sales", "Name": "x"}, "Name"),
        ({"name": "a", "role": "r", "category": "sales", "id": "emp_x"}, "id"),
        ({"name": "a", "role": "r", "category": "sales", "stats": {}}, "stats"),
        ({"name": 5, "role": "r", "category": "sales"}, "name"),
        ({"name": None, "role": "r", "category": "sales"}, "name"),
        ({"name": ["a"], "role": "r", "category": "sales"}, "name"),
        ({"name": "a", "role": True, "category": "sales"}, "role"),
        ({"name": "a", "role": "r", "category": 3}, "category"),
        ({"name": "a", "role": "r", "category": "sales", "tier": 1}, "tier"),
        ({"name": "a", "role": "r", "category": "sales", "capabilities": "x"}, "capabilities"),
        ({"name": "a", "role": "r", "category": "sales", "capabilities": {"a": 1}},
         "capabilities"),
        ({"name": "a", "role": "r", "category": "sales", "capabilities": ["ok", 5]},
         "capabilities[1]"),
        ({"name": "a", "role": "r", "category": "sales", "capabilities": ["ok", "b", None]},
         "capabilities[2]"),
        ({"name": "a", "role": "r", "category": "sales", "capabilities": ["ok", "Bad"]},
         "capabilities[1]"),
        ({"name": "a", "role": "r", "category": "sales", "capabilities": [["x"]]},
         "capabilities[0]"),
        ({"name": "a", "role": "r", "category": "sales", "description": 1}, "description"),
        ({"name": "a", "role": "r", "category": "sales", "instructions": []}, "instructions"),
        ({"name": "a", "role": "r", "category": "sales", "model": 7}, "model"),
        ({"name": "a", "role": "r", "category": "sales", "status": False}, "status"),
    ]

    def test_binding_errors_post(self):
        for body, param in self.BINDING:
            with self.subTest(body=body):
                r = self.server.post("/v1/employees", body, key=self.key)
                self.assertError(r, 400, "invalid_request", param)

    def test_binding_errors_patch(self):
        for body, param in self.BINDING:
            body = {k: v for k, v in body.items()
                    if k not in ("name", "role", "category") or k == param}
            with self.subTest(body=body):
                r = self.server.patch("/v1/employees/" + self.emp_id, body, key=self.key)
                self.assertError(r, 400, "invalid_request", param)

    # -- order of checks --

    def test_order_of_checks(self):
        k, ro = self.key, self.ro_key
        # auth before body checks
        r = self.server.request("POST", "/v1/employees", body="{bad", key=None)
        self.assertError(r, 401, "missing_api_key")
        r = self.server.request("POST", "/v1/employees", body="{bad", key=None,
                                content_type="text/plain")
        self.assertError(r, 401, "missing_api_key")
        r = self.server.request("POST", "/v1/employees", body="{bad", key="svc_live_sk_x")
        self.assertError(r, 401, "invalid_api_key")
        # scope before body checks
        r = self.server.request("POST", "/v1/employees", body="{bad", key=ro)
        self.assertError(r, 403, "permission_denied")
        r = self.server.request("PATCH", "/v1/employees/" + self.emp_id, body="x", key=ro,
                                content_type="text/plain")
        self.assertError(r, 403, "permission_denied")
        # auth before query checks
        r = self.server.get("/v1/employees?bogus=1&limit=0")
        self.assertError(r, 401, "missing_api_key")
        r = self.server.get("/v1/employees?bogus=1", key=k)
        self.assertError(r, 400, "invalid_request", "bogus")


class QueryTest(ServerTestCase):

    @classmethod
    def setUpServer(cls):
        cls.key = cls.server.create_key("err-query")
        r = cls.server.get("/v1/employees?limit=1", key=cls.key)
        cls.emp_id = r.json["employees"][0]["id"]

    def tearDown(self):
        self.assertEqual(self.server.get("/healthz").status, 200, "server stopped serving")

    def test_unknown_query_params(self):
        e = self.emp_id
        cases = [
            ("/v1/employees?foo=1", "foo"),
            ("/v1/employees?limit=5&foo=", "foo"),
            ("/v1/employees?Limit=5", "Limit"),
            ("/v1/employees?before=abc", "before"),
            ("/v1/employees/%s?foo=1" % e, "foo"),
            ("/v1/employees/%s/stats?period=7d&x=1" % e, "x"),
            ("/v1/employees/%s/stats?limit=5" % e, "limit"),
            ("/v1/account?verbose=true", "verbose"),
        ]
        for path, param in cases:
            with self.subTest(path=path):
                r = self.server.get(path, key=self.key)
                self.assertError(r, 400, "invalid_request", param)

    def test_repeated_query_params(self):
        e = self.emp_id
        cases = [
            ("/v1/employees?limit=5&limit=6", "limit"),
            ("/v1/employees?limit=5&limit=5", "limit"),
            ("/v1/employees?category=sales&category=sales", "category"),
            ("/v1/employees?status=idle&status=offline", "status"),
            ("/v1/employees/%s/stats?period=7d&period=24h" % e, "period"),
        ]
        for path, param in cases:
            with self.subTest(path=path):
                r = self.server.get(path, key=self.key)
                self.assertError(r, 400, "invalid_request", param)

    def test_bad_limit(self):
        for v in ["0", "101", "-1", "abc", "1.5", "", "+5", "%205", "5%20", "1e2", "0x10",
                  "99999999999999999999999", "%EF%BC%91"]:
            with self.subTest(limit=v):
                r = self.server.get("/v1/employees?limit=" + v, key=self.key)
                self.assertError(r, 400, "invalid_request", "limit")

    def test_good_limit(self):
        for v, n in [("1", 1), ("100", None), ("3", 3), ("007", 7)]:
            with self.subTest(limit=v):
                r = self.server.get("/v1/employees?limit=" + v, key=self.key)
                body = self.assertJson(r, 200)
                if n is not None:
                    self.assertEqual(len(body["employees"]), min(n, body["total"]))

    def test_bad_cursor(self):
        for v in ["!!!!", "not%20a%20cursor", "%00", "zzzz!", "emp_", "%FF%FE"]:
            with self.subTest(after=v):
                r = self.server.get("/v1/employees?after=" + v, key=self.key)
                self.assertError(r, 400, "invalid_request", "after")

    def test_url_encoded_values(self):
        r = self.server.get("/v1/employees?category=sa%6Ces&limit=%31", key=self.key)
        body = self.assertJson(r, 200)
        self.assertLessEqual(len(body["employees"]), 1)
        for e in body["employees"]:
            self.assertEqual(e["category"], "sales")


class GarbageTest(ServerTestCase):
    """Protocol-level junk does not take the server down."""

    @classmethod
    def setUpServer(cls):
        cls.key = cls.server.create_key("err-garbage")

    def _raw(self, data, read=True):
        s = self.server.connect(timeout=5)
        try:
            s.sendall(data)
            if read:
                try:
                    s.settimeout(5)
                    s.recv(65536)  # the first bytes of an answer, or the close
                except OSError:
                    pass
        finally:
            s.close()

    def test_junk_then_still_serving(self):
        junk = [
            b"GARBAGE\r\n\r\n",
            b"\x00\x01\x02\x03\r\n\r\n",
            b"GET / HTTP/9.9\r\n\r\n",
            b"GET /v1/employees HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n",
            b"POST /v1/employees HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n",
            b"GET /v1/employees HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "
            + b"A" * 20000 + b"\r\n\r\n",
            b"GET /" + b"a" * 20000 + b" HTTP/1.1\r\nHost: x\r\n\r\n",
            b"GET /v1/employees?" + b"&".join(b"k%d=v" % i for i in range(3000))
            + b" HTTP/1.1\r\nHost: x\r\n\r\n",
        ]
        for data in junk:
            with self.subTest(data=data[:40]):
                self._raw(data)
                self.assertEqual(self.server.get("/healthz").status, 200)
        # Half a request, then hang up; the server ends it (counted in /metrics) and serves on.
        posts = self.finished("/v1/employees", "POST")
        for data in (b"POST /v1/employees HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n"
                     b"Authorization: Bearer " + self.key.encode()
                     + b"\r\nContent-Type: application/json\r\n\r\n{\"na",
                     b"GET /v1/empl"):
            self._raw(data, read=False)
        self.wait_finished("/v1/employees", "POST", posts + 1)
        self.assertEqual(self.server.get("/healthz").status, 200)
        r = self.server.get("/v1/employees", key=self.key)
        self.assertEqual(r.status, 200, r)
        self.assertTrue(self.server.alive())

    def test_many_bad_requests_in_a_row(self):
        for i in range(50):
            self.server.request("POST", "/v1/employees", body=b"{\"x\":" + b"[" * i, key=self.key)
        r = self.server.get("/v1/employees", key=self.key)
        self.assertEqual(r.status, 200)
