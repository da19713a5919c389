// SPDX-License-Identifier: MIT
// page-workflows.js: the organization's workflows (contract §12). #/workflows lists them;
// #/workflows/new creates one; #/workflows/<id> runs it (with a JSON input, or as a dry run),
// lists its runs, shows its webhook URL (with rotate), edits and deletes it;
// #/workflows/<id>/runs/<run_id> follows one run step by step.
//
// Decisions:
// - The editor is a form over a model of text fields (one per input, option and trigger member);
//   the API body is built from it on submit and sent as typed ('noValidate', numbers that do not
//   parse are sent as strings), so every check is the server's and its error lands at the field
//   its `param` names: `steps[2].input`, `steps[0].options.labels`, `trigger.recurring.time`.
//   An error whose param no field shows goes to its step or to the trigger box when it is inside
//   one (`steps[1].options.foo`), else to the top (`ErrorBox`). After a failed save, focus moves
//   to the first field in error. Adding, removing or moving a step clears the error, since its
//   indexes no longer match.
// - Options have a field each, per action, as the API defines them: classify's labels one per
//   line (`name: description` describes one), extract's fields one `name: type` per line,
//   search_knowledge's tags comma-separated. An option the action does not take (possible from
//   the JSON editor) is kept and sent, so the server names it.
// - "Edit as JSON" shows the whole body the form would send, for power users; switching back
//   reads it into the form. In JSON mode the whole object is sent; in form mode an edit sends
//   only the top-level members that changed (a webhook keeps its URL either way: only
//   "Rotate URL" changes it).
// - Run: the input is a JSON object typed by hand, prefilled with the `{{trigger.<name>}}` names
//   the steps read; it is parsed before sending and a mistake is shown at the field, nothing
//   sent. "Dry run" is the API's `dry_run: true` (nothing stored, called or charged): its
//   rendered inputs and conditions are shown in a table. A real run opens the run view.
// - The run view refreshes every 1.5 s while the run is queued or running (`useInterval`) and
//   stops when it ends; the runs list refreshes its first page every 3 s while a run it shows is
//   unfinished. Outputs: text through `Markdown`, objects through `Json`.

import { html, useState, useEffect, useRef, useMemo } from './preact.js';
import { api, allEmployees } from './api.js';
import { can } from './roles.js';
import { usePaged, useLoad, useInterval, ErrorBox, Field, paramError, Loading, Empty, More,
         Status, Time, ms, Json, Markdown, Confirm, PageTitle, useAction,
         loadStyle, describeRecurring } from './ui.js';

loadStyle('page-workflows.css');

const DONE = new Set(['completed', 'failed', 'cancelled']);
const RUN_POLL_MS = 1500;
const LIST_POLL_MS = 3000;
const MAX_STEPS = 20;

const TRIGGERS = [
  ['manual', 'Manual: run from here or by the API'],
  ['webhook', 'Webhook: also by a POST to a secret URL'],
  ['schedule', 'Schedule: also at set times'],
  ['integration', 'Integration event: also when a provider sends an event'],
];
const FREQUENCIES = [['daily', 'Daily'], ['weekdays', 'Weekdays (Monday to Friday)'],
                     ['weekly', 'Weekly'], ['monthly', 'Monthly']];
const WEEKDAYS = ['monday', 'tuesday', 'wednesday', 'thursday', 'friday', 'saturday', 'sunday'];
const MONTHDAYS = Array.from({ length: 31 }, (_, i) => String(i + 1));
const FIELD_TYPES = 'string, number, boolean, date, email, url, phone';
const CONDITION_HINT = 'Optional: the step runs only when it is true, e.g. ' +
  '{{ steps[0].output.label == "billing" }}.';

// Every action of the API: [name, label, what it outputs].
const ACTIONS = [
  ['respond', 'Respond', 'text: the employee\'s answer to the input'],
  ['summarize', 'Summarize', 'text: a summary of the input'],
  ['classify', 'Classify', '{label, score}: the best label'],
  ['extract', 'Extract fields', 'an object with every field, null where absent'],
  ['draft_email', 'Draft an email', '{subject, body}'],
  ['search_knowledge', 'Search knowledge', '{results}: as a knowledge query'],
  ['create_task', 'Create a task', 'the created task'],
];
const INTEGRATION_ACTIONS = [
  ['slack.post_message', 'Slack: post a message', '{id, url}; the input is the text'],
  ['github.create_issue', 'GitHub: create an issue',
   '{id, url}; the input\'s first line is the title, the rest the body'],
  ['google_calendar.create_event', 'Google Calendar: create an event',
   '{id, url}; the input is JSON {summary, start, end, description?}'],
  ['outlook.send_mail', 'Outlook: send a mail', '{id, url}; the input is the body'],
  ['hubspot.create_note', 'HubSpot: create a note', '{id, url}; the input is the note'],
];
const ALL_ACTIONS = [...ACTIONS, ...INTEGRATION_ACTIONS];

// The options of each action: one form field each. kind: how its text becomes the API's value.
const OPTIONS = {
  summarize: [{ name: 'max_sentences', label: 'Maximum sentences', kind: 'number',
                hint: '1 to 20; 3 when empty.' }],
  classify: [{ name: 'labels', label: 'Labels', kind: 'labels', lines: true,
               hint: 'One per line, at least 2. "name: description" describes a label.' }],
  extract: [{ name: 'fields', label: 'Fields', kind: 'fields', lines: true,
              hint: `One per line, "name: type"; types: ${FIELD_TYPES}.` }],
  draft_email: [
    { name: 'to', label: 'To', kind: 'text', hint: 'Optional; templates work here.' },
    { name: 'tone', label: 'Tone', kind: 'text', hint: 'Optional, e.g. formal, friendly.' },
  ],
  search_knowledge: [
    { name: 'limit', label: 'Results', kind: 'number', hint: '1 to 50; 5 when empty.' },
    { name: 'tags', label: 'Tags', kind: 'tags',
      hint: 'Optional, comma-separated: only documents with any of them.' },
  ],
  create_task: [
    { name: 'title', label: 'Task title', kind: 'text',
      hint: 'Optional; the workflow\'s name when empty. Templates work here.' },
    { name: 'priority', label: 'Priority', kind: 'enum',
      values: ['low', 'medium', 'high', 'urgent'], hint: 'Medium when not chosen.' },
    { name: 'due_in_hours', label: 'Due in (hours)', kind: 'number', hint: 'Optional.' },
  ],
  'slack.post_message': [{ name: 'channel', label: 'Channel', kind: 'text' }],
  'github.create_issue': [{ name: 'repo', label: 'Repository (owner/name)', kind: 'text' }],
  'google_calendar.create_event': [{ name: 'calendar_id', label: 'Calendar id', kind: 'text',
                                     hint: 'Optional; "primary" when empty.' }],
  'outlook.send_mail': [
    { name: 'to', label: 'To', kind: 'text' },
    { name: 'subject', label: 'Subject', kind: 'text' },
  ],
  'hubspot.create_note': [{ name: 'contact_email', label: 'Contact email', kind: 'text',
                            hint: 'Optional.' }],
};

