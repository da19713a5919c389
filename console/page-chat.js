// SPDX-License-Identifier: MIT
// page-chat.js: chatting with an employee. #/chat starts a conversation (with ?employee=<id>
// preselected), #/chat/<conversation_id> continues one. Replies are streamed
// (POST /v1/chat/stream) and rendered as their deltas arrive; each reply shows the knowledge it
// drew on, linked to the documents, and takes 1-5 stars of feedback. The conversations list
// pages with its cursor and filters by employee.
//
// Decisions: user text is shown as text and replies through the inert Markdown renderer, so
// neither can run anything. A long conversation is one list of plain elements with
// `content-visibility: auto` (page-chat.css): the browser lays out only what is on screen, so a
// 1,000-message history scrolls smoothly without a virtual list. A stream cut midway keeps what
// arrived, marked as incomplete, next to the error.
//
// Tools: a reply's tool calls are shown above its text, in order, each collapsed to its tool
// and status and opened to its arguments and result or error. They arrive as they happen
// (tool.started, tool.completed, approval.requested on the stream) and with the stored message
// (tool_calls, status, stop_reason). A reply that stopped at a limit says so; a reply paused on
// an approval links to the inbox, and the page reads that message again every 3 s (while the
// tab is visible) until it goes on, then reads the conversation again.

import { html, useState, useEffect, useRef } from './preact.js';
import { api, stream, allEmployees } from './api.js';
import { can } from './roles.js';
import { usePaged, useLoad, useInterval, ErrorBox, Loading, Empty, More, Time, ms, Markdown,
         Confirm, PageTitle, useAction, loadStyle, Status, Json } from './ui.js';

loadStyle('page-chat.css');

// What a cut first reply leaves for the conversation's own address (see ChatPage).
let carried = null;


function Conversations({ current, employees, refresh }) {
  const [employee, setEmployee] = useState('');
  const list = usePaged('/v1/conversations', 'conversations',
                        { employee_id: employee, limit: 20 }, 'before', [refresh]);
  const names = new Map((employees || []).map((e) => [e.id, e.name]));
  return html`<aside class="convs" aria-labelledby="convs-h">
    <div class="row"><h2 id="convs-h">Conversations</h2>
      ${can('chat') ? html`<a class="button" href="#/chat">New</a>` : null}</div>
    <label for="conv-emp" class="small">Filter by employee</label>
    <select id="conv-emp" value=${employee} onChange=${(e) => setEmployee(e.target.value)}>
      <option value="">All employees</option>
      ${(employees || []).map((e) => html`<option key=${e.id} value=${e.id}>${e.name}</option>`)}
    </select>
    ${list.loading && !list.items.length ? html`<${Loading} />` : null}
    ${!list.loading && !list.error && !list.items.length
      ? html`<${Empty}>No conversation yet.</${Empty}>` : null}
    <ul class="plain conv-list">
      ${list.items.map((c) => html`<li key=${c.id}>
        <a href=${'#/chat/' + c.id} aria-current=${c.id === current ? 'page' : undefined}>
          <span class="conv-title">${c.title}</span>
          <span class="small">${names.get(c.employee_id) || c.employee_id} · ${
            c.message_count} messages · <${Time} iso=${c.updated_at} /></span></a></li>`)}
    </ul>
    <${More} list=${list} />
  </aside>`;
}

function Stars({ conv, msg }) {
  const [rating, setRating] = useState(msg.rating || 0);
  const act = useAction();
  const rate = (n) => act.run(async () => {
    await api('POST', `/v1/conversations/${conv}/messages/${msg.id}/feedback`,
              { body: { rating: n } });
    setRating(n);
  });
  if (!can('chat'))
    return rating ? html`<p class="small">Rated ${rating} of 5</p>` : null;
  return html`<div class="stars" role="group" aria-label="Rate this reply">
    ${[1, 2, 3, 4, 5].map((n) => html`<button key=${n} type="button" class="star"
      aria-pressed=${rating >= n ? 'true' : 'false'} disabled=${act.busy}
      aria-label=${`${n} star${n > 1 ? 's' : ''}`} onClick=${() => rate(n)}>${
        rating >= n ? '★' : '☆'}</button>`)}
    ${rating ? html`<span class="small">Rated ${rating} of 5</span>` : null}
    <${ErrorBox} error=${act.error} />
  </div>`;
}

