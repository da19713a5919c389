// SPDX-License-Identifier: MIT
// page-integrations.js: the five providers (#/integrations): each one's status, account, dates,
// error and workflow actions; connect (the OAuth round trip) and disconnect.
//
// Decisions:
// - The status shown folds the API's two fields into what the user means: `available` is
//   "disconnected" when the server has the provider's OAuth client, "not configured" when not.
// - Connect is a round trip in this tab: the API's authorization URL is opened with a
//   `redirect_uri` of /console/, and the callback sends the browser back there with
//   `?provider=&status=&error=`, which the shell turns into #/integrations?... (the key is still
//   in this tab's session storage). The outcome is shown here (Outcome). The statuses are also
//   re-read whenever the tab regains focus, and every few seconds while a provider is pending.
// - 400 integration_not_configured names the settings the operator must set: they are listed,
//   in full, under the message.

import { html, useState, useEffect, useRef } from './preact.js';
import { api } from './api.js';
import { can } from './roles.js';
import { usePaged, useInterval, ErrorBox, Loading, Empty, More, Status, Time, Confirm,
         PageTitle, useAction, loadStyle } from './ui.js';

loadStyle('page-integrations.css');

const CATEGORIES = {
  team_chat: 'Team chat',
  calendar: 'Calendar',
  email_calendar: 'Email and calendar',
  code_hosting: 'Code hosting',
  crm: 'CRM',
};

// What an integration's `error` means, for the codes the API documents.
const ERRORS = {
  access_denied: 'The authorization was declined at the provider.',
  invalid_grant: 'The provider refused the authorization code (expired or already used).',
  provider_unreachable: 'The provider\'s token endpoint did not answer.',
  invalid_response: 'The provider answered something that is not a token.',
  reauthorization_required: 'The provider refused to refresh the token: connect again.',
};

const PENDING_POLL_MS = 4000;

// The status as the user thinks of it.
function shownStatus(i) {
  if (i.status === 'available') return i.configured ? 'disconnected' : 'not_configured';
  return i.status;
}

// The full setting names in an integration_not_configured message:
// "WORKFORCE_OAUTH_SLACK_CLIENT_ID and _CLIENT_SECRET" gives both names in full.
const NAME = /\b(WORKFORCE_[A-Z0-9_]+|_[A-Z][A-Z0-9_]*)\b/g;
const PREFIX = /^WORKFORCE_OAUTH_[A-Z0-9_]+?(?=_(CLIENT|SIGNING|SCOPES|AUTH|TOKEN|REVOKE|API))/;

function settingNames(message) {
  const names = [];
  let prefix = '';
  for (const m of String(message || '').matchAll(NAME)) {
    let n = m[1];
    if (n.startsWith('WORKFORCE_')) {
      const p = n.match(PREFIX);
      prefix = p ? p[0] : '';
    } else if (prefix) {
      n = prefix + n;
    } else {
      continue;
    }
    if (!names.includes(n)) names.push(n);
  }
  return names;
}

function NotConfigured({ error }) {
  const names = settingNames(error.message);
  return html`<${ErrorBox} error=${error} />
    ${names.length ? html`<div class="notice integ-settings">
      <p>To offer it, the server's operator sets ${names.length > 1 ? 'these settings'
        : 'this setting'}${' '}and restarts the server:</p>
      <ul>${names.map((n) => html`<li key=${n}><code>${n}</code></li>`)}</ul>
    </div>` : null}`;
}

// The outcome of a callback, when one brought the user back here with its query.
function Outcome({ query, list }) {
  const search = Object.fromEntries(new URLSearchParams(location.search));
  const q = query.provider && query.status ? query : search;
  if (!q.provider || !q.status) return null;
  const item = list.items.find((i) => i.provider === q.provider);
  const name = item ? item.name : q.provider;
  if (q.status === 'connected')  // unless it has changed since (a later disconnect)
    return item && item.status !== 'connected' ? null
      : html`<p class="notice integ-outcome" role="status">${name} is connected.</p>`;
  return html`<div class="error" role="alert"><strong>${name} was not connected${
    q.error ? ': ' + (ERRORS[q.error] || q.error) : '.'}</strong>
    ${q.error ? html`<span class="code">${q.error}</span>` : null}</div>`;
}

