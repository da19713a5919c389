# SPDX-License-Identifier: MIT
"""The web console's files and the reference pages (contract §17): redirects, the embedded
files, gzip, ETag revalidation, the security headers of every page. What the pages do in a
browser is tests/browser's."""

import gzip
import re

from harness import ServerTestCase

PAGE_HEADERS = {
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}


class ConsoleTest(ServerTestCase):
    one_node = True

    @classmethod
    def setUpServer(cls):
        pass

    def assertPageHeaders(self, r):
        csp = r.header("Content-Security-Policy") or ""
        self.assertIn("default-src 'self'", csp, r)
        self.assertIn("frame-ancestors 'none'", csp, r)
        for name, value in PAGE_HEADERS.items():
            self.assertEqual(r.header(name), value, name)

    def test_root_and_console_redirect(self):
        for path in ("/", "/console"):
            r = self.server.get(path)
            self.assertEqual(r.status, 302, path)
            self.assertEqual(r.header("Location"), "/console/", path)
            self.assertPageHeaders(r)

    def test_index_loads_only_files_of_this_server(self):
        r = self.server.get("/console/")
        self.assertEqual(r.status, 200, r)
        self.assertTrue(r.header("Content-Type").startswith("text/html"), r.headers)
        self.assertPageHeaders(r)
        page = r.body.decode()
        refs = re.findall(r'(?:src|href)="([^"]+)"', page)
        self.assertTrue(refs)
        for ref in refs:
            if ref == "/docs":
                continue
            self.assertTrue(ref.startswith("/console/"), ref)
            f = self.server.get(ref)
            self.assertEqual(f.status, 200, ref)
            self.assertPageHeaders(f)
        # no inline script or style: the CSP would refuse them
        self.assertNotRegex(page, r"<script(?![^>]*\bsrc=)[^>]*>")
        self.assertNotIn("<style", page)
        self.assertNotIn("style=", page)

    def test_every_script_is_served_with_its_type(self):
        for name, ctype in (("app.js", "text/javascript"), ("preact.js", "text/javascript"),
                            ("app.css", "text/css"), ("icon.svg", "image/svg+xml")):
            r = self.server.get("/console/" + name)
            self.assertEqual(r.status, 200, name)
            self.assertTrue(r.header("Content-Type").startswith(ctype), (name, r.headers))

    def test_gzip_for_a_client_that_takes_it(self):
        plain = self.server.get("/console/preact.js")
        self.assertIsNone(plain.header("Content-Encoding"))
        z = self.server.get("/console/preact.js", headers={"Accept-Encoding": "gzip, br"})
        self.assertEqual(z.header("Content-Encoding"), "gzip")
        self.assertEqual(gzip.decompress(z.body), plain.body)
        self.assertLess(len(z.body), len(plain.body))
        self.assertIn("Accept-Encoding", z.header("Vary"))
        refused = self.server.get("/console/preact.js", headers={"Accept-Encoding": "gzip;q=0"})
        self.assertIsNone(refused.header("Content-Encoding"))
        self.assertEqual(refused.body, plain.body)

    def test_openapi_document_compressed(self):
        plain = self.server.get("/v1/openapi.json")
        self.assertEqual(plain.status, 200)
        self.assertTrue(plain.header("Content-Type").startswith("application/json"))
        z = self.server.get("/v1/openapi.json", headers={"Accept-Encoding": "gzip"})
        self.assertEqual(z.header("Content-Encoding"), "gzip")
        self.assertEqual(gzip.decompress(z.body), plain.body)
        self.assertLess(len(z.body) * 5, len(plain.body))
        again = self.server.get("/v1/openapi.json", headers={"If-None-Match": z.header("ETag")})
        self.assertEqual(again.status, 304)

    def test_etag_revalidation(self):
        r = self.server.get("/console/app.js")
        etag = r.header("ETag")
        self.assertRegex(etag, r'^"[0-9a-f]{20}"$')
        self.assertEqual(r.header("Cache-Control"), "no-cache")
        again = self.server.get("/console/app.js", headers={"If-None-Match": etag})
        self.assertEqual(again.status, 304)
        self.assertEqual(again.body, b"")
        other = self.server.get("/console/app.js", headers={"If-None-Match": '"0000"'})
        self.assertEqual(other.status, 200)
        self.assertEqual(other.body, r.body)
        self.assertNotEqual(self.server.get("/console/ui.js").header("ETag"), etag)

    def test_a_query_is_the_pages_own(self):
        # the end of an OAuth round trip lands on /console/ with the callback's outcome
        r = self.server.get("/console/?provider=github&status=connected")
        self.assertEqual(r.status, 200, r)
        self.assertEqual(self.server.get("/console/app.js?v=2").status, 200)
        self.assertEqual(self.server.get("/docs?x=1").status, 200)
        self.assertEqual(self.server.get("/?a=b").status, 302)

    def test_unknown_file_and_no_escape(self):
        for path in ("/console/nope.js", "/console/..", "/console/%2e%2e%2fdocs%2fopenapi.json",
                     "/console/vendor/preact.js"):
            r = self.server.get(path)
            self.assertEqual(r.status, 404, path)
            self.assertEqual(r.error["code"], "route_not_found", path)

    def test_other_methods_refused(self):
        r = self.server.request("POST", "/console/app.js", body="{}")
        self.assertEqual(r.status, 405, r)
        self.assertEqual(r.error["code"], "method_not_allowed")
        self.assertIn("GET", r.header("Allow"))

    def test_docs_pages(self):
        r = self.server.get("/docs")
        self.assertEqual(r.status, 200, r)
        self.assertTrue(r.header("Content-Type").startswith("text/html"))
        self.assertPageHeaders(r)
        self.assertIn("/console/docs.js", r.body.decode())
        e = self.server.get("/docs/errors/employee_not_found")
        self.assertEqual(e.status, 200)
        self.assertPageHeaders(e)

    def test_pages_need_no_key_and_a_bad_one_changes_nothing(self):
        r = self.server.get("/console/", key="svc_test_sk_" + "x" * 40)
        self.assertEqual(r.status, 200)
