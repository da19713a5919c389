// SPDX-License-Identifier: MIT
// page-tasks.js: the employees' tasks. #/tasks is a board with a column per status, each paged
// with its own cursor (the list's `status` filter), filtered by employee and priority (?employee=
// and ?priority= preset them); #/tasks/new creates a task, #/tasks/<id> shows one with its result
// and its runs, #/tasks/<id>/edit changes it.
//
// Decisions:
// - The board is kept live with one request per refresh, not four: the 100 newest tasks of the
//   filters, whatever their status. Each column takes the ones of its status that fall within
//   what it has loaded (down to the oldest task it has shown; the list order is created_at, then
//   id, newest first), so its cursor stays valid and "Load more" goes on where it was. Older
//   tasks a column has loaded keep their last known state. Refreshes come every 5 s while a task
//   runs or is about to, else every 15 s: test keys have the Starter limit of 60 a minute.
// - The actions follow the contract's transitions (§10) and say what they do: a completed or
//   failed task can "Run again" (PATCH status pending); a pending or running one is cancelled by
//   marking it failed or completed (PATCH: a run in progress is stopped, its outcome discarded,
//   nothing charged); "Delete" removes the task and its runs.
// - The form is 'noValidate' and sends what was typed: the server's validation errors are shown
//   at the field their `param` names (`title`, `due_at`, `recurring.time`...). An edit sends only
//   the fields that changed, so an unchanged recurrence is not restarted.
// - The due date is typed in the browser's local time and sent in UTC; recurrence times are UTC,
//   as the API has them.

import { html, useState, useEffect, useRef, useMemo } from './preact.js';
import { api, allEmployees } from './api.js';
import { can } from './roles.js';
import { usePaged, useLoad, useInterval, ErrorBox, Field, paramError, Loading, Empty, More,
         Status, Time, ms, Markdown, Confirm, PageTitle, useAction, loadStyle,
         describeRecurring } from './ui.js';

loadStyle('page-tasks.css');

const STATUSES = [['pending', 'Pending'], ['in_progress', 'In progress'],
                  ['completed', 'Completed'], ['failed', 'Failed']];
const NONE = { pending: 'Nothing waiting.', in_progress: 'Nothing running.',
               completed: 'Nothing completed yet.', failed: 'Nothing failed.' };
const PRIORITIES = ['urgent', 'high', 'medium', 'low'];
const FREQUENCIES = [['daily', 'Daily'], ['weekdays', 'Weekdays (Monday to Friday)'],
                     ['weekly', 'Weekly'], ['monthly', 'Monthly']];
const WEEKDAYS = ['monday', 'tuesday', 'wednesday', 'thursday', 'friday', 'saturday', 'sunday'];
const COLUMN_PAGE = 20;
const FAST_MS = 5000;
const SLOW_MS = 15000;


const cap = (s) => s.charAt(0).toUpperCase() + s.slice(1);


// True when task a comes before task b in the list (created_at, then id, newest first).
function before(a, b) {
  return a.created_at > b.created_at || (a.created_at === b.created_at && a.id > b.id);
}

function Priority({ value }) {
  return html`<span class=${'prio prio-' + value}>${value}</span>`;
}

function EmployeeLink({ id, names }) {
  return html`<a href=${'#/employees/' + id}>${names.get(id) || id}</a>`;
}

function options(employees) {
  return (employees || []).map((e) => html`<option key=${e.id} value=${e.id}>${e.name}</option>`);
}

function useNames(employees) {
  return useMemo(() => new Map((employees || []).map((e) => [e.id, e.name])), [employees]);
}

// ---- The board ----

