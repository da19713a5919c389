// SPDX-License-Identifier: MIT
// page-billing.js: credits (#/billing). The balance of the data looked at (GET /v1/account's
// credits_remaining: live, or test for a test key or a session switched to test data), the
// credit packs on sale (GET /v1/billing/packs) with "Buy" for owners, the ledger of every
// change of the balance (GET /v1/account/credit_transactions: newest first, filtered by reason
// and since, paged with "Load more"), and what the work spent (GET /v1/account/usage: a period,
// per day and per employee, drawn as SVG bars with the same figures in tables).
//
// Decisions:
// - Buying is Stripe Checkout: POST /v1/billing/checkout answers the address of Stripe's
//   payment page and the browser goes there (the one place the console leaves this server, and
//   only when the owner asked). Stripe sends the browser back to this page with
//   ?checkout=success (or ?checkout=cancelled). The credits do not come with the browser: they
//   are added when Stripe's event reaches the server's webhook, which can be before or a little
//   after the browser is back. So the page keeps the checkout session it started (its id, in
//   this tab's session storage, as the key of the "Use an API key" sign-in is) and, back from
//   Stripe, reads the balance and the ledger again every 2 s, for at most 60 s, until the
//   purchase of that session is in the ledger; past that it says the credits have not arrived
//   yet, with a button to look again (back with no checkout of this tab's: it reads them once).
//   Nothing about the payment is trusted from the address.
// - The ledger's filters are the address's query (#/billing?reason=purchase&since=...), as the
//   audit log's are, so a filtered view can be linked to; filtering drops ?checkout=.
// - Roles (roles.js): 'billing' reads all of it (viewer and up, or a key whose scopes allow
//   billing); 'billing.buy' shows the Buy buttons (owners, or a key whose scopes name billing).
//   The server decides: a refused checkout shows its error at the pack.
// - The charts are the page's own SVG (no library); each bar has a <title>, the figure a
//   label with the total, and a table under it holds the same numbers for everyone.

import { html, useState, useEffect, useRef } from './preact.js';
import { api, session, watch, loadAccount, allEmployees } from './api.js';
import { can } from './roles.js';
import { usePaged, useLoad, ErrorBox, Empty, More, Loading, Time, PageTitle, useAction,
         loadStyle } from './ui.js';

loadStyle('page-billing.css');

// The reasons of a credit transaction (the API's CreditTransaction.reason), in words.
const REASONS = [
  ['purchase', 'Purchase'],
  ['refund', 'Refund'],
  ['dispute', 'Dispute'],
  ['chat', 'Chat'],
  ['task_run', 'Task run'],
  ['workflow_step', 'Workflow step'],
  ['grant', 'Grant'],
  ['adjustment', 'Adjustment'],
];
const REASON_WORDS = Object.fromEntries(REASONS);

const PERIODS = [['24h', 'Last 24 hours'], ['7d', 'Last 7 days'], ['30d', 'Last 30 days'],
                 ['90d', 'Last 90 days']];

const FILTERS = ['reason', 'since'];

// The checkout this tab started, kept across the trip to Stripe's page and back.
const PENDING = 'workforce.checkout';
const ARRIVAL_POLL_MS = 2000;
const ARRIVAL_DEADLINE_MS = 60_000;

const fmt = (n) => (typeof n === 'number' ? n.toLocaleString() : String(n ?? '—'));

// A time of the API (ISO 8601, or Unix seconds) as ISO 8601, for <Time>.
function isoOf(t) {
  if (t === null || t === undefined || t === '') return null;
  if (typeof t === 'number') return new Date(t * 1000).toISOString();
  return String(t);
}
function msOf(t) {
  if (typeof t === 'number') return t * 1000;
  const v = Date.parse(t);
  return Number.isNaN(v) ? null : v;
}

