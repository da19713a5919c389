// SPDX-License-Identifier: MIT
// page-webhooks.js: outbound webhooks and the events they carry. #/webhooks lists the endpoints
// (with a form to add one) and the events (filtered by type); #/webhooks/endpoints/<we_id> is one
// endpoint: edit it, enable or disable it, rotate its secret, delete it, and its deliveries;
// #/webhooks/events/<evt_id> is one event: its data, its deliveries, and "Redeliver".
//
// Decisions:
// - The signing secret is answered only at creation and by rotate_secret, so it lives only in
//   the state of the component that asked for it (SecretOnce): never in the address, never in
//   storage. It is shown in a read-only field (selectable) with a copy button and a plain
//   warning, until the user says it is saved or leaves the page.
// - The event types offered are the document's EventType enum; "all events" sends ["*"] (and
//   disables the other boxes, since the server would keep "*" alone anyway).
// - An event's deliveries have no list of their own in the API: they are read from each
//   endpoint's deliveries with `event_id` (an organization has at most 16 endpoints, each with
//   at most one delivery of an event), and "Redeliver" answers them all at once.
// - The event's data scrolls in a focusable region (axe: a scrolling area must be reachable by
//   keyboard), since the shared Json's own <pre> is not focusable.
// - Lists of deliveries are read again every few seconds while one is pending (and only while
//   the first page alone is shown, so that "Load more" is not undone).

import { html, useState, useEffect, useRef } from './preact.js';
import { api, ApiError } from './api.js';
import { usePaged, useLoad, useInterval, ErrorBox, Field, paramError, Loading, Empty, More,
         Status, Time, Json, Confirm, PageTitle, useAction, loadStyle } from './ui.js';

loadStyle('page-webhooks.css');

// docs/openapi.json, components.schemas.EventType.
const TYPES = [
  ['task.completed', 'A task run completed'],
  ['task.failed', 'A task run failed'],
  ['workflow_run.completed', 'A workflow run completed'],
  ['workflow_run.failed', 'A workflow run failed'],
  ['document.ready', 'A document is ready'],
  ['document.failed', 'A document failed'],
  ['integration.connected', 'An integration was connected'],
  ['integration.disconnected', 'An integration was disconnected'],
  ['integration.error', 'An integration went into error'],
];
const PAGE = 20;
const POLL_MS = 5000;
const FORM_PARAMS = ['url', 'events', 'description', 'enabled'];

const endpointHref = (id) => '#/webhooks/endpoints/' + encodeURIComponent(id);
const eventHref = (id) => '#/webhooks/events/' + encodeURIComponent(id);

function eventsText(events) {
  return events && events.includes('*') ? 'All events' : (events || []).join(', ');
}

// What an event is about, in a few words (the object's own name where it has one).
function summary(ev) {
  const o = (ev.data && ev.data.object) || {};
  if (ev.type.startsWith('task.')) return o.title || o.id;
  if (ev.type.startsWith('workflow_run.')) return `Run ${o.id || ''} of ${o.workflow_id || '?'}`;
  if (ev.type.startsWith('document.')) return o.name || o.filename || o.id;
  if (ev.type.startsWith('integration.')) return o.name || o.provider;
  return o.id || '';
}

// ---- The secret, once ----

function SecretOnce({ secret, endpoint, rotated, onDone }) {
  const [copied, setCopied] = useState('');
  const input = useRef(null);
  // Focus goes to the secret (selected), so that keyboard and screen reader users land on it.
  useEffect(() => { if (input.current) input.current.focus(); }, [secret]);
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(secret);
      setCopied('Copied to the clipboard.');
    } catch (e) {
      setCopied('The browser did not allow copying: select the text and copy it.');
    }
  };
  return html`<section class="panel wh-secret" aria-labelledby="wh-secret-h">
    <h2 id="wh-secret-h">${rotated ? 'The new signing secret' : 'Signing secret'} of
      ${' '}<span class="wh-url">${endpoint.url}</span></h2>
    <p class="wh-warning"><strong>Copy it now: it will not be shown again.</strong>${' '}
      Receivers use it to check the <code>webhook-signature</code> header. If it is lost, rotate
      the secret to get a new one.${rotated ? ' The previous secret keeps signing too for 24 '
        + 'hours, so receivers can switch without losing a delivery.' : ''}</p>
    <div class="row">
      <label for="wh-secret-value">Secret</label>
      <input id="wh-secret-value" class="wh-secret-value" readonly value=${secret} ref=${input}
        spellcheck="false" autocomplete="off" onFocus=${(e) => e.target.select()} />
      <button type="button" onClick=${copy}>Copy</button>
      <button type="button" class="secondary" onClick=${onDone}>I have saved it</button>
    </div>
    <p class="small" role="status">${copied}</p>
  </section>`;
}

