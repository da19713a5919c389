// SPDX-License-Identifier: MIT
//
// tests/npm/mcp_sdk.mjs: the official `@modelcontextprotocol/sdk` client (the version pinned in
// package.json) over its StreamableHTTPClientTransport, pointed at a running server's MCP
// endpoint with an Authorization header. Run by tests/http/test_mcp.py (McpSDKTest) with, in
// the environment:
//   WORKFORCE_MCP_URL          {server}/v1/mcp
//   WORKFORCE_MCP_KEY          a live key with credits and no scope restriction
//   WORKFORCE_MCP_READER_KEY   a key of the same organization with the scope employees:read only
//   WORKFORCE_MCP_WORKFLOW     a manual workflow of that organization (one respond step)
// It connects (initialize, notifications/initialized, the GET the client tries for a stream),
// pings, lists the tools, calls each of them (the client checks every structuredContent against
// the tool's outputSchema), gets a tool error and an unknown tool's protocol error, and checks
// what a key without the scopes sees and gets. Every HTTP exchange goes through a recording
// fetch, to check what the client sent and was answered. Prints TAP-like lines; the last is
// `ok - all` and the exit status 0 when every check passed.

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import {
  StreamableHTTPClientTransport, StreamableHTTPError,
} from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { McpError } from '@modelcontextprotocol/sdk/types.js';

const url = process.env.WORKFORCE_MCP_URL;
const key = process.env.WORKFORCE_MCP_KEY;
const readerKey = process.env.WORKFORCE_MCP_READER_KEY;
const workflowId = process.env.WORKFORCE_MCP_WORKFLOW;
if (!url || !key || !readerKey || !workflowId) {
  console.error('set WORKFORCE_MCP_URL, WORKFORCE_MCP_KEY, WORKFORCE_MCP_READER_KEY and ' +
                'WORKFORCE_MCP_WORKFLOW');
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

// Every exchange: method, request headers, status, response headers.
const log = [];
async function recordingFetch(input, init) {
  const res = await fetch(input, init);
  const headers = new Headers(init?.headers);
  let body = null;
  try { body = init?.body ? JSON.parse(init.body) : null; } catch { body = init?.body; }
  log.push({ method: init?.method ?? 'GET', headers, body, status: res.status,
             resHeaders: res.headers });
  return res;
}

async function connect(apiKey) {
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { Authorization: `Bearer ${apiKey}` } },
    fetch: recordingFetch,
  });
  const client = new Client({ name: 'workforce-test', version: '1.0.0' });
  await client.connect(transport);
  return { client, transport };
}

// A tool result's structured content, after checking the text item carries the same JSON.
function structured(res, what) {
  ok(res.isError === false, `${what}: not an error`, res);
  const text = res.content?.[0]?.type === 'text' ? res.content[0].text : null;
  ok(text !== null && JSON.stringify(JSON.parse(text)) === JSON.stringify(res.structuredContent),
     `${what}: the text item is the structured content's JSON`);
  return res.structuredContent;
}

// A tool error's body ({"error": {code, message, ...}}) from its text item.
function toolError(res) {
  if (!res.isError || res.content?.[0]?.type !== 'text') return null;
  try { return JSON.parse(res.content[0].text).error; } catch { return null; }
}

