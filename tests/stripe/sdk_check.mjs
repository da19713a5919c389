// SPDX-License-Identifier: MIT
/*
 * The Stripe stand-in (stripe_api.mjs) checked against Stripe's official node library (npm
 * `stripe`, pinned in package.json): the library's own form encoding is what the stand-in
 * parses, its error classes are what the stand-in's errors become, and its webhook verifier
 * (stripe.webhooks.constructEvent, 300 s tolerance) accepts what the stand-in delivers and
 * signs. Run by tests/http/test_billing.py (StandInPeerTest); no Workforce server involved.
 *
 *   node tests/stripe/sdk_check.mjs --url http://127.0.0.1:PORT --config JSON
 *
 * JSON: {"live_key", "test_key", "live_price", "test_price", "live_whsec", "test_whsec"}, the
 * stand-in's own settings. Prints one JSON line per check, {"check", "ok", "detail"?}, then
 * {"done": true}; exit 0 when every check passed, 1 otherwise, 2 on bad arguments.
 */

import * as http from 'node:http';

const { default: Stripe } = await import('stripe');

function arg(name) {
  const i = process.argv.indexOf(name);
  if (i < 0 || !process.argv[i + 1]) {
    process.stderr.write(`sdk_check: ${name} is required\n`);
    process.exit(2);
  }
  return process.argv[i + 1];
}

const base = new URL(arg('--url'));
const cfg = JSON.parse(arg('--config'));
const client = (key) => new Stripe(key, { host: base.hostname, port: Number(base.port),
  protocol: 'http', maxNetworkRetries: 0, telemetry: false });
const live = client(cfg.live_key);
const test = client(cfg.test_key);

let failed = 0;
function report(check, ok, detail) {
  if (!ok) failed++;
  process.stdout.write(JSON.stringify(detail === undefined ? { check, ok } : { check, ok, detail }) + '\n');
}

async function check(name, fn) {
  try {
    const detail = await fn();
    report(name, true, detail);
  } catch (e) {
    report(name, false, String(e && (e.stack || e.message) || e));
  }
}

function expect(cond, what) {
  if (!cond) throw new Error(what);
}

async function control(path, body) {
  const r = await fetch(new URL(path, base), body === undefined ? {} : {
    method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
  return r.json();
}

// A receiver of the stand-in's webhook deliveries: the raw body and its Stripe-Signature.
const received = [];
const receiver = http.createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    received.push({ body: Buffer.concat(chunks).toString('utf8'), sig: req.headers['stripe-signature'] });
    res.writeHead(200, { 'Content-Type': 'application/json' });
    res.end('{"received": true}');
  });
});
await new Promise((r) => receiver.listen(0, '127.0.0.1', r));
await control('/__config', { events_url: `http://127.0.0.1:${receiver.address().port}/events` });

const params = (price, mode) => ({
  mode: 'payment', line_items: [{ price, quantity: 1 }], client_reference_id: 'org_sdkcheck',
  metadata: { workforce_org: 'org_sdkcheck', workforce_mode: mode },
  success_url: 'https://example.com/ok?s={CHECKOUT_SESSION_ID}', cancel_url: 'https://example.com/no' });

let session = null;
await check('create a live session with the library', async () => {
  session = await live.checkout.sessions.create(params(cfg.live_price, 'live'), { idempotencyKey: 'sdk-1' });
  expect(/^cs_live_[A-Za-z0-9]+$/.test(session.id), `id ${session.id}`);
  expect(session.object === 'checkout.session', session.object);
  expect(session.url === `${base.origin}/pay/${session.id}`, session.url);
  expect(session.status === 'open' && session.payment_status === 'unpaid', session.status);
  expect(session.livemode === true && session.payment_intent === null, 'livemode/payment_intent');
  expect(Math.abs(session.expires_at - (Date.now() / 1000 + 86400)) < 120, 'expires_at');
  expect(session.client_reference_id === 'org_sdkcheck', 'client_reference_id');
  expect(session.metadata.workforce_mode === 'live', JSON.stringify(session.metadata));
  const reqs = (await control('/__requests')).requests;
  const last = reqs[reqs.length - 1];
  expect(last.headers.authorization === `Bearer ${cfg.live_key}`, 'bearer');
  expect(last.form['line_items[0][price]'] === cfg.live_price, JSON.stringify(last.form));
  expect(last.headers['idempotency-key'] === 'sdk-1', 'idempotency key');
  return session.id;
});

await check('the same Idempotency-Key answers the same session', async () => {
  const again = await live.checkout.sessions.create(params(cfg.live_price, 'live'), { idempotencyKey: 'sdk-1' });
  expect(again.id === session.id, `${again.id} != ${session.id}`);
  const other = await live.checkout.sessions.create(params(cfg.live_price, 'live'), { idempotencyKey: 'sdk-2' });
  expect(other.id !== session.id, 'a new key made no new session');
  try {
    await live.checkout.sessions.create(params(cfg.live_price, 'test'), { idempotencyKey: 'sdk-1' });
  } catch (e) {
    expect(e.type === 'StripeIdempotencyError' && e.statusCode === 400, `${e.type} ${e.statusCode}`);
    return 'idempotency_error';
  }
  throw new Error('other parameters under the same key were accepted');
});

