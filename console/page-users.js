// SPDX-License-Identifier: MIT
// page-users.js: the people of the organization (GET /v1/users, admins and owners with a
// session): invite one (POST /v1/users: the answer's set-password link is shown once, to be
// sent to them), change a role, disable or enable, delete. The roles offered are the ones the
// signed-in person may give (roles.js: up to its own; owner only for an owner); a row above it
// shows no control. The server's refusals (409 last_owner, 403 permission_denied) are shown at
// the row.

import { html, useState } from './preact.js';
import { api, session } from './api.js';
import { grantable, manages } from './roles.js';
import { usePaged, ErrorBox, Field, Empty, More, Loading, Status, Time, Confirm, PageTitle,
         useAction, ShownOnce } from './ui.js';

const ROLE_WORDS = {
  owner: 'Owner: everything, billing too',
  admin: 'Admin: people, live keys, employees, any approval, the audit log',
  developer: 'Developer: workflows, webhooks, MCP servers, integrations, test keys',
  member: 'Member: chats, tasks, uploads, runs workflows',
  viewer: 'Viewer: reads, changes nothing',
};

function Invite({ onInvited }) {
  const roles = grantable();
  const [email, setEmail] = useState('');
  const [name, setName] = useState('');
  const [role, setRole] = useState(roles.includes('member') ? 'member' : roles[0]);
  const act = useAction();
  const submit = (ev) => {
    ev.preventDefault();
    act.run(async () => {
      const body = { email: email.trim(), role };
      if (name.trim()) body.name = name.trim();
      const res = await api('POST', '/v1/users', { body });
      setEmail('');
      setName('');
      onInvited(res);
    });
  };
  return html`<form class="panel" onSubmit=${submit} noValidate aria-labelledby="invite-h">
    <h2 id="invite-h">Invite someone</h2>
    <div class="filters">
      <${Field} label="Email" param="email" error=${act.error}>${(a) => html`<input ...${a}
        type="email" value=${email} required autocomplete="off" spellcheck="false"
        onInput=${(e) => setEmail(e.target.value)} />`}</${Field}>
      <${Field} label="Name (optional)" param="name" error=${act.error}>${(a) => html`<input
        ...${a} value=${name} autocomplete="off" onInput=${(e) => setName(e.target.value)} />`}
      </${Field}>
      <${Field} label="Role" param="role" error=${act.error}>${(a) => html`<select ...${a}
        value=${role} onChange=${(e) => setRole(e.target.value)}>
        ${roles.map((r) => html`<option key=${r} value=${r}>${ROLE_WORDS[r]}</option>`)}
      </select>`}</${Field}>
      <div class="field"><button type="submit" disabled=${act.busy}>${act.busy ? 'Inviting…'
                                                                             : 'Invite'}</button>
      </div>
    </div>
    <${ErrorBox} error=${act.error && !['email', 'name', 'role'].includes(act.error.param)
                        ? act.error : null} />
  </form>`;
}

function UserRow({ u, onChange, onRemoved }) {
  const act = useAction();
  const me = session.user && session.user.id === u.id;
  const may = manages(u);
  const roles = grantable();
  const patch = (body) => act.run(async () => onChange(await api('PATCH', `/v1/users/${u.id}`,
                                                                 { body })));
  const remove = () => act.run(async () => {
    await api('DELETE', `/v1/users/${u.id}`);
    onRemoved(u.id);
  });
  const roleId = 'role-' + u.id;
  return html`<tr>
    <th scope="row">${u.email}${me ? html` <span class="small">(you)</span>` : null}${
      u.name ? html`<br /><span class="small">${u.name}</span>` : null}</th>
    <td>${may ? html`<label class="sr-only" for=${roleId}>Role of ${u.email}</label>
      <select id=${roleId} value=${u.role} disabled=${act.busy}
        onChange=${(e) => patch({ role: e.target.value })}>
        ${roles.map((r) => html`<option key=${r} value=${r}>${r}</option>`)}
      </select>` : u.role}</td>
    <td><${Status} value=${u.status} />${u.last_login_at ? null
      : html` <span class="small">invited, not signed in yet</span>`}</td>
    <td><${Time} iso=${u.last_login_at} /></td>
    <td><${Time} iso=${u.created_at} /></td>
    <td>${may ? html`<div class="actions">
      ${u.status === 'active'
        ? html`<button type="button" class="secondary" disabled=${act.busy}
            onClick=${() => patch({ status: 'disabled' })}>Disable<span class="sr-only"> ${
            u.email}</span></button>`
        : html`<button type="button" class="secondary" disabled=${act.busy}
            onClick=${() => patch({ status: 'active' })}>Enable<span class="sr-only"> ${
            u.email}</span></button>`}
      <${Confirm} label=${'Delete ' + u.email} ask=${`Delete ${u.email}? Their sessions end.`}
        disabled=${act.busy} onConfirm=${remove} />
      </div>` : null}
      <${ErrorBox} error=${act.error} /></td>
  </tr>`;
}

export default function UsersPage() {
  const list = usePaged('/v1/users', 'users', { limit: 50 });
  const [invited, setInvited] = useState(null);
  const replace = (u) => list.setItems((items) => items.map((x) => (x.id === u.id ? u : x)));
  return html`
    <${PageTitle}>Users & invitations</${PageTitle}>
    ${invited ? html`<${ShownOnce} title=${'The invitation of ' + invited.user.email}
      label="Set-password link" value=${invited.set_password_url}
      onDone=${() => setInvited(null)}>Send it to ${invited.user.email}: it sets their password,
      works once, for 24 hours.</${ShownOnce}>` : null}
    <${Invite} onInvited=${(res) => { setInvited(res); list.reload(); }} />
    <section aria-labelledby="users-h">
      <h2 id="users-h">People</h2>
      ${list.loading && !list.items.length ? html`<${Loading} what="the users" />` : null}
      ${!list.loading && !list.items.length && !list.error
        ? html`<${Empty}>No one yet.</${Empty}>` : null}
      ${list.items.length ? html`<table>
        <thead><tr><th scope="col">Email</th><th scope="col">Role</th>
          <th scope="col">Status</th><th scope="col">Last sign-in</th>
          <th scope="col">Created</th><th scope="col">Actions</th></tr></thead>
        <tbody>${list.items.map((u) => html`<${UserRow} key=${u.id} u=${u} onChange=${replace}
          onRemoved=${(id) => list.setItems((items) => items.filter((x) => x.id !== id))} />`)}
        </tbody></table>` : null}
      <${More} list=${list} />
    </section>`;
}
