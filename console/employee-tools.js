// SPDX-License-Identifier: MIT
// employee-tools.js: the rules of the tools an employee may call, on its page
// (page-employees.js loads this module with the page of one employee).
//
// Decisions:
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
import { can } from './roles.js';
import { useLoad, ErrorBox, Empty, useAction, paramError, loadStyle } from './ui.js';

loadStyle('employee-tools.css');

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

// The rules of 'emp' for a role that does not change employees: read only.
function ReadRules({ emp, tools, error }) {
  const words = Object.fromEntries(POLICIES);
  return html`<section class="panel" aria-labelledby="tools-h">
    <h2 id="tools-h">Tools</h2>
    <p class="small">The tools ${emp.name} may call while it works (an admin changes them).</p>
    <${ErrorBox} error=${error} />
    ${(emp.tools || []).length ? html`<div class="table-wrap"><table class="rules">
      <caption class="sr-only">Tool rules of ${emp.name}</caption>
      <thead><tr><th scope="col">Tool or pattern</th><th scope="col">Policy</th>
        <th scope="col">Matches today</th></tr></thead>
      <tbody>${emp.tools.map((t) => html`<tr key=${t.name}><td><code>${t.name}</code></td>
        <td>${words[t.policy] || t.policy}</td>
        <td class="small"><${Matches} rule=${t.name} tools=${tools} /></td></tr>`)}</tbody>
      </table></div>` : html`<${Empty}>No rule: ${emp.name} calls no tool.</${Empty}>`}
  </section>`;
}

// The rules of the tools the employee 'emp' may call: edited as a draft, saved as a whole;
// onSaved(employee) with the answer of the PATCH.
export function ToolRules({ emp, onSaved }) {
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
  if (!can('employees.write')) return html`<${ReadRules} emp=${emp} tools=${tools}
    error=${catalog.error} />`;
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