const optionsOf = (action) => OPTIONS[action] || [];
const actionLabel = (a) => (ALL_ACTIONS.find(([n]) => n === a) || [a, a])[1];
const cap = (s) => s.charAt(0).toUpperCase() + s.slice(1);


function useNames(employees) {
  return useMemo(() => new Map((employees || []).map((e) => [e.id, e.name])), [employees]);
}


function describeTrigger(t) {
  if (!t) return '—';
  if (t.type === 'manual') return 'Manual';
  if (t.type === 'webhook') return 'Webhook' + (t.event ? ` (${t.event})` : '');
  if (t.type === 'schedule') return describeRecurring(t.recurring, 'Schedule');
  if (t.type === 'integration') return 'Integration: ' + (t.event || '?');
  return t.type;
}

// Milliseconds from 'start' to 'end' (or to now while it goes on), null before it started.
function span(start, end) {
  if (!start) return null;
  return Math.max(0, (end ? Date.parse(end) : Date.now()) - Date.parse(start));
}

// ---- The form's model: text as typed, turned into the API's body on submit ----

let uid = 0;

function toText(kind, v) {
  if (v === undefined || v === null) return '';
  if (kind === 'labels' && Array.isArray(v))
    return v.map((l) => (typeof l === 'string' ? l : l && l.description
      ? `${l.name}: ${l.description}` : String(l && l.name))).join('\n');
  if (kind === 'fields' && typeof v === 'object' && !Array.isArray(v))
    return Object.entries(v).map(([k, t]) => `${k}: ${t}`).join('\n');
  if (kind === 'tags' && Array.isArray(v)) return v.join(', ');
  return typeof v === 'string' ? v : JSON.stringify(v);
}

// The API value of an option's text; undefined (left out) when empty.
function fromText(kind, text) {
  const t = (text || '').trim();
  if (!t) return undefined;
  const lines = () => t.split('\n').map((l) => l.trim()).filter(Boolean);
  if (kind === 'labels')
    return lines().map((l) => {
      const i = l.indexOf(': ');
      return i > 0 ? { name: l.slice(0, i).trim(), description: l.slice(i + 2).trim() } : l;
    });
  if (kind === 'fields') {
    const out = {};
    for (const l of lines()) {
      const i = l.indexOf(':');
      if (i < 0) out[l] = '';
      else out[l.slice(0, i).trim()] = l.slice(i + 1).trim();
    }
    return out;
  }
  if (kind === 'tags') return t.split(',').map((s) => s.trim()).filter(Boolean);
  if (kind === 'number') {
    const n = Number(t);
    return Number.isFinite(n) ? n : t; // not a number: sent as typed, the server names it
  }
  return kind === 'text' ? text : t;
}

function stepFrom(s) {
  const opts = {};
  const extra = {};
  const given = s.options && typeof s.options === 'object' ? s.options : {};
  for (const [k, v] of Object.entries(given)) {
    const spec = optionsOf(s.action).find((o) => o.name === k);
    if (spec) opts[k] = toText(spec.kind, v);
    else extra[k] = v;
  }
  return {
    key: ++uid,
    employee_id: s.employee_id || '',
    action: s.action || 'respond',
    input: typeof s.input === 'string' ? s.input : s.input == null ? '' : JSON.stringify(s.input),
    condition: typeof s.condition === 'string' ? s.condition : '',
    opts,
    extra,
  };
}

function formFrom(w) {
  const t = (w && w.trigger) || {};
  const r = t.recurring || {};
  return {
    name: w.name || '',
    description: w.description || '',
    enabled: w.enabled !== false,
    trigger: { type: t.type || 'manual', event: t.event || '', frequency: r.frequency || 'daily',
               day: r.day || '', time: r.time || '' },
    steps: (Array.isArray(w.steps) ? w.steps : []).map(stepFrom),
  };
}

function newForm(employees, preset) {
  const first = preset || (employees && employees[0] ? employees[0].id : '');
  const step = { employee_id: first, action: 'respond', input: '{{trigger.text}}' };
  return formFrom({ name: '', trigger: { type: 'manual' }, steps: [step] });
}

function buildTrigger(t) {
  const out = { type: t.type };
  if ((t.type === 'webhook' || t.type === 'integration') && t.event.trim())
    out.event = t.event.trim();
  if (t.type === 'schedule') {
    out.recurring = { frequency: t.frequency };
    if ((t.frequency === 'weekly' || t.frequency === 'monthly') && t.day)
      out.recurring.day = t.day;
    out.recurring.time = t.time.trim();
  }
  return out;
}

function buildStep(s) {
  const out = { employee_id: s.employee_id, action: s.action, input: s.input };
  if (s.condition.trim()) out.condition = s.condition;
  const options = { ...s.extra };
  for (const o of optionsOf(s.action)) {
    const v = fromText(o.kind, s.opts[o.name]);
    if (v !== undefined) options[o.name] = v;
  }
  if (Object.keys(options).length) out.options = options;
  return out;
}

function build(f) {
  return {
    name: f.name,
    description: f.description.trim() ? f.description : null,
    enabled: f.enabled,
    trigger: buildTrigger(f.trigger),
    steps: f.steps.map(buildStep),
  };
}

// The members of 'next' that differ from 'base'.
function changes(next, base) {
  const out = {};
  for (const k of Object.keys(next))
    if (JSON.stringify(next[k]) !== JSON.stringify(base[k])) out[k] = next[k];
  return out;
}