await check('retrieve', async () => {
  const got = await live.checkout.sessions.retrieve(session.id);
  expect(got.id === session.id, got.id);
  try {
    await test.checkout.sessions.retrieve(session.id);
  } catch (e) {
    expect(e.type === 'StripeInvalidRequestError' && e.code === 'resource_missing', e.type);
    return 'a live session is not seen by the test key';
  }
  throw new Error('the test key saw a live session');
});

await check('an unknown price is the library\'s StripeInvalidRequestError', async () => {
  try {
    await live.checkout.sessions.create(params('price_unknown', 'live'));
  } catch (e) {
    expect(e.type === 'StripeInvalidRequestError', e.type);
    expect(e.statusCode === 400 && e.code === 'resource_missing', `${e.statusCode} ${e.code}`);
    expect(e.param === 'line_items[0][price]', e.param);
    return e.message;
  }
  throw new Error('accepted');
});

await check('a test price is unknown to the live key, known to the test key', async () => {
  let refused = false;
  try {
    await live.checkout.sessions.create(params(cfg.test_price, 'live'));
  } catch (e) {
    refused = e.code === 'resource_missing';
  }
  expect(refused, 'live key took a test price');
  const t = await test.checkout.sessions.create(params(cfg.test_price, 'test'));
  expect(/^cs_test_/.test(t.id) && t.livemode === false, t.id);
});

await check('a wrong key is the library\'s StripeAuthenticationError', async () => {
  try {
    await client('sk_live_' + 'x'.repeat(24)).checkout.sessions.create(params(cfg.live_price, 'live'));
  } catch (e) {
    expect(e.type === 'StripeAuthenticationError' && e.statusCode === 401, `${e.type} ${e.statusCode}`);
    return e.message;
  }
  throw new Error('accepted');
});

await check('the paid session\'s webhook verifies with constructEvent', async () => {
  const r = await fetch(`${base.origin}/pay/${session.id}`, { method: 'POST', redirect: 'manual',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded' }, body: 'outcome=paid' });
  expect(r.status === 303, `status ${r.status}`);
  expect(r.headers.get('location') === `https://example.com/ok?s=${session.id}`, r.headers.get('location'));
  expect(received.length === 1, `${received.length} deliveries`);
  const d = received[0];
  const ev = live.webhooks.constructEvent(d.body, d.sig, cfg.live_whsec);
  expect(ev.type === 'checkout.session.completed' && ev.livemode === true, ev.type);
  const o = ev.data.object;
  expect(o.id === session.id && o.payment_status === 'paid' && /^pi_/.test(o.payment_intent), JSON.stringify(o).slice(0, 300));
  expect(o.client_reference_id === 'org_sdkcheck' && o.metadata.workforce_org === 'org_sdkcheck', 'reference');
  let wrong = false;
  try {
    live.webhooks.constructEvent(d.body, d.sig, cfg.test_whsec);
  } catch (e) {
    wrong = e.type === 'StripeSignatureVerificationError';
  }
  expect(wrong, 'verified with another secret');
  return ev.id;
});

await check('refund and dispute deliveries verify', async () => {
  const ref = await control('/__refund', { session_id: session.id, amount_refunded: 1 });
  expect(ref.delivery && ref.delivery.status === 200, JSON.stringify(ref.delivery));
  const dp = await control('/__dispute', { session_id: session.id });
  expect(dp.delivery && dp.delivery.status === 200, JSON.stringify(dp.delivery));
  const evs = received.slice(1).map((d) => live.webhooks.constructEvent(d.body, d.sig, cfg.live_whsec));
  expect(evs.map((e) => e.type).join() === 'charge.refunded,charge.dispute.created', evs.map((e) => e.type).join());
  const [c, dispute] = [evs[0].data.object, evs[1].data.object];
  expect(c.object === 'charge' && c.amount_refunded === 1 && /^ch_/.test(c.id), JSON.stringify(c));
  expect(dispute.object === 'dispute' && dispute.charge === c.id && dispute.payment_intent === c.payment_intent, JSON.stringify(dispute));
});

await check('/__sign headers verify; a stale one does not', async () => {
  const payload = JSON.stringify({ id: 'evt_x', object: 'event', type: 'ping' });
  const now = Math.floor(Date.now() / 1000);
  const fresh = (await control('/__sign', { payload, secret: cfg.live_whsec })).header;
  live.webhooks.constructEvent(payload, fresh, cfg.live_whsec);
  const two = (await control('/__sign', { payload, secret: ['whsec_other', cfg.live_whsec] })).header;
  expect(two.split(',').filter((x) => x.startsWith('v1=')).length === 2, two);
  live.webhooks.constructEvent(payload, two, cfg.live_whsec);
  const stale = (await control('/__sign', { payload, secret: cfg.live_whsec, timestamp: now - 400 })).header;
  let refused = false;
  try {
    live.webhooks.constructEvent(payload, stale, cfg.live_whsec);
  } catch (e) {
    refused = e.type === 'StripeSignatureVerificationError';
  }
  expect(refused, 'a 400 s old signature verified');
});

receiver.close();
process.stdout.write(JSON.stringify({ done: true }) + '\n');
process.exit(failed ? 1 : 0);