function Card({ item, onChange }) {
  const act = useAction();
  const status = shownStatus(item);
  const connect = async () => {
    const res = await act.run(() => api('POST', `/v1/integrations/${item.provider}/connect`,
                                        { body: { redirect_uri: location.origin + '/console/' } }));
    if (res) location.assign(res.authorization_url);
  };
  const disconnect = () => act.run(async () => {
    onChange(await api('DELETE', `/v1/integrations/${item.provider}`));
  });
  const h = 'integ-' + item.provider;
  const connectedish = item.status === 'connected' || item.status === 'error' ||
                       item.status === 'pending';
  return html`<li class="card integ-card">
    <div class="row"><h2 id=${h}>${item.name}</h2><${Status} value=${status} /></div>
    <div class="small">${CATEGORIES[item.category] || item.category}</div>
    <dl class="kv">
      ${item.account ? html`<dt>Account</dt><dd>${item.account}</dd>` : null}
      ${item.connected_at ? html`<dt>Connected</dt><dd><${Time} iso=${item.connected_at} />
        </dd>` : null}
      ${item.expires_at ? html`<dt>Token expires</dt><dd><${Time} iso=${item.expires_at} />
        <span class="small"> (renewed before)</span></dd>` : null}
      ${item.scopes && item.scopes.length
        ? html`<dt>Scopes</dt><dd class="integ-wrap">${item.scopes.join(', ')}</dd>` : null}
      ${item.operations && item.operations.length
        ? html`<dt>Workflow actions</dt><dd>${item.operations.map((o, n) => html`${
          n ? ', ' : ''}<code key=${o}>${o}</code>`)}</dd>` : null}
    </dl>
    ${item.events_url && can('integrations.write') ? html`<details class="integ-events">
      <summary>Inbound events URL<span class="sr-only"> of ${item.name}</span></summary>
      <p class="small">Give this address to ${item.name} as its event (webhook) URL: its signed
        events start the workflows triggered by them.</p>
      <code>${item.events_url}</code>
    </details>` : null}
    ${item.error ? html`<p class="integ-error"><strong>Error:</strong> ${
      ERRORS[item.error] || 'The last connection failed.'} <code>${item.error}</code></p>` : null}
    ${!item.configured && status !== 'connected' ? html`<p class="small">The server has no OAuth
      client for ${item.name} yet.</p>` : null}
    ${act.error && act.error.code === 'integration_not_configured'
      ? html`<${NotConfigured} error=${act.error} />` : html`<${ErrorBox} error=${act.error} />`}
    ${can('integrations.write') ? html`<div class="actions">
      <button type="button" disabled=${act.busy} onClick=${connect}>${act.busy ? 'Working…'
          : item.status === 'connected' || item.status === 'error' ? 'Reconnect'
          : 'Connect'}<span class="sr-only"> ${item.name}</span></button>
      ${connectedish ? html`<${Confirm} label="Disconnect" disabled=${act.busy}
        ask=${`Disconnect ${item.name}?`}
        onConfirm=${disconnect} />` : null}
    </div>` : null}
  </li>`;
}

export default function IntegrationsPage({ query }) {
  const list = usePaged('/v1/integrations', 'integrations', {});
  // Back from the provider's tab (or any other): the statuses are read again, once (coming back
  // fires both 'focus' and 'visibilitychange').
  const last = useRef(0);
  const reload = useRef(null);
  reload.current = () => {
    if (Date.now() - last.current < 1000) return;
    last.current = Date.now();
    list.reload();
  };
  useEffect(() => {
    const onFocus = () => reload.current();
    const onVisible = () => document.visibilityState === 'visible' && reload.current();
    addEventListener('focus', onFocus);
    document.addEventListener('visibilitychange', onVisible);
    return () => {
      removeEventListener('focus', onFocus);
      document.removeEventListener('visibilitychange', onVisible);
    };
  }, []);
  const pending = list.items.some((i) => i.status === 'pending');
  useInterval(() => !list.loading && list.reload(), pending ? PENDING_POLL_MS : 0);
  const replace = (fresh) =>
    list.setItems((items) => items.map((i) => (i.provider === fresh.provider ? fresh : i)));
  return html`
    <${PageTitle} actions=${html`<button type="button" class="secondary" disabled=${list.loading}
      onClick=${list.reload}>Refresh</button>`}>Integrations</${PageTitle}>
    <p class="muted">Connect your organization's accounts so that employees can act there from
      workflows. The statuses are read again whenever you come back to this tab.</p>
    <${Outcome} query=${query} list=${list} />
    ${list.loading && !list.items.length ? html`<${Loading} what="integrations" />` : null}
    ${!list.loading && !list.error && !list.items.length
      ? html`<${Empty}>No provider is offered by this server.</${Empty}>` : null}
    <ul class="grid plain integ-grid" aria-label="Providers" aria-busy=${list.loading}>
      ${list.items.map((i) => html`<${Card} key=${i.provider} item=${i} onChange=${replace} />`)}
    </ul>
    <${More} list=${list} />`;
}
