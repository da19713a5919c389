# SPDX-License-Identifier: MIT
"""Rate limits with WORKFORCE_RATE_LIMITS overriding the tier table.

starter 5/min, burst 3, 2 concurrent: the burst test and the headers test.
manager 3/min, burst 10: the minute window is hit before the bucket is empty.
agency 1000/min, burst 1000, 2 concurrent: concurrency alone.
Each test uses its own organization (limits are per organization and key mode)."""

import json
import re
import sys
import time
import unittest

from harness import PG_URL, ServerTestCase, raw_head, read_response, wait_for_safe_window

LIMITS = "starter:5/3/2,manager:3/10/2,agency:1000/1000/2"


class RateLimitTest(ServerTestCase):
    server_env = {"WORKFORCE_RATE_LIMITS": LIMITS}
    # With several nodes the requests of each test alternate between them: every limit here
    # holds across nodes (in the database, or in Redis with WORKFORCE_HTTP_REDIS_URL).

    def account(self, key):
        return self.server.get("/v1/account", key=key)

    def check_headers(self, r, limit):
        self.assertEqual(r.header("X-RateLimit-Limit"), str(limit), r)
        self.assertRegex(r.header("X-RateLimit-Remaining", ""), r"^\d+$")
        reset = r.header("X-RateLimit-Reset", "")
        self.assertRegex(reset, r"^\d+$")
        reset = int(reset)
        now = time.time()
        self.assertEqual(reset % 60, 0, "the window is aligned to the clock minute")
        self.assertGreater(reset, now - 1)
        self.assertLessEqual(reset, now + 61)
        return int(r.header("X-RateLimit-Remaining")), reset

    def assert429(self, r, code="rate_limit_exceeded", max_retry=60):
        self.assertError(r, 429, code)
        ra = r.header("Retry-After")
        self.assertIsNotNone(ra, "429 without Retry-After")
        self.assertRegex(ra, r"^\d+$")
        self.assertGreaterEqual(int(ra), 1)
        self.assertLessEqual(int(ra), max_retry)
        return int(ra)

    def test_headers_and_account(self):
        key = self.server.create_key("rl-headers")
        wait_for_safe_window(10)
        seen = []
        for _ in range(3):
            r = self.account(key)
            self.assertJson(r)
            seen.append(self.check_headers(r, 5))
        self.assertEqual([s[0] for s in seen], [4, 3, 2])
        self.assertEqual(len({s[1] for s in seen}), 1)
        self.assertEqual(r.json["rate_limits"],
                         {"requests_per_minute": 5, "burst": 3, "concurrent": 2})

    def test_burst(self):
        key = self.server.create_key("rl-burst")
        statuses = [self.account(key) for _ in range(4)]
        for r in statuses[:3]:
            self.assertJson(r)
        # One token comes back every 60/5 = 12 s.
        self.assert429(statuses[3], max_retry=13)
        self.check_headers(statuses[3], 5)
        # Any route with this key is limited, not only /v1/account.
        self.assert429(self.server.get("/v1/employees", key=key), max_retry=13)

    def test_minute_window(self):
        key = self.server.create_key("rl-minute", tier="manager")
        wait_for_safe_window(10)
        got = []
        for _ in range(3):
            r = self.account(key)
            self.assertJson(r)
            got.append(self.check_headers(r, 3)[0])
        self.assertEqual(got, [2, 1, 0])
        r = self.account(key)
        remaining, reset = self.check_headers(r, 3)
        ra = self.assert429(r)
        self.assertEqual(remaining, 0)
        self.assertLessEqual(ra, int(reset - time.time()) + 2, "Retry-After points at the reset")
        # Still refused (the bucket has tokens; the window does not).
        self.assert429(self.account(key))

    def test_live_and_test_counted_apart(self):
        live = self.server.create_key("rl-modes")
        test = self.server.create_key("rl-modes", mode="test")
        other = self.server.create_key("rl-modes-other")
        wait_for_safe_window(10)
        for _ in range(3):
            self.assertJson(self.account(live))
        self.assert429(self.account(live))
        r = self.account(test)
        self.assertJson(r)
        self.assertEqual(self.check_headers(r, 5)[0], 4)
        r = self.account(other)
        self.assertJson(r)
        self.assertEqual(self.check_headers(r, 5)[0], 4)

    def test_test_key_gets_starter_limits(self):
        self.server.create_key("rl-mgr", tier="manager")
        test = self.server.create_key("rl-mgr", mode="test")
        r = self.account(test)
        self.assertJson(r)
        self.check_headers(r, 5)
        self.assertEqual(r.json["rate_limits"],
                         {"requests_per_minute": 5, "burst": 3, "concurrent": 2})

    def test_no_key_routes_not_limited(self):
        for _ in range(15):
            self.assertEqual(self.server.get("/healthz").status, 200)

    def test_unauthenticated_requests_do_not_count(self):
        key = self.server.create_key("rl-unauth")
        wait_for_safe_window(10)
        for _ in range(10):
            r = self.server.get("/v1/account", headers={"Authorization": "Bearer nope"})
            self.assertError(r, 401, "invalid_api_key")
        r = self.account(key)
        self.assertJson(r)
        self.assertEqual(self.check_headers(r, 5)[0], 4)

    # -- concurrency: requests whose body is still arriving are in flight --

    def _slow_upload(self, key):
        body = json.dumps({"name": "Slow Sue", "role": "Uploader", "category": "operations"})
        body = body.encode()
        s = self.server.connect(timeout=20)
        s.sendall(raw_head("POST", "/v1/employees", "127.0.0.1", {
            "Authorization": "Bearer " + key,
            "Content-Type": "application/json",
            "Content-Length": str(len(body)),
        }) + body[:10])
        return s, body[10:]

    def concurrency_refusals(self):
        """429 concurrency_limit_exceeded answered so far, on every node (/metrics)."""
        found = re.findall(r'^workforce_rate_limited_total\{[^}]*code="concurrency_limit_exceeded"'
                           r'[^}]*\} ([0-9.e+]+)$', self.metrics(), re.M)
        return sum(float(v) for v in found)

    def third_refused(self, key, base, what, timeout):
        """Until a third request is refused for concurrency: a read refused (returned), or the
        second held request itself ("held"). Which one is refused is a race, not a fault: the
        server reads a held request's headers on its own thread (or node), and a read may be in
        flight at that moment, so the held request is then the third. A refused held request
        is answered only once its body is complete (it is small): /metrics tells it."""
        def refused():
            r = self.account(key)
            if r.status == 429:
                return r
            return "held" if self.concurrency_refusals() > base else None
        return self.poll(refused, what, timeout)

    def test_concurrency_limit(self):
        key = self.server.create_key("rl-conc", tier="agency")
        self.assertJson(self.account(key))
        emp0 = self.finished("/v1/employees", "POST")
        base = self.concurrency_refusals()
        held = [self._slow_upload(key) for _ in range(2)]
        r = None
        try:
            # both held uploads count once the server has read their headers
            r = self.third_refused(key, base, "the third request refused", 15)
            if r != "held":
                self.assert429(r, code="concurrency_limit_exceeded")
        finally:
            results = []
            for s, rest in held:
                try:
                    s.sendall(rest)
                    results.append(read_response(s, timeout=15))
                finally:
                    s.close()
            if r is None:
                sys.stderr.write("\nthe held requests were answered: %r\n" % (results,))
        if r == "held":
            # one held request was the third: refused; the other went through
            statuses = sorted(x.status for x in results)
            self.assertEqual(statuses, [200, 429], results)
            self.assert429([x for x in results if x.status == 429][0],
                           code="concurrency_limit_exceeded")
        else:
            for x in results:
                self.assertJson(x, 200)
        # The slots are free again once /metrics counts both requests finished (a client can
        # read its response a moment before the server has released the slot).
        self.wait_finished("/v1/employees", "POST", emp0 + 2)
        for _ in range(3):
            self.assertJson(self.account(key))
        self.assertGreater(self.concurrency_refusals(), base)

    def test_concurrency_released_on_abort(self):
        # Conditions, not pauses: a slot is free once /metrics counts its request finished.
        key = self.server.create_key("rl-conc-abort", tier="agency")
        emp0 = self.finished("/v1/employees", "POST")
        acc0 = self.finished("/v1/account", "GET")
        for _ in range(3):
            held = [self._slow_upload(key) for _ in range(2)]
            for s, _ in held:
                s.close()
        self.wait_finished("/v1/employees", "POST", emp0 + 6)
        one, rest = self._slow_upload(key)
        try:
            # 'one' is in flight from its headers on: until then the account read is alone.
            self.assertJson(self.account(key))  # at most 1 held + this one = 2 <= 2
            self.wait_finished("/v1/account", "GET", acc0 + 1)
            base = self.concurrency_refusals()
            two, _ = self._slow_upload(key)
            try:
                # Both held uploads count once the server has read their headers (and none of
                # the six aborted ones does any more).
                r = self.third_refused(key, base, "the third request refused", 10)
                if r != "held":
                    self.assert429(r, code="concurrency_limit_exceeded")
            finally:
                two.close()
        finally:
            one.close()

    def test_metrics_count_rate_limited(self):
        key = self.server.create_key("rl-metrics", tier="manager")
        wait_for_safe_window(10)
        for _ in range(3):
            self.account(key)
        self.assert429(self.account(key))
        found = re.findall(r'^workforce_rate_limited_total\{[^}]*code="rate_limit_exceeded"[^}]*\}'
                           r' ([0-9.e+]+)$', self.metrics(), re.M)
        self.assertTrue(found, "workforce_rate_limited_total{code=rate_limit_exceeded}")
        self.assertGreaterEqual(sum(float(v) for v in found), 1)


class LimitsInTotalTest(ServerTestCase):
    """A starter organization gets its requests per minute in total, whichever node answers
    (requests alternate between the nodes on the PostgreSQL runs). The bucket is as large as
    the window here, so that the window alone decides within one minute."""

    server_env = {"WORKFORCE_RATE_LIMITS": "starter:60/60/5"}

    def test_starter_60_per_minute_in_total(self):
        key = self.server.create_key("rl-total")
        wait_for_safe_window(20)
        remaining, statuses = [], []
        for _ in range(64):
            r = self.server.get("/v1/account", key=key)
            statuses.append(r.status)
            remaining.append(int(r.header("X-RateLimit-Remaining", "-1")))
        self.assertEqual(statuses[:60], [200] * 60, statuses)
        self.assertEqual(statuses[60:], [429] * 4, statuses)
        # one window for all nodes: every admission counted once, in order
        self.assertEqual(remaining[:60], list(range(59, -1, -1)))
        self.assertEqual(remaining[60:], [0] * 4)
        self.assertError(self.server.get("/v1/account", key=key), 429, "rate_limit_exceeded")