// ---- The endpoint form (create and edit) ----

function EventsPicker({ value, onChange, error }) {
  const mine = paramError(error, 'events');
  const all = value.includes('*');
  // An updater, not a value: two quick clicks both count.
  const toggle = (t, on) => onChange((cur) => (on ? [...cur.filter((v) => v !== t), t]
                                                  : cur.filter((v) => v !== t)));
  return html`<fieldset class=${'field wh-events' + (mine ? ' invalid' : '')}
    aria-describedby=${mine ? 'wh-events-err' : undefined}>
    <legend>Events</legend>
    <label class="wh-check"><input type="checkbox" checked=${all}
      onChange=${(e) => onChange(e.target.checked ? ['*'] : [])} />
      <span>All events, including types added later (<code>*</code>)</span></label>
    ${TYPES.map(([t, label]) => html`<label key=${t} class="wh-check"><input type="checkbox"
      checked=${all || value.includes(t)} disabled=${all}
      onChange=${(e) => toggle(t, e.target.checked)} />
      <span><code>${t}</code> <span class="muted">${label}</span></span></label>`)}
    ${mine ? html`<small class="field-error" id="wh-events-err">${mine.message}
      <span class="code"> (${mine.code})</span></small>` : null}
  </fieldset>`;
}

// The form's error: at its field when it names one, above the form otherwise.
function FormError({ error }) {
  if (!error || FORM_PARAMS.some((p) => paramError(error, p))) return null;
  return html`<${ErrorBox} error=${error} />`;
}

// 'withEnabled': the create form has the box; an endpoint's page has its own Enable/Disable.
function EndpointForm({ initial, submitLabel, onSubmit, onCancel, idPrefix, withEnabled }) {
  const [url, setUrl] = useState(initial.url || '');
  const [events, setEvents] = useState(initial.events || []);
  const [description, setDescription] = useState(initial.description || '');
  const [enabled, setEnabled] = useState(initial.enabled !== false);
  const act = useAction();
  const [saved, setSaved] = useState(false);
  const submit = async (ev) => {
    ev.preventDefault();
    setSaved(false);
    const ok = await act.run(async () => {
      if (!events.length)
        throw new ApiError(0, 'invalid_request',
                           'Choose at least one event type, or all events.', 'events');
      const body = { url: url.trim(), events, description: description.trim() || null };
      return onSubmit(withEnabled ? { ...body, enabled } : body);
    });
    if (ok) setSaved(true);
  };
  return html`<form class="wh-form" onSubmit=${submit} novalidate>
    <${FormError} error=${act.error} />
    <${Field} label="URL" param="url" error=${act.error}
      hint="An https:// address that answers a 2xx within 10 s.">${(a) => html`<input ...${a}
        type="url" value=${url} required maxlength="2048" placeholder="https://example.com/hook"
        onInput=${(e) => setUrl(e.target.value)} />`}</${Field}>
    <${EventsPicker} value=${events} onChange=${setEvents} error=${act.error} />
    <${Field} label="Description (optional)" param="description" error=${act.error}>${(a) =>
      html`<textarea ...${a} maxlength="500" value=${description}
        onInput=${(e) => setDescription(e.target.value)}></textarea>`}</${Field}>
    ${withEnabled ? html`<div class=${'field' + (paramError(act.error, 'enabled')
      ? ' invalid' : '')}>
      <label class="wh-check" for=${idPrefix + '-enabled'}><input type="checkbox"
        id=${idPrefix + '-enabled'} checked=${enabled}
        onChange=${(e) => setEnabled(e.target.checked)} />
        <span>Enabled: new events are delivered to it</span></label>
      ${paramError(act.error, 'enabled') ? html`<small class="field-error">${
        act.error.message}</small>` : null}
    </div>` : null}
    <div class="actions">
      <button type="submit" disabled=${act.busy}>${act.busy ? 'Saving…' : submitLabel}</button>
      ${onCancel ? html`<button type="button" class="secondary"
        onClick=${onCancel}>Cancel</button>` : null}
      <span role="status" class="small">${saved && !onCancel ? 'Saved.' : ''}</span>
    </div>
  </form>`;
}

