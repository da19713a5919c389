// SPDX-License-Identifier: MIT
//
// tests/npm/mcp_server.mjs: an MCP server built with the official `@modelcontextprotocol/sdk`
// (the version pinned in package.json): its low-level Server over its Streamable HTTP server
// transport, the peer of the server's MCP client (src/mcpc) in tests/unit/test_mcpc.c and
// tests/http/test_mcp_servers.py. It listens on 127.0.0.1 on a free port and prints one line,
// `listening <port>`; it exits when its stdin closes (the test that started it ended) or on
// SIGTERM.
//
// Paths (each a server of its own):
//   /json        sessions (Mcp-Session-Id), every answer one application/json body
//   /sse         sessions, every answer an event stream; tools/call sends a log notification
//                on the stream before its response
//   /stateless   no session, JSON answers
//   /auth        as /json, but every request without `Authorization: Bearer s3cret` is 401
//   /pages70     a tools/list of 70 pages of one tool each
//   /tools1001   1001 tools over 3 pages
//   /raw/old     not the SDK: initialize answers protocol version 2024-11-05
//   /raw/text    not the SDK: text/plain answers
//   /raw/hang    not the SDK: never answers
// GET /stats answers what the servers saw: sessions opened and deleted, and the
// MCP-Protocol-Version and Authorization headers of the last POST of each path.
//
// Tools (the same on every SDK path; tools/list answers pages of 4, so 3 pages):
//   echo {text}       read only; answers "echo: <text>"
//   add {a, b}        read only; answers the sum
//   fail {}           answers isError with "it failed on purpose"
//   secret {}         answers "accepted" when the request carried Authorization: Bearer s3cret,
//                     else isError "no valid Authorization header"
//   sleep {ms}        waits 'ms' milliseconds (at most 60000), answers "slept"
//   structured {}     answers no content, only structuredContent {"answer": 42}
//   mixed {}          answers a text, an image and a resource link
//   files.read {path} read only; a name with a dot
//   Bad Name! {}      a name no employee rule can write

import { randomUUID } from 'node:crypto';
import http from 'node:http';

import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';

const SECRET = 'Bearer s3cret';
const obj = (props, required = []) => ({ type: 'object', properties: props, required });

const TOOLS = [
  { name: 'echo', description: 'Echo the text back.', inputSchema: obj({ text: { type: 'string' } }, ['text']),
    annotations: { readOnlyHint: true } },
  { name: 'add', description: 'Add two numbers.',
    inputSchema: obj({ a: { type: 'number' }, b: { type: 'number' } }, ['a', 'b']),
    annotations: { readOnlyHint: true, title: 'Add' } },
  { name: 'fail', description: 'Always fails.', inputSchema: obj({}) },
  { name: 'secret', description: 'Needs the Authorization header.', inputSchema: obj({}),
    annotations: { readOnlyHint: false } },
  { name: 'sleep', description: 'Wait a while.', inputSchema: obj({ ms: { type: 'integer' } }, ['ms']) },
  { name: 'structured', description: 'Structured content only.', inputSchema: obj({}) },
  { name: 'mixed', description: 'Several kinds of content.', inputSchema: obj({}) },
  { name: 'files.read', description: 'Read a file.', inputSchema: obj({ path: { type: 'string' } }, ['path']),
    annotations: { readOnlyHint: true } },
  { name: 'Bad Name!', description: 'A name with a space.', inputSchema: obj({}) },
];

const stats = { opened: 0, deleted: 0, last: {} };

function toolsFor(variant) {
  if (variant === 'pages70') return { all: Array.from({ length: 70 }, (_, i) => ({ name: `t${i}`, inputSchema: obj({}) })), size: 1 };
  if (variant === 'tools1001') return { all: Array.from({ length: 1001 }, (_, i) => ({ name: `t${i}`, inputSchema: obj({}) })), size: 500 };
  return { all: TOOLS, size: 4 };
}