function Card({ t, names }) {
  return html`<li class="card task-card">
    <h3><a href=${'#/tasks/' + t.id}>${t.title}</a></h3>
    <div class="row"><${Priority} value=${t.priority} />
      <span class="small">${names.get(t.employee_id) || t.employee_id}</span></div>
    ${t.due_at ? html`<div class="small">Due <${Time} iso=${t.due_at} /></div>` : null}
    ${t.recurring ? html`<div class="small">${describeRecurring(t.recurring, 'Once')}${t.next_run_at
      ? html`; next <${Time} iso=${t.next_run_at} />` : null}</div>` : null}
    ${t.run_count ? html`<div class="small">${t.run_count} run${t.run_count > 1 ? 's' : ''}${
      t.last_run_at ? html`, last <${Time} iso=${t.last_run_at} />` : null}</div>` : null}
    ${t.status === 'failed' && t.error ? html`<div class="small task-error-line">${
      t.error.length > 140 ? t.error.slice(0, 140) + '…' : t.error}</div>` : null}
  </li>`;
}

function Column({ status, label, list, names }) {
  const id = 'col-' + status;
  return html`<section class="column" aria-labelledby=${id}>
    <h2 id=${id}><span class=${'status s-' + status}>${label}</span>
      <span class="small count">${list.items.length}${list.hasMore ? '+' : ''}<span
        class="sr-only"> shown</span></span></h2>
    ${list.loading && !list.items.length ? html`<${Loading} />` : null}
    ${!list.loading && !list.error && !list.items.length
      ? html`<${Empty}>${NONE[status]}</${Empty}>` : null}
    <ul class="plain cards" aria-label=${label + ' tasks'}>
      ${list.items.map((t) => html`<${Card} key=${t.id} t=${t} names=${names} />`)}
    </ul>
    <${More} list=${list} />
  </section>`;
}

function Columns({ employee, priority, names }) {
  const filters = { employee_id: employee, priority };
  // One hook per status, always in this order.
  const cols = STATUSES.map(([s]) => usePaged('/v1/tasks', 'tasks',
                                                { ...filters, status: s, limit: COLUMN_PAGE }));
  const latest = useRef(cols);
  latest.current = cols;
  // The oldest task each column has shown: the end of its window (see the header comment).
  const bounds = useRef({});
  STATUSES.forEach(([s], i) => {
    const items = cols[i].items;
    const last = items[items.length - 1];
    if (last && (!bounds.current[s] || before(bounds.current[s], last)))
      bounds.current[s] = { created_at: last.created_at, id: last.id };
  });
  const [error, setError] = useState(null);
  const [at, setAt] = useState(null);
  const busy = useRef(false);

  const refresh = async () => {
    if (busy.current) return;
    busy.current = true;
    try {
      const page = await api('GET', '/v1/tasks', { query: { ...filters, limit: 100 } });
      const fresh = page.tasks;
      const horizon = page.has_more ? fresh[fresh.length - 1] : null;
      STATUSES.forEach(([s], i) => {
        const col = latest.current[i];
        if (col.loading || col.error) return; // a page is on its way: leave it be
        const bound = col.hasMore ? bounds.current[s] : null;
        col.setItems((items) => [
          ...fresh.filter((t) => t.status === s && (!bound || !before(bound, t))),
          ...(horizon ? items.filter((t) => before(horizon, t)) : []),
        ]);
      });
      setError(null);
      setAt(new Date().toISOString());
    } catch (e) {
      if (e.code !== 'aborted') setError(e);
    } finally {
      busy.current = false;
    }
  };
  // Fast while something runs or is about to (not for recurring tasks waiting for their time).
  const live = cols[1].items.length > 0 || cols[0].items.some((t) => !t.next_run_at ||
    Date.parse(t.next_run_at) - Date.now() < 60000);
  useInterval(refresh, live ? FAST_MS : SLOW_MS);

  return html`
    <p class="small">Refreshed every ${(live ? FAST_MS : SLOW_MS) / 1000} s${
      at ? html`, last at <${Time} iso=${at} />` : null}.</p>
    <${ErrorBox} error=${error} onRetry=${refresh} />
    <div class="board">
      ${STATUSES.map(([s, label], i) => html`<${Column} key=${s} status=${s} label=${label}
        list=${cols[i]} names=${names} />`)}
    </div>`;
}

