# SPDX-License-Identifier: MIT
"""The OpenAI-compatible door (contract §16, issue 14 item 3): GET /v1/openai/models[/{id}] and
POST /v1/openai/chat/completions. Blocking and streamed completions (chat.completion and
chat.completion.chunk framing, usage, [DONE]), charging and the conversation recorded as chat
records it, the mapping of `messages` to what the engine is asked (in front of
tests/mock/openai_mock.py), every refused input with OpenAI's error shape, type, code and param
(and nothing stored or charged), errors found before the handler (401, 403, 404, 405, 413, 415,
429) in OpenAI's shape too, and the official `openai` npm SDK against the server
(tests/npm/openai_sdk.mjs: once per `make test`, not in the ASan and PostgreSQL runs)."""

import json
import os
import shutil
import subprocess

from chatlib import MOCK_MODEL, ChatTestCase, MockChatTestCase, credits_for, sse_post, uniq
from harness import MIB, PG_URL, REPO_ROOT, read_response, raw_head

PATH = "/v1/openai/chat/completions"
NO_EMP = "emp_" + "Z" * 24
CONV_HEADER = "X-Workforce-Conversation-Id"
OPENAI_TYPES = {400: "invalid_request_error", 401: "authentication_error", 402: "insufficient_quota",
                403: "permission_error", 404: "invalid_request_error",
                405: "invalid_request_error", 413: "invalid_request_error",
                415: "invalid_request_error", 429: "rate_limit_error", 500: "api_error",
                502: "api_error", 503: "api_error"}


class OpenAICase(ChatTestCase):
    """Helpers: completions, and OpenAI-shaped error checks."""

    def complete(self, key, model, messages, headers=None, **fields):
        body = {"model": model, "messages": messages}
        body.update(fields)
        return self.server.post(PATH, body, key=key, headers=headers, timeout=60)

    def complete_ok(self, key, model, text="Hello there, what can you do?", **fields):
        r = self.complete(key, model, [{"role": "user", "content": text}], **fields)
        c = self.assertJson(r, 200)
        self.checkCompletion(c, model)
        return r, c

    def checkCompletion(self, c, model):
        self.assertEqual(set(c), {"id", "object", "created", "model", "choices", "usage"}, c)
        self.assertRegex(c["id"], r"^chatcmpl-msg_[A-Za-z0-9]{20,}$")
        self.assertEqual(c["object"], "chat.completion")
        self.assertIsInstance(c["created"], int)
        self.assertEqual(c["model"], model)
        self.assertEqual(len(c["choices"]), 1, c)
        ch = c["choices"][0]
        self.assertEqual(ch["index"], 0)
        self.assertEqual(ch["finish_reason"], "stop")
        self.assertEqual(ch["message"]["role"], "assistant")
        self.assertIsInstance(ch["message"]["content"], str)
        self.assertTrue(ch["message"]["content"])
        u = c["usage"]
        self.assertEqual(set(u), {"prompt_tokens", "completion_tokens", "total_tokens"})
        self.assertGreater(u["prompt_tokens"], 0)
        self.assertGreater(u["completion_tokens"], 0)
        self.assertEqual(u["total_tokens"], u["prompt_tokens"] + u["completion_tokens"])

    def assertOpenAIError(self, r, status, code, param=None):
        """OpenAI's error shape: {"error": {message, type, param, code}}, 'param' null when
        None, with our status and code and OpenAI's type for the status."""
        body = self.assertJson(r, status)
        self.assertEqual(set(body), {"error"}, body)
        err = body["error"]
        self.assertEqual(set(err), {"message", "type", "param", "code"}, body)
        self.assertEqual(err["code"], code, body)
        self.assertEqual(err["type"], OPENAI_TYPES[status], body)
        self.assertEqual(err["param"], param, body)
        self.assertIsInstance(err["message"], str)
        self.assertTrue(err["message"])
        return err

    def conversation_count(self, key):
        return len(self.conversations(key, limit=100)["conversations"])

    def stream_completion(self, key, model, text, **fields):
        body = {"model": model, "messages": [{"role": "user", "content": text}], "stream": True}
        body.update(fields)
        return sse_post(self.server, PATH, body, key=key, timeout=60)

    def checkChunks(self, res, model, include_usage):
        """The framing of a streamed completion; returns (content, usage or None)."""
        self.assertIsNone(res.response, res)
        self.assertEqual(res.status, 200)
        self.assertTrue(res.header("Content-Type", "").startswith("text/event-stream"))
        self.assertEqual(res.header("Cache-Control"), "no-cache")
        self.assertRegex(res.header(CONV_HEADER, ""), r"^conv_[A-Za-z0-9]{20,}$")
        self.assertIsNone(res.error, res)
        # Only data lines: no event names, no ids (OpenAI's framing).
        for line in res.lines:
            self.assertTrue(line.startswith("data: ") or line.strip() == "", line)
        self.assertEqual(set(res.names()), {"message"}, res)
        self.assertEqual(res.events[-1]["data"], "[DONE]", res)
        chunks = [e["json"] for e in res.events[:-1]]
        for c in chunks:
            self.assertIsInstance(c, dict, res)
        ids = {c["id"] for c in chunks}
        self.assertEqual(len(ids), 1, ids)
        self.assertRegex(ids.pop(), r"^chatcmpl-msg_[A-Za-z0-9]{20,}$")
        for c in chunks:
            self.assertEqual(c["object"], "chat.completion.chunk")
            self.assertEqual(c["model"], model)
            self.assertIsInstance(c["created"], int)
            if include_usage:
                self.assertIn("usage", c)
            else:
                self.assertNotIn("usage", c)
        usage = None
        if include_usage:
            last = chunks.pop()
            self.assertEqual(last["choices"], [], last)
            usage = last["usage"]
            self.assertEqual(usage["total_tokens"],
                             usage["prompt_tokens"] + usage["completion_tokens"])
            for c in chunks:
                self.assertIsNone(c["usage"])
        for c in chunks:
            self.assertEqual(len(c["choices"]), 1, c)
            self.assertEqual(c["choices"][0]["index"], 0)
        first, last = chunks[0]["choices"][0], chunks[-1]["choices"][0]
        self.assertEqual(first["delta"], {"role": "assistant", "content": ""})
        self.assertIsNone(first["finish_reason"])
        self.assertEqual(last["delta"], {})
        self.assertEqual(last["finish_reason"], "stop")
        middle = [c["choices"][0] for c in chunks[1:-1]]
        self.assertGreaterEqual(len(middle), 1, res)
        for ch in middle:
            self.assertEqual(set(ch["delta"]), {"content"}, ch)
            self.assertIsNone(ch["finish_reason"])
        return "".join(ch["delta"]["content"] for ch in middle), usage


