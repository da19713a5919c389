# SPDX-License-Identifier: MIT
"""The OpenAI door with the client's own tools (contract §19), black-box, in front of the
scripted tool-calling model of tests/mock/openai_mock.py ([[tools:B64]]).

- `tools` and `tool_choice` are taken in OpenAI's shape; the model is offered the employee's
  tools and the client's together (the client's under their own names); `tool_choice` applies
  to the client's tools (none: not offered; required and a named function: sent to the model).
- A model step that calls a client's tool ends the turn: the answer is OpenAI's `tool_calls`
  (ids `call_...` of the journal) with `finish_reason: "tool_calls"`, blocking and streamed;
  the message is stored `completed` with stop reason `client_tool_calls`, the client's calls
  `running` until answered.
- One step calling both kinds: the employee's calls run first (journaled), the answer carries
  only the client's.
- A follow-up whose `tool` messages answer those ids goes on with that stored turn (the same
  message and conversation): the results reach the model as the step's tool results, the calls
  end `completed` with them, and the answer is the rest of the turn.
- Refused: bad `tools`/`tool_choice` shapes, a client tool named as the employee's tool is
  shown, tool messages that answer no call, unknown or foreign ids, calls left unanswered, a
  turn that no longer waits; each with OpenAI's error shape and `param`, nothing stored.
- The official `openai` npm client does the round trip against the server, blocking and
  streamed (tests/npm/openai_client_tools.mjs: once per `make test`, not in the ASan and
  PostgreSQL runs).
"""

import base64
import json
import os
import subprocess
import uuid

from chatlib import MockChatTestCase, credits_for, sse_post, uniq
from harness import PG_URL, REPO_ROOT
from test_openai import CONV_HEADER, NODE, PATH, OpenAICase

CALL_ID_RE = r"^call_[0-9A-Za-z]{24}$"


def script(*steps):
    return "[[tools:%s]]" % base64.b64encode(json.dumps(list(steps)).encode()).decode()


def call(name, **args):
    return {"name": name, "arguments": args}


def tool(name, **props):
    return {"type": "function",
            "function": {"name": name, "description": "The client's " + name + ".",
                         "parameters": {"type": "object",
                                        "properties": {k: {"type": v} for k, v in props.items()}}}}


WEATHER = tool("get_weather", city="string")
# "__" as in the employee's own tools' model names, but no name of theirs: shown as it is
POST = tool("chat__post", channel="string", text="string")


class ToolsCase(MockChatTestCase, OpenAICase):
    mock_env = {"WORKFORCE_TEST_LLM": "provider", "WORKFORCE_LLM_RETRIES": "0"}

    @classmethod
    def setUpServer(cls):
        cls.org = "oat-" + uuid.uuid4().hex[:6]
        cls.live = cls.server.create_key(cls.org, credits=100000)

    def setUp(self):
        self.mock.reset()
        # a new employee: its rules are the default, knowledge.search (auto)
        self.emp = self.new_employee(self.live, name="Tooly " + uuid.uuid4().hex[:4])["id"]

    def stream_messages(self, messages, **fields):
        body = {"model": self.emp, "messages": messages, "stream": True}
        body.update(fields)
        return sse_post(self.server, PATH, body, key=self.live, timeout=60)

    def asked(self, msg):
        """The bodies of the model calls of the turn whose user message is 'msg'."""
        return [r["body"] for r in self.mock_requests(msg)]

    def reply_of(self, conv_id):
        conv = self.conversation(self.live, conv_id)
        self.assertEqual([m["role"] for m in conv["messages"]], ["user", "assistant"], conv)
        return conv["messages"][1]

    def checkCalls(self, c, names):
        """A blocking answer that stopped for the client's calls 'names'; returns its calls."""
        self.assertEqual(set(c), {"id", "object", "created", "model", "choices", "usage"}, c)
        ch = c["choices"][0]
        self.assertEqual(ch["finish_reason"], "tool_calls", c)
        self.assertEqual(set(ch["message"]), {"role", "content", "refusal", "tool_calls"}, c)
        calls = ch["message"]["tool_calls"]
        self.assertEqual([x["function"]["name"] for x in calls], names, calls)
        for x in calls:
            self.assertEqual(set(x), {"id", "type", "function"}, x)
            self.assertRegex(x["id"], CALL_ID_RE)
            self.assertEqual(x["type"], "function")
            self.assertIsInstance(x["function"]["arguments"], str)
        return calls


