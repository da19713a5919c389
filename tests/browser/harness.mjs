// SPDX-License-Identifier: MIT
// harness.mjs: what the browser suite (console.mjs) stands on. The processes it starts (the
// OpenAI-compatible mock of tests/mock, the Stripe stand-in of tests/stripe, and workforce
// servers on free 127.0.0.1 ports, each with a fresh database in a temp dir), the CLI (keys),
// the TAP-like runner, and the checks every page gets: the network log (no host but the
// server's), console errors, axe-core, screenshots.
//
// Decisions:
// - Every child is stopped by its own PID (SIGTERM, then SIGKILL), at the end and on any exit
//   path (a signal, an exception, the suite's own deadline): nothing outlives the run.
// - Every wait waits for a condition with a deadline; there is no fixed sleep anywhere.
// - axe-core: the console's CSP (script-src 'self', no inline script) refuses a <script> that
//   page.addScriptTag({path}) would add, so the same file (node_modules/axe-core/axe.min.js) is
//   evaluated through the DevTools protocol instead, which the CSP does not govern. The pages
//   keep their real CSP, so a violation of it still shows as a console error.
// - A test's console errors and requests to other hosts fail that test, unless the test says it
//   expects them (the failed requests of the error tests).

import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
export const BIN = path.resolve(ROOT, process.env.WORKFORCE_BIN || 'build/workforce');
export const ARTIFACTS = path.resolve(ROOT, process.env.WORKFORCE_BROWSER_ARTIFACTS ||
                                      'build/test-artifacts/console');
export const CHROMIUM = process.env.WORKFORCE_CHROMIUM || '/usr/bin/chromium';
export const AXE_JS = path.join(ROOT, 'node_modules', 'axe-core', 'axe.min.js');
export const STRIPE_STANDIN = path.join(ROOT, 'tests', 'stripe', 'stripe_api.mjs');

// Deadlines. UI: a render after an answer of the server; WORK: the server does work (a document
// processed, a task or a workflow run); both generous for a loaded 2-core machine.
export const UI = 10_000;
export const WORK = 30_000;

// Every test org's limits are raised (test keys get the starter row): the suite is not about
// rate limiting.
const GENEROUS = 'starter:100000/100000/100,manager:100000/100000/100,agency:100000/100000/100';

// ---- Processes ----

const children = new Set(); // {pid, name, proc}

function killChild(c, sig) {
  try {
    process.kill(c.pid, sig);
  } catch {
    /* already gone */
  }
}

// Stop every child still running: SIGTERM, then SIGKILL after 'graceMs' (the sync variant is for
// process exit, where nothing can be awaited).
export async function stopAll(graceMs = 5000) {
  const live = [...children].filter((c) => c.proc.exitCode === null && c.proc.signalCode === null);
  for (const c of live) killChild(c, 'SIGTERM');
  await Promise.all(live.map((c) => exited(c.proc, graceMs).then((ok) => {
    if (!ok) killChild(c, 'SIGKILL');
  })));
}

export function killAllSync() {
  for (const c of children)
    if (c.proc.exitCode === null && c.proc.signalCode === null) killChild(c, 'SIGKILL');
}

function exited(proc, ms) {
  if (proc.exitCode !== null || proc.signalCode !== null) return Promise.resolve(true);
  return new Promise((resolve) => {
    const t = setTimeout(() => resolve(false), ms);
    proc.once('exit', () => { clearTimeout(t); resolve(true); });
  });
}

function track(proc, name) {
  const c = { pid: proc.pid, name, proc };
  children.add(c);
  proc.once('exit', () => children.delete(c));
  return c;
}

export function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

