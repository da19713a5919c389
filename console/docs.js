// SPDX-License-Identifier: MIT
// docs.js: the API reference at GET /docs, built in the browser from the served OpenAPI 3.1
// document (GET /v1/openapi.json, no key needed). Nothing from another host, no Redoc or
// Swagger UI: Preact + htm, like the console.
//
// Decisions:
// - No import of api.js or ui.js: this page has no key and no session, and its Markdown needs
//   heading levels, heading ids and same-page links that ui.js's Markdown does not give.
// - Fast on a document of about 1 MB: the fetch starts when the module loads; the sidebar, the
//   introduction and the first tag render at once; the other tags follow one per idle period
//   (requestIdleCallback), each in a component that does not re-render afterwards, so a step
//   costs only its own tag and scrolling is never blocked for long. A deep link (#operationId)
//   to a tag not rendered yet renders up to it at once, then scrolls there.
// - Schemas are trees of <details>: a nested level is built only when it is first opened, so
//   the DOM stays small; a $ref already among a node's ancestors is shown as "recursive" and
//   never expanded, so a recursive schema cannot loop.
// - Markdown: a small subset (paragraphs, headings, lists, fenced code, quotes, code spans,
//   bold, italics, links) built as elements, never innerHTML. A link is kept only when it is
//   http(s), mailto, or a path (or #fragment) of this site; any other shows as its text.
// - The error codes of a response are those of its examples (error.code) and those its
//   description names that the ErrorCode enum knows; each links to /docs/errors/<code>.
// - performance marks 'docs:first-render' (sidebar + introduction + first tag in the DOM) and
//   'docs:all-rendered' let a test measure the page.

import { html, render, Component, useState, useEffect, useLayoutEffect, useRef, useMemo }
  from './preact.js';

function fetchDoc() {
  return fetch('/v1/openapi.json').then((res) => {
    if (!res.ok) throw new Error(`The server answered HTTP ${res.status}.`);
    return res.json();
  });
}

// Started at once, in parallel with Preact's first render (docs.html preloads it, too).
const docRequest = fetchDoc();

const METHODS = ['get', 'put', 'post', 'patch', 'delete', 'options', 'head', 'trace'];
const NONE = new Set();
let DOC = {};
let ERROR_CODES = new Set();

// ---- Markdown, inert ----

