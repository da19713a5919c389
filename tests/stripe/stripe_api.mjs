// SPDX-License-Identifier: MIT
/*
 * A stand-in of Stripe's API for black-box tests of Workforce's credit purchases (issue 29,
 * contract §21): the part of Stripe the server talks to (Checkout Sessions), a pay page that
 * plays the customer paying, and Stripe's webhook deliveries, signed with the official `stripe`
 * npm package (pinned in package.json). Test helper only; node's http module, no framework.
 *
 *   node tests/stripe/stripe_api.mjs --config FILE
 *
 * FILE (or the environment variable STRIPE_STANDIN_CONFIG) is JSON; every field optional:
 *   {
 *     "port": 0,                                      // 0 = a free port
 *     "secret_keys": {"live": "sk_live_...", "test": "sk_test_..."},
 *     "prices": {"live": {"price_A": {"unit_amount": 1000, "currency": "usd"}},
 *                "test": {"price_T": {"unit_amount": 500}}},   // or a list of price ids
 *     "webhook_secrets": {"live": "whsec_...", "test": ["whsec_new", "whsec_old"]},
 *     "events_url": "http://127.0.0.1:PORT/v1/billing/stripe/events"
 *   }
 * POST /__config takes the same fields later (merged; "events_url" is usually given there,
 * once the Workforce server it names has a port).
 *
 * It listens on 127.0.0.1 only and, when ready, prints exactly one JSON line on stdout:
 *   {"port": N, "url": "http://127.0.0.1:N"}
 * Everything else goes to stderr. It runs until SIGTERM or SIGINT. A bad config: exit 2.
 *
 * Stripe's API, as its documentation shows it:
 *   POST /v1/checkout/sessions   form-encoded (application/x-www-form-urlencoded, bracket
 *        notation: line_items[0][price], metadata[k]); `Authorization: Bearer <secret key>`
 *        names the mode (the live or the test key; anything else 401 with Stripe's error JSON
 *        {"error": {"type": "invalid_request_error", "message": ...}}). Fields: mode (only
 *        "payment"), line_items[0][price] (a price of the key's mode, else 400 resource_missing
 *        param line_items[0][price]), line_items[0][quantity] (an integer >= 1),
 *        client_reference_id, metadata[...] (string values), success_url (required), cancel_url.
 *        A parameter Stripe does not know: 400 parameter_unknown (so a test sees exactly the
 *        fields the server sent). Answers a checkout.session object (id cs_live_... or
 *        cs_test_..., url http://127.0.0.1:N/pay/<id>, expires_at now + 24 h, status "open",
 *        payment_status "unpaid", payment_intent null, amount_total, currency, ...).
 *        Idempotency-Key: as Stripe, per secret key: the same key with the same body answers
 *        the saved answer again (header Idempotent-Replayed: true); with another body, 400
 *        idempotency_error. Only answers the endpoint made (200) are saved: not validation
 *        errors, not the failures /__fail injects (those stand for Stripe's front door).
 *   GET  /v1/checkout/sessions/<id>   the session (of the key's mode), else 404 resource_missing.
 *   Every answer has a Request-Id header (req_...).
 *
 * The customer (a browser, or a test with http.client):
 *   GET  /pay/<id>    an HTML page with a "Pay" button (a form that POSTs to the same path).
 *   POST /pay/<id>    form fields, all optional: outcome=paid (default) | delayed, deliver=1
 *        (default) | 0. Completes the session (status complete, payment_intent pi_..., a
 *        charge ch_... of amount_total) and builds the event checkout.session.completed whose
 *        data.object is the session (payment_status "paid", or "unpaid" for a delayed payment
 *        method), livemode of the session, client_reference_id and metadata as created. Unless
 *        deliver=0 (the event is only kept, for /__deliver), it is signed with the mode's
 *        webhook secret and POSTed to events_url before the answer: 303 to success_url (its
 *        {CHECKOUT_SESSION_ID} replaced, as Stripe does). An unknown session: 404; one not
 *        open: 409; no events_url: 409.
 *
 * Control routes for tests (JSON in and out):
 *   GET  /__requests          -> {"requests": [{"method", "path", "headers" (lower-case names),
 *                                "body" (raw text), "form" (flat: name -> value, a list when
 *                                repeated), "params" (nested as Stripe reads them)}]}: every
 *                                request to /v1/ received, oldest first.
 *   POST /__fail {"count": N, "status": S, "body"?: {...}, "delay_ms"?: M}
 *                             -> the next N requests to /v1/ answer S (body: Stripe's api_error
 *                                unless given), after M ms; nothing is created. count 0 clears.
 *   POST /__sign {"payload": "<raw body>", "secret": "whsec_..." | ["whsec_a", ...],
 *                 "timestamp"?: unix s} -> {"header": "t=...,v1=...[,v1=...]"}: made with
 *                                stripe.webhooks.generateTestHeaderString (one v1 per secret, as
 *                                Stripe signs during a secret's rotation). The only place
 *                                signatures are made.
 *   POST /__config {...}      -> the config (secrets shown, it is a test helper).
 *   GET  /__events            -> {"events": [...]} every event built, oldest first.
 *   GET  /__deliveries        -> {"deliveries": [{"event_id", "type", "status", "body",
 *                                "error"}]} every delivery attempt to events_url, oldest first.
 *   POST /__deliver {"event_id", "timestamp"?, "secret"?}
 *                             -> delivers a kept event (again: a replay, or one held back),
 *                                signed now (or at timestamp) -> {"event", "delivery"}.
 *   POST /__async {"session_id", "outcome": "succeeded" | "failed", "deliver"?: bool}
 *                             -> checkout.session.async_payment_succeeded (payment_status paid)
 *                                or ..._failed for a session paid with outcome=delayed.
 *   POST /__refund {"session_id", "amount_refunded"?, "deliver"?: bool}
 *                             -> charge.refunded for the session's charge; amount_refunded is
 *                                the charge's CUMULATIVE refunded amount (default: all of it).
 *   POST /__dispute {"session_id", "amount"?, "deliver"?: bool}
 *                             -> charge.dispute.created for the session's charge.
 *   These three answer {"event", "delivery" (null when not delivered)}.
 */

