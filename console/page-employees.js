// SPDX-License-Identifier: MIT
// page-employees.js: the workforce at a glance. #/employees is a grid of every employee with
// its live status (the list is read again every 5 s while the tab is visible, so "active" shows
// while one works), filtered by category and status; #/employees/<id> is one employee: its
// profile, today's figures, the rules of the tools it may call, and the statistics of a period
// with a chart of its series.
//
// Decisions (the tools editor):
// - The rules are edited as a whole and saved with one PATCH {tools: [...]}, as the API takes
//   them. Until then they are a draft: the employee read again every 5 s does not overwrite
//   them, and "Discard changes" goes back to what is stored.
// - A rule names a tool or a pattern ending in '*'. The names offered while typing are the
//   organization's tools (GET /v1/tools) and their families (`slack.*`, `mcp.crm.*`); any other
//   name is accepted as typed (an MCP server may add it later): the server checks it, and its
//   error lands at the row its `param` names (`tools[2].name`). Each row shows which of the
//   organization's tools it matches today.

import { html, useState, useEffect, useRef } from './preact.js';
import { api } from './api.js';
import { usePaged, useLoad, useInterval, ErrorBox, Loading, Empty, More, Status, Time, ms,
         PageTitle, useAction, Markdown, paramError, loadStyle } from './ui.js';

loadStyle('page-employees.css');

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
        <div class="row"><a href=${'#/chat?employee=' + e.id}>Chat</a>
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

const POLICIES = [['auto', 'Auto: runs at once'], ['approve', 'Approve: waits for a person'],
                  ['deny', 'Deny: never offered']];

// Whether the rule 'rule' (a name, or a pattern ending in '*') names the tool 'tool'.
function ruleMatches(rule, tool) {
  return rule.endsWith('*') ? tool.startsWith(rule.slice(0, -1)) : rule === tool;
}

// The names offered while typing a rule: every tool, and the family of each dotted name.
function suggestions(tools) {
  const names = new Set();
  for (const t of tools) {
    const parts = t.name.split('.');
    for (let i = 1; i < parts.length; i++) names.add(parts.slice(0, i).join('.') + '.*');
  }
  return [...tools.map((t) => [t.name, t.description]),
          ...[...names].sort().map((n) => [n, 'every tool whose name begins ' + n.slice(0, -1)])];
}

let ruleKeys = 0;
const rowsOf = (tools) => (tools || []).map((t) => ({ key: ++ruleKeys, name: t.name,
                                                      policy: t.policy }));

function Matches({ rule, tools }) {
  if (!tools) return null;
  const hit = tools.filter((t) => ruleMatches(rule, t.name));
  if (!rule) return html`<span class="muted">—</span>`;
  if (!hit.length) return html`<span class="muted">No tool of this organization yet</span>`;
  const shown = hit.slice(0, 4).map((t) => t.name).join(', ');
  return html`<span>${shown}${hit.length > 4 ? ` and ${hit.length - 4} more` : ''}</span>`;
}

