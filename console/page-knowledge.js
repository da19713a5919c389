// SPDX-License-Identifier: MIT
// page-knowledge.js: the knowledge base. #/knowledge has three parts: an upload form (drop files
// on it, or choose them with the file input, the keyboard's way), the documents list (paged with
// its cursor, filtered by tag and by the employee who may read them; ?tag= and ?employee= set the
// filters), and a search playground. #/knowledge/<doc_id> is one document with its fields, tags
// and the employees that may read it.
//
// Decisions:
// - An upload goes through upload() (XMLHttpRequest) for its byte progress; then the document is
//   'processing' and is read again (every 1.5 s, after a minute every 5 s) until 'ready' or
//   'failed'. Documents of the list that are 'processing' are followed the same way, so the list
//   is live without reloading it.
// - A file over 50 MB (52,428,800 bytes) or an empty one is refused here, before any byte is
//   sent; the server's own 413 and 415 answers are reworded into what to do, keeping their code.
// - Files are uploaded one after another (the Starter tier allows 5 requests at once), with the
//   same tags and access; the name field applies when one file is sent.
// - The form is 'noValidate': the server's validation is the one that counts, and its error is
//   shown at the field its `param` names.

import { html, useState, useEffect, useRef, useMemo } from './preact.js';
import { api, upload, ApiError, allEmployees } from './api.js';
import { can } from './roles.js';
import { usePaged, useLoad, useInterval, ErrorBox, Field, paramError, Loading, Empty, More,
         Status, Time, Confirm, PageTitle, useAction, loadStyle } from './ui.js';

loadStyle('page-knowledge.css');

const MAX_BYTES = 52428800;
const TYPES = 'PDF, DOCX, TXT, Markdown, HTML, CSV or JSON';
// Processing is followed every 1.5 s for a minute after an upload (or opening a document), then
// every 5 s: a large file takes minutes, and test keys have 60 requests a minute.
const POLL_MS = 1500;
const SLOW_POLL_MS = 5000;
const pollEvery = (since) => (Date.now() - since < 60000 ? POLL_MS : SLOW_POLL_MS);
const TYPE_NAMES = {
  'application/pdf': 'PDF',
  'application/vnd.openxmlformats-officedocument.wordprocessingml.document': 'DOCX',
  'text/plain': 'Text',
  'text/markdown': 'Markdown',
  'text/html': 'HTML',
  'text/csv': 'CSV',
  'application/json': 'JSON',
};


