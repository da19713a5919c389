// SPDX-License-Identifier: MIT
// page-approvals.js: the approvals inbox. A call an employee makes to a tool whose policy is
// `approve` waits here for a person. #/approvals lists them (pending ones by default, newest
// first, "Load more" with the `before` cursor); #/approvals/<id> is one of them, where a chat
// reply's "Open it in the approvals inbox" leads. Each shows the employee, the tool, its
// arguments, who asked and when, and where it comes from (a conversation, a task run, a
// workflow run); a pending one is approved (as asked, or with edited arguments) or rejected
// (with a reason).
//
// Decisions:
// - Deciding needs a key whose scopes name `approvals`; a key without scopes reads approvals
//   but does not decide. The page says so up front for such a key (from GET /v1/account), and
//   still offers the buttons: the server's 403 is then shown at the approval, with its message.
// - Edited arguments are a JSON object typed in a text box, parsed before anything is sent: a
//   mistake is shown at the box and nothing is sent. The server checks them against the tool's
//   schema; its 400 (`param: "arguments"`) is shown at the box too.
// - A decided approval stays in the list, with its new status, until the list is read again
//   (so the outcome is seen where the buttons were). A 409 `approval_not_pending` (decided
//   meanwhile, elsewhere) shows the error and the approval as it now is.
// - After a decision the shell's count of pending approvals is read again (an
//   'approvals-changed' event on window).

import { html, useState, useRef, useEffect } from './preact.js';
import { api, allEmployees, session } from './api.js';
import { can } from './roles.js';
import { usePaged, useLoad, ErrorBox, Loading, Empty, More, Status, Time, Json, PageTitle,
         useAction, paramError, loadStyle } from './ui.js';

loadStyle('page-approvals.css');

const STATUSES = [['pending', 'Pending'], ['approved', 'Approved'], ['rejected', 'Rejected'],
                  ['expired', 'Expired'], ['', 'All']];

// Whether the signed-in key may decide: its scopes name approvals (no scope list: it may not).
export function keyDecides(account) {
  const scopes = account && account.key && account.key.scopes;
  return Array.isArray(scopes) && scopes.includes('approvals');
}

function changed() {
  dispatchEvent(new Event('approvals-changed'));
}

function actor(a) {
  if (!a) return '—';
  return html`${a.type}${a.id ? html` <code>${a.id}</code>` : null}`;
}

// Where the call comes from, linked where the console has a page for it.
function Origin({ a }) {
  if (a.conversation_id)
    return html`<a href=${'#/chat/' + a.conversation_id}>A chat conversation</a>`;
  if (a.task_id)
    return html`<a href=${'#/tasks/' + a.task_id}>A run of a task</a>${
      a.task_run_id ? html` <span class="small">(<code>${a.task_run_id}</code>)</span>` : null}`;
  if (a.workflow_run_id)
    return html`A workflow run <code>${a.workflow_run_id}</code>${
      a.step_index !== null && a.step_index !== undefined ? `, step ${a.step_index + 1}` : ''}`;
  return '—';
}

