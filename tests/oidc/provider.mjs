// SPDX-License-Identifier: MIT
/*
 * A real OpenID Connect provider for black-box tests of Workforce's sign-in (contract §20),
 * built on the npm package oidc-provider (pinned at 9.13.3 in package.json), the way
 * tests/oauth/authz_server.mjs wraps it for the integrations. Test helper only.
 *
 *   node tests/oidc/provider.mjs --config FILE
 *
 * FILE is JSON:
 *   {
 *     "port": 0,                           // 0 = a free port
 *     "client_id": "wf", "client_secret": "s",
 *     "redirect_uris": ["http://127.0.0.1:PORT/v1/sessions/oidc/callback"],
 *     "account": {"email": "ada@example.com", "email_verified": true, "name": "Ada Lovelace"}
 *   }
 *
 * It listens on 127.0.0.1 only and, when ready, prints exactly one JSON line on stdout:
 *   {"issuer": "http://127.0.0.1:PORT", "port": PORT, "authorization_endpoint": ".../auth",
 *    "token_endpoint": ".../token", "jwks_uri": ".../jwks", "control_url": ".../__control",
 *    "kid": "<the signing key's kid>"}
 * Everything else goes to stderr. It runs until SIGTERM or SIGINT. A bad config: exit 2.
 *
 * Protocol (oidc-provider does it): discovery at /.well-known/openid-configuration, the
 * authorization code flow only, PKCE S256 required, client_secret_basic at /token, ID tokens
 * signed RS256 (or ES256 after a rotation asking for it) carrying the nonce and, because
 * conformIdTokenClaims is off, the email, email_verified and name of the scopes asked for.
 *
 * User agent: no login page. /interaction/UID finishes each prompt at once (login as the
 * current account, consent to every scope), so a client that follows the 303 redirects with a
 * cookie jar lands on redirect_uri?code=...&state=...&iss=... without a browser; a browser
 * does the same by itself.
 *
 * Control API (JSON in and out):
 *   GET  /__control/state   -> {"kid", "alg", "account", "tamper", "jwks_requests",
 *                               "token_requests", "discovery_requests"}
 *   POST /__control/rotate  {"alg": "RS256"|"ES256"} (default RS256) -> {"kid", "old_kid"}
 *        a new signing key with a new kid; the old key leaves the JWKS at once.
 *   POST /__control/account {"email", "email_verified", "name"} -> the account
 *        who the next logins are (a new sub per email).
 *   POST /__control/tamper  {"mode": M} -> {"tamper": M}
 *        until mode "off", the id_token of every token answer is replaced by a bad one made
 *        from the real one's claims: "expired" (exp and iat 10 and 20 minutes ago, signed with
 *        the provider's key), "wrong_nonce" (another nonce, signed with its key), "resigned"
 *        (the same header and claims signed by a key that is in no JWKS), "alg_none".
 */

import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import * as http from 'node:http';

console.info = (...args) => console.error(...args);
console.log = (...args) => console.error(...args);

const { default: Provider } = await import('oidc-provider');

function die(msg) {
  process.stderr.write(`oidc provider: ${msg}\n`);
  process.exit(2);
}

// ---- Config ----

function readConfig() {
  const i = process.argv.indexOf('--config');
  if (i === -1 || !process.argv[i + 1]) die('usage: node provider.mjs --config FILE');
  let cfg;
  try {
    cfg = JSON.parse(fs.readFileSync(process.argv[i + 1], 'utf8'));
  } catch (err) {
    die(`cannot read config: ${err.message}`);
  }
  const port = cfg.port ?? 0;
  if (!Number.isInteger(port) || port < 0 || port > 65535) die('port must be 0..65535');
  for (const k of ['client_id', 'client_secret']) {
    if (typeof cfg[k] !== 'string' || !cfg[k]) die(`${k} must be a non-empty string`);
  }
  if (!Array.isArray(cfg.redirect_uris) || !cfg.redirect_uris.length) die('redirect_uris must be a non-empty array');
  return { ...cfg, port };
}

