#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The C tables against docs/openapi.json: `build/workforce routes` prints the route table
(method, path, scope, public, query parameters), the JSON members each route binds (type,
required, nullable, limits, enum values) and the error table; this check fails, naming each
disagreement, when the document describes another API than the one the binary serves:

  - every route of the table is an operation of the document, not marked planned, and every
    operation that is not planned is a route (planned ones must be absent);
  - public routes need no key (security: []), others name the route's scope;
  - the query parameters are the route's;
  - the JSON request body has exactly the bound members, the same required ones, and for each
    its type, whether null is accepted, its length/value/count limits and its enum values;
  - the error codes and their statuses are the error table's.

Usage: check_routes.py [BINARY] [DOCUMENT]. Exit 0 when they agree, 1 otherwise."""

import json
import re
import subprocess
import sys

BINARY = sys.argv[1] if len(sys.argv) > 1 else "build/workforce"
DOCUMENT = sys.argv[2] if len(sys.argv) > 2 else "docs/openapi.json"


def load():
    out = subprocess.run([BINARY, "routes"], capture_output=True, check=True, timeout=30,
                         env={"PATH": "/usr/bin:/bin"}).stdout
    with open(DOCUMENT) as f:
        return json.loads(out), json.load(f)


class Checker:
    def __init__(self, table, doc):
        self.table, self.doc, self.problems = table, doc, []

    def bad(self, where, msg):
        self.problems.append("%s: %s" % (where, msg))

    def resolve(self, node):
        while isinstance(node, dict) and "$ref" in node:
            parts = node["$ref"].lstrip("#/").split("/")
            target = self.doc
            for p in parts:
                target = target[p]
            extra = {k: v for k, v in node.items() if k != "$ref"}
            node = dict(target, **extra) if extra else target
        return node

    def flatten(self, schema):
        """A property's schema as (schema without null, accepts null)."""
        s = self.resolve(schema)
        nullable = False
        if "allOf" in s and len(s["allOf"]) == 1:
            merged = dict(self.resolve(s["allOf"][0]))
            merged.update({k: v for k, v in s.items() if k != "allOf"})
            s = merged
        for key in ("anyOf", "oneOf"):
            if key in s:
                alts = [self.resolve(a) for a in s[key]]
                rest = [a for a in alts if a.get("type") != "null"]
                nullable = len(rest) != len(alts)
                if len(rest) == 1:
                    merged = dict(self.flatten(rest[0])[0])
                    merged.update({k: v for k, v in s.items() if k != key})
                    s = merged
                else:
                    s = dict(s, type="mixed")
        t = s.get("type")
        if isinstance(t, list):
            nullable = nullable or "null" in t
            t = [x for x in t if x != "null"]
            s = dict(s, type=t[0] if len(t) == 1 else t)
        if s.get("enum") and None in s["enum"]:
            nullable = True
            s = dict(s, enum=[v for v in s["enum"] if v is not None])
        return s, nullable

    def field(self, where, f, prop):
        s, nullable = self.flatten(prop)
        if nullable != f["nullable"]:
            self.bad(where, "null %s in the document, %s by the server"
                     % ("accepted" if nullable else "refused",
                        "accepted" if f["nullable"] else "refused"))
        t = f["type"]
        want = {"string": "string", "integer": "integer", "boolean": "boolean",
                "enum": "string", "array": "array"}.get(t)
        if want and s.get("type") != want:
            self.bad(where, "type %r in the document, %s by the server" % (s.get("type"), want))
        if t == "string":
            lo, hi = s.get("minLength", 0), s.get("maxLength")
            if lo != f["min"] or hi != f["max"]:
                self.bad(where, "length %s..%s in the document, %s..%s by the server"
                         % (lo, hi, f["min"], f["max"]))
        elif t == "integer":
            if s.get("minimum") != f["min"] or s.get("maximum") != f["max"]:
                self.bad(where, "range %s..%s in the document, %s..%s by the server"
                         % (s.get("minimum"), s.get("maximum"), f["min"], f["max"]))
        elif t == "array":
            lo, hi = s.get("minItems", 0), s.get("maxItems")
            if lo != f["min"] or hi != f["max"]:
                self.bad(where, "items %s..%s in the document, %s..%s by the server"
                         % (lo, hi, f["min"], f["max"]))
            if bool(s.get("uniqueItems")) != f["unique"]:
                self.bad(where, "uniqueItems %s in the document, %s by the server"
                         % (bool(s.get("uniqueItems")), f["unique"]))
        elif t == "enum":
            if s.get("enum") != f["values"]:
                self.bad(where, "values %s in the document, %s by the server"
                         % (s.get("enum"), f["values"]))
        elif t == "any" and f["object"] and s.get("type") != "object":
            self.bad(where, "the server takes an object, the document says %r" % s.get("type"))

    def body(self, where, route, op):
        if route["body"] is None:
            return
        content = (op.get("requestBody") or {}).get("content", {})
        if "application/json" not in content:
            self.bad(where, "binds JSON members but the document has no JSON request body")
            return
        schema = self.resolve(content["application/json"]["schema"])
        props = schema.get("properties", {})
        fields = {f["name"]: f for f in route["body"]}
        if set(props) != set(fields):
            self.bad(where, "members %s in the document, %s bound by the server"
                     % (sorted(props), sorted(fields)))
        if schema.get("additionalProperties", True) is not False:
            self.bad(where, "the server refuses unknown members: additionalProperties must "
                     "be false")
        required = {n for n, f in fields.items() if f["required"]}
        if set(schema.get("required", [])) != required:
            self.bad(where, "required %s in the document, %s by the server"
                     % (sorted(schema.get("required", [])), sorted(required)))
        for name in sorted(set(props) & set(fields)):
            self.field("%s body.%s" % (where, name), fields[name], props[name])

    def route(self, route, op):
        where = "%s %s" % (route["method"], route["path"])
        if op.get("x-workforce-status") == "planned":
            self.bad(where, "served, but marked planned in the document")
        if route["public"]:
            if op.get("security") != []:
                self.bad(where, "public, but the document asks for a key")
        else:
            if op.get("security") == []:
                self.bad(where, "needs a key, but the document says it is public")
            scope = op.get("x-workforce-scope")
            # several scopes: any one of them ("a or b") or all of them ("a and b")
            want = (" or " if route.get("scope_any") else " and ").join(route["scopes"]) or None
            if scope != want:
                self.bad(where, "scope %r in the document, %r by the server" % (scope, want))
        params = [self.resolve(p) for p in op.get("parameters", [])]
        query = sorted(p["name"] for p in params if p.get("in") == "query")
        if query != sorted(q["name"] for q in route["query"]):
            self.bad(where, "query parameters %s in the document, %s by the server"
                     % (query, sorted(q["name"] for q in route["query"])))
        self.body(where, route, op)

    def run(self):
        served = set()
        for route in self.table["routes"]:
            key = (route["path"], route["method"].lower())
            served.add(key)
            op = self.doc["paths"].get(route["path"], {}).get(route["method"].lower())
            if op is None:
                self.bad("%s %s" % (route["method"], route["path"]),
                         "served, but not in the document")
                continue
            self.route(route, op)
        for path, item in self.doc["paths"].items():
            for method, op in item.items():
                if method not in ("get", "post", "put", "patch", "delete"):
                    continue
                planned = op.get("x-workforce-status") == "planned"
                if (path, method) not in served and not planned:
                    self.bad("%s %s" % (method.upper(), path),
                             "in the document as built, but the server has no such route")
        codes = self.resolve(self.doc["components"]["schemas"]["ErrorCode"])
        table = [(e["code"], e["status"]) for e in self.table["errors"]]
        if codes.get("enum") != [c for c, _ in table]:
            self.bad("ErrorCode", "codes %s in the document, %s in the error table"
                     % (codes.get("enum"), [c for c, _ in table]))
        stated = dict((c, int(s)) for c, s in
                      re.findall(r"`([a-z_]+)` \((\d{3})\)", codes.get("description", "")))
        for code, status in table:
            if stated.get(code) != status:
                self.bad("ErrorCode", "%s is %s in the document, %s in the error table"
                         % (code, stated.get(code), status))
        return self.problems


def main():
    table, doc = load()
    problems = Checker(table, doc).run()
    for p in problems:
        print(p)
    print("routes: %d routes, %d error codes, %d disagreements"
          % (len(table["routes"]), len(table["errors"]), len(problems)))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
