// SPDX-License-Identifier: MIT
// page-employees.js: the workforce at a glance. #/employees is a grid of every employee with
// its live status (the list is read again every 5 s while the tab is visible, so "active" shows
// while one works), filtered by category and status; #/employees/<id> is one employee: its
// profile, today's figures, the rules of the tools it may call, and the statistics of a period
// with a chart of its series.
//
// The tools editor is employee-tools.js, loaded with an employee's page only (the grid, the
// console's first page, does not need it).

import { html, useState, useEffect } from './preact.js';
import { api } from './api.js';
import { can } from './roles.js';
import { usePaged, useLoad, useInterval, ErrorBox, Loading, Empty, More, Status, Time, ms,
         PageTitle, useAction, Markdown } from './ui.js';

// The tools editor's module, once loaded (employee-tools.js).
let toolsModule = null;

function ToolRules(props) {
  const [mod, setMod] = useState(toolsModule);
  const [error, setError] = useState(null);
  useEffect(() => {
    if (mod) return;
    import('./employee-tools.js').then((m) => {
      toolsModule = m;
      setMod(m);
    }, (e) => setError({ code: 'load_error', message: 'The tools editor could not be loaded: ' +
                                                     e.message }));
  }, []);
  if (error) return html`<${ErrorBox} error=${error} />`;
  return mod ? html`<${mod.ToolRules} ...${props} />` : html`<${Loading} what="the tools" />`;
}

const CATEGORIES = ['operations', 'sales', 'engineering', 'marketing', 'support', 'finance', 'hr'];
const STATUSES = ['idle', 'active', 'offline'];
const PERIODS = [['24h', 'Last 24 hours'], ['7d', 'Last 7 days'], ['30d', 'Last 30 days'],
                 ['90d', 'Last 90 days']];
const REFRESH_MS = 5000;

function Grid({ query }) {
  const [category, setCategory] = useState(query.category || '');
  const [status, setStatus] = useState(query.status || '');
  const list = usePaged('/v1/employees', 'employees', { category, status, limit: 50 }, 'after');
  // Live status: the pages shown so far are read again; their statuses replace the old ones.
  useInterval(() => {
    if (list.loading || list.error) return;
    api('GET', '/v1/employees', { query: { category, status, limit: 100 } }).then((page) => {
      const fresh = new Map(page.employees.map((e) => [e.id, e]));
      list.setItems((items) => items.map((e) => fresh.get(e.id) || e));
    }, () => {});
  }, REFRESH_MS);
  return html`
    <${PageTitle}>Employees</${PageTitle}>
    <form class="filters" onSubmit=${(e) => e.preventDefault()} aria-label="Filters">
      <div class="field"><label for="emp-cat">Category</label>
        <select id="emp-cat" value=${category} onChange=${(e) => setCategory(e.target.value)}>
          <option value="">All</option>
          ${CATEGORIES.map((c) => html`<option key=${c} value=${c}>${c}</option>`)}
        </select></div>
      <div class="field"><label for="emp-status">Status</label>
        <select id="emp-status" value=${status} onChange=${(e) => setStatus(e.target.value)}>
          <option value="">All</option>
          ${STATUSES.map((s) => html`<option key=${s} value=${s}>${s}</option>`)}
        </select></div>
      <p class="small" aria-live="polite">${list.total === null ? '' : `${list.total} employees`}
        · status refreshed every ${REFRESH_MS / 1000} s</p>
    </form>
    ${list.loading && !list.items.length ? html`<${Loading} what="employees" />` : null}
    ${!list.loading && !list.error && !list.items.length
      ? html`<${Empty}>No employee matches these filters.</${Empty}>` : null}
    <ul class="grid plain" aria-label="Employees">
      ${list.items.map((e) => html`<li key=${e.id} class="card">
        <div class="row"><h2><a href=${'#/employees/' + e.id}>${e.name}</a></h2>
          <${Status} value=${e.status} /></div>
        <div>${e.role}</div>
        <div class="small">${e.category} · ${e.tier} tier</div>
        <div class="small">${(e.capabilities || []).join(', ').replace(/_/g, ' ')}</div>
        <div class="row">${can('chat') ? html`<a href=${'#/chat?employee=' + e.id}>Chat</a>`
                                        : null}
          <a href=${'#/tasks?employee=' + e.id}>Tasks</a></div>
      </li>`)}
    </ul>
    <${More} list=${list} />`;
}

