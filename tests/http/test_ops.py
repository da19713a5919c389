# SPDX-License-Identifier: MIT
"""Operations endpoints: /healthz, /readyz, /metrics, /v1/openapi.json. None needs a key."""

import json
import re
import time

from harness import ServerTestCase

SAMPLE_RE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)'
                       r'(\{((?:[^"}]|"(?:[^"\\]|\\.)*")*)\})? (\S+)( -?\d+)?$')
LABEL_RE = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def parse_metrics(text):
    """[(name, {label: value}, float)] of every sample line; raises on a malformed line."""
    out = []
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = SAMPLE_RE.match(line)
        if not m:
            raise ValueError("bad metrics line: %r" % line)
        labels = dict(LABEL_RE.findall(m.group(3) or ""))
        out.append((m.group(1), labels, float(m.group(4))))
    return out


class OpsTest(ServerTestCase):
    one_node = True  # one node's /metrics

    @classmethod
    def setUpServer(cls):
        cls.key = cls.server.create_key("ops-org")

    def test_healthz(self):
        r = self.server.get("/healthz")
        self.assertEqual(self.assertJson(r), {"status": "ok"})

    def test_readyz(self):
        r = self.server.get("/readyz")
        self.assertEqual(self.assertJson(r), {"status": "ready"})

    def test_no_key_needed(self):
        for path in ("/healthz", "/readyz", "/metrics", "/v1/openapi.json"):
            with self.subTest(path=path):
                self.assertEqual(self.server.get(path).status, 200)

    def metrics(self):
        r = self.server.get("/metrics")
        self.assertEqual(r.status, 200)
        ct = r.header("Content-Type", "")
        self.assertTrue(ct.startswith("text/plain"), ct)
        self.assertRequestId(r)
        return r.body.decode("utf-8")

    def test_metrics_names(self):
        self.server.get("/v1/employees", key=self.key)
        text = self.metrics()
        samples = parse_metrics(text)
        names = {s[0] for s in samples}
        self.assertIn("workforce_http_requests_total", names)
        for suffix in ("_bucket", "_sum", "_count"):
            self.assertIn("workforce_http_request_duration_seconds" + suffix, names)
        # The rate-limit counter may have no sample yet, but its name is exposed.
        self.assertIn("workforce_rate_limited_total", text)
        types = dict(re.findall(r"^# TYPE (\S+) (\S+)$", text, re.M))
        for name, kind in (("workforce_http_requests_total", "counter"),
                           ("workforce_http_request_duration_seconds", "histogram"),
                           ("workforce_rate_limited_total", "counter")):
            if name in types:
                self.assertEqual(types[name], kind, name)
        for name, labels, _ in samples:
            if name == "workforce_http_requests_total":
                self.assertTrue({"route", "method", "status"} <= set(labels), labels)
            if name == "workforce_http_request_duration_seconds_bucket":
                self.assertIn("le", labels)
        buckets = [s for s in samples if s[0] == "workforce_http_request_duration_seconds_bucket"]
        self.assertTrue(any(s[1]["le"] == "+Inf" for s in buckets))

    def healthz_count(self):
        total = 0.0
        for name, labels, value in parse_metrics(self.metrics()):
            if (name == "workforce_http_requests_total" and "healthz" in labels.get("route", "")
                    and labels.get("method") == "GET" and labels.get("status") == "200"):
                total += value
        return total

    def test_metrics_count_requests(self):
        before = self.healthz_count()
        for _ in range(3):
            self.assertEqual(self.server.get("/healthz").status, 200)
        deadline = time.time() + 2
        after = self.healthz_count()
        while after < before + 3 and time.time() < deadline:
            time.sleep(0.1)
            after = self.healthz_count()
        self.assertEqual(after, before + 3)

    def test_metrics_count_errors_by_status(self):
        self.server.get("/v1/employees/emp_nosuchemployee000000000", key=self.key)
        self.server.get("/v1/nope")
        deadline = time.time() + 2
        while True:
            samples = parse_metrics(self.metrics())
            statuses = {s[1].get("status") for s in samples
                        if s[0] == "workforce_http_requests_total"}
            if {"404", "200"} <= statuses or time.time() > deadline:
                break
            time.sleep(0.1)
        self.assertIn("404", statuses)

    def test_openapi(self):
        r = self.server.get("/v1/openapi.json")
        doc = self.assertJson(r)
        self.assertIsInstance(doc.get("openapi"), str)
        self.assertRegex(doc["openapi"], r"^3\.1\.\d+$")
        self.assertIn("title", doc.get("info", {}))
        self.assertIn("version", doc.get("info", {}))
        paths = doc.get("paths", {})
        expected = {
            "/v1/employees": {"get", "post"},
            "/v1/employees/{id}": {"get", "patch"},
            "/v1/employees/{id}/stats": {"get"},
            "/v1/account": {"get"},
        }
        norm = {re.sub(r"\{[^}]+\}", "{id}", p): v for p, v in paths.items()}
        for path, methods in expected.items():
            with self.subTest(path=path):
                self.assertIn(path, norm, sorted(paths))
                self.assertTrue(methods <= set(norm[path]), sorted(norm[path]))
        json.dumps(doc)  # round-trips
