// SPDX-License-Identifier: MIT
// app.js: the console's shell. Sign-in with an API key (kept in this tab's session storage), the
// key's mode always shown (a banner in test mode), the navigation, the X-RateLimit-* figures of
// the last answer, and the page of the address's #fragment, loaded on first use.

import { html, render, useState, useEffect } from './preact.js';
import { api, session, watch, signIn, signOut, loadAccount, keyMode } from './api.js';
import { ErrorBox, Loading } from './ui.js';

const PAGES = [
  ['employees', 'Employees'],
  ['chat', 'Chat'],
  ['approvals', 'Approvals'],
  ['knowledge', 'Knowledge'],
  ['tasks', 'Tasks'],
  ['workflows', 'Workflows'],
  ['integrations', 'Integrations'],
  ['mcp', 'MCP servers'],
  ['webhooks', 'Webhooks & events'],
  ['account', 'Account'],
];

// '#/tasks/task_1?x=1' -> {page: 'tasks', parts: ['task_1'], query: {x: '1'}}
function route() {
  const h = location.hash.replace(/^#\/?/, '');
  const [path, qs] = h.split('?');
  const parts = path.split('/').filter(Boolean).map(decodeURIComponent);
  const page = PAGES.some(([p]) => p === parts[0]) ? parts.shift() : 'employees';
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

function SignIn() {
  const [key, setKey] = useState('');
  const [error, setError] = useState(session.notice);
  const [busy, setBusy] = useState(false);
  const submit = async (ev) => {
    ev.preventDefault();
    setBusy(true);
    setError(null);
    try {
      await signIn(key);
    } catch (e) {
      setError(e);
      setBusy(false);
    }
  };
  useEffect(() => { document.title = 'Sign in · Workforce'; }, []);
  return html`<main class="signin" id="main">
    <form onSubmit=${submit} aria-labelledby="signin-title">
      <h1 id="signin-title">Workforce console</h1>
      <p>Sign in with an API key. It stays in this browser tab (session storage) and is sent
        only to this server.</p>
      ${session.notice && error === session.notice
        ? html`<p class="notice">You were signed out: the server refused the key.</p>` : null}
      <label for="key">API key</label>
      <input id="key" name="key" type="password" autocomplete="off" spellcheck="false"
        placeholder="svc_test_sk_…" value=${key} onInput=${(e) => setKey(e.target.value)}
        required autofocus aria-describedby=${error ? 'signin-error' : undefined} />
      <button type="submit" disabled=${busy}>${busy ? 'Checking…' : 'Sign in'}</button>
      <div id="signin-error"><${ErrorBox} error=${error} /></div>
      <p class="small">No key yet? <code>build/workforce keys create --org ORG --mode test</code>
        prints one. The API reference is at <a href="/docs">/docs</a>.</p>
    </form>
  </main>`;
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
  const canRead = !!scopes && (!scopes.length || scopes.includes('approvals'));
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
  const r = useRoute();
  const { mod, error } = usePage(r.page);
  const [accountError, setAccountError] = useState(null);
  useEffect(() => {
    if (!s.account) loadAccount().catch(setAccountError);
    // After sign-in the form is gone: the keyboard starts again at the content.
    if (document.activeElement === document.body) document.getElementById('main').focus();
  }, []);
  const a = s.account;
  const pending = usePending(a, r.page);
  const mode = a ? a.key.mode : keyMode(s.key);
  const Page = mod && mod.default;
  return html`
    <a class="skip" href="#main" onClick=${(e) => { e.preventDefault();
      document.getElementById('main').focus(); }}>Skip to content</a>
    <header>
    ${mode === 'test' ? html`<div class="test-banner">
      Test mode: you are looking at test data. Nothing here is charged.</div>` : null}
    <div class="top">
      <a class="brand" href="#/employees">Workforce</a>
      <span class=${'mode mode-' + mode}>${mode === 'live' ? 'Live' : 'Test'} key</span>
      ${a ? html`<span class="org">${a.name} · ${a.tier} · ${a.credits_remaining} credits</span>`
          : null}
      <${RateLimit} rate=${s.rate} />
      <button type="button" class="link" onClick=${signOut}>Sign out</button>
    </div></header>
    <div class="layout">
      <nav aria-label="Sections">
        <ul>${PAGES.map(([p, label]) => html`<li key=${p}><a href=${'#/' + p}
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
        ${Page ? html`<${Page} key=${r.page} parts=${r.parts} query=${r.query} account=${a} />`
               : error ? null : html`<${Loading} />`}
      </main>
    </div>`;
}

function App() {
  const s = useSession();
  return s.key ? html`<${Shell} />` : html`<${SignIn} />`;
}

// The end of an integration's OAuth round trip: the server's callback sends the browser to
// /console/?provider=..&status=..[&error=..]; the integrations page shows that outcome.
if (!location.hash && /[?&]provider=/.test(location.search) && /[?&]status=/.test(location.search))
  history.replaceState(null, '', location.pathname + '#/integrations?' + location.search.slice(1));

const root = document.getElementById('app');
root.textContent = ''; // the boot message
render(html`<${App} />`, root);
