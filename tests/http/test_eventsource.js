// SPDX-License-Identifier: MIT
// Reads a Workforce chat stream with the npm `eventsource` client (4.1.1, WHATWG EventSource).
// EventSource only GETs, so its documented `fetch` option turns the request into the POST of
// /v1/chat/stream with the key and the JSON body.
//
// Env: WF_URL (http://127.0.0.1:PORT), WF_KEY, WF_BODY (JSON of the chat request),
//      WF_PATH (default /v1/chat/stream), WF_TIMEOUT_MS (default 20000).
// Prints one JSON line: {"events":[{type,id,data}], "error":{message,code}|null, "opened":bool}
// and exits 0 (the Python wrapper asserts); exits 2 on a usage error.
'use strict';

const path = require('path');

let EventSource;
try {
  ({EventSource} = require(path.join(__dirname, '..', '..', 'node_modules', 'eventsource')));
} catch (e) {
  console.error('eventsource is not installed: ' + e.message);
  process.exit(3);
}

const url = process.env.WF_URL;
const key = process.env.WF_KEY;
const body = process.env.WF_BODY;
if (!url || !key || !body) {
  console.error('usage: WF_URL=... WF_KEY=... WF_BODY=... node test_eventsource.js');
  process.exit(2);
}
const target = url + (process.env.WF_PATH || '/v1/chat/stream');
const timeoutMs = parseInt(process.env.WF_TIMEOUT_MS || '20000', 10);

const events = [];
let opened = false;
let finished = false;
let requests = 0;

const es = new EventSource(target, {
  fetch: (input, init) => {
    requests++;
    return fetch(input, {
      ...init,
      method: 'POST',
      headers: {...init.headers, Authorization: 'Bearer ' + key,
                'Content-Type': 'application/json'},
      body,
    });
  },
});

function finish(error) {
  if (finished) return;
  finished = true;
  es.close();
  clearTimeout(timer);
  process.stdout.write(JSON.stringify({events, error, opened, requests}) + '\n');
  process.exit(0);
}

const timer = setTimeout(() => finish({message: 'timeout after ' + timeoutMs + ' ms', code: null}),
                         timeoutMs);

es.onopen = () => { opened = true; };
for (const type of ['message.created', 'message.delta', 'message.completed']) {
  es.addEventListener(type, (ev) => {
    events.push({type, id: ev.lastEventId, data: ev.data});
    if (type === 'message.completed') finish(null);
  });
}
es.addEventListener('message', (ev) => {
  events.push({type: 'message', id: ev.lastEventId, data: ev.data});
});
// `error` is both the server's `event: error` (a MessageEvent with data) and EventSource's own
// connection failure (no data; `code` holds the HTTP status when there was one).
es.addEventListener('error', (ev) => {
  if (typeof ev.data === 'string') {
    events.push({type: 'error', id: ev.lastEventId, data: ev.data});
    finish(null);
  } else {
    finish({message: ev.message || 'connection error', code: ev.code === undefined ? null : ev.code});
  }
});