const cfg = readConfig();

// ---- State ----

const TAMPER_MODES = new Set(['off', 'expired', 'wrong_nonce', 'resigned', 'alg_none']);
const control = {
  tamper: 'off',
  account: { email: 'ada@example.com', email_verified: true, name: 'Ada Lovelace', ...(cfg.account || {}) },
  counts: { jwks: 0, token: 0, discovery: 0 },
};
const subOf = (email) => `sub-${crypto.createHash('sha256').update(email).digest('hex').slice(0, 16)}`;
const accounts = new Map(); // sub -> claims, every account ever logged in

// ---- Storage (in memory, shared by every Provider instance so a rotation keeps sessions) ----

const stores = new Map();
const nowSec = () => Math.floor(Date.now() / 1000);
function storeFor(model) {
  if (!stores.has(model)) stores.set(model, new Map());
  return stores.get(model);
}
class MemoryAdapter {
  constructor(model) { this.store = storeFor(model); }
  async upsert(id, payload, expiresIn) {
    this.store.set(id, { payload: { ...payload }, expiresAt: expiresIn ? nowSec() + expiresIn : Infinity });
  }
  async find(id) {
    const e = this.store.get(id);
    if (!e) return undefined;
    if (e.expiresAt + 60 < nowSec()) { this.store.delete(id); return undefined; }
    return e.payload;
  }
  async findByUid(uid) {
    for (const [id, e] of this.store) if (e.payload.uid === uid) return this.find(id);
    return undefined;
  }
  async findByUserCode(code) {
    for (const [id, e] of this.store) if (e.payload.userCode === code) return this.find(id);
    return undefined;
  }
  async consume(id) { const e = this.store.get(id); if (e) e.payload.consumed = nowSec(); }
  async destroy(id) { this.store.delete(id); }
  async revokeByGrantId(grantId) {
    for (const [id, e] of this.store) if (e.payload.grantId === grantId) this.store.delete(id);
  }
}

// ---- Keys ----

let signing; // {kid, alg, privateKey, jwk (private, for oidc-provider)}
function newKey(alg) {
  const kid = `k-${crypto.randomBytes(6).toString('hex')}`;
  const pair = alg === 'ES256'
    ? crypto.generateKeyPairSync('ec', { namedCurve: 'P-256' })
    : crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
  return { kid, alg, privateKey: pair.privateKey, jwk: { ...pair.privateKey.export({ format: 'jwk' }), kid, use: 'sig', alg } };
}
const stranger = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey; // in no JWKS

// ---- HTTP server ----

const server = http.createServer();
server.keepAliveTimeout = 5000;
await new Promise((resolve, reject) => {
  server.once('error', reject);
  server.listen(cfg.port, '127.0.0.1', () => { server.off('error', reject); resolve(); });
}).catch((err) => die(`cannot listen on 127.0.0.1:${cfg.port}: ${err.message}`));
const { port } = server.address();
const issuer = `http://127.0.0.1:${port}`;
const cookieKeys = [crypto.randomBytes(32).toString('base64url')];

