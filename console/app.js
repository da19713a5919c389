// SPDX-License-Identifier: MIT
// app.js: the console's shell. On load it asks the server for the session its cookie holds;
// signed out, it shows the sign-in pages (signin.js: a password, single sign-on, or an API key
// kept in this tab's session storage). Signed in: who (the user and role, or the key), the mode
// always shown (a banner in test mode; a session switches between live and test data), the
// navigation (only the pages the role opens: roles.js), the X-RateLimit-* figures of the last
// answer, and the page of the address's #fragment, loaded on first use.

import { html, render, useState, useEffect } from './preact.js';
import { api, session, watch, signOut, loadAccount, keyMode, restore, signedIn,
         setMode } from './api.js';
import { can } from './roles.js';
import { ErrorBox, Loading } from './ui.js';
import { SignIn, SetPassword } from './signin.js';

// [page, label, the action of roles.js that opens it]
const PAGES = [
  ['employees', 'Employees', 'read'],
  ['chat', 'Chat', 'read'],
  ['approvals', 'Approvals', 'read'],
  ['knowledge', 'Knowledge', 'read'],
  ['tasks', 'Tasks', 'read'],
  ['workflows', 'Workflows', 'read'],
  ['integrations', 'Integrations', 'read'],
  ['mcp', 'MCP servers', 'read'],
  ['webhooks', 'Webhooks & events', 'webhooks'],
  ['users', 'Users & invitations', 'users'],
  ['keys', 'API keys', 'keys'],
  ['audit', 'Audit log', 'audit'],
  ['billing', 'Billing', 'billing'],
  ['account', 'Account', 'read'],
];

// The pages outside the shell (signed in or not).
const OUTSIDE = ['sign-in', 'set-password'];

