// SPDX-License-Identifier: MIT
// page-audit.js: the audit log (GET /v1/audit_events, admins and owners; a key whose scopes name
// audit): who did what to what, from where, newest first, paged with "Load more". The filters
// (actor, action, target, since) are the address's query (#/audit?actor_id=...), so a filtered
// view can be linked to; an actor or a target in the table links to the view filtered by it.

import { html, useState, useEffect } from './preact.js';
import { usePaged, Empty, More, Loading, Time, PageTitle } from './ui.js';

const FILTERS = ['actor_id', 'action', 'target_id', 'since'];

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
  return '#/audit' + (s ? '?' + s : '');
}

export default function AuditPage({ query }) {
  const applied = pick(query || {});
  const [draft, setDraft] = useState(applied);
  const key = JSON.stringify(applied);
  useEffect(() => setDraft(applied), [key]);
  const list = usePaged('/v1/audit_events', 'audit_events', { ...applied, limit: 50 });
  const set = (k) => (e) => setDraft((d) => ({ ...d, [k]: e.target.value }));
  const submit = (ev) => {
    ev.preventDefault();
    location.hash = hrefOf(draft);
  };
  const filtered = FILTERS.some((k) => applied[k]);
  return html`
    <${PageTitle}>Audit log</${PageTitle}>
    <form class="filters" onSubmit=${submit} aria-label="Audit filters">
      <div class="field"><label for="au-actor">Actor id</label>
        <input id="au-actor" value=${draft.actor_id} onInput=${set('actor_id')}
          spellcheck="false" placeholder="usr_… or key_…" /></div>
      <div class="field"><label for="au-action">Action</label>
        <input id="au-action" value=${draft.action} onInput=${set('action')}
          spellcheck="false" placeholder="user.create" /></div>
      <div class="field"><label for="au-target">Target id</label>
        <input id="au-target" value=${draft.target_id} onInput=${set('target_id')}
          spellcheck="false" /></div>
      <div class="field"><label for="au-since">Since</label>
        <input id="au-since" type="datetime-local" value=${toLocal(draft.since)}
          onInput=${(e) => setDraft((d) => ({ ...d, since: toUnix(e.target.value) }))} /></div>
      <div class="field"><button type="submit">Filter</button></div>
      ${filtered ? html`<div class="field"><a href="#/audit">Clear the filters</a></div>` : null}
    </form>
    ${list.loading && !list.items.length ? html`<${Loading} what="the audit log" />` : null}
    ${!list.loading && !list.items.length && !list.error
      ? html`<${Empty}>${filtered ? 'No event matches these filters.' : 'No event yet.'}</${
        Empty}>` : null}
    ${list.items.length ? html`<table aria-label="Audit events">
      <thead><tr><th scope="col">When</th><th scope="col">Actor</th><th scope="col">Action</th>
        <th scope="col">Target</th><th scope="col">Mode</th><th scope="col">From</th>
        <th scope="col">Request</th></tr></thead>
      <tbody>${list.items.map((ev) => html`<tr key=${ev.id}>
        <td><${Time} iso=${ev.created_at} /></td>
        <td>${ev.actor.label || ev.actor.type}<br /><a class="small"
          href=${hrefOf({ actor_id: ev.actor.id })}><code>${ev.actor.id}</code></a></td>
        <td><code>${ev.action}</code></td>
        <td>${ev.target ? html`${ev.target.type}<br /><a class="small"
          href=${hrefOf({ target_id: ev.target.id })}><code>${ev.target.id}</code></a>`
          : '—'}</td>
        <td>${ev.mode}</td>
        <td>${ev.ip || '—'}${ev.user_agent ? html`<br /><span class="small">${
          ev.user_agent.slice(0, 80)}</span>` : null}</td>
        <td>${ev.request_id ? html`<code class="small">${ev.request_id}</code>` : '—'}</td>
      </tr>`)}</tbody></table>` : null}
    <${More} list=${list} />`;
}