class ClientToolsTest(ToolsCase):

    def test_blocking_round_trip(self):
        b0 = self.balance(self.live)
        text = uniq("Weather in Paris? ") + script(
            {"calls": [call("get_weather", city="Paris")]},
            {"say": "It is sunny in Paris."})
        first = [{"role": "system", "content": "Be brief."},
                 {"role": "user", "content": text}]
        r = self.complete(self.live, self.emp, first, tools=[WEATHER, POST])
        c = self.assertJson(r, 200)
        conv_id = r.header(CONV_HEADER)
        calls = self.checkCalls(c, ["get_weather"])
        self.assertIsNone(c["choices"][0]["message"]["content"])
        self.assertEqual(json.loads(calls[0]["function"]["arguments"]), {"city": "Paris"})
        # the model was offered the employee's tool and the client's, under their own names
        asked = self.asked(text)
        self.assertEqual(len(asked), 1, asked)
        self.assertEqual(sorted(t["function"]["name"] for t in asked[0]["tools"]),
                         ["chat__post", "get_weather", "knowledge__search"])
        offered = [t for t in asked[0]["tools"] if t["function"]["name"] == "get_weather"][0]
        self.assertEqual(offered["function"]["parameters"], WEATHER["function"]["parameters"])
        self.assertEqual(offered["function"]["description"], "The client's get_weather.")
        self.assertNotIn("tool_choice", asked[0])
        # stored: completed, stop reason client_tool_calls, the client's call running
        m = self.reply_of(conv_id)
        self.assertEqual(c["id"], "chatcmpl-" + m["id"])
        self.assertEqual((m["status"], m["stop_reason"], m["content"]),
                         ("completed", "client_tool_calls", ""))
        self.assertEqual([(x["id"], x["tool"], x["status"], x["result"]) for x in m["tool_calls"]],
                         [(calls[0]["id"], "get_weather", "running", None)])
        self.assertEqual(m["tool_calls"][0]["arguments"], {"city": "Paris"})
        u1 = c["usage"]
        cost1 = credits_for({"input_tokens": u1["prompt_tokens"],
                             "output_tokens": u1["completion_tokens"]})
        self.assertEqual(m["credits_used"], cost1)
        self.assertEqual(self.balance(self.live), b0 - cost1)

        # the follow-up: the assistant message as it came, and the result
        follow = first + [c["choices"][0]["message"],
                          {"role": "tool", "tool_call_id": calls[0]["id"],
                           "content": '{"sky": "clear", "celsius": 24}'}]
        r2 = self.complete(self.live, self.emp, follow, tools=[WEATHER, POST])
        c2 = self.assertJson(r2, 200)
        self.checkCompletion(c2, self.emp)
        self.assertEqual(c2["choices"][0]["message"]["content"], "It is sunny in Paris.")
        self.assertEqual(r2.header(CONV_HEADER), conv_id, "the same conversation")
        self.assertEqual(c2["id"], c["id"], "the same stored message")
        # the model was shown the step: its call (its own id) and the client's result
        asked = self.asked(text)
        self.assertEqual(len(asked), 2, asked)
        msgs = asked[1]["messages"]
        self.assertEqual(msgs[-2]["role"], "assistant")
        self.assertEqual([(x["id"], x["function"]["name"]) for x in msgs[-2]["tool_calls"]],
                         [("call_mock0_0", "get_weather")])
        self.assertEqual((msgs[-1]["role"], msgs[-1]["tool_call_id"], msgs[-1]["content"]),
                         ("tool", "call_mock0_0", '{"sky": "clear", "celsius": 24}'))
        self.assertEqual(msgs[-3], {"role": "user", "content": text})
        self.assertIn("Be brief.", msgs[0]["content"], "the turn's context is kept")
        # the usage of this answer is this request's; the message holds the whole turn
        u2 = c2["usage"]
        cost2 = credits_for({"input_tokens": u2["prompt_tokens"],
                             "output_tokens": u2["completion_tokens"]})
        self.assertEqual(u2["completion_tokens"], len("It is sunny in Paris.".split()))
        m = self.reply_of(conv_id)
        self.assertEqual((m["status"], m["stop_reason"], m["content"]),
                         ("completed", "completed", "It is sunny in Paris."))
        self.assertEqual(m["credits_used"], cost1 + cost2)
        self.assertEqual(self.balance(self.live), b0 - cost1 - cost2)
        done = m["tool_calls"][0]
        self.assertEqual((done["id"], done["status"], done["result"], done["error"]),
                         (calls[0]["id"], "completed", {"sky": "clear", "celsius": 24}, None))
        self.assertIsNotNone(done["completed_at"])
        # answered once: the same follow-up again is refused, nothing changes
        again = self.complete(self.live, self.emp, follow, tools=[WEATHER, POST])
        self.assertOpenAIError(again, 400, "invalid_request", "messages[3].tool_call_id")
        self.assertEqual(self.balance(self.live), b0 - cost1 - cost2)

    def test_streamed_round_trip(self):
        text = uniq("Post the forecast ") + script(
            {"say": "Checking first.",
             "calls": [call("get_weather", city="Oslo"),
                       call("chat__post", channel="#ops", text="Rain \"today\"")]},
            {"say": "Posted."})
        first = [{"role": "user", "content": text}]
        res = self.stream_messages(first, tools=[WEATHER, POST],
                                   stream_options={"include_usage": True})
        self.assertIsNone(res.response, res)
        self.assertEqual(res.status, 200)
        conv_id = res.header(CONV_HEADER)
        self.assertRegex(conv_id or "", r"^conv_[A-Za-z0-9]{20,}$")
        self.assertEqual(res.events[-1]["data"], "[DONE]", res)
        chunks = [e["json"] for e in res.events[:-1]]
        usage = chunks.pop()
        self.assertEqual(usage["choices"], [])
        self.assertGreater(usage["usage"]["completion_tokens"], 0)
        deltas = [ch["choices"][0]["delta"] for ch in chunks]
        finishes = [ch["choices"][0]["finish_reason"] for ch in chunks]
        self.assertEqual(deltas[0], {"role": "assistant", "content": ""})
        self.assertEqual(finishes[-1], "tool_calls")
        self.assertEqual(deltas[-1], {})
        self.assertEqual(set(finishes[:-1]), {None})
        texts = [d["content"] for d in deltas[1:-1] if "content" in d]
        self.assertEqual("".join(texts), "Checking first.")
        # per call: id, type and name first, then the arguments
        parts = [d["tool_calls"] for d in deltas[1:-1] if "tool_calls" in d]
        self.assertEqual(len(parts), 4, deltas)
        calls = {}
        for p in parts:
            self.assertEqual(len(p), 1)
            x = p[0]
            got = calls.setdefault(x["index"], {"args": ""})
            if "id" in x:
                self.assertEqual(set(x), {"index", "id", "type", "function"}, x)
                self.assertEqual(x["type"], "function")
                self.assertRegex(x["id"], CALL_ID_RE)
                got.update(id=x["id"], name=x["function"]["name"])
                self.assertEqual(x["function"]["arguments"], "")
            else:
                self.assertEqual(set(x), {"index", "function"}, x)
                self.assertEqual(set(x["function"]), {"arguments"}, x)
                got["args"] += x["function"]["arguments"]
        self.assertEqual([calls[i]["name"] for i in sorted(calls)], ["get_weather", "chat__post"])
        self.assertEqual(json.loads(calls[1]["args"]), {"channel": "#ops", "text": "Rain \"today\""})
        m = self.reply_of(conv_id)
        self.assertEqual((m["status"], m["stop_reason"], m["content"]),
                         ("completed", "client_tool_calls", "Checking first."))
        self.assertEqual([x["id"] for x in m["tool_calls"]], [calls[0]["id"], calls[1]["id"]])
        # the streamed follow-up
        assistant = {"role": "assistant", "content": "Checking first.",
                     "tool_calls": [{"id": calls[i]["id"], "type": "function",
                                     "function": {"name": calls[i]["name"],
                                                  "arguments": calls[i]["args"]}}
                                    for i in sorted(calls)]}
        follow = first + [assistant,
                          {"role": "tool", "tool_call_id": calls[1]["id"], "content": "posted"},
                          {"role": "tool", "tool_call_id": calls[0]["id"],
                           "content": [{"type": "text", "text": "rain"}]}]
        res2 = self.stream_messages(follow, tools=[WEATHER, POST])
        content, _ = self.checkChunks(res2, self.emp, include_usage=False)
        self.assertEqual(content, "Posted.", "only this request's text")
        self.assertEqual(res2.header(CONV_HEADER), conv_id)
        m = self.reply_of(conv_id)
        self.assertEqual((m["status"], m["stop_reason"], m["content"]),
                         ("completed", "completed", "Checking first.Posted."))
        self.assertEqual([(x["status"], x["result"]) for x in m["tool_calls"]],
                         [("completed", "rain"), ("completed", "posted")])
        msgs = self.asked(text)[1]["messages"]
        self.assertEqual([(x["role"], x.get("tool_call_id"), x["content"]) for x in msgs[-2:]],
                         [("tool", "call_mock0_0", "rain"), ("tool", "call_mock0_1", "posted")])

    def test_mixed_step(self):
        """One step calls the employee's tool and the client's: the employee's runs first and
        is journaled; the answer carries only the client's call."""
        text = uniq("Search then ask ") + script(
            {"calls": [call("knowledge__search", query="holiday policy"),
                       call("get_weather", city="Rome")]},
            {"say": "Both done."})
        r = self.complete(self.live, self.emp, [{"role": "user", "content": text}],
                          tools=[WEATHER])
        c = self.assertJson(r, 200)
        calls = self.checkCalls(c, ["get_weather"])
        conv_id = r.header(CONV_HEADER)
        m = self.reply_of(conv_id)
        self.assertEqual(m["stop_reason"], "client_tool_calls")
        by_tool = {x["tool"]: x for x in m["tool_calls"]}
        self.assertEqual(set(by_tool), {"knowledge.search", "get_weather"})
        own = by_tool["knowledge.search"]
        self.assertEqual((own["status"], own["error"]), ("completed", None), own)
        self.assertIsNotNone(own["result"])
        self.assertEqual((by_tool["get_weather"]["id"], by_tool["get_weather"]["status"]),
                         (calls[0]["id"], "running"))
        self.assertEqual(len(self.asked(text)), 1, "no model call before the client answers")
        follow = [{"role": "user", "content": text}, c["choices"][0]["message"],
                  {"role": "tool", "tool_call_id": calls[0]["id"], "content": "warm"}]
        c2 = self.assertJson(self.complete(self.live, self.emp, follow, tools=[WEATHER]), 200)
        self.assertEqual(c2["choices"][0]["message"]["content"], "Both done.")
        # the model saw both results of the step, its own ids
        msgs = self.asked(text)[1]["messages"]
        step = msgs[-3]
        self.assertEqual(sorted(x["function"]["name"] for x in step["tool_calls"]),
                         ["get_weather", "knowledge__search"])
        results = {x["tool_call_id"]: x["content"] for x in msgs[-2:]}
        self.assertEqual(results["call_mock0_1"], "warm")
        self.assertEqual(json.loads(results["call_mock0_0"]), own["result"])
        m = self.reply_of(conv_id)
        self.assertEqual([(x["tool"], x["status"]) for x in m["tool_calls"]],
                         [(x["tool"], "completed") for x in m["tool_calls"]])

    def test_a_long_result_is_cut(self):
        """The client's result is given to the model as any tool's is: cut at 16 KiB."""
        text = uniq("Long ") + script({"calls": [call("get_weather", city="X")]},
                                      {"say": "Read it."})
        first = [{"role": "user", "content": text}]
        c = self.assertJson(self.complete(self.live, self.emp, first, tools=[WEATHER]), 200)
        asked = c["choices"][0]["message"]
        long = "\u00e9" * 9000  # 18,000 bytes
        follow = first + [asked, {"role": "tool", "tool_call_id": asked["tool_calls"][0]["id"],
                                  "content": long}]
        r = self.complete(self.live, self.emp, follow, tools=[WEATHER])
        self.assertEqual(self.assertJson(r, 200)["choices"][0]["message"]["content"], "Read it.")
        seen = json.loads(self.asked(text)[1]["messages"][-1]["content"])
        self.assertEqual(seen["truncated"], True)
        self.assertTrue(long.startswith(seen["text"]) and 15000 < len(seen["text"].encode()) <
                        16384, len(seen["text"]))
        m = self.reply_of(r.header(CONV_HEADER))
        self.assertEqual(m["tool_calls"][0]["result"], seen)

    def test_only_the_employees_tools_run_as_before(self):
        text = uniq("Just search ") + script(
            {"calls": [call("knowledge__search", query="x")]}, {"say": "Found nothing."})
        c = self.assertJson(self.complete(self.live, self.emp,
                                          [{"role": "user", "content": text}],
                                          tools=[WEATHER]), 200)
        self.checkCompletion(c, self.emp)
        self.assertEqual(c["choices"][0]["message"]["content"], "Found nothing.")
        self.assertNotIn("tool_calls", c["choices"][0]["message"])

    def test_tool_choice(self):
        cases = [("none", None, ["knowledge__search"]),
                 ("auto", None, ["chat__post", "get_weather", "knowledge__search"]),
                 ("required", "required", ["chat__post", "get_weather", "knowledge__search"]),
                 ({"type": "function", "function": {"name": "chat__post"}},
                  {"type": "function", "function": {"name": "chat__post"}},
                  ["chat__post", "get_weather", "knowledge__search"])]
        for choice, sent, offered in cases:
            with self.subTest(choice=choice):
                text = uniq("Choose ") + script({"say": "No tool needed."})
                c = self.assertJson(self.complete(self.live, self.emp,
                                                  [{"role": "user", "content": text}],
                                                  tools=[WEATHER, POST], tool_choice=choice), 200)
                self.assertEqual(c["choices"][0]["finish_reason"], "stop")
                asked = self.asked(text)[0]
                self.assertEqual(sorted(t["function"]["name"] for t in asked["tools"]), offered)
                self.assertEqual(asked.get("tool_choice"), sent)

    def test_history_with_tool_calls(self):
        """A new turn after a round trip: the earlier calls and results are its history."""
        text = uniq("And tomorrow? ")
        msgs = [{"role": "user", "content": "Weather today?"},
                {"role": "assistant", "content": None,
                 "tool_calls": [{"id": "call_abc", "type": "function",
                                 "function": {"name": "get_weather",
                                              "arguments": "{\"city\":\"Nice\"}"}}]},
                {"role": "tool", "tool_call_id": "call_abc", "content": "sunny"},
                {"role": "assistant", "content": "Sunny today."},
                {"role": "user", "content": text}]
        r = self.complete(self.live, self.emp, msgs, tools=[WEATHER])
        c = self.assertJson(r, 200)
        self.checkCompletion(c, self.emp)
        up = self.asked(text)[0]["messages"]
        self.assertEqual(up[2]["tool_calls"][0]["id"], "call_abc")
        self.assertEqual((up[3]["role"], up[3]["tool_call_id"], up[3]["content"]),
                         ("tool", "call_abc", "sunny"))
        self.assertEqual(up[-1], {"role": "user", "content": text})
        # a new conversation, as every request that is not a follow-up
        conv = self.conversation(self.live, r.header(CONV_HEADER))
        self.assertEqual([x["role"] for x in conv["messages"]], ["user", "assistant"])


