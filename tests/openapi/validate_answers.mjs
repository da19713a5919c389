// SPDX-License-Identifier: MIT
// Validate the answers the HTTP suite recorded against the API document's responses.
//
//   node tests/openapi/validate_answers.mjs docs/openapi.json ANSWERS.jsonl
//
// ANSWERS.jsonl: one JSON object per line, written by tests/http/harness.py (record_answer):
// {test, method, path, status, content_type, body?, text?}; `path` is the path as sent (query
// included), `body` the parsed JSON body, `text` a JSON-typed body that did not parse.
//
// For each answer: the operation (the method and the document's path template the path
// matches, a literal segment before a {parameter}), then the response of its status (or
// `4XX`/`default`), then the media type of the answer's content type; a JSON body is
// validated against that media type's schema with Ajv (JSON Schema 2020-12, the dialect of
// OpenAPI 3.1). An answer to a path or method the document does not describe must be a 404 or
// 405 in the document's error shape (`OpenAIError` for /v1/openai and under it, `Error`
// elsewhere); an answer whose request is not known (a raw socket that sent no request line the
// harness could read) is checked only when it is an error, against `Error`. Answers that are
// not JSON are checked for their status and media type only.
//
// Every operation and status answered counts once: valid when each of its answers is. Each
// distinct failure is printed once ("not ok" lines, with the schema path, Ajv's message and
// an excerpt of the body). The last line is
//   answers: N operation statuses valid, N invalid
// and the exit status is 1 when any is invalid (2 when the check could not run).
import fs from "node:fs";
import readline from "node:readline";
import Ajv2020 from "ajv/dist/2020.js";
import addFormats from "ajv-formats";

const DOC_ID = "https://workforce.invalid/openapi.json";
const METHODS = ["get", "put", "post", "delete", "options", "head", "patch", "trace"];
const MAX_SHOWN = 8; // distinct failures printed per operation and status