let provider;
let providerCallback;
function build() {
  const p = new Provider(issuer, {
    adapter: MemoryAdapter,
    jwks: { keys: [signing.jwk] },
    cookies: { keys: cookieKeys },
    clients: [{
      client_id: cfg.client_id,
      client_secret: cfg.client_secret,
      redirect_uris: cfg.redirect_uris,
      grant_types: ['authorization_code'],
      response_types: ['code'],
      token_endpoint_auth_method: 'client_secret_basic',
      id_token_signed_response_alg: signing.alg,
    }],
    responseTypes: ['code'],
    scopes: ['openid', 'email', 'profile'],
    claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'] },
    conformIdTokenClaims: false,
    async findAccount(ctx, sub) {
      const claims = accounts.get(sub);
      if (!claims) return undefined;
      return { accountId: sub, async claims() { return { sub, ...claims }; } };
    },
    features: { devInteractions: { enabled: false }, resourceIndicators: { enabled: false } },
    pkce: { required: () => true },
    allowOmittingSingleRegisteredRedirectUri: false,
    ttl: { AccessToken: 600, AuthorizationCode: 60, IdToken: 600, Interaction: 600, Session: 3600, Grant: 3600 },
    interactions: { url: (ctx, interaction) => `/interaction/${interaction.uid}` },
  });
  p.on('server_error', (ctx, err) => process.stderr.write(`oidc provider: server_error ${ctx.path}: ${err.stack || err}\n`));
  provider = p;
  providerCallback = p.callback();
}

try {
  signing = newKey('RS256');
  build();
} catch (err) {
  die(`bad configuration: ${err.message}`);
}

