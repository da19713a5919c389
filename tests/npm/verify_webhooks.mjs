// SPDX-License-Identifier: MIT
// Verify webhook deliveries as a receiver would, with the Standard Webhooks reference library
// (npm `standardwebhooks`, pinned in package-lock.json). Reads one JSON object per line from
// stdin: {secret, headers: {webhook-id, webhook-timestamp, webhook-signature}, body} and prints
// one JSON line per delivery: {ok: true, id} or {ok: false, id, error}.
import { Webhook } from "standardwebhooks";
import { createInterface } from "node:readline";

const lines = createInterface({ input: process.stdin });
for await (const line of lines) {
    if (!line.trim()) continue;
    const d = JSON.parse(line);
    let out;
    try {
        const payload = new Webhook(d.secret).verify(d.body, d.headers);
        out = { ok: true, id: d.headers["webhook-id"], type: payload.type };
    } catch (e) {
        out = { ok: false, id: d.headers["webhook-id"], error: String(e && e.message || e) };
    }
    process.stdout.write(JSON.stringify(out) + "\n");
}