function newServer(variant) {
  const server = new Server({ name: 'workforce-test-peer', version: '1.0.0' },
                            { capabilities: { tools: {}, logging: {} } });
  const { all, size } = toolsFor(variant);
  server.setRequestHandler(ListToolsRequestSchema, async (req) => {
    const start = req.params?.cursor ? Number(req.params.cursor) : 0;
    const page = all.slice(start, start + size);
    const out = { tools: page };
    if (start + size < all.length) out.nextCursor = String(start + size);
    return out;
  });
  server.setRequestHandler(CallToolRequestSchema, async (req, extra) => {
    const args = req.params.arguments ?? {};
    const headers = extra.requestInfo?.headers ?? {};
    const text = (t) => ({ content: [{ type: 'text', text: t }] });
    if (variant === 'sse') {
      await extra.sendNotification({ method: 'notifications/message',
                                     params: { level: 'info', data: `calling ${req.params.name}` } });
    }
    switch (req.params.name) {
      case 'echo': return text(`echo: ${args.text}`);
      case 'add': return text(String(Number(args.a) + Number(args.b)));
      case 'fail': return { content: [{ type: 'text', text: 'it failed on purpose' }], isError: true };
      case 'secret':
        return headers.authorization === SECRET ? text('accepted')
          : { content: [{ type: 'text', text: 'no valid Authorization header' }], isError: true };
      case 'sleep':
        await new Promise((r) => setTimeout(r, Math.min(Number(args.ms) || 0, 60000)));
        return text('slept');
      case 'structured': return { content: [], structuredContent: { answer: 42 } };
      case 'mixed':
        return { content: [{ type: 'text', text: 'first' },
                           { type: 'image', data: 'iVBORw0KGgo=', mimeType: 'image/png' },
                           { type: 'resource_link', uri: 'file:///tmp/x.txt', name: 'x' }] };
      case 'files.read': return text(`read ${args.path}`);
      default: throw new Error(`Unknown tool: ${req.params.name}`);
    }
  });
  return server;
}

const sessions = new Map(); // session id -> transport

function readBody(req) {
  return new Promise((resolve) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
  });
}

function json(res, status, body) {
  res.writeHead(status, { 'Content-Type': 'application/json' });
  res.end(JSON.stringify(body));
}

async function raw(variant, req, res) {
  const body = await readBody(req);
  let msg = {};
  try { msg = JSON.parse(body); } catch { /* answered below */ }
  if (variant === 'hang') return; // never answers; the client's deadline ends it
  if (variant === 'text') {
    res.writeHead(200, { 'Content-Type': 'text/plain' });
    res.end('hello');
    return;
  }
  if (msg.method === 'initialize') {
    json(res, 200, { jsonrpc: '2.0', id: msg.id,
                     result: { protocolVersion: '2024-11-05', capabilities: { tools: {} },
                               serverInfo: { name: 'old', version: '0' } } });
    return;
  }
  res.writeHead(202);
  res.end();
}

async function sdk(variant, req, res) {
  const stateless = variant === 'stateless';
  const jsonAnswers = variant !== 'sse';
  if (variant === 'auth' && req.headers.authorization !== SECRET) {
    json(res, 401, { jsonrpc: '2.0', error: { code: -32001, message: 'Unauthorized' }, id: null });
    return;
  }
  const sid = req.headers['mcp-session-id'];
  let body;
  if (req.method === 'POST') {
    body = JSON.parse(await readBody(req));
    stats.last[variant] = { protocol: req.headers['mcp-protocol-version'] ?? null,
                            authorization: req.headers.authorization ?? null,
                            session: sid ?? null };
  }
  if (stateless) {
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined,
                                                          enableJsonResponse: true });
    const server = newServer(variant);
    res.on('close', () => { transport.close(); server.close(); });
    await server.connect(transport);
    await transport.handleRequest(req, res, body);
    return;
  }
  let transport = sid ? sessions.get(sid) : undefined;
  if (!transport) {
    if (sid || req.method !== 'POST' || body?.method !== 'initialize') {
      json(res, sid ? 404 : 400, { jsonrpc: '2.0', error: { code: -32000, message: 'No session' }, id: null });
      return;
    }
    transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      enableJsonResponse: jsonAnswers,
      onsessioninitialized: (id) => { sessions.set(id, transport); stats.opened += 1; },
    });
    transport.onclose = () => {
      if (transport.sessionId && sessions.delete(transport.sessionId)) stats.deleted += 1;
    };
    await newServer(variant).connect(transport);
  }
  await transport.handleRequest(req, res, body);
}

const httpServer = http.createServer((req, res) => {
  const url = new URL(req.url, 'http://127.0.0.1');
  const parts = url.pathname.split('/').filter(Boolean);
  const done = (e) => {
    if (!res.headersSent) json(res, 500, { error: String(e) });
  };
  if (req.method === 'GET' && url.pathname === '/stats') {
    json(res, 200, { ...stats, open: sessions.size });
    return;
  }
  if (parts[0] === 'raw' && parts.length === 2) {
    raw(parts[1], req, res).catch(done);
    return;
  }
  if (parts.length === 1 && ['json', 'sse', 'stateless', 'auth', 'pages70', 'tools1001'].includes(parts[0])) {
    sdk(parts[0], req, res).catch(done);
    return;
  }
  json(res, 404, { error: 'no such path' });
});

httpServer.listen(0, '127.0.0.1', () => {
  console.log(`listening ${httpServer.address().port}`);
});
process.stdin.on('end', () => process.exit(0));
process.stdin.resume();
process.on('SIGTERM', () => process.exit(0));
