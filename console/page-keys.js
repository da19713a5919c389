// SPDX-License-Identifier: MIT
// page-keys.js: the organization's API keys (sessions only: GET/POST/DELETE /v1/api_keys). A
// developer makes test keys; an admin or owner live keys too (roles.js: 'keys.live'). A new
// key's secret is in the answer of its creation only: it is shown once, with a Copy button.
// The list shows the last four characters, the scopes, who made it, when it was last used and
// when it expires. Deleting a key revokes it at once.

import { html, useState } from './preact.js';
import { api } from './api.js';
import { can } from './roles.js';
import { usePaged, ErrorBox, Field, Empty, More, Loading, Time, Confirm, PageTitle, useAction,
         ShownOnce } from './ui.js';

// The scopes of the API (src/auth/scopes.c); none chosen: the key has full access.
const SCOPES = ['employees:read', 'employees:write', 'chat', 'conversations', 'tasks',
                'knowledge', 'workflows', 'integrations', 'webhooks', 'tools', 'approvals',
                'audit', 'billing'];

// The end of the day 'date' (YYYY-MM-DD, the browser's time zone) in Unix seconds.
function endOfDay(date) {
  const [y, m, d] = date.split('-').map(Number);
  return Math.floor(new Date(y, m - 1, d, 23, 59, 59).getTime() / 1000);
}

function CreateKey({ onCreated }) {
  const live = can('keys.live');
  const [name, setName] = useState('');
  const [mode, setMode] = useState('test');
  const [scopes, setScopes] = useState([]);
  const [expires, setExpires] = useState('');
  const act = useAction();
  const toggle = (s) => setScopes((v) => (v.includes(s) ? v.filter((x) => x !== s)
                                                        : [...v, s]));
  const submit = (ev) => {
    ev.preventDefault();
    act.run(async () => {
      const body = { name: name.trim(), mode };
      if (scopes.length) body.scopes = SCOPES.filter((s) => scopes.includes(s));
      if (expires) body.expires_at = endOfDay(expires);
      const k = await api('POST', '/v1/api_keys', { body });
      setName('');
      setScopes([]);
      setExpires('');
      onCreated(k);
    });
  };
  return html`<form class="panel" onSubmit=${submit} noValidate aria-labelledby="newkey-h">
    <h2 id="newkey-h">New key</h2>
    <div class="filters">
      <${Field} label="Name" param="name" error=${act.error}
        hint="What uses it, e.g. the CRM sync.">${(a) => html`<input ...${a} value=${name}
        required maxlength="100" autocomplete="off" onInput=${(e) => setName(e.target.value)} />`}
      </${Field}>
      <${Field} label="Mode" param="mode" error=${act.error}
        hint=${live ? null : 'Live keys need an admin.'}>${(a) => html`<select ...${a}
        value=${mode} onChange=${(e) => setMode(e.target.value)}>
        <option value="test">Test: a sandbox with its own data, free</option>
        ${live ? html`<option value="live">Live: real data, uses credits</option>` : null}
      </select>`}</${Field}>
      <${Field} label="Expires (optional)" param="expires_at" error=${act.error}
        hint="At the end of that day. Empty: never.">${(a) => html`<input ...${a} type="date"
        value=${expires} onInput=${(e) => setExpires(e.target.value)} />`}</${Field}>
    </div>
    <fieldset class="scopes" aria-describedby="scopes-hint">
      <legend>Scopes</legend>
      ${SCOPES.map((s) => html`<label key=${s}><input type="checkbox" checked=${scopes.includes(s)}
        onChange=${() => toggle(s)} /> ${s}</label>`)}
    </fieldset>
    <p class="small" id="scopes-hint">None chosen: the key may use every part of the API.</p>
    <button type="submit" disabled=${act.busy}>${act.busy ? 'Creating…' : 'Create key'}</button>
    <${ErrorBox} error=${act.error && !['name', 'mode', 'expires_at'].includes(act.error.param)
                        ? act.error : null} />
  </form>`;
}

function KeyRow({ k, onRemoved }) {
  const act = useAction();
  const remove = () => act.run(async () => {
    await api('DELETE', `/v1/api_keys/${k.id}`);
    onRemoved(k.id);
  });
  return html`<tr>
    <th scope="row">${k.name || html`<span class="muted">(no name)</span>`}<br /><code
      class="small">${k.id}</code></th>
    <td>${k.mode}</td>
    <td><code>…${k.last4}</code></td>
    <td>${k.scopes && k.scopes.length ? k.scopes.join(', ') : 'all'}</td>
    <td>${k.created_by ? html`<code>${k.created_by}</code>` : '—'}</td>
    <td><${Time} iso=${k.created_at} /></td>
    <td><${Time} iso=${k.last_used_at} /></td>
    <td>${k.expires_at ? html`<${Time} iso=${k.expires_at} />` : 'never'}</td>
    <td>${k.mode === 'test' || can('keys.live') ? html`<${Confirm}
      label=${'Delete ' + (k.name || k.id)} ask="Revoke this key now?" disabled=${act.busy}
      onConfirm=${remove} />` : null}<${ErrorBox} error=${act.error} /></td>
  </tr>`;
}

export default function KeysPage() {
  const list = usePaged('/v1/api_keys', 'api_keys', { limit: 50 });
  const [created, setCreated] = useState(null);
  return html`
    <${PageTitle}>API keys</${PageTitle}>
    ${created ? html`<${ShownOnce} title=${'The secret of ' + created.name} label="Secret"
      value=${created.key} onDone=${() => setCreated(null)}>A program sends it as${' '}
      <code>Authorization: Bearer …</code>. If it is lost, delete the key and make
      another.</${ShownOnce}>` : null}
    <${CreateKey} onCreated=${(k) => { setCreated(k); list.reload(); }} />
    <section aria-labelledby="keys-h">
      <h2 id="keys-h">Keys</h2>
      ${list.loading && !list.items.length ? html`<${Loading} what="the keys" />` : null}
      ${!list.loading && !list.items.length && !list.error
        ? html`<${Empty}>No key yet.</${Empty}>` : null}
      ${list.items.length ? html`<table>
        <thead><tr><th scope="col">Name</th><th scope="col">Mode</th><th scope="col">Ends
          in</th><th scope="col">Scopes</th><th scope="col">Made by</th>
          <th scope="col">Created</th><th scope="col">Last used</th>
          <th scope="col">Expires</th><th scope="col">Actions</th></tr></thead>
        <tbody>${list.items.map((k) => html`<${KeyRow} key=${k.id} k=${k}
          onRemoved=${(id) => list.setItems((items) => items.filter((x) => x.id !== id))} />`)}
        </tbody></table>` : null}
      <${More} list=${list} />
    </section>`;
}