function bytes(n) {
  if (n === null || n === undefined) return '—';
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KB`;
  return `${(n / 1024 / 1024).toFixed(1)} MB`;
}

// 'policy, hr , ' -> ['policy', 'hr']
function parseTags(text) {
  return text.split(',').map((t) => t.trim()).filter(Boolean);
}

// The refusals a user can act on, said plainly; the code and status stay as the server sent them.
function explain(err, file) {
  const what = file ? `"${file.name}"` : 'The file';
  if (err.code === 'file_too_large')
    return new ApiError(err.status, err.code, `${what} is too large: the limit is 50 MB ` +
                        '(52,428,800 bytes) per file.', err.param || 'file');
  if (err.code === 'unsupported_file_type')
    return new ApiError(err.status, err.code, `${what} is not a type the knowledge base reads. ` +
                        `Upload ${TYPES}.`, err.param || 'file');
  if (err.code === 'unsupported_media_type')
    return new ApiError(err.status, err.code, 'The server did not receive a multipart upload. ' +
                        'Reload the page and try again.', err.param);
  return err;
}

// Refused before sending: over the limit, or empty.
function precheck(file) {
  if (file.size > MAX_BYTES)
    return explain(new ApiError(413, 'file_too_large', '', 'file'), file); // not sent
  if (file.size === 0)
    return new ApiError(400, 'invalid_request', `"${file.name}" is empty: there is nothing to ` +
                        'upload.', 'file');
  return null;
}

function options(employees) {
  return (employees || []).map((e) => html`<option key=${e.id} value=${e.id}>${e.name}</option>`);
}

function useEmployeeNames(employees) {
  return useMemo(() => new Map((employees || []).map((e) => [e.id, e.name])), [employees]);
}

function Tags({ tags }) {
  if (!tags || !tags.length) return html`<span class="muted">none</span>`;
  return html`<ul class="plain tags" aria-label="Tags">${tags.map((t, i) => html`<li key=${i}>
    <a class="tag" href=${'#/knowledge?tag=' + encodeURIComponent(t)}
      aria-label=${'Tag ' + t + ': list its documents'}>${t}</a></li>`)}</ul>`;
}

function Readers({ ids, names }) {
  if (!ids || !ids.length) return html`<span>Every employee</span>`;
  return html`<ul class="plain readers">${ids.map((id) => html`<li key=${id}>
    <a href=${'#/employees/' + id}>${names.get(id) || id}</a></li>`)}</ul>`;
}

// The processing state of a document: status, then progress, chunks or error.
function Processing({ doc }) {
  // No value: an indeterminate bar, until the text is cut into chunks.
  const known = typeof doc.progress === 'number';
  return html`<div class="processing">
    <${Status} value=${doc.status} />
    ${doc.status === 'processing' ? html`
      ${known ? html`<progress aria-label=${'Processing of ' + doc.name} max="1"
        value=${doc.progress} />` : html`<progress aria-label=${'Processing of ' + doc.name} />`}
      <span class="small">${known ? `Indexing: ${Math.round(doc.progress * 100)}%`
        : 'Extracting the text…'}</span>` : null}
    ${doc.status === 'ready' ? html`<span class="small">${doc.chunk_count} chunk${
      doc.chunk_count === 1 ? '' : 's'} indexed</span>`
      : null}
    ${doc.status === 'failed' ? html`<span class="doc-error">${doc.error || 'It failed.'}</span>`
      : null}
  </div>`;
}

// ---- Upload ----

function UploadForm({ employees, employeesError, onSend }) {
  const [files, setFiles] = useState([]);
  const [name, setName] = useState('');
  const [tags, setTags] = useState('');
  const [access, setAccess] = useState([]);
  const [accessText, setAccessText] = useState('');
  const [error, setError] = useState(null);
  const [busy, setBusy] = useState(false);
  const [over, setOver] = useState(false);
  const depth = useRef(0); // dragenter/dragleave fire for each child: count them
  const input = useRef(null);

  const pick = (list) => {
    const chosen = [...list];
    setFiles(chosen);
    const bad = chosen.map(precheck).find(Boolean);
    setError(bad || null);
  };
  const drop = (e) => {
    e.preventDefault();
    depth.current = 0;
    setOver(false);
    if (!e.dataTransfer || !e.dataTransfer.files.length) return;
    try {
      input.current.files = e.dataTransfer.files; // the input then names the files too
    } catch {
      /* an old browser: the list below still shows them */
    }
    pick(e.dataTransfer.files);
  };
  const dragEnter = (e) => {
    e.preventDefault();
    depth.current++;
    setOver(true);
  };
  const dragLeave = () => {
    depth.current = Math.max(0, depth.current - 1);
    if (!depth.current) setOver(false);
  };
  const submit = async (e) => {
    e.preventDefault();
    if (!files.length) {
      setError(new ApiError(0, 'invalid_request', 'Choose a file first, or drop one here.',
                            'file'));
      return;
    }
    setBusy(true);
    setError(null);
    const ids = employeesError ? parseTags(accessText) : access;
    const err = await onSend(files, { name: files.length === 1 ? name.trim() : '',
                                      tags: parseTags(tags), employee_ids: ids });
    setBusy(false);
    if (err) {
      setError(err);
      return;
    }
    // A fresh form: the next file should not inherit this one's tags or access by accident.
    setFiles([]);
    setName('');
    setTags('');
    setAccess([]);
    setAccessText('');
    if (input.current) input.current.value = '';
  };
  const toggle = (id) => setAccess((a) => (a.includes(id) ? a.filter((x) => x !== id)
                                                            : [...a, id]));
  const accessErr = paramError(error, 'employee_ids');
  const general = error && !['file', 'name', 'tags', 'employee_ids']
    .some((p) => paramError(error, p)) ? error : null;

  return html`<form class="upload-form" onSubmit=${submit} noValidate aria-labelledby="up-h">
    <h2 id="up-h">Upload documents</h2>
    <div class=${'dropzone' + (over ? ' over' : '')} onDragEnter=${dragEnter}
      onDragOver=${(e) => e.preventDefault()} onDragLeave=${dragLeave} onDrop=${drop}>
      <p class="drop-text">${over ? 'Drop to choose these files'
        : 'Drag files here, or choose them with the button below.'}</p>
      <${Field} label="Files" param="file" error=${error}
        hint=${`${TYPES}; up to 50 MB each.`}>${(a) => html`<input ...${a} type="file"
          multiple ref=${input} onChange=${(e) => pick(e.target.files)} />`}</${Field}>
      ${files.length ? html`<ul class="chosen small" aria-label="Chosen files">
        ${files.map((f, i) => html`<li key=${i}>${f.name} · ${bytes(f.size)}${
          f.size > MAX_BYTES ? ' · over the 50 MB limit: it will not be sent' : ''}</li>`)}
      </ul>` : null}
    </div>
    <div class="upload-fields">
      <${Field} label="Name (optional)" param="name" error=${error}
        hint=${files.length > 1 ? 'Several files: each keeps its file name.'
                                : 'Shown in lists and sources; default the file name.'}>${
        (a) => html`<input ...${a} type="text" maxlength="200" value=${name}
          disabled=${files.length > 1} onInput=${(e) => setName(e.target.value)} />`}</${Field}>
      <${Field} label="Tags (optional)" param="tags" error=${error}
        hint="Separated by commas, e.g. policy, hr">${(a) => html`<input ...${a} type="text"
          value=${tags} onInput=${(e) => setTags(e.target.value)} />`}</${Field}>
    </div>
    ${employeesError ? html`<${Field} label="Employee access (employee ids, optional)"
        param="employee_ids" error=${error}
        hint="Separated by commas; none: every employee may read it.">${(a) => html`<input
          ...${a} type="text" value=${accessText}
          onInput=${(e) => setAccessText(e.target.value)} />`}</${Field}>`
      : html`<fieldset class=${'access' + (accessErr ? ' invalid' : '')}
          aria-describedby="access-hint">
        <legend>Employee access</legend>
        <p class="small" id="access-hint">${access.length
          ? `Only the ${access.length} checked employee${access.length > 1 ? 's' : ''} ` +
            'may read it.'
          : 'None checked: every employee may read it.'}</p>
        ${employees ? html`<ul class="plain checks">${employees.map((e) => html`<li key=${e.id}>
          <label><input type="checkbox" checked=${access.includes(e.id)}
            onChange=${() => toggle(e.id)} /> ${e.name} <span class="muted">· ${e.role}</span>
          </label></li>`)}</ul>` : html`<${Loading} what="employees" />`}
        ${accessErr ? html`<p class="field-error">${accessErr.message}
          <span class="code"> (${accessErr.code})</span></p>` : null}
      </fieldset>`}
    <${ErrorBox} error=${general} />
    <div class="actions"><button type="submit" disabled=${busy}>${busy ? 'Uploading…'
      : files.length > 1 ? `Upload ${files.length} files` : 'Upload'}</button></div>
  </form>`;
}

// What became of each upload of this visit: bytes sent, then the processing state.
function Uploads({ uploads, onClear }) {
  if (!uploads.length) return null;
  const finished = uploads.some((u) => u.error || (u.doc && u.doc.status !== 'processing'));
  return html`<section class="uploads" aria-labelledby="ups-h">
    <div class="row"><h3 id="ups-h">This session's uploads</h3>
      ${finished ? html`<button type="button" class="secondary"
        onClick=${onClear}>Clear finished</button>` : null}</div>
    <ul class="plain">${uploads.map((u) => html`<li key=${u.id} class="upload">
      <div class="row"><strong>${u.doc
        ? html`<a href=${'#/knowledge/' + u.doc.id}>${u.doc.name}</a>` : u.name}</strong>
        <span class="small">${bytes(u.size)}</span></div>
      ${!u.doc && !u.error ? html`<div class="processing">
        <progress aria-label=${'Upload of ' + u.name} max=${u.total || 1} value=${u.sent} />
        <span class="small">Sending: ${u.total ? Math.round((u.sent / u.total) * 100) : 0}%</span>
      </div>` : null}
      ${u.doc ? html`<div aria-live="polite"><${Processing} doc=${u.doc} /></div>` : null}
      <${ErrorBox} error=${u.error} />
    </li>`)}</ul>
  </section>`;
}

// ---- The documents list ----

function DocRow({ doc, names, onDeleted }) {
  const act = useAction();
  const remove = () => act.run(async () => {
    await api('DELETE', `/v1/knowledge/documents/${doc.id}`);
    onDeleted(doc.id);
  });
  return html`<tr>
    <td><a href=${'#/knowledge/' + doc.id}>${doc.name}</a>
      ${doc.filename !== doc.name ? html`<div class="small">${doc.filename}</div>` : null}</td>
    <td><${Processing} doc=${doc} /></td>
    <td>${TYPE_NAMES[doc.content_type] || doc.content_type}<div class="small">${
      bytes(doc.size_bytes)}</div></td>
    <td><${Tags} tags=${doc.tags} /></td>
    <td><${Readers} ids=${doc.employee_ids} names=${names} /></td>
    <td><${Time} iso=${doc.created_at} /></td>
    <td>${can('knowledge.write') ? html`<${Confirm} label="Delete" ask=${`Delete "${doc.name}"?`}
      disabled=${act.busy} onConfirm=${remove} />` : null}<${ErrorBox} error=${act.error} /></td>
  </tr>`;
}

function DocTable({ list, names }) {
  if (list.loading && !list.items.length) return html`<${Loading} what="documents" />`;
  if (!list.items.length)
    return list.error ? null : html`<${Empty}>No document matches. Upload one above.</${Empty}>`;
  return html`<div class="table-wrap"><table>
    <caption class="sr-only">Documents, newest first</caption>
    <thead><tr><th scope="col">Name</th><th scope="col">Status</th><th scope="col">Type</th>
      <th scope="col">Tags</th><th scope="col">Readable by</th><th scope="col">Uploaded</th>
      <th scope="col">Actions</th></tr></thead>
    <tbody>${list.items.map((d) => html`<${DocRow} key=${d.id} doc=${d} names=${names}
      onDeleted=${(id) => list.setItems((items) => items.filter((x) => x.id !== id))} />`)}
    </tbody></table></div>`;
}

// ---- The search playground ----

function Search({ employees }) {
  const [q, setQ] = useState('');
  const [limit, setLimit] = useState('5');
  const [tags, setTags] = useState('');
  const [employee, setEmployee] = useState('');
  const [res, setRes] = useState(null);
  const act = useAction();
  const submit = (e) => {
    e.preventDefault();
    const body = { query: q };
    // A limit that is not digits is sent as typed: the server's answer names the field.
    if (limit.trim() !== '') body.limit = /^\d+$/.test(limit.trim()) ? Number(limit) : limit;
    const filters = {};
    if (parseTags(tags).length) filters.tags = parseTags(tags);
    if (employee) filters.employee_id = employee;
    if (Object.keys(filters).length) body.filters = filters;
    act.run(async () => setRes(await api('POST', '/v1/knowledge/query', { body })));
  };
  const err = act.error;
  const general = err && !['query', 'limit', 'filters.tags', 'filters.employee_id']
    .some((p) => paramError(err, p)) ? err : null;
  return html`<section class="panel kn-panel" aria-labelledby="search-h">
    <h2 id="search-h">Search the knowledge</h2>
    <p class="small">What an employee finds when it answers: passages of ready documents, best
      first, with a score from 0 to 1.</p>
    <form class="search-form" onSubmit=${submit} noValidate>
      <${Field} label="Query" param="query" error=${err}>${(a) => html`<input ...${a}
        type="search" value=${q} maxlength="2000" onInput=${(e) => setQ(e.target.value)}
        placeholder="How long do customers have to ask for a refund?" />`}</${Field}>
      <div class="filters">
        <${Field} label="Results (1–50)" param="limit" error=${err}>${(a) => html`<input ...${a}
          type="number" min="1" max="50" class="narrow" value=${limit}
          onInput=${(e) => setLimit(e.target.value)} />`}</${Field}>
        <${Field} label="Tags (any of)" param="filters.tags" error=${err}
          hint="Separated by commas">${(a) => html`<input ...${a} type="text" value=${tags}
            onInput=${(e) => setTags(e.target.value)} />`}</${Field}>
        <${Field} label="As the employee" param="filters.employee_id" error=${err}
          hint="Only what this employee may read">${(a) => html`<select ...${a} value=${employee}
            onChange=${(e) => setEmployee(e.target.value)}>
            <option value="">Any (the whole organization)</option>
            ${options(employees)}
          </select>`}</${Field}>
        <div class="field"><button type="submit" disabled=${act.busy}>${act.busy ? 'Searching…'
          : 'Search'}</button></div>
      </div>
    </form>
    <${ErrorBox} error=${general} />
    ${res ? html`<div aria-live="polite">
      <p class="small">${res.results.length} result${res.results.length === 1 ? '' : 's'} for
        “${res.query}”</p>
      ${res.results.length ? html`<ol class="plain results">${res.results.map((r) => html`<li
        key=${r.chunk_id} class="card result">
        <div class="row">
          <h3><a href=${'#/knowledge/' + r.document_id}>${r.document_name}</a>${
            r.page ? html` <span class="small">· page ${r.page}</span>` : null}</h3>
          <span class="score"><span class="score-bar" aria-hidden="true"><span
            style=${{ width: `${Math.round(r.score * 100)}%` }}></span></span>
            score ${r.score.toFixed(3)}</span>
        </div>
        <p class="passage">${r.content}</p>
        <${Tags} tags=${r.tags} />
      </li>`)}</ol>` : html`<${Empty}>Nothing matches. Only documents that are ready are
        searched; check the filters.</${Empty}>`}
    </div>` : null}
  </section>`;
}

// ---- #/knowledge ----

let uploadIds = 0;

function Overview({ query, employees, employeesError }) {
  const [tagInput, setTagInput] = useState(query.tag || '');
  const [tag, setTag] = useState(query.tag || '');
  const [employee, setEmployee] = useState(query.employee || '');
  const [uploads, setUploads] = useState([]);
  const names = useEmployeeNames(employees);
  const list = usePaged('/v1/knowledge/documents', 'documents',
                        { tag, employee_id: employee, limit: 25 });
  const polling = useRef(false);
  const lastUpload = useRef(0);

  // The tag filter follows the typing, once it pauses.
  useEffect(() => {
    const t = setTimeout(() => setTag(tagInput.trim()), 400);
    return () => clearTimeout(t);
  }, [tagInput]);

  // A file dropped beside the drop zone would make the browser leave the console to open it.
  useEffect(() => {
    const stop = (e) => e.preventDefault();
    addEventListener('dragover', stop);
    addEventListener('drop', stop);
    return () => {
      removeEventListener('dragover', stop);
      removeEventListener('drop', stop);
    };
  }, []);

  const edit = (id, f) => setUploads((us) => us.map((u) => (u.id === id ? { ...u, ...f(u) } : u)));
  const seen = (doc) => {
    setUploads((us) => us.map((u) => (u.doc && u.doc.id === doc.id ? { ...u, doc } : u)));
    list.setItems((items) => items.map((d) => (d.id === doc.id ? doc : d)));
  };

  // Documents being processed (uploaded now, or found so in the list) are read again.
  useInterval(async () => {
    if (polling.current) return;
    const ids = new Set();
    for (const u of uploads) if (u.doc && u.doc.status === 'processing') ids.add(u.doc.id);
    for (const d of list.items) if (d.status === 'processing') ids.add(d.id);
    if (!ids.size) return;
    polling.current = true;
    try {
      for (const id of [...ids].slice(0, 5)) {
        try {
          seen(await api('GET', `/v1/knowledge/documents/${id}`));
        } catch (e) {
          if (e.status === 404) list.setItems((items) => items.filter((d) => d.id !== id));
        }
      }
    } finally {
      polling.current = false;
    }
  }, pollEvery(lastUpload.current));

  // Sends the files one by one; answers the error to show in the form (the last one), or null.
  const send = async (files, fields) => {
    let formError = null;
    lastUpload.current = Date.now();
    for (const file of files) {
      const id = ++uploadIds;
      setUploads((us) => [{ id, name: file.name, size: file.size, sent: 0, total: file.size,
                            doc: null, error: null }, ...us]);
      const bad = precheck(file);
      if (bad) {
        edit(id, () => ({ error: bad }));
        formError = bad;
        continue;
      }
      const form = new FormData();
      form.append('file', file, file.name);
      if (fields.name) form.append('name', fields.name);
      for (const t of fields.tags) form.append('tags', t);
      for (const e of fields.employee_ids) form.append('employee_ids', e);
      try {
        const doc = await upload('/v1/knowledge/documents', form,
                                 (sent, total) => edit(id, () => ({ sent, total })));
        edit(id, () => ({ doc, sent: file.size }));
        // Unfiltered, it goes on top; filtered, the server says whether it belongs.
        if (!tag && !employee)
          list.setItems((items) => [doc, ...items.filter((d) => d.id !== doc.id)]);
        else list.reload();
      } catch (e) {
        const err = explain(e, file);
        edit(id, () => ({ error: err }));
        formError = err;
      }
    }
    return formError;
  };

  return html`
    <${PageTitle}>Knowledge</${PageTitle}>
    <${ErrorBox} error=${employeesError} />
    ${can('knowledge.write') ? html`<section class="panel">
      <${UploadForm} employees=${employees} employeesError=${employeesError} onSend=${send} />
      <${Uploads} uploads=${uploads} onClear=${() => setUploads((us) => us.filter(
        (u) => !u.error && !(u.doc && u.doc.status !== 'processing')))} />
    </section>` : null}
    <section aria-labelledby="docs-h">
      <h2 id="docs-h">Documents</h2>
      <form class="filters" onSubmit=${(e) => { e.preventDefault(); setTag(tagInput.trim()); }}
        aria-label="Document filters">
        <div class="field"><label for="kn-tag">Tag</label>
          <input id="kn-tag" type="search" value=${tagInput} placeholder="exact, e.g. policy"
            onInput=${(e) => setTagInput(e.target.value)} /></div>
        <div class="field"><label for="kn-emp">Readable by</label>
          <select id="kn-emp" value=${employee} onChange=${(e) => setEmployee(e.target.value)}>
            <option value="">Any employee</option>
            ${options(employees)}
          </select></div>
        ${tag || employee ? html`<div class="field"><button type="button" class="secondary"
          onClick=${() => { setTagInput(''); setTag(''); setEmployee(''); }}>Clear filters</button>
          </div>` : null}
      </form>
      <${DocTable} list=${list} names=${names} />
      <${More} list=${list} />
    </section>
    <${Search} employees=${employees} />`;
}

// ---- #/knowledge/<doc_id> ----

function Detail({ id, employees }) {
  const doc = useLoad((signal) => api('GET', `/v1/knowledge/documents/${id}`, { signal }), [id]);
  const act = useAction();
  const names = useEmployeeNames(employees);
  const d = doc.data;
  const opened = useRef(Date.now()).current;
  useInterval(() => d && d.status === 'processing' && !doc.loading && doc.reload(),
              pollEvery(opened));
  const remove = () => act.run(async () => {
    await api('DELETE', `/v1/knowledge/documents/${id}`);
    location.hash = '#/knowledge';
  });
  const back = html`<p><a href="#/knowledge">← All documents</a></p>`;
  if (!d) return html`${back}<${PageTitle}>Document</${PageTitle}>
    <${ErrorBox} error=${doc.error} onRetry=${doc.reload} />
    ${doc.error ? null : html`<${Loading} what="the document" />`}`;
  return html`${back}
    <${PageTitle} actions=${can('knowledge.write') ? html`<${Confirm} label="Delete"
      disabled=${act.busy} ask=${'Delete this document, its chunks and its file?'}
      onConfirm=${remove} />` : null}>${
      d.name}</${PageTitle}>
    <${ErrorBox} error=${act.error} />
    <${ErrorBox} error=${doc.error} onRetry=${doc.reload} />
    <section class="panel kn-panel" aria-labelledby="doc-h">
      <h2 id="doc-h">Details</h2>
      <dl class="kv">
        <dt>Status</dt><dd aria-live="polite"><${Processing} doc=${d} /></dd>
        <dt>Chunks</dt><dd>${d.chunk_count}</dd>
        ${d.error ? html`<dt>Error</dt><dd class="doc-error">${d.error}</dd>` : null}
        <dt>File name</dt><dd>${d.filename}</dd>
        <dt>Type</dt><dd>${TYPE_NAMES[d.content_type] || d.content_type}${' '}
          <span class="small">(${d.content_type})</span></dd>
        <dt>Size</dt><dd>${bytes(d.size_bytes)} <span class="small">(${
          d.size_bytes.toLocaleString()} bytes)</span></dd>
        <dt>SHA-256</dt><dd><code class="hash">${d.sha256}</code></dd>
        <dt>Uploaded</dt><dd><${Time} iso=${d.created_at} /></dd>
        <dt>Status changed</dt><dd><${Time} iso=${d.updated_at} /></dd>
        <dt>Id</dt><dd><code>${d.id}</code></dd>
      </dl>
    </section>
    <section class="panel kn-panel" aria-labelledby="tags-h">
      <h2 id="tags-h">Tags</h2>
      <${Tags} tags=${d.tags} />
    </section>
    <section class="panel kn-panel" aria-labelledby="readers-h">
      <h2 id="readers-h">Readable by</h2>
      <${Readers} ids=${d.employee_ids} names=${names} />
      <p class="small">${d.employee_ids.length
        ? 'Only these employees use it in chat, tasks and workflows.'
        : 'No restriction: every employee of the organization may use it.'}</p>
    </section>`;
}

export default function KnowledgePage({ parts, query }) {
  const emps = useLoad(allEmployees, []);
  if (parts[0]) return html`<${Detail} id=${parts[0]} employees=${emps.data} />`;
  // Keyed by the query: a link to #/knowledge?tag=x sets the filters afresh.
  return html`<${Overview} key=${JSON.stringify(query)} query=${query} employees=${emps.data}
    employeesError=${emps.error} />`;
}