class ClientToolsRefusedTest(ToolsCase):

    def assertRefused(self, body, param, status=400, code="invalid_request", key=None):
        key = key or self.live
        b0 = self.balance(key)
        n0 = self.conversation_count(key)
        for stream in (False, True):
            r = self.server.post(PATH, dict(body, stream=stream), key=key, timeout=60)
            self.assertOpenAIError(r, status, code, param)
        self.assertEqual(self.conversation_count(key), n0, "nothing stored")
        self.assertEqual(self.balance(key), b0, "nothing charged")

    def test_bad_tools(self):
        u = [{"role": "user", "content": "hi"}]
        fn = WEATHER["function"]
        cases = [
            ([], None, "tools"),
            ("get_weather", None, "tools"),
            ([WEATHER] * 129, None, "tools"),
            (["x"], None, "tools[0]"),
            ([{"type": "function"}], None, "tools[0].function"),
            ([{"type": "code_interpreter", "function": fn}], None, "tools[0].type"),
            ([{"function": fn}], None, "tools[0].type"),
            ([dict(WEATHER, extra=1)], None, "tools[0].extra"),
            ([{"type": "function", "function": dict(fn, name="get weather")}], None,
             "tools[0].function.name"),
            ([{"type": "function", "function": dict(fn, name="")}], None,
             "tools[0].function.name"),
            ([{"type": "function", "function": dict(fn, name="x" * 65)}], None,
             "tools[0].function.name"),
            ([{"type": "function", "function": {"description": "no name"}}], None,
             "tools[0].function.name"),
            ([WEATHER, POST, WEATHER], None, "tools[2].function.name"),
            ([{"type": "function", "function": dict(fn, parameters="{}")}], None,
             "tools[0].function.parameters"),
            ([{"type": "function", "function": dict(fn, description=5)}], None,
             "tools[0].function.description"),
            ([{"type": "function", "function": dict(fn, strict="yes")}], None,
             "tools[0].function.strict"),
            ([{"type": "function", "function": dict(fn, returns="x")}], None,
             "tools[0].function.returns"),
            (None, "auto", "tool_choice"),
            ([WEATHER], "sometimes", "tool_choice"),
            ([WEATHER], 3, "tool_choice"),
            ([WEATHER], {"type": "function"}, "tool_choice"),
            ([WEATHER], {"type": "function", "function": {"name": "chat__post"}},
             "tool_choice.function.name"),
        ]
        for tools, choice, param in cases:
            with self.subTest(tools=json.dumps(tools)[:80], choice=choice):
                body = {"model": self.emp, "messages": u}
                if tools is not None:
                    body["tools"] = tools
                if choice is not None:
                    body["tool_choice"] = choice
                self.assertRefused(body, param)
        self.assertRefused({"model": self.emp, "messages": u, "functions": [fn]}, "functions")

    def test_a_name_of_the_employees_tools(self):
        """knowledge.search is shown to the model as knowledge__search: a client's tool of
        that name would make the model's calls ambiguous."""
        body = {"model": self.emp, "messages": [{"role": "user", "content": "hi"}],
                "tools": [WEATHER, tool("knowledge__search", query="string")]}
        self.assertRefused(body, "tools[1].function.name")
        # not offered (tool_choice none): no ambiguity
        c = self.assertJson(self.complete(self.live, self.emp, body["messages"],
                                          tools=body["tools"], tool_choice="none"), 200)
        self.checkCompletion(c, self.emp)

    def test_bad_tool_messages(self):
        u = {"role": "user", "content": "hi"}
        a = {"role": "assistant", "content": None,
             "tool_calls": [{"id": "call_x1", "type": "function",
                             "function": {"name": "get_weather", "arguments": "{}"}}]}
        cases = [
            ([u, {"role": "tool", "tool_call_id": "call_x1", "content": "r"}], "messages[1].role"),
            ([u, a], "messages[1].tool_calls"),
            ([u, a, {"role": "tool", "content": "r"}], "messages[2].tool_call_id"),
            ([u, a, {"role": "tool", "tool_call_id": "call_other", "content": "r"}],
             "messages[2].tool_call_id"),
            ([u, a, {"role": "tool", "tool_call_id": "call_x1"}], "messages[2].content"),
            ([u, a, {"role": "tool", "tool_call_id": "call_x1", "content": "r"},
              {"role": "tool", "tool_call_id": "call_x1", "content": "r"}],
             "messages[3].tool_call_id"),
            ([u, dict(a, tool_calls=[])], "messages[1].tool_calls"),
            ([u, {"role": "user", "content": "x", "tool_calls": a["tool_calls"]}],
             "messages[1].tool_calls"),
            ([u, {"role": "user", "content": "x", "tool_call_id": "call_x1"}],
             "messages[1].tool_call_id"),
            ([a, {"role": "tool", "tool_call_id": "call_x1", "content": "r"}], "messages"),
            ([u, a, {"role": "tool", "tool_call_id": "call_x1", "content": "r"},
              {"role": "assistant", "content": "prefill"}], "messages[3].role"),
            # well formed, but this service issued no such call
            ([u, a, {"role": "tool", "tool_call_id": "call_x1", "content": "r"}],
             "messages[2].tool_call_id"),
        ]
        for messages, param in cases:
            with self.subTest(messages=json.dumps(messages)[:120]):
                self.assertRefused({"model": self.emp, "messages": messages, "tools": [WEATHER]},
                                   param)

    def stop_for(self, text, calls, tools=None):
        """A first request whose model calls 'calls' (the client's): its answer."""
        msg = {"role": "user", "content": uniq(text) + script({"calls": calls},
                                                             {"say": "Thanks."})}
        r = self.complete(self.live, self.emp, [msg], tools=tools or [WEATHER, POST])
        c = self.assertJson(r, 200)
        self.assertEqual(c["choices"][0]["finish_reason"], "tool_calls", c)
        return msg, c["choices"][0]["message"], r.header(CONV_HEADER)

    def test_follow_ups_that_cannot_go_on(self):
        user, asked, conv_id = self.stop_for("Two calls ", [call("get_weather", city="A"),
                                                            call("chat__post", text="B")])
        ids = [x["id"] for x in asked["tool_calls"]]
        answer = [{"role": "tool", "tool_call_id": i, "content": "ok"} for i in ids]
        # one of the two calls left unanswered (the client dropped it from its message)
        only = dict(asked, tool_calls=asked["tool_calls"][:1])
        self.assertRefused({"model": self.emp, "messages": [user, only, answer[0]],
                            "tools": [WEATHER, POST]}, "messages[1].tool_calls")
        # another employee (model) than the one that made the calls
        other = self.new_employee(self.live, name="Other " + uuid.uuid4().hex[:4])["id"]
        self.assertRefused({"model": other, "messages": [user, asked] + answer,
                            "tools": [WEATHER, POST]}, "messages[2].tool_call_id")
        # another organization cannot answer them: unknown there
        stranger = self.server.create_key("oat-x-" + uuid.uuid4().hex[:6], credits=1000)
        semp = self.new_employee(stranger, name="Stranger")["id"]
        self.assertRefused({"model": semp, "messages": [user, asked] + answer,
                            "tools": [WEATHER, POST]}, "messages[2].tool_call_id", key=stranger)
        # a client's tool renamed to clash: refused before the turn is taken
        self.assertRefused({"model": self.emp, "messages": [user, asked] + answer,
                            "tools": [WEATHER, POST, tool("knowledge__search")]},
                           "tools[2].function.name")
        m = self.reply_of(conv_id)
        self.assertEqual([x["status"] for x in m["tool_calls"]], ["running", "running"])
        # the conversation went on through /v1/chat: the calls no longer wait
        self.chat_ok(self.live, self.emp, "Never mind.", conversation_id=conv_id)
        self.assertRefused({"model": self.emp, "messages": [user, asked] + answer,
                            "tools": [WEATHER, POST]}, "messages[2].tool_call_id")

    def test_calls_of_two_answers(self):
        u1, a1, _ = self.stop_for("First ", [call("get_weather", city="A")])
        u2, a2, _ = self.stop_for("Second ", [call("get_weather", city="B")])
        mixed = dict(a2, tool_calls=a1["tool_calls"] + a2["tool_calls"])
        answers = [{"role": "tool", "tool_call_id": x["id"], "content": "ok"}
                   for x in mixed["tool_calls"]]
        self.assertRefused({"model": self.emp, "messages": [u2, mixed] + answers,
                            "tools": [WEATHER]}, "messages[3].tool_call_id")

    def test_no_credits_left_for_the_follow_up(self):
        org = "oat-z-" + uuid.uuid4().hex[:6]
        key = self.server.create_key(org, credits=100)
        emp = self.new_employee(key, name="Zed")["id"]
        msg = {"role": "user", "content": uniq("Z ") + script(
            {"calls": [call("get_weather", city="Z")]}, {"say": "Done."})}
        r = self.complete(key, emp, [msg], tools=[WEATHER])
        c = self.assertJson(r, 200)
        conv_id = r.header(CONV_HEADER)
        asked = c["choices"][0]["message"]
        self.set_credits(org, 0)
        follow = [msg, asked, {"role": "tool", "tool_call_id": asked["tool_calls"][0]["id"],
                               "content": "ok"}]
        r = self.complete(key, emp, follow, tools=[WEATHER])
        self.assertOpenAIError(r, 402, "insufficient_credits")
        reply = self.conversation(key, conv_id)["messages"][1]
        self.assertEqual((reply["stop_reason"], reply["tool_calls"][0]["status"]),
                         ("client_tool_calls", "running"), "the turn still waits")
        self.set_credits(org, 100)
        c2 = self.assertJson(self.complete(key, emp, follow, tools=[WEATHER]), 200)
        self.assertEqual(c2["choices"][0]["message"]["content"], "Done.")


