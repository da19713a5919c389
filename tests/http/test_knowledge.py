# SPDX-License-Identifier: MIT
"""Knowledge base (issue 4, contract §11): POST/GET/DELETE /v1/knowledge/documents and
POST /v1/knowledge/query, black-box.

- uploads of every supported type (TXT, Markdown, HTML, CSV, JSON generated here; a two-page
  PDF made with `groff -Tpdf` and a DOCX made with `pandoc`, skipped when the tool is missing),
  processed in the background (processing -> ready | failed with an error);
- type detection by content (a PDF named .txt is a PDF; random bytes named .pdf are refused;
  a damaged PDF or a zip bomb .docx is accepted and fails with a clear error);
- the record (sha256, size_bytes, content_type, tags, employee_ids, chunk_count), list filters,
  keyset pagination with `before`, delete;
- every bad input: missing/empty file, unknown type, unknown form field, unknown employee,
  not multipart, files over 52,428,800 bytes (declared by Content-Length: refused at once;
  chunked or under-declared: refused after reading), query validation;
- the reader rule: a document with employee_ids is returned to queries naming one of those
  employees and cited in their chats only; tags match any-of; live and test data are apart;
- Idempotency-Key on the upload.
"""

import glob
import hashlib
import io
import json
import os
import shutil
import subprocess
import tempfile
import time
import unittest
import uuid
import zipfile

from chatlib import ChatTestCase
from harness import (GENEROUS_LIMITS, ID_PARAM, TS_RE, ServerTestCase, raw_head,
                     read_response)

DOCS = "/v1/knowledge/documents"
QUERY = "/v1/knowledge/query"
MAX_FILE = 52428800
NO_EMP = "emp_" + "Z" * 24
NO_DOC = "doc_" + "Z" * 24
DOC_ID_RE = r"^doc_[A-Za-z0-9]{20,}$"
CHUNK_ID_RE = r"^chunk_[A-Za-z0-9]{20,}$"
DOC_FIELDS = {"id", "name", "filename", "content_type", "size_bytes", "sha256", "tags",
              "employee_ids", "status", "error", "chunk_count", "progress", "created_at",
              "updated_at"}
HIT_FIELDS = {"document_id", "document_name", "chunk_id", "content", "score", "tags"}
MIME = {
    "txt": "text/plain", "md": "text/markdown", "html": "text/html", "csv": "text/csv",
    "json": "application/json", "pdf": "application/pdf",
    "docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
}
# Bounded poll; the sanitized build embeds ~10x slower than the release one.
READY_TIMEOUT = 240.0


def multipart(fields=(), files=(), boundary=None):
    """A multipart/form-data body: 'fields' are (name, str|bytes); 'files' are
    (name, filename, content_type|None, bytes). Returns (body, content_type)."""
    b = boundary or ("wfb" + uuid.uuid4().hex)
    out = io.BytesIO()
    for name, value in fields:
        out.write(("--%s\r\nContent-Disposition: form-data; name=\"%s\"\r\n\r\n"
                   % (b, name)).encode())
        out.write(value if isinstance(value, bytes) else value.encode("utf-8"))
        out.write(b"\r\n")
    for name, filename, ctype, data in files:
        out.write(("--%s\r\nContent-Disposition: form-data; name=\"%s\"; filename=\"%s\"\r\n"
                   % (b, name, filename)).encode())
        if ctype:
            out.write(("Content-Type: %s\r\n" % ctype).encode())
        out.write(b"\r\n")
        out.write(data)
        out.write(b"\r\n")
    out.write(("--%s--\r\n" % b).encode())
    return out.getvalue(), "multipart/form-data; boundary=" + b


def marker(prefix="zq"):
    """A word no document shares by chance (letters only: the FTS tokenizer keeps it whole)."""
    return prefix + "".join(chr(ord("a") + int(c, 16) % 26) for c in uuid.uuid4().hex[:10])


def make_pdf(pages):
    """A PDF with one page per text, made by groff (None when groff is missing)."""
    if not shutil.which("groff"):
        return None
    src = []
    for i, text in enumerate(pages):
        if i:
            src.append(".bp")
        src.append(".LP")
        src.append(text)
    p = subprocess.run(["groff", "-ms", "-Tpdf"], input="\n".join(src).encode() + b"\n",
                       capture_output=True, timeout=30)
    if p.returncode != 0 or not p.stdout.startswith(b"%PDF-"):
        raise RuntimeError("groff failed: %r" % p.stderr[:300])
    return p.stdout


def make_docx(markdown):
    """A DOCX made by pandoc from Markdown (None when pandoc is missing)."""
    if not shutil.which("pandoc"):
        return None
    d = tempfile.mkdtemp(prefix="wf-docx-")
    try:
        out = os.path.join(d, "doc.docx")
        p = subprocess.run(["pandoc", "-f", "markdown", "-o", out], input=markdown.encode(),
                           capture_output=True, timeout=60)
        if p.returncode != 0:
            raise RuntimeError("pandoc failed: %r" % p.stderr[:300])
        with open(out, "rb") as f:
            return f.read()
    finally:
        shutil.rmtree(d, ignore_errors=True)