// The edited arguments of approval 'a': parsed here first, then checked by the server.
function EditArguments({ a, busy, serverError, onApprove, onCancel }) {
  const [text, setText] = useState(JSON.stringify(a.arguments, null, 2));
  const [local, setLocal] = useState(null);
  const ref = useRef(null);
  useEffect(() => { if (ref.current) ref.current.focus(); }, []);
  const mine = local || paramError(serverError, 'arguments');
  const id = 'apr-args-' + a.id;
  const submit = (ev) => {
    ev.preventDefault();
    let v;
    try {
      v = JSON.parse(text);
    } catch (e) {
      setLocal({ code: 'invalid_json', message: 'This is not JSON: ' + e.message });
      if (ref.current) ref.current.focus();
      return;
    }
    if (!v || typeof v !== 'object' || Array.isArray(v)) {
      setLocal({ code: 'invalid_json', message: 'The arguments must be a JSON object { … }.' });
      if (ref.current) ref.current.focus();
      return;
    }
    setLocal(null);
    onApprove(v);
  };
  return html`<form class="apr-edit" onSubmit=${submit} noValidate>
    <div class=${'field' + (mine ? ' invalid' : '')}>
      <label for=${id}>Arguments to approve (JSON)</label>
      <textarea id=${id} ref=${ref} rows="8" spellcheck="false" value=${text}
        aria-invalid=${mine ? 'true' : undefined}
        aria-describedby=${mine ? id + '-err' : id + '-hint'}
        onInput=${(e) => { setText(e.target.value); setLocal(null); }}></textarea>
      ${mine ? html`<small class="field-error" id=${id + '-err'}>${mine.message}
        <span class="code"> (${mine.code})</span></small>`
        : html`<small class="hint" id=${id + '-hint'}>The call runs with these arguments
          instead; they are checked against the tool's schema.</small>`}
    </div>
    <div class="row">
      <button type="submit" disabled=${busy}>Approve with these arguments</button>
      <button type="button" class="secondary" onClick=${onCancel}>Cancel</button>
    </div>
  </form>`;
}

function Reject({ a, busy, onReject, onCancel }) {
  const [reason, setReason] = useState('');
  const ref = useRef(null);
  useEffect(() => { if (ref.current) ref.current.focus(); }, []);
  const id = 'apr-reason-' + a.id;
  return html`<form class="apr-edit" onSubmit=${(ev) => { ev.preventDefault();
    onReject(reason.trim()); }}>
    <div class="field"><label for=${id}>Reason (optional, told to the employee)</label>
      <textarea id=${id} ref=${ref} rows="3" maxlength="1000" value=${reason}
        onInput=${(e) => setReason(e.target.value)}></textarea></div>
    <div class="row">
      <button type="submit" class="danger" disabled=${busy}>Reject the call</button>
      <button type="button" class="secondary" onClick=${onCancel}>Cancel</button>
    </div>
  </form>`;
}

function Approval({ a, employees, onChange }) {
  const [mode, setMode] = useState(null); // null | 'edit' | 'reject'
  const [said, setSaid] = useState('');
  const act = useAction();
  const emp = (employees || []).find((e) => e.id === a.employee_id);
  const decide = (what, body) => act.run(async () => {
    try {
      const n = await api('POST', `/v1/approvals/${a.id}/${what}`, { body });
      onChange(n);
      setMode(null);
      setSaid(`${a.tool}: ${n.status}.`);
      changed();
    } catch (e) {
      if (e.code === 'approval_not_pending') {
        // decided meanwhile: show it as it is now
        api('GET', `/v1/approvals/${a.id}`).then(onChange, () => {});
        changed();
      }
      throw e;
    }
  });
  const hid = 'apr-' + a.id;
  return html`<li class="panel apr" aria-labelledby=${hid}>
    <div class="row apr-head">
      <h2 id=${hid}><code>${a.tool}</code> for ${emp ? emp.name : a.employee_id}</h2>
      <${Status} value=${a.status} />
    </div>
    <dl class="kv">
      <dt>Employee</dt><dd>${emp ? html`<a href=${'#/employees/' + emp.id}>${emp.name}</a>, ${
        emp.role}` : html`<code>${a.employee_id}</code>`}</dd>
      <dt>Asked</dt><dd><${Time} iso=${a.requested_at} /> by ${actor(a.requested_by)}</dd>
      <dt>From</dt><dd><${Origin} a=${a} /></dd>
      ${a.status === 'pending' && a.expires_at ? html`<dt>Expires</dt><dd><${Time}
        iso=${a.expires_at} /></dd>` : null}
      ${a.decided_at ? html`<dt>Decided</dt><dd><${Time} iso=${a.decided_at} /> by ${
        actor(a.decided_by)}</dd>` : null}
      ${a.reason ? html`<dt>Reason</dt><dd>${a.reason}</dd>` : null}
    </dl>
    <p class="apr-label">Arguments</p>
    <${Json} value=${a.arguments} />
    ${a.status === 'pending' && mode === null && can('approvals.decide', a) ? html`<div
      class="actions">
      <button type="button" disabled=${act.busy} onClick=${() => decide('approve', {})}>Approve<span
        class="sr-only"> ${a.tool}</span></button>
      <button type="button" class="secondary" disabled=${act.busy}
        onClick=${() => { act.clear(); setMode('edit'); }}>Approve with edited arguments<span
        class="sr-only"> of ${a.tool}</span></button>
      <button type="button" class="danger" disabled=${act.busy}
        onClick=${() => { act.clear(); setMode('reject'); }}>Reject<span class="sr-only"> ${
        a.tool}</span></button>
    </div>` : null}
    ${a.status === 'pending' && mode === 'edit' ? html`<${EditArguments} a=${a} busy=${act.busy}
      serverError=${act.error} onApprove=${(v) => decide('approve', { arguments: v })}
      onCancel=${() => { act.clear(); setMode(null); }} />` : null}
    ${a.status === 'pending' && mode === 'reject' ? html`<${Reject} a=${a} busy=${act.busy}
      onReject=${(reason) => decide('reject', reason ? { reason } : {})}
      onCancel=${() => { act.clear(); setMode(null); }} />` : null}
    <${ErrorBox} error=${act.error && !(mode === 'edit' && paramError(act.error, 'arguments'))
      ? act.error : null} />
    ${act.error && act.error.code === 'permission_denied' && session.key ? html`<p
      class="notice">This key
      cannot decide approvals: sign in with a key whose scopes name <code>approvals</code>.</p>`
      : null}
    <p class="sr-only" aria-live="polite">${said}</p>
  </li>`;
}

function ReadOnlyNotice({ account }) {
  const u = session.user;
  if (u) {
    if (can('approvals.decide')) return null;
    return html`<p class="notice">${can('approvals.decide.own')
      ? `Your role (${u.role}) decides the approvals of the chats, tasks and runs you started;
         an admin decides the others.`
      : `Your role (${u.role}) reads approvals but does not decide them.`}</p>`;
  }
  if (!account || keyDecides(account)) return null;
  return html`<p class="notice">This key can read approvals but not decide them: deciding needs
    a key whose scopes name <code>approvals</code> (a key without a scope list does not decide).
    The server refuses a decision from this key with 403 <code>permission_denied</code>.</p>`;
}

function Inbox({ query, account }) {
  const [status, setStatus] = useState(query.status === undefined ? 'pending' : query.status);
  const [employee, setEmployee] = useState(query.employee || '');
  const emps = useLoad(allEmployees, []);
  const list = usePaged('/v1/approvals', 'approvals',
                        { status, employee_id: employee, limit: 20 });
  return html`
    <${PageTitle} actions=${html`<button type="button" class="secondary"
      onClick=${list.reload}>Refresh</button>`}>Approvals</${PageTitle}>
    <${ReadOnlyNotice} account=${account} />
    <form class="filters" onSubmit=${(e) => e.preventDefault()} aria-label="Filters">
      <div class="field"><label for="apr-status">Status</label>
        <select id="apr-status" value=${status} onChange=${(e) => setStatus(e.target.value)}>
          ${STATUSES.map(([v, l]) => html`<option key=${v} value=${v}>${l}</option>`)}
        </select></div>
      <div class="field"><label for="apr-emp">Employee</label>
        <select id="apr-emp" value=${employee} onChange=${(e) => setEmployee(e.target.value)}>
          <option value="">All employees</option>
          ${(emps.data || []).map((e) => html`<option key=${e.id} value=${e.id}>${e.name}</option>`)}
        </select></div>
    </form>
    <${ErrorBox} error=${emps.error} />
    ${list.loading && !list.items.length ? html`<${Loading} what="approvals" />` : null}
    ${!list.loading && !list.error && !list.items.length ? html`<${Empty}>${status === 'pending'
      ? 'Nothing waits for a decision.' : 'No approval matches these filters.'}</${Empty}>` : null}
    <ul class="plain" aria-label="Approvals">
      ${list.items.map((a) => html`<${Approval} key=${a.id} a=${a} employees=${emps.data}
        onChange=${(n) => list.setItems((items) => items.map((x) => (x.id === n.id ? n : x)))} />`)}
    </ul>
    <${More} list=${list} />`;
}

function One({ id, account }) {
  const one = useLoad((signal) => api('GET', `/v1/approvals/${id}`, { signal }), [id]);
  const emps = useLoad(allEmployees, []);
  return html`
    <p><a href="#/approvals">← All approvals</a></p>
    <${PageTitle}>Approval</${PageTitle}>
    <${ReadOnlyNotice} account=${account} />
    <${ErrorBox} error=${one.error} onRetry=${one.reload} />
    ${one.data ? html`<ul class="plain" aria-label="Approvals"><${Approval} a=${one.data}
      employees=${emps.data} onChange=${one.setData} /></ul>`
      : one.error ? null : html`<${Loading} what="the approval" />`}`;
}

export default function ApprovalsPage({ parts, query, account }) {
  const a = account || session.account;
  return parts[0] ? html`<${One} id=${parts[0]} account=${a} />`
                  : html`<${Inbox} query=${query} account=${a} />`;
}
