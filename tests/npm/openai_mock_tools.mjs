// SPDX-License-Identifier: MIT
//
// tests/npm/openai_mock_tools.mjs: the official `openai` npm SDK (the version pinned in
// package.json) against tests/mock/openai_mock.py's scripted tool-calling model, to show that
// the stand-in speaks OpenAI's format. Run by tests/http/test_mock_llm_peer.py
// (OpenAIMockToolsTest) with MOCK_BASE_URL ({mock}/v1) in the environment.
//
// A script of two steps (two calls, then "All done.") is asked for:
//   - blocking: message.tool_calls as OpenAI answers them, finish_reason "tool_calls";
//   - streamed, chunk by chunk: id, type and name in the first chunk of each index only, the
//     arguments over several chunks, joined they are the blocking answer's;
//   - through the SDK's stream helper (its own assembler): the same calls;
//   - through the SDK's tool runner (runTools), blocking and streamed: the SDK runs the calls,
//     sends the results back as `tool` messages, and the mock's next step answers "All done.";
//     the mock recorded the assistant and tool messages the SDK sent.
// Prints TAP-like lines; the last is `ok - all` and the exit status 0 when every check passed.

import OpenAI from 'openai';
import { isDeepStrictEqual } from 'node:util';

const baseURL = process.env.MOCK_BASE_URL;
if (!baseURL) {
  console.error('set MOCK_BASE_URL');
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

const client = new OpenAI({ baseURL, apiKey: 'mock-key', maxRetries: 0, timeout: 30000 });
const weatherArgs = { city: 'Paris', unit: 'celsius' };
const postArgs = { channel: '#ops', text: 'Rain "today", 12\u00b0C \u2614' };
const script = [
  { calls: [{ name: 'get_weather', arguments: weatherArgs },
            { name: 'post_message', arguments: postArgs, id: 'call_fixed' }] },
  { say: 'All done.' },
];
const marker = `[[tools:${Buffer.from(JSON.stringify(script)).toString('base64')}]]`;
const messages = [{ role: 'user', content: `Weather in Paris, then tell #ops ${marker}` }];
const schema = (props) => ({ type: 'object', properties: props });
const tools = [
  { type: 'function', function: { name: 'get_weather', description: 'The weather of a city.',
                                   parameters: schema({ city: { type: 'string' },
                                                        unit: { type: 'string' } }) } },
  { type: 'function', function: { name: 'post_message', description: 'Post to a channel.',
                                   parameters: schema({ channel: { type: 'string' },
                                                        text: { type: 'string' } }) } },
];

// [{id, name, args}] of a message's tool_calls, arguments parsed.
function callsOf(toolCalls) {
  return (toolCalls || []).map((c) => ({ id: c.id, type: c.type, name: c.function.name,
                                         args: JSON.parse(c.function.arguments) }));
}

async function main() {
  const c = await client.chat.completions.create({ model: 'mock', messages, tools });
  const choice = c.choices[0];
  const blocking = callsOf(choice.message.tool_calls);
  ok(choice.finish_reason === 'tool_calls' && choice.message.content === null,
     'blocking: finish_reason tool_calls, content null', choice);
  ok(blocking.length === 2 && blocking.every((x) => x.type === 'function') &&
       /^call_/.test(blocking[0].id) && blocking[1].id === 'call_fixed',
     'blocking: two function calls with their ids', blocking);
  ok(blocking[0].name === 'get_weather' && isDeepStrictEqual(blocking[0].args, weatherArgs) &&
       blocking[1].name === 'post_message' && isDeepStrictEqual(blocking[1].args, postArgs),
     'blocking: names and arguments as scripted', blocking);

  // Chunk by chunk, as a client that assembles calls itself sees them.
  const stream = await client.chat.completions.create({
    model: 'mock', messages, tools, stream: true, stream_options: { include_usage: true },
  });
  const seen = {};
  let finish = null;
  let usage = null;
  let headsOk = true;
  for await (const chunk of stream) {
    if (chunk.usage) usage = chunk.usage;
    for (const ch of chunk.choices) {
      if (ch.finish_reason) finish = ch.finish_reason;
      for (const t of ch.delta.tool_calls || []) {
        const s = seen[t.index] || (seen[t.index] = { chunks: 0, args: '', id: null, name: null });
        s.chunks += 1;
        if (s.chunks === 1) {
          s.id = t.id;
          s.name = t.function?.name;
          headsOk &&= t.type === 'function' && typeof t.id === 'string' && !!s.name;
        } else {
          headsOk &&= t.id === undefined && t.function?.name === undefined;
        }
        s.args += t.function?.arguments ?? '';
      }
    }
  }
  const streamed = Object.keys(seen).sort().map((i) => ({ id: seen[i].id, type: 'function',
                                                           name: seen[i].name,
                                                           args: JSON.parse(seen[i].args) }));
  ok(finish === 'tool_calls' && usage && usage.completion_tokens > 0,
     'streamed: finish_reason tool_calls, then usage', { finish, usage });
  ok(headsOk, 'streamed: id, type and name in the first chunk of an index only');
  ok(Object.values(seen).every((s) => s.chunks >= 3),
     'streamed: the arguments of each call over several chunks', seen);
  ok(isDeepStrictEqual(streamed, blocking), 'streamed: joined, the blocking calls',
     { streamed, blocking });

  // The SDK's own assembler.
  const helper = client.chat.completions.stream({ model: 'mock', messages, tools });
  const done = [];
  helper.on('tool_calls.function.arguments.done', (e) => done.push(e.name));
  const final = await helper.finalChatCompletion();
  ok(isDeepStrictEqual(callsOf(final.choices[0].message.tool_calls), blocking),
     "the SDK's stream helper assembles the same calls", final.choices[0].message);
  ok(isDeepStrictEqual(done, ['get_weather', 'post_message']),
     'and reports each call done, in order', done);

  // The SDK's tool runner: it runs the calls and sends the results back.
  for (const streaming of [false, true]) {
    const ran = [];
    const runnable = tools.map((t) => ({
      type: 'function',
      function: { ...t.function, parse: JSON.parse,
                  function: (args) => { ran.push([t.function.name, args]);
                                        return { ok: true, tool: t.function.name }; } },
    }));
    const runner = client.chat.completions.runTools({ model: 'mock', messages, tools: runnable,
                                                      stream: streaming });
    const content = await runner.finalContent();
    const what = streaming ? 'runTools (streamed)' : 'runTools';
    ok(content === 'All done.', `${what}: the next step answers`, content);
    ok(isDeepStrictEqual(ran, [['get_weather', weatherArgs], ['post_message', postArgs]]),
       `${what}: ran both calls with their arguments`, ran);
    const res = await fetch(new URL('/__requests', baseURL));
    const recs = await res.json();
    const last = recs[recs.length - 1].body.messages;
    const asked = last.find((m) => m.role === 'assistant');
    const results = last.filter((m) => m.role === 'tool');
    ok(asked && asked.tool_calls.length === 2 && results.length === 2 &&
         results[0].tool_call_id === asked.tool_calls[0].id &&
         results[1].tool_call_id === 'call_fixed' &&
         JSON.parse(results[1].content).tool === 'post_message',
       `${what}: the mock received the calls and their results`, last);
  }
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
