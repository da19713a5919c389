// SPDX-License-Identifier: MIT
/*
 * A real, strict OAuth 2.0 authorization server for black-box tests of the
 * Workforce integrations code, built on the npm package oidc-provider (pinned
 * at 9.13.3 in package.json; `npm ci` installs it). Test helper only: never
 * part of the server.
 *
 *   node tests/oauth/authz_server.mjs --config FILE
 *
 * FILE is JSON:
 *   {
 *     "port": 0,                       // 0 = pick a free port; else that port
 *     "clients": [{"client_id": "c1", "client_secret": "s1",
 *                  "redirect_uris": ["http://127.0.0.1:8123/cb"]}],
 *     "scopes": ["chat:write", "channels:read", "repo"],
 *     "access_ttl": 3600,              // seconds, default 3600
 *     "refresh_ttl": 86400,            // seconds, default 86400
 *     "rotate_refresh": true           // optional, default true (see below)
 *   }
 * Any further member of a client object is passed to oidc-provider as client
 * metadata (e.g. "scope": "chat:write" restricts the scopes that client may ask for).
 *
 * It listens on 127.0.0.1 only. When ready it prints exactly one JSON line on
 * stdout and nothing else ever goes to stdout (oidc-provider's notices and all
 * logging go to stderr):
 *   {"issuer": "http://127.0.0.1:PORT", "port": PORT,
 *    "authorization_endpoint": ".../auth", "token_endpoint": ".../token",
 *    "revocation_endpoint": ".../token/revocation",
 *    "control_url": ".../__control"}
 * It runs until SIGTERM or SIGINT, then closes every connection and exits 0.
 * A bad config makes it print "authz_server: ..." on stderr and exit 2.
 *
 * Protocol (oidc-provider does all of it; see node_modules/oidc-provider):
 * - Authorization code flow only (response_type=code, response_mode query).
 *   PKCE is required for every client (pkce.required returns true), S256 only:
 *   a request without code_challenge is answered with a redirect to
 *   redirect_uri?error=invalid_request&error_description=...&state=...&iss=...
 *   redirect_uri is required at both the authorization and the token endpoint
 *   (allowOmittingSingleRegisteredRedirectUri: false) and must match exactly.
 *   Every redirect to the client carries `iss` (RFC 9207) besides code/state.
 * - Scopes: the configured strings are added to oidc-provider's `scopes`
 *   option (besides openid and offline_access), the documented way to make the
 *   server accept additional OAuth 2.0 scope values. `openid` is NOT required:
 *   a request for "chat:write channels:read" alone works, and the token
 *   response then has no id_token (an id_token comes only when openid was
 *   asked for). Resource indicators (RFC 8707) are disabled, so a `resource`
 *   parameter is ignored. As oidc-provider does, a requested scope that is not
 *   configured is silently left out of the grant (the token response's `scope`
 *   tells what was granted); if nothing requested is configured the user
 *   agent is sent back with error=access_denied.
 * - Client authentication at the token and revocation endpoints: both
 *   client_secret_basic and client_secret_post are accepted for every client
 *   (oidc-provider treats them as one family); using both at once is
 *   invalid_request. With Basic, client_id and client_secret are
 *   form-urlencoded before base64 (RFC 6749 2.3.1), as oidc-provider decodes them.
 * - The authorization_code grant always returns a refresh_token (the
 *   issueRefreshToken hook; offline_access is not needed); every client may use
 *   the refresh_token grant. Tokens are opaque; they outlive the browser session
 *   (expiresWithSession returns false).
 * - Refresh token rotation: ON by default ("rotate_refresh": true). Each
 *   refresh returns a NEW refresh_token and consumes the old one; presenting a
 *   consumed refresh token is invalid_grant and revokes the whole grant (every
 *   access and refresh token from that authorization). With
 *   "rotate_refresh": false the refresh response repeats the same
 *   refresh_token value, which stays valid until refresh_ttl.
 * - Revocation (RFC 7009) at revocation_endpoint: POST token=...
 *   [&token_type_hint=access_token|refresh_token] with client auth; 200 with
 *   an empty body, also for unknown tokens. As oidc-provider does it,
 *   revoking either kind revokes every access AND refresh token of the same
 *   authorization (grant): after revoking an access token its refresh token
 *   gets invalid_grant too. Revoking a refresh token also deletes the grant
 *   record; revoking an access token keeps it (default revokeGrantPolicy).
 * - Errors from the token/revocation endpoints are JSON
 *   {"error": "...", "error_description": "..."} (application/json;
 *   charset=utf-8), 400 for invalid_grant/invalid_request/unsupported_grant_type,
 *   401 for invalid_client (plus WWW-Authenticate: Basic when an Authorization
 *   header was sent). NOTE: a request whose Accept header prefers text/html
 *   gets those errors as an HTML page instead: send Accept: application/json.
 *   Request bodies must be application/x-www-form-urlencoded (a JSON body is
 *   invalid_request). invalid_grant always carries the generic
 *   error_description "grant request is invalid" (wrong, reused or expired
 *   code; wrong or missing code_verifier; redirect_uri mismatch; code of
 *   another client; unknown, revoked, consumed or expired refresh token).
 *   A token request without redirect_uri is invalid_request. A refresh may
 *   send a narrower `scope`; asking for more is invalid_scope.
 * - Authorization codes live 60 s and are single-use: presenting one twice
 *   is invalid_grant and revokes the tokens already issued from it. `state`
 *   is optional for oidc-provider and echoed when sent.
 *
 * stderr: oidc-provider 9 warns "Unsupported runtime. Use Node.js v22.x LTS"
 * on Node 20; everything above was checked on Node 20 and works.
 *
 * User agent: there is no login page. /interaction/UID finishes each prompt at
 * once: the login prompt with accountId "user-1" (name "Ada Lovelace", email
 * ada@example.com), the consent prompt with a grant of every requested scope
 * (and claim). A client following the 303 redirects with a cookie jar lands on
 * redirect_uri?code=...&state=...&iss=... : /auth -> /interaction/A (login)
 * -> /auth/A -> /interaction/B (consent) -> /auth/B -> redirect_uri (relative
 * and absolute Locations; cookies _session, _interaction, _interaction_resume
 * and their .sig). A jar that still holds the session goes straight from /auth
 * to redirect_uri when the scopes were granted before.
 *
 * Deny: the user denies (redirect_uri?error=access_denied&error_description=
 * ...&state=...&iss=...) when the authorization request carries
 * login_hint=deny, or while deny is switched on through the control API.
 *
 * Control API (same server, JSON in and out; for tests only):
 *   GET  /__control/token_values
 *        -> {"access_tokens": [...], "refresh_tokens": [...]}: the live tokens themselves, so
 *           that a test can look for them where they must never be (responses, logs, files)
 *   GET  /__control/tokens
 *        -> {"access_tokens": N, "refresh_tokens": N, "authorization_codes": N,
 *            "grants": N, "fail_mode": "off", "deny": false}
 *        counts of live (unexpired, unconsumed) artifacts.
 *   POST /__control/revoke_all_refresh
 *        -> {"revoked": N}: every refresh token is deleted; a later refresh gets
 *        invalid_grant. Access tokens are untouched.
 *   POST /__control/fail_token_endpoint  {"mode": M}  -> {"fail_mode": M}
 *        until mode "off", every request to the token endpoint is answered:
 *          "html"    200 text/html with a sign-in page (no JSON at all)
 *          "500"     500 application/json {"error":"server_error",...}
 *          "hang"    the request body is read, then no answer ever (the
 *                    connection stays open until the client gives up or the
 *                    server stops)
 *          "garbage" 200 application/json whose body is not JSON
 *          "off"     normal operation again
 *   POST /__control/deny  {"enabled": true|false}  -> {"deny": bool}
 *        while enabled, every authorization request is denied by the user.
 */

