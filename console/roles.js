// SPDX-License-Identifier: MIT
// roles.js: what the person signed in may do, in one table. Every page asks can('action')
// before it shows a control; nothing else in the console checks a role.
//
// Decisions:
// - The table follows the server's route table (src/api/routes.c, the STORE_ROLE_* column of
//   each row): an action is listed at the lowest role whose requests the server accepts, so a
//   control shown is one the server would not refuse with 403 permission_denied. The server
//   still decides; this only spares people buttons that cannot work.
// - Roles are cumulative (viewer < member < developer < admin < owner): a role may do what the
//   roles below it may.
// - A key (the "Use an API key" sign-in) has no role: the server checks its scopes, and the
//   console offers a key everything as it always did (the approvals page explains a 403 of a
//   key without the approvals scope), but the audit log only to a key that may read it, and
//   never what only a session may do (people, keys, one's password). Billing follows the
//   server's rule for keys: reading needs no scope list or one with billing; buying needs a
//   scope list that names billing (a key without scopes is refused).

import { session } from './api.js';

export const ROLES = ['viewer', 'member', 'developer', 'admin', 'owner'];

// role -> the actions it adds to those of the roles below it.
const ADDS = {
  viewer: [
    'read', // employees, chat history, approvals, knowledge (and its search), tasks, ...
    'billing', // the billing page: balance, credit packs, the ledger, usage
  ],
  member: [
    'chat', // send messages, rate replies, delete conversations
    'tasks.write', // create, edit, run again, delete tasks
    'knowledge.write', // upload, delete documents
    'workflows.run', // run a workflow, cancel a run
    'approvals.decide.own', // decide the approvals of turns and runs it started
  ],
  developer: [
    'workflows.write', // create, edit, delete workflows, rotate their webhook URL
    'webhooks', // webhook endpoints and events (reading them too)
    'mcp.write', // add, enable, refresh, delete MCP servers
    'integrations.write', // connect, disconnect integrations
    'keys', // the API keys page: test keys
  ],
  admin: [
    'employees.write', // status, tools and their policies
    'approvals.decide', // any approval
    'users', // the users page: invite, change role, disable, delete
    'keys.live', // live keys
    'audit', // the audit log
  ],
  owner: [
    'users.owner', // grant the owner role
    'billing.buy', // buy credits (POST /v1/billing/checkout)
  ],
};

// role -> every action it may do.
const ALLOWED = {};
{
  let acc = [];
  for (const r of ROLES) {
    acc = acc.concat(ADDS[r]);
    ALLOWED[r] = new Set(acc);
  }
}

// What only a session may do (the server's routes for them are session-only).
const SESSION_ONLY = new Set(['users', 'users.owner', 'keys', 'keys.live', 'password']);

function keyScopes() {
  const a = session.account;
  return a && a.key ? a.key.scopes || [] : null;
}

// Whether the signed-in person (or key) may do 'action'. 'subject' is the thing acted on, for
// the actions that depend on it: the approval of 'approvals.decide'.
export function can(action, subject) {
  if (session.key) {
    if (SESSION_ONLY.has(action)) return false;
    const scopes = keyScopes();
    // a key reads the audit log only when its scopes name it (a key without scopes does not)
    if (action === 'audit') return !!scopes && scopes.includes('audit');
    if (action === 'billing') return !scopes || !scopes.length || scopes.includes('billing');
    if (action === 'billing.buy') return !!scopes && scopes.includes('billing');
    return true;
  }
  const u = session.user;
  if (!u) return false;
  if (action === 'password') return true;
  const allowed = ALLOWED[u.role] || ALLOWED.viewer;
  if (action === 'approvals.decide') {
    if (allowed.has('approvals.decide')) return true;
    const by = subject && subject.requested_by;
    return allowed.has('approvals.decide.own') && !!by && by.id === u.id;
  }
  return allowed.has(action);
}

// The roles the signed-in person may give (invite with, change to): up to its own, and owner
// only for an owner.
export function grantable() {
  const u = session.user;
  if (!u) return [];
  const mine = ROLES.indexOf(u.role);
  return ROLES.filter((r, i) => i <= mine && (r !== 'owner' || can('users.owner')));
}

// Whether the signed-in person may change, disable or delete 'user' (one whose role it could
// give: no one above itself, an owner only as an owner).
export function manages(user) {
  return can('users') && grantable().includes(user.role);
}