function Sources({ sources }) {
  if (!sources || !sources.length) return null;
  return html`<details class="sources"><summary>Sources (${sources.length})</summary><ul>
    ${sources.map((s) => html`<li key=${s.chunk_id}>
      <a href=${'#/knowledge/' + s.document_id}>${s.document_name}</a>
      <span class="small"> score ${Number(s.score).toFixed(3)}</span></li>`)}
  </ul></details>`;
}

// Why a reply stopped before the model was done (stop_reason other than completed).
const STOPS = {
  max_steps: 'It stopped at the limit of model calls one reply may make.',
  repeated_call: 'It stopped because it made the same call a third time.',
  timeout: 'It stopped at the time limit of one reply.',
  insufficient_credits: 'It stopped because the organization has no credits left.',
};

const REPLY_POLL_MS = 3000;

// The reply 'r' with the tool call 'c' in its place (by id), or added at the end.
function withCall(r, c) {
  const calls = r.tool_calls || [];
  return calls.some((x) => x.id === c.id) ? calls.map((x) => (x.id === c.id ? { ...x, ...c } : x))
                                          : [...calls, c];
}

// The calls of reply 'r' once approval 'a' is asked for: its call waits for a person.
function withApproval(r, a) {
  const calls = r.tool_calls || [];
  let i = calls.findIndex((c) => c.approval_id === a.id);
  if (i < 0) i = calls.map((c) => c.tool === a.tool && c.status === 'running').lastIndexOf(true);
  if (i < 0) return calls;
  return calls.map((c, j) => (j === i ? { ...c, status: 'pending_approval', approval_id: a.id }
                                      : c));
}

function ToolCall({ c }) {
  // a failed call's result is its error as the model read it ({error}): shown once, as the error
  const has = (v) => v !== null && v !== undefined &&
    !(c.error && typeof v === 'object' && Object.keys(v).length === 1 && 'error' in v);
  return html`<li><details class="call">
    <summary><code class="call-tool">${c.tool}</code> <${Status} value=${c.status} /></summary>
    <div class="call-body">
      <p class="call-label">Arguments</p>
      <${Json} value=${c.arguments} />
      ${c.error ? html`<p class="call-label">Error</p><p class="call-error">${c.error}</p>` : null}
      ${has(c.result) ? html`<p class="call-label">Result</p><${Json} value=${c.result} />`
                      : null}
      ${c.status === 'pending_approval' ? html`<p>This call waits for a person to approve it.
        <a href=${'#/approvals' + (c.approval_id ? '/' + c.approval_id : '')}>Open it in the
        approvals inbox</a></p>` : null}
      <p class="small">${c.started_at ? html`Started <${Time} iso=${c.started_at} />` : null}${
        c.completed_at ? html` · ended <${Time} iso=${c.completed_at} />` : null}${
        c.id ? html` · <code>${c.id}</code>` : null}</p>
    </div>
  </details></li>`;
}

// What a reply did besides its text: its tool calls, and why it paused, stopped or failed.
function Work({ m }) {
  const calls = m.tool_calls || [];
  const pending = calls.filter((c) => c.status === 'pending_approval');
  const stop = m.stop_reason && m.stop_reason !== 'completed' ? m.stop_reason : null;
  return html`
    ${calls.length ? html`<ol class="plain calls" aria-label="Tool calls">
      ${calls.map((c, i) => html`<${ToolCall} key=${c.id || i} c=${c} />`)}</ol>` : null}
    ${m.status === 'requires_approval' || (m.partial && pending.length)
      ? html`<p class="note">Waiting for approval${pending.length ? ' of ' +
          pending.map((c) => c.tool).join(', ') : ''}: the reply goes on once it is decided. <a
          href=${pending.length === 1 && pending[0].approval_id
            ? '#/approvals/' + pending[0].approval_id : '#/approvals'}>Open the approvals
          inbox</a></p>` : null}
    ${m.status === 'in_progress' && !m.partial
      ? html`<p class="small" role="status">Still working…</p>` : null}
    ${stop ? html`<p class="note">${STOPS[stop] || 'It stopped early: ' + stop.replace(/_/g, ' ')}${
      ' '}<span class="code">(${stop})</span></p>` : null}
    ${m.status === 'failed' ? html`<p class="field-error">This reply failed${
      m.error ? ': ' + m.error : '.'}</p>` : null}`;
}