// Poll 'check' (async, truthy = done) until it is done or 'ms' pass; the poll interval is a
// pause between checks of a condition, bounded by the deadline.
export async function until(what, check, ms) {
  const end = Date.now() + ms;
  let last = null;
  for (;;) {
    try {
      const v = await check();
      if (v) return v;
    } catch (e) {
      last = e;
    }
    if (Date.now() > end)
      throw new Error(`timed out after ${ms} ms waiting for ${what}${last ? ': ' + last.message
                                                                        : ''}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

function cleanEnv(extra) {
  const env = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('WORKFORCE_')) env[k] = v;
  return { ...env, ...extra };
}

// The mock LLM of tests/mock (its markers: [[slow:MS]], [[say:B64]], ...), on a free port.
export async function startMock(dir) {
  const log = fs.openSync(path.join(dir, 'mock.log'), 'a');
  const proc = spawn('python3', [path.join(ROOT, 'tests/mock/openai_mock.py'), '--port', '0'],
                     { stdio: ['ignore', 'pipe', log], env: cleanEnv() });
  fs.closeSync(log);
  track(proc, 'mock');
  let out = '';
  proc.stdout.on('data', (d) => { out += d; });
  const port = await until('the mock LLM to print its port', () => {
    if (proc.exitCode !== null) throw new Error('the mock LLM exited: ' + out);
    const m = out.match(/^PORT (\d+)/m);
    return m && Number(m[1]);
  }, 15_000);
  return { port, url: `http://127.0.0.1:${port}/v1`, proc };
}

// The MCP server of tests/npm/mcp_server.mjs (the official SDK's), on a free port of
// 127.0.0.1: its paths are servers of their own (/json, /auth needs `Authorization: Bearer
// s3cret`, ...). It exits when its stdin closes or on SIGTERM.
export async function startMcpPeer(dir) {
  const log = fs.openSync(path.join(dir, 'mcp-peer.log'), 'a');
  const proc = spawn('node', [path.join(ROOT, 'tests/npm/mcp_server.mjs')],
                     { cwd: ROOT, stdio: ['pipe', 'pipe', log], env: cleanEnv() });
  fs.closeSync(log);
  track(proc, 'mcp peer');
  let out = '';
  proc.stdout.on('data', (d) => { out += d; });
  const port = await until('the MCP peer to print its port', () => {
    if (proc.exitCode !== null) throw new Error('the MCP peer exited: ' + out);
    const m = out.match(/^listening (\d+)/m);
    return m && Number(m[1]);
  }, 30_000);
  return { port, url: (p) => `http://127.0.0.1:${port}/${p}`, proc };
}

// The real OpenID Connect provider of tests/oidc/provider.mjs (oidc-provider from npm, pinned;
// its header tells the rest): one client 'clientId'/'secret' whose only redirect URI is
// 'redirectUri', no login page (its /interaction/UID logs in the current account and consents
// at once), on a free port of 127.0.0.1. Its control API sets who the account is (account())
// and makes the token endpoint answer bad ID tokens (tamper()). Stopped by its own PID (stop(),
// and stopAll()).
export async function startOidcProvider(dir, { clientId, secret, redirectUri, account }) {
  const cfgPath = path.join(dir, 'oidc-provider.json');
  fs.writeFileSync(cfgPath, JSON.stringify({ port: 0, client_id: clientId, client_secret: secret,
                                             redirect_uris: [redirectUri],
                                             ...(account ? { account } : {}) }));
  const log = fs.openSync(path.join(dir, 'oidc-provider.log'), 'a');
  const proc = spawn('node', [path.join(ROOT, 'tests/oidc/provider.mjs'), '--config', cfgPath],
                     { cwd: ROOT, stdio: ['ignore', 'pipe', log], env: cleanEnv() });
  fs.closeSync(log);
  track(proc, 'oidc provider');
  let out = '';
  proc.stdout.on('data', (d) => { out += d; });
  const stop = async () => {
    killChild({ pid: proc.pid }, 'SIGTERM');
    if (!await exited(proc, 5000)) killChild({ pid: proc.pid }, 'SIGKILL');
  };
  let info;
  try {
    // Its start loads oidc-provider and its dependencies, which on a busy machine (servers
    // packing their encoder's weights beside it) took over 30 s once: a generous deadline.
    info = await until('the OIDC provider to print its ready line', () => {
      if (proc.exitCode !== null) throw new Error(`the OIDC provider exited (${proc.exitCode})`);
      const line = out.split('\n');
      return line.length > 1 && JSON.parse(line[0]);
    }, 120_000);
  } catch (e) {
    await stop();
    let tail = '';
    try {
      tail = fs.readFileSync(path.join(dir, 'oidc-provider.log'), 'utf8').slice(-2000);
    } catch { /* no log */ }
    throw new Error(`${e.message}; its log ends: ${tail || '(empty)'}`);
  }
  const control = async (method, name, body) => {
    const r = await fetch(`${info.control_url}/${name}`, {
      method, headers: body ? { 'Content-Type': 'application/json' } : {},
      body: body ? JSON.stringify(body) : undefined });
    const text = await r.text();
    if (r.status !== 200) throw new Error(`OIDC provider control ${name}: ${r.status} ${text}`);
    return JSON.parse(text);
  };
  return {
    ...info, proc, pid: proc.pid, stop,
    state: () => control('GET', 'state'),
    account: (email, emailVerified = true) =>
      control('POST', 'account', { email, email_verified: emailVerified, name: email }),
    tamper: (mode) => control('POST', 'tamper', { mode }),
  };
}

// The stand-in of Stripe's API of tests/stripe/stripe_api.mjs (its header tells the rest):
// Checkout Sessions, a pay page /pay/<id> whose "Pay" posts a signed checkout.session.completed
// to 'events_url' and sends the browser to the session's success_url, and control routes
// (/__config, /__requests, ...). 'config' is its JSON config; it prints {"port", "url"} on its
// first stdout line. Stopped by its own PID (stop(), and stopAll()).
export async function startStripe(dir, config) {
  const cfgPath = path.join(dir, 'stripe-standin.json');
  fs.writeFileSync(cfgPath, JSON.stringify({ port: 0, ...config }));
  const log = fs.openSync(path.join(dir, 'stripe-standin.log'), 'a');
  const proc = spawn('node', [STRIPE_STANDIN, '--config', cfgPath],
                     { cwd: ROOT, stdio: ['ignore', 'pipe', log], env: cleanEnv() });
  fs.closeSync(log);
  track(proc, 'stripe stand-in');
  let out = '';
  proc.stdout.on('data', (d) => { out += d; });
  const info = await until('the Stripe stand-in to print its port', () => {
    if (proc.exitCode !== null) {
      let tail = '';
      try {
        tail = fs.readFileSync(path.join(dir, 'stripe-standin.log'), 'utf8').slice(-1000);
      } catch { /* no log */ }
      throw new Error(`the Stripe stand-in exited (${proc.exitCode}): ${tail}`);
    }
    const nl = out.indexOf('\n');
    return nl > 0 && JSON.parse(out.slice(0, nl));
  }, 30_000);
  const url = info.url || `http://127.0.0.1:${info.port}`;
  const control = async (method, name, body) => {
    const r = await fetch(`${url}/${name}`, {
      method, headers: body ? { 'Content-Type': 'application/json' } : {},
      body: body ? JSON.stringify(body) : undefined });
    const text = await r.text();
    if (r.status !== 200) throw new Error(`Stripe stand-in ${name}: ${r.status} ${text}`);
    return JSON.parse(text);
  };
  return {
    port: info.port, url, proc, pid: proc.pid,
    config: (c) => control('POST', '__config', c),
    requests: async () => (await control('GET', '__requests')).requests,
    deliveries: async () => (await control('GET', '__deliveries')).deliveries,
    // the next 'count' requests to its API answer 'status' (Stripe down)
    fail: (count, status) => control('POST', '__fail', { count, status }),
    stop: async () => {
      killChild({ pid: proc.pid }, 'SIGTERM');
      if (!await exited(proc, 5000)) killChild({ pid: proc.pid }, 'SIGKILL');
    },
  };
}

// One workforce server: a fresh database in its own temp dir, generous limits unless 'env'
// says otherwise, on a free port (another one if the port was taken before it bound it). With
// opts.port, on that port only (a provider registered its address first): if it is taken, the
// error thrown has portTaken set.
export async function startServer(name, env = {}, opts = {}) {
  if (!fs.existsSync(BIN)) throw new Error(`no server binary at ${BIN} (run make)`);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `workforce-browser-${name}-`));
  const db = path.join(dir, 'workforce.db');
  const logPath = path.join(dir, 'server.log');
  // Start the binary on 'port': its process once it listens there, or null if it could not.
  const launch = async (port) => {
    const log = fs.openSync(logPath, 'a');
    fs.writeSync(log, `\n==== start on port ${port} ====\n`);
    const proc = spawn(BIN, ['serve', '--listen', `127.0.0.1:${port}`, '--database', db], {
      cwd: dir, stdio: ['ignore', log, log],
      env: cleanEnv({ WORKFORCE_RATE_LIMITS: GENEROUS, ...env }),
    });
    fs.closeSync(log);
    track(proc, 'server ' + name);
    const ok = await until(`server ${name} to listen`, () => {
      const text = fs.readFileSync(logPath, 'utf8').split(`==== start on port ${port} ====`).pop();
      if (text.includes(`listening on http://127.0.0.1:${port}`)) return 'up';
      if (text.includes(`cannot listen on 127.0.0.1:${port}`) || proc.exitCode !== null)
        return 'down';
      return null;
    }, 20_000);
    if (ok === 'down') {
      if (!await exited(proc, 5000)) killChild({ pid: proc.pid }, 'SIGKILL');
      return null;
    }
    const url = `http://127.0.0.1:${port}`;
    await until(`server ${name} /healthz`, async () => (await fetch(url + '/healthz')).ok, 15_000);
    return proc;
  };
  for (let attempt = 0; attempt < 3; attempt++) {
    const port = opts.port || await freePort();
    const proc = await launch(port);
    if (!proc && opts.port) {
      const text = fs.readFileSync(logPath, 'utf8');
      const e = new Error(`server ${name} could not start on ${port}:\n${text}`);
      e.portTaken = text.includes(`cannot listen on 127.0.0.1:${port}`);
      throw e;
    }
    if (!proc) continue;
    const url = `http://127.0.0.1:${port}`;
    const server = {
      name, dir, db, port, url, proc, pid: proc.pid, logPath,
      // Start again on the same port and database (after kill); the port may have been taken
      // meanwhile: then this fails.
      restart: async () => {
        const p = await launch(port);
        if (!p) throw new Error(`server ${name} could not listen again on ${port}`);
        server.proc = p;
        server.pid = p.pid;
      },
      cli: (...args) => cli(db, dir, ...args),
      createKey: (org, opts = {}) => createKey(db, dir, org, opts),
      keyId: (org, secret) => keyId(db, dir, org, secret),
      // A person of 'org' (users create: its id and one-time set-password token), with
      // 'password' set through the API when one is given.
      createUser: async (org, email, role, password) => {
        const out = cli(db, dir, 'users', 'create', '--org', org, '--email', email, '--role', role);
        const [line, link] = out.split('\n');
        const token = (link.match(/[#&?]token=([^&\s]+)/) || [])[1];
        if (!token) throw new Error('no set-password link in: ' + out);
        const user = { id: line.split('\t')[0], email, role, token, password: null };
        if (password) {
          const r = await fetch(url + '/v1/users/set_password', {
            method: 'POST', headers: { 'Content-Type': 'application/json' },
            body: JSON.stringify({ token, password }) });
          if (!r.ok) throw new Error(`set_password for ${email}: ${r.status} ${await r.text()}`);
          user.password = password;
        }
        return user;
      },
      // A session of 'email' for the tests' own requests: {cookie, csrf, user}.
      session: async (email, password) => {
        const r = await fetch(url + '/v1/sessions', {
          method: 'POST', headers: { 'Content-Type': 'application/json' },
          body: JSON.stringify({ email, password }) });
        if (!r.ok) throw new Error(`sign-in of ${email}: ${r.status} ${await r.text()}`);
        const body = await r.json();
        const cookie = (r.headers.get('set-cookie') || '').split(';')[0];
        return { cookie, csrf: body.csrf_token, user: body.user };
      },
      // One request with a session (from session() above).
      sapi: async (ses, method, p, body) => {
        const res = await fetch(url + p, {
          method, headers: { Cookie: ses.cookie, 'X-CSRF-Token': ses.csrf,
                             ...(body ? { 'Content-Type': 'application/json' } : {}) },
          body: body ? JSON.stringify(body) : undefined,
        });
        const text = await res.text();
        let json = null;
        try { json = JSON.parse(text); } catch { /* not JSON */ }
        return { status: res.status, json, text };
      },
      log: () => fs.readFileSync(logPath, 'utf8'),
      alive: () => server.proc.exitCode === null && server.proc.signalCode === null,
      kill: async () => {
        killChild({ pid: server.pid }, 'SIGKILL');
        await exited(server.proc, 10_000);
      },
      stop: async () => {
        killChild({ pid: server.pid }, 'SIGTERM');
        if (!await exited(server.proc, 60_000)) killChild({ pid: server.pid }, 'SIGKILL');
      },
      // One request of the API with 'key' (the tests' own checks of what the pages did).
      api: async (key, method, p, body) => {
        const res = await fetch(url + p, {
          method, headers: { Authorization: 'Bearer ' + key,
                             ...(body ? { 'Content-Type': 'application/json' } : {}) },
          body: body ? JSON.stringify(body) : undefined,
        });
        const text = await res.text();
        let json = null;
        try { json = JSON.parse(text); } catch { /* not JSON */ }
        return { status: res.status, json, text, headers: res.headers };
      },
    };
    return server;
  }
  throw new Error(`server ${name} could not listen:\n` + fs.readFileSync(logPath, 'utf8'));
}

function cli(db, dir, ...args) {
  const r = spawnSync(BIN, [...args, '--database', db], { cwd: dir, env: cleanEnv(),
                                                         encoding: 'utf8', timeout: 30_000 });
  if (r.status !== 0)
    throw new Error(`workforce ${args.join(' ')} failed (${r.status}): ${r.stdout} ${r.stderr}`);
  return r.stdout.trim();
}

function createKey(db, dir, org, { mode = 'test', tier, scopes, credits } = {}) {
  const args = ['keys', 'create', '--org', org, '--mode', mode];
  if (tier) args.push('--tier', tier);
  if (scopes) args.push('--scopes', scopes);
  if (credits !== undefined) args.push('--credits', String(credits));
  return cli(db, dir, ...args);
}

// The id of a key (keys list: id, mode, last4, scopes, created_at, expires_at, status).
function keyId(db, dir, org, secret) {
  for (const line of cli(db, dir, 'keys', 'list', '--org', org).split('\n')) {
    const f = line.split('\t');
    if (f[2] === secret.slice(-4)) return f[0];
  }
  throw new Error(`key ending ${secret.slice(-4)} not listed for ${org}`);
}

// ---- The runner ----

// The console's own probes on load, whose failure is an answer, not an error: signed out,
// GET /v1/sessions/current is 401; a server without single sign-on answers 404 to GET
// /v1/sessions/options. Chromium logs each as a failed resource.
const PROBES = [/status of 401\b.*\/v1\/sessions\/current\)$/,
                /status of 404\b.*\/v1\/sessions\/options\)$/];

let current = null; // the running test's record: its console errors and foreign requests
const results = { passed: 0, failed: 0, skipped: 0, n: 0 };
const audits = []; // {label, violations}
export const allowedOrigins = [];

export function allowOrigin(origin) {
  allowedOrigins.push(origin);
}

// The end of allowOrigin(origin) (a host only one test may go to).
export function disallowOrigin(origin) {
  const i = allowedOrigins.lastIndexOf(origin);
  if (i >= 0) allowedOrigins.splice(i, 1);
}

export function note(msg) {
  for (const line of String(msg).split('\n')) console.log('# ' + line);
}

// Run one test: 'fn' gets a fresh incognito context from 'browser' when one is given.
// opts.allow: regexps of console errors this test expects (its deliberate failures).
// opts.known: a defect of a page, reported to its author, that makes this test fail: while it
// does, the test is reported as skipped with the defect named (and its failure); once it
// passes, a note says the mark can go.
export async function test(name, fn, { browser, allow = [], timeout = 90_000, known } = {}) {
  const n = ++results.n;
  current = { name, errors: [], foreign: [], allow, pages: [] };
  const t0 = Date.now();
  let ctx = null;
  let failure = null;
  let timer;
  try {
    ctx = browser ? await browser.createBrowserContext() : null;
    await Promise.race([
      fn(ctx),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`test deadline ${timeout} ms passed`)), timeout);
      }),
    ]);
    const errs = current.errors.filter((e) => !allow.some((re) => re.test(e)) &&
                                             !PROBES.some((re) => re.test(e)));
    if (current.foreign.length)
      failure = new Error('requests to another host: ' + current.foreign.join(', '));
    else if (errs.length) failure = new Error('console errors:\n' + errs.join('\n'));
  } catch (e) {
    failure = e;
  } finally {
    clearTimeout(timer);
  }
  if (failure) {
    for (const p of current.pages) {
      try {
        if (!p.isClosed())
          await p.screenshot({ path: path.join(ARTIFACTS, `failed-${n}.png`), fullPage: true });
      } catch { /* the page is gone */ }
    }
  }
  if (ctx) await ctx.close().catch(() => {});
  const secs = ((Date.now() - t0) / 1000).toFixed(1);
  const seen = current.errors;
  current = null;
  if (halted) return;
  if (failure && known) {
    results.skipped++;
    console.log(`ok ${n} - ${name} (${secs} s) # SKIP known defect: ${known}`);
    note('it fails with: ' + firstLine(failure));
  } else if (failure) {
    results.failed++;
    console.log(`not ok ${n} - ${name} (${secs} s): ${firstLine(failure)}`);
    note(failure.stack || String(failure));
    if (seen.length) note('console errors seen:\n' + seen.join('\n'));
  } else {
    results.passed++;
    console.log(`ok ${n} - ${name} (${secs} s)`);
    if (known) note(`the known defect "${known}" looks fixed: remove its mark from this test`);
  }
}