// Bars of one series member over time, as SVG. The numbers are also in the table below it.
function Chart({ series, field, label }) {
  const w = 640;
  const h = 140;
  const max = Math.max(1, ...series.map((b) => b[field]));
  const bw = w / Math.max(1, series.length);
  const total = series.reduce((n, b) => n + b[field], 0);
  return html`<figure class="chart">
    <figcaption>${label}: ${total} in the period (most in one bucket: ${max})</figcaption>
    <svg viewBox=${`0 0 ${w} ${h + 18}`} role="img"
      aria-label=${`${label} per bucket, ${total} in all`}>
      <line x1="0" y1=${h} x2=${w} y2=${h} stroke="#8a94a6" />
      ${series.map((b, i) => {
        const bh = (b[field] / max) * (h - 6);
        return html`<rect key=${i} x=${i * bw + 1} y=${h - bh} width=${Math.max(1, bw - 2)}
          height=${bh} fill="#3b5bdb"><title>${new Date(b.start).toLocaleString()}: ${
            b[field]}</title></rect>`;
      })}
      <text x="0" y=${h + 14} font-size="11" fill="#535d6e">${
        new Date(series[0] ? series[0].start : Date.now()).toLocaleDateString()}</text>
      <text x=${w} y=${h + 14} font-size="11" fill="#535d6e" text-anchor="end">now</text>
    </svg>
  </figure>`;
}

function Stats({ id }) {
  const [period, setPeriod] = useState('7d');
  const s = useLoad((signal) => api('GET', `/v1/employees/${id}/stats`,
                                    { query: { period }, signal }), [id, period]);
  const d = s.data;
  return html`<section class="panel" aria-labelledby="stats-h">
    <div class="row"><h2 id="stats-h">Statistics</h2>
      <label for="period" class="muted">Period</label>
      <select id="period" value=${period} onChange=${(e) => setPeriod(e.target.value)}>
        ${PERIODS.map(([p, l]) => html`<option key=${p} value=${p}>${l}</option>`)}
      </select></div>
    <${ErrorBox} error=${s.error} onRetry=${s.reload} />
    ${!d ? html`<${Loading} what="statistics" />` : html`
      <dl class="kv">
        <dt>Messages</dt><dd>${d.messages}</dd>
        <dt>Conversations</dt><dd>${d.conversations}</dd>
        <dt>Tasks completed / failed</dt><dd>${d.tasks_completed} / ${d.tasks_failed}</dd>
        <dt>Workflow steps</dt><dd>${d.workflow_steps}</dd>
        <dt>Response time, mean / p95</dt><dd>${ms(d.avg_response_time_ms)} / ${
          ms(d.p95_response_time_ms)}</dd>
        <dt>Credits used</dt><dd>${d.credits_used}</dd>
        <dt>Satisfaction</dt><dd>${d.satisfaction_score === null ? 'no ratings'
          : `${d.satisfaction_score.toFixed(2)} of 5 (${d.ratings} ratings)`}</dd>
      </dl>
      <${Chart} series=${d.series} field="messages" label="Messages" />
      <${Chart} series=${d.series} field="tasks_completed" label="Tasks completed" />
      <${Chart} series=${d.series} field="credits_used" label="Credits used" />`}
  </section>`;
}

function Detail({ id }) {
  const emp = useLoad((signal) => api('GET', `/v1/employees/${id}`, { signal }), [id]);
  const act = useAction();
  useInterval(emp.reload, REFRESH_MS);
  const e = emp.data;
  const setStatus = (status) => act.run(async () => {
    emp.setData(await api('PATCH', `/v1/employees/${id}`, { body: { status } }));
  });
  if (!e) return html`<${PageTitle}>Employee</${PageTitle}>
    <${ErrorBox} error=${emp.error} onRetry=${emp.reload} />
    ${emp.error ? null : html`<${Loading} what="the employee" />`}`;
  return html`
    <p><a href="#/employees">← All employees</a></p>
    <${PageTitle} actions=${html`
      ${can('chat') ? html`<a class="button" href=${'#/chat?employee=' + e.id}>Chat with ${
        e.name}</a>` : null}
      ${!can('employees.write') ? null : e.status === 'offline'
        ? html`<button type="button" disabled=${act.busy} onClick=${() => setStatus('idle')}>
            Bring back online</button>`
        : html`<button type="button" class="secondary" disabled=${act.busy}
            onClick=${() => setStatus('offline')}>Set offline</button>`}`}>${e.name}</${PageTitle}>
    <${ErrorBox} error=${act.error} />
    <section class="panel" aria-labelledby="profile-h">
      <h2 id="profile-h">Profile</h2>
      <dl class="kv">
        <dt>Status</dt><dd><${Status} value=${e.status} /></dd>
        <dt>Role</dt><dd>${e.role}</dd>
        <dt>Category</dt><dd>${e.category}</dd>
        <dt>Tier</dt><dd>${e.tier}</dd>
        <dt>Capabilities</dt><dd>${(e.capabilities || []).join(', ').replace(/_/g, ' ')}</dd>
        <dt>Tasks completed today</dt><dd>${e.stats ? e.stats.tasks_completed_today : '—'}</dd>
        <dt>Created</dt><dd><${Time} iso=${e.created_at} /></dd>
        <dt>Id</dt><dd><code>${e.id}</code></dd>
      </dl>
      ${e.description ? html`<h3>Description</h3><${Markdown} text=${e.description} />` : null}
    </section>
    <${ToolRules} emp=${e} onSaved=${emp.setData} />
    <${Stats} id=${id} />`;
}

export default function EmployeesPage({ parts, query }) {
  return parts[0] ? html`<${Detail} id=${parts[0]} />` : html`<${Grid} query=${query} />`;
}
