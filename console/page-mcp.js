// SPDX-License-Identifier: MIT
// page-mcp.js: the organization's MCP servers (#/mcp). Their tools are offered to employees as
// `mcp.<server>.<tool>`, under the employees' tool rules. The page lists the servers (newest
// first), each with its status (ok, or error and why), its header names, its tools, and
// enable/disable, refresh and delete; a form adds one.
//
// Decisions:
// - Header values (tokens) are write-only: they are typed into password fields, sent once with
//   the POST and cleared from the form as soon as the server has answered; the server answers
//   their names only (header_names), and the page shows nothing else.
// - Adding a server waits for the server to read its tool list (it answers once the read ends,
//   with status ok or error): the button says so meanwhile. A server that cannot be reached is
//   stored all the same, with status error; it is shown with its error, to be refreshed later.
// - An error of the form lands at the field its `param` names: `name`, `url`, `headers` (the
//   header rows), `headers.<name>` (that header's value).
// - A tool whose full name a rule could not name (a space, a '!') is listed, marked as such:
//   GET /v1/tools leaves it out, and no employee can be given it.

import { html, useState, useRef } from './preact.js';
import { api } from './api.js';
import { can } from './roles.js';
import { usePaged, ErrorBox, Field, paramError, Loading, Empty, More, Status, Time, Confirm,
         PageTitle, useAction, loadStyle } from './ui.js';

loadStyle('page-mcp.css');

const FORM_PARAMS = ['name', 'url', 'headers', 'enabled'];
const RULE_NAME = /^[a-z][A-Za-z0-9_-]*(\.[A-Za-z0-9_-]+)*$/;
const OPEN_TOOLS_UP_TO = 12;

let headerKeys = 0;
const emptyHeader = () => ({ key: ++headerKeys, name: '', value: '' });

function HeaderRows({ rows, setRows, error }) {
  const whole = error && error.param === 'headers' ? error : null;
  const set = (key, patch) => setRows((rs) => rs.map((r) => (r.key === key ? { ...r, ...patch }
                                                                          : r)));
  return html`<fieldset class=${'field mcp-headers' + (whole ? ' invalid' : '')}
    aria-describedby=${whole ? 'mcp-headers-err' : 'mcp-headers-hint'}>
    <legend>Headers (optional)</legend>
    <small class="hint" id="mcp-headers-hint">Sent with every request to the server, such as
      ${' '}<code>Authorization</code>. Values are stored sealed and never shown again.</small>
    ${rows.map((r, i) => {
      const valueErr = r.name.trim() && paramError(error, 'headers.' + r.name.trim());
      const vid = `mcp-h-${r.key}-value`;
      return html`<div class="row mcp-header" key=${r.key}>
        <div class="field"><label for=${`mcp-h-${r.key}-name`}>Header name, row ${i + 1}</label>
          <input id=${`mcp-h-${r.key}-name`} type="text" value=${r.name} spellcheck="false"
            autocomplete="off" placeholder="Authorization"
            aria-invalid=${whole ? 'true' : undefined}
            onInput=${(e) => set(r.key, { name: e.target.value })} /></div>
        <div class=${'field' + (valueErr ? ' invalid' : '')}>
          <label for=${vid}>Value, row ${i + 1}</label>
          <input id=${vid} type="password" value=${r.value} autocomplete="off"
            spellcheck="false" aria-invalid=${valueErr ? 'true' : undefined}
            aria-describedby=${valueErr ? vid + '-err' : undefined}
            onInput=${(e) => set(r.key, { value: e.target.value })} />
          ${valueErr ? html`<small class="field-error" id=${vid + '-err'}>${valueErr.message}
            <span class="code"> (${valueErr.code})</span></small>` : null}</div>
        <button type="button" class="secondary"
          onClick=${() => setRows((rs) => rs.filter((x) => x.key !== r.key))}>Remove<span
          class="sr-only"> header row ${i + 1}</span></button>
      </div>`;
    })}
    ${whole ? html`<small class="field-error" id="mcp-headers-err">${whole.message}
      <span class="code"> (${whole.code})</span></small>` : null}
    <div><button type="button" class="secondary"
      onClick=${() => setRows((rs) => [...rs, emptyHeader()])}>Add a header</button></div>
  </fieldset>`;
}