import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import * as http from 'node:http';

const { default: Stripe } = await import('stripe');

const stripe = new Stripe('sk_test_standin_signing_only');
const API_VERSION = Stripe.API_VERSION || '2026-11-18.endive';

function die(msg) {
  process.stderr.write(`stripe stand-in: ${msg}\n`);
  process.exit(2);
}

// ---- config ----

const config = { port: 0, secret_keys: {}, prices: { live: {}, test: {} }, webhook_secrets: {},
  events_url: null };

function normPrices(p) {
  const out = {};
  if (Array.isArray(p)) {
    for (const id of p) out[id] = { unit_amount: 1000, currency: 'usd' };
    return out;
  }
  for (const [id, v] of Object.entries(p || {})) {
    out[id] = { unit_amount: Number.isInteger(v?.unit_amount) ? v.unit_amount : 1000,
      currency: v?.currency || 'usd' };
  }
  return out;
}

function mergeConfig(c) {
  if (typeof c !== 'object' || c === null || Array.isArray(c)) throw new Error('config is not an object');
  if ('port' in c) config.port = c.port;
  if (c.secret_keys) Object.assign(config.secret_keys, c.secret_keys);
  if (c.prices) {
    for (const mode of ['live', 'test']) {
      if (c.prices[mode] !== undefined) config.prices[mode] = normPrices(c.prices[mode]);
    }
  }
  if (c.webhook_secrets) Object.assign(config.webhook_secrets, c.webhook_secrets);
  if ('events_url' in c) config.events_url = c.events_url;
}

{
  let text = process.env.STRIPE_STANDIN_CONFIG || null;
  const i = process.argv.indexOf('--config');
  if (i >= 0) {
    if (!process.argv[i + 1]) die('--config needs a file');
    try {
      text = fs.readFileSync(process.argv[i + 1], 'utf8');
    } catch (e) {
      die(`cannot read ${process.argv[i + 1]}: ${e.message}`);
    }
  }
  if (text) {
    try {
      mergeConfig(JSON.parse(text));
    } catch (e) {
      die(`bad config: ${e.message}`);
    }
  }
}