function firstLine(e) {
  return String(e && e.message || e).split('\n')[0].slice(0, 240);
}

let halted = false;

export function summary() {
  if (halted) return false;
  const s = results.skipped ? `, ${results.skipped} skipped` : '';
  console.log(`browser: ${results.passed} passed, ${results.failed} failed${s}`);
  return results.failed === 0;
}

// The run is cut short (a signal, the suite's deadline): one failing line says why, then the
// result line; whatever the tests still print after this is dropped.
export function halt(why) {
  if (halted) return;
  results.failed++;
  console.log(`not ok ${++results.n} - ${why}`);
  summary();
  halted = true;
}

export function assert(cond, msg) {
  if (!cond) throw new Error('assertion failed: ' + msg);
}

// ---- Pages ----

// A page of 'ctx' whose requests, console errors and dialogs are watched.
export async function newPage(ctx) {
  const page = await ctx.newPage();
  const rec = current;
  rec.pages.push(page);
  page.dialogs = [];
  page.setDefaultTimeout(UI);
  page.on('request', (req) => {
    const u = req.url();
    if (/^(data|blob|about):/.test(u)) return;
    let origin;
    try { origin = new URL(u).origin; } catch { origin = u; }
    if (!allowedOrigins.includes(origin)) rec.foreign.push(u);
  });
  page.on('console', (m) => {
    if (m.type() !== 'error') return;
    const loc = m.location();
    rec.errors.push(`console.error: ${m.text()}${loc && loc.url ? ' (' + loc.url + ')' : ''}`);
  });
  page.on('pageerror', (e) => rec.errors.push('pageerror: ' + (e.message || e)));
  page.on('dialog', async (d) => {
    page.dialogs.push(d.message());
    await d.dismiss().catch(() => {});
  });
  await page.setViewport({ width: 1280, height: 900 });
  return page;
}