import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import * as http from 'node:http';

// oidc-provider prints its notices with console.info (stdout): keep stdout for
// the ready line only.
console.info = (...args) => console.error(...args);
console.log = (...args) => console.error(...args);

const { default: Provider, interactionPolicy } = await import('oidc-provider');

function die(msg) {
  process.stderr.write(`authz_server: ${msg}\n`);
  process.exit(2);
}

// ---- Config ----

function readConfig() {
  const i = process.argv.indexOf('--config');
  if (i === -1 || !process.argv[i + 1]) die('usage: node authz_server.mjs --config FILE');
  let cfg;
  try {
    cfg = JSON.parse(fs.readFileSync(process.argv[i + 1], 'utf8'));
  } catch (err) {
    die(`cannot read config: ${err.message}`);
  }
  if (cfg === null || typeof cfg !== 'object') die('config must be a JSON object');
  const port = cfg.port ?? 0;
  if (!Number.isInteger(port) || port < 0 || port > 65535) die('port must be an integer 0..65535');
  if (!Array.isArray(cfg.clients) || cfg.clients.length === 0) die('clients must be a non-empty array');
  for (const c of cfg.clients) {
    if (!c || typeof c.client_id !== 'string' || !c.client_id) die('each client needs a client_id string');
    if (typeof c.client_secret !== 'string' || !c.client_secret) die(`client ${c.client_id}: client_secret must be a non-empty string`);
    if (!Array.isArray(c.redirect_uris) || c.redirect_uris.length === 0
        || !c.redirect_uris.every((u) => typeof u === 'string' && u)) {
      die(`client ${c.client_id}: redirect_uris must be a non-empty array of strings`);
    }
  }
  const scopes = cfg.scopes ?? [];
  if (!Array.isArray(scopes) || !scopes.every((s) => typeof s === 'string' && /^[\x21\x23-\x5B\x5D-\x7E]+$/.test(s))) {
    die('scopes must be an array of scope-token strings');
  }
  const ttl = (name, dflt) => {
    const v = cfg[name] ?? dflt;
    if (!Number.isInteger(v) || v <= 0) die(`${name} must be a positive integer (seconds)`);
    return v;
  };
  const rotate = cfg.rotate_refresh ?? true;
  if (typeof rotate !== 'boolean') die('rotate_refresh must be a boolean');
  return {
    port,
    clients: cfg.clients,
    scopes,
    accessTtl: ttl('access_ttl', 3600),
    refreshTtl: ttl('refresh_ttl', 86400),
    rotate,
  };
}