// The rules of the tools the employee 'emp' may call: edited as a draft, saved as a whole.
function ToolRules({ emp, onSaved }) {
  const catalog = useLoad((signal) => api('GET', '/v1/tools', { signal }), []);
  const [rows, setRows] = useState(() => rowsOf(emp.tools));
  const [dirty, setDirty] = useState(false);
  const [adding, setAdding] = useState({ name: '', policy: 'auto' });
  const [addError, setAddError] = useState(null);
  const [announce, setAnnounce] = useState('');
  const save = useAction();
  const addRef = useRef(null);
  const stored = JSON.stringify(emp.tools || []);
  useEffect(() => {
    if (!dirty) setRows(rowsOf(emp.tools));
  }, [stored]);
  const tools = catalog.data ? catalog.data.tools : null;

  const edit = (f) => {
    setRows(f);
    setDirty(true);
    setAnnounce('');
    save.clear(); // the indexes of the error may no longer match
  };
  const set = (key, patch) => edit((rs) => rs.map((r) => (r.key === key ? { ...r, ...patch } : r)));
  const remove = (key, name) => {
    edit((rs) => rs.filter((r) => r.key !== key));
    setAnnounce(`Rule ${name || ''} removed (not saved yet).`);
  };
  const add = (ev) => {
    ev.preventDefault();
    const name = adding.name.trim();
    if (!name) {
      setAddError('Type a tool name or a pattern such as slack.* first.');
      return;
    }
    if (rows.some((r) => r.name === name)) {
      setAddError(`${name} has a rule already: change its policy above.`);
      return;
    }
    setAddError(null);
    edit((rs) => [...rs, { key: ++ruleKeys, name, policy: adding.policy }]);
    setAdding({ name: '', policy: adding.policy });
    setAnnounce(`Rule ${name} added (not saved yet).`);
    if (addRef.current) addRef.current.focus();
  };
  const submit = () => save.run(async () => {
    const body = { tools: rows.map((r) => ({ name: r.name.trim(), policy: r.policy })) };
    const e = await api('PATCH', `/v1/employees/${emp.id}`, { body });
    setDirty(false);
    setRows(rowsOf(e.tools));
    onSaved(e);
    setAnnounce('Tool rules saved.');
  });
  const discard = () => {
    setRows(rowsOf(emp.tools));
    setDirty(false);
    save.clear();
    setAnnounce('Changes discarded.');
  };
  // An error of the whole list, or of a member no row shows, goes to the top.
  const rowError = (i, field) => paramError(save.error, `tools[${i}].${field}`);
  const topError = save.error && !rows.some((_, i) => rowError(i, 'name') || rowError(i, 'policy'))
    ? save.error : null;

  return html`<section class="panel" aria-labelledby="tools-h">
    <h2 id="tools-h">Tools</h2>
    <p class="small">The tools ${emp.name} may call while it works. A rule names a tool, or a
      family of tools with <code>*</code> (<code>slack.*</code>); the most specific rule wins, and
      a tool no rule names is not offered. <em>Auto</em> calls run at once, <em>approve</em>${
      ' '}calls wait in the <a href="#/approvals">approvals inbox</a>, <em>deny</em> is never
      offered.</p>
    <${ErrorBox} error=${catalog.error} onRetry=${catalog.reload} />
    <datalist id="tool-names">
      ${suggestions(tools || []).map(([n, d]) => html`<option key=${n} value=${n}>${d}</option>`)}
    </datalist>
    ${rows.length ? html`<div class="table-wrap"><table class="rules">
      <caption class="sr-only">Tool rules of ${emp.name}</caption>
      <thead><tr><th scope="col">Tool or pattern</th><th scope="col">Policy</th>
        <th scope="col">Matches today</th><th scope="col"><span class="sr-only">Actions</span></th>
      </tr></thead>
      <tbody>${rows.map((r, i) => {
        const nameErr = rowError(i, 'name');
        const policyErr = rowError(i, 'policy');
        const nid = `rule-${r.key}-name`;
        const pid = `rule-${r.key}-policy`;
        return html`<tr key=${r.key}>
          <td><label class="sr-only" for=${nid}>Tool or pattern, rule ${i + 1}</label>
            <input id=${nid} type="text" list="tool-names" value=${r.name} spellcheck="false"
              autocomplete="off" aria-invalid=${nameErr ? 'true' : undefined}
              aria-describedby=${nameErr ? nid + '-err' : undefined}
              onInput=${(e) => set(r.key, { name: e.target.value })} />
            ${nameErr ? html`<small class="field-error" id=${nid + '-err'}>${nameErr.message}
              <span class="code"> (${nameErr.code})</span></small>` : null}</td>
          <td><label class="sr-only" for=${pid}>Policy for ${r.name || 'rule ' + (i + 1)}</label>
            <select id=${pid} value=${r.policy} aria-invalid=${policyErr ? 'true' : undefined}
              aria-describedby=${policyErr ? pid + '-err' : undefined}
              onChange=${(e) => set(r.key, { policy: e.target.value })}>
              ${POLICIES.map(([p, l]) => html`<option key=${p} value=${p}>${l}</option>`)}
            </select>
            ${policyErr ? html`<small class="field-error" id=${pid + '-err'}>${policyErr.message}
              <span class="code"> (${policyErr.code})</span></small>` : null}</td>
          <td class="small"><${Matches} rule=${r.name.trim()} tools=${tools} /></td>
          <td><button type="button" class="secondary" onClick=${() => remove(r.key, r.name)}>
            Remove<span class="sr-only"> ${r.name || 'rule ' + (i + 1)}</span></button></td>
        </tr>`;
      })}</tbody></table></div>`
      : html`<${Empty}>No rule: ${emp.name} calls no tool.</${Empty}>`}
    <form class="filters add-rule" onSubmit=${add} aria-label="Add a rule">
      <div class=${'field' + (addError ? ' invalid' : '')}>
        <label for="rule-new">Add a tool or pattern</label>
        <input id="rule-new" ref=${addRef} type="text" list="tool-names" value=${adding.name}
          spellcheck="false" autocomplete="off" placeholder="knowledge.search, slack.*"
          aria-invalid=${addError ? 'true' : undefined}
          aria-describedby=${addError ? 'rule-new-err' : undefined}
          onInput=${(e) => { setAdding({ ...adding, name: e.target.value }); setAddError(null); }} />
        ${addError ? html`<small class="field-error" id="rule-new-err">${addError}</small>`
                   : null}
      </div>
      <div class="field"><label for="rule-new-policy">Policy of the new rule</label>
        <select id="rule-new-policy" value=${adding.policy}
          onChange=${(e) => setAdding({ ...adding, policy: e.target.value })}>
          ${POLICIES.map(([p, l]) => html`<option key=${p} value=${p}>${l}</option>`)}
        </select></div>
      <div class="field"><button type="submit" class="secondary">Add rule</button></div>
    </form>
    <${ErrorBox} error=${topError} />
    <div class="row">
      <button type="button" disabled=${!dirty || save.busy} onClick=${submit}>${
        save.busy ? 'Saving…' : 'Save tool rules'}</button>
      ${dirty ? html`<button type="button" class="secondary" disabled=${save.busy}
        onClick=${discard}>Discard changes</button>
        <span class="small">Unsaved changes</span>` : null}
    </div>
    <p class="sr-only" aria-live="polite">${announce}</p>
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
      <a class="button" href=${'#/chat?employee=' + e.id}>Chat with ${e.name}</a>
      ${e.status === 'offline'
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
