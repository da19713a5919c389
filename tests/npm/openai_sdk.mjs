// SPDX-License-Identifier: MIT
//
// tests/npm/openai_sdk.mjs: the official `openai` npm SDK (the version pinned in package.json)
// pointed at a running server's OpenAI-compatible door. Run by tests/http/test_openai.py
// (OpenAISDKTest) with, in the environment:
//   WORKFORCE_OPENAI_BASE_URL   {server}/v1/openai
//   WORKFORCE_OPENAI_KEY        a live key with credits
//   WORKFORCE_OPENAI_ZERO_KEY   a live key of an organization with no credits
// It lists the models, retrieves one, makes a blocking and a streamed completion (with
// include_usage) of the same input, and checks that an unknown model surfaces as the SDK's
// NotFoundError and no credits as its APIError with status 402. Prints TAP-like lines; the last
// is `ok - all` and the exit status 0 when every check passed.

import OpenAI, { APIError, NotFoundError } from 'openai';

const baseURL = process.env.WORKFORCE_OPENAI_BASE_URL;
const apiKey = process.env.WORKFORCE_OPENAI_KEY;
const zeroKey = process.env.WORKFORCE_OPENAI_ZERO_KEY;
if (!baseURL || !apiKey || !zeroKey) {
  console.error('set WORKFORCE_OPENAI_BASE_URL, WORKFORCE_OPENAI_KEY and WORKFORCE_OPENAI_ZERO_KEY');
  process.exit(2);
}

let n = 0;
let failed = 0;
function ok(cond, what, detail) {
  n += 1;
  if (!cond) failed += 1;
  console.log(`${cond ? '' : 'not '}ok ${n} - ${what}`);
  if (!cond && detail !== undefined) console.log(`#   ${JSON.stringify(detail)}`);
}

// No retries: a refusal must surface at once, as it is.
const client = new OpenAI({ baseURL, apiKey, maxRetries: 0, timeout: 30000 });
const messages = [
  { role: 'system', content: 'Answer briefly.' },
  { role: 'user', content: 'What can you do for me, from the official SDK?' },
];

async function expectError(promise, check, what) {
  try {
    const got = await promise;
    ok(false, what, { unexpected: got });
  } catch (e) {
    ok(check(e), what, { name: e?.constructor?.name, status: e?.status, code: e?.code,
                         type: e?.type, param: e?.param, message: e?.message });
  }
}

async function main() {
  // models.list is a page: iterate it as the SDK's users do.
  const ids = [];
  for await (const m of client.models.list()) {
    ok(m.object === 'model' && typeof m.created === 'number' && /^org_/.test(m.owned_by),
       `model ${m.id} has OpenAI's fields`, m);
    ids.push(m.id);
  }
  ok(ids.length > 0 && ids.every((id) => /^emp_/.test(id)), 'models.list lists employees', ids);
  const model = ids[0];
  const one = await client.models.retrieve(model);
  ok(one.id === model && one.object === 'model', 'models.retrieve', one);

  const { data: c, response } = await client.chat.completions
    .create({ model, messages, temperature: 0.3, max_tokens: 200 })
    .withResponse();
  const text = c.choices?.[0]?.message?.content;
  ok(c.object === 'chat.completion' && c.model === model && /^chatcmpl-/.test(c.id),
     'a blocking completion', c);
  ok(typeof text === 'string' && text.length > 0 && c.choices[0].finish_reason === 'stop',
     'it has the reply', c.choices);
  ok(c.usage.total_tokens === c.usage.prompt_tokens + c.usage.completion_tokens &&
       c.usage.completion_tokens > 0, 'it has usage', c.usage);
  ok(/^conv_/.test(response.headers.get('x-workforce-conversation-id') || ''),
     'X-Workforce-Conversation-Id names the conversation',
     response.headers.get('x-workforce-conversation-id'));

  const stream = await client.chat.completions.create({
    model, messages, stream: true, stream_options: { include_usage: true },
  });
  let streamed = '';
  let chunks = 0;
  let finish = null;
  let usage = null;
  let role = null;
  for await (const chunk of stream) {
    chunks += 1;
    if (chunk.usage) usage = chunk.usage;
    for (const ch of chunk.choices) {
      if (ch.delta.role) role = ch.delta.role;
      streamed += ch.delta.content ?? '';
      if (ch.finish_reason) finish = ch.finish_reason;
    }
  }
  ok(chunks >= 4 && role === 'assistant' && finish === 'stop', 'a streamed completion',
     { chunks, role, finish });
  ok(streamed === text, 'its deltas join to the blocking reply', { streamed, text });
  ok(usage && usage.total_tokens === c.usage.total_tokens, 'include_usage gives the usage',
     usage);

  await expectError(
    client.chat.completions.create({ model: 'emp_' + 'Z'.repeat(24), messages }),
    (e) => e instanceof NotFoundError && e.status === 404 && e.code === 'employee_not_found' &&
      e.param === 'model' && e.type === 'invalid_request_error',
    'an unknown model is a NotFoundError (employee_not_found, param model)');

  const zero = new OpenAI({ baseURL, apiKey: zeroKey, maxRetries: 0, timeout: 30000 });
  const zeroModel = (await zero.models.list()).data[0].id;
  await expectError(
    zero.chat.completions.create({ model: zeroModel, messages }),
    (e) => e instanceof APIError && e.status === 402 && e.code === 'insufficient_credits' &&
      e.type === 'insufficient_quota',
    'no credits is an APIError with status 402 (insufficient_credits)');
  await expectError(
    zero.chat.completions.create({ model: zeroModel, messages, stream: true }),
    (e) => e instanceof APIError && e.status === 402 && e.code === 'insufficient_credits',
    'streamed too');

  const bad = new OpenAI({ baseURL, apiKey: 'svc_live_sk_' + 'x'.repeat(40), maxRetries: 0 });
  await expectError(bad.models.list(),
    (e) => e instanceof OpenAI.AuthenticationError && e.code === 'invalid_api_key',
    'a bad key is an AuthenticationError');
}

try {
  await main();
} catch (e) {
  ok(false, 'no unexpected exception', { name: e?.constructor?.name, message: e?.message,
                                         status: e?.status, error: e?.error });
}
if (failed) {
  console.log(`# ${failed} of ${n} checks failed`);
  process.exit(1);
}
console.log('ok - all');