function AddServer({ onAdded }) {
  const [name, setName] = useState('');
  const [url, setUrl] = useState('');
  const [headers, setHeaders] = useState([]);
  const [enabled, setEnabled] = useState(true);
  const act = useAction();
  const formRef = useRef(null);
  const submit = async (ev) => {
    ev.preventDefault();
    const body = { name: name.trim(), url: url.trim(), enabled };
    const given = headers.filter((h) => h.name.trim() || h.value);
    if (given.length)
      body.headers = Object.fromEntries(given.map((h) => [h.name.trim(), h.value]));
    const m = await act.run(() => api('POST', '/v1/mcp_servers', { body }));
    // the values leave the page's state either way: typed again if the server refused them
    setHeaders((rs) => rs.map((h) => ({ ...h, value: '' })));
    if (m) {
      setName('');
      setUrl('');
      setHeaders([]);
      setEnabled(true);
      onAdded(m);
    } else {
      const el = formRef.current && formRef.current.querySelector('[aria-invalid="true"]');
      if (el) el.focus();
    }
  };
  const top = act.error && !FORM_PARAMS.some((p) => paramError(act.error, p)) ? act.error : null;
  return html`<section class="panel" aria-labelledby="mcp-add-h">
    <h2 id="mcp-add-h">Add an MCP server</h2>
    <form onSubmit=${submit} ref=${formRef} noValidate>
      <${Field} label="Name" param="name" error=${act.error}
        hint="Lowercase letters, digits and _ (up to 32). Its tools are named mcp.<name>.<tool>.">${
        (a) => html`<input ...${a} type="text" value=${name} spellcheck="false"
          autocomplete="off" onInput=${(e) => setName(e.target.value)} />`}</${Field}>
      <${Field} label="URL" param="url" error=${act.error}
        hint="The server's Streamable HTTP endpoint, such as https://mcp.example.com/mcp.">${
        (a) => html`<input ...${a} type="url" value=${url} spellcheck="false"
          autocomplete="off" onInput=${(e) => setUrl(e.target.value)} />`}</${Field}>
      <${HeaderRows} rows=${headers} setRows=${setHeaders} error=${act.error} />
      <div class="field"><label class="mcp-check"><input type="checkbox" checked=${enabled}
        onChange=${(e) => setEnabled(e.target.checked)} /> Enabled: offer its tools to
        employees</label></div>
      <${ErrorBox} error=${top} />
      <button type="submit" disabled=${act.busy}>${act.busy ? 'Connecting…'
                                                             : 'Add server'}</button>
    </form>
  </section>`;
}

function Tools({ server }) {
  const tools = server.tools || [];
  if (!tools.length)
    return html`<p class="small">No tools${server.status === 'error'
      ? ' read: the server could not be read.' : '.'}</p>`;
  return html`<details class="mcp-tools" open=${tools.length <= OPEN_TOOLS_UP_TO}>
    <summary>Tools (${tools.length})</summary>
    <div class="table-wrap"><table>
      <caption class="sr-only">Tools of ${server.name}</caption>
      <thead><tr><th scope="col">Tool</th><th scope="col">Name in rules</th>
        <th scope="col">Effect</th><th scope="col">Description</th></tr></thead>
      <tbody>${tools.map((t) => {
        const full = `mcp.${server.name}.${t.name}`;
        return html`<tr key=${t.name}><td><code>${t.name}</code></td>
          <td>${RULE_NAME.test(full) ? html`<code>${full}</code>`
            : html`<span class="muted">none: no rule can name it</span>`}</td>
          <td>${t.effect}</td><td>${t.description}</td></tr>`;
      })}</tbody></table></div>
  </details>`;
}