// ---- Lists ----

function DeliveriesTable({ items, endpoints, onRedeliver, busy }) {
  return html`<div class="wh-scroll"><table>
    <thead><tr>
      ${endpoints ? html`<th scope="col">Endpoint</th>` : html`<th scope="col">Event</th>`}
      <th scope="col">Status</th><th scope="col">Attempts</th>
      <th scope="col">Last result</th><th scope="col">Next attempt</th>
      <th scope="col">Updated</th>${onRedeliver ? html`<th scope="col">Action</th>` : null}
    </tr></thead>
    <tbody>${items.map((d) => html`<tr key=${d.id}>
      ${endpoints ? html`<td class="wh-url"><a href=${endpointHref(d.endpoint_id)}>${
          endpoints[d.endpoint_id] ? endpoints[d.endpoint_id].url : d.endpoint_id}</a></td>`
        : html`<td><a href=${eventHref(d.event_id)}><code>${d.event_id}</code></a></td>`}
      <td><${Status} value=${d.status} /></td>
      <td>${d.attempts}</td>
      <td class="wh-result">${d.last_status_code ? html`<span>HTTP ${d.last_status_code}</span>`
        : null}${d.last_status_code && d.last_error ? ' · ' : ''}${d.last_error ||
        (d.last_status_code ? '' : d.attempts ? 'no answer' : 'not attempted yet')}</td>
      <td><${Time} iso=${d.next_attempt_at} /></td>
      <td><${Time} iso=${d.updated_at} /></td>
      ${onRedeliver ? html`<td><button type="button" class="secondary" disabled=${busy}
        onClick=${() => onRedeliver(d.endpoint_id)}>Redeliver<span class="sr-only"> to ${
          endpoints[d.endpoint_id] ? endpoints[d.endpoint_id].url : d.endpoint_id}</span>
        </button></td>` : null}
    </tr>`)}</tbody>
  </table></div>`;
}

function Endpoints({ onCreated }) {
  const list = usePaged('/v1/webhook_endpoints', 'webhook_endpoints', { limit: PAGE });
  const [adding, setAdding] = useState(false);
  const create = async (body) => {
    const ep = await api('POST', '/v1/webhook_endpoints', { body });
    setAdding(false);
    list.reload();
    onCreated(ep);
    return ep;
  };
  return html`<section class="panel" aria-labelledby="wh-endpoints-h">
    <div class="row wh-head"><h2 id="wh-endpoints-h">Endpoints</h2>
      ${adding ? null : html`<button type="button" onClick=${() => setAdding(true)}>
        New endpoint</button>`}</div>
    <p class="small">Each event is POSTed to every enabled endpoint that takes its type, signed
      with the endpoint's secret (Standard Webhooks). Failed deliveries are tried again for about
      17 hours.</p>
    ${adding ? html`<section class="wh-new" aria-labelledby="wh-new-h">
      <h3 id="wh-new-h">New endpoint</h3>
      <${EndpointForm} initial=${{ events: ['*'] }} submitLabel="Create endpoint"
        onSubmit=${create} onCancel=${() => setAdding(false)} idPrefix="wh-new" withEnabled />
    </section>` : null}
    ${list.loading && !list.items.length ? html`<${Loading} what="endpoints" />` : null}
    ${!list.loading && !list.error && !list.items.length
      ? html`<${Empty}>No endpoint yet: add one to receive events.</${Empty}>` : null}
    ${list.items.length ? html`<div class="wh-scroll"><table>
      <thead><tr><th scope="col">URL</th><th scope="col">Events</th>
        <th scope="col">State</th><th scope="col">Description</th>
        <th scope="col">Created</th></tr></thead>
      <tbody>${list.items.map((ep) => html`<tr key=${ep.id}>
        <td class="wh-url"><a href=${endpointHref(ep.id)}>${ep.url}</a></td>
        <td>${eventsText(ep.events)}</td>
        <td><${Status} value=${ep.enabled ? 'enabled' : 'disabled'} /></td>
        <td>${ep.description || html`<span class="muted">—</span>`}</td>
        <td><${Time} iso=${ep.created_at} /></td>
      </tr>`)}</tbody>
    </table></div>` : null}
    <${More} list=${list} />
  </section>`;
}

