// SPDX-License-Identifier: MIT
// console.mjs: the web console in a real browser (Debian's Chromium, headless, driven by
// puppeteer-core; nothing downloads a browser). Run by tools/test.sh as
//   node tests/browser/console.mjs
// against build/workforce (or $WORKFORCE_BIN). One TAP-like line per test, then
// "browser: N passed, N failed". Screenshots of every page go to build/test-artifacts/console/.
//
// What runs: a mock of an OpenAI-compatible model (tests/mock/openai_mock.py: its [[slow:MS]]
// marker makes a reply stream slowly enough to watch it grow), a server in front of it with a
// fresh database (live keys use the mock; test keys keep the built-in engine, as a user's test
// keys do), a second server of the same kind that the stream-cut test kills mid-reply, and a
// server with single sign-on in front of a real OpenID Connect provider (tests/oidc/provider.mjs:
// oidc-provider from npm, pinned), whose round trips the browser makes itself. The main server
// buys credits from the stand-in of Stripe's API (tests/stripe/stripe_api.mjs), whose pay page
// the browser goes through in the purchase test.
//
// Tests find things as a user does: by role and accessible name (puppeteer's ::-p-aria), label
// and visible text; never by the pages' CSS classes. Each test has a fresh incognito context
// (so a fresh session storage: it signs in itself) and fails on a console error or a request to
// another host unless it expects them (the error tests' failed requests). Every audited page
// gets an a11y test of its own at the end (axe-core: no serious or critical violation).

import puppeteer from 'puppeteer-core';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import {
  CHROMIUM, UI, WORK, allowOrigin, assert, audit, auditResults, byRole, disallowOrigin,
  fieldError, freePort, halt, killAllSync, labelled, mkdirs, newPage, note, notBlank,
  startMcpPeer, startMock, startOidcProvider, startServer, startStripe, stopAll, summary, tabTo,
  test, until, waitAlert, waitText,
} from './harness.mjs';

const SUITE_DEADLINE_MS = 8 * 60_000;
const t0 = Date.now();

// ---- Setup and teardown ----

let browser = null;
let exiting = false;
async function teardown() {
  if (browser) {
    const proc = browser.process();
    await Promise.race([browser.close().catch(() => {}),
                        new Promise((r) => setTimeout(r, 10_000))]);
    if (proc && proc.exitCode === null) {
      try { process.kill(proc.pid, 'SIGKILL'); } catch { /* gone */ }
    }
    browser = null;
  }
  if (provider) provider.close();
  provider = null;
  await stopAll();
}
function onSignal(sig) {
  if (exiting) return;
  exiting = true;
  halt(`the suite was stopped by ${sig}`);
  teardown().finally(() => process.exit(1));
}
process.on('SIGTERM', () => onSignal('SIGTERM'));
process.on('SIGINT', () => onSignal('SIGINT'));
process.on('exit', () => {
  killAllSync();
  const p = browser && browser.process();
  if (p && p.exitCode === null) try { process.kill(p.pid, 'SIGKILL'); } catch { /* gone */ }
});
const watchdog = setTimeout(() => {
  if (exiting) return;
  exiting = true;
  halt(`the suite passed its deadline of ${SUITE_DEADLINE_MS / 1000} s`);
  teardown().finally(() => process.exit(1));
}, SUITE_DEADLINE_MS);
watchdog.unref();

// The errors a test provokes on purpose: Chromium logs each failed request as a console error.
const FAILED_STATUS = (...codes) => new RegExp(`status of (${codes.join('|')})\\b`);
const NET_ERR = /net::ERR_|Failed to fetch|network error/i;

// ---- Shared steps ----

let S = null; // the main server
let CUT = null; // the server killed mid-stream
let provider = null; // the OAuth provider of the connect round trip
let PEER = null; // the MCP server the MCP servers page adds
let SSO = null; // the server with single sign-on, and OP its OpenID Connect provider
let OP = null;
let STRIPE = null; // the Stripe stand-in the main server buys credits from
let K = {}; // keys
let EMP = []; // the employees of the main server's test org
let LIVE_EMP = []; // and of its live org (live mode has data of its own)

async function open(ctx, server, hash = '') {
  const page = await newPage(ctx);
  await page.goto(`${server.url}/console/${hash}`, { waitUntil: 'load' });
  return page;
}

// Sign in by choosing "Use an API key", typing the key into "API key" and pressing Enter; wait
// for the shell.
async function signIn(page, key) {
  await page.locator(byRole('button', 'Use an API key')).click();
  const input = await page.locator(byRole('textbox', 'API key')).waitHandle();
  await input.type(key);
  await page.keyboard.press('Enter');
  await page.locator(byRole('navigation', 'Sections')).wait();
}

async function openSignedIn(ctx, server, key, hash = '') {
  const page = await open(ctx, server);
  await signIn(page, key);
  // the first page first, as a user sees it
  await page.waitForFunction(() => document.querySelectorAll('main h1').length === 1,
                             { timeout: UI, polling: 100 });
  if (hash) await goHash(page, hash);
  return page;
}

// Follow a link of the console by its address (what the nav links do).
async function goHash(page, hash) {
  await page.evaluate((h) => { location.hash = h; }, hash);
  await page.waitForFunction((h) => location.hash === h, { timeout: UI }, hash);
}

// The page's h1 holds 'text'.
async function heading(page, text, timeout = UI) {
  return waitText(page, text, { selector: 'h1', timeout });
}

// The chat composer and the last reply.
const THREAD = 'section[aria-label="Conversation"]';
const MESSAGES = 'ol[aria-label="Messages"]';

async function lastReplyDone(page, timeout = WORK) {
  // the reply is complete when no "Writing…" status is left and its stars are offered
  await page.waitForFunction((sel) => {
    const items = [...document.querySelectorAll(sel + ' > li')];
    const last = items[items.length - 1];
    if (!last) return false;
    const writing = [...last.querySelectorAll('[role="status"]')]
      .some((s) => /Writing/.test(s.textContent));
    return !writing && !!last.querySelector('[role="group"][aria-label="Rate this reply"]');
  }, { timeout, polling: 100 }, MESSAGES);
}

// No role=alert inside 'selector' once the page has settled (two animation frames after the
// last answer was rendered).
async function noAlert(page, selector = 'main') {
  const alerts = await page.evaluate(async (sel) => {
    await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
    return [...document.querySelectorAll(sel + ' [role="alert"]')].map((a) => a.innerText);
  }, selector);
  assert(alerts.length === 0, 'an error is shown: ' + alerts.join(' | '));
}

// ---- The tests ----

async function headerTests() {
  await test('headers: /console/ and /docs carry the CSP, nosniff and no-referrer; / redirects',
             async () => {
    for (const p of ['/console/', '/docs']) {
      const r = await fetch(S.url + p);
      assert(r.status === 200, `${p}: status ${r.status}`);
      const csp = r.headers.get('content-security-policy') || '';
      assert(csp.includes("default-src 'self'"), `${p}: CSP is "${csp}"`);
      assert(r.headers.get('x-content-type-options') === 'nosniff', `${p}: nosniff`);
      assert(r.headers.get('referrer-policy') === 'no-referrer', `${p}: referrer policy`);
    }
    const r = await fetch(S.url + '/', { redirect: 'manual' });
    assert([301, 302, 303, 307, 308].includes(r.status), `GET / answered ${r.status}`);
    const to = new URL(r.headers.get('location') || '', S.url);
    assert(to.origin === S.url && to.pathname === '/console/', `GET / redirects to ${to}`);
  });
}