const cfg = readConfig();

// ---- State shared with the control API ----

const control = { failMode: 'off', deny: false };
const FAIL_MODES = new Set(['html', '500', 'hang', 'garbage', 'off']);

// ---- Storage adapter (in memory, no size cap; see example/my_adapter.js) ----

const stores = new Map(); // model name -> Map(id -> { payload, expiresAt })
const nowSec = () => Math.floor(Date.now() / 1000);

function storeFor(model) {
  if (!stores.has(model)) stores.set(model, new Map());
  return stores.get(model);
}

class TestAdapter {
  constructor(model) {
    this.model = model;
    this.store = storeFor(model);
  }

  async upsert(id, payload, expiresIn) {
    const expiresAt = typeof expiresIn === 'number' ? nowSec() + expiresIn : Infinity;
    this.store.set(id, { payload: { ...payload }, expiresAt });
  }

  async find(id) {
    const e = this.store.get(id);
    if (!e) return undefined;
    // oidc-provider checks exp itself; keep entries a little past expiry so that
    // it answers "expired" rather than "not found" (both are invalid_grant).
    if (e.expiresAt + 60 < nowSec()) {
      this.store.delete(id);
      return undefined;
    }
    return e.payload;
  }

  async findByUid(uid) {
    for (const [id, e] of this.store) {
      if (e.payload.uid === uid) return this.find(id);
    }
    return undefined;
  }

  async findByUserCode(userCode) {
    for (const [id, e] of this.store) {
      if (e.payload.userCode === userCode) return this.find(id);
    }
    return undefined;
  }

  async consume(id) {
    const e = this.store.get(id);
    if (e) e.payload.consumed = nowSec();
  }

  async destroy(id) {
    this.store.delete(id);
  }

  async revokeByGrantId(grantId) {
    for (const [id, e] of this.store) {
      if (e.payload.grantId === grantId) this.store.delete(id);
    }
  }
}

// The values of the live tokens of 'model': opaque tokens are their own ids.
function liveIds(model) {
  const now = nowSec();
  const ids = [];
  for (const [id, e] of storeFor(model).entries()) {
    const exp = e.payload.exp ?? e.expiresAt;
    if (exp > now && !e.payload.consumed) ids.push(id);
  }
  return ids;
}

function liveCount(model) {
  const now = nowSec();
  let n = 0;
  for (const e of storeFor(model).values()) {
    const exp = e.payload.exp ?? e.expiresAt;
    if (exp > now && !e.payload.consumed) n += 1;
  }
  return n;
}

// ---- Account ----

const ACCOUNT = {
  accountId: 'user-1',
  claims: {
    sub: 'user-1', name: 'Ada Lovelace', email: 'ada@example.com', email_verified: true,
  },
};

// ---- Interaction policy: the standard one plus the deny switch ----

function buildPolicy() {
  const { Check, base } = interactionPolicy;
  const policy = base();
  // Force an interaction when deny is asked for, even if the cookie jar still
  // holds a session and a grant that would let the request through silently.
  policy.get('login').checks.add(new Check(
    'deny_requested',
    'the test asked the End-User to deny',
    (ctx) => (ctx.oidc.params.login_hint === 'deny' || control.deny
      ? Check.REQUEST_PROMPT : Check.NO_NEED_TO_PROMPT),
  ));
  return policy;
}

// ---- HTTP server ----