function Events({ query }) {
  const [type, setType] = useState(query.type || '');
  const list = usePaged('/v1/events', 'events', { type, limit: PAGE });
  return html`<section class="panel" aria-labelledby="wh-events-h">
    <div class="row wh-head"><h2 id="wh-events-h">Events</h2>
      <button type="button" class="secondary" disabled=${list.loading}
        onClick=${list.reload}>Refresh</button></div>
    <p class="small">What happened in this organization, newest first, kept 30 days.</p>
    <form class="filters" onSubmit=${(e) => e.preventDefault()} aria-label="Event filter">
      <div class="field"><label for="wh-type">Type</label>
        <select id="wh-type" value=${type} onChange=${(e) => setType(e.target.value)}>
          <option value="">All types</option>
          ${TYPES.map(([t]) => html`<option key=${t} value=${t}>${t}</option>`)}
        </select></div>
    </form>
    ${list.loading && !list.items.length ? html`<${Loading} what="events" />` : null}
    ${!list.loading && !list.error && !list.items.length ? html`<${Empty}>${type
      ? `No ${type} event in the last 30 days.`
      : 'No event yet: they come when tasks, workflow runs, documents or integrations change.'
    }</${Empty}>` : null}
    ${list.items.length ? html`<div class="wh-scroll"><table>
      <thead><tr><th scope="col">Type</th><th scope="col">About</th>
        <th scope="col">Event</th><th scope="col">When</th></tr></thead>
      <tbody>${list.items.map((ev) => html`<tr key=${ev.id}>
        <td><code>${ev.type}</code></td>
        <td>${summary(ev)}</td>
        <td><a href=${eventHref(ev.id)}><code>${ev.id}</code></a></td>
        <td><${Time} iso=${ev.created_at} /></td>
      </tr>`)}</tbody>
    </table></div>` : null}
    <${More} list=${list} />
  </section>`;
}

function Overview({ query }) {
  const [created, setCreated] = useState(null);
  return html`
    <${PageTitle}>Webhooks & events</${PageTitle}>
    ${created ? html`<${SecretOnce} secret=${created.secret} endpoint=${created}
      onDone=${() => setCreated(null)} />` : null}
    <${Endpoints} onCreated=${setCreated} />
    <${Events} query=${query} />`;
}

// ---- One endpoint ----

function EndpointDeliveries({ id }) {
  const list = usePaged(`/v1/webhook_endpoints/${encodeURIComponent(id)}/deliveries`,
                        'deliveries', { limit: PAGE });
  const live = list.items.length <= PAGE && list.items.some((d) => d.status === 'pending');
  useInterval(() => !list.loading && list.reload(), live ? POLL_MS : 0);
  return html`<section class="panel" aria-labelledby="wh-deliveries-h">
    <div class="row wh-head"><h2 id="wh-deliveries-h">Deliveries</h2>
      <button type="button" class="secondary" disabled=${list.loading}
        onClick=${list.reload}>Refresh</button></div>
    ${list.loading && !list.items.length ? html`<${Loading} what="deliveries" />` : null}
    ${!list.loading && !list.error && !list.items.length
      ? html`<${Empty}>Nothing was delivered to this endpoint yet.</${Empty}>` : null}
    ${list.items.length ? html`<${DeliveriesTable} items=${list.items} />` : null}
    <${More} list=${list} />
  </section>`;
}