let axeSource = null;

// Run axe-core on the page as it is, keep its serious and critical violations for the a11y
// tests, and save a screenshot named 'label'.
export async function audit(page, label, { fullPage = true } = {}) {
  // a full-page capture of a page scrolled down (to a field in error) leaves its lower part
  // blank: from the top, then
  await page.evaluate(() => new Promise((r) => {
    scrollTo(0, 0);
    requestAnimationFrame(() => requestAnimationFrame(r));
  }));
  await page.screenshot({ path: path.join(ARTIFACTS, label + '.png'), fullPage });
  if (!axeSource) axeSource = fs.readFileSync(AXE_JS, 'utf8');
  const has = await page.evaluate(() => typeof window.axe === 'object');
  if (!has) await page.evaluate(axeSource + '\n;0');
  const res = await page.evaluate(async () => {
    const r = await window.axe.run(document, { resultTypes: ['violations'] });
    return r.violations.map((v) => ({
      id: v.id, impact: v.impact, help: v.help,
      nodes: v.nodes.map((n) => ({ target: n.target.join(' '), html: n.html.slice(0, 200),
                                   summary: (n.failureSummary || '').slice(0, 300) })),
    }));
  });
  const bad = res.filter((v) => v.impact === 'serious' || v.impact === 'critical');
  const minor = res.filter((v) => !bad.includes(v));
  const old = audits.find((a) => a.label === label);
  if (old) {
    old.violations.push(...bad);
    old.minor.push(...minor);
  } else {
    audits.push({ label, url: page.url(), violations: bad, minor });
  }
}