async function main(argv) {
  if (argv.length !== 2) {
    console.error("usage: validate_answers.mjs OPENAPI.json ANSWERS.jsonl");
    return 2;
  }
  const doc = JSON.parse(fs.readFileSync(argv[0], "utf8"));
  const answers = [];
  const input = fs.createReadStream(argv[1]);
  const lines = readline.createInterface({ input, crlfDelay: Infinity });
  for await (const l of lines) if (l.trim() !== "") answers.push(JSON.parse(l));

  // strict off: the document as a whole is not a schema (its `openapi`, `paths`, ... are
  // unknown keywords to Ajv), and OpenAPI's `discriminator` is an annotation here (the
  // `oneOf` it annotates decides).
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats(ajv);
  ajv.addSchema(doc, DOC_ID);

  const templates = Object.keys(doc.paths).map((t) => ({ template: t, segs: t.split("/") }));
  const compiled = new Map(); // schema pointer -> validate function
  const pairs = new Map(); // "METHOD template status" -> {answers, failures: Map}
  const counts = { json: 0, other: 0, unknown: 0, trimmed: 0 };

  const pair = (key) => {
    if (!pairs.has(key)) pairs.set(key, { answers: 0, bad: new Set(), failures: new Map() });
    return pairs.get(key);
  };
  const fail = (p, what, a) => {
    p.bad.add(a);
    if (!p.failures.has(what)) p.failures.set(what, { n: 0, example: a });
    p.failures.get(what).n++;
  };
  const validator = (ptr) => {
    if (!compiled.has(ptr)) compiled.set(ptr, ajv.compile({ $ref: DOC_ID + "#" + ptr }));
    return compiled.get(ptr);
  };
  const check = (p, ptr, a) => {
    if (a.text !== undefined) {
      fail(p, "the body is not JSON although its content type is", a);
      return;
    }
    counts.json++;
    if (a.trimmed_from !== undefined) counts.trimmed++;
    const validate = validator(ptr);
    if (validate(a.body)) return;
    // The deepest places first (in an anyOf/oneOf, the branch that matched furthest), then the
    // anyOf/oneOf that none matched.
    const depth = (e) => e.instancePath.split("/").length;
    const errors = [...validate.errors].sort((x, y) => depth(y) - depth(x));
    const shown = errors.slice(0, 3);
    const choice = errors.find((e) => e.keyword === "anyOf" || e.keyword === "oneOf");
    if (choice && !shown.includes(choice)) shown.push(choice);
    const what = new Set();
    for (const e of shown) {
      const at = e.instancePath.replace(/\/[0-9]+(?=\/|$)/g, "/*") || "(the body)";
      what.add(`${at}: ${e.message} ${paramsText(e)}(schema ${e.schemaPath})`);
    }
    for (const w of what) fail(p, w, a);
  };

  for (const a of answers) {
    const media = (a.content_type || "").split(";")[0].trim().toLowerCase();
    const isJson = a.body !== undefined || a.text !== undefined;
    if (a.method == null) {
      // a raw-socket answer whose request line the harness did not see
      if (isJson && a.status >= 400) {
        const p = pair(`(request not known) ${a.status}`);
        p.answers++;
        check(p, "/components/schemas/Error", a);
      } else {
        counts.unknown++;
      }
      continue;
    }
    const path = a.path.split("?")[0];
    const t = matchTemplate(templates, path);
    const op = t && doc.paths[t][a.method.toLowerCase()];
    if (!op) {
      const where = t ? `${a.method} ${t}` : `${a.method} (no path of the document: ${path})`;
      const p = pair(`${t ? where : `${a.method} (no path of the document)`} ${a.status}`);
      p.answers++;
      if (a.status !== 404 && a.status !== 405) {
        fail(p, `the document describes no such operation (${where})`, a);
      } else if (!isJson) {
        fail(p, `content type ${media || "(none)"}: an error must be JSON`, a);
      } else {
        const openai = path === "/v1/openai" || path.startsWith("/v1/openai/");
        const shape = openai ? "OpenAIError" : "Error";
        check(p, `/components/schemas/${shape}`, a);
      }
      continue;
    }
    const p = pair(`${a.method} ${t} ${a.status}`);
    p.answers++;
    const responses = op.responses || {};
    const status = [String(a.status), `${Math.floor(a.status / 100)}XX`, "default"].find(
      (s) => s in responses,
    );
    if (status === undefined) {
      fail(p, `the document describes no ${a.status} answer of this operation`, a);
      continue;
    }
    let ptr = `/paths/${esc(t)}/${a.method.toLowerCase()}/responses/${status}`;
    let response = responses[status];
    for (let hops = 0; response && response.$ref && hops < 8; hops++) {
      ptr = response.$ref.replace(/^#/, "");
      response = lookup(doc, ptr);
    }
    const content = (response && response.content) || {};
    const key = mediaKey(content, media);
    if (key === undefined) {
      if (isJson || media) {
        const declared = Object.keys(content).join(", ") || "no body";
        fail(p, `content type ${media || "(none)"}: the document declares ${declared}`, a);
      }
      continue;
    }
    if (!isJson) {
      counts.other++;
      continue;
    }
    if (!content[key].schema) {
      fail(p, `the document gives no schema for ${key}`, a);
      continue;
    }
    check(p, `${ptr}/content/${esc(key)}/schema`, a);
  }

  let valid = 0;
  let invalid = 0;
  for (const [key, p] of [...pairs].sort((x, y) => (x[0] < y[0] ? -1 : 1))) {
    if (p.failures.size === 0) {
      console.log(`ok - ${key} (${p.answers} answer${p.answers === 1 ? "" : "s"})`);
      valid++;
      continue;
    }
    invalid++;
    console.log(`not ok - ${key}: ${p.bad.size} of ${p.answers} answer(s) invalid`);
    let shown = 0;
    let last;
    for (const [what, f] of p.failures) {
      if (shown++ === MAX_SHOWN) {
        console.log(`#   ... and ${p.failures.size - MAX_SHOWN} more`);
        break;
      }
      const a = f.example;
      const body = a.text !== undefined ? a.text : JSON.stringify(a.body);
      console.log(`#   ${what} [${f.n} answer(s)]`);
      if (a === last) continue; // the same example as the line before
      last = a;
      console.log(`#     e.g. ${a.test || "(no test)"}: ${a.method || "?"} ${a.path || "?"}`);
      if (body !== undefined) console.log(`#     body: ${excerpt(body, 400)}`);
    }
  }
  console.log(
    `# answers: ${answers.length} recorded; ${counts.json} JSON bodies validated, ` +
      `(${counts.trimmed} of them over 1 MiB, with their arrays cut to 100 items and ` +
      `strings to 10,000 characters), ` +
      `${counts.other} other bodies checked for status and media type, ` +
      `${counts.unknown} not checked (raw-socket answers of a request not known, not errors)`,
  );
  console.log(`answers: ${valid} operation statuses valid, ${invalid} invalid`);
  return invalid ? 1 : 0;
}

// The document's template for a concrete path: segments equal or a {parameter} (any non-empty
// segment); a literal segment wins over a parameter at the first place they differ.
function matchTemplate(templates, path) {
  const segs = path.split("/");
  let best = null;
  for (const t of templates) {
    if (t.segs.length !== segs.length) continue;
    const score = [];
    let ok = true;
    for (let i = 0; i < segs.length && ok; i++) {
      const param = /^\{[^}]+\}$/.test(t.segs[i]);
      if (param) ok = segs[i] !== "";
      else ok = t.segs[i] === segs[i];
      score.push(param ? 0 : 1);
    }
    if (ok && (best === null || compareScore(score, best.score) > 0)) best = { t, score };
  }
  return best && best.t.template;
}

function compareScore(a, b) {
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return a[i] - b[i];
  return 0;
}

// The content key of a media type: exact, then `type/*`, then `*/*`.
function mediaKey(content, media) {
  const keys = Object.keys(content);
  const exact = keys.find((k) => k.toLowerCase() === media);
  if (exact !== undefined) return exact;
  const wild = keys.find((k) => k === media.split("/")[0] + "/*");
  if (wild !== undefined) return wild;
  return keys.find((k) => k === "*/*");
}

// A JSON pointer token, escaped for a URI fragment.
function esc(token) {
  return encodeURIComponent(token.replace(/~/g, "~0").replace(/\//g, "~1"));
}

function lookup(doc, ptr) {
  let node = doc;
  for (const raw of ptr.split("/").slice(1)) {
    const tok = decodeURIComponent(raw).replace(/~1/g, "/").replace(/~0/g, "~");
    node = node == null ? undefined : node[tok];
  }
  return node;
}

function paramsText(e) {
  const p = e.params || {};
  if (p.additionalProperty !== undefined) return `(${p.additionalProperty}) `;
  if (p.missingProperty !== undefined) return `(${p.missingProperty}) `;
  if (p.allowedValues !== undefined) return `(${JSON.stringify(p.allowedValues)}) `;
  if (p.allowedValue !== undefined) return `(${JSON.stringify(p.allowedValue)}) `;
  return "";
}

function excerpt(s, n) {
  return s.length > n ? s.slice(0, n) + "..." : s;
}

try {
  process.exitCode = await main(process.argv.slice(2));
} catch (e) {
  console.error(`answers: the check could not run: ${e.stack || e}`);
  process.exitCode = 2;
}