function EndpointDetail({ id }) {
  const path = '/v1/webhook_endpoints/' + encodeURIComponent(id);
  const ep = useLoad((signal) => api('GET', path, { signal }), [id]);
  const act = useAction();
  const [secret, setSecret] = useState(null);
  const e = ep.data;
  const patch = (body) => act.run(async () => ep.setData(await api('PATCH', path, { body })));
  const rotate = () => act.run(async () => {
    const fresh = await api('POST', path + '/rotate_secret', { body: {} });
    setSecret(fresh.secret);
  });
  const remove = () => act.run(async () => {
    await api('DELETE', path);
    location.hash = '#/webhooks';
  });
  const back = html`<p><a href="#/webhooks">← Webhooks & events</a></p>`;
  if (!e) return html`${back}<${PageTitle}>Webhook endpoint</${PageTitle}>
    <${ErrorBox} error=${ep.error} onRetry=${ep.reload} />
    ${ep.error ? null : html`<${Loading} what="the endpoint" />`}`;
  return html`${back}
    <${PageTitle} actions=${html`
      <button type="button" class="secondary" disabled=${act.busy}
        onClick=${() => patch({ enabled: !e.enabled })}>${
        e.enabled ? 'Disable' : 'Enable'}</button>
      <${Confirm} label="Rotate secret" disabled=${act.busy} onConfirm=${rotate}
        ask="A new secret? The old one keeps signing for 24 hours." />
      <${Confirm} label="Delete" disabled=${act.busy} onConfirm=${remove}
        ask="Delete this endpoint and its deliveries?" />`}>Webhook endpoint</${PageTitle}>
    <${ErrorBox} error=${act.error} />
    ${secret ? html`<${SecretOnce} secret=${secret} endpoint=${e} rotated
      onDone=${() => setSecret(null)} />` : null}
    <section class="panel" aria-labelledby="wh-ep-h">
      <h2 id="wh-ep-h">Endpoint</h2>
      <dl class="kv">
        <dt>URL</dt><dd class="wh-url">${e.url}</dd>
        <dt>State</dt><dd><${Status} value=${e.enabled ? 'enabled' : 'disabled'} />${e.enabled
          ? null : html`<span class="small"> pending deliveries wait until it is enabled</span>`}
          </dd>
        <dt>Events</dt><dd>${eventsText(e.events)}</dd>
        <dt>Description</dt><dd>${e.description || '—'}</dd>
        <dt>Created</dt><dd><${Time} iso=${e.created_at} /></dd>
        <dt>Updated</dt><dd><${Time} iso=${e.updated_at} /></dd>
        <dt>Id</dt><dd><code>${e.id}</code></dd>
      </dl>
    </section>
    <section class="panel" aria-labelledby="wh-edit-h">
      <h2 id="wh-edit-h">Edit</h2>
      <${EndpointForm} key=${e.id} initial=${e} submitLabel="Save changes"
        idPrefix="wh-edit" onSubmit=${async (body) => {
          const fresh = await api('PATCH', path, { body });
          ep.setData(fresh);
          return fresh;
        }} />
    </section>
    <${EndpointDeliveries} id=${id} />`;
}

// ---- One event ----

// Every endpoint (at most 16), then each one's delivery of the event.
async function eventDeliveries(id, signal) {
  const endpoints = [];
  let before = null;
  do {
    const page = await api('GET', '/v1/webhook_endpoints',
                           { query: { limit: 100, before }, signal });
    endpoints.push(...page.webhook_endpoints);
    before = page.has_more ? page.next_cursor : null;
  } while (before);
  const lists = await Promise.all(endpoints.map((ep) => api('GET',
    `/v1/webhook_endpoints/${encodeURIComponent(ep.id)}/deliveries`,
    { query: { event_id: id, limit: 100 }, signal }).then((p) => p.deliveries)));
  return { endpoints: Object.fromEntries(endpoints.map((ep) => [ep.id, ep])),
           deliveries: lists.flat() };
}