function Board({ query, employees, employeesError }) {
  const [employee, setEmployee] = useState(query.employee || '');
  const [priority, setPriority] = useState(query.priority || '');
  const names = useNames(employees);
  const newHref = '#/tasks/new' + (employee ? '?employee=' + encodeURIComponent(employee) : '');
  return html`
    <${PageTitle} actions=${can('tasks.write') ? html`<a class="button" href=${newHref}>New
      task</a>` : null}>Tasks</${PageTitle}>
    <${ErrorBox} error=${employeesError} />
    <form class="filters" onSubmit=${(e) => e.preventDefault()} aria-label="Task filters">
      <div class="field"><label for="tk-emp">Employee</label>
        <select id="tk-emp" value=${employee} onChange=${(e) => setEmployee(e.target.value)}>
          <option value="">All employees</option>
          ${options(employees)}
          ${employee && !names.has(employee)
            ? html`<option value=${employee}>${employee}</option>` : null}
        </select></div>
      <div class="field"><label for="tk-prio">Priority</label>
        <select id="tk-prio" value=${priority} onChange=${(e) => setPriority(e.target.value)}>
          <option value="">All priorities</option>
          ${PRIORITIES.map((p) => html`<option key=${p} value=${p}>${cap(p)}</option>`)}
        </select></div>
    </form>
    <${Columns} key=${employee + '|' + priority} employee=${employee} priority=${priority}
      names=${names} />`;
}

// ---- Create and edit ----

const pad = (n) => String(n).padStart(2, '0');