// The params the form has a field for, as shown now.
function fieldParams(f) {
  const out = ['name', 'description', 'enabled', 'trigger.type'];
  const t = f.trigger;
  if (t.type === 'webhook' || t.type === 'integration') out.push('trigger.event');
  if (t.type === 'schedule') {
    out.push('trigger.recurring.frequency', 'trigger.recurring.time');
    if (t.frequency === 'weekly' || t.frequency === 'monthly') out.push('trigger.recurring.day');
  }
  f.steps.forEach((s, i) => {
    const p = `steps[${i}]`;
    out.push(`${p}.employee_id`, `${p}.action`, `${p}.input`, `${p}.condition`);
    for (const o of optionsOf(s.action)) out.push(`${p}.options.${o.name}`);
  });
  return out;
}

const claimed = (error, params) => params.some((p) => paramError(error, p));

// ---- The editor ----

function EmployeeOptions({ employees, value }) {
  const list = employees || [];
  return html`
    <option value="">Choose an employee</option>
    ${list.map((e) => html`<option key=${e.id} value=${e.id}>${e.name} (${e.role})</option>`)}
    ${value && !list.some((e) => e.id === value)
      ? html`<option value=${value}>${value}</option>` : null}`;
}

function OptionField({ o, step, index, error, onChange }) {
  const value = step.opts[o.name] || '';
  const set = (e) => onChange(step.key, o.name, e.target.value);
  return html`<${Field} label=${o.label} param=${`steps[${index}].options.${o.name}`}
    error=${error} hint=${o.hint}>${(a) => o.kind === 'enum'
      ? html`<select ...${a} value=${value} onChange=${set}>
          <option value="">Not chosen</option>
          ${o.values.map((v) => html`<option key=${v} value=${v}>${cap(v)}</option>`)}
          ${value && !o.values.includes(value) ? html`<option value=${value}>${value}</option>`
                                               : null}
        </select>`
      : o.lines
        ? html`<textarea ...${a} rows="4" class="wf-mono" value=${value} onInput=${set} />`
        : html`<input ...${a} type="text" value=${value} onInput=${set} />`}</${Field}>`;
}

function StepEditor({ step, index, count, employees, error, params, ops }) {
  const p = `steps[${index}]`;
  const mine = paramError(error, p);
  const stepError = mine && !claimed(mine, params) ? mine : null;
  const known = ALL_ACTIONS.some(([n]) => n === step.action);
  const out = (ALL_ACTIONS.find(([n]) => n === step.action) || [])[2];
  const extra = Object.keys(step.extra);
  const n = index + 1;
  return html`<fieldset class="wf-step" id=${'wfs-' + step.key}>
    <legend>Step ${n}</legend>
    <${ErrorBox} error=${stepError} />
    <div class="wf-cols">
      <${Field} label="Employee" param=${p + '.employee_id'} error=${error}>${(a) => html`
        <select ...${a} value=${step.employee_id}
          onChange=${(e) => ops.set(step.key, { employee_id: e.target.value })}>
          <${EmployeeOptions} employees=${employees} value=${step.employee_id} />
        </select>`}</${Field}>
      <${Field} label="Action" param=${p + '.action'} error=${error}
        hint=${out ? 'Output: ' + out : undefined}>${(a) => html`
        <select ...${a} value=${step.action}
          onChange=${(e) => ops.set(step.key, { action: e.target.value })}>
          <optgroup label="Built in">
            ${ACTIONS.map(([v, l]) => html`<option key=${v} value=${v}>${l}</option>`)}
          </optgroup>
          <optgroup label="Integrations (need a connection)">
            ${INTEGRATION_ACTIONS.map(([v, l]) => html`<option key=${v} value=${v}>${l}</option>`)}
          </optgroup>
          ${known ? null : html`<option value=${step.action}>${step.action}</option>`}
        </select>`}</${Field}>
    </div>
    <${Field} label="Input" param=${p + '.input'} error=${error}
      hint=${index === 0
        ? 'What the employee works on. Templates: {{trigger.<name>}} reads the run\'s input.'
        : `Templates: {{trigger.<name>}}, {{steps[N].output}} or {{steps[N].output.<name>}} ` +
          `with N from 0 to ${index - 1} (steps count from 0).`}>${(a) => html`
      <textarea ...${a} rows="3" class="wf-mono" value=${step.input}
        onInput=${(e) => ops.set(step.key, { input: e.target.value })} />`}</${Field}>
    <${Field} label="Condition" param=${p + '.condition'} error=${error}
      hint=${CONDITION_HINT}>${
      (a) => html`<input ...${a} type="text" class="wf-mono" value=${step.condition}
        onInput=${(e) => ops.set(step.key, { condition: e.target.value })} />`}</${Field}>
    ${optionsOf(step.action).length ? html`<div class="wf-cols">
      ${optionsOf(step.action).map((o) => html`<${OptionField} key=${o.name} o=${o} step=${step}
        index=${index} error=${error} onChange=${ops.setOpt} />`)}</div>` : null}
    ${extra.length ? html`<p class="small">Other options, kept as given (the action does not
      take them): <code>${JSON.stringify(step.extra)}</code>
      <button type="button" class="link" onClick=${() => ops.set(step.key, { extra: {} })}>
        Drop them</button></p>` : null}
    <div class="wf-step-tools">
      <button type="button" class="secondary" id=${`wfs-${step.key}-up`} disabled=${index === 0}
        onClick=${() => ops.move(step.key, -1, 'up')}>Move up<span class="sr-only"> step ${n}
        </span></button>
      <button type="button" class="secondary" id=${`wfs-${step.key}-down`}
        disabled=${index === count - 1}
        onClick=${() => ops.move(step.key, 1, 'down')}>Move down<span class="sr-only"> step ${
        n}</span></button>
      <button type="button" class="danger" disabled=${count === 1}
        onClick=${() => ops.remove(step.key)}>Remove<span class="sr-only"> step ${n}</span>
      </button>
    </div>
  </fieldset>`;
}