export function auditResults() {
  return audits;
}

// ---- Finding things as a user sees them ----

// The element with role 'role' and accessible name 'name' (a string: exact; puppeteer's ARIA
// query), optionally inside the element 'within' (a CSS selector of roles or labels).
export function byRole(role, name, within = '') {
  const q = name === undefined ? `::-p-aria([role="${role}"])`
                               : `::-p-aria([name="${name}"][role="${role}"])`;
  return within ? `${within} ${q}` : q;
}

// Wait until the text of 'selector' (default: the whole page) holds 'text' (a string or a
// regexp); returns that text.
export async function waitText(page, text, { selector = 'body', timeout = UI } = {}) {
  const src = text instanceof RegExp ? { re: text.source, flags: text.flags } : { s: text };
  try {
    const h = await page.waitForFunction((sel, src) => {
      const els = [...document.querySelectorAll(sel)];
      for (const el of els) {
        const t = el.innerText || el.textContent || '';
        if (src.s !== undefined ? t.includes(src.s) : new RegExp(src.re, src.flags).test(t))
          return t;
      }
      return false;
    }, { timeout, polling: 100 }, selector, src);
    return await h.jsonValue();
  } catch (e) {
    const seen = await page.evaluate((sel) => [...document.querySelectorAll(sel)]
      .map((el) => el.innerText).join(' | ').slice(0, 600), selector).catch(() => '?');
    throw new Error(`waiting for ${text} in ${selector}: ${String(e.message).split('\n')[0]}; ` +
                    `it shows: ${seen}`);
  }
}