// ISO (UTC) -> the value of a datetime-local input, in the browser's time.
function toLocalInput(iso) {
  if (!iso) return '';
  const d = new Date(iso);
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${
    pad(d.getHours())}:${pad(d.getMinutes())}`;
}

function fromLocalInput(v) {
  const d = new Date(v);
  return Number.isNaN(d.getTime()) ? v : d.toISOString();
}

function offsetText() {
  const m = -new Date().getTimezoneOffset();
  return `UTC${m < 0 ? '−' : '+'}${pad(Math.floor(Math.abs(m) / 60))}:${pad(Math.abs(m) % 60)}`;
}

function formOf(t, preset) {
  const r = t && t.recurring;
  return {
    title: t ? t.title : '',
    description: t ? t.description || '' : '',
    employee_id: t ? t.employee_id : preset || '',
    priority: t ? t.priority : 'medium',
    due: t ? toLocalInput(t.due_at) : '',
    repeats: !!r,
    frequency: r ? r.frequency : 'daily',
    day: r && r.day ? r.day : '',
    time: r ? r.time : '09:00',
  };
}

function recurringOf(f) {
  if (!f.repeats) return null;
  const r = { frequency: f.frequency, time: f.time.trim() };
  if (f.frequency === 'weekly' || f.frequency === 'monthly') r.day = f.day;
  return r;
}

const FIELDS = ['title', 'description', 'employee_id', 'priority', 'due_at', 'recurring'];

function TaskForm({ task, preset, employees, employeesError }) {
  const start = useMemo(() => formOf(task, preset), [task]);
  const [f, setF] = useState(start);
  const act = useAction();
  const form = useRef(null);
  const set = (k) => (e) => setF({ ...f, [k]: e.target.type === 'checkbox' ? e.target.checked
                                                                              : e.target.value });
  const setFrequency = (e) => {
    const frequency = e.target.value;
    let day = f.day;
    if (frequency === 'weekly' && !WEEKDAYS.includes(day)) day = 'monday';
    if (frequency === 'monthly' && !/^\d+$/.test(day)) day = '1';
    setF({ ...f, frequency, day });
  };

  // After a refusal, the keyboard goes to the field it names.
  useEffect(() => {
    const el = form.current && form.current.querySelector('[aria-invalid="true"]');
    if (el) el.focus();
  }, [act.error]);

  const submit = (e) => {
    e.preventDefault();
    let body;
    if (!task) {
      body = { title: f.title, employee_id: f.employee_id, priority: f.priority };
      if (f.description) body.description = f.description;
      if (f.due) body.due_at = fromLocalInput(f.due);
      if (f.repeats) body.recurring = recurringOf(f);
    } else {
      body = {};
      if (f.title !== start.title) body.title = f.title;
      if (f.description !== start.description) body.description = f.description;
      if (f.employee_id !== start.employee_id) body.employee_id = f.employee_id;
      if (f.priority !== start.priority) body.priority = f.priority;
      if (f.due !== start.due) body.due_at = f.due ? fromLocalInput(f.due) : null;
      if (JSON.stringify(recurringOf(f)) !== JSON.stringify(recurringOf(start)))
        body.recurring = recurringOf(f);
    }
    act.run(async () => {
      const t = task ? await api('PATCH', `/v1/tasks/${task.id}`, { body })
                     : await api('POST', '/v1/tasks', { body });
      location.hash = '#/tasks/' + t.id;
    });
  };

  const err = act.error;
  const general = err && !FIELDS.some((p) => paramError(err, p)) ? err : null;
  const recurErr = err && err.param === 'recurring' ? err : null;
  const dueUtc = f.due && !Number.isNaN(new Date(f.due).getTime())
    ? new Date(f.due).toISOString().slice(0, 16).replace('T', ' ') + ' UTC' : null;
  const cancelHref = task ? '#/tasks/' + task.id : '#/tasks';

  return html`<form class="panel task-form" ref=${form} onSubmit=${submit} noValidate
    aria-label=${task ? 'Edit the task' : 'New task'}>
    <${Field} label="Title" param="title" error=${err}>${(a) => html`<input ...${a} type="text"
      maxlength="200" required value=${f.title} onInput=${set('title')} />`}</${Field}>
    <${Field} label="Description (optional)" param="description" error=${err}
      hint="What to do; Markdown is shown as such.">${(a) => html`<textarea ...${a} rows="5"
        value=${f.description} onInput=${set('description')} />`}</${Field}>
    <${Field} label=${employeesError ? 'Employee id' : 'Employee'} param="employee_id" error=${err}
      hint=${employeesError ? `The employee list could not be read (${employeesError.code}): ` +
        'type the id.' : 'A manager-tier employee needs a Manager or Agency subscription.'}>${
      (a) => (employeesError
        ? html`<input ...${a} type="text" placeholder="emp_…" value=${f.employee_id}
            onInput=${set('employee_id')} />`
        : html`<select ...${a} value=${f.employee_id} onChange=${set('employee_id')}>
            <option value="">Choose an employee…</option>
            ${(employees || []).map((e) => html`<option key=${e.id} value=${e.id}>${e.name} · ${
              e.role} (${e.tier} tier)</option>`)}
          </select>`)}</${Field}>
    <div class="form-grid">
      <${Field} label="Priority" param="priority" error=${err}
        hint="Urgent tasks are taken first.">${(a) => html`<select ...${a} value=${f.priority}
          onChange=${set('priority')}>
          ${PRIORITIES.map((p) => html`<option key=${p} value=${p}>${cap(p)}</option>`)}
        </select>`}</${Field}>
      <${Field} label=${`Due date (optional, your time: ${offsetText()})`} param="due_at"
        error=${err} hint=${dueUtc ? `Sent as ${dueUtc}. It orders the queue; it does not ` +
          'delay the task.' : 'It orders the queue; it does not delay the task.'}>${
        (a) => html`<input ...${a} type="datetime-local" value=${f.due}
          onInput=${set('due')} />`}</${Field}>
    </div>
    <fieldset class=${'recurring' + (paramError(err, 'recurring') ? ' invalid' : '')}>
      <legend>Recurrence</legend>
      <label class="check"><input type="checkbox" checked=${f.repeats}
        onChange=${set('repeats')} /> Repeat this task</label>
      ${recurErr ? html`<p class="field-error">${recurErr.message}
        <span class="code"> (${recurErr.code})</span></p>` : null}
      ${f.repeats ? html`<div class="form-grid">
        <${Field} label="Frequency" param="recurring.frequency" error=${err}>${(a) => html`<select
          ...${a} value=${f.frequency} onChange=${setFrequency}>
          ${FREQUENCIES.map(([v, l]) => html`<option key=${v} value=${v}>${l}</option>`)}
        </select>`}</${Field}>
        ${f.frequency === 'weekly' ? html`<${Field} label="Day of the week" param="recurring.day"
          error=${err}>${(a) => html`<select ...${a} value=${f.day} onChange=${set('day')}>
            ${WEEKDAYS.map((d) => html`<option key=${d} value=${d}>${cap(d)}</option>`)}
          </select>`}</${Field}>` : null}
        ${f.frequency === 'monthly' ? html`<${Field} label="Day of the month"
          param="recurring.day" error=${err} hint="29–31: the last day in shorter months.">${
          (a) => html`<select ...${a} value=${f.day} onChange=${set('day')}>
            ${Array.from({ length: 31 }, (_, i) => String(i + 1)).map((d) => html`<option
              key=${d} value=${d}>${d}</option>`)}
          </select>`}</${Field}>` : null}
        <${Field} label="Time (HH:MM, UTC)" param="recurring.time" error=${err}
          hint="24-hour clock, in UTC.">${(a) => html`<input ...${a} type="text"
            inputmode="numeric" class="narrow" placeholder="09:00" value=${f.time}
            onInput=${set('time')} />`}</${Field}>
      </div>` : html`<p class="small">Runs once, as soon as an employee's worker is free.</p>`}
    </fieldset>
    <${ErrorBox} error=${general} />
    <div class="actions">
      <button type="submit" disabled=${act.busy}>${act.busy ? 'Saving…'
        : task ? 'Save changes' : 'Create task'}</button>
      <a href=${cancelHref}>Cancel</a>
    </div>
  </form>`;
}

function NewTask({ query, employees, employeesError }) {
  return html`<p><a href="#/tasks">← All tasks</a></p>
    <${PageTitle}>New task</${PageTitle}>
    <${TaskForm} preset=${query.employee} employees=${employees}
      employeesError=${employeesError} />`;
}

function EditTask({ id, employees, employeesError }) {
  const task = useLoad((signal) => api('GET', `/v1/tasks/${id}`, { signal }), [id]);
  const t = task.data;
  return html`<p><a href=${'#/tasks/' + id}>← Back to the task</a></p>
    <${PageTitle}>${t ? 'Edit: ' + t.title : 'Edit task'}</${PageTitle}>
    <${ErrorBox} error=${task.error} onRetry=${task.reload} />
    ${t ? html`<${TaskForm} key=${t.id} task=${t} employees=${employees}
      employeesError=${employeesError} />`
      : task.error ? null : html`<${Loading} what="the task" />`}`;
}

// ---- A task ----

function Runs({ runs }) {
  if (runs.loading && !runs.items.length) return html`<${Loading} what="runs" />`;
  if (!runs.items.length)
    return runs.error ? null : html`<${Empty}>No run yet: it has not been carried out.</${Empty}>`;
  return html`<div class="table-wrap"><table>
    <caption class="sr-only">Runs, newest first</caption>
    <thead><tr><th scope="col">Status</th><th scope="col">Started</th>
      <th scope="col">Completed</th><th scope="col">Took</th><th scope="col">Credits</th>
      <th scope="col">Result or error</th></tr></thead>
    <tbody>${runs.items.map((r) => html`<tr key=${r.id}>
      <td><${Status} value=${r.status} /></td>
      <td><${Time} iso=${r.started_at} /></td>
      <td><${Time} iso=${r.completed_at} /></td>
      <td>${r.started_at && r.completed_at
        ? ms(Date.parse(r.completed_at) - Date.parse(r.started_at)) : '—'}</td>
      <td>${r.credits_used}</td>
      <td class="run-out">
        ${r.error ? html`<div class="task-error-line">${r.error}</div>` : null}
        ${r.result ? html`<details><summary>Result (${
          r.result.length.toLocaleString() + ' characters'})</summary><${Markdown}
          text=${r.result} /></details>` : null}
        ${!r.error && !r.result ? html`<span class="muted">—</span>` : null}
      </td>
    </tr>`)}</tbody></table></div>`;
}

function Actions({ t, act, setStatus }) {
  if (!can('tasks.write')) return null;
  const b = act.busy;
  if (t.status === 'completed' || t.status === 'failed')
    return html`<div class="task-actions">
      <button type="button" disabled=${b} onClick=${() => setStatus('pending')}>Run again</button>
      <span class="small">Queues it again: it runs as soon as a worker is free.</span>
    </div>`;
  const running = t.status === 'in_progress';
  return html`<div class="task-actions">
    <button type="button" class="secondary" disabled=${b} onClick=${() => setStatus('failed')}>
      ${running ? 'Stop the run, mark failed' : 'Cancel, mark failed'}</button>
    <button type="button" class="secondary" disabled=${b} onClick=${() => setStatus('completed')}>
      ${running ? 'Stop the run, mark completed' : 'Skip it, mark completed'}</button>
    <span class="small">${running
      ? 'The run in progress is cancelled: its outcome is discarded and it costs nothing.'
      : 'Either way it does not run; "Run again" can queue it later.'}</span>
  </div>`;
}

function Detail({ id, employees }) {
  const task = useLoad((signal) => api('GET', `/v1/tasks/${id}`, { signal }), [id]);
  const runs = usePaged(`/v1/tasks/${id}/runs`, 'runs', { limit: 20 });
  const act = useAction();
  const names = useNames(employees);
  const t = task.data;

  // The first page of runs, read again and put over the loaded ones (the cursor stays valid).
  const refreshRuns = async () => {
    if (runs.loading) return;
    try {
      const page = await api('GET', `/v1/tasks/${id}/runs`, { query: { limit: 20 } });
      const ids = new Set(page.runs.map((r) => r.id));
      runs.setItems((items) => [...page.runs, ...items.filter((r) => !ids.has(r.id))]);
    } catch {
      /* the next refresh tries again */
    }
  };
  const state = t ? `${t.status}|${t.run_count}|${t.updated_at}` : '';
  const first = useRef(true);
  useEffect(() => {
    if (!state) return;
    if (first.current) first.current = false;
    else refreshRuns();
  }, [state]);

  // Followed closely while it runs or is about to: in progress, pending without a later
  // occurrence, or just changed ("Run again" runs a recurring task now, whatever its
  // next_run_at). A recurring task waiting for its time is read every 30 s.
  let every = 0;
  if (t && t.status === 'in_progress') every = 2000;
  else if (t && t.status === 'pending') {
    const later = t.next_run_at && Date.parse(t.next_run_at) - Date.now() > 30000;
    const fresh = Date.now() - Date.parse(t.updated_at) < 60000;
    every = later && !fresh ? 30000 : 2000;
  }
  useInterval(() => !task.loading && task.reload(), every);

  const setStatus = (status) => act.run(async () => {
    task.setData(await api('PATCH', `/v1/tasks/${id}`, { body: { status } }));
  });
  const remove = html`<${Confirm} label="Delete" disabled=${act.busy}
    ask="Delete this task and its runs?" onConfirm=${() => act.run(async () => {
      await api('DELETE', `/v1/tasks/${id}`);
      location.hash = '#/tasks';
    })} />`;
  const back = html`<p><a href="#/tasks">← All tasks</a></p>`;
  if (!t) return html`${back}<${PageTitle}>Task</${PageTitle}>
    <${ErrorBox} error=${task.error} onRetry=${task.reload} />
    ${task.error ? null : html`<${Loading} what="the task" />`}`;

  return html`${back}
    <${PageTitle} actions=${can('tasks.write') ? html`<a class="button"
      href=${'#/tasks/' + id + '/edit'}>Edit</a>${remove}` : null}>${t.title}</${PageTitle}>
    <section class="panel tk-panel" aria-labelledby="state-h">
      <h2 id="state-h" class="row">State <span aria-live="polite"><${Status} value=${t.status} />
        </span></h2>
      <${Actions} t=${t} act=${act} setStatus=${setStatus} />
      <${ErrorBox} error=${act.error} />
      <${ErrorBox} error=${task.error} onRetry=${task.reload} />
      <dl class="kv">
        <dt>Priority</dt><dd><${Priority} value=${t.priority} /></dd>
        <dt>Employee</dt><dd><${EmployeeLink} id=${t.employee_id} names=${names} /></dd>
        <dt>Due</dt><dd><${Time} iso=${t.due_at} /></dd>
        <dt>Repeats</dt><dd>${describeRecurring(t.recurring, 'Once')}</dd>
        ${t.recurring ? html`<dt>Next run</dt><dd><${Time} iso=${t.next_run_at} /></dd>` : null}
        <dt>Runs</dt><dd>${t.run_count}${t.last_run_at ? html`, last <${Time}
          iso=${t.last_run_at} />` : null}</dd>
        <dt>Started</dt><dd><${Time} iso=${t.started_at} /></dd>
        <dt>Completed</dt><dd><${Time} iso=${t.completed_at} /></dd>
        <dt>Credits used</dt><dd>${t.credits_used}</dd>
        <dt>Created</dt><dd><${Time} iso=${t.created_at} /></dd>
        <dt>Updated</dt><dd><${Time} iso=${t.updated_at} /></dd>
        <dt>Id</dt><dd><code>${t.id}</code></dd>
      </dl>
    </section>
    <section class="panel tk-panel" aria-labelledby="desc-h">
      <h2 id="desc-h">Description</h2>
      ${t.description ? html`<${Markdown} text=${t.description} />`
        : html`<p class="muted">No description.</p>`}
    </section>
    <section class="panel tk-panel" aria-labelledby="result-h">
      <h2 id="result-h">Result of the latest run</h2>
      ${t.error ? html`<div class="task-error"><strong>Error:</strong> ${t.error}</div>` : null}
      ${t.result ? html`<${Markdown} text=${t.result} />` : t.error ? null
        : html`<p class="muted">${t.status === 'in_progress' ? 'Running…'
                                                                : 'No result yet.'}</p>`}
    </section>
    <section aria-labelledby="runs-h">
      <h2 id="runs-h">Runs</h2>
      <${Runs} runs=${runs} />
      <${More} list=${runs} />
    </section>`;
}

export default function TasksPage({ parts, query }) {
  const emps = useLoad(allEmployees, []);
  const props = { employees: emps.data, employeesError: emps.error };
  if ((parts[0] === 'new' || parts[1] === 'edit') && !can('tasks.write'))
    return html`<p class="notice" role="status">Your role does not create or change tasks.</p>`;
  if (parts[0] === 'new') return html`<${NewTask} query=${query} ...${props} />`;
  if (parts[0] && parts[1] === 'edit') return html`<${EditTask} id=${parts[0]} ...${props} />`;
  if (parts[0]) return html`<${Detail} id=${parts[0]} ...${props} />`;
  // Keyed by the query: a link to #/tasks?employee=x sets the filters afresh.
  return html`<${Board} key=${JSON.stringify(query)} query=${query} ...${props} />`;
}