SDK_SKIP = ("the SDK test runs once per make test (plain SQLite run)"
            if os.environ.get("WORKFORCE_BIN") or PG_URL else
            "node is not installed" if not NODE else
            "node_modules/openai is missing (npm ci)"
            if not os.path.isdir(os.path.join(REPO_ROOT, "node_modules", "openai")) else None)


class ClientToolsSDKTest(ToolsCase):
    """The official openai npm client does the tool_calls round trip against the server."""

    @classmethod
    def setUpClass(cls):
        if SDK_SKIP:
            import unittest
            raise unittest.SkipTest(SDK_SKIP)
        super().setUpClass()

    def test_official_client(self):
        env = dict(os.environ, WORKFORCE_OPENAI_BASE_URL=self.server.base_url + "/v1/openai",
                   WORKFORCE_OPENAI_KEY=self.live, WORKFORCE_OPENAI_MODEL=self.emp,
                   MOCK_BASE_URL=self.mock.base_url)
        p = subprocess.run([NODE, os.path.join(REPO_ROOT, "tests", "npm",
                                               "openai_client_tools.mjs")],
                           capture_output=True, text=True, timeout=120, env=env, cwd=REPO_ROOT,
                           stdin=subprocess.DEVNULL)
        self.assertEqual(p.returncode, 0,
                         "openai_client_tools.mjs failed:\n%s\n%s" % (p.stdout, p.stderr))
        self.assertIn("ok - all", p.stdout, p.stdout)
