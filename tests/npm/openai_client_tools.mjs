// SPDX-License-Identifier: MIT
//
// tests/npm/openai_client_tools.mjs: the official `openai` npm SDK (the version pinned in
// package.json) does a tool_calls round trip with an employee through the server's
// OpenAI-compatible door, the model behind the server being tests/mock/openai_mock.py's
// scripted one. Run by tests/http/test_openai_tools.py (ClientToolsSDKTest) with, in the
// environment:
//   WORKFORCE_OPENAI_BASE_URL   {server}/v1/openai
//   WORKFORCE_OPENAI_KEY        a live key with credits
//   WORKFORCE_OPENAI_MODEL      an employee of that key whose rules offer knowledge.search
//   MOCK_BASE_URL               {mock}/v1 (its /__requests: what the model was shown)
//
// The script of every turn: the model calls the client's get_weather (and, in the first, the
// employee's own knowledge__search in the same step), then answers "It is sunny in Paris.".
//   - blocking: the answer is message.tool_calls (an id call_..., the client's call only),
//     finish_reason "tool_calls"; the message sent back with a `tool` result goes on with the
//     turn: the same completion id, the final text, finish_reason "stop";
//   - streamed, through the SDK's stream helper: it assembles the same kind of call from the
//     chunks and reports it done; the streamed follow-up gives the final text;
//   - the SDK's tool runner (runTools), blocking and streamed: it runs the client's function
//     with the arguments the model wrote and sends its result back; the final content is the
//     turn's last answer, and the model was shown that result.
// Prints TAP-like lines; the last is `ok - all` and the exit status 0 when every check passed.

import OpenAI from 'openai';
import { randomUUID } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';

const baseURL = process.env.WORKFORCE_OPENAI_BASE_URL;
const apiKey = process.env.WORKFORCE_OPENAI_KEY;
const model = process.env.WORKFORCE_OPENAI_MODEL;
const mockURL = process.env.MOCK_BASE_URL;
if (!baseURL || !apiKey || !model || !mockURL) {
  console.error('set WORKFORCE_OPENAI_BASE_URL, WORKFORCE_OPENAI_KEY, WORKFORCE_OPENAI_MODEL ' +
                'and MOCK_BASE_URL');
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

const client = new OpenAI({ baseURL, apiKey, maxRetries: 0, timeout: 30000 });
const FINAL = 'It is sunny in Paris.';
const weatherArgs = { city: 'Paris', unit: 'celsius' };
const tools = [
  { type: 'function', function: { name: 'get_weather', description: 'The weather of a city.',
                                   parameters: { type: 'object', properties: {
                                     city: { type: 'string' }, unit: { type: 'string' } } } } },
];

// A user message that scripts the model: this step's calls, then the final answer.
function ask(calls) {
  const script = [{ calls }, { say: FINAL }];
  const marker = `[[tools:${Buffer.from(JSON.stringify(script)).toString('base64')}]]`;
  return { role: 'user', content: `Weather in Paris? ${randomUUID()} ${marker}` };
}

// What the model was shown in the model calls of the turn of user message 'user'.
async function shown(user) {
  const res = await fetch(new URL('/__requests', mockURL));
  const recs = await res.json();
  return recs.filter((r) => r.last_user === user.content).map((r) => r.body.messages);
}

const weatherCall = { name: 'get_weather', arguments: weatherArgs };

async function blocking() {
  const user = ask([{ name: 'knowledge__search', arguments: { query: 'Paris' } }, weatherCall]);
  const messages = [{ role: 'system', content: 'Be brief.' }, user];
  const c = await client.chat.completions.create({ model, messages, tools });
  const choice = c.choices[0];
  const calls = choice.message.tool_calls || [];
  ok(choice.finish_reason === 'tool_calls' && choice.message.content === null,
     'blocking: finish_reason tool_calls, content null', choice);
  ok(calls.length === 1 && /^call_[0-9A-Za-z]{24}$/.test(calls[0].id) &&
       calls[0].type === 'function' && calls[0].function.name === 'get_weather' &&
       isDeepStrictEqual(JSON.parse(calls[0].function.arguments), weatherArgs),
     "blocking: only the client's call, with an id of the service", calls);
  messages.push(choice.message);
  messages.push({ role: 'tool', tool_call_id: calls[0].id, content: '{"sky":"clear"}' });
  const c2 = await client.chat.completions.create({ model, messages, tools });
  ok(c2.choices[0].finish_reason === 'stop' && c2.choices[0].message.content === FINAL,
     'blocking follow-up: the turn goes on to its answer', c2.choices[0]);
  ok(c2.id === c.id && c2.usage.completion_tokens > 0,
     'blocking follow-up: the same stored message, its own usage', { id: c.id, c2 });
  const seen = await shown(user);
  const last = seen[seen.length - 1] || [];
  const results = last.filter((m) => m.role === 'tool').map((m) => m.content);
  ok(seen.length === 2 && results.length === 2 && results.includes('{"sky":"clear"}'),
     "the model was shown both results of the step, the client's among them", last);
}

async function streamed() {
  const user = ask([weatherCall]);
  const messages = [user];
  const stream = client.chat.completions.stream({ model, messages, tools,
                                                  stream_options: { include_usage: true } });
  const done = [];
  stream.on('tool_calls.function.arguments.done', (e) => done.push([e.name, e.parsed_arguments ??
                                                                    JSON.parse(e.arguments)]));
  const final = await stream.finalChatCompletion();
  const msg = final.choices[0].message;
  ok(final.choices[0].finish_reason === 'tool_calls' && msg.tool_calls?.length === 1 &&
       /^call_/.test(msg.tool_calls[0].id),
     'streamed: the stream helper assembles the call', final.choices[0]);
  ok(isDeepStrictEqual(done, [['get_weather', weatherArgs]]),
     'streamed: and reports it done with its arguments', done);
  ok(final.usage && final.usage.completion_tokens > 0, 'streamed: usage', final.usage);
  messages.push(msg);
  messages.push({ role: 'tool', tool_call_id: msg.tool_calls[0].id, content: 'clear sky' });
  const next = client.chat.completions.stream({ model, messages, tools });
  const deltas = [];
  next.on('content', (delta) => deltas.push(delta));
  const content = await next.finalContent();
  ok(content === FINAL && deltas.join('') === FINAL,
     'streamed follow-up: the final text, in deltas', { content, deltas });
}

async function runner(streaming) {
  const user = ask([weatherCall]);
  const ran = [];
  const runnable = tools.map((t) => ({
    type: 'function',
    function: { ...t.function, parse: JSON.parse,
                function: (args) => { ran.push(args); return { sky: 'clear', celsius: 24 }; } },
  }));
  const run = client.chat.completions.runTools({ model, messages: [user], tools: runnable,
                                                 stream: streaming });
  const content = await run.finalContent();
  const what = streaming ? 'runTools (streamed)' : 'runTools';
  ok(content === FINAL, `${what}: the final answer`, content);
  ok(isDeepStrictEqual(ran, [weatherArgs]), `${what}: ran the client's function once`, ran);
  const seen = await shown(user);
  const last = seen[seen.length - 1] || [];
  const result = last.find((m) => m.role === 'tool');
  ok(seen.length === 2 && result && isDeepStrictEqual(JSON.parse(result.content),
                                                      { sky: 'clear', celsius: 24 }),
     `${what}: the model was shown the function's result`, last);
}

async function main() {
  await blocking();
  await streamed();
  await runner(false);
  await runner(true);
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