async function main() {
  const { client, transport } = await connect(key);
  ok(client.getServerVersion()?.name === 'workforce', 'initialize: serverInfo.name',
     client.getServerVersion());
  ok(transport.protocolVersion === '2025-11-25', 'the newest version is negotiated',
     transport.protocolVersion);
  ok(client.getServerCapabilities()?.tools !== undefined, 'the server declares tools');
  ok(transport.sessionId === undefined, 'stateless: no session id');
  const init = log.find((x) => x.body?.method === 'initialize');
  ok(init?.status === 200 && init.resHeaders.get('content-type')?.startsWith('application/json'),
     'initialize answered 200 application/json', init?.status);
  const initialized = log.find((x) => x.body?.method === 'notifications/initialized');
  ok(initialized?.status === 202, 'notifications/initialized answered 202', initialized?.status);
  ok(initialized?.headers.get('mcp-protocol-version') === '2025-11-25',
     'the client sends MCP-Protocol-Version after initialize');
  ok(initialized?.headers.get('authorization') === `Bearer ${key}`,
     'the client sends the Authorization header');
  // The client opens its stream with a GET once initialized, without waiting: wait for it.
  for (let i = 0; i < 100 && !log.some((x) => x.method === 'GET'); i++) {
    await new Promise((r) => setTimeout(r, 20));
  }
  const get = log.find((x) => x.method === 'GET');
  ok(get?.status === 405 && get.resHeaders.get('allow') === 'POST',
     'the GET for a server stream is answered 405 with Allow: POST', get?.status);

  await client.ping();
  ok(true, 'ping');

  const { tools } = await client.listTools();
  const names = tools.map((t) => t.name).sort();
  ok(JSON.stringify(names) === JSON.stringify(['ask_employee', 'create_task', 'get_task',
    'get_workflow_run', 'list_employees', 'list_tasks', 'run_workflow', 'search_knowledge']),
     'tools/list: the eight tools', names);

  const employees = structured(await client.callTool({ name: 'list_employees',
                                                       arguments: { limit: 5 } }),
                               'list_employees');
  ok(employees.employees.length === 5 && employees.has_more === true,
     'list_employees: a page of 5', employees);
  const emp = employees.employees.find((e) => e.tier === 'starter').id;

  const reply = structured(await client.callTool({
    name: 'ask_employee', arguments: { employee_id: emp, message: 'Hello from the MCP SDK' },
  }), 'ask_employee');
  ok(typeof reply.content === 'string' && reply.content.length > 0 && reply.credits_used >= 1,
     'ask_employee: a reply, charged', reply);

  const found = structured(await client.callTool({
    name: 'search_knowledge', arguments: { query: 'refund policy', limit: 2 },
  }), 'search_knowledge');
  ok(Array.isArray(found.results) && found.query === 'refund policy', 'search_knowledge', found);

  const task = structured(await client.callTool({
    name: 'create_task', arguments: { employee_id: emp, title: 'SDK task', priority: 'low' },
  }), 'create_task');
  ok(/^task_/.test(task.id) && task.priority === 'low', 'create_task: the record', task);
  const got = structured(await client.callTool({ name: 'get_task',
                                                 arguments: { task_id: task.id } }),
                         'get_task');
  ok(got.id === task.id && got.title === 'SDK task', 'get_task: the same task', got);
  const listed = structured(await client.callTool({ name: 'list_tasks',
                                                    arguments: { employee_id: emp } }),
                            'list_tasks');
  ok(listed.tasks.some((t) => t.id === task.id), 'list_tasks: it is listed', listed);

  const run = structured(await client.callTool({
    name: 'run_workflow', arguments: { workflow_id: workflowId, input: { text: 'hi' } },
  }), 'run_workflow');
  ok(/^run_/.test(run.id) && run.workflow_id === workflowId, 'run_workflow: a run', run);
  const read = structured(await client.callTool({
    name: 'get_workflow_run', arguments: { workflow_id: workflowId, run_id: run.id },
  }), 'get_workflow_run');
  ok(read.id === run.id, 'get_workflow_run: the same run', read);

  const missing = await client.callTool({ name: 'get_task',
                                          arguments: { task_id: 'task_' + 'Z'.repeat(24) } });
  const err = toolError(missing);
  ok(err?.code === 'task_not_found' && err.param === 'task_id',
     'an unknown task is a tool error (task_not_found)', missing);
  const bad = await client.callTool({ name: 'create_task', arguments: { title: 'no employee' } });
  ok(toolError(bad)?.param === 'employee_id', 'a missing argument is a tool error naming it',
     bad);

  try {
    await client.callTool({ name: 'no_such_tool', arguments: {} });
    ok(false, 'an unknown tool is refused');
  } catch (e) {
    ok(e instanceof McpError && e.code === -32602, 'an unknown tool is McpError -32602',
       { name: e?.name, code: e?.code, message: e?.message });
  }
  await client.close();

  // A key with employees:read only.
  const reader = await connect(readerKey);
  const rt = await reader.client.listTools();
  ok(JSON.stringify(rt.tools.map((t) => t.name)) === '["list_employees"]',
     'a key with employees:read lists list_employees only', rt.tools.map((t) => t.name));
  const refused = await reader.client.callTool({
    name: 'create_task', arguments: { employee_id: emp, title: 'not allowed' },
  });
  const re = toolError(refused);
  ok(re?.code === 'permission_denied' && re.message.includes('tasks'),
     'a tool outside its scopes is a tool error naming the scope', refused);
  await reader.client.close();

  // A bad key: the connection fails with the server's 401.
  try {
    await connect('svc_live_sk_' + 'x'.repeat(40));
    ok(false, 'a bad key cannot connect');
  } catch (e) {
    ok(e instanceof StreamableHTTPError && e.code === 401, 'a bad key: 401 on initialize',
       { name: e?.name, code: e?.code, message: e?.message });
  }
}

try {
  await main();
} catch (e) {
  ok(false, 'no unexpected exception', { name: e?.constructor?.name, message: e?.message,
                                         code: e?.code, stack: e?.stack });
}
if (failed) {
  console.log(`# ${failed} of ${n} checks failed`);
  process.exit(1);
}
console.log('ok - all');