function EventDetail({ id }) {
  const ev = useLoad((signal) => api('GET', '/v1/events/' + encodeURIComponent(id), { signal }),
                     [id]);
  const dl = useLoad((signal) => eventDeliveries(id, signal), [id]);
  const act = useAction();
  const d = dl.data;
  useInterval(() => !dl.loading && dl.reload(),
              d && d.deliveries.some((x) => x.status === 'pending') ? POLL_MS : 0);
  const redeliver = (endpointId) => act.run(async () => {
    const res = await api('POST', `/v1/events/${encodeURIComponent(id)}/redeliver`,
                          { body: endpointId ? { endpoint_id: endpointId } : {} });
    // The answer is the event's deliveries; an endpoint created since is looked up again.
    if (res.deliveries.some((x) => !d || !d.endpoints[x.endpoint_id])) dl.reload();
    else dl.setData({ ...d, deliveries: res.deliveries });
  });
  const back = html`<p><a href="#/webhooks">← Webhooks & events</a></p>`;
  const e = ev.data;
  if (!e) return html`${back}<${PageTitle}>Event</${PageTitle}>
    <${ErrorBox} error=${ev.error} onRetry=${ev.reload} />
    ${ev.error ? null : html`<${Loading} what="the event" />`}`;
  return html`${back}
    <${PageTitle} actions=${html`<button type="button" disabled=${act.busy}
      onClick=${() => redeliver(null)}>${act.busy ? 'Redelivering…' : 'Redeliver'}</button>`}>
      Event ${e.type}</${PageTitle}>
    <${ErrorBox} error=${act.error} />
    <section class="panel" aria-labelledby="wh-evt-h">
      <h2 id="wh-evt-h">Event</h2>
      <dl class="kv">
        <dt>Type</dt><dd><code>${e.type}</code></dd>
        <dt>About</dt><dd>${summary(e)}</dd>
        <dt>When</dt><dd><${Time} iso=${e.created_at} /></dd>
        <dt>Id</dt><dd><code>${e.id}</code></dd>
      </dl>
      <h3>Data</h3>
      <p class="small">The object as it was when the change was committed; a delivery's body is
        this whole event.</p>
      <div class="wh-data" tabindex="0" role="region" aria-label="The event's data, as JSON">
        <${Json} value=${e.data} /></div>
    </section>
    <section class="panel" aria-labelledby="wh-evt-dl-h">
      <div class="row wh-head"><h2 id="wh-evt-dl-h">Deliveries</h2>
        <button type="button" class="secondary" disabled=${dl.loading}
          onClick=${dl.reload}>Refresh</button></div>
      <p class="small">"Redeliver" makes the delivery to each enabled endpoint that takes this
        type due now, and creates one where there was none.</p>
      <${ErrorBox} error=${dl.error} onRetry=${dl.reload} />
      ${!d ? dl.error ? null : html`<${Loading} what="deliveries" />`
        : !d.deliveries.length ? html`<${Empty}>This event was not delivered anywhere: no
            enabled endpoint took its type when it happened.</${Empty}>`
        : html`<${DeliveriesTable} items=${d.deliveries} endpoints=${d.endpoints}
            onRedeliver=${redeliver} busy=${act.busy} />`}
    </section>`;
}

export default function WebhooksPage({ parts, query }) {
  if (parts[0] === 'endpoints' && parts[1]) return html`<${EndpointDetail} key=${parts[1]}
    id=${parts[1]} />`;
  if (parts[0] === 'events' && parts[1]) return html`<${EventDetail} key=${parts[1]}
    id=${parts[1]} />`;
  return html`<${Overview} query=${query} />`;
}