// '#/tasks/task_1?x=1' -> {page: 'tasks', parts: ['task_1'], query: {x: '1'}}
function route() {
  const h = location.hash.replace(/^#\/?/, '');
  const [path, qs] = h.split('?');
  const parts = path.split('/').filter(Boolean).map(decodeURIComponent);
  const page = PAGES.some(([p]) => p === parts[0]) || OUTSIDE.includes(parts[0]) ? parts.shift()
                                                                                : 'employees';
  return { page, parts, query: Object.fromEntries(new URLSearchParams(qs || '')) };
}

function useSession() {
  const [, set] = useState(0);
  useEffect(() => watch(() => set((n) => n + 1)), []);
  return session;
}

function useRoute() {
  const [r, setR] = useState(route());
  useEffect(() => {
    const on = () => setR(route());
    addEventListener('hashchange', on);
    return () => removeEventListener('hashchange', on);
  }, []);
  return r;
}

function RateLimit({ rate }) {
  if (!rate) return html`<span class="rate">Rate limit: —</span>`;
  const reset = new Date(rate.reset * 1000).toLocaleTimeString();
  return html`<span class="rate" title="X-RateLimit-* of the last answer">
    Rate limit: <strong>${rate.remaining}</strong> of ${rate.limit} left this minute · resets
    ${' ' + reset}</span>`;
}

// The page module for 'name', loaded once. While another page's module is still the one held
// (the address has just changed), nothing is rendered: the old page must not see the new
// address's parts.
const loaded = {};
function usePage(name) {
  const [state, setState] = useState({ name, mod: loaded[name] || null, error: null });
  useEffect(() => {
    if (loaded[name]) {
      setState({ name, mod: loaded[name], error: null });
      return;
    }
    setState({ name, mod: null, error: null });
    import(`./page-${name}.js`).then((m) => {
      loaded[name] = m;
      setState({ name, mod: m, error: null });
    }, (error) => setState({ name, mod: null, error }));
  }, [name]);
  return state.name === name ? state : { name, mod: loaded[name] || null, error: null };
}

const PENDING_POLL_MS = 30_000;

// The number of pending approvals ('100+' past one page), for the navigation: read when the
// page changes, when the approvals page decides one ('approvals-changed') and every 30 s while
// the tab is visible; null for a key that may not read approvals (nothing is asked then).
function usePending(account, page) {
  const [n, setN] = useState(null);
  const scopes = account && account.key ? account.key.scopes || [] : null;
  const canRead = session.user ? true
                               : !!scopes && (!scopes.length || scopes.includes('approvals'));
  useEffect(() => {
    if (!canRead) return undefined;
    let stopped = false;
    const read = () => api('GET', '/v1/approvals', { query: { status: 'pending', limit: 100 } })
      .then((p) => !stopped && setN(p.has_more ? p.approvals.length + '+' : p.approvals.length),
            () => {});
    read();
    addEventListener('approvals-changed', read);
    const id = setInterval(() => document.visibilityState === 'visible' && read(),
                           PENDING_POLL_MS);
    return () => {
      stopped = true;
      removeEventListener('approvals-changed', read);
      clearInterval(id);
    };
  }, [canRead, page]);
  return canRead ? n : null;
}

function Shell() {
  const s = useSession();
  const at = useRoute();
  // the pages outside the shell are App's: here they are the first page
  const r = OUTSIDE.includes(at.page) ? { page: 'employees', parts: [], query: {} } : at;
  const { mod, error } = usePage(r.page);
  const [accountError, setAccountError] = useState(null);
  useEffect(() => {
    // After sign-in the form is gone: the keyboard starts again at the content.
    if (document.activeElement === document.body) document.getElementById('main').focus();
  }, []);
  useEffect(() => {
    setAccountError(null);
    if (!s.account) loadAccount().catch(setAccountError);
  }, [s.mode]);
  const a = s.account;
  const pending = usePending(a, r.page + s.mode);
  const u = s.user;
  const mode = u ? s.mode : a ? a.key.mode : keyMode(s.key);
  const Page = mod && mod.default;
  const allowed = can(PAGES.find(([p]) => p === r.page)[2]);
  return html`
    <a class="skip" href="#main" onClick=${(e) => { e.preventDefault();
      document.getElementById('main').focus(); }}>Skip to content</a>
    <header>
    ${mode === 'test' ? html`<div class="test-banner">
      Test mode: you are looking at test data. Nothing here is charged.</div>` : null}
    <div class="top">
      <a class="brand" href="#/employees">Workforce</a>
      <span class=${'mode mode-' + mode}>${mode === 'live' ? 'Live' : 'Test'}${
        u ? ' data' : ' key'}</span>
      ${u ? html`<button type="button" class="link" onClick=${() => setMode(
        mode === 'live' ? 'test' : 'live')}>${
        mode === 'live' ? 'Switch to test data' : 'Switch to live data'}</button>` : null}
      ${a ? html`<span class="org">${a.name} · ${a.tier} · ${a.credits_remaining} credits</span>`
          : null}
      <${RateLimit} rate=${s.rate} />
      ${u ? html`<span class="who"><span class="sr-only">Signed in as </span>${u.email} · <span
        class="role">${u.role}</span></span>` : null}
      <button type="button" class="link" onClick=${signOut}>Sign out</button>
    </div></header>
    <div class="layout">
      <nav aria-label="Sections">
        <ul>${PAGES.filter(([, , need]) => can(need)).map(([p, label]) => html`<li key=${p}><a
          href=${'#/' + p}
          aria-current=${r.page === p ? 'page' : undefined}>${label}</a>${
          p === 'approvals' && pending ? html`<span class="nav-count"><span aria-hidden="true">${
            pending}</span><span class="sr-only"> ${pending} pending</span></span>` : null}</li>`)}
        </ul>
        <p class="small"><a href="/docs" target="_blank" rel="noopener">API reference</a></p>
      </nav>
      <main id="main" tabindex="-1">
        <${ErrorBox} error=${accountError} />
        ${error ? html`<${ErrorBox} error=${{ code: 'load_error',
          message: 'This page could not be loaded: ' + error.message }} />` : null}
        ${!allowed ? html`<header class="page-head"><h1>${
          PAGES.find(([p]) => p === r.page)[1]}</h1></header>
          <p class="notice" role="status">${u ? `Your role (${u.role}) does not open this page.`
            : 'This key does not open this page: sign in as a person.'}</p>`
          : Page ? html`<${Page} key=${r.page + '.' + s.mode} parts=${r.parts} query=${r.query}
                                account=${a} />`
          : error ? null : html`<${Loading} />`}
      </main>
    </div>`;
}

function App() {
  const s = useSession();
  const r = useRoute();
  useEffect(() => {
    if (!s.checked) restore();
  }, []);
  if (r.page === 'set-password') return html`<${SetPassword} query=${r.query} />`;
  if (!s.checked)
    return html`<main class="signin" id="main"><${Loading} what="your session" /></main>`;
  if (!signedIn()) return html`<${SignIn} query=${r.page === 'sign-in' ? r.query : {}} />`;
  if (r.page === 'sign-in') {
    // signed in from the sign-in page's address: the console's first page
    history.replaceState(null, '', location.pathname + '#/employees');
    return html`<${Shell} />`;
  }
  return html`<${Shell} />`;
}

// The end of an integration's OAuth round trip: the server's callback sends the browser to
// /console/?provider=..&status=..[&error=..]; the integrations page shows that outcome.
if (!location.hash && /[?&]provider=/.test(location.search) && /[?&]status=/.test(location.search))
  history.replaceState(null, '', location.pathname + '#/integrations?' + location.search.slice(1));

const root = document.getElementById('app');
root.textContent = ''; // the boot message
render(html`<${App} />`, root);