// 'YYYY-MM-DDTHH:MM' of the browser's time zone <-> Unix seconds (the API's since=).
function toUnix(local) {
  const t = new Date(local).getTime();
  return Number.isNaN(t) ? '' : String(Math.floor(t / 1000));
}
function toLocal(unix) {
  if (!unix) return '';
  const d = new Date(Number(unix) * 1000);
  if (Number.isNaN(d.getTime())) return '';
  const p = (n) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}T${p(d.getHours())}:${
    p(d.getMinutes())}`;
}

function pick(query) {
  const f = {};
  for (const k of FILTERS) f[k] = query[k] || '';
  return f;
}

function hrefOf(f) {
  const q = new URLSearchParams();
  for (const k of FILTERS) if (f[k]) q.set(k, f[k]);
  const s = q.toString();
  return '#/billing' + (s ? '?' + s : '');
}

function modeNow() {
  if (session.user) return session.mode;
  const a = session.account;
  return a && a.key ? a.key.mode : 'live';
}

function readPending() {
  try {
    return JSON.parse(sessionStorage.getItem(PENDING) || 'null');
  } catch {
    return null;
  }
}

// ---- The balance ----

function Balance({ account, mode, busy, error }) {
  return html`<section class="panel" aria-labelledby="bal-h">
    <h2 id="bal-h">Balance</h2>
    <${ErrorBox} error=${error} />
    ${!account ? html`<${Loading} what="the balance" />` : html`<dl class="kv">
      <dt>Credits remaining</dt><dd><strong class="bi-balance" aria-live="polite"
        aria-busy=${busy ? 'true' : 'false'}>${fmt(account.credits_remaining)}</strong></dd>
      <dt>Mode</dt><dd>${mode === 'test'
        ? 'Test: Stripe\'s test mode; pay with a test card, nothing is charged, the credits '
          + 'go to the test balance'
        : 'Live: purchases are charged; chats, task runs and workflow steps use these credits'
      }</dd>
    </dl>`}
  </section>`;
}

// ---- Back from Stripe ----

// ?checkout=success: wait for the purchase of the checkout this tab started to reach the
// ledger (the webhook adds it), reading the balance along; ?checkout=cancelled: say so.
function CheckoutReturn({ outcome, onArrived }) {
  const [state, setState] = useState(outcome === 'success' ? 'waiting' : outcome);
  const [entry, setEntry] = useState(null);
  const [tries, setTries] = useState(0);
  const pending = useRef(readPending()).current;
  useEffect(() => {
    if (outcome !== 'success') {
      sessionStorage.removeItem(PENDING);
      return undefined;
    }
    if (!pending || !pending.id) {
      // no checkout of this tab is known (another tab started it): the balance and the ledger
      // are read once more, and show the credits if they are there
      setState('unknown');
      loadAccount().catch(() => {});
      onArrived();
      return undefined;
    }
    let stopped = false;
    let timer = null;
    const end = Date.now() + ARRIVAL_DEADLINE_MS;
    setState('waiting');
    const look = async () => {
      let found = null;
      try {
        await loadAccount();
        const page = await api('GET', '/v1/account/credit_transactions',
                               { query: { reason: 'purchase', limit: 20 } });
        found = page.credit_transactions.find((t) => t.reference &&
                                              t.reference.id === pending.id) || null;
      } catch {
        /* looked again at the next turn; the deadline ends it */
      }
      if (stopped) return;
      if (found) {
        sessionStorage.removeItem(PENDING);
        setEntry(found);
        setState('arrived');
        onArrived();
        return;
      }
      if (Date.now() >= end) {
        setState('late');
        return;
      }
      timer = setTimeout(look, ARRIVAL_POLL_MS);
    };
    look();
    return () => {
      stopped = true;
      clearTimeout(timer);
    };
  }, [outcome, tries]);
  if (state === 'cancelled')
    return html`<p class="notice" role="status">The checkout was cancelled: nothing was charged.
      <a href="#/billing">Dismiss</a></p>`;
  if (state === 'waiting')
    return html`<p class="notice" role="status">Thank you: the payment went through at Stripe.
      Waiting for the ${pending && pending.credits ? fmt(pending.credits) + ' ' : ''}credits to
      arrive…</p>`;
  if (state === 'arrived')
    return html`<p class="notice bi-ok" role="status">Payment received: ${
      fmt(entry.amount)} credits were added. <a href="#/billing">Dismiss</a></p>`;
  if (state === 'unknown')
    return html`<p class="notice" role="status">Thank you: the payment went through at Stripe.
      The credits are added when Stripe tells this server of it; the ledger below lists the
      purchase once they are. <a href="#/billing">Dismiss</a></p>`;
  if (state === 'late')
    return html`<div class="notice" role="status">The credits have not arrived yet. They are
      added when Stripe tells this server of the payment, which can take a few minutes.
      <button type="button" class="link" onClick=${() => setTries((n) => n + 1)}>Look
      again</button></div>`;
  return null;
}

// ---- Packs ----

function Pack({ pack, mayBuy }) {
  const act = useAction();
  const buy = () => act.run(async () => {
    const back = location.origin + location.pathname + '#/billing?checkout=';
    const s = await api('POST', '/v1/billing/checkout', {
      body: { price_id: pack.price_id, success_url: back + 'success',
              cancel_url: back + 'cancelled' } });
    if (typeof s.url !== 'string' || !/^https?:\/\//i.test(s.url))
      throw new Error('The server answered no payment page to go to.');
    sessionStorage.setItem(PENDING, JSON.stringify({ id: s.id, credits: s.credits,
                                                     mode: s.mode, at: Date.now() }));
    location.assign(s.url);
    await new Promise(() => {}); // leaving: the button stays busy
  });
  return html`<li class="card bi-pack">
    <h3>${fmt(pack.credits)} credits</h3>
    <p class="small">Stripe price <code>${pack.price_id}</code></p>
    ${mayBuy ? html`<button type="button" disabled=${act.busy} onClick=${buy}>${
      act.busy ? 'Opening Stripe…' : `Buy ${fmt(pack.credits)} credits`}</button>` : null}
    <${ErrorBox} error=${act.error} />
  </li>`;
}

function Packs({ mode }) {
  const packs = useLoad((signal) => api('GET', '/v1/billing/packs', { signal }), [mode]);
  const mayBuy = can('billing.buy');
  const list = packs.data ? packs.data.packs : [];
  return html`<section aria-labelledby="packs-h">
    <h2 id="packs-h">Buy credits</h2>
    <${ErrorBox} error=${packs.error} onRetry=${packs.reload} />
    ${packs.loading && !packs.data ? html`<${Loading} what="the credit packs" />` : null}
    ${packs.data && !list.length ? html`<${Empty}>No credit pack is on sale in ${mode} mode.
      </${Empty}>` : null}
    ${list.length ? html`<ul class="grid plain" aria-label="Credit packs">${list.map((p) => html`
      <${Pack} key=${p.price_id} pack=${p} mayBuy=${mayBuy} />`)}</ul>` : null}
    ${list.length > 0 && !mayBuy ? html`<p class="small">${session.user
      ? 'Only an owner of the organization can buy credits.'
      : 'Buying needs a key whose scopes name billing.'}</p>` : null}
    ${list.length > 0 && mayBuy ? html`<p class="small">Payment is on Stripe's page; it brings you
      back here.</p>` : null}
  </section>`;
}

// ---- Ledger ----

function Ledger({ query, tick, names }) {
  const applied = pick(query || {});
  const [draft, setDraft] = useState(applied);
  const key = JSON.stringify(applied);
  useEffect(() => setDraft(applied), [key]);
  const list = usePaged('/v1/account/credit_transactions', 'credit_transactions',
                        { ...applied, limit: 50 }, 'before', [tick]);
  const submit = (ev) => {
    ev.preventDefault();
    location.hash = hrefOf(draft);
  };
  const filtered = FILTERS.some((k) => applied[k]);
  return html`<section aria-labelledby="ledger-h">
    <h2 id="ledger-h">Ledger</h2>
    <form class="filters" onSubmit=${submit} aria-label="Ledger filters">
      <div class="field"><label for="bi-reason">Reason</label>
        <select id="bi-reason" value=${draft.reason}
          onChange=${(e) => setDraft((d) => ({ ...d, reason: e.target.value }))}>
          <option value="">Every reason</option>
          ${REASONS.map(([r, l]) => html`<option key=${r} value=${r}>${l}</option>`)}
        </select></div>
      <div class="field"><label for="bi-since">Since</label>
        <input id="bi-since" type="datetime-local" value=${toLocal(draft.since)}
          onInput=${(e) => setDraft((d) => ({ ...d, since: toUnix(e.target.value) }))} /></div>
      <div class="field"><button type="submit">Filter</button></div>
      ${filtered ? html`<div class="field"><a href="#/billing">Clear the filters</a></div>` : null}
    </form>
    ${list.loading && !list.items.length ? html`<${Loading} what="the ledger" />` : null}
    ${!list.loading && !list.items.length && !list.error
      ? html`<${Empty}>${filtered ? 'No entry matches these filters.' : 'No entry yet.'}</${
        Empty}>` : null}
    ${list.items.length ? html`<div class="bi-scroll"><table aria-label="Credit transactions">
      <thead><tr><th scope="col">When</th><th scope="col">Reason</th>
        <th scope="col" class="num">Amount</th><th scope="col" class="num">Balance after</th>
        <th scope="col">Reference</th><th scope="col">Employee</th></tr></thead>
      <tbody>${list.items.map((t) => html`<tr key=${t.id}>
        <td><${Time} iso=${isoOf(t.created_at)} /></td>
        <td>${REASON_WORDS[t.reason] || t.reason}</td>
        <td class=${'num ' + (t.amount > 0 ? 'bi-plus' : t.amount < 0 ? 'bi-minus' : '')}>${
          t.amount > 0 ? '+' : ''}${fmt(t.amount)}${t.shortfall ? html`<br /><span
          class="small">${fmt(t.shortfall)} short</span>` : null}</td>
        <td class="num">${fmt(t.balance_after)}</td>
        <td>${t.reference ? html`${t.reference.type.replace(/_/g, ' ')}<br /><code
          class="small">${t.reference.id}</code>` : '—'}</td>
        <td>${t.employee_id ? html`<a href=${'#/employees/' + encodeURIComponent(t.employee_id)}
          >${names[t.employee_id] || html`<code class="small">${t.employee_id}</code>`}</a>`
          : '—'}</td>
      </tr>`)}</tbody></table></div>` : null}
    <${More} list=${list} />
  </section>`;
}

// ---- Usage ----

const DAY_MS = 86_400_000;

// The days of [from, to] (UTC, 'YYYY-MM-DD'), each with its figures (0 where none).
function everyDay(u) {
  const by = new Map(u.items.map((i) => [i.key, i]));
  const from = msOf(u.from);
  const to = msOf(u.to);
  if (from === null || to === null || to < from || to - from > 400 * DAY_MS) return u.items;
  const out = [];
  for (let d = Math.floor(from / DAY_MS) * DAY_MS; d <= to; d += DAY_MS) {
    const k = new Date(d).toISOString().slice(0, 10);
    out.push(by.get(k) || { key: k, credits: 0, count: 0 });
    by.delete(k);
  }
  // keys outside the range (a server's other reading of it) are kept, in order
  return by.size ? [...out, ...by.values()].sort((a, b) => (a.key < b.key ? -1 : 1)) : out;
}

function DayChart({ items }) {
  const w = 640;
  const h = 140;
  const max = Math.max(1, ...items.map((i) => i.credits));
  const bw = w / Math.max(1, items.length);
  const total = items.reduce((n, i) => n + i.credits, 0);
  return html`<figure class="chart">
    <figcaption>Credits per day (UTC): ${total ? `${fmt(total)} in the period, at most ${
      fmt(max)} in a day` : 'none in the period'}</figcaption>
    <svg viewBox=${`0 0 ${w} ${h + 18}`} role="img"
      aria-label=${`Credits per day, ${total} in all; the table below lists them`}>
      <line x1="0" y1=${h} x2=${w} y2=${h} stroke="#8a94a6" />
      ${items.map((d, i) => {
        const bh = (d.credits / max) * (h - 6);
        return html`<rect key=${d.key} class="bi-bar" x=${i * bw + 1} y=${h - bh}
          width=${Math.max(1, bw - 2)} height=${bh}><title>${d.key}: ${d.credits} credits, ${
          d.count} pieces of work</title></rect>`;
      })}
      <text x="0" y=${h + 14} font-size="11" fill="#535d6e">${items.length ? items[0].key
                                                                           : ''}</text>
      <text x=${w} y=${h + 14} font-size="11" fill="#535d6e" text-anchor="end">${
        items.length ? items[items.length - 1].key : ''}</text>
    </svg>
  </figure>`;
}

function EmployeeChart({ items, names }) {
  const w = 640;
  const row = 24;
  const label = 180;
  const max = Math.max(1, ...items.map((i) => i.credits));
  const total = items.reduce((n, i) => n + i.credits, 0);
  const h = items.length * row;
  const name = (id) => names[id] || id;
  return html`<figure class="chart">
    <figcaption>Credits per employee: ${fmt(total)} in the period</figcaption>
    <svg viewBox=${`0 0 ${w} ${h + 4}`} role="img"
      aria-label=${`Credits per employee, ${total} in all; the table below lists them`}>
      ${items.map((e, i) => {
        const bw = (e.credits / max) * (w - label - 70);
        const n = name(e.key);
        return html`<g key=${e.key}>
          <text x=${label - 6} y=${i * row + 16} font-size="12" fill="#1d2330"
            text-anchor="end">${n.length > 26 ? n.slice(0, 25) + '…' : n}</text>
          <rect class="bi-bar" x=${label} y=${i * row + 4} width=${Math.max(bw, 1)}
            height=${row - 8}><title>${n}: ${e.credits} credits, ${
            e.count} pieces of work</title></rect>
          <text x=${label + bw + 6} y=${i * row + 16} font-size="12" fill="#535d6e">${
            fmt(e.credits)}</text></g>`;
      })}
    </svg>
  </figure>`;
}

function Usage({ mode, tick, names }) {
  const [period, setPeriod] = useState('30d');
  const byDay = useLoad((signal) => api('GET', '/v1/account/usage',
    { query: { period, group_by: 'day' }, signal }), [period, mode, tick]);
  const byEmp = useLoad((signal) => api('GET', '/v1/account/usage',
    { query: { period, group_by: 'employee' }, signal }), [period, mode, tick]);
  const days = byDay.data ? everyDay(byDay.data) : [];
  const spent = days.filter((d) => d.credits || d.count);
  const people = byEmp.data ? byEmp.data.items : [];
  return html`<section class="panel" aria-labelledby="usage-h">
    <div class="row"><h2 id="usage-h">Usage</h2>
      <label for="bi-period" class="muted">Period</label>
      <select id="bi-period" value=${period} onChange=${(e) => setPeriod(e.target.value)}>
        ${PERIODS.map(([p, l]) => html`<option key=${p} value=${p}>${l}</option>`)}
      </select></div>
    <p class="small">Credits spent by work: chats, task runs and workflow steps.</p>
    <${ErrorBox} error=${byDay.error} onRetry=${byDay.reload} />
    ${!byDay.data && !byDay.error ? html`<${Loading} what="the usage per day" />` : null}
    ${byDay.data ? html`
      <${DayChart} items=${days} />
      ${spent.length ? html`<table aria-label="Credits per day">
        <thead><tr><th scope="col">Day (UTC)</th><th scope="col" class="num">Credits</th>
          <th scope="col" class="num">Pieces of work</th></tr></thead>
        <tbody>${spent.map((d) => html`<tr key=${d.key}><th scope="row">${d.key}</th>
          <td class="num">${fmt(d.credits)}</td><td class="num">${fmt(d.count)}</td></tr>`)}
        </tbody></table>` : html`<${Empty}>No credits spent in this period.</${Empty}>`}` : null}
    <h3>By employee</h3>
    <${ErrorBox} error=${byEmp.error} onRetry=${byEmp.reload} />
    ${!byEmp.data && !byEmp.error ? html`<${Loading} what="the usage per employee" />` : null}
    ${byEmp.data && people.length ? html`
      <${EmployeeChart} items=${people} names=${names} />
      <table aria-label="Credits per employee">
        <thead><tr><th scope="col">Employee</th><th scope="col" class="num">Credits</th>
          <th scope="col" class="num">Pieces of work</th></tr></thead>
        <tbody>${people.map((e) => html`<tr key=${e.key}><th scope="row"><a
          href=${'#/employees/' + encodeURIComponent(e.key)}>${names[e.key] || e.key}</a></th>
          <td class="num">${fmt(e.credits)}</td><td class="num">${fmt(e.count)}</td></tr>`)}
        </tbody></table>` : null}
    ${byEmp.data && !people.length ? html`<${Empty}>No employee spent credits in this period.</${
      Empty}>` : null}
  </section>`;
}

// ---- The page ----

export default function BillingPage({ query }) {
  const [, setTick] = useState(0);
  const [ledgerTick, setLedgerTick] = useState(0);
  const act = useAction();
  useEffect(() => watch(() => setTick((n) => n + 1)), []);
  useEffect(() => { act.run(loadAccount); }, []);
  const q = query || {};
  const mode = modeNow();
  // the employees' names, for the ledger and the usage (their ids where they cannot be read)
  const emps = useLoad((signal) => allEmployees(signal).catch(() => []), [mode]);
  const names = Object.fromEntries((emps.data || []).map((e) => [e.id, e.name]));
  const refresh = () => {
    act.run(loadAccount);
    setLedgerTick((n) => n + 1);
  };
  return html`
    <${PageTitle} actions=${html`<button type="button" class="secondary" disabled=${act.busy}
      onClick=${refresh}>Refresh</button>`}>Billing</${PageTitle}>
    ${q.checkout === 'success' || q.checkout === 'cancelled' ? html`<${CheckoutReturn}
      outcome=${q.checkout} onArrived=${() => setLedgerTick((n) => n + 1)} />` : null}
    <${Balance} account=${session.account} mode=${mode} busy=${act.busy} error=${act.error} />
    <${Packs} mode=${mode} />
    <${Ledger} query=${q} tick=${ledgerTick} names=${names} />
    <${Usage} mode=${mode} tick=${ledgerTick} names=${names} />`;
}