class OpenAIDoorTest(OpenAICase):
    """The built-in engine: deterministic and offline."""

    @classmethod
    def setUpServer(cls):
        s = cls.server
        cls.live = s.create_key("oa-live", credits=100000)
        cls.test = s.create_key("oa-live", mode="test")
        cls.mgr = s.create_key("oa-mgr", tier="manager", credits=1000)
        cls.other = s.create_key("oa-other", credits=1000)
        cls.zero = s.create_key("oa-zero", credits=0)
        cls.reader = s.create_key("oa-live", scopes="employees:read")

    def setUp(self):
        self.emp = self.employee(self.live, "starter")
        self.memp = self.employee(self.live, "manager")

    # -- models --

    def test_models(self):
        body = self.assertJson(self.server.get("/v1/openai/models", key=self.live))
        self.assertEqual(set(body), {"object", "data"})
        self.assertEqual(body["object"], "list")
        ids = [m["id"] for m in body["data"]]
        every = self.employees(self.live)
        # A starter organization may chat with its starter employees only.
        self.assertEqual(sorted(ids), sorted(e["id"] for e in every if e["tier"] == "starter"))
        self.assertNotIn(self.memp, ids)
        org = self.assertJson(self.server.get("/v1/account", key=self.live))
        for m in body["data"]:
            self.assertEqual(set(m), {"id", "object", "created", "owned_by"}, m)
            self.assertEqual(m["object"], "model")
            self.assertIsInstance(m["created"], int)
            self.assertGreater(m["created"], 1700000000)
        self.assertIn(body["data"][0]["owned_by"], json.dumps(org))
        # A manager organization sees its manager employees too.
        mids = [m["id"] for m in self.assertJson(
            self.server.get("/v1/openai/models", key=self.mgr))["data"]]
        self.assertEqual(len(mids), len(self.employees(self.mgr)))
        # One model
        one = self.assertJson(self.server.get("/v1/openai/models/" + self.emp, key=self.live))
        self.assertEqual(one, [m for m in body["data"] if m["id"] == self.emp][0])
        self.assertOpenAIError(self.server.get("/v1/openai/models/" + NO_EMP, key=self.live),
                               404, "employee_not_found", "model")
        foreign = self.employee(self.other, "starter")
        self.assertOpenAIError(self.server.get("/v1/openai/models/" + foreign, key=self.live),
                               404, "employee_not_found", "model")
        self.assertOpenAIError(self.server.get("/v1/openai/models/" + self.memp, key=self.live),
                               403, "permission_denied", "model")

    # -- completions --

    def test_blocking_completion_charged_and_recorded(self):
        b0 = self.balance(self.live)
        text = "Hello there, " + uniq("what can you do")
        r, c = self.complete_ok(self.live, self.emp, text)
        conv_id = r.header(CONV_HEADER)
        self.assertRegex(conv_id or "", r"^conv_[A-Za-z0-9]{20,}$")
        u = c["usage"]
        credits = credits_for({"input_tokens": u["prompt_tokens"],
                               "output_tokens": u["completion_tokens"]})
        self.assertEqual(self.balance(self.live), b0 - credits)
        conv = self.conversation(self.live, conv_id)
        self.assertEqual(conv["employee_id"], self.emp)
        self.assertEqual(conv["title"], text[:80])
        self.assertEqual([(m["role"], m["content"]) for m in conv["messages"]],
                         [("user", text), ("assistant", c["choices"][0]["message"]["content"])])
        self.assertEqual(c["id"], "chatcmpl-" + conv["messages"][1]["id"])
        self.assertEqual(conv["messages"][1]["credits_used"], credits)
        # The same turn through /v1/chat answers the same (builtin is deterministic).
        m = self.chat_ok(self.live, self.emp, text)
        self.assertEqual(m["content"], c["choices"][0]["message"]["content"])
        self.assertEqual(m["usage"], {"input_tokens": u["prompt_tokens"],
                                      "output_tokens": u["completion_tokens"]})
        # Test keys are free.
        temp = self.employee(self.test, "starter")
        t0 = self.balance(self.test)
        self.complete_ok(self.test, temp)
        self.assertEqual(self.balance(self.test), t0)

    def test_every_request_is_a_new_conversation(self):
        msgs = [{"role": "system", "content": "Be brief."},
                {"role": "user", "content": "First question"},
                {"role": "assistant", "content": "First answer"},
                {"role": "user", "content": [{"type": "text", "text": "Second"},
                                             {"type": "text", "text": "question"}]}]
        convs = set()
        for _ in range(2):
            r = self.complete(self.test, self.employee(self.test, "starter"), msgs,
                              temperature=0.2, top_p=1, max_tokens=50, max_completion_tokens=50,
                              presence_penalty=0, frequency_penalty=0.5, seed=7, stop=["\n\n"],
                              metadata={"a": "b"}, store=False, logprobs=False, n=1,
                              user="u-1", response_format={"type": "text"},
                              parallel_tool_calls=False, tools=None, stream=False)
            c = self.assertJson(r, 200)
            convs.add(r.header(CONV_HEADER))
            self.assertIn('{"system":"Be brief."}', c["choices"][0]["message"]["content"])
            conv = self.conversation(self.test, r.header(CONV_HEADER))
            # Recorded as chat records a turn: the user message and the reply.
            self.assertEqual([(m["role"], m["content"]) for m in conv["messages"]][0],
                             ("user", "Second\nquestion"))
            self.assertEqual(len(conv["messages"]), 2)
        self.assertEqual(len(convs), 2)

    def test_stream_framing_and_usage(self):
        b0 = self.balance(self.live)
        text = "Stream me " + uniq("a reply")
        res = self.stream_completion(self.live, self.emp, text,
                                     stream_options={"include_usage": True})
        content, usage = self.checkChunks(res, self.emp, include_usage=True)
        conv = self.conversation(self.live, res.header(CONV_HEADER))
        self.assertEqual([(m["role"], m["content"]) for m in conv["messages"]],
                         [("user", text), ("assistant", content)])
        credits = credits_for({"input_tokens": usage["prompt_tokens"],
                               "output_tokens": usage["completion_tokens"]})
        self.assertEqual(conv["messages"][1]["credits_used"], credits)
        self.assertEqual(self.balance(self.live), b0 - credits)
        # The blocking answer to the same input is the same text and usage.
        _, c = self.complete_ok(self.live, self.emp, text)
        self.assertEqual(c["choices"][0]["message"]["content"], content)
        self.assertEqual(c["usage"], usage)
        # Without include_usage: no usage chunk, no usage members.
        res = self.stream_completion(self.live, self.emp, text)
        content2, usage2 = self.checkChunks(res, self.emp, include_usage=False)
        self.assertEqual(content2, content)
        self.assertIsNone(usage2)

    # -- refused --

    def test_bad_input(self):
        e = self.emp
        u = [{"role": "user", "content": "hi"}]
        cases = [
            ({"messages": u}, "model"),
            ({"model": "", "messages": u}, "model"),
            ({"model": 5, "messages": u}, "model"),
            ({"model": e}, "messages"),
            ({"model": e, "messages": []}, "messages"),
            ({"model": e, "messages": "hi"}, "messages"),
            ({"model": e, "messages": [{"role": "system", "content": "x"}]}, "messages"),
            ({"model": e, "messages": [{"role": "assistant", "content": "x"}]}, "messages"),
            ({"model": e, "messages": ["hi"]}, "messages[0]"),
            ({"model": e, "messages": [{"content": "hi"}]}, "messages[0].role"),
            ({"model": e, "messages": [u[0], {"role": "tool", "content": "x"}]},
             "messages[1].role"),
            ({"model": e, "messages": [{"role": "function", "content": "x"}] + u},
             "messages[0].role"),
            ({"model": e, "messages": [{"role": "robot", "content": "x"}] + u},
             "messages[0].role"),
            ({"model": e, "messages": u + [{"role": "assistant", "content": "prefill"}]},
             "messages[1].role"),
            ({"model": e, "messages": [{"role": "user"}]}, "messages[0].content"),
            ({"model": e, "messages": [{"role": "user", "content": None}]},
             "messages[0].content"),
            ({"model": e, "messages": [{"role": "user", "content": 5}]}, "messages[0].content"),
            ({"model": e, "messages": [{"role": "user", "content": ""}]}, "messages[0].content"),
            ({"model": e, "messages": [{"role": "user", "content": "x" * 32001}]},
             "messages[0].content"),
            ({"model": e, "messages": [{"role": "user", "content": [
                {"type": "image_url", "image_url": {"url": "http://x/y.png"}}]}]},
             "messages[0].content[0].type"),
            ({"model": e, "messages": [{"role": "user", "content": ["hi"]}]},
             "messages[0].content[0]"),
            ({"model": e, "messages": [{"role": "user", "content": [{"type": "text"}]}]},
             "messages[0].content[0].text"),
            ({"model": e, "messages": [{"role": "assistant", "content": None,
                                        "tool_calls": [{"id": "c1"}]}] + u},
             "messages[0].tool_calls"),
            ({"model": e, "messages": [dict(u[0], weight=1)]}, "messages[0].weight"),
            ({"model": e, "messages": u, "n": 2}, "n"),
            ({"model": e, "messages": u, "n": 0}, "n"),
            ({"model": e, "messages": u, "tools": [{"type": "function"}]}, "tools[0].function"),
            ({"model": e, "messages": u, "tool_choice": "auto"}, "tool_choice"),
            ({"model": e, "messages": u, "functions": [{"name": "f"}]}, "functions"),
            ({"model": e, "messages": u, "function_call": "auto"}, "function_call"),
            ({"model": e, "messages": u, "logprobs": True}, "logprobs"),
            ({"model": e, "messages": u, "response_format": {"type": "json_object"}},
             "response_format"),
            ({"model": e, "messages": u, "temperature": 3}, "temperature"),
            ({"model": e, "messages": u, "temperature": "hot"}, "temperature"),
            ({"model": e, "messages": u, "stop": [1]}, "stop"),
            ({"model": e, "messages": u, "stream": "yes"}, "stream"),
            ({"model": e, "messages": u, "stream_options": {"include_usage": 1}},
             "stream_options.include_usage"),
            ({"model": e, "messages": u, "stream_options": {"x": True}}, "stream_options.x"),
            ({"model": e, "messages": u, "audio": {"voice": "alloy"}}, "audio"),
        ]
        b0 = self.balance(self.live)
        n0 = self.conversation_count(self.live)
        for body, param in cases:
            with self.subTest(body=json.dumps(body)[:120]):
                r = self.server.post(PATH, body, key=self.live)
                self.assertOpenAIError(r, 400, "invalid_request", param)
                if "stream" not in body:
                    # streamed, the same refusal as JSON before the stream starts
                    r = self.server.post(PATH, dict(body, stream=True), key=self.live)
                    self.assertOpenAIError(r, 400, "invalid_request", param)
        r = self.server.request("POST", PATH, body=b'{"model": ', key=self.live)
        self.assertOpenAIError(r, 400, "invalid_request")
        # Nothing half-done: no conversation, no charge.
        self.assertEqual(self.conversation_count(self.live), n0)
        self.assertEqual(self.balance(self.live), b0)

    def test_model_errors(self):
        u = [{"role": "user", "content": "hi"}]
        n0 = self.conversation_count(self.live)
        for model in (NO_EMP, "gpt-4o", self.employee(self.other, "starter")):
            for stream in (False, True):
                with self.subTest(model=model, stream=stream):
                    r = self.complete(self.live, model, u, stream=stream)
                    self.assertOpenAIError(r, 404, "employee_not_found", "model")
        self.assertOpenAIError(self.complete(self.live, self.memp, u), 403, "permission_denied",
                               "model")
        self.assertEqual(self.conversation_count(self.live), n0)
        # No credits: 402 with OpenAI's insufficient_quota type; nothing stored.
        zemp = self.employee(self.zero, "starter")
        for stream in (False, True):
            r = self.complete(self.zero, zemp, u, stream=stream)
            self.assertOpenAIError(r, 402, "insufficient_credits")
        self.assertEqual(self.conversation_count(self.zero), 0)

    def test_errors_before_the_handler(self):
        u = {"model": self.emp, "messages": [{"role": "user", "content": "hi"}]}
        s = self.server
        self.assertOpenAIError(s.get("/v1/openai/models"), 401, "missing_api_key")
        self.assertOpenAIError(s.post(PATH, u), 401, "missing_api_key")
        self.assertOpenAIError(s.get("/v1/openai/models", key="svc_live_sk_" + "x" * 40), 401,
                               "invalid_api_key")
        self.assertOpenAIError(s.post(PATH, u, key=self.reader), 403, "permission_denied")
        self.assertOpenAIError(s.get("/v1/openai/models", key=self.reader), 403,
                               "permission_denied")
        self.assertOpenAIError(s.get("/v1/openai/embeddings", key=self.live), 404,
                               "route_not_found")
        self.assertOpenAIError(s.get("/v1/openai", key=self.live), 404, "route_not_found")
        r = s.request("DELETE", "/v1/openai/models", key=self.live)
        self.assertOpenAIError(r, 405, "method_not_allowed")
        self.assertEqual(r.header("Allow"), "GET")
        self.assertOpenAIError(s.get(PATH, key=self.live), 405, "method_not_allowed")
        self.assertOpenAIError(s.request("POST", PATH, body="hi", content_type="text/plain",
                                         key=self.live), 415, "unsupported_media_type")
        self.assertOpenAIError(s.get("/v1/openai/models?limit=5", key=self.live), 400,
                               "invalid_request", "limit")
        sock = s.connect()
        try:
            sock.sendall(raw_head("POST", PATH, "127.0.0.1", {
                "Authorization": "Bearer " + self.live, "Content-Type": "application/json",
                "Content-Length": str(2 * MIB)}))
            self.assertOpenAIError(read_response(sock), 413, "request_too_large")
        finally:
            sock.close()
        # Elsewhere the contract's own shape is kept.
        self.assertError(s.get("/v1/openaix", key=self.live), 404, "route_not_found")
        self.assertError(s.get("/v1/employees/" + NO_EMP, key=self.live), 404,
                         "employee_not_found", {None, "id"})


