// SPDX-License-Identifier: MIT
// page-account.js: the organization and key behind the session (GET /v1/account): tier,
// credits, the tier's rate limits, the key's mode and scopes, and the X-RateLimit-* headers of
// the last answer the console received (they change with every request, so they are shown
// live from the session, not from this page's own request).

import { html, useState, useEffect } from './preact.js';
import { session, watch, loadAccount } from './api.js';
import { ErrorBox, Loading, PageTitle, useAction } from './ui.js';

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
      <section class="panel" aria-labelledby="key-h">
        <h2 id="key-h">This key</h2>
        <dl class="kv">
          <dt>Mode</dt><dd>${a.key.mode === 'test'
            ? 'Test: a sandbox with its own data, free, with the Starter limits'
            : 'Live: real data; chats, task runs and workflow steps use credits'}</dd>
          <dt>Key</dt><dd><code>${a.key.id}</code> ending in <code>${a.key.last4}</code></dd>
          <dt>Scopes</dt><dd>${a.key.scopes && a.key.scopes.length
            ? a.key.scopes.join(', ') : 'all (the key has no scope list)'}</dd>
        </dl>
      </section>
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