function slug(text) {
  return String(text).toLowerCase().replace(/[`*_]/g, '').replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '') || 'section';
}

// Unique heading ids within one text: 'intro-rate-limits', 'intro-rate-limits-2', ...
function idMaker(prefix) {
  const used = new Map();
  return (text) => {
    const base = prefix + slug(text);
    const n = (used.get(base) || 0) + 1;
    used.set(base, n);
    return n > 1 ? `${base}-${n}` : base;
  };
}

function safeHref(raw) {
  const h = String(raw).trim();
  // Whitespace, controls or a backslash ('/\evil.example' is another host to a browser): refused.
  if (!h || /[\s\\\u0000-\u001f\u007f]/.test(h)) return null;
  if (/^(https?:\/\/|mailto:)/i.test(h)) return h;
  if (/^\/(?!\/)/.test(h) || /^#/.test(h)) return h;
  return null;
}

function link(href, children, key) {
  const h = safeHref(href);
  if (!h) return html`<span key=${key}>${children}</span>`;
  if (/^https?:/i.test(h)) {
    return html`<a key=${key} href=${h} target="_blank" rel="noopener noreferrer">${children}<span
      class="sr-only"> (opens in a new tab)</span></a>`;
  }
  return html`<a key=${key} href=${h}>${children}</a>`;
}

const PUNCT = /[!-/:-@[-`{-~]/;

// The closing delimiter 'd' (one or two of 'c') of an emphasis opened before 'from', or -1.
function closeAt(text, d, from, c) {
  for (let j = text.indexOf(d, from); j !== -1; j = text.indexOf(d, j + 1)) {
    if (j === from || /\s/.test(text[j - 1])) continue;
    if (/\w/.test(text[j + d.length] || '')) continue;
    if (d.length === 1 && text[j + 1] === c) { j++; continue; }
    return j;
  }
  return -1;
}

// Inline Markdown -> strings and elements. Emphasis needs a non-word character before its
// opener and after its closer, so 'svc_live_sk_' or '2*3' stay as they are.
function inline(text, key) {
  const out = [];
  let buf = '';
  let n = 0;
  const k = () => `${key}.${n++}`;
  const push = (node) => {
    if (buf) out.push(buf);
    buf = '';
    out.push(node);
  };
  let i = 0;
  while (i < text.length) {
    const c = text[i];
    if (c === '\\' && PUNCT.test(text[i + 1] || '')) {
      buf += text[i + 1];
      i += 2;
      continue;
    }
    if (c === '`') {
      let run = 1;
      while (text[i + run] === '`') run++;
      const fence = '`'.repeat(run);
      const end = text.indexOf(fence, i + run);
      if (end !== -1) {
        let code = text.slice(i + run, end).replace(/\n/g, ' ');
        if (code.length > 2 && code[0] === ' ' && code[code.length - 1] === ' ')
          code = code.slice(1, -1);
        push(html`<code key=${k()}>${code}</code>`);
        i = end + run;
        continue;
      }
      buf += fence;
      i += run;
      continue;
    }
    if ((c === '*' || c === '_') && !/\w/.test(text[i - 1] || '')) {
      const d = text[i + 1] === c ? c + c : c;
      const from = i + d.length;
      const end = text[from] && !/\s/.test(text[from]) ? closeAt(text, d, from, c) : -1;
      if (end !== -1) {
        const inner = inline(text.slice(from, end), k());
        push(d.length === 2 ? html`<strong key=${k()}>${inner}</strong>`
                            : html`<em key=${k()}>${inner}</em>`);
        i = end + d.length;
        continue;
      }
    }
    if (c === '[' || c === '<') {
      const rest = text.slice(i, i + 2000);
      const m = c === '['
        ? /^\[([^\]\n]+)\]\(\s*<?((?:[^()\s>]|\([^()\s]*\))*)>?(?:\s+"[^"]*")?\s*\)/.exec(rest)
        : /^<((?:https?:\/\/|mailto:)[^>\s]+)>/i.exec(rest);
      if (m) {
        push(link(c === '[' ? m[2] : m[1], c === '[' ? inline(m[1], k()) : m[1], k()));
        i += m[0].length;
        continue;
      }
    }
    buf += c;
    i++;
  }
  if (buf) out.push(buf);
  return out;
}

const FENCE = /^ {0,3}(```+|~~~+)/;
const HEAD = /^ {0,3}(#{1,6}) +(.*?)(?: +#+)? *$/;
const QUOTE = /^ {0,3}> ?(.*)$/;
const ITEM = /^( *)([-*+]|\d{1,9}[.)]) +(.*)$/;

const indentOf = (line) => line.match(/^ */)[0].length;

// Does 'line' end a paragraph? (An ordered item interrupts one only when it starts at 1.)
function interrupts(line) {
  const m = ITEM.exec(line);
  if (m && (!/\d/.test(m[2]) || parseInt(m[2], 10) === 1)) return true;
  return FENCE.test(line) || HEAD.test(line) || QUOTE.test(line);
}

// Markdown text -> blocks: {t: 'h', level, text, id}, {t: 'p', text}, {t: 'pre', text},
// {t: 'list', ordered, start, items: [blocks]}, {t: 'quote', blocks}.
function parseBlocks(text, ids) {
  const lines = String(text || '').replace(/\r\n?/g, '\n').replace(/\t/g, '    ').split('\n');
  return blocks(lines, ids);
}

function blocks(lines, ids) {
  const out = [];
  let i = 0;
  let m;
  while (i < lines.length) {
    const line = lines[i];
    if (!line.trim()) {
      i++;
    } else if ((m = FENCE.exec(line))) {
      const body = [];
      const indent = indentOf(line);
      for (i++; i < lines.length && !lines[i].trim().startsWith(m[1]); i++)
        body.push(lines[i].slice(Math.min(indent, indentOf(lines[i]))));
      i++;
      out.push({ t: 'pre', text: body.join('\n') });
    } else if ((m = HEAD.exec(line))) {
      out.push({ t: 'h', level: m[1].length, text: m[2], id: ids ? ids(m[2]) : undefined });
      i++;
    } else if (QUOTE.test(line)) {
      const body = [];
      for (; i < lines.length && (m = QUOTE.exec(lines[i])); i++) body.push(m[1]);
      out.push({ t: 'quote', blocks: blocks(body, null) });
    } else if ((m = ITEM.exec(line))) {
      const indent = m[1].length;
      const ordered = /\d/.test(m[2]);
      const list = { t: 'list', ordered, start: ordered ? parseInt(m[2], 10) : 1, items: [] };
      let item = null;
      let width = 0;
      while (i < lines.length) {
        const l = lines[i];
        const im = ITEM.exec(l);
        if (im && im[1].length <= indent + 1) {
          if (/\d/.test(im[2]) !== ordered) break;
          if (item) list.items.push(blocks(item, null));
          item = [im[3]];
          width = im[1].length + im[2].length + 1;
          i++;
        } else if (!l.trim()) {
          // A blank line: the list goes on if what follows is indented or another item.
          const next = lines[i + 1];
          const nm = next !== undefined && ITEM.exec(next);
          if (next !== undefined && next.trim() &&
              (indentOf(next) > indent || (nm && /\d/.test(nm[2]) === ordered))) {
            item.push('');
            i++;
          } else {
            break;
          }
        } else if (indentOf(l) > indent) {
          item.push(l.slice(Math.min(width, indentOf(l))));
          i++;
        } else if (!interrupts(l) && item[item.length - 1].trim()) {
          item.push(l); // a lazy continuation of the item's paragraph
          i++;
        } else {
          break;
        }
      }
      if (item) list.items.push(blocks(item, null));
      out.push(list);
    } else {
      const para = [line.trim()];
      for (i++; i < lines.length && lines[i].trim() && !interrupts(lines[i]); i++)
        para.push(lines[i].trim());
      out.push({ t: 'p', text: para.join('\n') });
    }
  }
  return out;
}

// Blocks -> elements. A heading '##' becomes h<base> ('###' h<base+1>, at most h6); without a
// base (inside a property, a list item) it becomes a bold paragraph, so heading order holds.
function renderBlocks(bs, base, key) {
  return bs.map((b, i) => {
    const k = `${key}.${i}`;
    if (b.t === 'h') {
      if (!base) return html`<p key=${k} class="md-h"><strong>${inline(b.text, k)}</strong></p>`;
      const T = 'h' + Math.min(6, base + Math.max(0, b.level - 2));
      return html`<${T} key=${k} id=${b.id} tabindex=${b.id ? '-1' : undefined}>${
        inline(b.text, k)}</${T}>`;
    }
    if (b.t === 'pre') return html`<pre key=${k}><code>${b.text}</code></pre>`;
    if (b.t === 'quote')
      return html`<blockquote key=${k}>${renderBlocks(b.blocks, 0, k)}</blockquote>`;
    if (b.t === 'list') {
      const items = b.items.map((it, j) => html`<li key=${j}>${
        it.length === 1 && it[0].t === 'p' ? inline(it[0].text, `${k}.${j}`)
                                            : renderBlocks(it, 0, `${k}.${j}`)}</li>`);
      if (!b.ordered) return html`<ul key=${k}>${items}</ul>`;
      return html`<ol key=${k} start=${b.start !== 1 ? b.start : undefined}>${items}</ol>`;
    }
    return html`<p key=${k}>${inline(b.text, k)}</p>`;
  });
}

function Md({ text, parsed, base = 0, cls = 'md' }) {
  const bs = useMemo(() => parsed || parseBlocks(text), [text, parsed]);
  return bs.length ? html`<div class=${cls}>${renderBlocks(bs, base, 'm')}</div>` : null;
}

// ---- References and schemas ----

function lookup(ref) {
  if (typeof ref !== 'string' || !ref.startsWith('#/')) return undefined;
  let x = DOC;
  for (const part of ref.slice(2).split('/')) {
    let key = part.replace(/~1/g, '/').replace(/~0/g, '~');
    try { key = decodeURIComponent(key); } catch (e) { /* keep it as written */ }
    x = x && typeof x === 'object' ? x[key] : undefined;
  }
  return x;
}

// Follow $ref (a chain too, at most 20 hops); words beside a $ref (3.1) override the target's.
// Returns {node, name, refs}: 'name' the first reference's last segment.
function deref(raw) {
  let node = raw;
  let name = null;
  let extra = null;
  const refs = [];
  for (let hop = 0; node && typeof node === 'object' && typeof node.$ref === 'string'; hop++) {
    const { $ref, ...rest } = node;
    if (hop >= 20 || refs.includes($ref))
      return { node: {}, name, refs, broken: $ref, why: 'Reference cycle' };
    if (Object.keys(rest).length) extra = { ...rest, ...extra };
    refs.push($ref);
    name = name || $ref.split('/').pop();
    node = lookup($ref);
    if (node === undefined)
      return { node: {}, name, refs, broken: $ref, why: 'Unresolved reference' };
  }
  return { node: extra ? { ...node, ...extra } : node, name, refs };
}

const ANNOTATIONS = ['title', 'description', 'default', 'examples', 'example', 'deprecated',
                     'readOnly', 'writeOnly'];
const isNullSchema = (raw) => {
  const s = deref(raw).node;
  return !!s && (s.type === 'null' || s.const === null ||
                 (Array.isArray(s.type) && s.type.length === 1 && s.type[0] === 'null'));
};

// A schema seen from one place: references followed, 'X or null' folded into X marked
// nullable, allOf merged. 'seen' holds the references of its ancestors: meeting one again
// makes the view 'recursive', which is shown and never expanded.
function view(raw, seen) {
  const d = deref(raw);
  let s = d.node;
  if (s === true || s === undefined) s = {};
  if (s === false) s = { not: {} };
  const v = { s, name: d.name, refs: d.refs, nullable: s.nullable === true, types: [],
              variants: null, kind: null, recursive: d.refs.some((r) => seen.has(r)),
              broken: d.broken, why: d.why };
  if (v.recursive) return v;
  let types = s.type === undefined ? [] : [].concat(s.type);
  if (types.includes('null')) {
    v.nullable = true;
    types = types.filter((t) => t !== 'null');
  }
  v.types = types;
  for (const k of ['oneOf', 'anyOf']) {
    if (!Array.isArray(s[k])) continue;
    const rest = s[k].filter((x) => !isNullSchema(x));
    if (rest.length < s[k].length) v.nullable = true;
    if (rest.length === 1 && !s.properties && !types.length) {
      const inner = view(rest[0], seen);
      const own = {};
      for (const a of ANNOTATIONS) if (s[a] !== undefined) own[a] = s[a];
      return { ...inner, s: { ...inner.s, ...own }, name: inner.name || v.name,
               refs: [...v.refs, ...inner.refs], nullable: true };
    }
    v.variants = rest;
    v.kind = k;
  }
  if (Array.isArray(s.allOf)) {
    const parts = s.allOf.map((p) => view(p, seen));
    if (parts.length === 1 && parts[0].recursive)
      return { ...parts[0], refs: [...v.refs, ...parts[0].refs] };
    if (parts.some((p) => p.recursive || p.variants)) {
      v.variants = s.allOf;
      v.kind = 'allOf';
    } else {
      const { allOf, ...own } = s;
      const merged = { properties: {}, required: [] };
      for (const p of [...parts.map((x) => x.s), own]) {
        for (const [key, val] of Object.entries(p)) {
          if (key === 'properties') Object.assign(merged.properties, val);
          else if (key === 'required') merged.required.push(...val);
          else if (key !== 'type' || merged.type === undefined) merged[key] = val;
        }
      }
      if (!Object.keys(merged.properties).length) delete merged.properties;
      v.s = merged;
      v.types = [].concat(merged.type === undefined ? [] : merged.type)
        .filter((t) => t !== 'null');
      v.nullable = v.nullable || parts.every((p) => p.nullable);
      v.refs = [...v.refs, ...parts.flatMap((p) => p.refs)];
      if (parts.length === 1 && !v.name) v.name = parts[0].name;
    }
  }
  return v;
}

const childSeen = (seen, v) => (v.refs.length ? new Set([...seen, ...v.refs]) : seen);
const isArray = (v) => v.types.includes('array') || (!v.types.length && v.s.items !== undefined);
const mapOf = (s) => (s.additionalProperties && typeof s.additionalProperties === 'object'
  ? s.additionalProperties : null);
const propCount = (s) => (s.properties ? Object.keys(s.properties).length : 0);

// Does this node have a level to open (properties, options, items with their own)?
function hasBody(v, seen) {
  if (v.recursive) return false;
  const s = v.s;
  if (v.variants && v.variants.length) return true;
  if (propCount(s) || mapOf(s)) return true;
  if (isArray(v) && s.items && typeof s.items === 'object') {
    const iv = view(s.items, seen);
    return !iv.recursive && hasBody(iv, childSeen(seen, iv));
  }
  return false;
}

// The note of a node (or of its items) that is one of its own ancestors, or null.
function recursion(v, seen) {
  const of = (x) => `the same schema as an enclosing level${x.name ? ` (${x.name})` : ''}.`;
  if (v.recursive) return `Recursive: ${of(v)}`;
  if (isArray(v) && v.s.items && typeof v.s.items === 'object') {
    const iv = view(v.s.items, seen);
    if (iv.recursive) return `Each item: ${of(iv)}`;
  }
  return null;
}

const KIND = { oneOf: 'one of', anyOf: 'any of', allOf: 'all of' };

function typeLabel(v, seen, depth = 0) {
  if (v.recursive) return v.name || 'recursive';
  const s = v.s;
  if (v.variants) {
    const names = v.variants.map((x) => {
      const xv = view(x, seen);
      return xv.name || (depth < 1 ? typeLabel(xv, childSeen(seen, xv), depth + 1) : 'schema');
    });
    return names.length <= 4 ? names.join(' | ')
                             : `${KIND[v.kind]} ${names.length} schemas`;
  }
  let t = v.types.join(' | ');
  if (!t) {
    if (s.properties || mapOf(s)) t = 'object';
    else if (s.items) t = 'array';
    else if (s.const !== undefined) t = s.const === null ? 'null' : typeof s.const;
    else if (Array.isArray(s.enum)) t = 'enum';
    else if (s.contentMediaType || s.contentEncoding) t = 'binary';
    else t = 'any';
  }
  if (t === 'array' && s.items && typeof s.items === 'object') {
    const iv = view(s.items, seen);
    const inner = iv.name || (depth < 2 ? typeLabel(iv, childSeen(seen, iv), depth + 1) : 'items');
    t = `array of ${inner}${iv.nullable ? ' | null' : ''}`;
  } else if (t === 'object' && mapOf(s) && !propCount(s)) {
    const mv = view(mapOf(s), seen);
    const inner = mv.name ||
      (depth < 2 ? typeLabel(mv, childSeen(seen, mv), depth + 1) : 'values');
    t = `map of ${inner}`;
  }
  return t;
}

const jsonText = (x) => JSON.stringify(x);

function range(lo, hi, xlo, xhi, unit) {
  const u = unit ? ` ${unit}` : '';
  const one = (n) => (n === 1 && unit ? ` ${unit.replace(/ies$/, 'y').replace(/s$/, '')}` : u);
  if (lo !== undefined && hi !== undefined) return `${lo} to ${hi}${u}`;
  if (lo !== undefined) return `at least ${lo}${one(lo)}`;
  if (hi !== undefined) return `at most ${hi}${one(hi)}`;
  if (xlo !== undefined && xhi !== undefined) return `over ${xlo} and under ${xhi}${u}`;
  if (xlo !== undefined) return `over ${xlo}${u}`;
  if (xhi !== undefined) return `under ${xhi}${u}`;
  return null;
}

// The facts of a schema besides its type: enum, const, default, ranges, pattern, example.
function facts(s, withExample) {
  const f = [];
  const codes = (xs) => xs.map((x, i) => html`${i ? ' ' : ''}<code key=${i}>${
    jsonText(x)}</code>`);
  if (Array.isArray(s.enum)) f.push(['One of', codes(s.enum)]);
  if (s.const !== undefined) f.push(['Always', codes([s.const])]);
  if (s.default !== undefined) f.push(['Default', codes([s.default])]);
  const num = range(s.minimum, s.maximum, typeof s.exclusiveMinimum === 'number'
    ? s.exclusiveMinimum : undefined, typeof s.exclusiveMaximum === 'number'
    ? s.exclusiveMaximum : undefined);
  if (num) f.push(['Range', num]);
  if (s.multipleOf !== undefined) f.push(['Multiple of', String(s.multipleOf)]);
  const len = range(s.minLength, s.maxLength, undefined, undefined, 'characters');
  if (len) f.push(['Length', len]);
  const items = range(s.minItems, s.maxItems, undefined, undefined, 'items');
  if (items) f.push(['Size', items]);
  if (s.uniqueItems) f.push(['Items', 'unique']);
  const props = range(s.minProperties, s.maxProperties, undefined, undefined, 'properties');
  if (props) f.push(['Size', props]);
  if (s.pattern) f.push(['Pattern', html`<code>${s.pattern}</code>`]);
  if (s.contentMediaType) f.push(['Media type', html`<code>${s.contentMediaType}</code>`]);
  if (withExample) {
    const ex = Array.isArray(s.examples) ? s.examples : s.example !== undefined ? [s.example] : [];
    if (ex.length) f.push([ex.length > 1 ? 'Examples' : 'Example', codes(ex)]);
  }
  return f;
}

function Facts({ v, seen }) {
  const s = v.s;
  const plain = !propCount(s) && !v.variants;
  const f = facts(s, plain);
  // An array of plain items: the items' facts too ("capabilities": each one of ...).
  if (isArray(v) && s.items && typeof s.items === 'object') {
    const iv = view(s.items, seen);
    if (!iv.recursive && !hasBody(iv, childSeen(seen, iv))) {
      for (const [k, val] of facts(iv.s, true)) f.push([`Each item: ${k.toLowerCase()}`, val]);
      if (iv.s.format) f.push(['Each item: format', iv.s.format]);
    }
  }
  if (v.s.discriminator && v.s.discriminator.propertyName)
    f.push(['Told apart by', html`<code>${v.s.discriminator.propertyName}</code>`]);
  if (v.broken) f.push([v.why, html`<code>${v.broken}</code>`]);
  if (!f.length) return null;
  return html`<ul class="facts">${f.map(([k, val], i) => html`<li key=${i}>
    <span class="fk">${k}:</span> ${val}</li>`)}</ul>`;
}

function TypeTag({ v, seen }) {
  const label = typeLabel(v, seen);
  return html`<span class="ptype">${label}</span>${
    v.s.format ? html` <span class="pformat">${v.s.format}</span>` : null}${
    v.name && v.name !== label ? html` <span class="sname">${v.name}</span>` : null}`;
}

// A <details> whose content is built only once it is first opened.
function Lazy({ summary, open = false, cls, children }) {
  const [shown, setShown] = useState(open);
  const make = Array.isArray(children) ? children[0] : children;
  return html`<details class=${cls} open=${open}
    onToggle=${(e) => e.currentTarget.open && !shown && setShown(true)}>
    <summary>${summary}</summary>
    ${shown ? (typeof make === 'function' ? make() : make) : null}
  </details>`;
}

function bodySummary(v, seen) {
  const s = v.s;
  if (v.variants) {
    const n = v.variants.length;
    return `${n} ${n === 1 ? 'option' : 'options'} (${KIND[v.kind]})`;
  }
  if (isArray(v) && s.items) {
    const iv = view(s.items, seen);
    const n = propCount(iv.s);
    return n ? `Item: ${n} ${n === 1 ? 'property' : 'properties'}` : 'Item';
  }
  const n = propCount(s);
  if (n) return `${n} ${n === 1 ? 'property' : 'properties'}`;
  return 'Values';
}

// One property, parameter, header, option or event: name, type, badges, description, facts,
// and its own level (closed) when it has one.
function Prop({ name, label, schema, required, desc, deprecated, seen }) {
  const v = view(schema, seen);
  const inner = childSeen(seen, v);
  const text = desc !== undefined ? desc : v.s.description;
  return html`<li class="prop">
    <div class="prop-head">
      ${name !== undefined ? html`<code class="pname">${name}</code>`
                           : html`<span class="plabel">${label}</span>`}
      <${TypeTag} v=${v} seen=${inner} />
      ${required ? html`<span class="badge req">required</span>`
        : label || required === null ? null : html`<span class="opt">optional</span>`}
      ${v.nullable ? html`<span class="badge">nullable</span>` : null}
      ${v.s.readOnly ? html`<span class="badge">read-only</span>` : null}
      ${v.s.writeOnly ? html`<span class="badge">write-only</span>` : null}
      ${deprecated || v.s.deprecated ? html`<span class="badge warn">deprecated</span>` : null}
    </div>
    ${text ? html`<${Md} text=${text} cls="md pdesc" />` : null}
    <${Facts} v=${v} seen=${inner} />
    ${recursion(v, inner)
      ? html`<p class="small">${recursion(v, inner)}</p>`
      : hasBody(v, inner)
        ? html`<${Lazy} cls="nested" summary=${bodySummary(v, inner)}>${
            () => html`<${Body} v=${v} seen=${inner} />`}</${Lazy}>`
        : null}
  </li>`;
}

// The inside of a node: its options, its properties, its items' inside, its map values.
function Body({ v, seen }) {
  const s = v.s;
  const out = [];
  if (v.variants) {
    out.push(html`<ol class="props variants" key="v">${v.variants.map((x, i) => html`<${Prop}
      key=${i} label=${`Option ${i + 1}`} schema=${x} seen=${seen} />`)}</ol>`);
  }
  if (propCount(s)) {
    const req = new Set(Array.isArray(s.required) ? s.required : []);
    out.push(html`<ul class="props" key="p">${Object.entries(s.properties).map(([n, x]) =>
      html`<${Prop} key=${n} name=${n} schema=${x} required=${req.has(n)} seen=${seen} />`)
    }</ul>`);
  }
  if (mapOf(s)) {
    out.push(html`<ul class="props" key="m"><${Prop} label="Any other key" schema=${mapOf(s)}
      seen=${seen} /></ul>`);
  }
  if (isArray(v) && s.items && typeof s.items === 'object') {
    const iv = view(s.items, seen);
    const inner = childSeen(seen, iv);
    if (iv.recursive) {
      out.push(html`<p class="small" key="r">${recursion(v, seen)}</p>`);
    } else {
      if (iv.s.description)
        out.push(html`<${Md} key="d" text=${iv.s.description} cls="md pdesc" />`);
      if (hasBody(iv, inner)) out.push(html`<${Body} key="i" v=${iv} seen=${inner} />`);
    }
  }
  return out;
}

// A schema at the top of a body or response: its head and first level shown.
function SchemaRoot({ schema }) {
  const v = view(schema, NONE);
  const inner = childSeen(NONE, v);
  return html`<div class="schema">
    <p class="schema-head"><span class="label">Schema</span> <${TypeTag} v=${v} seen=${inner} />${
      v.nullable ? html` <span class="badge">nullable</span>` : null}</p>
    ${v.s.description ? html`<${Md} text=${v.s.description} cls="md pdesc" />` : null}
    <${Facts} v=${v} seen=${inner} />
    ${recursion(v, inner) ? html`<p class="small">${recursion(v, inner)}</p>` : null}
    ${hasBody(v, inner) ? html`<${Body} v=${v} seen=${inner} />` : null}
  </div>`;
}

// ---- Operations ----

function examplesOf(m) {
  const out = [];
  if (m.examples && typeof m.examples === 'object') {
    for (const [key, raw] of Object.entries(m.examples)) {
      const e = deref(raw).node || {};
      out.push({ title: e.summary || key, description: e.description, value: e.value,
                 external: e.externalValue });
    }
  }
  if (!out.length && m.example !== undefined) out.push({ title: '', value: m.example });
  if (!out.length && m.schema) {
    const s = view(m.schema, NONE).s;
    const list = Array.isArray(s.examples) ? s.examples
      : s.example !== undefined ? [s.example] : [];
    list.forEach((value, i) => out.push({ title: list.length > 1 ? String(i + 1) : '', value }));
  }
  return out;
}

function Example({ ex, open }) {
  return html`<${Lazy} cls="example" open=${open}
    summary=${'Example' + (ex.title ? `: ${ex.title}` : '')}>${() => html`
    ${ex.description ? html`<${Md} text=${ex.description} cls="md pdesc" />` : null}
    ${ex.external
      ? html`<p>${link(ex.external, ex.external, 'x')}</p>`
      : html`<pre class="json"><code>${typeof ex.value === 'string' ? ex.value
                                        : JSON.stringify(ex.value, null, 2)}</code></pre>`}`}
  </${Lazy}>`;
}

function Media({ type, media, openExample }) {
  const m = deref(media).node || {};
  const events = m['x-workforce-events'];
  const exs = examplesOf(m);
  return html`<div class="media">
    <p class="media-type"><span class="label">Content type</span> <code>${type}</code></p>
    ${m.schema ? html`<${SchemaRoot} schema=${m.schema} />` : null}
    ${events && typeof events === 'object' ? html`<div class="events">
      <p class="label">Events</p>
      <ul class="props">${Object.entries(events).map(([n, x]) => html`<${Prop} key=${n} name=${n}
        schema=${x} required=${null} seen=${NONE} />`)}</ul></div>` : null}
    ${exs.map((ex, i) => html`<${Example} key=${i} ex=${ex} open=${openExample && i === 0} />`)}
  </div>`;
}

const IN = [['path', 'Path parameters'], ['query', 'Query parameters'],
            ['header', 'Header parameters'], ['cookie', 'Cookie parameters']];

function paramSchema(p) {
  if (p.schema) return p.schema;
  const first = p.content && Object.values(p.content)[0];
  return (first && deref(first).node.schema) || {};
}

function Parameters({ params }) {
  if (!params.length) return null;
  return html`<section class="op-part">
    <h4>Parameters</h4>
    ${IN.map(([where, title]) => {
      const list = params.filter((p) => p.in === where);
      return list.length ? html`<div key=${where}>
        <h5>${title}</h5>
        <ul class="props">${list.map((p) => html`<${Prop} key=${p.name} name=${p.name}
          schema=${paramSchema(p)} desc=${p.description} required=${!!p.required}
          deprecated=${p.deprecated} seen=${NONE} />`)}</ul>
      </div>` : null;
    })}
  </section>`;
}

function RequestBody({ raw }) {
  if (!raw) return null;
  const rb = deref(raw).node || {};
  return html`<section class="op-part">
    <h4>Request body</h4>
    <p>${rb.required ? html`<span class="badge req">required</span>`
                     : html`<span class="opt">optional</span>`}</p>
    ${rb.description ? html`<${Md} text=${rb.description} />` : null}
    ${Object.entries(rb.content || {}).map(([type, media]) => html`<${Media} key=${type}
      type=${type} media=${media} openExample=${true} />`)}
  </section>`;
}

const REASONS = {
  200: 'OK', 201: 'Created', 202: 'Accepted', 204: 'No Content', 301: 'Moved Permanently',
  302: 'Found', 303: 'See Other', 304: 'Not Modified', 307: 'Temporary Redirect',
  308: 'Permanent Redirect', 400: 'Bad Request', 401: 'Unauthorized', 402: 'Payment Required',
  403: 'Forbidden', 404: 'Not Found', 405: 'Method Not Allowed', 406: 'Not Acceptable',
  408: 'Request Timeout', 409: 'Conflict', 410: 'Gone', 411: 'Length Required',
  412: 'Precondition Failed', 413: 'Content Too Large', 414: 'URI Too Long',
  415: 'Unsupported Media Type', 422: 'Unprocessable Content', 428: 'Precondition Required',
  429: 'Too Many Requests', 431: 'Request Header Fields Too Large',
  500: 'Internal Server Error', 501: 'Not Implemented', 502: 'Bad Gateway',
  503: 'Service Unavailable', 504: 'Gateway Timeout', default: 'Any other status',
};

function errorCodes(r) {
  const codes = [];
  const add = (c) => typeof c === 'string' && /^[a-z][a-z0-9_]*$/.test(c) &&
                     !codes.includes(c) && codes.push(c);
  for (const m of String(r.description || '').matchAll(/`([a-z][a-z0-9_]*)`/g))
    if (ERROR_CODES.has(m[1])) add(m[1]);
  for (const media of Object.values(r.content || {})) {
    const mm = deref(media).node || {};
    for (const raw of Object.values(mm.examples || {})) {
      const val = (deref(raw).node || {}).value;
      if (val && typeof val === 'object' && val.error) add(val.error.code);
    }
    if (mm.example && mm.example.error) add(mm.example.error.code);
  }
  return codes;
}

function Headers({ headers }) {
  const list = Object.entries(headers || {});
  if (!list.length) return null;
  return html`<${Lazy} cls="headers" summary=${`Response headers (${list.length})`}>${() => html`
    <ul class="props">${list.map(([n, raw]) => {
      const h = deref(raw).node || {};
      return html`<${Prop} key=${n} name=${n} schema=${h.schema || {}} desc=${h.description}
        required=${h.required ? true : null} seen=${NONE} />`;
    })}</ul>`}</${Lazy}>`;
}

function Response({ status, raw }) {
  const r = deref(raw).node || {};
  const codes = errorCodes(r);
  const ok = /^[123]/.test(status);
  const content = Object.entries(r.content || {});
  return html`<div class="resp">
    <h5><span class=${'scode c' + (/^\d/.test(status) ? status[0] : 'd')}>${status}</span> ${
      REASONS[status] || ''}</h5>
    ${r.description ? html`<${Md} text=${r.description} cls="md pdesc" />` : null}
    ${codes.length ? html`<div class="codes"><span class="label">Error codes:</span>
      <ul>${codes.map((c) => html`<li key=${c}><a href=${'/docs/errors/' + encodeURIComponent(c)}
        ><code>${c}</code></a></li>`)}</ul></div>` : null}
    ${content.length ? html`<${Lazy} cls="resp-body" open=${ok}
      summary=${ok ? 'Response body' : 'Error body and examples'}>${() => content.map(
        ([type, m]) => html`<${Media} key=${type} type=${type} media=${m} openExample=${false} />`)
      }</${Lazy}>`
      : null}
    <${Headers} headers=${r.headers} />
  </div>`;
}

function Responses({ responses }) {
  const list = Object.entries(responses || {});
  if (!list.length) return null;
  return html`<section class="op-part">
    <h4>Responses</h4>
    ${list.map(([st, r]) => html`<${Response} key=${st} status=${st} raw=${r} />`)}
  </section>`;
}

function Method({ m }) {
  return html`<span class=${'method m-' + m}>${m.toUpperCase()}</span>`;
}

function PathText({ path }) {
  return path.split(/(\{[^}]+\})/).map((part, i) => (i % 2
    ? html`<span class="path-param" key=${i}>${part}</span>` : part));
}

function Auth({ op }) {
  const sec = op.security !== undefined ? op.security : DOC.security;
  const open = !Array.isArray(sec) || !sec.length ||
               sec.some((req) => !req || !Object.keys(req).length);
  if (open) return html`<p class="auth"><span class="badge nokey">No API key</span></p>`;
  const scope = op['x-workforce-scope'];
  return html`<p class="auth"><span class="badge key">API key required</span> ${scope
    ? html`<span>Scope: <code>${scope}</code></span>`
    : html`<span class="small">Any valid key (no scope needed)</span>`}</p>`;
}

function Operation({ o }) {
  const { op } = o;
  const title = op.summary || `${o.method.toUpperCase()} ${o.path}`;
  const status = op['x-workforce-status'];
  return html`<article class="op" id=${o.id} tabindex="-1" aria-labelledby=${o.id + '--h'}>
    <h3 id=${o.id + '--h'}>${title}</h3>
    <p class="endpoint"><${Method} m=${o.method} /> <code class="path"><${PathText}
      path=${o.path} /></code>
      <a class="permalink" href=${'#' + encodeURIComponent(o.id)}
        aria-label=${'Link to this operation: ' + title}>#</a></p>
    <${Auth} op=${op} />
    ${op.deprecated ? html`<p><span class="badge warn">deprecated</span></p>` : null}
    ${status ? html`<p><span class="badge warn">${status}</span>${status === 'planned'
      ? ' Not implemented yet: answers 404 route_not_found.' : ''}</p>` : null}
    ${op.description ? html`<${Md} text=${op.description} base=${4} />` : null}
    <p class="small opid">operationId: <code>${o.id}</code></p>
    <${Parameters} params=${o.params} />
    <${RequestBody} raw=${op.requestBody} />
    <${Responses} responses=${op.responses} />
  </article>`;
}

// ---- The page ----

// Which operation is in view: kept outside Preact's state so that scrolling re-renders the
// sidebar alone.
const spied = { id: null, subs: new Set() };
const inView = new Set();
let spy = null;
function spyOn(el) {
  if (!spy) {
    spy = new IntersectionObserver((entries) => {
      for (const e of entries) e.isIntersecting ? inView.add(e.target) : inView.delete(e.target);
      let top = null;
      for (const el2 of inView)
        if (!top || (el2.compareDocumentPosition(top) & Node.DOCUMENT_POSITION_FOLLOWING))
          top = el2;
      if (top && top.id !== spied.id) {
        spied.id = top.id;
        for (const f of spied.subs) f(top.id);
      }
    }, { rootMargin: '0px 0px -70% 0px' });
  }
  spy.observe(el);
}

// The document -> {groups: [{name, id, description, ops}], where: Map(id -> group index), ...}.
function model(doc) {
  DOC = doc;
  const ec = deref((doc.components && doc.components.schemas || {}).ErrorCode || {}).node;
  ERROR_CODES = new Set(ec && Array.isArray(ec.enum) ? ec.enum : []);
  const groups = (doc.tags || []).map((t) => ({ name: t.name, description: t.description || '',
                                               id: 'tag-' + slug(t.name), ops: [] }));
  const byName = new Map(groups.map((g) => [g.name, g]));
  for (const [path, rawItem] of Object.entries(doc.paths || {})) {
    const item = deref(rawItem).node || {};
    for (const method of METHODS) {
      const op = item[method];
      if (!op || typeof op !== 'object') continue;
      const params = new Map();
      for (const raw of [...(item.parameters || []), ...(op.parameters || [])]) {
        const p = deref(raw).node;
        if (p && p.name) params.set(p.in + ':' + p.name, p);
      }
      const tag = (op.tags || []).find((t) => byName.has(t)) || (op.tags || [])[0] || 'Other';
      if (!byName.has(tag)) {
        const g = { name: tag, description: '', id: 'tag-' + slug(tag), ops: [] };
        groups.push(g);
        byName.set(tag, g);
      }
      const id = op.operationId || slug(`${method}-${path}`);
      byName.get(tag).ops.push({
        id, method, path, op, params: [...params.values()],
        text: `${method} ${path} ${op.summary || ''} ${id} ${tag}`.toLowerCase(),
      });
    }
  }
  const shown = groups.filter((g) => g.ops.length);
  const where = new Map();
  let offset = 0;
  shown.forEach((g, i) => {
    g.offset = offset;
    offset += g.ops.length;
    where.set(g.id, i);
    for (const o of g.ops) where.set(o.id, i);
  });
  const info = doc.info || {};
  const intro = parseBlocks(info.description, idMaker('intro-'));
  return { info, groups: shown, where, intro, heads: intro.filter((b) => b.t === 'h'),
           total: shown.reduce((n, g) => n + g.ops.length, 0) };
}

function firstSentence(text) {
  const m = /^([\s\S]*?[.!?])(\s|$)/.exec(text);
  return m && m[1].length < text.trim().length ? m[1] : text;
}

function Sidebar({ m }) {
  const [q, setQ] = useState('');
  const [current, setCurrent] = useState(spied.id);
  const nav = useRef(null);
  useEffect(() => {
    spied.subs.add(setCurrent);
    return () => spied.subs.delete(setCurrent);
  }, []);
  // Keep the link of the operation in view visible in the sidebar's own scroll.
  useEffect(() => {
    const el = nav.current && nav.current.querySelector('a[aria-current]');
    if (!el) return;
    const box = nav.current;
    const top = el.offsetTop;
    if (top < box.scrollTop + 60 || top > box.scrollTop + box.clientHeight - 60)
      box.scrollTop = top - box.clientHeight / 3;
  }, [current]);
  const words = q.toLowerCase().split(/\s+/).filter(Boolean);
  const match = (text) => words.every((w) => text.includes(w));
  const groups = m.groups.map((g) => ({ g, ops: words.length ? g.ops.filter((o) => match(o.text))
                                                              : g.ops }))
    .filter((x) => x.ops.length);
  const heads = words.length ? m.heads.filter((h) => match(h.text.toLowerCase())) : m.heads;
  const count = groups.reduce((n, x) => n + x.ops.length, 0);
  const onKey = (e) => {
    if (e.key === 'Enter' && groups.length) {
      e.preventDefault();
      location.hash = '#' + encodeURIComponent(groups[0].ops[0].id);
    }
  };
  return html`<nav class="docs-nav" aria-label="API reference" ref=${nav}>
    <div class="filter">
      <label for="docs-filter">Filter operations</label>
      <input id="docs-filter" type="search" value=${q} autocomplete="off"
        placeholder="Method, path or name" aria-describedby="docs-filter-count"
        onInput=${(e) => setQ(e.currentTarget.value)} onKeyDown=${onKey} />
      <p id="docs-filter-count" class="small" role="status">${words.length
        ? (count ? `${count} of ${m.total} operations match; Enter opens the first.`
                 : 'No operation matches.') : ''}</p>
    </div>
    ${heads.length ? html`<div class="nav-group nav-intro">
      <a class="nav-tag" href="#introduction">Introduction</a>
      <ul>${heads.map((h) => html`<li key=${h.id}><a href=${'#' + h.id}>${
        inline(h.text, h.id)}</a></li>`)}</ul>
    </div>` : null}
    ${groups.map(({ g, ops }) => html`<div class="nav-group" key=${g.id}>
      <a class="nav-tag" href=${'#' + g.id}>${g.name}</a>
      ${g.description ? html`<p class="nav-desc">${inline(firstSentence(g.description), g.id)}</p>`
                      : null}
      <ul>${ops.map((o) => html`<li key=${o.id}><a href=${'#' + encodeURIComponent(o.id)}
        aria-current=${current === o.id ? 'location' : undefined}><${Method} m=${o.method} /> <span
        class="nav-sum">${o.op.summary || o.path}</span> <span class="nav-path">${o.path}</span
        ></a></li>`)}</ul>
    </div>`)}
  </nav>`;
}

// A tag: heading, description and its first 'ready' operations. It re-renders only when
// 'ready' changes, so rendering the next operations does not walk the ones before.
class TagSection extends Component {
  shouldComponentUpdate(next) {
    return next.ready !== this.props.ready;
  }

  componentDidMount() {
    this.watch();
  }

  componentDidUpdate() {
    this.watch();
  }

  watch() {
    if (this.props.ready && this.base) this.base.querySelectorAll('.op').forEach(spyOn);
  }

  render({ g, ready }) {
    return html`<section class="tag" id=${g.id} tabindex="-1" aria-labelledby=${g.id + '--h'}>
      <h2 id=${g.id + '--h'}>${g.name}</h2>
      ${g.description ? html`<${Md} text=${g.description} cls="md tag-desc" />` : null}
      ${g.ops.slice(0, ready).map((o) => html`<${Operation} key=${o.id} o=${o} />`)}
      ${ready < g.ops.length
        ? html`<p class="loading">Loading ${g.ops.length - ready} operations…</p>` : null}
    </section>`;
  }
}

const idle = window.requestIdleCallback
  ? (f) => requestIdleCallback(f, { timeout: 250 }) : (f) => setTimeout(f, 16);
const cancelIdle = window.cancelIdleCallback || clearTimeout;

// The first server's URL, resolved against this page ('/' -> 'http://host:port').
function baseUrl() {
  const url = ((DOC.servers || [])[0] || {}).url || '/';
  try {
    return new URL(url, location.href).href.replace(/\/$/, '');
  } catch (e) {
    return url;
  }
}

function hashId() {
  try {
    return decodeURIComponent(location.hash.slice(1));
  } catch (e) {
    return location.hash.slice(1);
  }
}

function App() {
  const [st, setSt] = useState({ m: null, error: null });
  // How many operations are rendered, counted in document order across the tags.
  const [done, setDone] = useState(0);
  const doneRef = useRef(0);
  doneRef.current = done;
  const pending = useRef(null);
  const m = st.m;

  // Everything up to the end of the tag of 'id' (at least the first tag).
  const needed = (mm, id) => {
    const k = mm.where.get(id);
    const g = mm.groups[k === undefined ? 0 : k];
    return g ? g.offset + g.ops.length : 0;
  };

  const load = (req) => {
    setSt({ m: null, error: null });
    req.then((doc) => {
      const mm = model(doc);
      if (mm.where.has(hashId())) pending.current = hashId();
      setDone((d) => Math.max(d, needed(mm, hashId())));
      setSt({ m: mm, error: null });
    }, (error) => setSt({ m: null, error }));
  };
  useEffect(() => load(docRequest), []);

  const scrollToPending = () => {
    const id = pending.current;
    const el = id && document.getElementById(id);
    if (!el) return;
    pending.current = null;
    el.scrollIntoView({ block: 'start' });
    el.focus({ preventScroll: true });
  };

  // A link to an operation or tag: render up to it now, then scroll there and move the focus
  // to it (the layout effect below does so once the render is in the DOM).
  useEffect(() => {
    if (!m) return undefined;
    const on = () => {
      const id = hashId();
      if (!m.where.has(id)) return;
      pending.current = id;
      const n = needed(m, id);
      if (n > doneRef.current) setDone(n);
      else scrollToPending();
    };
    addEventListener('hashchange', on);
    return () => removeEventListener('hashchange', on);
  }, [m]);

  useLayoutEffect(() => {
    if (!m) return;
    if (!performance.getEntriesByName('docs:first-render').length) {
      performance.mark('docs:first-render');
      document.title = `${m.info.title || 'API'} reference`;
    }
    scrollToPending();
  }, [m, done]);

  // The remaining operations, a few per idle period: as many as fit in about 15 ms at the
  // cost per operation measured so far, so that a step and its layout stay under 50 ms.
  const cost = useRef({ start: 0, n: 0, per: 10 });
  useLayoutEffect(() => {
    const c = cost.current;
    if (c.start && c.n) {
      c.per = (c.per + (performance.now() - c.start) / c.n) / 2;
      performance.measure('docs:chunk', { start: c.start, detail: c.n });
    }
    c.start = 0;
  }, [done]);
  useEffect(() => {
    if (!m) return undefined;
    if (done >= m.total) {
      if (!performance.getEntriesByName('docs:all-rendered').length)
        performance.mark('docs:all-rendered');
      return undefined;
    }
    const h = idle(() => {
      const c = cost.current;
      c.n = Math.max(1, Math.min(12, Math.floor(15 / Math.max(1, c.per))));
      c.start = performance.now();
      setDone((d) => d + c.n);
    });
    return () => cancelIdle(h);
  }, [m, done]);

  const info = m ? m.info : {};
  return html`
    <a class="skip" href="#main">Skip to the reference</a>
    <header class="docs-top">
      <a class="brand" href="/console/">Workforce</a>
      <span class="top-title">API reference${info.version ? html` <span class="version">v${
        info.version}</span>` : null}</span>
      <span class="top-links"><a href="/v1/openapi.json">OpenAPI document (JSON)</a>
        <a href="/console/">Console</a></span>
    </header>
    <div class="docs-layout">
      ${m ? html`<${Sidebar} m=${m} />` : null}
      <main id="main" tabindex="-1">
        ${st.error ? html`<div class="error" role="alert">
            <strong>The API document could not be loaded.</strong> ${
              String(st.error.message || st.error)}
            <button type="button" onClick=${() => load(fetchDoc())}>Retry</button></div>`
          : !m ? html`<p class="loading" role="status">Loading the API reference…</p>`
          : html`
            <div class="intro" id="introduction" tabindex="-1">
              <h1>${info.title || 'API reference'}</h1>
              ${info.summary ? html`<p class="lead">${info.summary}</p>` : null}
              <p class="small">Version ${info.version || '—'} · OpenAPI ${
                DOC.openapi || ''} · ${m.total} operations · base URL <code>${
                baseUrl()}</code></p>
              <${Md} parsed=${m.intro} base=${2} />
            </div>
            ${m.groups.map((g) => html`<${TagSection} key=${g.id} g=${g}
              ready=${Math.max(0, Math.min(g.ops.length, done - g.offset))} />`)}`}
      </main>
    </div>`;
}

const root = document.getElementById('docs');
root.textContent = '';
render(html`<${App} />`, root);