class OpenAIRateLimitTest(OpenAICase):
    """429 in OpenAI's shape, with Retry-After (burst 2, refilled once every 30 s)."""

    server_env = {"WORKFORCE_RATE_LIMITS": "starter:2/2/5,manager:2/2/5,agency:2/2/5"}

    @classmethod
    def setUpServer(cls):
        cls.key = cls.server.create_key("oa-rl", credits=1000)

    def test_429(self):
        statuses = []
        for _ in range(6):
            r = self.server.get("/v1/openai/models", key=self.key)
            statuses.append(r.status)
            if r.status == 429:
                break
        self.assertEqual(statuses[-1], 429, statuses)
        self.assertOpenAIError(r, 429, "rate_limit_exceeded")
        self.assertRegex(r.header("Retry-After", ""), r"^[1-9][0-9]*$")
        r = self.server.post(PATH, {"model": NO_EMP, "messages": []}, key=self.key)
        self.assertOpenAIError(r, 429, "rate_limit_exceeded")


class OpenAIMockTest(MockChatTestCase, OpenAICase):
    """In front of tests/mock/openai_mock.py: what the engine is asked, and upstream failures."""

    mock_env = {"WORKFORCE_LLM_RETRIES": "0"}

    @classmethod
    def setUpServer(cls):
        cls.live = cls.server.create_key("oa-mock", credits=100000)

    def setUp(self):
        self.emp = self.employee(self.live, "starter")

    def test_messages_reach_the_model(self):
        marker = uniq("last")
        msgs = [{"role": "system", "content": "Rule one " + marker},
                {"role": "user", "content": "Earlier question"},
                {"role": "assistant", "content": [{"type": "text", "text": "Earlier answer"}]},
                {"role": "developer", "content": "Rule two"},
                {"role": "user", "content": "Now this " + marker, "name": "ana"}]
        r = self.complete(self.live, self.emp, msgs)
        c = self.assertJson(r, 200)
        self.assertEqual(c["choices"][0]["message"]["content"],
                         "Hello from the mock. You said: " + ("Now this " + marker)[:40])
        req = self.mock_requests(last_user="Now this " + marker)
        self.assertEqual(len(req), 1, req)
        up = req[0]["body"]["messages"]
        self.assertEqual(up[0]["role"], "system")
        self.assertIn(json.dumps({"system": "Rule one %s\n\nRule two" % marker},
                                 separators=(",", ":")), up[0]["content"])
        self.assertEqual([(m["role"], m["content"]) for m in up[1:]],
                         [("user", "Earlier question"), ("assistant", "Earlier answer"),
                          ("user", "Now this " + marker)])
        # The mock's usage is the reply's.
        self.assertEqual(c["usage"]["completion_tokens"],
                         len(c["choices"][0]["message"]["content"].split()))
        self.assertNotEqual(c["model"], MOCK_MODEL)

    def test_upstream_failures(self):
        b0 = self.balance(self.live)
        r = self.complete(self.live, self.emp, [{"role": "user", "content": "x [[fail:500]]"}])
        self.assertOpenAIError(r, 502, "upstream_error")
        # the user's message is stored, in the conversation the header names
        conv = self.conversation(self.live, r.header(CONV_HEADER) or "conv_none")
        self.assertEqual([(m["role"], m["content"]) for m in conv["messages"]],
                         [("user", "x [[fail:500]]")])
        res = self.stream_completion(self.live, self.emp, "y [[cut]]")
        self.assertIsNone(res.response, res)
        datas = [e["data"] for e in res.events]
        self.assertNotIn("[DONE]", datas)
        last = res.events[-1]["json"]
        self.assertEqual(set(last), {"error"}, last)
        self.assertEqual(last["error"]["type"], "api_error")
        self.assertEqual(last["error"]["code"], "upstream_error")
        self.assertIsNone(last["error"]["param"])
        self.assertEqual(res.events[0]["json"]["choices"][0]["delta"]["role"], "assistant")
        self.assertEqual(self.balance(self.live), b0, "a failed reply is not charged")


