// SPDX-License-Identifier: MIT
// ui.js: what every page of the console shares: hooks that load and page lists, the error box,
// form fields that show the server's error at the field it names, dates, statuses, and a
// Markdown renderer that builds elements (never HTML text), so user content stays inert.

import { html, useState, useEffect, useRef, useCallback } from './preact.js';
import { api, ApiError } from './api.js';

// ---- Loading ----

// Add the style sheet /console/<file> to the page once (a page module's own styles).
export function loadStyle(file) {
  const href = '/console/' + file;
  if (document.querySelector(`link[href="${href}"]`)) return;
  const l = document.createElement('link');
  l.rel = 'stylesheet';
  l.href = href;
  document.head.appendChild(l);
}

// Run 'load(signal)' now and whenever 'deps' change: {data, error, loading, reload, setData}.
export function useLoad(load, deps) {
  const [state, setState] = useState({ data: null, error: null, loading: true });
  const [tick, setTick] = useState(0);
  useEffect(() => {
    const ctl = new AbortController();
    setState((s) => ({ ...s, loading: true }));
    load(ctl.signal).then(
      (data) => !ctl.signal.aborted && setState({ data, error: null, loading: false }),
      (error) => !ctl.signal.aborted && error.code !== 'aborted' &&
        setState((s) => ({ data: s.data, error, loading: false })));
    return () => ctl.abort();
  }, [...deps, tick]);
  return {
    ...state,
    reload: useCallback(() => setTick((t) => t + 1), []),
    setData: (data) => setState((s) => ({ ...s, data })),
  };
}

// Call 'fn' every 'ms' while the page is visible (live status without reloading the page).
export function useInterval(fn, ms) {
  const saved = useRef(fn);
  saved.current = fn;
  useEffect(() => {
    if (!ms) return undefined;
    const id = setInterval(() => document.visibilityState === 'visible' && saved.current(), ms);
    return () => clearInterval(id);
  }, [ms]);
}

// A list of the API, paged with its cursor: 'path' answers {<key>: [...], has_more, next_cursor};
// 'cursorParam' is 'before' (newest-first lists) or 'after' (employees).
// Returns {items, hasMore, loading, error, more(), reload(), setItems}.
export function usePaged(path, key, query, cursorParam = 'before', deps = []) {
  const [state, setState] = useState({ items: [], cursor: null, hasMore: false, loading: true,
                                       error: null, total: null });
  const [tick, setTick] = useState(0);
  const ctl = useRef(null);
  const fetchPage = (cursor, append) => {
    if (ctl.current) ctl.current.abort();
    const c = new AbortController();
    ctl.current = c;
    setState((s) => ({ ...s, loading: true }));
    const q = { ...query };
    if (cursor) q[cursorParam] = cursor;
    api('GET', path, { query: q, signal: c.signal }).then(
      (page) => !c.signal.aborted && setState((s) => ({
        items: append ? [...s.items, ...page[key]] : page[key],
        cursor: page.next_cursor, hasMore: page.has_more, loading: false, error: null,
        total: page.total === undefined ? null : page.total,
      })),
      (error) => !c.signal.aborted && error.code !== 'aborted' &&
        setState((s) => ({ ...s, loading: false, error })));
  };
  useEffect(() => {
    fetchPage(null, false);
    return () => ctl.current && ctl.current.abort();
  }, [path, JSON.stringify(query), tick, ...deps]);
  return {
    ...state,
    more: () => fetchPage(state.cursor, true),
    reload: () => setTick((t) => t + 1),
    setItems: (f) => setState((s) => ({ ...s, items: f(s.items) })),
  };
}

// ---- Showing things ----

// An error of the API: its message and code, and what to do about a 429.
export function ErrorBox({ error, onRetry }) {
  if (!error) return null;
  const code = error.code || 'error';
  return html`<div class="error" role="alert">
    <strong>${error.message || String(error)}</strong>
    <span class="code">${code}${error.status ? ` · HTTP ${error.status}` : ''}${
      error.param ? ` · ${error.param}` : ''}</span>
    ${error.retryAfter ? html`<span> Try again in ${error.retryAfter} s.</span>` : null}
    ${error.status && code !== 'network_error' ? html` <a href=${'/docs/errors/' + code}
      target="_blank" rel="noopener noreferrer">About this error</a>` : null}
    ${onRetry ? html` <button type="button" class="link" onClick=${onRetry}>Retry</button>`
              : null}
  </div>`;
}

// The API error of a form, if it names 'param' (or one of its sub-fields).
export function paramError(error, param) {
  if (!error || !error.param) return null;
  return error.param === param || error.param.startsWith(param + '.') ||
         error.param.startsWith(param + '[') ? error : null;
}

let fieldIds = 0;

