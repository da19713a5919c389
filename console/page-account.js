// SPDX-License-Identifier: MIT
// page-account.js: the organization behind the session (GET /v1/account): tier, credits, the
// tier's rate limits; the person signed in (email, role) and "Change password" (POST
// /v1/users/me/password: it ends every session of the user, this one too, so the console goes
// back to sign-in), or the key's mode and scopes; and the X-RateLimit-* headers of the last
// answer the console received (they change with every request, so they are shown live from the
// session, not from this page's own request).

import { html, useState, useEffect } from './preact.js';
import { api, session, watch, loadAccount, sessionEnded } from './api.js';
import { can } from './roles.js';
import { ErrorBox, Field, Loading, PageTitle, useAction } from './ui.js';
import { MIN_PASSWORD } from './signin.js';

function ChangePassword() {
  const [current, setCurrent] = useState('');
  const [next, setNext] = useState('');
  const [again, setAgain] = useState('');
  const act = useAction();
  const [local, setLocal] = useState(null);
  const submit = (ev) => {
    ev.preventDefault();
    setLocal(null);
    if (next.length < MIN_PASSWORD)
      return setLocal({ code: 'password_too_short', param: 'new_password',
                        message: `The new password needs at least ${MIN_PASSWORD} characters.` });
    if (next !== again)
      return setLocal({ code: 'passwords_differ', param: 'again',
                        message: 'The two new passwords are not the same.' });
    act.run(async () => {
      await api('POST', '/v1/users/me/password',
                { body: { current_password: current, new_password: next } });
      sessionEnded({ status: 0, code: 'password_changed',
                     message: 'Your password was changed: sign in with the new one.' });
    });
    return undefined;
  };
  const error = local || act.error;
  return html`<form class="panel" onSubmit=${submit} noValidate aria-labelledby="pw-h">
    <h2 id="pw-h">Change password</h2>
    <p class="small">Every session of yours ends, this one too: then sign in again.</p>
    <${Field} label="Current password" param="current_password" error=${error}>${(a) => html`<input
      ...${a} type="password" autocomplete="current-password" value=${current} required
      onInput=${(e) => setCurrent(e.target.value)} />`}</${Field}>
    <${Field} label="New password" param="new_password" error=${error}
      hint=${`At least ${MIN_PASSWORD} characters.`}>${(a) => html`<input ...${a}
      type="password" autocomplete="new-password" value=${next} required
      onInput=${(e) => setNext(e.target.value)} />`}</${Field}>
    <${Field} label="The new password again" param="again" error=${error}>${(a) => html`<input
      ...${a} type="password" autocomplete="new-password" value=${again} required
      onInput=${(e) => setAgain(e.target.value)} />`}</${Field}>
    <button type="submit" disabled=${act.busy}>${act.busy ? 'Saving…'
                                                           : 'Change password'}</button>
    <${ErrorBox} error=${error && !['current_password', 'new_password', 'again']
      .includes(error.param) ? error : null} />
  </form>`;
}

export default function AccountPage() {
  const [, setTick] = useState(0);
  const act = useAction();
  useEffect(() => watch(() => setTick((n) => n + 1)), []);
  useEffect(() => { act.run(loadAccount); }, []);
  const a = session.account;
  const r = session.rate;
  return html`
    <${PageTitle} actions=${html`<button type="button" class="secondary" disabled=${act.busy}
      onClick=${() => act.run(loadAccount)}>Refresh</button>`}>Account</${PageTitle}>
    <${ErrorBox} error=${act.error} />
    ${!a ? html`<${Loading} what="the account" />` : html`
      <section class="panel" aria-labelledby="org-h">
        <h2 id="org-h">Organization</h2>
        <dl class="kv">
          <dt>Name</dt><dd>${a.name}</dd>
          <dt>Id</dt><dd><code>${a.id}</code></dd>
          <dt>Subscription tier</dt><dd>${a.tier}</dd>
          <dt>Credits remaining</dt><dd>${a.credits_remaining}</dd>
        </dl>
      </section>
      ${session.user ? html`<section class="panel" aria-labelledby="me-h">
        <h2 id="me-h">You</h2>
        <dl class="kv">
          <dt>Email</dt><dd>${session.user.email}</dd>
          ${session.user.name ? html`<dt>Name</dt><dd>${session.user.name}</dd>` : null}
          <dt>Role</dt><dd>${session.user.role}</dd>
          <dt>Data</dt><dd>${session.mode === 'test'
            ? 'Test: a sandbox with its own data, free, with the Starter limits'
            : 'Live: real data; chats, task runs and workflow steps use credits'}</dd>
        </dl>
      </section>` : html`<section class="panel" aria-labelledby="key-h">
        <h2 id="key-h">This key</h2>
        <dl class="kv">
          <dt>Mode</dt><dd>${a.key.mode === 'test'
            ? 'Test: a sandbox with its own data, free, with the Starter limits'
            : 'Live: real data; chats, task runs and workflow steps use credits'}</dd>
          <dt>Key</dt><dd><code>${a.key.id}</code> ending in <code>${a.key.last4}</code></dd>
          <dt>Scopes</dt><dd>${a.key.scopes && a.key.scopes.length
            ? a.key.scopes.join(', ') : 'all (the key has no scope list)'}</dd>
        </dl>
      </section>`}
      ${can('password') ? html`<${ChangePassword} />` : null}
      <section class="panel" aria-labelledby="limits-h">
        <h2 id="limits-h">Rate limits</h2>
        <dl class="kv">
          <dt>Requests per minute</dt><dd>${a.rate_limits.requests_per_minute}</dd>
          <dt>Burst</dt><dd>${a.rate_limits.burst}</dd>
          <dt>Concurrent requests</dt><dd>${a.rate_limits.concurrent}</dd>
        </dl>
        <h3>The last answer's headers</h3>
        ${r ? html`<dl class="kv" aria-live="polite">
            <dt>X-RateLimit-Limit</dt><dd>${r.limit}</dd>
            <dt>X-RateLimit-Remaining</dt><dd>${r.remaining}</dd>
            <dt>X-RateLimit-Reset</dt><dd>${r.reset} (${
              new Date(r.reset * 1000).toLocaleTimeString()})</dd>
          </dl>` : html`<p class="muted">No answer carried them yet.</p>`}
      </section>`}`;
}
