// SPDX-License-Identifier: MIT
// api.js: the console's one door to the server. Every page is a client of the public /v1 API,
// signed in one of two ways: a person's session (POST /v1/sessions: the server keeps it, the
// browser holds it in an HttpOnly cookie this code never sees; every request that is not a GET
// carries the session's CSRF token in X-CSRF-Token), or an API key the user typed, kept in this
// tab's session storage and sent nowhere else (for local use).

const KEY = 'workforce.key';
const MODE = 'workforce.mode'; // the data a session looks at: 'live' (the default) or 'test'
const listeners = new Set();

// What the shell shows: the key (null: none), or the session's user (null: none) with its CSRF
// token and mode; 'checked' once GET /v1/sessions/current has answered (or a key is held); the
// account behind either, the X-RateLimit-* headers of the last answer, and why the last
// sign-out happened.
export const session = {
  key: sessionStorage.getItem(KEY),
  user: null,
  csrf: null,
  mode: sessionStorage.getItem(MODE) === 'test' ? 'test' : 'live',
  checked: !!sessionStorage.getItem(KEY),
  account: null,
  rate: null,
  notice: null,
};

// Signed in at all (by a key or by a session).
export function signedIn() {
  return !!(session.key || session.user);
}

function changed() {
  for (const fn of listeners) fn(session);
}

// Call fn(session) after every change; returns the unsubscribe function.
export function watch(fn) {
  listeners.add(fn);
  return () => listeners.delete(fn);
}

export function keyMode(key) {
  if (/^svc_live_sk_/.test(key)) return 'live';
  if (/^svc_test_sk_/.test(key)) return 'test';
  return null;
}

// An error of the contract ({status, code, message, param}), or one of the console's own:
// code 'network_error' (the server was not reached) or 'aborted'.
export class ApiError extends Error {
  constructor(status, code, message, param, retryAfter) {
    super(message);
    this.status = status;
    this.code = code;
    this.param = param || null;
    this.retryAfter = retryAfter || null;
  }
}

function noteRate(res) {
  const limit = res.headers.get('X-RateLimit-Limit');
  if (limit === null) return;
  session.rate = {
    limit: Number(limit),
    remaining: Number(res.headers.get('X-RateLimit-Remaining')),
    reset: Number(res.headers.get('X-RateLimit-Reset')),
    at: Date.now(),
  };
  changed();
}

async function errorOf(res) {
  let body = null;
  try {
    body = await res.json();
  } catch {
    /* not JSON: described below */
  }
  const e = body && body.error;
  if (e && typeof e.code === 'string')
    return new ApiError(res.status, e.code, e.message || e.code, e.param,
                        res.headers.get('Retry-After'));
  return new ApiError(res.status, 'http_' + res.status,
                      `The server answered ${res.status} ${res.statusText}.`);
}

// A 401 ends the session: the key was revoked, expired or mistyped, or the session ended
// (signed out elsewhere, expired, its password changed, its user disabled).
function unauthorized(err) {
  if (err.status !== 401 || !signedIn()) return;
  session.key = null;
  session.user = null;
  session.csrf = null;
  session.account = null;
  session.notice = err;
  sessionStorage.removeItem(KEY);
  changed();
}

function url(path, query) {
  const u = new URL(path, location.origin);
  for (const [k, v] of Object.entries(query || {}))
    if (v !== undefined && v !== null && v !== '') u.searchParams.set(k, String(v));
  return u.pathname + u.search;
}

// The headers of a request: the key; or, for a session, its CSRF token on anything but a GET
// and the mode it looks at (the cookie goes by itself).
function headers(method, extra) {
  const h = { ...extra };
  if (session.key) {
    h.Authorization = 'Bearer ' + session.key;
  } else if (session.user) {
    if (method !== 'GET' && method !== 'HEAD') h['X-CSRF-Token'] = session.csrf;
    if (session.mode === 'test') h['Workforce-Mode'] = 'test';
  }
  return h;
}

