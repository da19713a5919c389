// SPDX-License-Identifier: MIT
// signin.js: the pages before the console: sign-in (email and password by default; single
// sign-on when the server offers it; an API key as the secondary, local choice) and
// #/set-password?token=... (the link of an invitation, or of a password reset).
//
// Decisions:
// - The password form says only what the server says: every failed sign-in is the same 401
//   invalid_credentials, so the page cannot tell a wrong password from an unknown email either.
// - Single sign-on is a plain link to /v1/sessions/oidc/start: the identity provider's round
//   trip is the browser's, and comes back at /console/ signed in, or at #/sign-in?error=<code>,
//   shown here in words.

import { html, useState, useEffect, useRef } from './preact.js';
import { api, session, signIn, signInPassword, signInOptions } from './api.js';
import { ErrorBox, Field } from './ui.js';

export const MIN_PASSWORD = 12;

// The ?error= codes the single sign-on round trip comes back with, in words.
const SSO_ERRORS = {
  oidc_failed: 'Single sign-on did not complete: the identity provider did not confirm who ' +
    'you are. Try again, or sign in with your password.',
  oidc_email_not_allowed: 'Single sign-on worked, but that email has no account here. Ask an ' +
    'administrator of your organization to invite you.',
  user_disabled: 'Your account is disabled. Ask an administrator of your organization to ' +
    'enable it.',
};

function ssoError(code) {
  if (!code) return null;
  return { code, message: SSO_ERRORS[code] || 'Sign-in did not complete (' + code + ').' };
}

// Why the last session ended (or could not be read), in words.
function noticeText(n) {
  if (n.code === 'invalid_session') return 'You were signed out: your session ended.';
  if (n.status === 401) return 'You were signed out: the server refused the key.';
  return n.message || String(n);
}

function KeyForm({ onBack }) {
  const [key, setKey] = useState('');
  const [error, setError] = useState(null);
  const [busy, setBusy] = useState(false);
  const input = useRef(null);
  // shown by a button: the keyboard goes on in its field
  useEffect(() => { if (input.current) input.current.focus(); }, []);
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
  return html`<form onSubmit=${submit} aria-labelledby="signin-title">
    <h1 id="signin-title">Workforce console</h1>
    <p>Sign in with an API key (for local use). It stays in this browser tab (session storage)
      and is sent only to this server.</p>
    <label for="key">API key</label>
    <input id="key" name="key" type="password" autocomplete="off" spellcheck="false"
      placeholder="svc_test_sk_…" value=${key} onInput=${(e) => setKey(e.target.value)}
      required ref=${input} aria-describedby=${error ? 'signin-error' : undefined} />
    <button type="submit" disabled=${busy}>${busy ? 'Checking…' : 'Sign in'}</button>
    <div id="signin-error"><${ErrorBox} error=${error} /></div>
    <p class="small">No key yet? <code>build/workforce keys create --org ORG --mode test</code>
      prints one. The API reference is at <a href="/docs">/docs</a>.</p>
    <p><button type="button" class="link" onClick=${onBack}>Sign in with email and
      password</button></p>
  </form>`;
}

function PasswordForm({ query, onKey }) {
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const [error, setError] = useState(() => ssoError(query.error));
  const [busy, setBusy] = useState(false);
  const [options, setOptions] = useState({ password: true, oidc: false });
  useEffect(() => {
    signInOptions().then(setOptions, () => {});
  }, []);
  const submit = async (ev) => {
    ev.preventDefault();
    setBusy(true);
    setError(null);
    try {
      await signInPassword(email, password);
    } catch (e) {
      setError(e);
      setBusy(false);
    }
  };
  const notice = session.notice;
  return html`<form onSubmit=${submit} aria-labelledby="signin-title">
    <h1 id="signin-title">Workforce console</h1>
    ${notice ? html`<p class="notice">${noticeText(notice)}</p>` : null}
    <label for="email">Email</label>
    <input id="email" name="email" type="email" autocomplete="username" spellcheck="false"
      value=${email} onInput=${(e) => setEmail(e.target.value)} required autofocus />
    <label for="password">Password</label>
    <input id="password" name="password" type="password" autocomplete="current-password"
      value=${password} onInput=${(e) => setPassword(e.target.value)} required
      aria-describedby=${error ? 'signin-error' : undefined} />
    <button type="submit" disabled=${busy}>${busy ? 'Signing in…' : 'Sign in'}</button>
    <div id="signin-error"><${ErrorBox} error=${error} /></div>
    ${options.oidc ? html`<a class="button sso" href="/v1/sessions/oidc/start">Sign in with
      single sign-on</a>` : null}
    <p class="small">New here? An administrator of your organization invites you: the link of
      the invitation sets your password.</p>
    <p><button type="button" class="link" onClick=${onKey}>Use an API key</button></p>
  </form>`;
}

