#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""docs/openapi.json against what typed-client generators make of it with their default options
(openapi-typescript 7 + openapi-fetch; tests/http/test_typed_client.py compiles and runs such a
client). Fails, naming each place, when the document has a shape that generates a client a
`tsc --strict` program cannot use as written:

  - a property with a `default` in a request body's schema (openapi-typescript's
    defaultNonNullable makes it required: state the default in the description), or a property
    that is both `required` and has a `default` anywhere;
  - a 2xx answer declaring two media types where one is JSON (the data types as `T | string`);
  - `if`/`then`/`else` (generators ignore it: use `oneOf` told apart by a constant);
  - an object with neither properties nor `additionalProperties` (types as
    `Record<string, never>`, an object nothing can be read from);
  - a `multipart/form-data` part with `contentMediaType` and `type: string` (binary content has
    no `type` in OpenAPI 3.1; with one, a Blob cannot be passed).

Usage: check_client.py [DOCUMENT]. Exit 0 when none is found, 1 otherwise."""

import json
import sys

DOCUMENT = sys.argv[1] if len(sys.argv) > 1 else "docs/openapi.json"
METHODS = ("get", "put", "post", "delete", "patch", "head", "options", "trace")


def main():
    with open(DOCUMENT) as f:
        doc = json.load(f)
    problems = []

    def resolve(node):
        while isinstance(node, dict) and "$ref" in node:
            target = doc
            for part in node["$ref"].lstrip("#/").split("/"):
                target = target[part.replace("~1", "/").replace("~0", "~")]
            node = target
        return node

    def walk(node, where, seen, visit):
        """Every schema under 'node', following $refs to components once each."""
        if isinstance(node, dict):
            if "$ref" in node and isinstance(node["$ref"], str):
                if node["$ref"] in seen:
                    return
                seen.add(node["$ref"])
                walk(resolve(node), node["$ref"], seen, visit)
            visit(node, where)
            for k, v in node.items():
                if k in ("examples", "example", "$ref", "default", "const", "enum"):
                    continue
                if k in ("properties", "patternProperties", "$defs") and isinstance(v, dict):
                    for name, sub in v.items():  # a map of names, not a schema itself
                        walk(sub, "%s/%s/%s" % (where, k, name), seen, visit)
                else:
                    walk(v, "%s/%s" % (where, k), seen, visit)
        elif isinstance(node, list):
            for i, v in enumerate(node):
                walk(v, "%s/%d" % (where, i), seen, visit)

    def request_defaults(node, where):
        props = node.get("properties")
        if isinstance(props, dict) and node.get("type") != "null":
            for name, p in props.items():
                if isinstance(p, dict) and "default" in p:
                    problems.append("%s: request property %r has a `default` (typed clients "
                                    "make it required; state it in the description)"
                                    % (where, name))

    def everywhere(node, where):
        props = node.get("properties")
        if isinstance(props, dict):
            for name in node.get("required") or []:
                if isinstance(props.get(name), dict) and "default" in props[name]:
                    problems.append("%s: %r is required and has a `default`" % (where, name))
        if any(isinstance(node.get(k), (dict, bool)) for k in ("if", "then", "else")):
            problems.append("%s: `if`/`then`/`else` (ignored by generators; use `oneOf`)"
                            % where)
        if node.get("type") == "object" and not node.get("properties") \
                and "additionalProperties" not in node and "patternProperties" not in node \
                and not any(k in node for k in ("oneOf", "anyOf", "allOf")):
            problems.append("%s: an object with no properties and no additionalProperties "
                            "(types as Record<string, never>)" % where)

    for path, item in doc.get("paths", {}).items():
        for method, op in item.items():
            if method not in METHODS:
                continue
            where = "%s %s" % (method.upper(), path)
            body = resolve(op.get("requestBody") or {})
            for media, content in (body.get("content") or {}).items():
                walk(content.get("schema"), "%s request %s" % (where, media), set(),
                     request_defaults)
                if media.startswith("multipart/"):
                    schema = resolve(content.get("schema") or {})
                    for name, p in (schema.get("properties") or {}).items():
                        p = resolve(p)
                        if "contentMediaType" in p and p.get("type") == "string":
                            problems.append("%s: multipart part %r is binary "
                                            "(contentMediaType) but has `type: string`"
                                            % (where, name))
            for status, resp in (op.get("responses") or {}).items():
                media = list((resolve(resp).get("content") or {}).keys())
                if status.startswith("2") and len(media) > 1 and any(
                        m.split(";")[0].strip().endswith("json") for m in media):
                    problems.append("%s: %s declares %s: one media type per 2xx answer "
                                    "(the data would type as a union)"
                                    % (where, status, ", ".join(media)))
    walk(doc.get("paths"), "#/paths", set(), everywhere)
    walk(doc.get("components"), "#/components", set(), everywhere)

    problems = list(dict.fromkeys(problems))  # a schema reached twice is reported once
    for p in problems:
        print(p)
    print("typed-client shapes: %d problem(s)" % len(problems))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