def make_zip_bomb():
    """A .docx-shaped ZIP whose word/document.xml inflates to 300 MiB (of zeros, ~300 KiB
    compressed): more than the server's 256 MiB cap on unzipped parts."""
    b = io.BytesIO()
    with zipfile.ZipFile(b, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as z:
        z.writestr("[Content_Types].xml", '<?xml version="1.0"?><Types/>')
        with z.open("word/document.xml", "w", force_zip64=True) as f:
            block = b"\0" * (1 << 20)
            for _ in range(300):
                f.write(block)
    return b.getvalue()


class KnowledgeCase(ServerTestCase):
    """Helpers shared by the knowledge suites."""

    server_env = {"WORKFORCE_RATE_LIMITS": GENEROUS_LIMITS}

    def org(self, prefix="kn", mode="live"):
        """A key of a fresh organization (so that its documents are all this test's)."""
        slug = "%s-%s" % (prefix, uuid.uuid4().hex[:8])
        return self.server.create_key(slug, mode=mode, credits=100000)

    def upload_raw(self, key, fields=(), files=(), headers=None, boundary=None):
        body, ctype = multipart(fields, files, boundary)
        return self.server.request("POST", DOCS, body=body, key=key, content_type=ctype,
                                   headers=headers, timeout=60)

    def upload(self, key, data, filename="doc.txt", name=None, tags=(), employee_ids=(),
               part_type=None, wait=True, status="ready"):
        """Upload one file; returns the record (after processing when 'wait')."""
        fields = []
        if name is not None:
            fields.append(("name", name))
        fields += [("tags", t) for t in tags]
        fields += [("employee_ids", e) for e in employee_ids]
        r = self.upload_raw(key, fields, [("file", filename, part_type, data)])
        doc = self.assertJson(r, 200)
        self.checkDocument(doc)
        self.assertIn(doc["status"], ("processing", "ready", "failed"), doc)
        self.assertEqual(doc["filename"], filename)
        self.assertEqual(doc["name"], name if name is not None else filename)
        self.assertEqual(doc["size_bytes"], len(data))
        self.assertEqual(doc["sha256"], hashlib.sha256(data).hexdigest())
        self.assertEqual(doc["tags"], list(tags))
        self.assertEqual(doc["employee_ids"], list(employee_ids))
        if not wait:
            return doc
        done = self.wait_done(key, doc["id"])
        if status is not None:
            self.assertEqual(done["status"], status, done)
        # processing changes only status, error, chunk_count and updated_at
        for k in ("id", "name", "filename", "content_type", "size_bytes", "sha256", "tags",
                  "employee_ids", "created_at"):
            self.assertEqual(done[k], doc[k], k)
        return done

    def get_doc(self, key, doc_id):
        return self.server.get(DOCS + "/" + doc_id, key=key)

    def wait_done(self, key, doc_id, timeout=READY_TIMEOUT):
        """Poll GET /v1/knowledge/documents/{id} until it leaves 'processing' (bounded)."""
        deadline = time.time() + timeout
        while True:
            doc = self.assertJson(self.get_doc(key, doc_id))
            self.checkDocument(doc)
            if doc["status"] != "processing":
                return doc
            if time.time() > deadline:
                self.fail("document %s still processing after %.0fs:\n%s"
                          % (doc_id, timeout, self.server.log_tail()))
            time.sleep(0.05)

    def checkDocument(self, d):
        self.assertEqual(set(d), DOC_FIELDS, d)
        self.assertRegex(d["id"], DOC_ID_RE)
        self.assertRegex(d["sha256"], r"^[0-9a-f]{64}$")
        self.assertRegex(d["created_at"], TS_RE)
        self.assertRegex(d["updated_at"], TS_RE)
        self.assertGreaterEqual(d["updated_at"], d["created_at"])
        self.assertIsInstance(d["size_bytes"], int)
        self.assertIsInstance(d["chunk_count"], int)
        self.assertIsInstance(d["tags"], list)
        self.assertIsInstance(d["employee_ids"], list)
        self.assertIn(d["status"], ("processing", "ready", "failed"))
        if d["status"] == "processing":
            self.assertTrue(d["progress"] is None or 0 <= d["progress"] <= 1, d)
        else:
            self.assertEqual(d["progress"], 1, d)
        if d["status"] == "ready":
            self.assertIsNone(d["error"], d)
            self.assertGreater(d["chunk_count"], 0, d)
        elif d["status"] == "failed":
            self.assertIsInstance(d["error"], str, d)
            self.assertTrue(d["error"].strip(), d)
            self.assertEqual(d["chunk_count"], 0, d)
        else:
            self.assertIsNone(d["error"], d)

    def query(self, key, text, **fields):
        body = {"query": text}
        body.update(fields)
        r = self.server.post(QUERY, body, key=key)
        out = self.assertJson(r, 200)
        self.assertEqual(set(out), {"query", "results"}, out)
        self.assertEqual(out["query"], text)
        scores = []
        for h in out["results"]:
            self.assertTrue(HIT_FIELDS <= set(h) <= HIT_FIELDS | {"page"}, h)
            self.assertRegex(h["document_id"], DOC_ID_RE)
            self.assertRegex(h["chunk_id"], CHUNK_ID_RE)
            self.assertIsInstance(h["content"], str)
            self.assertTrue(h["content"].strip(), h)
            self.assertIsInstance(h["score"], (int, float))
            self.assertTrue(0 <= h["score"] <= 1, h)
            self.assertIsInstance(h["tags"], list)
            if "page" in h:
                self.assertIsInstance(h["page"], int)
                self.assertGreaterEqual(h["page"], 1)
            scores.append(h["score"])
        self.assertEqual(scores, sorted(scores, reverse=True), "results are not best first")
        self.assertLessEqual(len(out["results"]), fields.get("limit", 5))
        return out["results"]

    def query_docs(self, key, text, **fields):
        """The ids of the documents a query returns, in order (first hit of each)."""
        ids = []
        for h in self.query(key, text, **fields):
            if h["document_id"] not in ids:
                ids.append(h["document_id"])
        return ids

    def list_docs(self, key, **q):
        qs = "&".join("%s=%s" % (k, v) for k, v in q.items())
        body = self.assertJson(self.server.get(DOCS + ("?" + qs if qs else ""), key=key))
        self.assertEqual(set(body), {"documents", "has_more", "next_cursor"}, body)
        for d in body["documents"]:
            self.checkDocument(d)
        return body

    def all_doc_ids(self, key, **q):
        ids, before = [], None
        for _ in range(100):
            qq = dict(q, limit=100)
            if before:
                qq["before"] = before
            body = self.list_docs(key, **qq)
            ids += [d["id"] for d in body["documents"]]
            if not body["has_more"]:
                return ids
            before = body["next_cursor"]
        self.fail("the document list does not end")

    def files_dir(self):
        return os.path.join(self.server.tmpdir, "files")

    def temp_uploads(self, wait=3.0):
        """Temporary upload files left in the files directory (after up to 'wait' seconds:
        a request's cleanup may run just after its response was sent)."""
        deadline = time.time() + wait
        while True:
            left = glob.glob(os.path.join(self.files_dir(), ".upload-*"))
            if not left or time.time() > deadline:
                return left
            time.sleep(0.05)


# ---- Types, detection, processing ----

class UploadTypesTest(KnowledgeCase):

    @classmethod
    def setUpServer(cls):
        cls.key = cls.server.create_key("kn-types", credits=100000)

    def test_text_types(self):
        m = {t: marker() for t in ("txt", "md", "html", "csv", "json")}
        files = {
            "txt": ("notes.txt", ("Plain notes. The courier code word is %s, remember it.\n"
                                  "Second line of the plain text file.\n" % m["txt"]).encode()),
            "md": ("guide.md", ("# Guide\n\nThe *warehouse* password hint is **%s**.\n\n"
                                "- item one\n- item two\n" % m["md"]).encode()),
            "html": ("page.html", ("<!DOCTYPE html><html><head><title>Page</title>"
                                   "<script>var hidden = 'scriptsecretzz';</script>"
                                   "<style>p { color: red }</style></head><body>"
                                   "<p>The lighthouse keeper is called %s &amp; friends.</p>"
                                   "</body></html>" % m["html"]).encode()),
            "csv": ("table.csv", ("city,mascot\nOslo,%s\nLima,llama\n" % m["csv"]).encode()),
            "json": ("data.json", json.dumps({"team": {"mascot": m["json"], "size": 7},
                                              "tags": ["alpha", "beta"]}).encode()),
        }
        docs = {}
        for t, (fn, data) in files.items():
            with self.subTest(type=t):
                docs[t] = self.upload(self.key, data, filename=fn, wait=False)
        for t, d in docs.items():
            with self.subTest(type=t):
                done = self.wait_done(self.key, d["id"])
                self.assertEqual(done["status"], "ready", done)
                self.assertEqual(done["content_type"], MIME[t], done)
                self.assertGreater(done["chunk_count"], 0)
                hits = self.query(self.key, m[t], limit=3)
                self.assertTrue(hits, "the %s document is not found by its marker" % t)
                self.assertEqual(hits[0]["document_id"], d["id"], hits)
                self.assertIn(m[t], hits[0]["content"])
                self.assertEqual(hits[0]["document_name"], files[t][0])
                self.assertNotIn("page", hits[0], "a text document has no pages")
                if t == "html":
                    self.assertNotIn("<p>", hits[0]["content"])
                    self.assertNotIn("scriptsecretzz", hits[0]["content"],
                                     "script content was indexed")
                    self.assertNotIn("color: red", hits[0]["content"])
                    self.assertIn("&", hits[0]["content"])
                    self.assertNotIn("&amp;", hits[0]["content"])
                if t == "json":
                    self.assertIn("mascot", hits[0]["content"])

    def test_pdf_two_pages(self):
        m1, m2 = marker(), marker()
        filler = ("This paragraph is filler text about quarterly planning, budgets and the "
                  "weekly review meeting of the operations team. ") * 5
        pdf = make_pdf(["The first page introduces the keyword %s. %s" % (m1, filler),
                        "%s The second page ends with the keyword %s." % (filler, m2)])
        if pdf is None:
            self.skipTest("groff is not installed")
        d = self.upload(self.key, pdf, filename="report.pdf", name="Quarterly report")
        self.assertEqual(d["content_type"], "application/pdf")
        for word, page in ((m1, 1), (m2, 2)):
            with self.subTest(page=page):
                hits = self.query(self.key, word)
                self.assertTrue(hits)
                self.assertEqual(hits[0]["document_id"], d["id"])
                self.assertEqual(hits[0]["document_name"], "Quarterly report")
                self.assertIn(word, hits[0]["content"])
                self.assertEqual(hits[0].get("page"), page, hits[0])

    def test_docx(self):
        m = marker()
        docx = make_docx("# Handbook\n\nThe office plant is named %s.\n\nSecond paragraph.\n" % m)
        if docx is None:
            self.skipTest("pandoc is not installed")
        d = self.upload(self.key, docx, filename="handbook.docx")
        self.assertEqual(d["content_type"], MIME["docx"])
        hits = self.query(self.key, m)
        self.assertTrue(hits)
        self.assertEqual(hits[0]["document_id"], d["id"])
        self.assertIn(m, hits[0]["content"])
        self.assertIn("Handbook", hits[0]["content"])

    def test_detection_by_content(self):
        m = marker()
        pdf = make_pdf(["A PDF in disguise mentions %s." % m])
        if pdf is not None:
            with self.subTest(case="pdf named .txt"):
                d = self.upload(self.key, pdf, filename="x.txt", part_type="text/plain")
                self.assertEqual(d["content_type"], "application/pdf")
                self.assertEqual(self.query_docs(self.key, m)[:1], [d["id"]])
        m2 = marker()
        with self.subTest(case="html named .txt"):
            d = self.upload(self.key, ("<html><body><p>Disguised %s page</p></body></html>"
                                       % m2).encode(), filename="page.txt")
            self.assertEqual(d["content_type"], "text/html")
            hits = self.query(self.key, m2)
            self.assertNotIn("<p>", hits[0]["content"])
        with self.subTest(case="json named .txt"):
            d = self.upload(self.key, b'{"animal": "%s"}' % marker().encode(), filename="d.txt")
            self.assertEqual(d["content_type"], "application/json")
        with self.subTest(case="text named .pdf"):
            d = self.upload(self.key, b"Just plain words, not a PDF at all.\n", filename="t.pdf",
                            part_type="application/pdf")
            self.assertEqual(d["content_type"], "text/plain")
        with self.subTest(case="markdown by name"):
            d = self.upload(self.key, b"# Title\n\nSome *markdown* text.\n", filename="r.md")
            self.assertEqual(d["content_type"], "text/markdown")
        with self.subTest(case="docx named .bin"):
            docx = make_docx("Word file %s\n" % marker())
            if docx is not None:
                d = self.upload(self.key, docx, filename="upload.bin")
                self.assertEqual(d["content_type"], MIME["docx"])

    def test_unsupported_types(self):
        cases = {
            "random bytes named .pdf": ("x.pdf", "application/pdf",
                                        bytes(range(256)) + os.urandom(4096)),
            "png": ("image.png", "image/png", b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR" + os.urandom(512)),
            "binary named .txt": ("x.txt", "text/plain", b"\0\1\2\3" * 100),
        }
        b = io.BytesIO()
        with zipfile.ZipFile(b, "w") as z:
            z.writestr("[Content_Types].xml", "<Types/>")
            z.writestr("xl/workbook.xml", "<workbook/>")
        cases["xlsx"] = ("sheet.xlsx", None, b.getvalue())
        before = self.all_doc_ids(self.key)
        for label, (fn, ct, data) in cases.items():
            with self.subTest(case=label):
                r = self.upload_raw(self.key, files=[("file", fn, ct, data)])
                self.assertError(r, 415, "unsupported_file_type", {"file", None})
        self.assertEqual(self.all_doc_ids(self.key), before, "a refused upload left a record")
        self.assertEqual(self.temp_uploads(), [])

    def test_undecodable_files_fail_with_error(self):
        """Accepted by their magic bytes, then refused by the extractor: 'failed' + error."""
        bad_pdf = b"%PDF-1.7\n" + os.urandom(20000)
        d = self.upload(self.key, bad_pdf, filename="broken.pdf", status="failed")
        self.assertEqual(d["content_type"], "application/pdf")
        self.assertIn("PDF", d["error"])
        bomb = make_zip_bomb()
        d = self.upload(self.key, bomb, filename="bomb.docx", status="failed")
        self.assertEqual(d["content_type"], MIME["docx"])
        self.assertIn("DOCX", d["error"])
        self.assertRegex(d["error"].lower(), r"unzip|size|limit|too")
        notword = io.BytesIO()
        with zipfile.ZipFile(notword, "w") as z:
            z.writestr("readme.txt", "no word part here")
        d = self.upload(self.key, notword.getvalue(), filename="fake.docx", status="failed")
        self.assertIn("DOCX", d["error"])
        d = self.upload(self.key, b"{\"broken\": [1, 2", filename="bad.json", status="failed")
        self.assertIn("JSON", d["error"])
        d = self.upload(self.key, b" \n\n\t \n", filename="blank.txt", status="failed")
        self.assertRegex(d["error"].lower(), r"text")
        # failed documents are listed, readable and deletable, and never searched
        self.assertNotIn(d["id"], self.query_docs(self.key, "blank", limit=50))
        self.assertTrue(self.server.alive(), "the server died on a malicious file")
        r = self.server.request("DELETE", DOCS + "/" + d["id"], key=self.key)
        self.assertEqual(self.assertJson(r), {"id": d["id"], "deleted": True})


# ---- Bad input and size limits ----

class UploadErrorsTest(KnowledgeCase):

    @classmethod
    def setUpServer(cls):
        s = cls.server
        cls.key = s.create_key("kn-err", credits=100000)
        cls.ro = s.create_key("kn-err", scopes="employees:read")

    def assertNoRecord(self):
        self.assertEqual(self.all_doc_ids(self.key), [])

    def test_missing_or_empty_file(self):
        for label, fields, files in (
                ("no parts", [], []),
                ("only a name", [("name", "x")], []),
                ("file field without filename", [("file", "plain value")], []),
                ("empty file", [], [("file", "e.txt", "text/plain", b"")])):
            with self.subTest(case=label):
                r = self.upload_raw(self.key, fields, files)
                self.assertError(r, 400, "invalid_request", "file")
        self.assertNoRecord()

    def test_bad_fields(self):
        ok = [("file", "a.txt", None, b"hello")]
        for label, fields, param in (
                ("unknown field", [("colour", "red")], "colour"),
                ("empty name", [("name", "")], "name"),
                ("long name", [("name", "n" * 201)], "name"),
                ("tags not an array", [("tags", "[1, 2]")], "tags"),
                ("empty tag", [("tags", "")], "tags"),
                ("long tag", [("tags", "t" * 101)], "tags"),
                ("bad employee_ids json", [("employee_ids", "[oops")], "employee_ids")):
            with self.subTest(case=label):
                r = self.upload_raw(self.key, fields, ok)
                self.assertError(r, 400, "invalid_request", param)
        with self.subTest(case="two files"):
            r = self.upload_raw(self.key, [], ok + [("file", "b.txt", None, b"again")])
            self.assertError(r, 400, "invalid_request", "file")
        for label, fields in (("repeated", [("employee_ids", NO_EMP)]),
                              ("json array", [("employee_ids", json.dumps([NO_EMP]))])):
            with self.subTest(case="unknown employee, " + label):
                r = self.upload_raw(self.key, fields, ok)
                self.assertError(r, 404, "employee_not_found", "employee_ids")
        self.assertNoRecord()
        self.assertEqual(self.temp_uploads(), [])

    def test_not_multipart(self):
        for ct, body in (("application/json", b'{"file": "x"}'),
                         ("text/plain", b"hello"),
                         ("application/x-www-form-urlencoded", b"file=x"),
                         ("multipart/form-data", b"no boundary")):
            with self.subTest(content_type=ct):
                r = self.server.request("POST", DOCS, body=body, key=self.key, content_type=ct)
                self.assertError(r, 415, "unsupported_media_type", {None, "Content-Type"})
        with self.subTest(case="malformed multipart"):
            body = b"--xyz\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.txt\""
            r = self.server.request("POST", DOCS, body=body, key=self.key,
                                    content_type="multipart/form-data; boundary=xyz")
            self.assertError(r, 400, "invalid_request", {None, "file"})
        self.assertNoRecord()

    def test_auth_and_scope(self):
        r = self.upload_raw(None, files=[("file", "a.txt", None, b"x")])
        self.assertError(r, 401, "missing_api_key")
        r = self.upload_raw(self.ro, files=[("file", "a.txt", None, b"x")])
        self.assertError(r, 403, "permission_denied")
        r = self.server.post(QUERY, {"query": "x"}, key=self.ro)
        self.assertError(r, 403, "permission_denied")

    def _head(self, extra):
        h = {"Authorization": "Bearer " + self.key, "Content-Type":
             "multipart/form-data; boundary=LIMITB"}
        h.update(extra)
        return raw_head("POST", DOCS, "127.0.0.1", h)

    FILE_PART = (b"--LIMITB\r\nContent-Disposition: form-data; name=\"file\"; "
                 b"filename=\"big.txt\"\r\nContent-Type: text/plain\r\n\r\n")
    END = b"\r\n--LIMITB--\r\n"

    def test_too_large_declared(self):
        """Content-Length over the limit: 413 at once, the body never read."""
        for declared in (MAX_FILE + 300 * 1024, 10 * MAX_FILE, 2 ** 40):
            with self.subTest(content_length=declared):
                t0 = time.time()
                s = self.server.connect(timeout=10)
                try:
                    s.sendall(self._head({"Content-Length": str(declared)}) + self.FILE_PART
                              + b"a" * 4096)
                    r = read_response(s, timeout=5)
                finally:
                    s.close()
                self.assertError(r, 413, "file_too_large", {"file", None})
                self.assertLess(time.time() - t0, 2.0, "the 413 waited for the body")
        self.assertNoRecord()
        self.assertTrue(self.server.alive())

    def _send(self, head_extra, parts, chunked=False):
        """Send headers then the byte strings of 'parts' (an iterable) over a raw socket,
        tolerating a server that answers and closes early; returns the response."""
        s = self.server.connect(timeout=60)
        try:
            s.sendall(self._head(head_extra))
            try:
                for data in parts:
                    if chunked:
                        s.sendall(b"%x\r\n" % len(data) + data + b"\r\n")
                    else:
                        s.sendall(data)
                if chunked:
                    s.sendall(b"0\r\n\r\n")
            except OSError:
                pass  # the server may answer and close before the end
            return read_response(s, timeout=30)
        finally:
            s.close()

    def _file_parts(self, size, first=b""):
        """The multipart body of one file of 'size' bytes that starts with 'first', in ~1 MiB
        pieces (text, or a damaged PDF when 'first' is %PDF-: either is processed quickly)."""
        yield self.FILE_PART
        block = b"lorem ipsum dolor sit amet " * 38836
        left = size
        if first:
            yield first
            left -= len(first)
        while left > 0:
            piece = block[:left]
            yield piece
            left -= len(piece)
        yield self.END

    def _length(self, size):
        return len(self.FILE_PART) + size + len(self.END)

    def test_too_large_streamed(self):
        """A body that does not declare its size (chunked), or declares one within the form
        overhead allowance, is counted while read: 413 once the file passes 52,428,800."""
        with self.subTest(case="chunked"):
            r = self._send({"Transfer-Encoding": "chunked"},
                           self._file_parts(MAX_FILE + 1024 * 1024), chunked=True)
            self.assertError(r, 413, "file_too_large", {"file", None})
        with self.subTest(case="Content-Length within the allowance, file one byte over"):
            r = self._send({"Content-Length": str(self._length(MAX_FILE + 1))},
                           self._file_parts(MAX_FILE + 1))
            self.assertError(r, 413, "file_too_large", {"file", None})
        self.assertNoRecord()
        self.assertEqual(self.temp_uploads(), [], "a temporary upload file was left behind")
        self.assertTrue(self.server.alive())

    def test_exactly_the_limit_is_accepted(self):
        """52,428,800 bytes is allowed, by Content-Length and chunked (a damaged PDF, so that
        processing is quick)."""
        for label, extra, chunked in (
                ("Content-Length", {"Content-Length": str(self._length(MAX_FILE))}, False),
                ("chunked", {"Transfer-Encoding": "chunked"}, True)):
            with self.subTest(case=label):
                r = self._send(extra, self._file_parts(MAX_FILE, b"%PDF-1.4\n"), chunked)
                d = self.assertJson(r, 200)
                self.assertEqual(d["size_bytes"], MAX_FILE)
                self.assertEqual(d["content_type"], "application/pdf")
                done = self.wait_done(self.key, d["id"], timeout=60)
                self.assertEqual(done["status"], "failed", done)
                r = self.server.request("DELETE", DOCS + "/" + d["id"], key=self.key)
                self.assertJson(r)

    def test_ordinary_large_upload(self):
        """A 3 MiB DOCX (a small text and a large embedded image) sent as any client sends it:
        with its Content-Length."""
        m = marker()
        b = io.BytesIO()
        with zipfile.ZipFile(b, "w", zipfile.ZIP_DEFLATED) as z:
            z.writestr("[Content_Types].xml", '<?xml version="1.0"?><Types xmlns="http://'
                       'schemas.openxmlformats.org/package/2006/content-types"/>')
            z.writestr("word/document.xml",
                       '<?xml version="1.0" encoding="UTF-8"?><w:document xmlns:w="http://'
                       'schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body><w:p>'
                       '<w:r><w:t>The photo shows %s at dawn.</w:t></w:r></w:p></w:body>'
                       '</w:document>' % m)
            z.writestr("word/media/image1.png", os.urandom(3 * 1024 * 1024),
                       compress_type=zipfile.ZIP_STORED)
        data = b.getvalue()
        self.assertGreater(len(data), 3 * 1024 * 1024)
        body, ctype = multipart([], [("file", "photo.docx", None, data)])
        s = self.server.connect(timeout=60)
        try:
            s.sendall(raw_head("POST", DOCS, "127.0.0.1", {
                "Authorization": "Bearer " + self.key, "Content-Type": ctype,
                "Content-Length": str(len(body))}))
            try:
                s.sendall(body)
            except OSError:
                pass
            r = read_response(s, timeout=30)
        finally:
            s.close()
        d = self.assertJson(r, 200)
        self.assertEqual(d["size_bytes"], len(data))
        self.assertEqual(d["sha256"], hashlib.sha256(data).hexdigest())
        done = self.wait_done(self.key, d["id"])
        self.assertEqual(done["status"], "ready", done)
        self.assertEqual(self.query_docs(self.key, m)[:1], [d["id"]])
        self.assertJson(self.server.request("DELETE", DOCS + "/" + d["id"], key=self.key))

    def test_query_validation(self):
        emp = self.assertJson(self.server.get("/v1/employees?limit=1", key=self.key))
        emp = emp["employees"][0]["id"]
        for label, body, status, code, param in (
                ("missing", {}, 400, "invalid_request", "query"),
                ("empty", {"query": ""}, 400, "invalid_request", "query"),
                ("blank", {"query": " \t\n "}, 400, "invalid_request", "query"),
                ("too long", {"query": "x" * 2001}, 400, "invalid_request", "query"),
                ("not a string", {"query": 5}, 400, "invalid_request", "query"),
                ("limit 0", {"query": "x", "limit": 0}, 400, "invalid_request", "limit"),
                ("limit 51", {"query": "x", "limit": 51}, 400, "invalid_request", "limit"),
                ("limit string", {"query": "x", "limit": "5"}, 400, "invalid_request", "limit"),
                ("limit float", {"query": "x", "limit": 2.5}, 400, "invalid_request", "limit"),
                ("unknown field", {"query": "x", "k": 1}, 400, "invalid_request", "k"),
                ("unknown filter", {"query": "x", "filters": {"x": 1}}, 400, "invalid_request",
                 "filters.x"),
                ("filters not object", {"query": "x", "filters": []}, 400, "invalid_request",
                 "filters"),
                ("tags not array", {"query": "x", "filters": {"tags": "a"}}, 400,
                 "invalid_request", "filters.tags"),
                ("tag not string", {"query": "x", "filters": {"tags": [1]}}, 400,
                 "invalid_request", {"filters.tags", "filters.tags[0]"}),
                ("employee_id not string", {"query": "x", "filters": {"employee_id": 1}}, 400,
                 "invalid_request", "filters.employee_id"),
                ("unknown employee", {"query": "x", "filters": {"employee_id": NO_EMP}}, 404,
                 "employee_not_found", "filters.employee_id")):
            with self.subTest(case=label):
                r = self.server.post(QUERY, body, key=self.key)
                self.assertError(r, status, code, param)
        for ok in ({"query": "x", "limit": 1}, {"query": "x", "limit": 50},
                   {"query": "x" * 2000}, {"query": "x", "filters": {}},
                   {"query": "x", "filters": {"tags": []}},
                   {"query": "x", "filters": {"employee_id": emp, "tags": ["a"]}}):
            with self.subTest(ok=str(ok)[:60]):
                self.query(self.key, ok["query"], **{k: v for k, v in ok.items()
                                                      if k != "query"})
        r = self.server.request("POST", QUERY, body=b"query=x", key=self.key,
                                content_type="text/plain")
        self.assertError(r, 415, "unsupported_media_type")

    def test_missing_documents(self):
        for method, path in (("GET", DOCS + "/" + NO_DOC), ("DELETE", DOCS + "/" + NO_DOC),
                             ("GET", DOCS + "/not-an-id")):
            with self.subTest(method=method, path=path):
                r = self.server.request(method, path, key=self.key)
                self.assertError(r, 404, "document_not_found", ID_PARAM)
        for q, param in (("limit=0", "limit"), ("limit=101", "limit"), ("limit=x", "limit"),
                         ("before=garbage", "before")):
            with self.subTest(query=q):
                r = self.server.get(DOCS + "?" + q, key=self.key)
                self.assertError(r, 400, "invalid_request", param)


# ---- Records, lists, delete, filters, isolation, idempotency ----

class DocumentsTest(KnowledgeCase):

    def test_progress_moves(self):
        """A large upload shows its processing move: progress (chunks embedded / chunks) is
        null until the text is cut, then grows to 1, never back."""
        key = self.org()
        words = ["refund", "invoice", "shipping", "warranty", "password", "schedule", "report",
                 "meeting", "contract", "budget"]
        text = "\n".join("Paragraph %d is about the %s and the %s of the quarter. " % (
            i, words[i % 10], words[(i * 7) % 10]) * 6 for i in range(300))
        d = self.upload(key, text.encode(), filename="big.txt", wait=False)
        seen = []
        deadline = time.time() + READY_TIMEOUT
        while True:
            cur = self.assertJson(self.get_doc(key, d["id"]))
            self.checkDocument(cur)
            seen.append(cur["progress"])
            if cur["status"] != "processing":
                break
            self.assertLess(time.time(), deadline, "still processing")
            time.sleep(0.01)
        self.assertEqual(cur["status"], "ready", cur)
        self.assertEqual(seen[-1], 1)
        numbers = [p for p in seen if p is not None]
        self.assertEqual(numbers, sorted(numbers), "progress never goes back: %s" % seen)
        self.assertTrue(any(0 < p < 1 for p in numbers),
                        "no intermediate value in %d observations" % len(seen))

    def employees(self, key):
        body = self.assertJson(self.server.get("/v1/employees?limit=100", key=key))
        return [e["id"] for e in body["employees"]]

    def test_record_and_json_array_fields(self):
        key = self.org()
        a, b = self.employees(key)[:2]
        data = b"Sales playbook: always follow up within two days.\n"
        r = self.upload_raw(key, [("name", "Playbook \u00e9dition"),
                                  ("tags", json.dumps(["sales", "playbook"])),
                                  ("employee_ids", json.dumps([a, b]))],
                            [("file", "dir/playbook.txt", "text/plain", data)])
        d = self.assertJson(r)
        self.checkDocument(d)
        self.assertEqual(d["name"], "Playbook \u00e9dition")
        self.assertEqual(d["filename"], "playbook.txt", "the path part of the file name is kept")
        self.assertEqual(d["tags"], ["sales", "playbook"])
        self.assertEqual(d["employee_ids"], [a, b])
        self.assertEqual(d["content_type"], "text/plain")
        self.assertEqual(d["size_bytes"], len(data))
        self.assertEqual(d["sha256"], hashlib.sha256(data).hexdigest())
        done = self.wait_done(key, d["id"])
        self.assertEqual(done["status"], "ready")
        self.assertEqual(done["chunk_count"], 1)
        self.assertEqual(self.assertJson(self.get_doc(key, d["id"])), done)
        listed = self.list_docs(key)["documents"]
        self.assertEqual(listed, [done])

    def test_many_chunks(self):
        key = self.org()
        para = ("Paragraph number %d explains one more rule of the very long employee "
                "handbook, with enough words to fill a chunk on its own accord. ")
        text = "\n\n".join((para % i) * 4 for i in range(30)).encode()
        d = self.upload(key, text, filename="handbook.txt")
        self.assertGreater(d["chunk_count"], 5)
        hits = self.query(key, "rule of the employee handbook", limit=50)
        self.assertGreater(len({h["chunk_id"] for h in hits}), 5)
        self.assertEqual(len(hits), len({h["chunk_id"] for h in hits}), "a chunk twice")

    def test_list_filters_and_pagination(self):
        key = self.org()
        a, b = self.employees(key)[:2]
        docs, recs = {}, {}
        specs = [("hr1", ["hr"], []), ("fin", ["finance"], []), ("hrpol", ["hr", "policy"], [a]),
                 ("none", [], []), ("bonly", ["hr"], [b])]
        for name, tags, emps in specs:
            d = self.upload(key, ("Document %s body text.\n" % name).encode(),
                            filename=name + ".txt", tags=tags, employee_ids=emps, wait=False)
            docs[name] = d["id"]
            recs[d["id"]] = d
        # newest first: created_at, then id (two uploads may share a millisecond)
        order = lambda names: sorted((docs[n] for n in names), reverse=True,
                                     key=lambda i: (recs[i]["created_at"], i))
        newest_first = order(docs)
        self.assertEqual(self.all_doc_ids(key), newest_first)
        self.assertEqual(self.all_doc_ids(key, tag="hr"), order(["bonly", "hrpol", "hr1"]))
        self.assertEqual(self.all_doc_ids(key, tag="policy"), [docs["hrpol"]])
        self.assertEqual(self.all_doc_ids(key, tag="nothing"), [])
        # employee_id: the documents that employee may read (its own and the shared ones)
        self.assertEqual(self.all_doc_ids(key, employee_id=a),
                         order(["none", "hrpol", "fin", "hr1"]))
        self.assertEqual(self.all_doc_ids(key, tag="hr", employee_id=b), order(["bonly", "hr1"]))
        # an employee that does not exist (or is another organization's) is not a filter
        self.assertError(self.server.get(DOCS + "?employee_id=" + NO_EMP, key=key), 404,
                         "employee_not_found", "employee_id")
        # pages of 2 with before=
        seen, before, pages = [], None, 0
        while True:
            q = {"limit": 2}
            if before:
                q["before"] = before
            body = self.list_docs(key, **q)
            pages += 1
            self.assertLessEqual(len(body["documents"]), 2)
            seen += [d["id"] for d in body["documents"]]
            if not body["has_more"]:
                self.assertIsNone(body["next_cursor"])
                break
            self.assertIsInstance(body["next_cursor"], str)
            before = body["next_cursor"]
            # an insert between pages does not shift the next page
            if pages == 1:
                late = self.upload(key, b"Late arrival.\n", filename="late.txt", wait=False)
        self.assertEqual(pages, 3)
        self.assertEqual(seen, newest_first)
        self.assertEqual(self.all_doc_ids(key), [late["id"]] + newest_first)
        for d in self.all_doc_ids(key):
            self.wait_done(key, d)

    def test_delete(self):
        key = self.org()
        m = marker()
        d = self.upload(key, ("The vault combination is %s.\n" % m).encode(), filename="v.txt")
        keep = self.upload(key, ("Another note mentions %s too.\n" % m).encode(),
                           filename="k.txt")
        path = os.path.join(self.files_dir(), d["id"])
        had_file = os.path.exists(path)
        self.assertEqual(set(self.query_docs(key, m)), {d["id"], keep["id"]})
        r = self.server.request("DELETE", DOCS + "/" + d["id"], key=key)
        self.assertEqual(self.assertJson(r), {"id": d["id"], "deleted": True})
        self.assertError(self.get_doc(key, d["id"]), 404, "document_not_found", ID_PARAM)
        r = self.server.request("DELETE", DOCS + "/" + d["id"], key=key)
        self.assertError(r, 404, "document_not_found", ID_PARAM)
        self.assertEqual(self.query_docs(key, m, limit=50), [keep["id"]])
        self.assertNotIn(d["id"], self.query_docs(key, "vault combination", limit=50))
        self.assertNotIn(d["id"], self.all_doc_ids(key))
        if had_file:
            self.assertFalse(os.path.exists(path), "the deleted document's file is still there")
        # delete while processing: never becomes visible afterwards
        m2 = marker()
        big = ("Processing race text %s. " % m2 + "filler words here " * 2000).encode()
        d2 = self.upload(key, big, filename="race.txt", wait=False)
        r = self.server.request("DELETE", DOCS + "/" + d2["id"], key=key)
        self.assertJson(r)
        # one organization's documents are processed one at a time, in order: once the next
        # one is ready, whatever the worker did with the deleted one is over
        self.upload(key, b"The witness note.", filename="after.txt")
        self.assertError(self.get_doc(key, d2["id"]), 404, "document_not_found", ID_PARAM)
        self.assertNotIn(d2["id"], self.query_docs(key, m2, limit=50))
        self.assertNotIn(d2["id"], self.all_doc_ids(key))

    def test_other_org_is_404(self):
        k1, k2 = self.org(), self.org()
        m = marker()
        d = self.upload(k1, ("Org secret %s.\n" % m).encode())
        self.assertError(self.get_doc(k2, d["id"]), 404, "document_not_found", ID_PARAM)
        r = self.server.request("DELETE", DOCS + "/" + d["id"], key=k2)
        self.assertError(r, 404, "document_not_found", ID_PARAM)
        self.assertEqual(self.all_doc_ids(k2), [])
        self.assertEqual(self.query_docs(k2, m), [])
        self.assertEqual(self.query_docs(k1, m), [d["id"]])

    def test_live_and_test_mode_apart(self):
        slug = "kn-mode-" + uuid.uuid4().hex[:6]
        live = self.server.create_key(slug, credits=1000)
        test = self.server.create_key(slug, mode="test")
        ml, mt = marker(), marker()
        dl = self.upload(live, ("Live fact %s.\n" % ml).encode(), filename="live.txt")
        dt = self.upload(test, ("Test fact %s.\n" % mt).encode(), filename="test.txt")
        for key, mine, other, mine_m, other_m in ((live, dl, dt, ml, mt),
                                                  (test, dt, dl, mt, ml)):
            with self.subTest(view="live" if key == live else "test"):
                self.assertEqual(self.all_doc_ids(key), [mine["id"]])
                self.assertError(self.get_doc(key, other["id"]), 404, "document_not_found",
                                 ID_PARAM)
                r = self.server.request("DELETE", DOCS + "/" + other["id"], key=key)
                self.assertError(r, 404, "document_not_found", ID_PARAM)
                self.assertNotIn(other["id"], self.query_docs(key, other_m, limit=50))
                self.assertNotIn(other["id"], self.query_docs(key, other_m + " fact",
                                                              limit=50))
                self.assertEqual(self.query_docs(key, mine_m)[:1], [mine["id"]])
        # a live employee id does not exist in test mode
        live_emp = self.employees(live)[0]
        r = self.upload_raw(test, [("employee_ids", live_emp)],
                            [("file", "a.txt", None, b"x y z")])
        self.assertError(r, 404, "employee_not_found", "employee_ids")

    def test_tags_any_of(self):
        key = self.org()
        m = marker()
        ids = {}
        for name, tags in (("a", ["hr"]), ("b", ["finance"]), ("c", ["hr", "policy"]),
                           ("d", []), ("e", ["legal"])):
            ids[name] = self.upload(key, ("Shared word %s in %s.\n" % (m, name)).encode(),
                                    filename=name + ".txt", tags=tags)["id"]
        got = lambda tags: set(self.query_docs(key, m, limit=50, filters={"tags": tags}))
        self.assertEqual(got(["finance", "policy"]), {ids["b"], ids["c"]})
        self.assertEqual(got(["hr"]), {ids["a"], ids["c"]})
        self.assertEqual(got(["nope"]), set())
        self.assertEqual(got([]), set(ids.values()), "an empty tag list filters nothing")
        self.assertEqual(set(self.query_docs(key, m, limit=50)), set(ids.values()))
        hit = [h for h in self.query(key, m, limit=50) if h["document_id"] == ids["c"]][0]
        self.assertEqual(hit["tags"], ["hr", "policy"])

    def test_query_employee_filter(self):
        key = self.org()
        a, b = self.employees(key)[:2]
        m = marker()
        da = self.upload(key, ("Only A reads %s.\n" % m).encode(), filename="a.txt",
                         employee_ids=[a])["id"]
        dab = self.upload(key, ("A and B read %s.\n" % m).encode(), filename="ab.txt",
                          employee_ids=[a, b])["id"]
        dall = self.upload(key, ("Everyone reads %s.\n" % m).encode(), filename="all.txt")["id"]
        q = lambda **f: set(self.query_docs(key, m, limit=50, **f))
        self.assertEqual(q(filters={"employee_id": a}), {da, dab, dall})
        self.assertEqual(q(filters={"employee_id": b}), {dab, dall})
        self.assertEqual(q(), {da, dab, dall}, "a query naming no employee sees everything")
        self.assertEqual(q(filters={"employee_id": b, "tags": ["x"]}), set())

    def test_query_limit_and_scores(self):
        key = self.org()
        m = marker()
        for i in range(8):
            self.upload(key, ("Entry %d about %s and other things.\n" % (i, m)).encode(),
                        filename="e%d.txt" % i, wait=False)
        for d in self.all_doc_ids(key):
            self.wait_done(key, d)
        self.assertEqual(len(self.query(key, m)), 5, "the default limit is 5")
        self.assertEqual(len(self.query(key, m, limit=3)), 3)
        self.assertEqual(len(self.query(key, m, limit=50)), 8)
        self.assertEqual(len(self.query(key, m, limit=1)), 1)
        # a query whose FTS form is empty (punctuation only) is not an error
        self.query(key, "?!...")
        # FTS syntax in the query is taken literally
        for text in ('"unbalanced', "a AND OR NOT b", "col:x", "x*", "NEAR(a b)", "(", "^x"):
            with self.subTest(query=text):
                self.query(key, text)

    def test_idempotent_upload(self):
        key = self.org()
        body, ctype = multipart([("name", "Idem")], [("file", "i.txt", None, b"first file\n")])
        h = {"Idempotency-Key": "up-" + uuid.uuid4().hex}
        r1 = self.server.request("POST", DOCS, body=body, key=key, content_type=ctype, headers=h)
        d1 = self.assertJson(r1)
        self.assertIsNone(r1.header("Idempotent-Replayed"))
        r2 = self.server.request("POST", DOCS, body=body, key=key, content_type=ctype, headers=h)
        self.assertEqual(self.assertJson(r2), d1, "the replay is not the first response")
        self.assertEqual(r2.header("Idempotent-Replayed"), "true")
        self.assertEqual(self.all_doc_ids(key), [d1["id"]], "the replay created a document")
        body3, ctype3 = multipart([("name", "Idem")], [("file", "i.txt", None, b"other file\n")])
        r3 = self.server.request("POST", DOCS, body=body3, key=key, content_type=ctype3,
                                 headers=h)
        self.assertError(r3, 400, "idempotency_key_reused", {"Idempotency-Key", None})
        self.assertEqual(self.all_doc_ids(key), [d1["id"]])
        self.wait_done(key, d1["id"])


# ---- Chat cites only what the employee may read ----

class KnowledgeChatTest(ChatTestCase, KnowledgeCase):

    @classmethod
    def setUpServer(cls):
        cls.key = cls.server.create_key("kn-chat", credits=1000000)
        cls.test = cls.server.create_key("kn-chat", mode="test")

    def reply(self, key, emp, message):
        m = self.assertJson(self.chat(key, emp, message), 200)
        self.assertEqual(m["employee_id"], emp)
        self.assertIsInstance(m["sources"], list)
        for s in m["sources"]:
            self.assertEqual(set(s), {"document_id", "document_name", "chunk_id", "score"}, s)
            self.assertRegex(s["document_id"], DOC_ID_RE)
            self.assertRegex(s["chunk_id"], CHUNK_ID_RE)
            self.assertTrue(0 <= s["score"] <= 1, s)
        return m

    def test_reader_rule_in_chat(self):
        a = self.employee(self.key, "starter", 0)
        b = self.employee(self.key, "starter", 1)
        secret = "The Zephyr launch code is ORCHID-7741 and the launch window opens on 14 March."
        question = "What is the Zephyr launch code?"
        # B can read nothing yet: the reply says so and cites nothing
        m = self.reply(self.key, b, question)
        self.assertEqual(m["sources"], [])
        self.assertIn("found nothing", m["content"].lower())
        d = self.upload(self.key, (secret + "\n").encode(), filename="zephyr.txt",
                        name="Zephyr plan", employee_ids=[a])
        ma = self.reply(self.key, a, question)
        self.assertIn(d["id"], [s["document_id"] for s in ma["sources"]], ma)
        src = [s for s in ma["sources"] if s["document_id"] == d["id"]][0]
        self.assertEqual(src["document_name"], "Zephyr plan")
        self.assertIn("ORCHID-7741", ma["content"], "the builtin reply does not quote it")
        self.assertIn("Zephyr plan", ma["content"], "the builtin reply does not name it")
        mb = self.reply(self.key, b, question)
        self.assertNotIn(d["id"], [s["document_id"] for s in mb["sources"]])
        self.assertNotIn("ORCHID", mb["content"])
        self.assertEqual(mb["sources"], [])
        self.assertIn("found nothing", mb["content"].lower())
        # the stored conversation keeps the sources
        conv = self.conversation(self.key, ma["conversation_id"])
        self.assertEqual(conv["messages"][-1]["sources"], ma["sources"])
        # streaming: the completed message carries the same sources
        res = self.stream(self.key, a, question)
        self.assertEqual(res.status, 200, res)
        done = res.of("message.completed")[-1]["json"]
        self.assertEqual([s["document_id"] for s in done["sources"]],
                         [s["document_id"] for s in ma["sources"]])
        # a shared document is cited for B; A's document still is not
        shared = self.upload(self.key, b"Zephyr launch parties are held in the atrium.\n",
                             filename="parties.txt", name="Parties")
        mb = self.reply(self.key, b, question)
        ids = [s["document_id"] for s in mb["sources"]]
        self.assertIn(shared["id"], ids)
        self.assertNotIn(d["id"], ids)
        self.assertNotIn("ORCHID", mb["content"])
        # a test-mode employee never sees live knowledge
        t = self.employee(self.test, "starter", 0)
        mt = self.reply(self.test, t, question)
        self.assertEqual(mt["sources"], [])
        self.assertNotIn("ORCHID", mt["content"])
        # deleted: never cited again
        self.assertJson(self.server.request("DELETE", DOCS + "/" + d["id"], key=self.key))
        ma = self.reply(self.key, a, question)
        self.assertNotIn(d["id"], [s["document_id"] for s in ma["sources"]])
        self.assertNotIn("ORCHID", ma["content"])

    def test_builtin_reply_leads_with_the_answering_sentence(self):
        """The built-in engine opens with the one or two sentences of the readable knowledge
        nearest the question, cited by passage number, instead of whole passages after a
        restatement; the employee's instructions are never in the reply."""
        key = self.server.create_key("kn-lead-" + uuid.uuid4().hex[:6], credits=100000)
        secret = "Always upsell the premium warranty " + uuid.uuid4().hex
        emp = self.new_employee(key, name="Rita", role="Support agent",
                                instructions=secret)["id"]
        policy = ("Refund policy. Items can be returned within 30 days of delivery in their "
                  "original packaging. Refunds are processed to the original card within 5 "
                  "business days. Shipping costs are not refunded unless the item arrived "
                  "damaged. Gift cards cannot be exchanged for cash. To start a return, open "
                  "the order page and choose Return item.\n")
        d = self.upload(key, policy.encode(), filename="refunds.txt", name="Refund policy")
        cases = (
            ("How long until I am reimbursed after a return?",
             "Refunds are processed to the original card within 5 business days. [1]"),
            ("Can I get cash for a gift card?", "Gift cards cannot be exchanged for cash. [1]"),
            ("How do I return an item?",
             "To start a return, open the order page and choose Return item. [1]"),
        )
        for question, lead in cases:
            with self.subTest(question=question):
                m = self.reply(key, emp, question)
                self.assertTrue(m["content"].startswith(lead), m["content"])
                self.assertEqual([s["document_id"] for s in m["sources"]][:1], [d["id"]])
                self.assertIn("Sources: [1] Refund policy", m["content"])
                self.assertNotIn("You asked", m["content"], "no restatement before the lead")
                self.assertNotIn(secret, m["content"])
                self.assertNotIn("upsell", m["content"])
                # streamed, the same reply
                res = self.stream(key, emp, question)
                self.assertEqual(res.status, 200, res)
                done = res.of("message.completed")[-1]["json"]
                self.assertEqual(done["content"], m["content"])

    def test_unrelated_question_cites_nothing(self):
        """Contract §9: the builtin engine 'says plainly when it found nothing'. A question
        about something no document covers must not cite passages that merely share words
        like 'the' or 'is' with it."""
        key = self.server.create_key("kn-unrel-" + uuid.uuid4().hex[:6], credits=100000)
        emp = self.employee(key, "starter", 0)
        for name, text in (
                ("Warranty", "Every device we sell is covered against manufacturing defects "
                             "for two years from the date of purchase."),
                ("Passwords", "Passwords must be at least fourteen characters long and are "
                              "rotated every ninety days."),
                ("Parking", "Staff may use the underground garage for free; bicycles go in "
                            "the locked shed next to the entrance.")):
            self.upload(key, (text + "\n").encode(), filename=name.lower() + ".txt", name=name)
        m = self.reply(key, emp, "How long is the warranty on a device?")
        self.assertIn("Warranty", [s["document_name"] for s in m["sources"]])
        for question in ("What is the capital of France?",
                         "Write me a haiku about autumn leaves."):
            with self.subTest(question=question):
                m = self.reply(key, emp, question)
                self.assertEqual([s["document_name"] for s in m["sources"]], [],
                                 "an unrelated question cites knowledge")
                self.assertIn("found nothing", m["content"].lower())


if __name__ == "__main__":
    unittest.main()