// The console's inert Markdown (ui.js), tried in the page itself: the module the chat, task and
// employee pages render user text with.
async function markdownTests() {
  await test('markdown: safeHref refuses what a browser opens as another host (/\\host, tabs, ' +
             'newlines), keeps this site\'s paths and http(s) links', async (ctx) => {
    const page = await open(ctx, S);
    const got = await page.evaluate(async () => {
      const ui = await import('/console/ui.js');
      const { render } = await import('/console/preact.js');
      const refused = ['/\\evil.example', '/\\/evil.example', ' /\\evil.example ',
                       '/\t/evil.example', '/\n/evil.example', '/\r/evil.example',
                       '//evil.example', '\\\\evil.example', 'javascript:alert(1)', '/a\u0000b', ''];
      const kept = ['/docs', '/docs/errors/route_not_found', '#intro', 'https://ok.example/a',
                    'http://ok.example', 'mailto:someone@ok.example'];
      const text = refused.concat(kept).map((h, i) => `[l${i}](${h})`).join(' ');
      const div = document.createElement('div');
      render(ui.Markdown({ text }), div);
      return {
        refused: refused.map((h) => [h, ui.safeHref(h)]),
        kept: kept.map((h) => [h, ui.safeHref(h)]),
        hrefs: [...div.querySelectorAll('a')].map((a) => a.getAttribute('href')),
      };
    });
    for (const [h, v] of got.refused) assert(v === null, `safeHref(${JSON.stringify(h)}) = ${v}`);
    for (const [h, v] of got.kept) assert(v === h, `safeHref(${JSON.stringify(h)}) = ${v}`);
    for (const h of got.hrefs)
      assert(/^(\/(?![\/\\])|#|https?:\/\/ok\.example|mailto:)/.test(h), `a link to ${h}`);
    assert(got.hrefs.length === 6, `links kept: ${got.hrefs.join(' ')}`);
  }, { browser });

  await test('markdown: rendering is linear in the text (400,000 characters of link-like runs, ' +
             'such as "[a](" again and again, each in under 1 s: a few ms now; the pattern that ' +
             'read to the end of the line from every "[" took 18 s for the one, 0.5 s for 32,000 ' +
             '"[")', async (ctx) => {
    const page = await open(ctx, S);
    const times = await page.evaluate(async () => {
      const ui = await import('/console/ui.js');
      const runs = { '[': 400000, '[a': 400000, '[a](': 400000, '[a](b': 400000, '](': 400000,
                     // emphasis and code make an element each: 100,000 characters
                     '*a': 100000, '`a': 100000, '_ a': 100000 };
      const out = {};
      for (const [unit, n] of Object.entries(runs)) {
        const text = unit.repeat(Math.floor(n / unit.length));
        const t0 = performance.now();
        ui.Markdown({ text });
        out[`${unit} x ${Math.floor(n / unit.length)}`] = performance.now() - t0;
      }
      return out;
    });
    note('markdown (ms): ' +
         Object.entries(times).map(([k, ms]) => `${k}: ${ms.toFixed(1)}`).join(', '));
    // A linear renderer takes milliseconds here (100 times under the bound); the quadratic
    // pattern took seconds.
    for (const [k, ms] of Object.entries(times))
      assert(ms < 1000, `${JSON.stringify(k)}: ${ms.toFixed(0)} ms`);
  }, { browser });
}

async function signInTests() {
  await test('sign-in: with the keyboard alone (Tab, type, Enter); the test-mode banner shows',
             async (ctx) => {
    const page = await open(ctx, S);
    await heading(page, 'Workforce console');
    await audit(page, 'signin');
    const choice = await page.locator(byRole('button', 'Use an API key')).waitHandle();
    // from the top of the page, as a user arriving with the keyboard
    await page.evaluate(() => document.activeElement && document.activeElement.blur());
    await tabTo(page, choice, 20);
    await page.keyboard.press('Enter');
    const input = await page.locator(byRole('textbox', 'API key')).waitHandle();
    await page.waitForFunction((el) => el === document.activeElement, { timeout: UI }, input);
    await page.keyboard.type(K.test);
    await page.keyboard.press('Enter');
    await page.locator(byRole('navigation', 'Sections')).wait();
    await waitText(page, 'Test mode', { selector: 'header' });
    await waitText(page, /Test key/i); // (shown in capitals by its style)
    await heading(page, 'Employees');
    await audit(page, 'employees');
  }, { browser });

  await test('sign-in: a wrong key shows role=alert with its code, not a blank page',
             async (ctx) => {
    const page = await open(ctx, S);
    const wrong = 'svc_test_sk_' + 'x'.repeat(40);
    const expect = (await S.api(wrong, 'GET', '/v1/account')).json.error.code;
    await signInFails(page, wrong, expect);
    await audit(page, 'signin-error');
  }, { browser, allow: [FAILED_STATUS(401)] });

  await test('sign-in: a revoked key shows role=alert with its code, not a blank page',
             async (ctx) => {
    const key = S.createKey('acme', { mode: 'test' });
    S.cli('keys', 'revoke', S.keyId('acme', key));
    const expect = (await S.api(key, 'GET', '/v1/account')).json.error.code;
    const page = await open(ctx, S);
    await signInFails(page, key, expect);
  }, { browser, allow: [FAILED_STATUS(401)] });

  await test('sign-in: a live key shows live mode, no test banner', async (ctx) => {
    const page = await openSignedIn(ctx, S, K.live);
    await waitText(page, /Live key/i);
    const banner = await page.evaluate(() => /Test mode/.test(document.body.innerText));
    assert(!banner, 'a live key shows the test-mode banner');
    await goHash(page, '#/account');
    await heading(page, 'Account');
    await waitText(page, /Live: real data/, { selector: 'main' });
    await audit(page, 'account');
  }, { browser });
}

async function signInFails(page, key, code) {
  await page.locator(byRole('button', 'Use an API key')).click();
  const input = await page.locator(byRole('textbox', 'API key')).waitHandle();
  await input.type(key);
  await page.keyboard.press('Enter');
  const text = await waitAlert(page, code);
  assert(text.trim().length > code.length, `the alert says only "${text}"`);
  await heading(page, 'Workforce console'); // still the sign-in page, with its form
  await page.locator(byRole('textbox', 'API key')).wait();
  await notBlank(page);
}

async function shellTests() {
  await test('shell: the navigation reaches every page; each renders its h1', async (ctx) => {
    const page = await openSignedIn(ctx, S, K.test);
    const pages = [['Employees', 'Employees'], ['Chat', 'Chat'], ['Knowledge', null],
                   ['Tasks', null], ['Workflows', null], ['Integrations', null],
                   ['MCP servers', 'MCP servers'], ['Approvals', 'Approvals'],
                   ['Webhooks & events', null], ['Billing', 'Billing'],
                   ['Account', 'Account']];
    for (const [link, h1] of pages) {
      await page.locator(byRole('link', link, 'nav[aria-label="Sections"]')).click();
      await page.waitForFunction((l) => {
        const a = [...document.querySelectorAll('nav a[aria-current="page"]')];
        return a.some((x) => x.textContent.trim() === l);
      }, { timeout: UI }, link);
      // every page has exactly one h1 once it has loaded
      await page.waitForFunction(() => document.querySelectorAll('main h1').length === 1 &&
        !document.querySelector('main [role="status"]'), { timeout: UI });
      if (h1) await heading(page, h1);
      await notBlank(page);
    }
  }, { browser });

  await test('shell: a page chosen while the first one still loads is the page shown',
             async (ctx) => {
    // page-employees.js (the first page after sign-in) is held back until Chat has loaded
    const page = await newPage(ctx);
    await page.setRequestInterception(true);
    let held = null;
    page.on('request', (req) => {
      if (req.isInterceptResolutionHandled()) return;
      if (new URL(req.url()).pathname === '/console/page-employees.js') held = req;
      else req.continue();
    });
    await page.goto(`${S.url}/console/`, { waitUntil: 'load' });
    await signIn(page, K.test);
    await until('page-employees.js to be asked for', () => held, UI);
    await goHash(page, '#/chat');
    await heading(page, 'Chat');
    await held.continue();
    // the held module is evaluated (an import of it resolves after the shell's own), then the
    // shell renders what it decided: two animation frames later the page must still be Chat
    await page.evaluate(async () => {
      await import('/console/page-employees.js');
      await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
    });
    const h1 = await page.$eval('main h1', (h) => h.textContent.trim());
    assert(h1 === 'Chat', `the address is #/chat but the page shown is "${h1}"`);
  }, { browser });

  await test('employees: an employee\'s page shows its profile and statistics', async (ctx) => {
    const e = EMP[0];
    const page = await openSignedIn(ctx, S, K.test);
    await page.locator(byRole('link', e.name)).click();
    await heading(page, e.name);
    await page.locator(byRole('heading', 'Profile')).wait();
    await page.locator(byRole('heading', 'Statistics')).wait();
    await waitText(page, /Messages: \d+ in the period/, { selector: 'main' });
    await audit(page, 'employee');
  }, { browser });
}

// The value of the text box or select labelled 'label'.
async function valueOf(page, label) {
  const el = await labelled(page, label);
  return el.evaluate((x) => x.value);
}

async function employeeToolTests() {
  let emp = null;
  await test('employees: the tools editor shows the rules, adds one picked from the tools and a ' +
             'pattern, changes a policy; a bad name is shown at its row; removed, then saved',
             async (ctx) => {
    emp = (await S.api(K.test, 'POST', '/v1/employees',
                       { name: 'Toolsmith', role: 'Operator', category: 'operations' })).json;
    assert(emp && emp.id, 'no employee created');
    const page = await openSignedIn(ctx, S, K.test, '#/employees/' + emp.id);
    await heading(page, 'Toolsmith');
    await page.locator(byRole('heading', 'Tools')).wait();
    // the default rule, and what it matches among the organization's tools
    assert(await valueOf(page, 'Tool or pattern, rule 1') === 'knowledge.search',
           'rule 1 is not knowledge.search');
    assert(await valueOf(page, 'Policy for knowledge.search') === 'auto', 'not auto');
    await waitText(page, 'knowledge.search', { selector: 'table td:nth-child(3)' });
    // the names offered while typing: the tools and their families
    const offered = await page.$$eval('datalist#tool-names option', (o) => o.map((x) => x.value));
    for (const n of ['tasks.get', 'tasks.create', 'slack.*', 'tasks.*'])
      assert(offered.includes(n), `${n} is not offered: ${offered.join(' ')}`);
    // add a tool, a pattern (approve) and a bad name; deny the default
    const add = async (name, policy) => {
      await page.locator(byRole('combobox', 'Add a tool or pattern')).fill(name);
      if (policy) await (await labelled(page, 'Policy of the new rule')).select(policy);
      await page.locator(byRole('button', 'Add rule')).click();
      await page.waitForFunction((n) => [...document.querySelectorAll('table input')]
        .some((i) => i.value === n), { timeout: UI }, name);
    };
    await add('tasks.get', 'auto');
    await add('slack.*', 'approve');
    await add('Not a tool!', 'auto');
    await (await labelled(page, 'Policy for knowledge.search')).select('deny');
    await waitText(page, 'Unsaved changes', { selector: 'main' });
    await waitText(page, /slack\.post_message/, { selector: 'table' }); // slack.* matches
    // the employee read again (every 5 s) leaves the draft alone
    await page.waitForResponse((r) => r.url().endsWith('/v1/employees/' + emp.id) &&
                               r.request().method() === 'GET', { timeout: UI });
    assert(await valueOf(page, 'Tool or pattern, rule 4') === 'Not a tool!',
           'the draft was overwritten by a refresh');
    // the server refuses the bad name: at its row
    await page.locator(byRole('button', 'Save tool rules')).click();
    const text = await fieldError(page, 'Tool or pattern, rule 4', 'invalid_request');
    assert(/tools\[3\]\.name/.test(text), 'the row does not say why: ' + text);
    await audit(page, 'employee-tools-error');
    // remove it, save
    await page.locator(byRole('button', 'Remove Not a tool!')).click();
    await page.waitForFunction(() => document.querySelectorAll('table tbody tr').length === 3,
                               { timeout: UI });
    await page.locator(byRole('button', 'Save tool rules')).click();
    await page.waitForFunction(() => !/Unsaved changes/.test(document.querySelector('main')
      .innerText), { timeout: UI });
    const stored = (await S.api(K.test, 'GET', '/v1/employees/' + emp.id)).json.tools;
    assert(JSON.stringify(stored) === JSON.stringify([
      { name: 'knowledge.search', policy: 'deny' }, { name: 'tasks.get', policy: 'auto' },
      { name: 'slack.*', policy: 'approve' }]), 'stored: ' + JSON.stringify(stored));
    await noAlert(page);
    await audit(page, 'employee-tools');
    // read fresh, the page shows what is stored
    await page.reload({ waitUntil: 'load' });
    await page.locator(byRole('heading', 'Tools')).wait();
    await page.waitForFunction(() => document.querySelectorAll('table tbody tr').length === 3,
                               { timeout: UI });
    assert(await valueOf(page, 'Policy for slack.*') === 'approve', 'slack.* is not approve');
    assert(await valueOf(page, 'Policy for knowledge.search') === 'deny', 'not deny');
  }, { browser, allow: [FAILED_STATUS(400)] });

  await test('employees: a rule added twice is refused before saving; discard goes back to what ' +
             'is stored', async (ctx) => {
    assert(emp, 'no employee from the tools editor test');
    const page = await openSignedIn(ctx, S, K.test, '#/employees/' + emp.id);
    await page.locator(byRole('heading', 'Tools')).wait();
    await page.locator(byRole('combobox', 'Add a tool or pattern')).fill('tasks.get');
    await page.locator(byRole('button', 'Add rule')).click();
    const text = await fieldError(page, 'Add a tool or pattern', 'tasks.get has a rule already');
    assert(/change its policy/.test(text), text);
    await page.locator(byRole('button', 'Remove tasks.get')).click();
    await waitText(page, 'Unsaved changes', { selector: 'main' });
    await page.locator(byRole('button', 'Discard changes')).click();
    await page.waitForFunction(() => document.querySelectorAll('table tbody tr').length === 3,
                               { timeout: UI });
    const stored = (await S.api(K.test, 'GET', '/v1/employees/' + emp.id)).json.tools;
    assert(stored.length === 3, 'the discarded draft was saved: ' + JSON.stringify(stored));
  }, { browser });
}

async function chatTests() {
  const emp = LIVE_EMP.find((e) => e.name === 'Noah') || LIVE_EMP[0];
  let convId = null;

  await test('chat: choose an employee and send with the keyboard alone; the reply streams in',
             async (ctx) => {
    const page = await openSignedIn(ctx, S, K.live, '#/chat');
    await heading(page, 'Chat');
    const picker = await page.locator(byRole('combobox', 'Employee', THREAD)).waitHandle();
    await page.waitForFunction((s) => s.options.length > 1, { timeout: UI }, picker);
    await audit(page, 'chat');
    await page.evaluate(() => document.activeElement && document.activeElement.blur());
    await tabTo(page, picker);
    await page.keyboard.type(emp.name); // a closed select picks the option typed
    await page.waitForFunction((s, id) => s.value === id, { timeout: UI }, picker, emp.id);
    const box = await page.locator(byRole('textbox', 'Message', THREAD)).waitHandle();
    await tabTo(page, box, 10);
    // Record the reply as it renders: its text, and whether it was still being written.
    await page.evaluate((sel) => {
      window.__seen = [];
      new MutationObserver(() => {
        const items = [...document.querySelectorAll(sel + ' > li')];
        const last = items[items.length - 1];
        if (!last || items.length < 2) return;
        const writing = [...last.querySelectorAll('[role="status"]')]
          .some((s) => /Writing/.test(s.textContent));
        window.__seen.push({ writing, text: last.innerText });
      }).observe(document.body, { subtree: true, childList: true, characterData: true });
    }, MESSAGES);
    const message = 'When are you open? [[slow:400]]';
    await page.keyboard.type(message);
    await page.keyboard.press('Enter');
    await lastReplyDone(page);
    const seen = await page.evaluate(() => window.__seen);
    const partial = seen.filter((s) => s.writing && s.text.includes('Hello from'));
    const lengths = new Set(partial.map((s) => s.text.length));
    assert(lengths.size >= 2,
           `the reply did not grow while being written (${lengths.size} partial states seen)`);
    await waitText(page, 'Hello from the mock. You said: When are you open?',
                   { selector: `${MESSAGES} > li:last-child` });
    // a stream ends at its message.completed: a whole reply shows no error
    await noAlert(page, THREAD);
    const sentBox = await page.$eval(byRole('textbox', 'Message', THREAD), (t) => t.value);
    assert(sentBox === '', 'the composer was not cleared');
    await page.waitForFunction(() => /^#\/chat\/conv_/.test(location.hash), { timeout: UI });
    convId = await page.evaluate(() => location.hash.split('/')[2]);
    await audit(page, 'chat-conversation');
  }, { browser });

  await test('chat: markup in a message and in a reply stays text (no img, no dialog, no ' +
             'javascript: href)', async (ctx) => {
    const reply = 'Echo: <img src=x onerror=alert(1)> and [x](javascript:alert(1)) and ' +
                  '[y]( JavaScript:alert(2)) and [ok](/docs)';
    const say = Buffer.from(reply).toString('base64');
    const message = `<img src=x onerror=alert(1)> [x](javascript:alert(1)) [[say:${say}]]`;
    const page = await openSignedIn(ctx, S, K.live, '#/chat?employee=' + emp.id);
    const picker = await page.locator(byRole('combobox', 'Employee', THREAD)).waitHandle();
    await page.waitForFunction((s, id) => s.value === id, { timeout: UI }, picker, emp.id);
    await page.locator(byRole('textbox', 'Message', THREAD)).fill(message);
    await page.locator(byRole('button', 'Send', THREAD)).click();
    await lastReplyDone(page);
    await waitText(page, '<img src=x onerror=alert(1)>', { selector: MESSAGES });
    await waitText(page, 'Echo: <img src=x onerror=alert(1)>', { selector: MESSAGES });
    const found = await page.evaluate(() => {
      const bad = [];
      for (const el of document.querySelectorAll('*')) {
        if (el.tagName === 'IMG') bad.push('img ' + el.outerHTML);
        for (const a of el.attributes)
          if (/^\s*javascript:/i.test(a.value) || /^on/i.test(a.name))
            bad.push(`${el.tagName} ${a.name}="${a.value}"`);
      }
      return bad;
    });
    assert(found.length === 0, 'the DOM holds: ' + found.join('; '));
    assert(page.dialogs.length === 0, 'a dialog fired: ' + page.dialogs.join('; '));
    // the safe link is kept, as a link
    await page.locator(byRole('link', 'ok', MESSAGES)).wait();
  }, { browser });

  await test('chat: the conversation is listed; continue it, rate a reply, delete it',
             async (ctx) => {
    assert(convId, 'no conversation from the first chat test');
    const page = await openSignedIn(ctx, S, K.live, '#/chat/' + convId);
    const list = 'aside[aria-labelledby]';
    await page.locator(byRole('complementary', 'Conversations')).wait();
    await page.waitForFunction((id) => [...document.querySelectorAll('a[aria-current="page"]')]
      .some((a) => a.getAttribute('href') === '#/chat/' + id), { timeout: UI }, convId);
    await waitText(page, 'When are you open?', { selector: list });
    await heading(page, 'When are you open?');
    await page.waitForFunction((sel) => document.querySelectorAll(sel + ' > li').length === 2,
                               { timeout: UI }, MESSAGES);
    // continue
    await page.locator(byRole('textbox', 'Message', THREAD)).fill('And on Sundays?');
    await page.keyboard.press('Enter');
    await page.waitForFunction((sel) => document.querySelectorAll(sel + ' > li').length === 4,
                               { timeout: UI }, MESSAGES);
    await lastReplyDone(page);
    await waitText(page, 'You said: And on Sundays?', { selector: MESSAGES });
    await noAlert(page, THREAD);
    const conv = await S.api(K.live, 'GET', '/v1/conversations/' + convId);
    assert(conv.json.messages.length === 4, `the conversation has ${conv.json.messages.length}`);
    // rate the last reply 4 of 5
    const stars = await page.$$(byRole('button', '4 stars', MESSAGES));
    assert(stars.length === 2, `${stars.length} "4 stars" buttons`);
    const [res] = await Promise.all([
      page.waitForResponse((r) => r.url().endsWith('/feedback'), { timeout: UI }),
      stars[1].click(),
    ]);
    assert(res.status() === 200, 'feedback answered ' + res.status());
    await waitText(page, 'Rated 4 of 5', { selector: MESSAGES });
    const pressed = await page.$$eval(`${MESSAGES} [aria-pressed="true"]`, (b) => b.length);
    assert(pressed === 4, `${pressed} stars pressed`);
    const stats = await S.api(K.live, 'GET', `/v1/employees/${emp.id}/stats?period=24h`);
    assert(stats.json.ratings >= 1 && stats.json.satisfaction_score === 4,
           'the rating is not stored: ' + stats.text);
    await audit(page, 'chat-rated');
    // delete (asks first)
    await page.locator(byRole('button', 'Delete conversation')).click();
    await page.locator(byRole('button', 'Yes, delete conversation')).click();
    await page.waitForFunction(() => location.hash === '#/chat', { timeout: UI });
    await page.waitForFunction((id) => !document.querySelector(`a[href="#/chat/${id}"]`),
                               { timeout: UI }, convId);
    const gone = await S.api(K.live, 'GET', '/v1/conversations/' + convId);
    assert(gone.status === 404, 'the conversation is still there: ' + gone.status);
  }, { browser });
}

// The mock's scripted model ([[tools:B64]]): each step calls tools or says a text.
function toolScript(...steps) {
  return `[[tools:${Buffer.from(JSON.stringify(steps)).toString('base64')}]]`;
}
const toolCall = (name, args) => ({ name, arguments: args });

// A new employee of the org of 'key' with the tool rules 'rules'.
async function employeeWith(key, name, rules) {
  const e = (await S.api(key, 'POST', '/v1/employees',
                         { name, role: 'Operator', category: 'operations' })).json;
  assert(e && e.id, 'no employee created');
  const r = await S.api(key, 'PATCH', '/v1/employees/' + e.id, { tools: rules });
  assert(r.status === 200, 'rules refused: ' + r.text);
  return e;
}

// The tool calls shown in the last message: [{summary, open}].
function lastCalls(page) {
  return page.evaluate((sel) => {
    const items = [...document.querySelectorAll(sel + ' > li')];
    const last = items[items.length - 1];
    const list = last && last.querySelector('ol[aria-label="Tool calls"]');
    return list ? [...list.querySelectorAll('details')].map((d) => ({
      // textContent: a message off screen is not rendered (content-visibility), so it has no
      // innerText
      summary: d.querySelector('summary').textContent.replace(/\s+/g, ' ').trim(), open: d.open,
    })) : [];
  }, MESSAGES);
}

async function chatToolTests() {
  let emp = null;
  let convId = null;
  await test('chat: tool calls show as they happen, collapsed to tool and status, open to ' +
             'their arguments and result or error; the conversation read shows them again',
             async (ctx) => {
    emp = await employeeWith(K.live, 'Lookup', [{ name: 'knowledge.search', policy: 'auto' },
                                                { name: 'tasks.get', policy: 'auto' }]);
    const page = await openSignedIn(ctx, S, K.live, '#/chat?employee=' + emp.id);
    const picker = await page.locator(byRole('combobox', 'Employee', THREAD)).waitHandle();
    await page.waitForFunction((s, id) => s.value === id, { timeout: UI }, picker, emp.id);
    // Record the calls shown while the reply is still being written.
    await page.evaluate((sel) => {
      window.__calls = [];
      new MutationObserver(() => {
        const items = [...document.querySelectorAll(sel + ' > li')];
        const last = items[items.length - 1];
        if (!last || items.length < 2) return;
        const writing = [...last.querySelectorAll('[role="status"]')]
          .some((s) => /Writing/.test(s.textContent));
        const calls = [...last.querySelectorAll('ol[aria-label="Tool calls"] summary')]
          .map((x) => x.textContent.replace(/\s+/g, ' ').trim());
        if (writing && calls.length) window.__calls.push(calls.join(' | '));
      }).observe(document.body, { subtree: true, childList: true, characterData: true });
    }, MESSAGES);
    const missing = 'task_000000000000000000000000';
    const message = 'Look it up [[pause:1500]] ' + toolScript(
      { calls: [toolCall('knowledge__search', { query: 'refund policy' }),
                toolCall('tasks__get', { task_id: missing })] },
      { say: 'One lookup failed.' });
    await page.locator(byRole('textbox', 'Message', THREAD)).fill(message);
    await page.keyboard.press('Enter');
    await lastReplyDone(page);
    await waitText(page, 'One lookup failed.', { selector: `${MESSAGES} > li:last-child` });
    const seen = await page.evaluate(() => window.__calls);
    assert(seen.some((x) => /tasks\.get failed/i.test(x)),
           'the calls did not show before the reply was written: ' + JSON.stringify(seen));
    let calls = await lastCalls(page);
    assert(calls.length === 2, 'calls shown: ' + JSON.stringify(calls));
    assert(/^knowledge\.search completed$/i.test(calls[0].summary) &&
           /^tasks\.get failed$/i.test(calls[1].summary), 'calls: ' + JSON.stringify(calls));
    assert(!calls[0].open && !calls[1].open, 'a call is open by default');
    await noAlert(page, THREAD);
    // open the failed one: its arguments and error
    const summaries = await page.$$(`${MESSAGES} > li:last-child ol[aria-label="Tool calls"] ` +
                                    'summary');
    await summaries[1].click();
    const body = await waitText(page, 'task_not_found',
                                { selector: `${MESSAGES} > li:last-child details[open]` });
    assert(body.includes(missing) && /Arguments/.test(body) && /Error/.test(body),
           'the open call shows: ' + body);
    await summaries[0].click();
    await waitText(page, 'Result', { selector: `${MESSAGES} > li:last-child details[open]` });
    await audit(page, 'chat-tools');
    // the stored conversation shows the same calls
    await page.waitForFunction(() => /^#\/chat\/conv_/.test(location.hash), { timeout: UI });
    convId = await page.evaluate(() => location.hash.split('/')[2]);
    await page.reload({ waitUntil: 'load' });
    await page.waitForFunction((sel) => document.querySelectorAll(sel + ' > li').length === 2,
                               { timeout: UI }, MESSAGES);
    calls = await lastCalls(page);
    assert(calls.length === 2 && /tasks\.get failed/i.test(calls[1].summary),
           'read back: ' + JSON.stringify(calls));
  }, { browser });

  await test('chat: a reply stopped by a limit says so (repeated_call)', async (ctx) => {
    assert(emp && convId, 'no conversation from the tool calls test');
    const page = await openSignedIn(ctx, S, K.live, '#/chat/' + convId);
    await page.waitForFunction((sel) => document.querySelectorAll(sel + ' > li').length === 2,
                               { timeout: UI }, MESSAGES);
    const message = 'Again and again ' + toolScript(
      { calls: [toolCall('tasks__get', { task_id: 'task_000000000000000000000001' })] });
    await page.locator(byRole('textbox', 'Message', THREAD)).fill(message);
    await page.keyboard.press('Enter');
    await lastReplyDone(page);
    const note = await waitText(page, 'repeated_call', { selector: `${MESSAGES} > li:last-child` });
    assert(/same call a third time/.test(note), 'the reply does not say why: ' + note);
    const calls = await lastCalls(page);
    assert(calls.length === 2, 'calls shown: ' + JSON.stringify(calls));
    await noAlert(page, THREAD);
    await audit(page, 'chat-tools-stopped');
  }, { browser });
}

const DOC_NAME = 'refund-policy.txt';
const DOC_TEXT = `Refund policy

Customers may ask for a refund within 45 days of purchase. Refunds go back to the card that
paid, within 5 business days of the approval.

Gift cards and opened software are not refunded. A customer who disagrees can write to the
support team, which answers within two business days.
`;

async function knowledgeTests(tmp) {
  await test('knowledge: upload a text document with the file input, see its progress, then ' +
             'ready; search it and see a scored passage', async (ctx) => {
    const file = path.join(tmp, DOC_NAME);
    fs.writeFileSync(file, DOC_TEXT);
    const page = await openSignedIn(ctx, S, K.test, '#/knowledge');
    await heading(page, 'Knowledge');
    await audit(page, 'knowledge');
    const input = await labelled(page, 'Files');
    await input.uploadFile(file);
    await waitText(page, DOC_NAME, { selector: 'ul[aria-label="Chosen files"]' });
    // Record each state of the upload's progress bars ("Upload of …": bytes; then processing).
    await page.evaluate(() => {
      window.__progress = [];
      const look = () => {
        for (const p of document.querySelectorAll('progress[aria-label]'))
          window.__progress.push(`${p.getAttribute('aria-label')}=${p.value}/${p.max}`);
      };
      new MutationObserver(look).observe(document.body,
                                         { subtree: true, childList: true, attributes: true });
    });
    await page.locator(byRole('button', 'Upload')).click();
    const uploads = 'section[aria-labelledby="ups-h"]';
    await page.locator(byRole('region', "This session's uploads")).wait();
    await waitText(page, /\bready\b/i, { selector: uploads, timeout: WORK });
    await waitText(page, /\d+ chunks? indexed/, { selector: uploads });
    const seen = await page.evaluate(() => window.__progress);
    assert(seen.some((p) => p.startsWith('Upload of ' + DOC_NAME)),
           'no upload progress was shown: ' + JSON.stringify(seen.slice(0, 10)));
    // the documents list has it, ready
    await waitText(page, DOC_NAME, { selector: 'table' });
    await audit(page, 'knowledge-uploaded');
    // the search playground
    await page.locator(byRole('searchbox', 'Query')).fill('How long do customers have to ask ' +
                                                          'for a refund?');
    await page.locator(byRole('button', 'Search')).click();
    const results = 'ol';
    await waitText(page, /\d+ results? for/, { selector: 'section[aria-labelledby="search-h"]' });
    const hit = await waitText(page, 'within 45 days of purchase', { selector: results });
    assert(/score (0|1)\.\d{3}/.test(hit), 'no score in the result: ' + hit);
    await audit(page, 'knowledge-search');
    // the document's own page, from the result
    await page.locator(byRole('link', DOC_NAME, 'ol')).click();
    await heading(page, DOC_NAME);
    await page.locator(byRole('heading', 'Details')).wait();
    await waitText(page, /\bready\b/i, { selector: 'main dl' });
    await audit(page, 'knowledge-document');
  }, { browser });
}

async function taskTests() {
  const emp = EMP.find((e) => e.name === 'Noah') || EMP.find((e) => e.tier === 'starter');
  await test('tasks: a bad form shows the server\'s error at its field', async (ctx) => {
    const page = await openSignedIn(ctx, S, K.test, '#/tasks/new');
    await heading(page, 'New task');
    const who = await page.locator(byRole('combobox', 'Employee')).waitHandle();
    await page.waitForFunction((s) => s.options.length > 1, { timeout: UI }, who);
    await who.select(emp.id);
    await page.locator(byRole('button', 'Create task')).click(); // no title
    const text = await fieldError(page, 'Title', 'invalid_request');
    assert(text.length > 'invalid_request'.length + 5, 'no message at the field: ' + text);
    await audit(page, 'task-new-error');
  }, { browser, allow: [FAILED_STATUS(400)] });

  await test('tasks: create a task, see its run with a result, and see it on the board',
             async (ctx) => {
    const title = 'Summarize the refund policy';
    const page = await openSignedIn(ctx, S, K.test, '#/tasks');
    await heading(page, 'Tasks');
    await audit(page, 'tasks');
    await page.locator(byRole('link', 'New task')).click();
    await heading(page, 'New task');
    await page.locator(byRole('textbox', 'Title')).fill(title);
    await page.locator(byRole('textbox', 'Description (optional)'))
      .fill('Three bullet points for the **support** team.');
    const who = await page.locator(byRole('combobox', 'Employee')).waitHandle();
    await page.waitForFunction((s) => s.options.length > 1, { timeout: UI }, who);
    await who.select(emp.id);
    await page.locator(byRole('button', 'Create task')).click();
    await page.waitForFunction(() => /^#\/tasks\/task_/.test(location.hash), { timeout: UI });
    await heading(page, title);
    // it runs: the state becomes completed, and the run shows its result
    await waitText(page, /completed/i, { selector: 'h2', timeout: WORK });
    const runs = 'table';
    await waitText(page, /completed/i, { selector: runs, timeout: WORK });
    const summary = await page.waitForSelector(`${runs} summary`, { timeout: UI });
    await summary.click();
    const out = await waitText(page, /\S{3,}/, { selector: `${runs} details[open]` });
    assert(out.replace(/Result \([\d,]+\s+characters\)/, '').trim().length > 10,
           'the run has no result: ' + out);
    await audit(page, 'task');
    await page.locator(byRole('link', 'Edit')).click();
    await heading(page, 'Edit: ' + title);
    await page.locator(byRole('button', 'Save changes')).wait();
    await audit(page, 'task-edit');
    await page.locator(byRole('link', '← Back to the task')).click();
    await heading(page, title);
    // on the board, in its column
    await page.locator(byRole('link', '← All tasks')).click();
    await heading(page, 'Tasks');
    await waitText(page, title, { selector: 'ul[aria-label="Completed tasks"]', timeout: WORK });
  }, { browser });
}

// The control named 'name' with 'role' inside the step fieldset "Step n" of the workflow form.
async function stepControl(page, n, role, name) {
  const step = await page.locator(byRole('group', `Step ${n}`)).waitHandle();
  const el = await step.$(byRole(role, name));
  assert(el, `no ${role} "${name}" in Step ${n}`);
  return el;
}

async function workflowTests() {
  const emp = EMP.find((e) => e.name === 'Noah') || EMP.find((e) => e.tier === 'starter');

  await test('workflows: a bad form shows the server\'s error at the step and field it names',
             async (ctx) => {
    const page = await openSignedIn(ctx, S, K.test, '#/workflows/new');
    await heading(page, 'New workflow');
    await page.locator(byRole('textbox', 'Name')).fill('Broken');
    await page.locator(byRole('button', 'Add a step')).click();
    await page.locator(byRole('group', 'Step 2')).wait();
    // step 2 reads the output of a step that does not come before it
    const input = await stepControl(page, 2, 'textbox', 'Input');
    await input.evaluate((el) => { el.select(); });
    await input.type('{{steps[3].output}}');
    await page.locator(byRole('button', 'Create workflow')).click();
    const control = await stepControl(page, 2, 'textbox', 'Input');
    const text = await page.waitForFunction((el) => {
      if (el.getAttribute('aria-invalid') !== 'true') return false;
      const ids = (el.getAttribute('aria-describedby') || '').split(/\s+/).filter(Boolean);
      return ids.map((id) => (document.getElementById(id) || {}).textContent || '').join(' ');
    }, { timeout: UI, polling: 100 }, control).then((h) => h.jsonValue());
    assert(text.includes('invalid_request') && /steps\[1\]\.input|earlier step/.test(text),
           'the field does not show the server\'s error: ' + text);
    const focused = await control.evaluate((el) => el === document.activeElement);
    assert(focused, 'the field in error does not have the focus');
    assert(/^#\/workflows\/new/.test(await page.evaluate(() => location.hash)),
           'the bad form left the page');
    await audit(page, 'workflow-new-error');
  }, { browser, allow: [FAILED_STATUS(400)] });

  await test('workflows: create a two-step workflow, run it; the run view shows each step\'s ' +
             'output', async (ctx) => {
    const name = 'Refund answer';
    const page = await openSignedIn(ctx, S, K.test, '#/workflows');
    await heading(page, 'Workflows');
    await audit(page, 'workflows');
    await page.locator(byRole('link', 'New workflow')).click();
    await heading(page, 'New workflow');
    await page.locator(byRole('textbox', 'Name')).fill(name);
    const who1 = await stepControl(page, 1, 'combobox', 'Employee');
    await who1.select(emp.id);
    await page.locator(byRole('button', 'Add a step')).click();
    await page.locator(byRole('group', 'Step 2')).wait();
    const action2 = await stepControl(page, 2, 'combobox', 'Action');
    await action2.select('summarize');
    const in2 = await stepControl(page, 2, 'textbox', 'Input');
    assert((await in2.evaluate((el) => el.value)).includes('{{steps[0].output}}'),
           'step 2 does not read step 1');
    await page.locator(byRole('button', 'Create workflow')).click();
    await page.waitForFunction(() => /^#\/workflows\/wf_/.test(location.hash), { timeout: UI });
    await heading(page, name);
    await audit(page, 'workflow');
    const input = await page.locator(byRole('textbox', 'Input (a JSON object)')).waitHandle();
    await input.evaluate((el) => { el.select(); });
    await input.type('{"text": "How long do customers have to ask for a refund?"}');
    await page.locator(byRole('button', 'Run')).click();
    await page.waitForFunction(() => /^#\/workflows\/wf_[^/]+\/runs\//.test(location.hash),
                               { timeout: UI });
    await heading(page, 'Run of ' + name);
    await waitText(page, /2 of 2 steps done/, { selector: '[role="status"]', timeout: WORK });
    await waitText(page, /completed/i, { selector: '[role="status"]' });
    const steps = await page.evaluate(() => [...document.querySelectorAll('h3')]
      .filter((h) => /^Step \d+:/.test(h.textContent.trim()))
      .map((h) => {
        const li = h.closest('li');
        const out = [...li.querySelectorAll('h4')].find((x) => x.textContent.trim() === 'Output');
        return { step: h.textContent.trim(), status: li.innerText,
                 output: out && out.nextElementSibling ? out.nextElementSibling.innerText : '' };
      }));
    assert(steps.length === 2, `the run view shows ${steps.length} steps`);
    assert(/Step 1: Respond/.test(steps[0].step) && /Step 2: Summar/.test(steps[1].step),
           'the steps are ' + steps.map((x) => x.step).join(', '));
    for (const st of steps)
      assert(st.output.trim().length > 10, `${st.step} shows no output: "${st.output}"`);
    await audit(page, 'workflow-run');
  }, { browser });
}

async function errorTests(tmp) {
  await test('errors: a key without the knowledge scope sees 403 permission_denied on Knowledge',
             async (ctx) => {
    const key = S.createKey('acme', { mode: 'test', scopes: 'chat' });
    const page = await openSignedIn(ctx, S, key, '#/knowledge');
    await heading(page, 'Knowledge');
    const text = await waitAlert(page, 'permission_denied');
    assert(/403/.test(text) || text.length > 30, 'the alert says only ' + text);
    await notBlank(page);
    await audit(page, 'error-403');
  }, { browser, allow: [FAILED_STATUS(403)] });

  await test('errors: an upload over 50 MiB is refused with file_too_large', async (ctx) => {
    const big = path.join(tmp, 'too-large.txt');
    const fd = fs.openSync(big, 'w');
    fs.ftruncateSync(fd, 52428800 + 1); // sparse: no disk used
    fs.closeSync(fd);
    const page = await openSignedIn(ctx, S, K.test, '#/knowledge');
    await heading(page, 'Knowledge');
    const input = await labelled(page, 'Files');
    await input.uploadFile(big);
    await page.locator(byRole('button', 'Upload')).click();
    const text = await waitAlert(page, 'file_too_large', WORK);
    assert(/too large|50 MB|52,428,800/i.test(text), 'no explanation: ' + text);
    await notBlank(page);
    await audit(page, 'error-too-large');
  }, { browser, allow: [FAILED_STATUS(413)] });


  await test('errors: a 429 shows its message, its code and when to retry', async (ctx) => {
    const page = await openSignedIn(ctx, S, K.test);
    await heading(page, 'Employees');
    await page.setRequestInterception(true);
    page.on('request', (req) => {
      if (req.isInterceptResolutionHandled()) return;
      if (new URL(req.url()).pathname === '/v1/employees')
        req.respond({
          status: 429, contentType: 'application/json',
          headers: { 'Retry-After': '17', 'X-RateLimit-Limit': '60',
                     'X-RateLimit-Remaining': '0', 'X-RateLimit-Reset': '1900000000' },
          body: JSON.stringify({ error: { code: 'rate_limit_exceeded',
                                          message: 'Too many requests: 60 per minute.' } }),
        });
      else req.continue();
    });
    await goHash(page, '#/chat');
    await heading(page, 'Chat');
    await goHash(page, '#/employees');
    const text = await waitAlert(page, 'rate_limit_exceeded');
    assert(/Too many requests/.test(text), 'no message in: ' + text);
    assert(/17 s/.test(text), 'no retry time in: ' + text);
    await notBlank(page);
    await audit(page, 'error-429');
  }, { browser, allow: [FAILED_STATUS(429)] });

  // The cut: a reply whose second chunk is a minute away (the mock's [[slow:MS]]); the server is
  // killed once the first chunk shows. Once in a conversation already open, once in the first
  // message of a new one.
  const cut = async (ctx, fresh) => {
    if (!CUT.alive()) await CUT.restart();
    const emps = (await CUT.api(K.cut, 'GET', '/v1/employees?limit=1')).json.employees;
    const page = await openSignedIn(ctx, CUT, K.cut, '#/chat?employee=' + emps[0].id);
    const picker = await page.locator(byRole('combobox', 'Employee', THREAD)).waitHandle();
    await page.waitForFunction((s, id) => s.value === id, { timeout: UI }, picker, emps[0].id);
    let n = 0;
    if (!fresh) {
      await page.locator(byRole('textbox', 'Message', THREAD)).fill('Hello');
      await page.keyboard.press('Enter');
      await lastReplyDone(page);
      n = 2;
    }
    await page.locator(byRole('textbox', 'Message', THREAD)).fill('Cut me off [[slow:60000]]');
    await page.keyboard.press('Enter');
    const last = `${MESSAGES} > li:nth-child(${n + 2})`;
    await waitText(page, 'Hello from', { selector: last, timeout: WORK });
    await waitText(page, 'Writing', { selector: last });
    await CUT.kill();
    const text = await waitAlert(page, 'network_error', WORK);
    assert(text.trim().length > 'network_error'.length, 'the alert says only ' + text);
    await waitText(page, 'Hello from', { selector: last });
    await waitText(page, /incomplete/i, { selector: last });
    await heading(page, fresh ? /./ : 'Hello');
    await notBlank(page);
    await audit(page, 'error-stream-cut');
  };
  await test('errors: a stream cut midway (the server killed) shows network_error, keeps the ' +
             'partial reply', (ctx) => cut(ctx, false), { browser, allow: [NET_ERR] });
  await test('errors: a cut stream of a new conversation\'s first reply shows network_error, ' +
             'keeps the partial reply', (ctx) => cut(ctx, true), { browser, allow: [NET_ERR] });
}

// An OAuth 2.0 provider of GitHub's shape for the connect round trip: /authorize sends the
// browser straight back to the server's callback with a code (the user "allows"), /token
// answers a token for it, /user names the account.
async function startProvider() {
  const srv = http.createServer((req, res) => {
    const u = new URL(req.url, 'http://provider');
    if (u.pathname === '/authorize') {
      const back = new URL(u.searchParams.get('redirect_uri'));
      back.searchParams.set('code', 'browser-code');
      back.searchParams.set('state', u.searchParams.get('state'));
      res.writeHead(302, { Location: back.toString() });
      res.end();
    } else if (req.method === 'POST' && u.pathname === '/token') {
      req.resume();
      req.on('end', () => {
        res.writeHead(200, { 'Content-Type': 'application/json' });
        res.end(JSON.stringify({ access_token: 'gho_browser', token_type: 'bearer',
                                 scope: 'repo' }));
      });
    } else if (u.pathname === '/user') {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end('{"login":"octo-browser"}');
    } else {
      res.writeHead(404);
      res.end();
    }
  });
  await new Promise((resolve) => srv.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${srv.address().port}`, close: () => srv.close() };
}

async function integrationTests() {
  await test('integrations: connect is a round trip through the provider that comes back to ' +
             '#/integrations, connected; then disconnect', async (ctx) => {
    const page = await openSignedIn(ctx, S, K.test, '#/integrations');
    await page.locator(byRole('button', 'Connect GitHub')).click();
    await page.waitForFunction(() => location.pathname === '/console/' &&
      location.hash.startsWith('#/integrations') && !location.search, { timeout: WORK });
    await waitText(page, 'GitHub is connected.');
    await waitText(page, 'octo-browser');
    await heading(page, 'Integrations');
    await page.locator(byRole('button', 'Disconnect')).click();
    await page.locator(byRole('button', 'Yes, disconnect')).click();
    await until('GitHub disconnected', async () =>
      (await S.api(K.test, 'GET', '/v1/integrations')).json.integrations
        .find((i) => i.provider === 'github').status === 'available', UI);
    await audit(page, 'integrations-connected');
  }, { browser });
}

// Wait until the server item 'name' holds 'text'; returns its text.
async function serverItem(page, name, text, timeout = WORK) {
  const src = text instanceof RegExp ? { re: text.source, flags: text.flags } : { s: text };
  const h = await page.waitForFunction((n, src) => {
    const li = [...document.querySelectorAll('ul[aria-label="MCP servers"] > li')]
      .find((x) => x.querySelector('h2').textContent.trim() === n);
    if (!li) return false;
    const t = li.innerText;
    return (src.s !== undefined ? t.includes(src.s) : new RegExp(src.re, src.flags).test(t))
      ? t : false;
  }, { timeout, polling: 100 }, name, src);
  return h.jsonValue();
}

async function mcpTests() {
  const add = async (page, name, url, headers = []) => {
    await page.locator(byRole('textbox', 'Name')).fill(name);
    await page.locator(byRole('textbox', 'URL')).fill(url);
    for (let i = 0; i < headers.length; i++) {
      await page.locator(byRole('button', 'Add a header')).click();
      await (await labelled(page, `Header name, row ${i + 1}`)).type(headers[i][0]);
      await (await labelled(page, `Value, row ${i + 1}`)).type(headers[i][1]);
    }
    await page.locator(byRole('button', 'Add server')).click();
  };
  const serverOf = async (name) => (await S.api(K.test, 'GET', '/v1/mcp_servers?limit=100'))
    .json.mcp_servers.find((m) => m.name === name);

  await test('mcp: add a server with an Authorization header: status ok, its tools listed, the ' +
             'header\'s name shown and its value never', async (ctx) => {
    const page = await openSignedIn(ctx, S, K.test);
    await page.locator(byRole('link', 'MCP servers', 'nav[aria-label="Sections"]')).click();
    await heading(page, 'MCP servers');
    await waitText(page, 'No MCP server yet.', { selector: 'main' });
    await audit(page, 'mcp-empty');
    await add(page, 'crm', PEER.url('auth'), [['Authorization', 'Bearer s3cret']]);
    // /auth answers 401 without the header: ok means the header was sent
    const text = await serverItem(page, 'crm', /\bok\b/i);
    for (const t of ['echo', 'mcp.crm.echo', 'mcp.crm.files.read', 'Authorization', 'read'])
      assert(text.includes(t), `the server's item lacks ${t}: ${text}`);
    assert(/no rule can name it/.test(text), 'the tool "Bad Name!" is not marked: ' + text);
    // the value is nowhere: not in the page, not in the form's fields, not in the answer
    const html = await page.evaluate(() => document.documentElement.outerHTML +
      [...document.querySelectorAll('input')].map((i) => i.value).join(' '));
    assert(!html.includes('s3cret'), 'the header value is still in the page');
    assert(await valueOf(page, 'Name') === '', 'the form was not cleared');
    const m = await serverOf('crm');
    assert(m && m.status === 'ok' && JSON.stringify(m.header_names) === '["Authorization"]' &&
           !JSON.stringify(m).includes('s3cret'), 'the server: ' + JSON.stringify(m));
    // its tools are the organization's now
    const tools = (await S.api(K.test, 'GET', '/v1/tools')).json.tools.map((t) => t.name);
    assert(tools.includes('mcp.crm.echo'), 'GET /v1/tools: ' + tools.join(' '));
  }, { browser });

  await test('mcp: a server that cannot be reached is stored with status error and why; the ' +
             'name taken twice and a header without a value are shown at their fields',
             async (ctx) => {
    const port = await freePort(); // nothing listens there once freePort has closed it
    const page = await openSignedIn(ctx, S, K.test, '#/mcp');
    await heading(page, 'MCP servers');
    await add(page, 'down', `http://127.0.0.1:${port}/mcp`);
    const text = await serverItem(page, 'down', /Error:/);
    assert(/\berror\b/i.test(text) && text.length > 40, 'no error text: ' + text);
    assert((await serverOf('down')).status === 'error', 'stored without status error');
    await audit(page, 'mcp');
    // the name taken: 409 at Name
    await add(page, 'crm', PEER.url('json'));
    await fieldError(page, 'Name', 'mcp_server_name_taken');
    // a header without a value: at its value
    await page.locator(byRole('textbox', 'Name')).fill('other');
    await page.locator(byRole('button', 'Add a header')).click();
    await (await labelled(page, 'Header name, row 1')).type('X-Api-Key');
    await page.locator(byRole('button', 'Add server')).click();
    await fieldError(page, 'Value, row 1', 'invalid_request');
    await audit(page, 'mcp-form-error');
    assert(!await serverOf('other'), 'a server was stored from a refused form');
  }, { browser, allow: [FAILED_STATUS(400, 409)] });

  await test('mcp: disable and enable, refresh, delete after a confirmation', async (ctx) => {
    const page = await openSignedIn(ctx, S, K.test, '#/mcp');
    await heading(page, 'MCP servers');
    await serverItem(page, 'crm', /enabled/i, UI);
    await page.locator(byRole('button', 'Disable crm')).click();
    await serverItem(page, 'crm', /disabled/i, UI);
    assert((await serverOf('crm')).enabled === false, 'still enabled');
    const tools = (await S.api(K.test, 'GET', '/v1/tools')).json.tools.map((t) => t.name);
    assert(!tools.includes('mcp.crm.echo'), 'a disabled server\'s tools are listed');
    await page.locator(byRole('button', 'Enable crm')).click();
    await page.locator(byRole('button', 'Disable crm')).wait();
    assert((await serverOf('crm')).enabled === true, 'not enabled again');
    // refresh: the tool list is read again (a session of its own at the peer)
    const opened = async () => (await (await fetch(PEER.url('stats'))).json()).opened;
    const before = await opened();
    const [res] = await Promise.all([
      page.waitForResponse((r) => /\/refresh$/.test(r.url()), { timeout: WORK }),
      page.locator(byRole('button', 'Refresh crm')).click(),
    ]);
    assert(res.status() === 200, 'refresh answered ' + res.status());
    assert(await opened() > before, 'the peer was not read again');
    await serverItem(page, 'crm', /\bok\b/i, UI);
    // delete asks first
    await page.locator(byRole('button', 'Delete down')).click();
    await page.locator(byRole('button', 'Yes, delete down')).click();
    await page.waitForFunction(() => ![...document.querySelectorAll('ul[aria-label="MCP ' +
      'servers"] h2')].some((h) => h.textContent.trim() === 'down'), { timeout: UI });
    assert(!await serverOf('down'), 'down is still stored');
    await noAlert(page);
    await audit(page, 'mcp-list');
  }, { browser });
}

// An approval item of the inbox whose heading holds 'text' and whose text holds 'want': its
// text.
async function approvalItem(page, text, want, timeout = UI) {
  const src = want instanceof RegExp ? { re: want.source, flags: want.flags } : { s: want };
  try {
    const h = await page.waitForFunction((t, src) => {
      const li = [...document.querySelectorAll('ul[aria-label="Approvals"] > li')]
        .filter((x) => x.querySelector('h2').textContent.includes(t))
        .find((x) => (src.s !== undefined ? x.innerText.includes(src.s)
                                          : new RegExp(src.re, src.flags).test(x.innerText)));
      return li ? li.innerText : false;
    }, { timeout, polling: 100 }, text, src);
    return await h.jsonValue();
  } catch (e) {
    const seen = await page.evaluate(() => document.querySelector('main').innerText.slice(0, 600));
    throw new Error(`no approval "${text}" with ${want}: ${seen}`);
  }
}

async function approvalTests() {
  // deciding needs a key whose scopes name approvals; this one has what the pages need too
  const decider = S.createKey('acme', {
    mode: 'live', scopes: 'approvals,chat,conversations,employees:read,employees:write,tasks' });
  const emp = await employeeWith(K.live, 'Planner', [{ name: 'tasks.create', policy: 'approve' }]);
  const makeTask = (title) => 'Make a task ' + toolScript(
    { calls: [toolCall('tasks__create', { title })] }, { say: 'The task is made.' });
  // a chat turn paused on its approval, through the API: its approval
  const paused = async (key, title, who = emp) => {
    const r = await S.api(key, 'POST', '/v1/chat', { employee_id: who.id,
                                                     message: makeTask(title) });
    assert(r.status === 200 && r.json.status === 'requires_approval', 'not paused: ' + r.text);
    return { message: r.json, approval: r.json.tool_calls[0].approval_id };
  };
  const taskTitled = async (title) => (await S.api(K.live, 'GET',
    `/v1/tasks?employee_id=${emp.id}&limit=100`)).json.tasks.find((t) => t.title === title);
  const pendingCount = (page) => page.evaluate(() => {
    const c = document.querySelector('nav .nav-count .sr-only');
    return c ? c.textContent.trim() : '';
  });

  await test('approvals: a call to an approve tool pauses the chat reply, which links to the ' +
             'inbox; approved there, the task exists and the reply goes on to its end',
             async (ctx) => {
    const title = 'Order chairs';
    const chat = await openSignedIn(ctx, S, decider, '#/chat?employee=' + emp.id);
    const picker = await chat.locator(byRole('combobox', 'Employee', THREAD)).waitHandle();
    await chat.waitForFunction((s, id) => s.value === id, { timeout: UI }, picker, emp.id);
    await chat.locator(byRole('textbox', 'Message', THREAD)).fill(makeTask(title));
    await chat.keyboard.press('Enter');
    await lastReplyDone(chat);
    const note = await waitText(chat, 'Waiting for approval of tasks.create',
                                { selector: `${MESSAGES} > li:last-child` });
    assert(/goes on once it is decided/.test(note), note);
    const calls = await lastCalls(chat);
    assert(calls.length === 1 && /tasks\.create pending approval/i.test(calls[0].summary),
           'the call: ' + JSON.stringify(calls));
    await until('the navigation to count 1 pending', async () =>
      await pendingCount(chat) === '1 pending', UI);
    await noAlert(chat, THREAD);
    await audit(chat, 'chat-paused');
    await chat.waitForFunction(() => /^#\/chat\/conv_/.test(location.hash), { timeout: UI });
    const convHash = await chat.evaluate(() => location.hash);
    // a paused conversation takes no new message: 409, the text back in the composer
    await chat.locator(byRole('textbox', 'Message', THREAD)).fill('Are you there?');
    await chat.keyboard.press('Enter');
    await waitAlert(chat, 'conversation_busy');
    assert(await chat.$eval(byRole('textbox', 'Message', THREAD), (t) => t.value) ===
           'Are you there?', 'the refused message is not back in the composer');
    const n = await chat.$$eval(`${MESSAGES} > li`, (l) => l.length);
    assert(n === 2, `${n} messages shown after a refused one`);
    // the inbox, in a tab of its own (the chat stays open, and follows)
    const inbox = await openSignedIn(ctx, S, decider, convHash);
    await inbox.locator(byRole('link', 'Open the approvals inbox')).click();
    await inbox.waitForFunction(() => /^#\/approvals\/apr_/.test(location.hash),
                                { timeout: UI });
    await heading(inbox, 'Approval');
    const one = await approvalItem(inbox, 'tasks.create', title);
    assert(/Planner/.test(one) && /pending/i.test(one), 'the approval shows: ' + one);
    await audit(inbox, 'approval');
    await inbox.locator(byRole('link', '← All approvals')).click();
    await heading(inbox, 'Approvals');
    await approvalItem(inbox, 'tasks.create', title);
    await audit(inbox, 'approvals');
    await inbox.locator(byRole('button', 'Approve tasks.create')).click();
    await approvalItem(inbox, 'tasks.create', /approved/i);
    await until('the task to exist', () => taskTitled(title), WORK);
    await until('the navigation to count none pending', async () =>
      await pendingCount(inbox) === '', UI);
    // the chat tab reads the paused reply again and shows how it went on
    await chat.bringToFront();
    await waitText(chat, 'The task is made.', { selector: `${MESSAGES} > li:last-child`,
                                                timeout: WORK });
    const after = await lastCalls(chat);
    assert(after.length === 1 && /tasks\.create completed/i.test(after[0].summary),
           'the call after: ' + JSON.stringify(after));
  }, { browser, allow: [FAILED_STATUS(409)] });

  await test('approvals: approve with edited arguments: invalid JSON is refused in the page, ' +
             'the server\'s 400 is shown at the box, then the call runs with the new ones',
             async (ctx) => {
    const { approval } = await paused(decider, 'Order desks');
    const page = await openSignedIn(ctx, S, decider, '#/approvals');
    await approvalItem(page, 'tasks.create', 'Order desks');
    const sent = [];
    page.on('request', (r) => { if (/\/approve$/.test(r.url())) sent.push(r.postData()); });
    await page.locator(byRole('button', 'Approve with edited arguments of tasks.create')).click();
    const box = await labelled(page, 'Arguments to approve (JSON)');
    const retype = async (text) => {
      await box.evaluate((el) => el.select());
      await box.type(text);
      await page.locator(byRole('button', 'Approve with these arguments')).click();
    };
    await retype('{"title": "Order desks",');
    await fieldError(page, 'Arguments to approve (JSON)', 'invalid_json');
    assert(sent.length === 0, 'invalid JSON was sent: ' + sent.join(' '));
    await retype('{"title": 42}');
    const text = await fieldError(page, 'Arguments to approve (JSON)', 'invalid_request');
    assert(/title/.test(text), 'the server\'s error: ' + text);
    await audit(page, 'approval-edit-error');
    await retype('{"title": "Order standing desks", "priority": "high"}');
    await approvalItem(page, 'tasks.create', /approved/i);
    const task = await until('the task to exist', () => taskTitled('Order standing desks'), WORK);
    assert(task.priority === 'high', 'the task: ' + JSON.stringify(task));
    assert(!await taskTitled('Order desks'), 'the arguments asked for were used');
    const a = (await S.api(decider, 'GET', '/v1/approvals/' + approval)).json;
    assert(a.status === 'approved' && a.arguments.title === 'Order standing desks',
           'the approval: ' + JSON.stringify(a));
  }, { browser, allow: [FAILED_STATUS(400)] });

  await test('approvals: reject with a reason; a decision taken meanwhile elsewhere shows 409 ' +
             'approval_not_pending and the approval as it is', async (ctx) => {
    const first = await paused(decider, 'Buy a boat');
    const second = await paused(decider, 'Buy a plane');
    const page = await openSignedIn(ctx, S, decider, '#/approvals');
    await approvalItem(page, 'tasks.create', 'Buy a plane');
    // newest first
    const order = await page.$$eval('ul[aria-label="Approvals"] > li', (li) =>
      li.map((x) => (/Buy a (boat|plane)/.exec(x.innerText) || [''])[0]).filter(Boolean));
    assert(order.join() === 'Buy a plane,Buy a boat', 'the order: ' + order.join());
    const item = async (title) => page.evaluateHandle((t) => [...document
      .querySelectorAll('ul[aria-label="Approvals"] > li')].find((x) => x.innerText.includes(t)),
    title);
    const boat = await item('Buy a boat');
    await (await boat.$(byRole('button', 'Reject tasks.create'))).click();
    const reason = await labelled(page, 'Reason (optional, told to the employee)');
    await reason.type('Not in the budget');
    await page.locator(byRole('button', 'Reject the call')).click();
    await page.waitForFunction((li) => /rejected/i.test(li.innerText) &&
      li.innerText.includes('Not in the budget'), { timeout: UI }, boat);
    const a = (await S.api(decider, 'GET', '/v1/approvals/' + first.approval)).json;
    assert(a.status === 'rejected' && a.reason === 'Not in the budget', JSON.stringify(a));
    // the reply went on, told why
    await until('the rejected reply to end', async () => {
      const m = (await S.api(decider, 'GET', `/v1/conversations/${first.message.conversation_id}` +
                             `/messages/${first.message.id}`)).json;
      return m.status === 'completed' && m.tool_calls[0].status === 'rejected';
    }, WORK);
    assert(!await taskTitled('Buy a boat'), 'a rejected call made its task');
    // decided elsewhere, then here
    const r = await S.api(decider, 'POST', `/v1/approvals/${second.approval}/approve`, {});
    assert(r.status === 200, 'approve: ' + r.text);
    const plane = await item('Buy a plane');
    await (await plane.$(byRole('button', 'Approve tasks.create'))).click();
    const text = await waitAlert(page, 'approval_not_pending');
    assert(/409/.test(text), 'the alert: ' + text);
    await page.waitForFunction((li) => /approved/i.test(li.innerText), { timeout: UI }, plane);
    await audit(page, 'approvals-decided');
  }, { browser, allow: [FAILED_STATUS(409)] });

  await test('approvals: a key without scopes reads the inbox but cannot decide: the page says ' +
             'so and shows the 403', async (ctx) => {
    const { approval } = await paused(K.live, 'Sell the boat');
    const page = await openSignedIn(ctx, S, K.live, '#/approvals');
    await waitText(page, 'This key can read approvals but not decide them', { selector: 'main' });
    await approvalItem(page, 'tasks.create', 'Sell the boat');
    await page.locator(byRole('button', 'Approve tasks.create')).click();
    const text = await waitAlert(page, 'permission_denied');
    assert(/403/.test(text) && /approvals/.test(text), 'the alert: ' + text);
    await waitText(page, 'This key cannot decide approvals', { selector: 'ul' });
    await audit(page, 'approvals-403');
    const a = (await S.api(K.live, 'GET', '/v1/approvals/' + approval)).json;
    assert(a.status === 'pending', 'decided by a key without scopes: ' + a.status);
    await S.api(decider, 'POST', `/v1/approvals/${approval}/reject`, { reason: 'cleanup' });
  }, { browser, allow: [FAILED_STATUS(403)] });

  await test('approvals: the inbox filtered by employee pages with "Load more" (21 pending, ' +
             'newest first)', async (ctx) => {
    const batcher = await employeeWith(K.live, 'Batcher',
                                       [{ name: 'tasks.create', policy: 'approve' }]);
    const ids = [];
    for (let i = 0; i < 21; i++) ids.push((await paused(decider, `Batch ${i}`, batcher)).approval);
    try {
      const page = await openSignedIn(ctx, S, decider, '#/approvals');
      const who = await labelled(page, 'Employee');
      await page.waitForFunction((s) => s.options.length > 1, { timeout: UI }, who);
      await Promise.all([
        page.waitForResponse((r) => r.url().includes('/v1/approvals?') &&
                             r.url().includes('employee_id=' + batcher.id), { timeout: UI }),
        who.select(batcher.id),
      ]);
      await approvalItem(page, 'tasks.create for Batcher', 'Batch 20');
      await page.waitForFunction(() => [...document.querySelectorAll(
        'ul[aria-label="Approvals"] > li h2')].every((h) => /Batcher/.test(h.textContent)),
      { timeout: UI });
      const shown = () => page.$$eval('ul[aria-label="Approvals"] > li', (l) => l.length);
      assert(await shown() === 20, `${await shown()} shown on the first page`);
      await page.locator(byRole('button', 'Load more')).click();
      await approvalItem(page, 'tasks.create for Batcher', '"Batch 0"');
      assert(await shown() === 21, `${await shown()} shown after Load more`);
      const last = await page.$eval('ul[aria-label="Approvals"] > li:last-child',
                                    (l) => l.innerText);
      assert(last.includes('"Batch 0"'), 'the oldest is not last: ' + last);
    } finally {
      for (const id of ids)
        await S.api(decider, 'POST', `/v1/approvals/${id}/reject`, { reason: 'cleanup' });
    }
  }, { browser });
}

async function pageTests() {
  // Every page, opened fresh: it renders, with nothing from another host and no console error.
  const routes = [['Integrations', '#/integrations', 'integrations'],
                  ['Webhooks', '#/webhooks', 'webhooks']];
  for (const [name, hash, label] of routes) {
    await test(`page ${name}: renders, no other host, no console error`, async (ctx) => {
      const page = await openSignedIn(ctx, S, K.test, hash);
      await page.waitForFunction(() => document.querySelectorAll('main h1').length === 1 &&
        !document.querySelector('main [role="status"]'), { timeout: UI });
      await notBlank(page);
      await audit(page, label);
    }, { browser });
  }
  await test('page /docs: the API reference renders every operation, no other host, no ' +
             'console error', async (ctx) => {
    const page = await newPage(ctx);
    await page.goto(S.url + '/docs', { waitUntil: 'load' });
    // docs.js marks when every operation is in the DOM
    await page.waitForFunction(() => performance.getEntriesByName('docs:all-rendered').length &&
      document.querySelectorAll('h1').length === 1, { timeout: WORK, polling: 100 });
    await page.locator(byRole('link', 'Console')).wait();
    await notBlank(page);
    const ops = await page.evaluate(() => document.querySelectorAll('main h3, main h4').length);
    assert(ops > 20, `only ${ops} operation headings`);
  }, { browser });

  await test('page /docs (its first part, for axe): renders, no other host, no console error',
             async (ctx) => {
    // axe over the whole reference (about 21,000 elements) takes close to a minute on a loaded
    // 2-core machine. docs.js renders the sidebar, the introduction and the first tag at once and
    // the other tags in idle periods, with the same components: with idle callbacks held back,
    // axe sees the first part only, still and small.
    const page = await newPage(ctx);
    await page.evaluateOnNewDocument(() => {
      window.requestIdleCallback = () => 0;
      window.cancelIdleCallback = () => {};
    });
    await page.goto(S.url + '/docs', { waitUntil: 'load' });
    await page.waitForFunction(() => performance.getEntriesByName('docs:first-render').length &&
      document.querySelectorAll('h1').length === 1, { timeout: WORK, polling: 100 });
    await notBlank(page);
    await audit(page, 'docs', { fullPage: false });
  }, { browser });

  await test('page /docs/errors/<code>: an error\'s page renders, no other host, no console ' +
             'error', async (ctx) => {
    const page = await newPage(ctx);
    await page.goto(S.url + '/docs/errors/permission_denied', { waitUntil: 'load' });
    await waitText(page, 'permission_denied');
    await notBlank(page);
    await audit(page, 'docs-error');
  }, { browser });
}

// ---- People: sign-in with a password, users, keys, the audit log, roles ----

const PW = 'correct horse battery';
let P = {}; // the people of acme: owner, admin, developer, viewer ({id, email, password, ...})

// Sign in with an email and a password on the sign-in page; wait for the shell.
async function signInPassword(page, email, password) {
  const e = await page.locator(byRole('textbox', 'Email')).waitHandle();
  await e.type(email);
  await (await labelled(page, 'Password')).type(password);
  await page.keyboard.press('Enter');
  await page.locator(byRole('navigation', 'Sections')).wait();
}

async function openAs(ctx, who, hash = '') {
  const page = await open(ctx, S);
  await signInPassword(page, who.email, who.password);
  await page.waitForFunction(() => document.querySelectorAll('main h1').length === 1,
                             { timeout: UI, polling: 100 });
  if (hash) await goHash(page, hash);
  return page;
}

// The names of the navigation's entries.
const navNames = (page) => page.$$eval('nav[aria-label="Sections"] a',
                                       (as) => as.map((a) => a.textContent.trim()));

// The main part's rows of the table with caption or aria-label 'label', as text.
const rowsOf = (page, sel = 'main table tbody tr') => page.$$eval(sel,
  (trs) => trs.map((tr) => tr.innerText.replace(/\s+/g, ' ').trim()));

// Every page settled: one h1, no "Loading…" status left.
async function settled(page) {
  await page.waitForFunction(() => document.querySelectorAll('main h1').length === 1 &&
    ![...document.querySelectorAll('main [role="status"]')]
      .some((s) => /^Loading/.test(s.textContent)), { timeout: UI, polling: 100 });
}

async function peopleTests() {
  P.owner = await S.createUser('acme', 'owner@acme.test', 'owner', PW);
  P.admin = await S.createUser('acme', 'admin@acme.test', 'admin', PW);
  P.dev = await S.createUser('acme', 'dev@acme.test', 'developer', PW);
  P.viewer = await S.createUser('acme', 'viewer@acme.test', 'viewer', PW);

  await test('people: sign-in with email and password shows the user and role; sign-out ends ' +
             'the session at the server', async (ctx) => {
    const page = await open(ctx, S);
    await heading(page, 'Workforce console');
    await audit(page, 'signin-password');
    await signInPassword(page, P.owner.email, P.owner.password);
    await waitText(page, 'owner@acme.test', { selector: 'header' });
    await waitText(page, /owner/, { selector: 'header .who' });
    await waitText(page, /Live data/i, { selector: 'header' });
    const nav = await navNames(page);
    for (const n of ['Users & invitations', 'API keys', 'Audit log'])
      assert(nav.includes(n), `no ${n} in ${nav.join(', ')}`);
    // the session is the cookie's: a reload stays signed in
    await page.reload({ waitUntil: 'load' });
    await waitText(page, 'owner@acme.test', { selector: 'header' });
    const cookieSeen = await page.evaluate(() => document.cookie);
    assert(!/wf_session/.test(cookieSeen), 'the session cookie is readable by scripts');
    await page.locator(byRole('button', 'Sign out')).click();
    await page.locator(byRole('textbox', 'Email')).wait();
    // the session ended at the server: a reload is signed out too
    await page.reload({ waitUntil: 'load' });
    await page.locator(byRole('textbox', 'Email')).wait();
    await heading(page, 'Workforce console');
  }, { browser });

  await test('people: a wrong password and an unknown email show the same generic error',
             async (ctx) => {
    const texts = [];
    let page;
    for (const email of [P.owner.email, 'nobody@acme.test']) {
      page = await open(ctx, S);
      await (await page.locator(byRole('textbox', 'Email')).waitHandle()).type(email);
      await (await labelled(page, 'Password')).type('not the password');
      await page.keyboard.press('Enter');
      const t = await waitAlert(page, 'invalid_credentials');
      texts.push(t.replace(/\s+/g, ' ').trim());
    }
    await audit(page, 'signin-password-error');
    assert(/email or password is wrong/i.test(texts[0]), 'the alert: ' + texts[0]);
    assert(texts[0] === texts[1], `the two differ: "${texts[0]}" / "${texts[1]}"`);
    await heading(page, 'Workforce console');
  }, { browser, allow: [FAILED_STATUS(401)] });

  await test('people: the single sign-on error of ?error= is shown in words; no SSO button ' +
             'without the option', async (ctx) => {
    const page = await newPage(ctx);
    await page.goto(`${S.url}/console/#/sign-in?error=oidc_email_not_allowed`,
                    { waitUntil: 'load' });
    await waitAlert(page, 'oidc_email_not_allowed');
    await waitText(page, /no account here/, { selector: '[role="alert"]' });
    const sso = await page.$$eval('a', (as) => as.filter((a) => /single sign-on/i
      .test(a.textContent)).length);
    assert(sso === 0, 'an SSO link without the option');
    // a server that offers single sign-on (its answer stood in for here): the button is a
    // plain link to the start of the round trip
    const offered = await newPage(ctx);
    await offered.setRequestInterception(true);
    offered.on('request', (req) => (new URL(req.url()).pathname === '/v1/sessions/options'
      ? req.respond({ status: 200, contentType: 'application/json',
                      body: '{"password": true, "oidc": true}' })
      : req.continue()));
    await offered.goto(`${S.url}/console/`, { waitUntil: 'load' });
    const link = await offered.locator(byRole('link', 'Sign in with single sign-on'))
      .waitHandle();
    const href = await link.evaluate((a) => a.getAttribute('href'));
    assert(href === '/v1/sessions/oidc/start', 'the SSO link goes to ' + href);
    await audit(offered, 'signin-sso');
  }, { browser });

  await test('people: set-password from an invitation link, then sign in with it',
             async (ctx) => {
    const u = await S.createUser('acme', 'newbie@acme.test', 'member');
    const page = await newPage(ctx);
    await page.goto(`${S.url}/console/#/set-password?token=${u.token}`, { waitUntil: 'load' });
    await heading(page, 'Set your password');
    const pw = await labelled(page, 'New password');
    await pw.type('short');
    await (await labelled(page, 'The same password again')).type('short');
    await page.keyboard.press('Enter');
    await fieldError(page, 'New password', 'password_too_short');
    await audit(page, 'set-password');
    await pw.click({ count: 3 });
    await pw.type('a long enough password');
    const again = await labelled(page, 'The same password again');
    await again.click({ count: 3 });
    await again.type('a long enough password');
    await page.keyboard.press('Enter');
    await heading(page, 'Password set');
    await waitText(page, 'newbie@acme.test', { selector: 'main' });
    await page.locator(byRole('link', 'Go to sign-in')).click();
    await signInPassword(page, 'newbie@acme.test', 'a long enough password');
    await waitText(page, /member/, { selector: 'header .who' });
    // the link works once
    const r = await fetch(S.url + '/v1/users/set_password', {
      method: 'POST', headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ token: u.token, password: 'another long password' }) });
    assert(r.status === 400, 'a used token answered ' + r.status);
  }, { browser });

  await test('people: invite a colleague as member: the link shows once; the audit log shows ' +
             'the invitation', async (ctx) => {
    const page = await openAs(ctx, P.owner, '#/users');
    await heading(page, 'Users & invitations');
    await waitText(page, 'admin@acme.test', { selector: 'main table' });
    await (await labelled(page, 'Email')).type('colleague@acme.test');
    await (await labelled(page, 'Role')).select('member');
    await page.locator(byRole('button', 'Invite')).click();
    await waitText(page, 'The invitation of colleague@acme.test', { selector: 'main h2' });
    const link = await (await labelled(page, 'Set-password link')).evaluate((el) => el.value);
    assert(/\/console\/#\/set-password\?token=wfp_/.test(link), 'the link: ' + link);
    await waitText(page, 'colleague@acme.test', { selector: 'main table' });
    const shown = await (await labelled(page, 'Role of colleague@acme.test'))
      .evaluate((el) => el.value);
    assert(shown === 'member', 'the new row shows the role ' + shown);
    await audit(page, 'users');
    await page.locator(byRole('button', 'Done')).click();
    await page.waitForFunction(() => !document.body.innerText.includes('The invitation of'),
                               { timeout: UI });
    const users = (await S.sapi(await S.session(P.owner.email, PW), 'GET', '/v1/users')).json;
    const col = users.users.find((x) => x.email === 'colleague@acme.test');
    assert(col && col.role === 'member', 'not stored as member: ' + JSON.stringify(col));
    // the audit log: newest first, the invitation on top of the user.create rows
    await page.locator(byRole('link', 'Audit log', 'nav[aria-label="Sections"]')).click();
    await heading(page, 'Audit log');
    await waitText(page, col.id, { selector: 'main table' });
    const rows = await rowsOf(page);
    const first = rows.find((t) => t.includes('user.create'));
    assert(first && first.includes(col.id) && first.includes('owner@acme.test'),
           'the newest user.create: ' + first);
    await audit(page, 'audit-log');
  }, { browser });

  await test('people: change a role, disable and enable, delete; the last owner stays ' +
             '(409 last_owner shown)', async (ctx) => {
    const u = await S.createUser('acme', 'temp@acme.test', 'viewer');
    const page = await openAs(ctx, P.owner, '#/users');
    await waitText(page, 'temp@acme.test', { selector: 'main table' });
    await (await labelled(page, 'Role of temp@acme.test')).select('developer');
    await until('the role stored', async () => (await S.sapi(await S.session(P.owner.email, PW),
      'GET', '/v1/users/' + u.id)).json.role === 'developer', UI);
    await page.locator(byRole('button', 'Disable temp@acme.test')).click();
    await page.locator(byRole('button', 'Enable temp@acme.test')).wait();
    await page.locator(byRole('button', 'Enable temp@acme.test')).click();
    await page.locator(byRole('button', 'Disable temp@acme.test')).wait();
    await page.locator(byRole('button', 'Delete temp@acme.test')).click();
    await page.locator(byRole('button', 'Yes, delete temp@acme.test')).click();
    await page.waitForFunction(() => !document.querySelector('main table').innerText
      .includes('temp@acme.test'), { timeout: UI });
    // the only owner cannot stop being one
    await (await labelled(page, 'Role of owner@acme.test')).select('admin');
    const t = await waitAlert(page, 'last_owner');
    assert(/409/.test(t), 'the alert: ' + t);
  }, { browser, allow: [FAILED_STATUS(409)] });

  await test('people: an admin cannot pick owner, and cannot change an owner', async (ctx) => {
    const page = await openAs(ctx, P.admin, '#/users');
    await waitText(page, 'owner@acme.test', { selector: 'main table' });
    const roles = await (await labelled(page, 'Role')).evaluate(
      (s) => [...s.options].map((o) => o.value));
    assert(!roles.includes('owner') && roles.includes('admin'), 'roles offered: ' + roles);
    const ownerRow = (await rowsOf(page)).find((r) => r.includes('owner@acme.test'));
    assert(ownerRow, 'no owner row');
    const controls = await page.$$eval('main table tbody tr', (trs) => trs
      .filter((tr) => tr.innerText.includes('owner@acme.test'))
      .map((tr) => tr.querySelectorAll('button, select').length));
    assert(controls[0] === 0, `the owner's row has ${controls[0]} controls for an admin`);
    for (const sel of await page.$$('main table select')) {
      const opts = await sel.evaluate((s) => [...s.options].map((o) => o.value));
      assert(!opts.includes('owner'), 'a row offers owner: ' + opts);
    }
    // an admin is offered live keys
    await goHash(page, '#/keys');
    const modes = await (await labelled(page, 'Mode')).evaluate(
      (s) => [...s.options].map((o) => o.value));
    assert(modes.includes('live'), 'modes offered to an admin: ' + modes);
  }, { browser });

  await test('people: API keys: a developer creates a test key (the secret once), uses it, ' +
             'deletes it; no live mode offered', async (ctx) => {
    const page = await openAs(ctx, P.dev, '#/keys');
    await heading(page, 'API keys');
    const nav = await navNames(page);
    assert(nav.includes('API keys') && !nav.includes('Users & invitations') &&
           !nav.includes('Audit log'), 'a developer\'s navigation: ' + nav.join(', '));
    const modes = await (await labelled(page, 'Mode')).evaluate(
      (s) => [...s.options].map((o) => o.value));
    assert(modes.join() === 'test', 'modes offered to a developer: ' + modes);
    await (await labelled(page, 'Name')).type('CI key');
    await page.locator('main ::-p-aria([name="tasks"][role="checkbox"])').click();
    const day = new Date(Date.now() + 30 * 86400_000).toISOString().slice(0, 10);
    const exp = await labelled(page, 'Expires (optional)');
    await exp.evaluate((el, v) => {
      const set = Object.getOwnPropertyDescriptor(HTMLInputElement.prototype, 'value').set;
      set.call(el, v);
      el.dispatchEvent(new Event('input', { bubbles: true }));
    }, day);
    await page.locator(byRole('button', 'Create key')).click();
    await waitText(page, 'The secret of CI key', { selector: 'main h2' });
    const secret = await (await labelled(page, 'Secret')).evaluate((el) => el.value);
    assert(/^svc_test_sk_/.test(secret), 'the secret: ' + secret.slice(0, 14));
    const acct = await S.api(secret, 'GET', '/v1/account');
    assert(acct.status === 200 && acct.json.key.scopes.join() === 'tasks',
           'the new key: ' + acct.text);
    await waitText(page, /CI key[\s\S]*\btest\b[\s\S]*\btasks\b/, { selector: 'main table' });
    await audit(page, 'keys');
    await page.locator(byRole('button', 'Done')).click();
    const gone = await page.evaluate(() => !document.body.innerText.includes(
      'The secret of CI key'));
    assert(gone, 'the secret is still shown');
    await page.locator(byRole('button', 'Delete CI key')).click();
    await page.locator(byRole('button', 'Yes, delete ci key')).click();
    await page.waitForFunction(() => !(document.querySelector('main table') || {
      innerText: '' }).innerText.includes('CI key'), { timeout: UI });
    assert((await S.api(secret, 'GET', '/v1/account')).status === 401, 'the key still works');
  }, { browser });

  await test('people: audit log filters (action, actor, since) and "Load more" paging',
             async (ctx) => {
    // 55 user.update events by the owner
    const ses = await S.session(P.owner.email, PW);
    for (let i = 0; i < 55; i++) {
      const r = await S.sapi(ses, 'PATCH', '/v1/users/' + P.viewer.id, { name: 'Viewer ' + i });
      assert(r.status === 200, 'update: ' + r.text);
    }
    const page = await openAs(ctx, P.owner, '#/audit');
    await heading(page, 'Audit log');
    await (await labelled(page, 'Action')).type('user.update');
    await page.locator(byRole('button', 'Filter')).click();
    await page.waitForFunction(() => /action=user\.update/.test(location.hash), { timeout: UI });
    await page.waitForFunction(() => {
      const rows = [...document.querySelectorAll('main table tbody tr')];
      return rows.length === 50 && rows.every((r) => r.innerText.includes('user.update'));
    }, { timeout: UI, polling: 100 });
    await page.locator(byRole('button', 'Load more')).click();
    await page.waitForFunction(() => document.querySelectorAll('main table tbody tr')
      .length >= 55, { timeout: UI, polling: 100 });
    const rows = await rowsOf(page);
    assert(rows.every((r) => r.includes('user.update')), 'another action after "Load more"');
    // newest first: the times shown do not grow down the table
    const times = await page.$$eval('main table tbody tr time',
                                    (ts) => ts.map((t) => Date.parse(t.getAttribute('datetime'))));
    for (let i = 1; i < times.length; i++) assert(times[i] <= times[i - 1], 'not newest first');
    // by actor: the developer's events only (its sign-ins), none of the owner's
    await goHash(page, '#/audit?actor_id=' + P.dev.id);
    await page.waitForFunction(() => {
      const rows = [...document.querySelectorAll('main table tbody tr')];
      return rows.length > 0 && rows.every((r) => r.innerText.includes('dev@acme.test'));
    }, { timeout: UI, polling: 100 });
    assert((await (await labelled(page, 'Actor id')).evaluate((el) => el.value)) === P.dev.id,
           'the actor filter field does not show the address\'s filter');
    // since a time to come: nothing
    const later = Math.floor(Date.now() / 1000) + 3600;
    await goHash(page, '#/audit?since=' + later);
    await waitText(page, 'No event matches these filters', { selector: 'main' });
    await audit(page, 'audit-log-filtered');
  }, { browser });

  await test('people: change password ends the session; the new password signs in',
             async (ctx) => {
    const u = await S.createUser('acme', 'changer@acme.test', 'member', PW);
    const page = await openAs(ctx, u, '#/account');
    await heading(page, 'Account');
    await waitText(page, 'changer@acme.test', { selector: 'main' });
    await (await labelled(page, 'Current password')).type(PW);
    await (await labelled(page, 'New password')).type('a brand new password');
    await (await labelled(page, 'The new password again')).type('a brand new password');
    await audit(page, 'account-session');
    await page.locator(byRole('button', 'Change password')).click();
    await waitText(page, 'sign in with the new one', { selector: 'main' });
    await signInPassword(page, u.email, 'a brand new password');
    await waitText(page, 'changer@acme.test', { selector: 'header' });
  }, { browser, allow: [FAILED_STATUS(401)] });

  await test('people: a viewer finds no control the server would refuse, on every page, and ' +
             'no entry for users, keys or the audit log', async (ctx) => {
    const page = await openAs(ctx, P.viewer);
    const nav = await navNames(page);
    for (const n of ['Users & invitations', 'API keys', 'Audit log', 'Webhooks & events'])
      assert(!nav.includes(n), `a viewer sees ${n}`);
    // the buttons a viewer may see: they read, or are the viewer's own (its password)
    const READ = /^(Refresh|Load more|Retry|Filter|Search|Clear filters|Sign out|Switch to (test|live) data|Change password|About this error|Skip to content|Copy URL)$/;
    const WRITE_LINK = /^(New|Edit|Create|Chat with|Add|Invite|Delete)\b/;
    const visit = async (hash) => {
      await goHash(page, hash);
      await settled(page);
      const found = await page.evaluate(() => ({
        buttons: [...document.querySelectorAll('button, [role="button"], input[type="submit"]')]
          .filter((b) => b.offsetParent !== null)
          .map((b) => (b.getAttribute('aria-label') || b.innerText || b.value || '')
            .replace(/\s+/g, ' ').trim()),
        links: [...document.querySelectorAll('main a')].map((a) => a.innerText.trim()),
        writing: document.querySelectorAll('main textarea, main input[type="file"]').length,
      }));
      const bad = found.buttons.filter((b) => !READ.test(b));
      assert(!bad.length, `${hash}: write controls for a viewer: ${bad.join(', ')}`);
      const links = found.links.filter((l) => WRITE_LINK.test(l));
      assert(!links.length, `${hash}: write links for a viewer: ${links.join(', ')}`);
      assert(!found.writing, `${hash}: a text area or file input for a viewer`);
    };
    // the pages of one thing each, where the org has one: live data, then test data (the
    // header's switch)
    const first = async (key, p, k) => {
      const r = await S.api(key, 'GET', p);
      return r.status === 200 && r.json[k] && r.json[k][0] ? r.json[k][0].id : null;
    };
    const ones = [['/v1/employees?limit=1', 'employees', '#/employees/'],
                  ['/v1/conversations?limit=1', 'conversations', '#/chat/'],
                  ['/v1/tasks?limit=1', 'tasks', '#/tasks/'],
                  ['/v1/workflows?limit=1', 'workflows', '#/workflows/'],
                  ['/v1/knowledge/documents?limit=1', 'documents', '#/knowledge/'],
                  ['/v1/approvals?limit=1', 'approvals', '#/approvals/']];
    const kinds = new Set();
    for (const [mode, key] of [['live', K.live], ['test', K.test]]) {
      if (mode === 'test') {
        await goHash(page, '#/employees');
        await page.locator(byRole('button', 'Switch to test data')).click();
        await waitText(page, 'Test mode', { selector: 'header' });
      }
      for (const h of ['#/employees', '#/chat', '#/approvals', '#/knowledge', '#/tasks',
                       '#/workflows', '#/integrations', '#/mcp', '#/billing', '#/account'])
        await visit(h);
      for (const [p, k, h] of ones) {
        const id = await first(key, p, k);
        if (!id) continue;
        await visit(h + id);
        kinds.add(k);
      }
    }
    assert(kinds.size >= 5, 'the pages of one thing visited: ' + [...kinds].join(', '));
    await audit(page, 'viewer-approvals');
    // a page above the role, by its address: no request, a notice
    await goHash(page, '#/users');
    await waitText(page, 'Your role (viewer) does not open this page', { selector: 'main' });
    await audit(page, 'viewer-refused');
  }, { browser });
}

// ---- Billing: the balance, buying credits through Stripe's pay page, the ledger, usage ----

// Stripe's side (the stand-in's config) and the server's settings that match it: two live packs
// and one test pack.
const STRIPE_KEYS = { live: 'sk_live_browser_4eC39HqLyjWDarjtT1zdp7dc',
                      test: 'sk_test_browser_4eC39HqLyjWDarjtT1zdp7dc' };
const STRIPE_HOOKS = { live: 'whsec_browser_live_8f2a', test: 'whsec_browser_test_51c9' };
const STRIPE_CONFIG = {
  secret_keys: STRIPE_KEYS,
  prices: { live: { price_browser_1k: { unit_amount: 1000, currency: 'usd' },
                    price_browser_5k: { unit_amount: 4500, currency: 'usd' } },
            test: { price_browser_test_1k: { unit_amount: 1000, currency: 'usd' } } },
  webhook_secrets: STRIPE_HOOKS,
};
const stripeEnv = (url) => ({
  WORKFORCE_STRIPE_API_URL: url,
  WORKFORCE_STRIPE_SECRET_KEY: STRIPE_KEYS.live,
  WORKFORCE_STRIPE_WEBHOOK_SECRET: STRIPE_HOOKS.live,
  WORKFORCE_CREDIT_PACKS: 'price_browser_1k:1000,price_browser_5k:5000',
  WORKFORCE_STRIPE_TEST_SECRET_KEY: STRIPE_KEYS.test,
  WORKFORCE_STRIPE_TEST_WEBHOOK_SECRET: STRIPE_HOOKS.test,
  WORKFORCE_TEST_CREDIT_PACKS: 'price_browser_test_1k:1000',
});

const LEDGER = 'main table[aria-label="Credit transactions"] tbody tr';
// Chromium asks Stripe's page for its icon, which the stand-in does not have.
const STRIPE_FAVICON = /status of 404\b.*\/favicon\.ico\)$/;

// The number of the page's "Credits remaining" (null while it is not shown).
const balanceShown = (page) => page.evaluate(() => {
  const dt = [...document.querySelectorAll('main dt')]
    .find((d) => d.textContent.trim() === 'Credits remaining');
  if (!dt || !dt.nextElementSibling) return null;
  const n = Number(dt.nextElementSibling.textContent.replace(/[^0-9-]/g, ''));
  return Number.isFinite(n) ? n : null;
});

// The names of the pack buttons shown ("Buy 1,000 credits", ...).
const buyButtons = (page) => page.$$eval('main button', (bs) => bs
  .map((b) => b.textContent.replace(/\s+/g, ' ').trim()).filter((t) => /^Buy\b/.test(t)));

// The packs listed, once listed: their headings.
async function packsShown(page, n) {
  const h = await page.waitForFunction((n) => {
    const items = [...document.querySelectorAll('main ul[aria-label="Credit packs"] > li h3')];
    return items.length === n && items.map((i) => i.textContent.trim());
  }, { timeout: UI, polling: 100 }, n);
  return h.jsonValue();
}

// The ledger rows once every one of the (at least 'min') rows holds 'text'.
async function ledgerRows(page, min, text, max = Infinity) {
  try {
    await page.waitForFunction((sel, min, max, text) => {
      const rows = [...document.querySelectorAll(sel)];
      return rows.length >= min && rows.length <= max &&
        rows.every((r) => r.innerText.includes(text));
    }, { timeout: UI, polling: 100 }, LEDGER, min, max, text);
  } catch (e) {
    const rows = await rowsOf(page, LEDGER);
    throw new Error(`the ledger: ${rows.length} rows, not ${min}..${max} all of "${text}": ` +
                    rows.slice(0, 5).join(' | '));
  }
  return rowsOf(page, LEDGER);
}

// The times of the ledger's rows (ms), as they are shown.
const ledgerTimes = (page) => page.$$eval(LEDGER + ' time',
                                          (ts) => ts.map((t) => Date.parse(t.dateTime)));

async function billingTests() {
  await test('billing: an owner buys a test pack on Stripe\'s pay page; back on the page the ' +
             'credits arrive, the balance and the header show them, and the ledger lists the ' +
             'purchase with its checkout session', async (ctx) => {
    allowOrigin(STRIPE.url); // this test's browser goes to Stripe's page, and only this one
    try {
      const before = (await S.api(K.test, 'GET', '/v1/account')).json.credits_remaining;
      const page = await openAs(ctx, P.owner);
      // live data first: the live packs
      await goHash(page, '#/billing');
      await heading(page, 'Billing');
      const live = await packsShown(page, 2);
      assert(live.join() === '1,000 credits,5,000 credits', 'the live packs: ' + live.join());
      await page.locator(byRole('button', 'Switch to test data')).click();
      await waitText(page, 'Test mode', { selector: 'header' });
      const testPacks = await packsShown(page, 1);
      assert(testPacks[0] === '1,000 credits', 'the test pack: ' + testPacks[0]);
      await until('the test balance shown', async () => await balanceShown(page) === before, UI);
      await waitText(page, 'Test: Stripe\'s test mode', { selector: 'main' });
      await audit(page, 'billing-owner');
      // Buy: the browser goes to Stripe's page for the session the server made
      const buy = await page.locator(byRole('button', 'Buy 1,000 credits')).waitHandle();
      await Promise.all([page.waitForNavigation({ waitUntil: 'load', timeout: WORK }),
                         buy.click()]);
      const pay = new URL(page.url());
      assert(pay.origin === STRIPE.url && /^\/pay\/cs_test_/.test(pay.pathname),
             'not on Stripe\'s pay page: ' + page.url());
      const cs = pay.pathname.split('/').pop();
      const made = (await STRIPE.requests())
        .filter((r) => r.method === 'POST' && r.path === '/v1/checkout/sessions').pop();
      assert(made, 'the server never asked Stripe for a checkout session');
      const back = S.url + '/console/#/billing?checkout=';
      assert(made.form.success_url === back + 'success' &&
             made.form.cancel_url === back + 'cancelled',
             `the urls sent to Stripe: ${made.form.success_url} ${made.form.cancel_url}`);
      assert(made.form['line_items[0][price]'] === 'price_browser_test_1k',
             'the price sent to Stripe: ' + made.form['line_items[0][price]']);
      // Pay: Stripe tells the server (its webhook) and sends the browser back
      await Promise.all([page.waitForNavigation({ waitUntil: 'load', timeout: WORK }),
                         page.locator(byRole('button', 'Pay')).click()]);
      await page.waitForFunction((u) => location.href === u, { timeout: UI }, back + 'success');
      await heading(page, 'Billing');
      // the tab still looks at test data (the console loaded again, from Stripe's redirect)
      await waitText(page, 'Test mode', { selector: 'header' });
      await waitText(page, 'Test: Stripe\'s test mode', { selector: 'main' });
      await waitText(page, '1,000 credits were added', { selector: 'main [role="status"]' });
      await until('the balance shown to grow by 1,000',
                  async () => await balanceShown(page) === before + 1000, UI);
      const after = (await S.api(K.test, 'GET', '/v1/account')).json.credits_remaining;
      assert(after === before + 1000, `the test balance is ${after}, not ${before} + 1000`);
      await waitText(page, `${after} credits`, { selector: 'header' });
      const rows = await ledgerRows(page, 1, '');
      assert(rows[0].includes('Purchase') && rows[0].includes('+1,000') && rows[0].includes(cs),
             'the newest ledger entry: ' + rows[0]);
      const d = (await STRIPE.deliveries()).filter((x) => x.type === 'checkout.session.completed');
      assert(d.length === 1 && d[0].status === 200, 'the deliveries: ' + JSON.stringify(d));
      await audit(page, 'billing-owner-bought');
    } finally {
      disallowOrigin(STRIPE.url);
    }
  }, { browser, timeout: 120_000, allow: [STRIPE_FAVICON] });

  await test('billing: cancelling on Stripe\'s page comes back saying nothing was charged; ' +
             'the balance is as it was', async (ctx) => {
    allowOrigin(STRIPE.url);
    try {
      const before = (await S.api(K.test, 'GET', '/v1/account')).json.credits_remaining;
      const page = await openAs(ctx, P.owner, '#/billing');
      await heading(page, 'Billing');
      await page.locator(byRole('button', 'Switch to test data')).click();
      await waitText(page, 'Test mode', { selector: 'header' });
      const buy = await page.locator(byRole('button', 'Buy 1,000 credits')).waitHandle();
      await Promise.all([page.waitForNavigation({ waitUntil: 'load', timeout: WORK }),
                         buy.click()]);
      assert(page.url().startsWith(STRIPE.url + '/pay/'), 'not on Stripe\'s page: ' + page.url());
      await Promise.all([page.waitForNavigation({ waitUntil: 'load', timeout: WORK }),
                         page.locator(byRole('link', 'Cancel')).click()]);
      await page.waitForFunction((u) => location.href === u, { timeout: UI },
                                 S.url + '/console/#/billing?checkout=cancelled');
      await waitText(page, 'The checkout was cancelled: nothing was charged', {
        selector: 'main [role="status"]' });
      await until('the balance shown', async () => await balanceShown(page) === before, UI);
      const after = (await S.api(K.test, 'GET', '/v1/account')).json.credits_remaining;
      assert(after === before, `the test balance went from ${before} to ${after}`);
      await audit(page, 'billing-cancelled');
    } finally {
      disallowOrigin(STRIPE.url);
    }
  }, { browser, timeout: 120_000, allow: [STRIPE_FAVICON] });

  await test('billing: Stripe failing shows upstream_error at the pack, and the browser stays ' +
             'on the page', async (ctx) => {
    const page = await openAs(ctx, P.owner, '#/billing');
    await heading(page, 'Billing');
    await packsShown(page, 2);
    await STRIPE.fail(10, 500);
    try {
      await page.locator(byRole('button', 'Buy 5,000 credits')).click();
      const text = await waitAlert(page, 'upstream_error', WORK);
      assert(/HTTP 502/.test(text), 'the error shown: ' + text);
      assert(new URL(page.url()).hash === '#/billing', 'the page left: ' + page.url());
      await page.locator(byRole('button', 'Buy 5,000 credits')).wait(); // it can be tried again
    } finally {
      await STRIPE.fail(0, 500);
    }
  }, { browser, allow: [FAILED_STATUS(502)] });

  await test('billing: a key whose scopes name billing sees Buy; a key without a scope list ' +
             'reads the page but does not', async (ctx) => {
    const buyer = S.createKey('acme', { mode: 'test', scopes: 'billing,employees:read' });
    const page = await openSignedIn(ctx, S, buyer, '#/billing');
    await heading(page, 'Billing');
    await packsShown(page, 1);
    await page.locator(byRole('button', 'Buy 1,000 credits')).wait();
    await page.locator(byRole('button', 'Sign out')).click();
    await signIn(page, K.test);
    await goHash(page, '#/billing');
    await heading(page, 'Billing');
    await packsShown(page, 1);
    await waitText(page, 'Buying needs a key whose scopes name billing', { selector: 'main' });
    const buys = await buyButtons(page);
    assert(!buys.length, 'a key without scopes sees ' + buys.join(', '));
  }, { browser });

  for (const who of ['admin', 'viewer']) {
    await test(`billing: ${who === 'admin' ? 'an' : 'a'} ${who} sees the balance, the packs, ` +
               'the ledger and the usage, and no Buy; the server refuses its checkout too',
               async (ctx) => {
      const u = P[who];
      const page = await openAs(ctx, u);
      assert((await navNames(page)).includes('Billing'), `no Billing in the ${who}'s navigation`);
      await goHash(page, '#/billing');
      await heading(page, 'Billing');
      await packsShown(page, 2);
      await settled(page);
      await waitText(page, 'Only an owner of the organization can buy credits', {
        selector: 'main' });
      const buys = await buyButtons(page);
      assert(!buys.length, `a ${who} sees ${buys.join(', ')}`);
      assert(await balanceShown(page) !== null, 'no balance shown');
      await page.locator('main ::-p-aria([name="Credit transactions"][role="table"])').wait();
      await page.locator('main ::-p-aria([name="Credits per day"][role="table"])').wait();
      await noAlert(page);
      // what the page hides, the server refuses
      const ses = await S.session(u.email, PW);
      const r = await S.sapi(ses, 'POST', '/v1/billing/checkout', {
        price_id: 'price_browser_1k', success_url: S.url + '/console/',
        cancel_url: S.url + '/console/' });
      assert(r.status === 403 && r.json && r.json.error.code === 'permission_denied',
             `a ${who}'s checkout: ${r.status} ${r.text}`);
      await audit(page, 'billing-' + who);
    }, { browser });
  }

  await test('billing: the usage chart draws a bar for today\'s live chats and one for their ' +
             'employee, with the API\'s figures in its tables', async (ctx) => {
    const emp = LIVE_EMP.find((e) => e.name === 'Noah') || LIVE_EMP[0];
    for (let i = 0; i < 3; i++) {
      const r = await S.api(K.live, 'POST', '/v1/chat', { employee_id: emp.id,
                                                         message: 'Usage check ' + i });
      assert(r.status === 200, 'a live chat: ' + r.text);
    }
    const ses = await S.session(P.owner.email, PW);
    const usage = async (g) => {
      const r = await S.sapi(ses, 'GET', '/v1/account/usage?period=24h&group_by=' + g);
      assert(r.status === 200, `usage by ${g}: ${r.status} ${r.text}`);
      return r.json;
    };
    const today = new Date().toISOString().slice(0, 10);
    const day = (await usage('day')).items.find((i) => i.key === today);
    const mine = (await usage('employee')).items.find((i) => i.key === emp.id);
    assert(day && day.credits > 0 && day.count >= 3, 'today\'s usage: ' + JSON.stringify(day));
    assert(mine && mine.credits > 0 && mine.count >= 3,
           'the employee\'s usage: ' + JSON.stringify(mine));
    const page = await openAs(ctx, P.owner, '#/billing');
    await heading(page, 'Billing');
    await (await labelled(page, 'Period')).select('24h');
    // the bar of today: drawn (a height), titled with the API's figures
    const bar = async (caption, title) => {
      const h = await page.waitForFunction((caption, title) => {
        const fig = [...document.querySelectorAll('main figure')]
          .find((f) => f.querySelector('figcaption').textContent.startsWith(caption));
        if (!fig) return false;
        const bars = [...fig.querySelectorAll('svg rect')].filter((r) =>
          r.getBoundingClientRect().height > 2);
        const it = bars.find((r) => r.querySelector('title').textContent.startsWith(title));
        return it ? { n: bars.length, title: it.querySelector('title').textContent,
                      label: fig.querySelector('svg').getAttribute('aria-label') } : false;
      }, { timeout: UI, polling: 100 }, caption, title);
      return h.jsonValue();
    };
    const d = await bar('Credits per day', today + ':');
    assert(d.title.startsWith(`${today}: ${day.credits} credits, ${day.count} pieces`),
           'today\'s bar: ' + d.title);
    const e = await bar('Credits per employee', emp.name + ':');
    assert(e.title.startsWith(`${emp.name}: ${mine.credits} credits`), 'the bar: ' + e.title);
    // the same figures, in the tables
    const dayRows = await rowsOf(page, 'main table[aria-label="Credits per day"] tbody tr');
    assert(dayRows.some((r) => r.replace(/,/g, '') === `${today} ${day.credits} ${day.count}`),
           'the table per day: ' + dayRows.join(' | '));
    const empRows = await rowsOf(page, 'main table[aria-label="Credits per employee"] tbody tr');
    assert(empRows.some((r) => r.replace(/,/g, '') ===
                               `${emp.name} ${mine.credits} ${mine.count}`),
           'the table per employee: ' + empRows.join(' | '));
    await audit(page, 'billing-usage');
  }, { browser });

  await test('billing: the ledger filters by reason and since (kept in the address) and pages ' +
             'with "Load more", newest first', async (ctx) => {
    // 55 grants: the live balance raised by 1, 55 times
    const since = Math.floor(Date.now() / 1000);
    const base = (await S.api(K.live, 'GET', '/v1/account')).json.credits_remaining;
    for (let i = 1; i <= 55; i++) S.cli('orgs', 'update', 'acme', '--credits', String(base + i));
    const page = await openAs(ctx, P.owner, '#/billing');
    await heading(page, 'Billing');
    await (await labelled(page, 'Reason')).select('grant');
    await page.locator(byRole('button', 'Filter')).click();
    await page.waitForFunction(() => /[?&]reason=grant\b/.test(location.hash), { timeout: UI });
    const first = await ledgerRows(page, 50, 'Grant', 50);
    assert(first.every((r) => r.includes('+1')), 'a grant of another amount: ' + first[0]);
    await page.locator(byRole('button', 'Load more')).click();
    await ledgerRows(page, 55, 'Grant');
    const times = await ledgerTimes(page);
    for (let i = 1; i < times.length; i++) assert(times[i] <= times[i - 1], 'not newest first');
    // the chats of the live key, by the address; the field shows the address's filter
    await goHash(page, '#/billing?reason=chat');
    await ledgerRows(page, 1, 'Chat');
    assert(await (await labelled(page, 'Reason')).evaluate((el) => el.value) === 'chat',
           'the reason field does not show the address\'s filter');
    // since the grants began: none older
    await goHash(page, '#/billing?since=' + since);
    await ledgerRows(page, 50, '');
    assert((await ledgerTimes(page)).every((t) => t >= since * 1000),
           'an entry older than since');
    // since a time to come: nothing
    await goHash(page, '#/billing?since=' + (since + 3600));
    await waitText(page, 'No entry matches these filters', { selector: 'main' });
    await audit(page, 'billing-ledger-filtered');
  }, { browser });
}

// ---- Single sign-on: the round trip through a real OpenID Connect provider ----

const SSO_CLIENT = 'wf-console-browser';
const SSO_SECRET = 'browser-oidc-secret';
const SSO_DOMAIN = 'sso.test';

// The provider first (it registers the server's callback, so the server's port is picked
// first), then the server on that port; if another process took the port meanwhile, both again
// on a new one.
async function startSso(tmp) {
  let last = null;
  for (let attempt = 0; attempt < 3; attempt++) {
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    const op = await startOidcProvider(tmp, { clientId: SSO_CLIENT, secret: SSO_SECRET,
                                              redirectUri: base + '/v1/sessions/oidc/callback' });
    try {
      const server = await startServer('sso', {
        WORKFORCE_PUBLIC_URL: base, WORKFORCE_OIDC_ISSUER: op.issuer,
        WORKFORCE_OIDC_CLIENT_ID: SSO_CLIENT, WORKFORCE_OIDC_CLIENT_SECRET: SSO_SECRET,
        WORKFORCE_OIDC_ALLOWED_DOMAINS: SSO_DOMAIN,
      }, { port });
      return [server, op];
    } catch (e) {
      await op.stop();
      if (!e.portTaken) throw e;
      last = e;
    }
  }
  throw last;
}

// The SSO server's sign-in page: its single sign-on link, clicked; the browser goes through
// the provider and comes back. The pages' requests to the provider are kept in 'seen'.
async function signInSso(ctx) {
  const page = await open(ctx, SSO);
  page.seen = [];
  page.on('request', (req) => {
    if (req.url().startsWith(OP.issuer + '/')) page.seen.push(new URL(req.url()).pathname);
  });
  await heading(page, 'Workforce console');
  await page.locator(byRole('link', 'Sign in with single sign-on')).click();
  return page;
}

// What the page's own requests see of its session: GET /v1/sessions/current's status and
// user, and whether a script can read the session cookie.
const sessionSeen = (page) => page.evaluate(async () => {
  const r = await fetch('/v1/sessions/current', { credentials: 'same-origin' });
  const body = await r.json().catch(() => null);
  return { status: r.status, user: body && body.user, cookie: document.cookie };
});

// The browser's cookie of the session (the DevTools protocol sees HttpOnly ones): or undefined.
async function sessionCookie(page) {
  const cdp = await page.createCDPSession();
  const { cookies } = await cdp.send('Network.getCookies', { urls: [SSO.url + '/'] });
  await cdp.detach();
  return cookies.find((c) => c.name === 'wf_session');
}

// Where the round trip ended, once it has: the console's shell (signed in) or its sign-in page
// with an error; {href, shell}.
async function landed(page) {
  const h = await page.waitForFunction((origin) => location.origin === origin &&
    location.pathname === '/console/' &&
    (document.querySelector('nav[aria-label="Sections"]') !== null ||
     location.hash.startsWith('#/sign-in?error=')) &&
    { href: location.href, shell: document.querySelector('nav[aria-label="Sections"]') !== null },
  { timeout: WORK, polling: 100 }, SSO.url);
  return h.jsonValue();
}

// Signed in after the round trip: the shell shows 'email' and 'role'; the page's requests are
// the session's; the cookie is HttpOnly.
async function assertSsoSignedIn(page, email, role) {
  const end = await landed(page);
  assert(end.shell && !new URL(end.href).search, 'not signed in: the round trip ended at ' +
         end.href);
  await waitText(page, email, { selector: 'header .who' });
  const who = await waitText(page, role, { selector: 'header .who .role' });
  assert(who.trim() === role, `the role shown is "${who.trim()}", not ${role}`);
  assert(page.seen.includes('/auth'), 'the browser never went to the provider\'s /auth: ' +
         page.seen.join(' '));
  assert(page.seen.some((p) => p.startsWith('/interaction/')),
         'the browser never went through the provider\'s interaction: ' + page.seen.join(' '));
  const me = await sessionSeen(page);
  assert(me.status === 200, `GET /v1/sessions/current from the page: ${me.status}`);
  assert(me.user && me.user.email === email && me.user.role === role,
         'the session is of ' + JSON.stringify(me.user));
  assert(!/wf_session/.test(me.cookie), 'the session cookie is readable by scripts: ' + me.cookie);
  const c = await sessionCookie(page);
  assert(c && c.httpOnly, 'the session cookie is not HttpOnly: ' + JSON.stringify(c));
  assert(!me.cookie.includes(c.value), 'the session cookie\'s value is in document.cookie');
  return me.user;
}

// Refused: back on the sign-in page with 'code' explained in 'words'; no session.
async function assertSsoRefused(page, code, words) {
  const end = await landed(page);
  assert(!end.shell && new URL(end.href).hash === '#/sign-in?error=' + code,
         `not refused with ${code}: the round trip ended at ${end.href}` +
         (end.shell ? ', signed in' : ''));
  await heading(page, 'Workforce console');
  const text = await waitAlert(page, code);
  assert(words.test(text), `the explanation of ${code}: "${text}"`);
  await page.locator(byRole('link', 'Sign in with single sign-on')).wait();
  assert(await page.$('nav[aria-label="Sections"]') === null, 'the shell is shown');
  assert(page.seen.some((p) => p.startsWith('/interaction/')),
         'the browser never went through the provider: ' + page.seen.join(' '));
  const me = await sessionSeen(page);
  assert(me.status === 401, `GET /v1/sessions/current from the page: ${me.status}`);
  assert(await sessionCookie(page) === undefined, 'a session cookie was set');
  return text;
}

async function ssoTests() {
  const usersOf = () => SSO.cli('users', 'list', '--org', 'acme');

  await test('sso: an invited admin signs in through the real provider in the browser: the ' +
             'shell shows the email and role, the page\'s requests are the session\'s, the ' +
             'cookie is HttpOnly', async (ctx) => {
    const email = 'ada@' + SSO_DOMAIN;
    const u = await SSO.createUser('acme', email, 'admin');
    await OP.account(email);
    const before = (await OP.state()).token_requests;
    const page = await signInSso(ctx);
    const user = await assertSsoSignedIn(page, email, 'admin');
    assert(user.id === u.id, `signed in as ${user.id}, not the invited user ${u.id}`);
    assert((await OP.state()).token_requests === before + 1, 'the server did not redeem one code');
    // the session is the cookie's: a reload stays signed in
    await page.reload({ waitUntil: 'load' });
    await waitText(page, email, { selector: 'header .who' });
    await audit(page, 'sso-signed-in');
    // signing out ends it
    await page.locator(byRole('button', 'Sign out')).click();
    await page.locator(byRole('link', 'Sign in with single sign-on')).wait();
    assert((await sessionSeen(page)).status === 401, 'still signed in after signing out');
  }, { browser });

  await test('sso: an email of an allowed domain with no user signs in as a new member',
             async (ctx) => {
    const email = 'grace@' + SSO_DOMAIN;
    assert(!usersOf().includes(email), 'the user exists before signing in');
    await OP.account(email);
    const page = await signInSso(ctx);
    await assertSsoSignedIn(page, email, 'member');
    const row = usersOf().split('\n').find((l) => l.includes(email));
    assert(row && /\bmember\b/.test(row), 'users list: ' + row);
  }, { browser });

  await test('sso: an email outside the allowed domains comes back to sign-in with ' +
             'oidc_email_not_allowed in words, not signed in', async (ctx) => {
    const email = 'eve@elsewhere.test';
    await OP.account(email);
    const page = await signInSso(ctx);
    await assertSsoRefused(page, 'oidc_email_not_allowed', /no account here/);
    assert(!usersOf().includes(email), 'a user was made for ' + email);
    await audit(page, 'sso-refused');
  }, { browser });

  for (const mode of ['wrong_nonce', 'resigned']) {
    await test(`sso: a bad ID token (${mode}) comes back to sign-in with oidc_failed in words, ` +
               'not signed in', async (ctx) => {
      const email = `mallory-${mode.replace('_', '-')}@${SSO_DOMAIN}`;
      await OP.account(email);
      await OP.tamper(mode);
      try {
        const page = await signInSso(ctx);
        await assertSsoRefused(page, 'oidc_failed', /did not confirm who you are/);
      } finally {
        await OP.tamper('off');
      }
      assert(!usersOf().includes(email), 'a user was made for ' + email);
    }, { browser });
  }
}

async function a11yTests() {
  for (const a of auditResults()) {
    await test(`a11y ${a.label}: no serious or critical axe violation`, async () => {
      // the lesser ones are told, for the page's author, without failing the test
      for (const v of a.minor)
        note(`${a.label}: ${v.impact} ${v.id} (${v.nodes.length} nodes): ${v.help}: ` +
             v.nodes.slice(0, 3).map((n) => n.target).join(', '));
      if (!a.violations.length) return;
      for (const v of a.violations) {
        note(`${a.label} (${a.url}): ${v.impact} ${v.id}: ${v.help}`);
        for (const n of v.nodes.slice(0, 8)) note(`  ${n.target}: ${n.html}\n    ${n.summary}`);
      }
      throw new Error(a.violations.map((v) => `${v.id} (${v.impact}, ${v.nodes.length} nodes)`)
        .join(', '));
    });
  }
}

// ---- Main ----

async function main() {
  mkdirs();
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'workforce-browser-'));
  try {
    const mock = await startMock(tmp);
    // live keys answer through the mock; test keys keep the built-in engine
    const llm = { WORKFORCE_LLM: 'openai', WORKFORCE_LLM_BASE_URL: mock.url,
                  WORKFORCE_LLM_MODEL: 'mock-1', WORKFORCE_LLM_API_KEY: 'sk-mock-browser' };
    provider = await startProvider();
    allowOrigin(provider.url); // the connect round trip goes through it, and only that test
    const github = {
      WORKFORCE_OAUTH_GITHUB_CLIENT_ID: 'browser-client',
      WORKFORCE_OAUTH_GITHUB_CLIENT_SECRET: 'browser-secret',
      WORKFORCE_OAUTH_GITHUB_AUTH_URL: provider.url + '/authorize',
      WORKFORCE_OAUTH_GITHUB_TOKEN_URL: provider.url + '/token',
      WORKFORCE_OAUTH_GITHUB_API_URL: provider.url,
      WORKFORCE_OAUTH_GITHUB_REVOKE_URL: provider.url + '/revoke',
    };
    // the main server buys credits from the Stripe stand-in: it starts first, and learns where
    // the server's webhook is once the server has a port
    STRIPE = await startStripe(tmp, STRIPE_CONFIG);
    // the MCP peer is on 127.0.0.1: the main server may reach private addresses for MCP
    [S, CUT, PEER] = await Promise.all([
      startServer('main', { ...llm, ...github, ...stripeEnv(STRIPE.url),
                            WORKFORCE_MCP_ALLOW_PRIVATE: '1' }),
      startServer('cut', llm), startMcpPeer(tmp)]);
    await STRIPE.config({ events_url: S.url + '/v1/billing/stripe/events' });
    // then the single sign-on pair, on a machine no longer busy starting the others
    [SSO, OP] = await startSso(tmp);
    allowOrigin(S.url);
    allowOrigin(CUT.url);
    allowOrigin(SSO.url);
    allowOrigin(OP.issuer); // the single sign-on round trips go through it
    SSO.createKey('acme'); // the one organization: new single sign-on users join it
    K = {
      test: S.createKey('acme', { mode: 'test', tier: 'agency' }),
      live: S.createKey('acme', { mode: 'live', tier: 'agency', credits: 100000 }),
      cut: CUT.createKey('acme', { mode: 'live', tier: 'agency', credits: 100000 }),
    };
    // credits for the live keys' chats (an org's balance is set when it is made)
    S.cli('orgs', 'update', 'acme', '--credits', '1000000');
    CUT.cli('orgs', 'update', 'acme', '--credits', '1000000');
    EMP = (await S.api(K.test, 'GET', '/v1/employees?limit=100')).json.employees;
    LIVE_EMP = (await S.api(K.live, 'GET', '/v1/employees?limit=100')).json.employees;
    browser = await puppeteer.launch({
      executablePath: CHROMIUM, headless: true,
      args: ['--no-sandbox', '--disable-dev-shm-usage', '--no-first-run',
             '--disable-background-networking', '--disable-component-update', '--lang=en-US'],
      handleSIGINT: false, handleSIGTERM: false, handleSIGHUP: false,
      protocolTimeout: 60_000,
    });
    note(`setup ${((Date.now() - t0) / 1000).toFixed(1)} s (chromium ${await browser.version()})`);

    await headerTests();
    await markdownTests();
    await signInTests();
    await shellTests();
    await employeeToolTests();
    await chatTests();
    await chatToolTests();
    await knowledgeTests(tmp);
    await taskTests();
    await workflowTests();
    await errorTests(tmp);
    await integrationTests();
    await mcpTests();
    await approvalTests();
    await peopleTests();
    await billingTests();
    await ssoTests();
    await pageTests();
    await a11yTests();
  } catch (e) {
    // the setup failed: one failing test says why
    await test('setup', () => { throw e; });
  } finally {
    await teardown();
    fs.rmSync(tmp, { recursive: true, force: true });
    for (const s of [S, CUT, SSO]) if (s) fs.rmSync(s.dir, { recursive: true, force: true });
  }
  note(`${((Date.now() - t0) / 1000).toFixed(1)} s in all`);
  const ok = summary();
  process.exit(ok ? 0 : 1);
}

main();