const server = http.createServer();
server.keepAliveTimeout = 5000;

await new Promise((resolve, reject) => {
  server.once('error', reject);
  server.listen(cfg.port, '127.0.0.1', () => {
    server.off('error', reject);
    resolve();
  });
}).catch((err) => die(`cannot listen on 127.0.0.1:${cfg.port}: ${err.message}`));

const { port } = server.address();
const issuer = `http://127.0.0.1:${port}`;

function makeJwks() {
  const { privateKey } = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
  return { keys: [{ ...privateKey.export({ format: 'jwk' }), kid: 'test-rs256', use: 'sig', alg: 'RS256' }] };
}

const AUTH_PATH = '/auth';
const TOKEN_PATH = '/token';
const REVOCATION_PATH = '/token/revocation';

let provider;
try {
  provider = new Provider(issuer, {
    adapter: TestAdapter,
    jwks: makeJwks(),
    cookies: { keys: [crypto.randomBytes(32).toString('base64url')] },
    clients: cfg.clients.map((c) => ({
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'client_secret_basic',
      ...c,
    })),
    clientDefaults: {
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'client_secret_basic',
    },
    responseTypes: ['code'],
    routes: { authorization: AUTH_PATH, token: TOKEN_PATH, revocation: REVOCATION_PATH },
    scopes: ['openid', 'offline_access', ...cfg.scopes],
    claims: {
      openid: ['sub'],
      email: ['email', 'email_verified'],
      profile: ['name'],
    },
    async findAccount(ctx, sub) {
      if (sub !== ACCOUNT.accountId) return undefined;
      return {
        accountId: ACCOUNT.accountId,
        async claims() { return { ...ACCOUNT.claims }; },
      };
    },
    features: {
      devInteractions: { enabled: false },
      revocation: { enabled: true },
      resourceIndicators: { enabled: false },
    },
    pkce: { required: () => true },
    allowOmittingSingleRegisteredRedirectUri: false,
    async issueRefreshToken(ctx, client) {
      return client.grantTypeAllowed('refresh_token');
    },
    rotateRefreshToken: cfg.rotate,
    async expiresWithSession() { return false; },
    ttl: {
      AccessToken: cfg.accessTtl,
      RefreshToken: cfg.refreshTtl,
      AuthorizationCode: 60,
      Interaction: 600,
      Session: 86400,
      Grant: Math.max(cfg.refreshTtl, 86400) * 2,
    },
    interactions: {
      policy: buildPolicy(),
      url: (ctx, interaction) => `/interaction/${interaction.uid}`,
    },
  });
} catch (err) {
  die(`bad configuration: ${err.message}`);
}

const providerCallback = provider.callback();

function sendJson(res, status, obj) {
  const body = JSON.stringify(obj);
  res.writeHead(status, {
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': Buffer.byteLength(body),
    'Cache-Control': 'no-store',
  });
  res.end(body);
}