function sendJson(res, status, obj) {
  const body = JSON.stringify(obj);
  res.writeHead(status, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': Buffer.byteLength(body), 'Cache-Control': 'no-store' });
  res.end(body);
}

function readBody(req, limit = 64 * 1024) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    let n = 0;
    req.on('data', (c) => { n += c.length; if (n > limit) { reject(new Error('too large')); req.destroy(); } else chunks.push(c); });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

// ---- Bad ID tokens ----

const b64u = (b) => Buffer.from(b).toString('base64url');
function forge(idToken, mode) {
  const [h, p] = idToken.split('.');
  const header = JSON.parse(Buffer.from(h, 'base64url'));
  const claims = JSON.parse(Buffer.from(p, 'base64url'));
  let key = signing.privateKey;
  if (mode === 'expired') {
    claims.iat = nowSec() - 1200;
    claims.exp = nowSec() - 600;
  } else if (mode === 'wrong_nonce') {
    claims.nonce = 'not-the-nonce-of-this-flow';
  } else if (mode === 'resigned') {
    header.alg = 'RS256';
    key = stranger;
  } else if (mode === 'alg_none') {
    header.alg = 'none';
    return `${b64u(JSON.stringify(header))}.${b64u(JSON.stringify(claims))}.`;
  }
  const input = `${b64u(JSON.stringify(header))}.${b64u(JSON.stringify(claims))}`;
  const sig = header.alg === 'ES256'
    ? crypto.sign('sha256', Buffer.from(input), { key, dsaEncoding: 'ieee-p1363' })
    : crypto.sign('sha256', Buffer.from(input), key);
  return `${input}.${b64u(sig)}`;
}

// The token endpoint's answer, with its id_token replaced while tampering is on.
function tamperTokenAnswer(res) {
  const end = res.end.bind(res);
  res.end = (chunk, ...rest) => {
    if (control.tamper !== 'off' && chunk && !res.headersSent) {
      try {
        const body = JSON.parse(Buffer.from(chunk).toString('utf8'));
        if (body.id_token) {
          body.id_token = forge(body.id_token, control.tamper);
          const text = JSON.stringify(body);
          res.setHeader('Content-Length', Buffer.byteLength(text));
          return end(text, ...rest.filter((r) => typeof r === 'function'));
        }
      } catch (err) {
        process.stderr.write(`oidc provider: tamper failed: ${err.message}\n`);
      }
    }
    return end(chunk, ...rest);
  };
}

// ---- Control ----

async function handleControl(req, res, path) {
  let body = {};
  if (req.method === 'POST') {
    const raw = await readBody(req);
    if (raw.trim()) {
      try { body = JSON.parse(raw); } catch { return sendJson(res, 400, { error: 'body is not JSON' }); }
    }
  }
  switch (`${req.method} ${path}`) {
    case 'GET /__control/state':
      return sendJson(res, 200, {
        kid: signing.kid, alg: signing.alg, account: control.account, tamper: control.tamper,
        jwks_requests: control.counts.jwks, token_requests: control.counts.token,
        discovery_requests: control.counts.discovery,
      });
    case 'POST /__control/rotate': {
      const alg = body.alg ?? 'RS256';
      if (alg !== 'RS256' && alg !== 'ES256') return sendJson(res, 400, { error: 'alg must be RS256 or ES256' });
      const old = signing.kid;
      signing = newKey(alg);
      build();
      return sendJson(res, 200, { kid: signing.kid, old_kid: old, alg });
    }
    case 'POST /__control/account':
      if (typeof body.email !== 'string' || !body.email) return sendJson(res, 400, { error: 'email must be a string' });
      control.account = { email: body.email, email_verified: body.email_verified !== false, name: body.name ?? body.email };
      return sendJson(res, 200, control.account);
    case 'POST /__control/tamper':
      if (!TAMPER_MODES.has(body.mode)) return sendJson(res, 400, { error: `mode must be one of ${[...TAMPER_MODES].join(', ')}` });
      control.tamper = body.mode;
      return sendJson(res, 200, { tamper: control.tamper });
    default:
      return sendJson(res, 404, { error: `no control route ${req.method} ${path}` });
  }
}

// ---- Interactions: login as the current account, consent to everything, at once ----

async function handleInteraction(req, res) {
  const details = await provider.interactionDetails(req, res);
  const { prompt, params, session } = details;
  if (prompt.name === 'login') {
    const sub = subOf(control.account.email);
    accounts.set(sub, { ...control.account });
    await provider.interactionFinished(req, res, { login: { accountId: sub } }, { mergeWithLastSubmission: false });
    return;
  }
  if (prompt.name === 'consent') {
    const grant = details.grantId
      ? await provider.Grant.find(details.grantId)
      : new provider.Grant({ accountId: session.accountId, clientId: params.client_id });
    const d = prompt.details;
    if (d.missingOIDCScope) grant.addOIDCScope(d.missingOIDCScope.join(' '));
    if (d.missingOIDCClaims) grant.addOIDCClaims(d.missingOIDCClaims);
    const grantId = await grant.save();
    await provider.interactionFinished(req, res, { consent: details.grantId ? {} : { grantId } }, { mergeWithLastSubmission: true });
    return;
  }
  await provider.interactionFinished(req, res, { error: 'access_denied', error_description: `unsupported prompt ${prompt.name}` }, { mergeWithLastSubmission: false });
}

server.on('request', (req, res) => {
  const path = (req.url || '/').split('?')[0];
  const run = async () => {
    if (path === '/__control' || path.startsWith('/__control/')) {
      await handleControl(req, res, path);
      return;
    }
    if (/^\/interaction\/[^/]+$/.test(path)) {
      await handleInteraction(req, res);
      return;
    }
    if (path === '/jwks') control.counts.jwks += 1;
    if (path === '/.well-known/openid-configuration') control.counts.discovery += 1;
    if (path === '/token') {
      control.counts.token += 1;
      tamperTokenAnswer(res);
    }
    providerCallback(req, res);
  };
  run().catch((err) => {
    process.stderr.write(`oidc provider: ${req.method} ${path}: ${err.stack || err}\n`);
    if (!res.headersSent) sendJson(res, 500, { error: 'server_error', error_description: String(err.message) });
    else res.destroy();
  });
});

let stopping = false;
function shutdown() {
  if (stopping) return;
  stopping = true;
  server.close(() => process.exit(0));
  server.closeAllConnections();
  setTimeout(() => process.exit(0), 2000).unref();
}
process.on('SIGTERM', shutdown);
process.on('SIGINT', shutdown);

process.stdout.write(`${JSON.stringify({
  issuer,
  port,
  authorization_endpoint: `${issuer}/auth`,
  token_endpoint: `${issuer}/token`,
  jwks_uri: `${issuer}/jwks`,
  control_url: `${issuer}/__control`,
  kid: signing.kid,
})}\n`);