function TriggerEditor({ t, error, params, onChange }) {
  const mine = paramError(error, 'trigger');
  const groupError = mine && !claimed(mine, params) ? mine : null;
  const set = (k) => (e) => onChange({ [k]: e.target.value });
  const days = t.frequency === 'weekly' ? WEEKDAYS : t.frequency === 'monthly' ? MONTHDAYS : null;
  return html`<fieldset class="wf-group">
    <legend>Trigger</legend>
    <${ErrorBox} error=${groupError} />
    <${Field} label="Starts on" param="trigger.type" error=${error}>${(a) => html`
      <select ...${a} value=${t.type} onChange=${set('type')}>
        ${TRIGGERS.map(([v, l]) => html`<option key=${v} value=${v}>${l}</option>`)}
      </select>`}</${Field}>
    ${t.type === 'webhook' || t.type === 'integration' ? html`
      <${Field} label=${t.type === 'webhook' ? 'Event name (optional)' : 'Event'}
        param="trigger.event" error=${error}
        hint=${t.type === 'webhook' ? 'A name of your own, recorded on each run.'
          : 'provider.event, e.g. github.issues.opened (slack, google_calendar, outlook, ' +
            'github, hubspot).'}>${(a) => html`
        <input ...${a} type="text" value=${t.event} onInput=${set('event')} />`}</${Field}>`
      : null}
    ${t.type === 'schedule' ? html`<div class="wf-cols">
      <${Field} label="Repeats" param="trigger.recurring.frequency" error=${error}>${(a) => html`
        <select ...${a} value=${t.frequency} onChange=${set('frequency')}>
          ${FREQUENCIES.map(([v, l]) => html`<option key=${v} value=${v}>${l}</option>`)}
        </select>`}</${Field}>
      ${days ? html`<${Field} label=${t.frequency === 'weekly' ? 'Day of the week'
                                                              : 'Day of the month'}
        param="trigger.recurring.day" error=${error}
        hint=${t.frequency === 'monthly' ? 'Past the month\'s end: its last day.' : undefined}>${
        (a) => html`<select ...${a} value=${days.includes(t.day) ? t.day : ''}
          onChange=${set('day')}>
          <option value="">Choose a day</option>
          ${days.map((d) => html`<option key=${d} value=${d}>${cap(d)}</option>`)}
        </select>`}</${Field}>` : null}
      <${Field} label="Time (UTC)" param="trigger.recurring.time" error=${error}
        hint="HH:MM, 24-hour.">${(a) => html`<input ...${a} type="text" placeholder="09:00"
        inputmode="numeric" value=${t.time} onInput=${set('time')} />`}</${Field}>
    </div>` : null}
  </fieldset>`;
}