// The sign-in page. 'query' is the address's (?error= after single sign-on).
export function SignIn({ query = {} }) {
  const [byKey, setByKey] = useState(false);
  useEffect(() => { document.title = 'Sign in · Workforce'; }, []);
  return html`<main class="signin" id="main">
    ${byKey ? html`<${KeyForm} onBack=${() => setByKey(false)} />`
            : html`<${PasswordForm} query=${query} onKey=${() => setByKey(true)} />`}
  </main>`;
}

// #/set-password?token=...: a new password (twice, at least 12 characters), then sign-in.
export function SetPassword({ query = {} }) {
  const [pw, setPw] = useState('');
  const [again, setAgain] = useState('');
  const [error, setError] = useState(null);
  const [busy, setBusy] = useState(false);
  const [done, setDone] = useState(null); // the user whose password was set
  useEffect(() => { document.title = 'Set your password · Workforce'; }, []);
  const token = query.token || '';
  const submit = async (ev) => {
    ev.preventDefault();
    setError(null);
    if (pw.length < MIN_PASSWORD) {
      setError({ code: 'password_too_short', param: 'password',
                 message: `The password needs at least ${MIN_PASSWORD} characters.` });
      return;
    }
    if (pw !== again) {
      setError({ code: 'passwords_differ', param: 'again',
                 message: 'The two passwords are not the same.' });
      return;
    }
    setBusy(true);
    try {
      setDone(await api('POST', '/v1/users/set_password', { body: { token, password: pw } }));
    } catch (e) {
      setError(e);
    }
    setBusy(false);
  };
  if (done)
    return html`<main class="signin" id="main"><div class="card-form" role="region"
      aria-labelledby="setpw-title">
      <h1 id="setpw-title">Password set</h1>
      <p role="status">The password of <strong>${done.email}</strong> is set. Sign in with it.</p>
      <a class="button" href="#/sign-in">Go to sign-in</a>
    </div></main>`;
  return html`<main class="signin" id="main">
    <form onSubmit=${submit} aria-labelledby="setpw-title" noValidate>
      <h1 id="setpw-title">Set your password</h1>
      ${token ? html`<p>Choose the password of your Workforce account: at least ${
        MIN_PASSWORD} characters. This link works once.</p>`
        : html`<p class="notice">This link has no token: open the link of your invitation
          again, as it was sent to you.</p>`}
      <${Field} label="New password" param="password" error=${error}
        hint=${`At least ${MIN_PASSWORD} characters.`}>${(a) => html`<input ...${a}
        type="password" autocomplete="new-password" value=${pw} required
        onInput=${(e) => setPw(e.target.value)} />`}</${Field}>
      <${Field} label="The same password again" param="again" error=${error}>${(a) => html`<input
        ...${a} type="password" autocomplete="new-password" value=${again} required
        onInput=${(e) => setAgain(e.target.value)} />`}</${Field}>
      <button type="submit" disabled=${busy || !token}>${busy ? 'Saving…'
                                                              : 'Set password'}</button>
      <${ErrorBox} error=${error && !['password', 'again'].includes(error.param) ? error
                                                                                : null} />
      <p class="small"><a href="#/sign-in">Back to sign-in</a></p>
    </form>
  </main>`;
}