async function send(method, path, opts, key) {
  const init = { method, headers: headers(method, opts.headers), signal: opts.signal,
                 credentials: 'same-origin' };
  if (key) init.headers.Authorization = 'Bearer ' + key;
  if (opts.body !== undefined) {
    init.headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(opts.body);
  }
  try {
    return await fetch(url(path, opts.query), init);
  } catch (e) {
    if (e.name === 'AbortError') throw new ApiError(0, 'aborted', 'Cancelled.');
    throw new ApiError(0, 'network_error',
                       'The server could not be reached. Check that it is running.');
  }
}

// One request: the JSON answer, or an ApiError thrown.
// opts: {body, query, signal, headers}.
export async function api(method, path, opts = {}) {
  const res = await send(method, path, opts);
  noteRate(res);
  if (!res.ok) {
    const err = await errorOf(res);
    unauthorized(err);
    throw err;
  }
  return res.json();
}

// Sign in with 'key': it is checked with GET /v1/account before it is kept.
export async function signIn(key) {
  key = key.trim();
  if (!keyMode(key))
    throw new ApiError(0, 'invalid_api_key',
                       'That is not an API key: keys begin with svc_live_sk_ or svc_test_sk_.');
  const res = await send('GET', '/v1/account', {}, key);
  noteRate(res);
  if (!res.ok) throw await errorOf(res);
  session.key = key;
  session.user = null;
  session.csrf = null;
  session.checked = true;
  session.account = await res.json();
  session.notice = null;
  sessionStorage.setItem(KEY, key);
  changed();
  return session.account;
}

// Keep the session the server answered ({user, csrf_token, mode, ...}).
function adopt(s) {
  session.key = null;
  session.user = s.user;
  session.csrf = s.csrf_token;
  session.mode = s.mode === 'test' ? 'test' : 'live';
  session.account = null;
  session.notice = null;
  session.checked = true;
  sessionStorage.removeItem(KEY);
  changed();
}

// On load: the session the cookie holds, if any (a key of this tab wins: nothing is asked).
// A 401 is 'signed out' (invalid_session: it ended, and the sign-in page says so). The tab's
// data (setMode) is asked for again, so a reload, or a trip to Stripe's payment page and back,
// stays on the test data it was looking at.
export async function restore() {
  if (session.key) return;
  try {
    const res = await send('GET', '/v1/sessions/current', {
      headers: session.mode === 'test' ? { 'Workforce-Mode': 'test' } : {} });
    if (res.ok) {
      adopt(await res.json());
      return;
    }
    const err = await errorOf(res);
    if (err.status !== 401) throw err;
    if (err.code === 'invalid_session') session.notice = err;
  } catch (e) {
    session.notice = e;
  }
  session.checked = true;
  changed();
}

// Sign in with an email and a password (a session: the cookie is set by the answer).
export async function signInPassword(email, password) {
  const res = await send('POST', '/v1/sessions', { body: { email: email.trim(), password } });
  if (!res.ok) throw await errorOf(res);
  adopt(await res.json());
}

// What the sign-in page offers (GET /v1/sessions/options; a server without it: passwords only).
export async function signInOptions() {
  const res = await send('GET', '/v1/sessions/options', {});
  if (res.status === 404) return { password: true, oidc: false };
  if (!res.ok) throw await errorOf(res);
  return res.json();
}

// Look at live or test data (a session only; a key has one mode).
export function setMode(mode) {
  session.mode = mode === 'test' ? 'test' : 'live';
  sessionStorage.setItem(MODE, session.mode);
  session.account = null;
  changed();
}

// Sign out: a session ends at the server too (DELETE /v1/sessions/current); the console forgets
// it even when that request fails (the cookie is HttpOnly: the server is the one to clear it).
export async function signOut() {
  if (session.user) {
    try {
      const res = await send('DELETE', '/v1/sessions/current', {});
      if (!res.ok && res.status !== 401) session.notice = await errorOf(res);
    } catch (e) {
      session.notice = e;
    }
  }
  session.key = null;
  session.user = null;
  session.csrf = null;
  session.account = null;
  session.rate = null;
  if (!session.notice || session.notice.status === 401) session.notice = null;
  sessionStorage.removeItem(KEY);
  changed();
}

// The session ended at the server (a password change ends every session): forget it here.
export function sessionEnded(notice) {
  session.user = null;
  session.csrf = null;
  session.account = null;
  session.notice = notice || null;
  changed();
}