// Create (no 'workflow') or edit a workflow. 'onSaved(w)' after an edit is saved.
function Editor({ workflow, employees, employeesError, preset, Heading, onSaved }) {
  const creating = !workflow;
  const [form, setForm] = useState(() => (creating ? newForm(employees, preset)
                                                   : formFrom(workflow)));
  const [mode, setMode] = useState('form');
  const [jsonText, setJsonText] = useState('');
  const [local, setLocal] = useState(null);
  const [saved, setSaved] = useState(null);
  const act = useAction();
  const formRef = useRef(null);
  const focusNext = useRef(null);
  const error = local || act.error;
  const params = fieldParams(form);

  // After a failed save: focus on the first field in error, if one shows it.
  useEffect(() => {
    const el = error && formRef.current &&
      formRef.current.querySelector('[aria-invalid="true"]');
    if (el) el.focus();
  }, [error]);

  // Focus after a step moved, was added or removed.
  useEffect(() => {
    const f = focusNext.current;
    focusNext.current = null;
    if (!f || !formRef.current) return;
    const el = formRef.current.querySelector(f);
    if (el && !el.disabled) el.focus();
    else if (f.endsWith('-up') || f.endsWith('-down')) {
      const other = formRef.current.querySelector(f.replace(/-(up|down)$/,
        (m) => (m === '-up' ? '-down' : '-up')));
      if (other) other.focus();
    }
  });

  const edit = (fn) => {
    setSaved(null);
    setForm(fn);
  };
  const restructure = (fn) => {
    act.clear();
    edit((f) => ({ ...f, steps: fn(f.steps) }));
  };
  const ops = {
    set: (key, patch) => edit((f) => ({ ...f, steps: f.steps.map((s) => (s.key === key
      ? { ...s, ...patch } : s)) })),
    setOpt: (key, name, value) => edit((f) => ({ ...f, steps: f.steps.map((s) => (s.key === key
      ? { ...s, opts: { ...s.opts, [name]: value } } : s)) })),
    move: (key, by, which) => {
      focusNext.current = `#wfs-${key}-${which}`;
      restructure((steps) => {
        const i = steps.findIndex((s) => s.key === key);
        const j = i + by;
        if (i < 0 || j < 0 || j >= steps.length) return steps;
        const next = steps.slice();
        [next[i], next[j]] = [next[j], next[i]];
        return next;
      });
    },
    remove: (key) => {
      focusNext.current = '#wf-add-step';
      restructure((steps) => steps.filter((s) => s.key !== key));
    },
  };
  const addStep = () => {
    const last = form.steps[form.steps.length - 1];
    const n = form.steps.length;
    const s = stepFrom({ employee_id: last ? last.employee_id : (employees && employees[0]
      ? employees[0].id : ''), action: 'respond',
                         input: n ? `{{steps[${n - 1}].output}}` : '{{trigger.text}}' });
    focusNext.current = `#wfs-${s.key} select`;
    restructure((steps) => [...steps, s]);
  };

  const toJson = () => {
    setLocal(null);
    setSaved(null);
    setJsonText(JSON.stringify(build(form), null, 2));
    setMode('json');
  };
  const toForm = () => {
    let d;
    try {
      d = JSON.parse(jsonText);
    } catch (e) {
      setLocal({ param: 'definition', code: 'invalid_json',
                 message: `This is not valid JSON, so the form cannot show it: ${e.message}.` });
      return;
    }
    if (!d || typeof d !== 'object' || Array.isArray(d)) {
      setLocal({ param: 'definition', code: 'invalid_json',
                 message: 'The definition must be a JSON object.' });
      return;
    }
    setLocal(null);
    setSaved(null);
    setForm(formFrom(d));
    setMode('form');
  };

  const submit = async (ev) => {
    ev.preventDefault();
    setLocal(null);
    setSaved(null);
    let body;
    if (mode === 'json') {
      try {
        body = JSON.parse(jsonText);
      } catch (e) {
        setLocal({ param: 'definition', code: 'invalid_json',
                   message: `This is not valid JSON: ${e.message}. Nothing was sent.` });
        return;
      }
      if (!body || typeof body !== 'object' || Array.isArray(body)) {
        setLocal({ param: 'definition', code: 'invalid_json',
                   message: 'The definition must be a JSON object. Nothing was sent.' });
        return;
      }
    } else {
      body = build(form);
      if (!creating) body = changes(body, build(formFrom(workflow)));
      else if (body.description === null) delete body.description;
    }
    if (!creating && !Object.keys(body).length) {
      setSaved('unchanged');
      return;
    }
    const w = await act.run(() => (creating ? api('POST', '/v1/workflows', { body })
      : api('PATCH', `/v1/workflows/${workflow.id}`, { body })));
    if (!w) return;
    if (creating) {
      location.hash = '#/workflows/' + w.id;
      return;
    }
    const f = formFrom(w);
    setForm(f);
    if (mode === 'json') setJsonText(JSON.stringify(build(f), null, 2));
    setSaved(w.updated_at);
    onSaved(w);
  };

  const discard = () => {
    act.clear();
    setLocal(null);
    setSaved(null);
    const f = formFrom(workflow);
    setForm(f);
    if (mode === 'json') setJsonText(JSON.stringify(build(f), null, 2));
  };

  // An error no field shows, at the top (in JSON mode: every server error).
  const top = act.error && (mode === 'json' || !(claimed(act.error, params) ||
    paramError(act.error, 'trigger') ||
    form.steps.some((_, i) => paramError(act.error, `steps[${i}]`)))) ? act.error : null;

  return html`<form class="wf-form" ref=${formRef} onSubmit=${submit} noValidate
      aria-label=${creating ? 'New workflow' : 'Workflow definition'}>
    <${ErrorBox} error=${employeesError} />
    <${ErrorBox} error=${top} />
    <div class="row wf-mode">
      ${mode === 'form'
        ? html`<button type="button" class="secondary" onClick=${toJson}>Edit as JSON</button>`
        : html`<button type="button" class="secondary" onClick=${toForm}>Edit with the form
          </button>`}
      <span class="small">${mode === 'form' ? 'The JSON view shows the whole definition.'
        : 'The body sent to the API, as is.'}</span>
    </div>
    ${mode === 'json' ? html`<${Field} label="Definition (JSON)" param="definition" error=${local}
        hint="name, description, enabled, trigger and steps, as in the API reference.">${
        (a) => html`<textarea ...${a} class="wf-mono wf-json" rows="24" spellcheck="false"
          value=${jsonText} onInput=${(e) => { setJsonText(e.target.value); setSaved(null); }} />`
      }</${Field}>` : html`
      <div class="wf-cols">
        <${Field} label="Name" param="name" error=${error}>${(a) => html`
          <input ...${a} type="text" value=${form.name} maxlength="200"
            onInput=${(e) => edit((f) => ({ ...f, name: e.target.value }))} />`}</${Field}>
        <div class="wf-check">
          <${Field} label="Enabled" param="enabled" error=${error}
            hint="When off, only a manual run starts it.">${(a) => html`
            <input ...${a} type="checkbox" checked=${form.enabled}
              onChange=${(e) => edit((f) => ({ ...f, enabled: e.target.checked }))} />`}</${
          Field}>
        </div>
      </div>
      <${Field} label="Description (optional)" param="description" error=${error}>${(a) => html`
        <textarea ...${a} rows="2" value=${form.description}
          onInput=${(e) => edit((f) => ({ ...f, description: e.target.value }))} />`}</${Field}>
      <${TriggerEditor} t=${form.trigger} error=${error} params=${params}
        onChange=${(patch) => edit((f) => ({ ...f, trigger: { ...f.trigger, ...patch } }))} />
      <${Heading} class="wf-steps-title">Steps</${Heading}>
      <p class="small">They run in order, each by its employee; a step can read the outputs of
        the steps before it. 1 to ${MAX_STEPS} steps.</p>
      ${form.steps.map((s, i) => html`<${StepEditor} key=${s.key} step=${s} index=${i}
        count=${form.steps.length} employees=${employees} error=${error} params=${params}
        ops=${ops} />`)}
      <button type="button" class="secondary" id="wf-add-step"
        disabled=${form.steps.length >= MAX_STEPS} onClick=${addStep}>Add a step</button>`}
    <div class="actions wf-submit">
      <button type="submit" disabled=${act.busy}>${act.busy ? 'Saving…'
        : creating ? 'Create workflow' : 'Save changes'}</button>
      ${creating ? html`<a href="#/workflows">Cancel</a>` : html`<button type="button"
        class="secondary" onClick=${discard} disabled=${act.busy}>Discard changes</button>`}
      <span role="status" class="small">${saved === 'unchanged' ? 'Nothing changed.'
        : saved ? 'Saved.' : ''}</span>
    </div>
  </form>`;
}

// ---- The list ----

function List() {
  const list = usePaged('/v1/workflows', 'workflows', { limit: 25 });
  return html`
    <${PageTitle} actions=${can('workflows.write') ? html`<a class="button"
      href="#/workflows/new">New workflow</a>` : null}>Workflows</${PageTitle}>
    <p class="muted">A workflow hands work from employee to employee: each step gives its
      output to the next. Run one by hand, or let a webhook, a schedule or an integration
      start it.</p>
    ${list.loading && !list.items.length ? html`<${Loading} what="workflows" />` : null}
    ${!list.loading && !list.error && !list.items.length ? html`<${Empty}>No workflow yet.${
      can('workflows.write') ? html` <a href="#/workflows/new">Create the first one</a>.` : null}
      </${Empty}>` : null}
    ${list.items.length ? html`<table class="wf-table">
      <caption class="sr-only">Workflows, newest first</caption>
      <thead><tr><th scope="col">Name</th><th scope="col">Status</th>
        <th scope="col">Trigger</th><th scope="col">Steps</th><th scope="col">Runs</th>
        <th scope="col">Last run</th><th scope="col">Updated</th></tr></thead>
      <tbody>${list.items.map((w) => html`<tr key=${w.id}>
        <td><a href=${'#/workflows/' + w.id}>${w.name}</a>
          ${w.description ? html`<div class="small">${w.description.length > 120
            ? w.description.slice(0, 120) + '…' : w.description}</div>` : null}</td>
        <td><${Status} value=${w.enabled ? 'enabled' : 'disabled'} /></td>
        <td>${describeTrigger(w.trigger)}</td>
        <td>${w.steps.length}</td>
        <td>${w.run_count}</td>
        <td><${Time} iso=${w.last_run_at} /></td>
        <td><${Time} iso=${w.updated_at} /></td>
      </tr>`)}</tbody>
    </table>` : null}
    <${More} list=${list} />`;
}