function Server({ server, onChange, onDelete }) {
  const act = useAction();
  const [said, setSaid] = useState('');
  const patch = (enabled) => act.run(async () => {
    onChange(await api('PATCH', `/v1/mcp_servers/${server.id}`, { body: { enabled } }));
    setSaid(`${server.name} ${enabled ? 'enabled' : 'disabled'}.`);
  });
  const refresh = () => act.run(async () => {
    const m = await api('POST', `/v1/mcp_servers/${server.id}/refresh`);
    onChange(m);
    setSaid(`${server.name} refreshed: ${m.status === 'ok' ? `${(m.tools || []).length} tools`
                                                            : 'error'}.`);
  });
  const remove = () => act.run(async () => {
    await api('DELETE', `/v1/mcp_servers/${server.id}`);
    onDelete(server.id);
  });
  const hid = 'mcp-' + server.id;
  return html`<li class="panel mcp-server" aria-labelledby=${hid}>
    <div class="row mcp-head"><h2 id=${hid}>${server.name}</h2>
      <${Status} value=${server.status} />
      <${Status} value=${server.enabled ? 'enabled' : 'disabled'} /></div>
    ${server.status === 'error' ? html`<p class="mcp-error"><strong>Error:</strong> ${
      server.error || 'the server could not be read.'}</p>` : null}
    <dl class="kv">
      <dt>URL</dt><dd><code class="mcp-url">${server.url}</code></dd>
      <dt>Headers</dt><dd>${(server.header_names || []).length
        ? (server.header_names || []).map((n, i) => html`${i ? ', ' : ''}<code key=${n}>${n}</code>`)
        : 'none'}</dd>
      <dt>Tools read</dt><dd><${Time} iso=${server.refreshed_at} /></dd>
      <dt>Added</dt><dd><${Time} iso=${server.created_at} /></dd>
    </dl>
    <${Tools} server=${server} />
    ${can('mcp.write') ? html`<div class="actions">
      <button type="button" class="secondary" disabled=${act.busy}
        onClick=${() => patch(!server.enabled)}>${server.enabled ? 'Disable' : 'Enable'}<span
        class="sr-only"> ${server.name}</span></button>
      <button type="button" class="secondary" disabled=${act.busy} onClick=${refresh}>Refresh<span
        class="sr-only"> ${server.name}</span></button>
      <${Confirm} label=${'Delete ' + server.name} disabled=${act.busy}
        ask=${`Delete ${server.name}? Employees lose its tools.`} onConfirm=${remove} />
    </div>` : null}
    <${ErrorBox} error=${act.error} />
    <p class="sr-only" aria-live="polite">${said}</p>
  </li>`;
}

export default function McpPage() {
  const list = usePaged('/v1/mcp_servers', 'mcp_servers', { limit: 20 });
  const [said, setSaid] = useState('');
  const added = (m) => {
    list.setItems((items) => [m, ...items.filter((x) => x.id !== m.id)]);
    setSaid(`${m.name} added: ${m.status === 'ok' ? `status ok, ${(m.tools || []).length} tools`
                                                   : 'status error, ' + (m.error || '')}.`);
  };
  return html`
    <${PageTitle}>MCP servers</${PageTitle}>
    <p class="small">Tools of other systems, reached over the Model Context Protocol. An enabled
      server's tools are offered to the employees whose tool rules name them
      (<code>mcp.crm.*</code>), on each employee's page.</p>
    ${can('mcp.write') ? html`<${AddServer} onAdded=${added} />` : null}
    <p class="sr-only" aria-live="polite">${said}</p>
    ${list.loading && !list.items.length ? html`<${Loading} what="MCP servers" />` : null}
    ${!list.loading && !list.error && !list.items.length
      ? html`<${Empty}>No MCP server yet.</${Empty}>` : null}
    <ul class="plain" aria-label="MCP servers">
      ${list.items.map((m) => html`<${Server} key=${m.id} server=${m}
        onChange=${(n) => list.setItems((items) => items.map((x) => (x.id === n.id ? n : x)))}
        onDelete=${(id) => list.setItems((items) => items.filter((x) => x.id !== id))} />`)}
    </ul>
    <${More} list=${list} />`;
}