// A labelled form field; the server's error is shown at the field it names. The child is a
// function given the input's attributes (id, aria-invalid, aria-describedby):
//   <${Field} label="Title" param="title" error=${err}>${(a) => html`<input ...${a} />`}</${Field}>
export function Field({ label, param, error, hint, children }) {
  const id = useRef('f' + ++fieldIds).current;
  const mine = paramError(error, param);
  const render = Array.isArray(children) ? children[0] : children;
  const attrs = { id, 'aria-invalid': mine ? 'true' : undefined,
                  'aria-describedby': mine ? id + '-err' : hint ? id + '-hint' : undefined };
  return html`<div class=${'field' + (mine ? ' invalid' : '')}>
    <label for=${id}>${label}</label>
    ${render(attrs)}
    ${hint && !mine ? html`<small class="hint" id=${id + '-hint'}>${hint}</small>` : null}
    ${mine ? html`<small class="field-error" id=${id + '-err'}>${mine.message}
      <span class="code"> (${mine.code})</span></small>` : null}
  </div>`;
}

export function Loading({ what }) {
  return html`<p class="loading" role="status">Loading${what ? ' ' + what : ''}…</p>`;
}

export function Empty({ children }) {
  return html`<p class="empty">${children}</p>`;
}

// "Load more" under a paged list, or nothing at its end.
export function More({ list }) {
  if (list.error) return html`<${ErrorBox} error=${list.error} onRetry=${list.reload} />`;
  if (!list.hasMore) return null;
  return html`<button type="button" class="more" disabled=${list.loading}
    onClick=${list.more}>${list.loading ? 'Loading…' : 'Load more'}</button>`;
}

export function Status({ value }) {
  return html`<span class=${'status s-' + String(value || 'none').replace(/[^a-z_]/g, '')}>${
    String(value || '—').replace(/_/g, ' ')}</span>`;
}

export function when(iso) {
  if (!iso) return '—';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return String(iso);
  return d.toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'short' });
}

export function Time({ iso }) {
  return iso ? html`<time datetime=${iso} title=${iso}>${when(iso)}</time>` : '—';
}

export function ms(n) {
  if (n === null || n === undefined) return '—';
  return n < 1000 ? `${Math.round(n)} ms` : `${(n / 1000).toFixed(1)} s`;
}

// A recurring schedule of the API in words ('Every Monday at 09:00 UTC'); 'none' without one.
export function describeRecurring(r, none) {
  if (!r) return none;
  const at = `at ${r.time} UTC`;
  const day = r.day ? r.day.charAt(0).toUpperCase() + r.day.slice(1) : '';
  if (r.frequency === 'daily') return `Every day ${at}`;
  if (r.frequency === 'weekdays') return `Monday to Friday ${at}`;
  if (r.frequency === 'weekly') return `Every ${day} ${at}`;
  if (r.frequency === 'monthly') return `Monthly on day ${r.day} ${at}`;
  return `${r.frequency} ${at}`;
}

// The JSON of 'v', indented, as text.
export function Json({ value }) {
  // A box that scrolls is focusable, so that a keyboard can scroll it too.
  return html`<pre class="json" tabindex="0">${
    value === undefined ? '' : JSON.stringify(value, null, 2)}</pre>`;
}

// ---- Markdown, inert ----
//
// A small subset (paragraphs, headings, lists, fenced code, inline code, bold, italics, links),
// built as elements by Preact, which sets text as text: a '<img onerror>' in a message shows as
// those characters. A link is kept only when its target is http(s), mailto or a path of this
// site; any other (javascript:, data:) shows as its text alone.