// ---- New ----

function NewWorkflow({ query }) {
  const emps = useLoad(allEmployees, []);
  const ready = emps.data || emps.error;
  return html`
    <${PageTitle}>New workflow</${PageTitle}>
    <p><a href="#/workflows">All workflows</a></p>
    ${ready ? html`<${Editor} employees=${emps.data} employeesError=${emps.error}
      preset=${query.employee} Heading="h2" />` : html`<${Loading} what="employees" />`}`;
}

// ---- One workflow ----

const curlExample = (url) => [`curl -X POST '${url}'`, `  -H 'Content-Type: application/json'`,
                               `  -d '{"text": "Hello"}'`].join(' \\\n');

function Webhook({ w, onChange }) {
  const act = useAction();
  const [note, setNote] = useState('');
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(w.webhook_url);
      setNote('Copied.');
    } catch {
      setNote('Copying was refused: select the URL and copy it.');
    }
  };
  const rotate = async () => {
    const r = await act.run(() => api('POST', `/v1/workflows/${w.id}/rotate_webhook`,
                                      { body: {} }));
    if (r) {
      onChange(r);
      setNote('A new URL: the old one no longer works.');
    }
  };
  return html`<section class="panel wf-sec" aria-labelledby="wf-hook">
    <h2 id="wf-hook">Webhook</h2>
    <p class="small">A POST of a JSON object to this URL starts a run, the body as its input
      (read by <code>${'{{trigger.<name>}}'}</code>). The URL alone authenticates: keep it
      secret.
      ${w.enabled ? '' : ' The workflow is disabled: the URL starts no run until it is enabled.'}
    </p>
    <${Field} label="Webhook URL">${(a) => html`<input ...${a} type="text" readonly
      class="wf-mono wf-url" value=${w.webhook_url} onFocus=${(e) => e.target.select()} />`}</${
      Field}>
    <div class="actions">
      <button type="button" class="secondary" onClick=${copy}>Copy URL</button>
      <${Confirm} label="Rotate URL" ask="The current URL will stop working. Rotate?"
        onConfirm=${rotate} disabled=${act.busy} />
      <span role="status" class="small">${note}</span>
    </div>
    <${ErrorBox} error=${act.error} />
    <details><summary>Example</summary><pre>${curlExample(w.webhook_url)}</pre></details>
  </section>`;
}

// The {{trigger.<name>}} names the steps read: the run input's starting point.
function inputTemplate(w) {
  const names = new Set();
  const re = /trigger\.([A-Za-z_][A-Za-z0-9_]*)/g;
  let m;
  const text = JSON.stringify(w.steps);
  while ((m = re.exec(text))) names.add(m[1]);
  const o = {};
  for (const n of names) o[n] = '';
  return JSON.stringify(o, null, 2);
}

function DryRun({ result, w, names }) {
  return html`<div class="wf-dry">
    <h3>Dry run</h3>
    <p class="small">Nothing was stored, called or charged. Outputs of earlier steps are shown as
      their templates.</p>
    <table>
      <thead><tr><th scope="col">Step</th><th scope="col">Would run</th>
        <th scope="col">Condition</th><th scope="col">Rendered input</th></tr></thead>
      <tbody>${result.steps.map((s) => {
        const def = w.steps[s.index] || {};
        return html`<tr key=${s.index}>
          <td>${s.index + 1}. ${actionLabel(def.action)}<div class="small">${
            names.get(def.employee_id) || def.employee_id}</div></td>
          <td>${s.would_run === null ? 'Depends on an earlier output'
            : s.would_run ? 'Yes' : 'No: skipped'}</td>
          <td>${def.condition ? html`<code>${def.condition}</code><div class="small">${
            s.condition_value === null ? 'not known yet' : 'is ' + s.condition_value}</div>`
            : html`<span class="muted">none</span>`}</td>
          <td><pre class="wf-text">${s.input === null ? '' : s.input}</pre></td>
        </tr>`;
      })}</tbody>
    </table>
  </div>`;
}

function RunPanel({ w, names }) {
  const [text, setText] = useState(() => inputTemplate(w));
  const [local, setLocal] = useState(null);
  const [dry, setDry] = useState(null);
  const act = useAction();
  const go = async (dryRun) => {
    setLocal(null);
    setDry(null);
    act.clear();
    let input;
    try {
      input = text.trim() ? JSON.parse(text) : {};
    } catch (e) {
      setLocal({ param: 'input', code: 'invalid_json',
                 message: `The input is not valid JSON (${e.message}). Nothing was sent.` });
      return;
    }
    if (!input || typeof input !== 'object' || Array.isArray(input)) {
      setLocal({ param: 'input', code: 'invalid_json', message: 'The input must be a JSON ' +
                 'object, such as {"text": "Hello"}. Nothing was sent.' });
      return;
    }
    const body = dryRun ? { input, dry_run: true } : { input };
    const r = await act.run(() => api('POST', `/v1/workflows/${w.id}/run`, { body }));
    if (!r) return;
    if ('dry_run' in r) setDry(r);
    else location.hash = `#/workflows/${w.id}/runs/${r.id}`;
  };
  const error = local || act.error;
  return html`<section class="panel wf-sec" aria-labelledby="wf-run">
    <h2 id="wf-run">Run</h2>
    <form onSubmit=${(e) => { e.preventDefault(); go(false); }} noValidate>
      <${Field} label="Input (a JSON object)" param="input" error=${error}
        hint=${'The run\'s trigger data, read by {{trigger.<name>}}.'}>${(a) => html`
        <textarea ...${a} class="wf-mono" rows="5" spellcheck="false" value=${text}
          onInput=${(e) => setText(e.target.value)} />`}</${Field}>
      <${ErrorBox} error=${act.error && !paramError(act.error, 'input') ? act.error : null} />
      <div class="actions">
        <button type="submit" disabled=${act.busy}>Run</button>
        <button type="button" class="secondary" disabled=${act.busy}
          onClick=${() => go(true)}>Dry run</button>
        <span class="small">A dry run shows what each step would get, and runs nothing.</span>
      </div>
    </form>
    ${dry ? html`<${DryRun} result=${dry} w=${w} names=${names} />` : null}
  </section>`;
}