function Message({ m, conv, employee }) {
  const mine = m.role === 'user';
  return html`<li class=${'msg ' + (mine ? 'msg-user' : 'msg-assistant')}>
    <div class="msg-head small">${mine ? 'You' : employee || 'Assistant'} · <${Time}
      iso=${m.created_at} />${m.credits_used ? ` · ${m.credits_used} credits` : ''}${
      m.response_ms > 0 ? ` · ${ms(m.response_ms)}` : ''}</div>
    ${mine ? null : html`<${Work} m=${m} />`}
    ${mine ? html`<div class="msg-text">${m.content}</div>`
           : html`<${Markdown} text=${m.content} />`}
    ${m.partial ? html`<p class="small" role="status">${m.done ? '' : 'Writing…'}</p>` : null}
    ${m.cut ? html`<p class="field-error">This reply is incomplete: the stream was cut.</p>`
            : null}
    ${!mine ? html`<${Sources} sources=${m.sources} />` : null}
    ${!mine && conv && !m.partial && m.id ? html`<${Stars} conv=${conv} msg=${m} />` : null}
  </li>`;
}

export default function ChatPage({ parts, query }) {
  const convId = parts[0] || null;
  const emps = useLoad(allEmployees, []);
  const conv = useLoad((signal) => (convId
    ? api('GET', `/v1/conversations/${convId}`, { signal }) : Promise.resolve(null)), [convId]);
  const [employee, setEmployee] = useState(query.employee || '');
  const [text, setText] = useState('');
  const [live, setLive] = useState([]); // messages of this visit not yet read back
  const [error, setError] = useState(null);
  const [busy, setBusy] = useState(false);
  const [refresh, setRefresh] = useState(0);
  const [announce, setAnnounce] = useState('');
  const del = useAction();
  const endRef = useRef(null);
  const ctl = useRef(null);

  // A new conversation's address is taken as soon as its first reply ends. If that reply was
  // cut, what arrived and the error are carried over (the server has stored the user message,
  // and the reply that failed is not stored), so the page does not lose them.
  useEffect(() => {
    const c = carried;
    carried = null;
    setLive(c && c.conv === convId ? c.live : []);
    setError(c && c.conv === convId ? c.error : null);
  }, [convId]);
  useEffect(() => () => ctl.current && ctl.current.abort(), []);
  useEffect(() => {
    if (endRef.current) endRef.current.scrollIntoView({ block: 'end' });
  }, [conv.data, live]);

  const c = conv.data;
  const empId = c ? c.employee_id : employee;
  const empName = (emps.data || []).find((e) => e.id === empId);

  const send = async (ev) => {
    ev.preventDefault();
    const message = text.trim();
    if (!message || busy) return;
    if (!empId) {
      setError({ code: 'invalid_request', param: 'employee_id',
                 message: 'Choose an employee to chat with first.' });
      return;
    }
    setBusy(true);
    setError(null);
    setText('');
    const user = { id: null, role: 'user', content: message, created_at: new Date().toISOString() };
    let reply = { role: 'assistant', content: '', partial: true, created_at: null };
    setLive((l) => [...l, user, reply]);
    const update = (f) => {
      reply = { ...reply, ...f(reply) };
      setLive((l) => [...l.slice(0, -1), reply]);
    };
    ctl.current = new AbortController();
    let newConv = null;
    let failed = null;
    try {
      await stream('/v1/chat/stream', {
        employee_id: empId, message, ...(convId ? { conversation_id: convId } : {}),
      }, (name, data) => {
        if (name === 'message.created') {
          newConv = data.conversation_id;
          update(() => ({ id: data.id, created_at: data.created_at }));
        } else if (name === 'message.delta') {
          update((r) => ({ content: r.content + data.delta }));
        } else if (name === 'tool.started' || name === 'tool.completed') {
          update((r) => ({ tool_calls: withCall(r, data.tool_call) }));
          setAnnounce(`${data.tool_call.tool}: ${String(data.tool_call.status)
            .replace(/_/g, ' ')}.`);
        } else if (name === 'approval.requested') {
          update((r) => ({ tool_calls: withApproval(r, data.approval) }));
          setAnnounce(`${data.approval.tool} waits for approval.`);
          dispatchEvent(new Event('approvals-changed')); // the navigation's count
        } else if (name === 'message.completed') {
          update(() => ({ ...data, partial: false }));
          setAnnounce(data.status === 'requires_approval'
            ? 'The reply waits for an approval.' : 'Reply complete.');
        } else if (name === 'error') {
          update(() => ({ partial: false, cut: true }));
          failed = data.error || { code: 'error', message: 'The reply failed.' };
          setError(failed);
        }
      }, ctl.current.signal);
    } catch (e) {
      update(() => ({ partial: false, cut: e.code === 'network_error' }));
      if (e.code !== 'aborted') {
        failed = e;
        setError(e);
      }
      if (!reply.id) {
        // refused before anything was stored (a 409 conversation_busy, a 402): the text goes
        // back to the composer, and the message and reply shown for it go
        setText(message);
        setLive((l) => l.filter((x) => x !== user && x !== reply));
      }
    }
    setBusy(false);
    setRefresh((n) => n + 1);
    if (!convId && newConv) {
      if (failed)
        carried = { conv: newConv, live: [{ ...user, carried: true }, reply], error: failed };
      location.hash = '#/chat/' + newConv;
    }
  };

  const remove = () => del.run(async () => {
    await api('DELETE', `/v1/conversations/${convId}`);
    setRefresh((n) => n + 1);
    location.hash = '#/chat';
  });

  // The stored messages, then this visit's that are not among them (a carried user message is
  // stored: it shows once the conversation is read).
  const stored = c ? c.messages : [];
  const shown = [...stored, ...live.filter((m) => !stored.some((x) => (m.id && x.id === m.id) ||
    (m.carried && x.role === m.role && x.content === m.content)))];
  // A reply paused on an approval (or still working, seen from another tab) is read again until
  // it changes; then the conversation is read again, and shows how it went on.
  const last = shown[shown.length - 1];
  const waiting = !busy && convId && last && last.role === 'assistant' && last.id &&
    (last.status === 'requires_approval' || last.status === 'in_progress') ? last : null;
  useInterval(() => {
    if (!waiting) return;
    api('GET', `/v1/conversations/${convId}/messages/${waiting.id}`).then((m) => {
      if (m.status !== waiting.status ||
          JSON.stringify(m.tool_calls) !== JSON.stringify(waiting.tool_calls)) conv.reload();
    }, () => {});
  }, waiting ? REPLY_POLL_MS : 0);
  return html`
    <${PageTitle} actions=${convId && can('chat') ? html`<${Confirm} label="Delete conversation"
      ask="Delete this conversation and all its messages?" onConfirm=${remove} />` : null}>${
      c ? c.title : 'Chat'}</${PageTitle}>
    <div class="chat">
      <${Conversations} current=${convId} employees=${emps.data} refresh=${refresh} />
      <section class="thread" aria-label="Conversation">
        <${ErrorBox} error=${emps.error || conv.error || del.error} />
        ${convId && !c && !conv.error ? html`<${Loading} what="the conversation" />` : null}
        ${!convId && !can('chat') ? html`<${Empty}>Choose a conversation to read it.</${Empty}>`
          : null}
        ${!convId && can('chat') ? html`<div class="field"><label for="chat-emp">Employee</label>
          <select id="chat-emp" value=${employee} onChange=${(e) => setEmployee(e.target.value)}>
            <option value="">Choose an employee…</option>
            ${(emps.data || []).map((e) => html`<option key=${e.id} value=${e.id}
              disabled=${e.status === 'offline'}>${e.name}, ${e.role}${
                e.status === 'offline' ? ' (offline)' : ''}</option>`)}
          </select></div>` : null}
        ${convId ? html`<p class="small">With ${empName ? empName.name : empId}.</p>` : null}
        ${shown.length ? html`<ol class="plain msgs" aria-label="Messages">
          ${shown.map((m, i) => html`<${Message} key=${m.id || 'live' + i} m=${m}
            conv=${convId} employee=${empName && empName.name} />`)}</ol>`
          : convId || !can('chat') ? null
            : html`<${Empty}>Ask anything to start a conversation.</${Empty}>`}
        <div ref=${endRef}></div>
        <p class="sr-only" aria-live="polite">${announce}</p>
        <${ErrorBox} error=${error} />
        ${waiting && waiting.status === 'requires_approval' ? html`<p class="small">This
          conversation takes a new message once the approval is decided.</p>` : null}
        ${can('chat') ? html`<form class="composer" onSubmit=${send}>
          <label for="chat-text">Message</label>
          <textarea id="chat-text" value=${text} maxlength="32000" rows="3"
            onInput=${(e) => setText(e.target.value)}
            onKeyDown=${(e) => { if (e.key === 'Enter' && !e.shiftKey) send(e); }}
            placeholder="Write a message. Enter sends, Shift+Enter starts a new line."></textarea>
          <div class="row"><button type="submit" disabled=${busy || !text.trim()}>${
            busy ? 'Replying…' : 'Send'}</button>
            ${busy ? html`<button type="button" class="secondary"
              onClick=${() => ctl.current.abort()}>Stop reading</button>` : null}</div>
        </form>` : null}
      </section>
    </div>`;
}