// An element with role=alert holding 'text' (the code of an error): its text.
export function waitAlert(page, text, timeout = UI) {
  return waitText(page, text, { selector: '[role="alert"]', timeout });
}

// The form control whose <label> reads 'text' (exactly, spaces folded): for the controls that
// puppeteer's ARIA query does not reach (a file input is a button named by its label).
export async function labelled(page, text, timeout = UI) {
  const h = await page.waitForFunction((t) => {
    for (const l of document.querySelectorAll('label'))
      if (l.textContent.replace(/\s+/g, ' ').trim() === t && l.control) return l.control;
    return false;
  }, { timeout, polling: 100 }, text);
  return h.asElement();
}

// The server's error shown at the field labelled 'label': the control is aria-invalid and the
// text it is described by holds 'code'; returns that text.
export async function fieldError(page, label, code, timeout = UI) {
  const control = await labelled(page, label, timeout);
  try {
    const h = await page.waitForFunction((el, code) => {
      if (el.getAttribute('aria-invalid') !== 'true') return false;
      const ids = (el.getAttribute('aria-describedby') || '').split(/\s+/).filter(Boolean);
      const text = ids.map((id) => (document.getElementById(id) || {}).textContent || '')
        .join(' ');
      return text.includes(code) ? text : false;
    }, { timeout, polling: 100 }, control, code);
    return await h.jsonValue();
  } catch (e) {
    const seen = await control.evaluate((el) => el.outerHTML.slice(0, 300));
    throw new Error(`no ${code} at the field "${label}": ${seen}`);
  }
}

// Press Tab (at most 'max' times) until 'handle' has the focus.
export async function tabTo(page, handle, max = 80) {
  for (let i = 0; i <= max; i++) {
    if (await handle.evaluate((el) => el === document.activeElement)) return i;
    await page.keyboard.press('Tab');
  }
  const what = await handle.evaluate((el) => el.outerHTML.slice(0, 120));
  throw new Error(`${what} not reached with ${max} presses of Tab`);
}

// Whether the page is not blank: its h1 or a form is visible with text.
export async function notBlank(page) {
  const text = await page.evaluate(() => document.body.innerText.trim());
  assert(text.length > 20, 'the page is blank');
}

export function mkdirs() {
  fs.rmSync(ARTIFACTS, { recursive: true, force: true });
  fs.mkdirSync(ARTIFACTS, { recursive: true });
}