// Every employee (for the pickers of the pages), read page by page.
export async function allEmployees(signal) {
  const out = [];
  let after = null;
  do {
    const page = await api('GET', '/v1/employees', { query: { limit: 100, after }, signal });
    out.push(...page.employees);
    after = page.has_more ? page.next_cursor : null;
  } while (after);
  return out;
}

export async function loadAccount() {
  session.account = await api('GET', '/v1/account');
  changed();
  return session.account;
}

// A streamed POST (Server-Sent Events): onEvent(name, data) for each event, data parsed as JSON
// when it is JSON. Resolves when the stream ends after its last event (message.completed, or
// error); a stream cut before it rejects with network_error.
export async function stream(path, body, onEvent, signal) {
  const res = await send('POST', path, { body, signal });
  noteRate(res);
  if (!res.ok) {
    const err = await errorOf(res);
    unauthorized(err);
    throw err;
  }
  const reader = res.body.getReader();
  const text = new TextDecoder();
  let buf = '';
  let ended = false;
  for (;;) {
    let chunk;
    try {
      chunk = await reader.read();
    } catch (e) {
      if (signal && signal.aborted) throw new ApiError(0, 'aborted', 'Cancelled.');
      throw new ApiError(0, 'network_error',
                         'The connection was cut before the reply was complete.');
    }
    if (chunk.done) break;
    buf += text.decode(chunk.value, { stream: true });
    let cut;
    while ((cut = buf.search(/\r?\n\r?\n/)) >= 0) {
      const block = buf.slice(0, cut);
      buf = buf.slice(buf.slice(cut).match(/^\r?\n\r?\n/)[0].length + cut);
      let name = 'message';
      const data = [];
      for (const line of block.split(/\r?\n/)) {
        if (line.startsWith(':')) continue;
        const i = line.indexOf(':');
        const field = i < 0 ? line : line.slice(0, i);
        const value = i < 0 ? '' : line.slice(i + 1).replace(/^ /, '');
        if (field === 'event') name = value;
        else if (field === 'data') data.push(value);
      }
      if (!data.length) continue;
      let parsed = data.join('\n');
      try {
        parsed = JSON.parse(parsed);
      } catch {
        /* plain text data */
      }
      // A chat stream ends at its message.completed (or its error event).
      if (name === 'message.completed' || name === 'done' || name === 'error') ended = true;
      onEvent(name, parsed);
    }
  }
  if (!ended)
    throw new ApiError(0, 'network_error', 'The connection was cut before the reply was complete.');
}

// A multipart upload with progress: onProgress(sent, total) as the bytes leave. Resolves with the
// JSON answer; rejects with an ApiError.
export function upload(path, form, onProgress) {
  return new Promise((resolve, reject) => {
    const x = new XMLHttpRequest();
    x.open('POST', path);
    for (const [k, v] of Object.entries(headers('POST'))) x.setRequestHeader(k, v);
    x.responseType = 'text';
    x.upload.onprogress = (ev) => onProgress && onProgress(ev.loaded, ev.total);
    x.onerror = () => reject(new ApiError(0, 'network_error',
                                          'The upload was cut: the server could not be reached.'));
    x.onload = () => {
      const limit = x.getResponseHeader('X-RateLimit-Limit');
      if (limit !== null) {
        session.rate = {
          limit: Number(limit),
          remaining: Number(x.getResponseHeader('X-RateLimit-Remaining')),
          reset: Number(x.getResponseHeader('X-RateLimit-Reset')),
          at: Date.now(),
        };
        changed();
      }
      let body = null;
      try {
        body = JSON.parse(x.responseText);
      } catch {
        /* described below */
      }
      if (x.status >= 200 && x.status < 300) return resolve(body);
      const e = body && body.error;
      const err = e ? new ApiError(x.status, e.code, e.message, e.param,
                                   x.getResponseHeader('Retry-After'))
                    : new ApiError(x.status, 'http_' + x.status,
                                   `The server answered ${x.status}.`);
      unauthorized(err);
      reject(err);
    };
    x.send(form);
  });
}