function RunsTable({ w }) {
  const path = `/v1/workflows/${w.id}/runs`;
  const runs = usePaged(path, 'runs', { limit: 20 });
  const [error, setError] = useState(null);
  // While a run shown is unfinished, its first page is read again and merged in.
  const live = runs.items.some((r) => !DONE.has(r.status));
  useInterval(async () => {
    if (runs.loading) return;
    try {
      const page = await api('GET', path, { query: { limit: 20 } });
      runs.setItems((items) => {
        const fresh = new Map(page.runs.map((r) => [r.id, r]));
        const newest = items[0];
        const added = page.runs.filter((r) => !items.some((i) => i.id === r.id) &&
                                              (!newest || r.created_at >= newest.created_at));
        return [...added, ...items.map((i) => fresh.get(i.id) || i)];
      });
      setError(null);
    } catch (e) {
      if (e.code !== 'aborted') setError(e);
    }
  }, live ? LIST_POLL_MS : 0);
  return html`<section aria-labelledby="wf-runs">
    <div class="row wf-runs-head"><h2 id="wf-runs">Runs</h2>
      <button type="button" class="secondary" onClick=${runs.reload}
        disabled=${runs.loading}>Refresh</button>
      ${live ? html`<span class="small">Refreshed every ${LIST_POLL_MS / 1000} s while a run
        goes on.</span>` : null}</div>
    <${ErrorBox} error=${error} />
    ${runs.loading && !runs.items.length ? html`<${Loading} what="runs" />` : null}
    ${!runs.loading && !runs.error && !runs.items.length
      ? html`<${Empty}>No run yet. Start one above.</${Empty}>` : null}
    ${runs.items.length ? html`<table class="wf-table">
      <caption class="sr-only">Runs of this workflow, newest first</caption>
      <thead><tr><th scope="col">Run (queued)</th><th scope="col">Status</th>
        <th scope="col">Trigger</th><th scope="col">Started</th>
        <th scope="col">Completed</th><th scope="col">Duration</th>
        <th scope="col">Credits</th></tr></thead>
      <tbody>${runs.items.map((r) => html`<tr key=${r.id}>
        <td><a href=${`#/workflows/${w.id}/runs/${r.id}`} title=${r.id}><${Time}
          iso=${r.created_at} /></a></td>
        <td><${Status} value=${r.status} />${r.status === 'failed' && r.error
          ? html`<div class="small wf-fail">${r.error.length > 100 ? r.error.slice(0, 100) + '…'
                                                                     : r.error}</div>` : null}</td>
        <td>${cap(r.trigger.type)}${r.trigger.event ? ` (${r.trigger.event})` : ''}</td>
        <td><${Time} iso=${r.started_at} /></td>
        <td><${Time} iso=${r.completed_at} /></td>
        <td>${ms(span(r.started_at, r.completed_at))}${r.started_at && !r.completed_at
          ? ' so far' : ''}</td>
        <td>${r.credits_used}</td>
      </tr>`)}</tbody>
    </table>` : null}
    <${More} list=${runs} />
  </section>`;
}

function WorkflowPage({ id }) {
  const wf = useLoad((signal) => api('GET', `/v1/workflows/${encodeURIComponent(id)}`,
                                      { signal }), [id]);
  const emps = useLoad(allEmployees, []);
  const names = useNames(emps.data);
  const del = useAction();
  if (!wf.data) {
    return html`<${PageTitle}>Workflow</${PageTitle}>
      <p><a href="#/workflows">All workflows</a></p>
      ${wf.error ? html`<${ErrorBox} error=${wf.error} onRetry=${wf.reload} />`
                 : html`<${Loading} what="the workflow" />`}`;
  }
  const w = wf.data;
  const remove = async () => {
    const r = await del.run(() => api('DELETE', `/v1/workflows/${w.id}`));
    if (r) location.hash = '#/workflows';
  };
  return html`
    <${PageTitle} actions=${can('workflows.write') ? html`<${Confirm} label="Delete workflow"
      ask="Delete this workflow and its runs?" onConfirm=${remove} disabled=${del.busy} />`
      : null}>${w.name}</${PageTitle}>
    <p><a href="#/workflows">All workflows</a></p>
    <${ErrorBox} error=${del.error} />
    ${w.description ? html`<p>${w.description}</p>` : null}
    <dl class="kv panel wf-summary">
      <dt>Status</dt><dd><${Status} value=${w.enabled ? 'enabled' : 'disabled'} /></dd>
      <dt>Trigger</dt><dd>${describeTrigger(w.trigger)}</dd>
      <dt>Steps</dt><dd>${w.steps.map((s, i) => html`<span key=${i}>${i ? ' → ' : ''}${
        actionLabel(s.action)} (${names.get(s.employee_id) || s.employee_id})</span>`)}</dd>
      <dt>Runs</dt><dd>${w.run_count}${w.last_run_at ? html`, last <${Time}
        iso=${w.last_run_at} />` : null}</dd>
      <dt>Created</dt><dd><${Time} iso=${w.created_at} /></dd>
      <dt>Updated</dt><dd><${Time} iso=${w.updated_at} /></dd>
      <dt>ID</dt><dd><code>${w.id}</code></dd>
    </dl>
    ${w.webhook_url && can('workflows.write') ? html`<${Webhook} w=${w}
      onChange=${wf.setData} />` : null}
    ${can('workflows.run') ? html`<${RunPanel} key=${w.id} w=${w} names=${names} />` : null}
    <${RunsTable} key=${w.id} w=${w} />
    <section aria-labelledby="wf-def">
      <h2 id="wf-def">Definition</h2>
      ${!can('workflows.write') ? html`<${Json} value=${{ trigger: w.trigger, steps: w.steps }} />`
        : emps.data || emps.error ? html`<${Editor} key=${w.id} workflow=${w}
        employees=${emps.data} employeesError=${emps.error} Heading="h3"
        onSaved=${wf.setData} />` : html`<${Loading} what="employees" />`}
    </section>`;
}

// ---- One run ----

function Output({ value }) {
  if (value === null || value === undefined) return html`<p class="muted">None.</p>`;
  if (typeof value === 'string') return html`<${Markdown} text=${value} />`;
  return html`<${Json} value=${value} />`;
}

const STEP_NOTES = {
  pending: 'Not started: waiting for the steps before it, or for its employee to be back.',
  skipped: 'Its condition was false: the step did not run.',
  cancelled: 'The run was cancelled, or an earlier step failed, before it ran.',
};

function RunStep({ s, names }) {
  const d = span(s.started_at, s.completed_at);
  const task = s.action === 'create_task' && s.output && s.output.id;
  return html`<li class="panel wf-run-step">
    <div class="wf-step-head">
      <h3>Step ${s.index + 1}: ${actionLabel(s.action)}</h3>
      <${Status} value=${s.status} />
    </div>
    ${STEP_NOTES[s.status] ? html`<p class="small">${STEP_NOTES[s.status]}</p>` : null}
    <dl class="kv">
      <dt>Employee</dt><dd><a href=${'#/employees/' + s.employee_id}>${
        names.get(s.employee_id) || s.employee_id}</a></dd>
      <dt>Started</dt><dd><${Time} iso=${s.started_at} /></dd>
      <dt>Completed</dt><dd><${Time} iso=${s.completed_at} /></dd>
      <dt>Duration</dt><dd>${ms(d)}${s.started_at && !s.completed_at ? ' so far' : ''}</dd>
      <dt>Attempts</dt><dd>${s.attempts}</dd>
      <dt>Credits</dt><dd>${s.credits_used}</dd>
    </dl>
    ${s.error ? html`<div class="wf-step-error"><strong>Error:</strong> ${s.error}</div>` : null}
    ${s.input !== null ? html`<h4>Input</h4><pre class="wf-text">${s.input}</pre>` : null}
    ${s.status === 'completed' || s.output !== null ? html`<h4>Output</h4>
      <${Output} value=${s.output} />
      ${task ? html`<p><a href=${'#/tasks/' + s.output.id}>Open the task</a></p>` : null}`
      : null}
  </li>`;
}

function RunView({ wid, rid }) {
  const path = `/v1/workflows/${encodeURIComponent(wid)}/runs/${encodeURIComponent(rid)}`;
  const run = useLoad((signal) => api('GET', path, { signal }), [path]);
  const wf = useLoad((signal) => api('GET', `/v1/workflows/${encodeURIComponent(wid)}`,
                                      { signal }), [wid]);
  const emps = useLoad(allEmployees, []);
  const names = useNames(emps.data);
  const [pollError, setPollError] = useState(null);
  const busy = useRef(false);
  const cancel = useAction();
  const r = run.data;
  const finished = r && DONE.has(r.status);

  const poll = async () => {
    if (busy.current) return;
    busy.current = true;
    try {
      run.setData(await api('GET', path));
      setPollError(null);
    } catch (e) {
      if (e.code !== 'aborted') setPollError(e);
    } finally {
      busy.current = false;
    }
  };
  useInterval(poll, r && !finished ? RUN_POLL_MS : 0);

  const doCancel = async () => {
    const c = await cancel.run(() => api('POST', path + '/cancel', { body: {} }));
    if (c) run.setData(c);
    else poll(); // e.g. 409 run_not_cancellable: it ended meanwhile; show how
  };

  const wname = wf.data ? wf.data.name : wid;
  const back = html`<p><a href=${'#/workflows/' + wid}>Back to ${wname}</a></p>`;
  if (!r) {
    return html`<${PageTitle}>Run</${PageTitle}>${back}
      ${run.error ? html`<${ErrorBox} error=${run.error} onRetry=${run.reload} />`
                  : html`<${Loading} what="the run" />`}`;
  }
  const done = r.steps.filter((s) => DONE.has(s.status) || s.status === 'skipped').length;
  return html`
    <${PageTitle} actions=${finished || !can('workflows.run') ? null : html`<${Confirm}
      label="Cancel run"
      ask="Stop this run? The step in flight finishes uncharged." onConfirm=${doCancel}
      disabled=${cancel.busy} />`}>${'Run of ' + wname}</${PageTitle}>
    ${back}
    <${ErrorBox} error=${cancel.error} />
    <${ErrorBox} error=${pollError} onRetry=${poll} />
    <dl class="kv panel wf-summary">
      <dt>Status</dt><dd><span role="status"><${Status} value=${r.status} />
        <span class="small"> ${done} of ${r.steps.length} steps done${finished ? ''
          : `; refreshed every ${RUN_POLL_MS / 1000} s`}</span></span></dd>
      <dt>Run</dt><dd><code>${r.id}</code></dd>
      <dt>Trigger</dt><dd>${cap(r.trigger.type)}${r.trigger.event ? ` (${r.trigger.event})`
                                                                   : ''}</dd>
      <dt>Queued</dt><dd><${Time} iso=${r.created_at} /></dd>
      <dt>Started</dt><dd><${Time} iso=${r.started_at} /></dd>
      <dt>Completed</dt><dd><${Time} iso=${r.completed_at} /></dd>
      <dt>Duration</dt><dd>${ms(span(r.started_at, r.completed_at))}${
        r.started_at && !r.completed_at ? ' so far' : ''}</dd>
      <dt>Credits</dt><dd>${r.credits_used}</dd>
      ${r.error ? html`<dt>Error</dt><dd class="wf-fail">${r.error}</dd>` : null}
    </dl>
    <details class="wf-trigger-data"><summary>Input (trigger data)</summary>
      <${Json} value=${r.trigger.data} /></details>
    <h2>Steps</h2>
    <ol class="plain wf-run-steps">
      ${r.steps.map((s) => html`<${RunStep} key=${s.index} s=${s} names=${names} />`)}
    </ol>`;
}

export default function WorkflowsPage({ parts, query }) {
  const [first, second, third] = parts;
  if (!first) return html`<${List} />`;
  if (first === 'new' && !can('workflows.write'))
    return html`<p class="notice" role="status">Your role does not create workflows.</p>`;
  if (first === 'new') return html`<${NewWorkflow} query=${query || {}} />`;
  if (second === 'runs' && third)
    return html`<${RunView} key=${first + '/' + third} wid=${first} rid=${third} />`;
  return html`<${WorkflowPage} key=${first} id=${first} />`;
}