export function safeHref(href) {
  const h = String(href).trim();
  // A backslash is a slash to a browser ('/\evil.example' opens //evil.example, another host),
  // and a browser drops tabs and newlines inside a URL ('/\t/evil.example' too): refused, as
  // are whitespace and control characters.
  if (!h || /[\s\\\u0000-\u001f\u007f]/.test(h)) return null;
  if (/^(https?:|mailto:)/i.test(h)) return h;
  if (/^\/(?!\/)/.test(h) || /^#/.test(h)) return h;
  return null;
}

// Each alternative stops at the next character that could open another of its kind, so a
// failed attempt never reads past where the next attempt starts: the scan is linear in the
// text. (The link pattern used to read to the end of the line from every '[': 32,000 of them
// took half a second.) A link's text holds no '[' and its target no '(' or ')'.
function inline(text, key) {
  const out = [];
  const re = /(`[^`\n]+`)|\*\*([^*\n]+)\*\*|\*([^*\n]+)\*|_([^_\n]+)_|\[([^[\]\n]+)\]\(([^()\s]+)\)/g;
  let last = 0;
  let m;
  let n = 0;
  while ((m = re.exec(text))) {
    if (m.index > last) out.push(text.slice(last, m.index));
    const k = `${key}.${n++}`;
    if (m[1]) out.push(html`<code key=${k}>${m[1].slice(1, -1)}</code>`);
    else if (m[2]) out.push(html`<strong key=${k}>${m[2]}</strong>`);
    else if (m[3] || m[4]) out.push(html`<em key=${k}>${m[3] || m[4]}</em>`);
    else {
      const href = safeHref(m[6]);
      out.push(href ? html`<a key=${k} href=${href} target="_blank"
        rel="noopener noreferrer nofollow">${m[5]}</a>` : html`<span key=${k}>${m[5]}</span>`);
    }
    last = re.lastIndex;
  }
  if (last < text.length) out.push(text.slice(last));
  return out;
}

export function Markdown({ text }) {
  const lines = String(text || '').split('\n');
  const blocks = [];
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    if (/^```/.test(line)) {
      const body = [];
      for (i++; i < lines.length && !/^```/.test(lines[i]); i++) body.push(lines[i]);
      i++;
      blocks.push(html`<pre key=${blocks.length}><code>${body.join('\n')}</code></pre>`);
    } else if (/^#{1,6} /.test(line)) {
      // Inside a page's h2 sections: # and ## are h3, ### h4, and so on.
      const level = Math.min(Math.max(line.match(/^#+/)[0].length + 1, 3), 6);
      const T = 'h' + level;
      blocks.push(html`<${T} key=${blocks.length}>${inline(line.replace(/^#+ /, ''), i)}</${T}>`);
      i++;
    } else if (/^\s*([-*]|\d+\.) /.test(line)) {
      const ordered = /^\s*\d+\./.test(line);
      const items = [];
      for (; i < lines.length && /^\s*([-*]|\d+\.) /.test(lines[i]); i++)
        items.push(html`<li key=${i}>${inline(lines[i].replace(/^\s*([-*]|\d+\.) /, ''), i)}</li>`);
      blocks.push(ordered ? html`<ol key=${blocks.length}>${items}</ol>`
                          : html`<ul key=${blocks.length}>${items}</ul>`);
    } else if (line.trim() === '') {
      i++;
    } else {
      const para = [];
      for (; i < lines.length && lines[i].trim() !== '' && !/^(```|#{1,6} |\s*([-*]|\d+\.) )/
        .test(lines[i]); i++) para.push(lines[i]);
      blocks.push(html`<p key=${blocks.length}>${inline(para.join('\n'), i)}</p>`);
    }
  }
  return html`<div class="md">${blocks}</div>`;
}

// ---- Small pieces ----

// A confirm-then-act button: the first click asks, the second acts.
export function Confirm({ label, ask, onConfirm, disabled }) {
  const [asking, setAsking] = useState(false);
  if (!asking)
    return html`<button type="button" class="danger" disabled=${disabled}
      onClick=${() => setAsking(true)}>${label}</button>`;
  return html`<span class="confirm">${ask || 'Sure?'}
    <button type="button" class="danger" onClick=${() => { setAsking(false); onConfirm(); }}>
      Yes, ${label.toLowerCase()}</button>
    <button type="button" onClick=${() => setAsking(false)}>No</button></span>`;
}

// Run an API action from a button: {run(fn), busy, error, clear()}.
export function useAction() {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState(null);
  const run = async (fn) => {
    setBusy(true);
    setError(null);
    try {
      return await fn();
    } catch (e) {
      setError(e instanceof ApiError ? e : new ApiError(0, 'error', String(e.message || e)));
      return undefined;
    } finally {
      setBusy(false);
    }
  };
  return { run, busy, error, clear: () => setError(null) };
}

export function PageTitle({ children, actions }) {
  useEffect(() => {
    const t = Array.isArray(children) ? children.join('') : String(children);
    document.title = t + ' · Workforce';
  }, [children]);
  return html`<header class="page-head"><h1>${children}</h1>
    ${actions ? html`<div class="actions">${actions}</div>` : null}</header>`;
}

let onceIds = 0;

// A value shown once (an API key's secret, an invitation's link): its field selected and
// focused, a Copy button, and "Done" that hides it for good.
export function ShownOnce({ title, label, value, children, onDone }) {
  const id = useRef('once' + ++onceIds).current;
  const [copied, setCopied] = useState('');
  const input = useRef(null);
  useEffect(() => { if (input.current) input.current.focus(); }, [value]);
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(value);
      setCopied('Copied to the clipboard.');
    } catch (e) {
      setCopied('The browser did not allow copying: select the text and copy it.');
    }
  };
  return html`<section class="panel" aria-labelledby=${id + '-h'}>
    <h2 id=${id + '-h'}>${title}</h2>
    <p><strong>Copy it now: it will not be shown again.</strong>${children ? ' ' : ''}${
      children}</p>
    <div class="secret">
      <label for=${id}>${label}</label>
      <input id=${id} readonly value=${value} ref=${input} size="60" spellcheck="false"
        autocomplete="off" onFocus=${(e) => e.target.select()} />
      <button type="button" onClick=${copy}>Copy</button>
      <button type="button" class="secondary" onClick=${onDone}>Done</button>
    </div>
    <p class="small" role="status">${copied}</p>
  </section>`;
}