function readBody(req, limit = 64 * 1024) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    let n = 0;
    req.on('data', (c) => {
      n += c.length;
      if (n > limit) {
        reject(new Error('body too large'));
        req.destroy();
        return;
      }
      chunks.push(c);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

async function handleControl(req, res, path) {
  let body = {};
  if (req.method === 'POST') {
    const raw = await readBody(req);
    if (raw.trim()) {
      try {
        body = JSON.parse(raw);
      } catch {
        return sendJson(res, 400, { error: 'body is not JSON' });
      }
    }
  }
  const route = `${req.method} ${path}`;
  switch (route) {
    case 'GET /__control/tokens':
      return sendJson(res, 200, {
        access_tokens: liveCount('AccessToken'),
        refresh_tokens: liveCount('RefreshToken'),
        authorization_codes: liveCount('AuthorizationCode'),
        grants: liveCount('Grant'),
        fail_mode: control.failMode,
        deny: control.deny,
      });
    case 'GET /__control/token_values':
      return sendJson(res, 200, {
        access_tokens: liveIds('AccessToken'),
        refresh_tokens: liveIds('RefreshToken'),
      });
    case 'POST /__control/revoke_all_refresh': {
      const store = storeFor('RefreshToken');
      const revoked = store.size;
      store.clear();
      return sendJson(res, 200, { revoked });
    }
    case 'POST /__control/fail_token_endpoint':
      if (!FAIL_MODES.has(body?.mode)) {
        return sendJson(res, 400, { error: `mode must be one of ${[...FAIL_MODES].join(', ')}` });
      }
      control.failMode = body.mode;
      return sendJson(res, 200, { fail_mode: control.failMode });
    case 'POST /__control/deny':
      if (typeof body?.enabled !== 'boolean') {
        return sendJson(res, 400, { error: 'enabled must be a boolean' });
      }
      control.deny = body.enabled;
      return sendJson(res, 200, { deny: control.deny });
    default:
      return sendJson(res, 404, { error: `no control route ${route}` });
  }
}

async function failTokenEndpoint(req, res) {
  await readBody(req, 1024 * 1024).catch(() => {});
  switch (control.failMode) {
    case 'html': {
      const page = '<!DOCTYPE html>\n<html><head><title>Sign in</title></head>'
        + '<body><h1>Please sign in to continue</h1><form method="post" action="/login">'
        + '<input name="user"><button>Go</button></form></body></html>\n';
      res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8', 'Content-Length': Buffer.byteLength(page) });
      res.end(page);
      return;
    }
    case '500':
      sendJson(res, 500, { error: 'server_error', error_description: 'simulated token endpoint failure' });
      return;
    case 'garbage': {
      const junk = '{"access_token": "tok_partial", "token_type": "Bearer", <<<not json>>>';
      res.writeHead(200, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': Buffer.byteLength(junk) });
      res.end(junk);
      return;
    }
    case 'hang':
    default:
      // Never answer; the socket is closed by the client or at shutdown.
      req.socket.setTimeout(0);
  }
}

async function handleInteraction(req, res) {
  if (req.method !== 'GET') {
    res.writeHead(405, { Allow: 'GET' });
    res.end();
    return;
  }
  let details;
  try {
    details = await provider.interactionDetails(req, res);
  } catch (err) {
    const msg = `interaction not found: ${err.message}\n`;
    res.writeHead(400, { 'Content-Type': 'text/plain; charset=utf-8', 'Content-Length': Buffer.byteLength(msg) });
    res.end(msg);
    return;
  }
  const { prompt, params, session } = details;

  if (params.login_hint === 'deny' || control.deny) {
    await provider.interactionFinished(req, res, {
      error: 'access_denied',
      error_description: 'End-User denied the authorization request',
    }, { mergeWithLastSubmission: false });
    return;
  }

  if (prompt.name === 'login') {
    await provider.interactionFinished(req, res, {
      login: { accountId: ACCOUNT.accountId },
    }, { mergeWithLastSubmission: false });
    return;
  }

  if (prompt.name === 'consent') {
    let grant;
    if (details.grantId) {
      grant = await provider.Grant.find(details.grantId);
    } else {
      grant = new provider.Grant({ accountId: session.accountId, clientId: params.client_id });
    }
    const d = prompt.details;
    if (d.missingOIDCScope) grant.addOIDCScope(d.missingOIDCScope.join(' '));
    if (d.missingOIDCClaims) grant.addOIDCClaims(d.missingOIDCClaims);
    if (d.missingResourceScopes) {
      for (const [indicator, scope] of Object.entries(d.missingResourceScopes)) {
        grant.addResourceScope(indicator, scope.join(' '));
      }
    }
    const grantId = await grant.save();
    await provider.interactionFinished(req, res, {
      consent: details.grantId ? {} : { grantId },
    }, { mergeWithLastSubmission: true });
    return;
  }

  await provider.interactionFinished(req, res, {
    error: 'access_denied',
    error_description: `unsupported prompt ${prompt.name}`,
  }, { mergeWithLastSubmission: false });
}

server.on('request', (req, res) => {
  const path = (req.url || '/').split('?')[0];
  const run = async () => {
    if (path === '/__control' || path.startsWith('/__control/')) {
      await handleControl(req, res, path);
    } else if (path === TOKEN_PATH && control.failMode !== 'off') {
      await failTokenEndpoint(req, res);
    } else if (/^\/interaction\/[^/]+$/.test(path)) {
      await handleInteraction(req, res);
    } else {
      providerCallback(req, res);
    }
  };
  run().catch((err) => {
    process.stderr.write(`authz_server: ${req.method} ${path}: ${err.stack || err}\n`);
    if (!res.headersSent) sendJson(res, 500, { error: 'server_error', error_description: String(err.message) });
    else res.destroy();
  });
});

provider.on('server_error', (ctx, err) => {
  process.stderr.write(`authz_server: server_error ${ctx.method} ${ctx.path}: ${err.stack || err}\n`);
});

// ---- Shutdown ----

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
  authorization_endpoint: `${issuer}${AUTH_PATH}`,
  token_endpoint: `${issuer}${TOKEN_PATH}`,
  revocation_endpoint: `${issuer}${REVOCATION_PATH}`,
  control_url: `${issuer}/__control`,
})}\n`);