NODE = shutil.which("node")
SDK_SKIP = ("the SDK test runs once per make test (plain SQLite run)"
            if os.environ.get("WORKFORCE_BIN") or PG_URL else
            "node is not installed" if not NODE else
            "node_modules/openai is missing (npm ci)"
            if not os.path.isdir(os.path.join(REPO_ROOT, "node_modules", "openai")) else None)


class OpenAISDKTest(OpenAICase):
    """The official openai npm SDK (pinned in package.json) against the server."""

    @classmethod
    def setUpClass(cls):
        if SDK_SKIP:
            import unittest
            raise unittest.SkipTest(SDK_SKIP)
        super().setUpClass()

    @classmethod
    def setUpServer(cls):
        cls.live = cls.server.create_key("oa-sdk", credits=100000)
        cls.zero = cls.server.create_key("oa-sdk-zero", credits=0)

    def test_official_sdk(self):
        env = dict(os.environ, WORKFORCE_OPENAI_BASE_URL=self.server.base_url + "/v1/openai",
                   WORKFORCE_OPENAI_KEY=self.live, WORKFORCE_OPENAI_ZERO_KEY=self.zero)
        p = subprocess.run([NODE, os.path.join(REPO_ROOT, "tests", "npm", "openai_sdk.mjs")],
                           capture_output=True, text=True, timeout=60, env=env, cwd=REPO_ROOT,
                           stdin=subprocess.DEVNULL)
        self.assertEqual(p.returncode, 0, "openai_sdk.mjs failed:\n%s\n%s" % (p.stdout, p.stderr))
        self.assertIn("ok - all", p.stdout, p.stdout)