// ---- state ----

const requests = [];      // every /v1/ request received
const sessions = new Map(); // id -> {session, mode, charge, dispute}
const idem = new Map();   // secret key + "\0" + Idempotency-Key -> {fingerprint, status, body}
const events = [];        // every event built
const eventsById = new Map();
const deliveries = [];
let fail = { count: 0, status: 500, body: null, delay_ms: 0 };
let baseUrl = '';

const ALNUM = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

function rand(n) {
  const b = crypto.randomBytes(n);
  let s = '';
  for (let i = 0; i < n; i++) s += ALNUM[b[i] % ALNUM.length];
  return s;
}

const now = () => Math.floor(Date.now() / 1000);

// ---- HTTP helpers ----

function send(res, status, body, headers = {}) {
  const data = Buffer.from(JSON.stringify(body, null, 2) + '\n');
  res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': data.length,
    'Request-Id': 'req_' + rand(14), 'Stripe-Version': API_VERSION, ...headers });
  res.end(data);
}

function stripeError(type, message, extra = {}) {
  const error = { type, message, ...extra };
  if (extra.code) error.doc_url = `https://stripe.com/docs/error-codes/${extra.code.replace(/_/g, '-')}`;
  return { error };
}

function readBody(req, limit = 1 << 20) {
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

// Flat form: name -> value (a list when a name is repeated).
function flatForm(text) {
  const out = {};
  for (const [k, v] of new URLSearchParams(text)) {
    if (k in out) out[k] = [].concat(out[k], v);
    else out[k] = v;
  }
  return out;
}

// Nested params as Stripe reads bracket notation: a[0][b]=1 -> {a: [{b: "1"}]}, m[k]=v -> {m: {k: "v"}}.
// null when a name does not parse.
function nestedForm(text) {
  const root = {};
  for (const [k, v] of new URLSearchParams(text)) {
    const m = /^([^[\]]+)((?:\[[^[\]]*\])*)$/.exec(k);
    if (!m) return null;
    const parts = [m[1], ...[...m[2].matchAll(/\[([^[\]]*)\]/g)].map((x) => x[1])];
    let cur = root;
    for (let i = 0; i < parts.length; i++) {
      const p = parts[i];
      const last = i === parts.length - 1;
      const key = Array.isArray(cur) ? Number(p) : p;
      if (Array.isArray(cur) && !/^\d+$/.test(p)) return null;
      if (last) {
        cur[key] = v;
      } else {
        if (cur[key] === undefined) cur[key] = /^\d+$/.test(parts[i + 1]) ? [] : {};
        if (typeof cur[key] !== 'object') return null;
        cur = cur[key];
      }
    }
  }
  return root;
}

async function readJson(req) {
  const text = await readBody(req);
  if (!text) return {};
  return JSON.parse(text);
}

// ---- Checkout Sessions ----

const KNOWN_PARAMS = new Set(['mode', 'line_items', 'client_reference_id', 'metadata', 'success_url',
  'cancel_url', 'customer', 'customer_email', 'customer_creation', 'expires_at', 'locale',
  'payment_method_types', 'allow_promotion_codes', 'billing_address_collection',
  'payment_intent_data', 'ui_mode', 'submit_type', 'currency', 'automatic_tax',
  'invoice_creation', 'consent_collection', 'custom_text', 'phone_number_collection', 'expand']);

function modeOfKey(auth) {
  const m = /^Bearer (.+)$/.exec(auth || '');
  if (!m) return { error: 'missing' };
  for (const mode of ['live', 'test']) {
    if (config.secret_keys[mode] && m[1] === config.secret_keys[mode]) return { mode, key: m[1] };
  }
  return { error: 'invalid', key: m[1] };
}

function authError(res, who) {
  if (who.error === 'missing') {
    return send(res, 401, stripeError('invalid_request_error',
      'You did not provide an API key. You need to provide your API key in the Authorization ' +
      'header, using Bearer auth (e.g. \'Authorization: Bearer YOUR_SECRET_KEY\').'));
  }
  const k = who.key;
  const masked = k.length > 12 ? `${k.slice(0, 8)}${'*'.repeat(k.length - 12)}${k.slice(-4)}` : '****';
  return send(res, 401, stripeError('invalid_request_error', `Invalid API Key provided: ${masked}`));
}

function validUrl(s) {
  try {
    const u = new URL(s);
    return u.protocol === 'http:' || u.protocol === 'https:';
  } catch {
    return false;
  }
}

// The session the params ask for, or [status, error body].
function createSession(mode, p) {
  const bad = (message, code, param, status = 400) =>
    [status, stripeError('invalid_request_error', message, { code, param })];
  for (const k of Object.keys(p)) {
    if (!KNOWN_PARAMS.has(k)) return bad(`Received unknown parameter: ${k}`, 'parameter_unknown', k);
  }
  if (p.mode === undefined) return bad('Missing required param: mode.', 'parameter_missing', 'mode');
  if (p.mode !== 'payment') {
    return bad(p.mode === 'subscription' || p.mode === 'setup'
      ? `This stand-in only does mode=payment, not ${p.mode}.`
      : 'Invalid mode: must be one of payment, setup, or subscription', 'parameter_invalid_string', 'mode');
  }
  if (!Array.isArray(p.line_items) || p.line_items.length === 0) {
    return bad('You must specify either `line_items` or `price` in `payment` mode.',
      'parameter_missing', 'line_items');
  }
  if (p.line_items.length !== 1) {
    return bad('This stand-in takes one line item.', 'parameter_invalid_integer', 'line_items');
  }
  const li = p.line_items[0];
  if (typeof li !== 'object' || li === null) return bad('Invalid line_items[0]', 'parameter_invalid', 'line_items[0]');
  for (const k of Object.keys(li)) {
    if (k !== 'price' && k !== 'quantity') {
      return bad(`Received unknown parameter: line_items[0][${k}]`, 'parameter_unknown', `line_items[0][${k}]`);
    }
  }
  if (li.price === undefined) return bad('Missing required param: line_items[0][price].', 'parameter_missing', 'line_items[0][price]');
  const price = config.prices[mode][li.price];
  if (!price) {
    return bad(`No such price: '${li.price}'`, 'resource_missing', 'line_items[0][price]');
  }
  if (li.quantity === undefined) {
    return bad('Quantity is required. Add `quantity` to `line_items[0]`', 'parameter_missing', 'line_items[0][quantity]');
  }
  if (!/^[0-9]+$/.test(li.quantity) || Number(li.quantity) < 1 || Number(li.quantity) > 999999) {
    return bad('Invalid integer: ' + li.quantity, 'parameter_invalid_integer', 'line_items[0][quantity]');
  }
  if (p.success_url === undefined) return bad('Missing required param: success_url.', 'parameter_missing', 'success_url');
  for (const u of ['success_url', 'cancel_url']) {
    if (p[u] !== undefined && (typeof p[u] !== 'string' || !validUrl(p[u]))) return bad('Not a valid URL', 'url_invalid', u);
  }
  if (p.client_reference_id !== undefined &&
      (typeof p.client_reference_id !== 'string' || p.client_reference_id.length > 200)) {
    return bad('Invalid client_reference_id', 'parameter_invalid_string', 'client_reference_id');
  }
  const metadata = {};
  if (p.metadata !== undefined) {
    if (typeof p.metadata !== 'object' || Array.isArray(p.metadata)) return bad('Invalid hash', 'parameter_invalid', 'metadata');
    for (const [k, v] of Object.entries(p.metadata)) {
      if (k.length > 40 || typeof v !== 'string' || v.length > 500) {
        return bad(`Invalid metadata[${k}]`, 'parameter_invalid', `metadata[${k}]`);
      }
      metadata[k] = v;
    }
  }
  const qty = Number(li.quantity);
  const id = `cs_${mode}_${rand(58)}`;
  const created = now();
  const amount = price.unit_amount * qty;
  const session = {
    id, object: 'checkout.session', adaptive_pricing: { enabled: false },
    after_expiration: null, allow_promotion_codes: null, amount_subtotal: amount,
    amount_total: amount, automatic_tax: { enabled: false, liability: null, status: null },
    billing_address_collection: null, cancel_url: p.cancel_url ?? null,
    client_reference_id: p.client_reference_id ?? null, client_secret: null, consent: null,
    consent_collection: null, created, currency: price.currency, custom_fields: [],
    custom_text: { after_submit: null, shipping_address: null, submit: null,
      terms_of_service_acceptance: null },
    customer: null, customer_creation: 'if_required', customer_details: null,
    customer_email: null, expires_at: created + 24 * 3600, invoice: null,
    invoice_creation: { enabled: false, invoice_data: {} }, livemode: mode === 'live',
    locale: null, metadata, mode: 'payment', payment_intent: null, payment_link: null,
    payment_method_collection: 'if_required', payment_method_options: {},
    payment_method_types: ['card'], payment_status: 'unpaid',
    phone_number_collection: { enabled: false }, recovered_from: null, setup_intent: null,
    shipping_address_collection: null, shipping_cost: null, shipping_details: null,
    shipping_options: [], status: 'open', submit_type: null, subscription: null,
    success_url: p.success_url,
    total_details: { amount_discount: 0, amount_shipping: 0, amount_tax: 0 },
    ui_mode: 'hosted', url: `${baseUrl}/pay/${id}`,
  };
  sessions.set(id, { session, mode, charge: null, dispute: null, price: li.price });
  return [200, session];
}

async function v1(req, res, url) {
  const raw = await readBody(req);
  const ct = (req.headers['content-type'] || '').split(';')[0].trim().toLowerCase();
  const form = ct === 'application/x-www-form-urlencoded' ? flatForm(raw) : null;
  const params = ct === 'application/x-www-form-urlencoded' ? nestedForm(raw) : null;
  requests.push({ method: req.method, path: url.pathname + url.search, headers: req.headers,
    body: raw, form, params, time: Date.now() / 1000 });

  if (fail.count > 0) {
    fail.count--;
    const f = { ...fail };
    if (f.delay_ms > 0) await new Promise((r) => setTimeout(r, f.delay_ms));
    return send(res, f.status, f.body || stripeError('api_error',
      'An unknown error occurred while processing your request. (injected by the stand-in)'));
  }

  const who = modeOfKey(req.headers.authorization);
  if (who.error) return authError(res, who);

  const sm = /^\/v1\/checkout\/sessions(?:\/([A-Za-z0-9_]+))?$/.exec(url.pathname);
  if (!sm) {
    return send(res, 404, stripeError('invalid_request_error',
      `Unrecognized request URL (${req.method}: ${url.pathname}).`));
  }
  if (sm[1]) {
    if (req.method !== 'GET') {
      return send(res, 404, stripeError('invalid_request_error',
        `Unrecognized request URL (${req.method}: ${url.pathname}).`));
    }
    const s = sessions.get(sm[1]);
    if (!s || s.mode !== who.mode) {
      return send(res, 404, stripeError('invalid_request_error',
        `No such checkout.session: '${sm[1]}'`, { code: 'resource_missing', param: 'session' }));
    }
    return send(res, 200, s.session);
  }
  if (req.method !== 'POST') {
    return send(res, 404, stripeError('invalid_request_error',
      `Unrecognized request URL (${req.method}: ${url.pathname}).`));
  }
  if (ct !== 'application/x-www-form-urlencoded') {
    return send(res, 400, stripeError('invalid_request_error',
      'Invalid request: the body must be application/x-www-form-urlencoded'));
  }
  if (params === null) {
    return send(res, 400, stripeError('invalid_request_error', 'Invalid array or hash parameter'));
  }

  const ik = req.headers['idempotency-key'];
  const slot = ik !== undefined ? `${who.key}\0${ik}` : null;
  const fingerprint = `${req.method} ${url.pathname} ${raw}`;
  if (slot && idem.has(slot)) {
    const saved = idem.get(slot);
    if (saved.fingerprint !== fingerprint) {
      return send(res, 400, stripeError('idempotency_error',
        `Keys for idempotent requests can only be used with the same parameters they were first used with. Try using a key other than '${ik}' if you meant to execute a different request.`));
    }
    return send(res, saved.status, saved.body, { 'Idempotent-Replayed': 'true', 'Idempotency-Key': ik });
  }
  const [status, body] = createSession(who.mode, params);
  if (slot && status === 200) idem.set(slot, { fingerprint, status, body });
  return send(res, status, body, ik !== undefined ? { 'Idempotency-Key': ik } : {});
}

// ---- events ----

function secretsOf(mode) {
  const s = config.webhook_secrets[mode];
  return s === undefined || s === null ? [] : [].concat(s);
}

function signHeader(payload, secrets, timestamp) {
  const list = [].concat(secrets);
  if (list.length === 0) throw new Error('no secret to sign with');
  const t = timestamp ?? now();
  const headers = list.map((secret) => stripe.webhooks.generateTestHeaderString({ payload, secret, timestamp: t }));
  // one t, one v1 per secret (each made by the package)
  return `t=${t},` + headers.map((h) => h.split(',').filter((x) => x.startsWith('v1=')).join(',')).join(',');
}

function newEvent(type, object, livemode, previous) {
  const ev = { id: `evt_${rand(24)}`, object: 'event', api_version: API_VERSION, created: now(),
    data: { object: structuredClone(object) }, livemode, pending_webhooks: 1,
    request: { id: null, idempotency_key: null }, type };
  if (previous) ev.data.previous_attributes = previous;
  events.push(ev);
  eventsById.set(ev.id, ev);
  return ev;
}

async function deliver(ev, opts = {}) {
  const d = { event_id: ev.id, type: ev.type, status: null, body: null, error: null };
  deliveries.push(d);
  if (!config.events_url) {
    d.error = 'no events_url configured';
    return d;
  }
  const payload = JSON.stringify(ev, null, 2);
  const mode = ev.livemode ? 'live' : 'test';
  try {
    const header = signHeader(payload, opts.secret ?? secretsOf(mode), opts.timestamp);
    const r = await fetch(config.events_url, { method: 'POST', body: payload,
      headers: { 'Content-Type': 'application/json; charset=utf-8', 'Stripe-Signature': header,
        'User-Agent': 'Stripe/1.0 (+https://stripe.com/docs/webhooks)',
        Accept: '*/*; q=0.5, application/xml', 'Cache-Control': 'no-cache' },
      signal: AbortSignal.timeout(20000) });
    d.status = r.status;
    d.body = await r.text();
  } catch (e) {
    d.error = String(e.message || e);
  }
  return d;
}

function sessionOr404(res, id) {
  const s = sessions.get(id);
  if (!s) send(res, 404, { error: `no session ${id}` });
  return s;
}

function charge(s) {
  const sess = s.session;
  if (!s.charge) {
    s.charge = { id: `ch_${rand(24)}`, object: 'charge', amount: sess.amount_total,
      amount_captured: sess.amount_total, amount_refunded: 0,
      balance_transaction: `txn_${rand(24)}`, captured: true, created: now(),
      currency: sess.currency, disputed: false, livemode: sess.livemode, metadata: {},
      paid: true, payment_intent: sess.payment_intent, refunded: false, status: 'succeeded' };
  }
  return s.charge;
}

const escapeHtml = (x) => String(x).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

async function pay(req, res, id) {
  const s = sessions.get(id);
  if (!s) {
    res.writeHead(404, { 'Content-Type': 'text/plain' });
    return res.end('No such checkout session\n');
  }
  if (req.method === 'GET') {
    const sess = s.session;
    const html = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Pay - Stripe stand-in</title></head>
<body>
<h1>Checkout</h1>
<p id="price">${escapeHtml(s.price)}: ${(sess.amount_total / 100).toFixed(2)} ${escapeHtml(sess.currency.toUpperCase())}</p>
<p id="status">${escapeHtml(sess.status)}</p>
<form method="post" action="/pay/${escapeHtml(id)}">
<input type="hidden" name="outcome" value="paid">
<button type="submit" id="pay">Pay</button>
</form>
${sess.cancel_url ? `<a id="cancel" href="${escapeHtml(sess.cancel_url)}">Cancel</a>` : ''}
</body></html>
`;
    res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' });
    return res.end(html);
  }
  if (req.method !== 'POST') {
    res.writeHead(405, { Allow: 'GET, POST' });
    return res.end();
  }
  const f = flatForm(await readBody(req));
  const outcome = f.outcome || 'paid';
  const doDeliver = f.deliver !== '0';
  if (outcome !== 'paid' && outcome !== 'delayed') {
    res.writeHead(400, { 'Content-Type': 'text/plain' });
    return res.end('outcome: paid or delayed\n');
  }
  if (s.session.status !== 'open') {
    res.writeHead(409, { 'Content-Type': 'text/plain' });
    return res.end(`This checkout session is ${s.session.status}\n`);
  }
  if (doDeliver && !config.events_url) {
    res.writeHead(409, { 'Content-Type': 'text/plain' });
    return res.end('No events_url configured (POST /__config)\n');
  }
  const sess = s.session;
  sess.status = 'complete';
  sess.payment_status = outcome === 'paid' ? 'paid' : 'unpaid';
  sess.payment_intent = `pi_${rand(24)}`;
  sess.customer_details = { address: null, email: 'customer@example.com', name: null,
    phone: null, tax_exempt: 'none', tax_ids: [] };
  s.delayed = outcome === 'delayed';
  if (outcome === 'paid') charge(s);
  const ev = newEvent('checkout.session.completed', sess, sess.livemode);
  if (doDeliver) await deliver(ev);
  const loc = sess.success_url.replaceAll('{CHECKOUT_SESSION_ID}', id);
  res.writeHead(303, { Location: loc, 'Content-Type': 'text/plain', 'X-Event-Id': ev.id });
  return res.end(`See ${loc}\n`);
}

// ---- control ----

async function control(req, res, url) {
  const p = url.pathname;
  if (req.method === 'GET' && p === '/__requests') return send(res, 200, { requests });
  if (req.method === 'GET' && p === '/__events') return send(res, 200, { events });
  if (req.method === 'GET' && p === '/__deliveries') return send(res, 200, { deliveries });
  if (req.method !== 'POST') return send(res, 404, { error: `no route ${req.method} ${p}` });
  let b;
  try {
    b = await readJson(req);
  } catch (e) {
    return send(res, 400, { error: `bad JSON: ${e.message}` });
  }
  const deliverOpt = async (ev) => (b.deliver === false ? null : deliver(ev));
  switch (p) {
    case '/__config':
      try {
        mergeConfig(b);
      } catch (e) {
        return send(res, 400, { error: e.message });
      }
      return send(res, 200, config);
    case '/__fail':
      if (!Number.isInteger(b.count) || b.count < 0) return send(res, 400, { error: 'count: an integer >= 0' });
      fail = { count: b.count, status: Number.isInteger(b.status) ? b.status : 500,
        body: b.body || null, delay_ms: Number.isInteger(b.delay_ms) ? b.delay_ms : 0 };
      return send(res, 200, fail);
    case '/__sign': {
      if (typeof b.payload !== 'string') return send(res, 400, { error: 'payload: the raw body as a string' });
      const secrets = [].concat(b.secret ?? []);
      if (secrets.length === 0 || secrets.some((x) => typeof x !== 'string' || !x)) {
        return send(res, 400, { error: 'secret: a string or a list of strings' });
      }
      if (b.timestamp !== undefined && !Number.isInteger(b.timestamp)) return send(res, 400, { error: 'timestamp: unix seconds' });
      return send(res, 200, { header: signHeader(b.payload, secrets, b.timestamp) });
    }
    case '/__deliver': {
      const ev = eventsById.get(b.event_id);
      if (!ev) return send(res, 404, { error: `no event ${b.event_id}` });
      return send(res, 200, { event: ev, delivery: await deliver(ev, { timestamp: b.timestamp, secret: b.secret }) });
    }
    case '/__async': {
      const s = sessionOr404(res, b.session_id);
      if (!s) return undefined;
      if (!s.delayed || s.session.payment_status !== 'unpaid') {
        return send(res, 409, { error: 'the session was not paid with outcome=delayed, or is settled' });
      }
      const ok = (b.outcome || 'succeeded') === 'succeeded';
      s.session.payment_status = ok ? 'paid' : 'unpaid';
      if (ok) charge(s);
      const ev = newEvent(ok ? 'checkout.session.async_payment_succeeded'
        : 'checkout.session.async_payment_failed', s.session, s.session.livemode);
      return send(res, 200, { event: ev, delivery: await deliverOpt(ev) });
    }
    case '/__refund': {
      const s = sessionOr404(res, b.session_id);
      if (!s) return undefined;
      if (!s.charge) return send(res, 409, { error: 'the session has no charge (not paid)' });
      const c = s.charge;
      const amt = b.amount_refunded ?? c.amount;
      if (!Number.isInteger(amt) || amt < c.amount_refunded || amt > c.amount) {
        return send(res, 400, { error: `amount_refunded: cumulative, ${c.amount_refunded}..${c.amount}` });
      }
      const prev = { amount_refunded: c.amount_refunded, refunded: c.refunded };
      c.amount_refunded = amt;
      c.refunded = amt === c.amount;
      const ev = newEvent('charge.refunded', c, c.livemode, prev);
      return send(res, 200, { event: ev, delivery: await deliverOpt(ev) });
    }
    case '/__dispute': {
      const s = sessionOr404(res, b.session_id);
      if (!s) return undefined;
      if (!s.charge) return send(res, 409, { error: 'the session has no charge (not paid)' });
      const c = s.charge;
      c.disputed = true;
      s.dispute = { id: `dp_${rand(24)}`, object: 'dispute', amount: b.amount ?? c.amount,
        balance_transactions: [], charge: c.id, created: now(), currency: c.currency,
        evidence_details: { due_by: now() + 7 * 86400, has_evidence: false, past_due: false,
          submission_count: 0 },
        is_charge_refundable: false, livemode: c.livemode, metadata: {},
        payment_intent: c.payment_intent, reason: 'fraudulent', status: 'needs_response' };
      const ev = newEvent('charge.dispute.created', s.dispute, c.livemode);
      return send(res, 200, { event: ev, delivery: await deliverOpt(ev) });
    }
    default:
      return send(res, 404, { error: `no route POST ${p}` });
  }
}

// ---- server ----

const server = http.createServer(async (req, res) => {
  const url = new URL(req.url, 'http://127.0.0.1');
  try {
    if (url.pathname.startsWith('/v1/')) return await v1(req, res, url);
    const pm = /^\/pay\/([A-Za-z0-9_]+)$/.exec(url.pathname);
    if (pm) return await pay(req, res, pm[1]);
    if (url.pathname.startsWith('/__')) return await control(req, res, url);
    return send(res, 404, stripeError('invalid_request_error',
      `Unrecognized request URL (${req.method}: ${url.pathname}).`));
  } catch (e) {
    process.stderr.write(`stripe stand-in: ${req.method} ${url.pathname}: ${e.stack || e}\n`);
    if (!res.headersSent) send(res, 500, stripeError('api_error', 'stand-in failure'));
    else res.destroy();
  }
});

server.listen(config.port || 0, '127.0.0.1', () => {
  const { port } = server.address();
  baseUrl = `http://127.0.0.1:${port}`;
  process.stdout.write(JSON.stringify({ port, url: baseUrl }) + '\n');
});

for (const sig of ['SIGTERM', 'SIGINT']) {
  process.on(sig, () => {
    server.close();
    server.closeAllConnections?.();
    process.exit(0);
  });
}
