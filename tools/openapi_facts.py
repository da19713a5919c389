# SPDX-License-Identifier: MIT
"""The facts of the OpenAPI document that the C holds, applied to it (for tools/gen_openapi.py).

docs/api-facts.json (`workforce describe`, kept by tools/gen_api_facts.py) holds every fact of
the API that the C code holds. tools/gen_openapi.py writes the prose (descriptions, examples,
the order of things) and calls apply(), which makes every fact the C holds the C's:

  - each request body is the C's JSON Schema (members, types, lengths, ranges, counts, enums,
    patterns, nullability, required members, no others), its nested objects included; the
    descriptions and examples written in gen_openapi.py are kept by member name, and the nested
    shapes the document names (Recurring, WorkflowTrigger, WorkflowStep) become those
    components, rendered from the C the same way;
  - a workflow step's options are the union of the options of every action of the C's table;
  - the query parameters of each operation are exactly the route's, and the page sizes and
    enumerations take the C's schema (default, range, values);
  - the generator stops when the document has an operation, a member or a query parameter
    the C does not, or when a request schema written in gen_openapi.py states a rule (type,
    limit, values, required) of a member whose rules the C holds: it must be prose only.

Standard library only; deterministic.
"""

import copy
import json

# Keywords of a schema that state what is accepted: the C's alone.
STRUCTURE = {"type", "properties", "required", "additionalProperties", "minLength", "maxLength",
             "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "enum", "const",
             "pattern", "items", "minItems", "maxItems", "uniqueItems", "minProperties",
             "maxProperties", "propertyNames", "oneOf", "anyOf", "allOf", "$ref", "default"}

# Keywords that restate a fact of the C when written by hand in a request schema.
RESTATED = STRUCTURE - {"$ref", "allOf", "anyOf", "oneOf", "properties", "items"}
STRICT = True
PROBLEMS = []

# The nested shapes the C names (describe.c "schemas") and the components they become.
NAMED = {"Recurring": "Recurring", "WorkflowTrigger": "WorkflowTrigger"}


class FactError(SystemExit):
    pass


def _resolve(doc, node):
    while isinstance(node, dict) and "$ref" in node:
        name = node["$ref"].split("/")[-1]
        node = doc["components"]["schemas"][name]
    return node


def _unwrap(doc, p, through_ref=False):
    """The prose keywords of hand-written schema 'p' and the node that holds its members:
    through a one-branch allOf and an anyOf/oneOf of one branch and null, and through $ref
    (whose target's prose is its component's, not this node's, unless 'through_ref')."""
    prose = {}
    seen = 0
    collect = True
    while isinstance(p, dict) and seen < 10:
        seen += 1
        for k, v in p.items():
            if collect and k not in STRUCTURE and k not in prose:
                prose[k] = v
        if "$ref" in p:
            collect = through_ref
            p = _resolve(doc, {"$ref": p["$ref"]})
            continue
        if "allOf" in p and len(p["allOf"]) == 1:
            p = p["allOf"][0]
            continue
        for key in ("anyOf", "oneOf"):
            if key in p:
                branches = [b for b in p[key] if b != {"type": "null"}]
                if len(branches) == 1:
                    p = branches[0]
                    break
        else:
            break
    return prose, p if isinstance(p, dict) else {}


def _free_form(c):
    """Whether the C states nothing of a value but (maybe) its type: a member its code checks
    by hand (the OpenAI door's options, a chat's context, a run's input)."""
    return not (set(c) - {"type"})


def render(doc, c, hand, where, top=False):
    """The schema 'c' (the C's) with the prose of the hand-written schema 'hand' (may be None).
    A member the hand-written schema has and the C's does not is an error. Where the C states
    nothing but a type, the hand-written shape is kept (its type must be the C's)."""
    prose, node = _unwrap(doc, hand, through_ref=top) if hand else ({}, {})
    if hand and _free_form(c) and (set(node) & STRUCTURE):
        kept = copy.deepcopy(hand)
        ctype = c.get("type")
        htype = node.get("type")
        if ctype and htype and ctype != htype and not (isinstance(htype, list) and
                                                        set(htype) >= set([ctype] if
                                                                         isinstance(ctype, str)
                                                                         else ctype)):
            raise FactError("gen_openapi: %s: the document says type %s, the C %s"
                            % (where, htype, ctype))
        return kept
    stated = sorted(set(node) & RESTATED) if hand else []
    if stated and STRICT:
        PROBLEMS.append("%s: %s" % (where, ", ".join(stated)))
    out = {k: copy.deepcopy(v) for k, v in prose.items()}
    for k, v in c.items():
        if k == "properties":
            hand_props = node.get("properties", {})
            extra = sorted(set(hand_props) - set(v))
            if extra:
                raise FactError("gen_openapi: %s: the document has %s, which the C does not "
                                "take" % (where, ", ".join(extra)))
            out["properties"] = {name: render(doc, sub, hand_props.get(name),
                                              "%s.%s" % (where, name))
                                 for name, sub in v.items()}
        elif k == "items" and isinstance(v, dict):
            out["items"] = render(doc, v, node.get("items"), where + "[]")
        elif k == "oneOf":
            out["oneOf"] = [copy.deepcopy(b) for b in v]
        elif k == "required" and not v:
            continue
        else:
            out[k] = copy.deepcopy(v)
    return out


def _strip_prose(s):
    """'s' without prose, to compare shapes (an enum's values as a set)."""
    if isinstance(s, dict):
        out = {k: _strip_prose(v) for k, v in s.items()
               if k in STRUCTURE or k in ("properties",)}
        if isinstance(out.get("enum"), list):
            out["enum"] = sorted(out["enum"], key=json.dumps)
        return out
    if isinstance(s, list):
        return [_strip_prose(v) for v in s]
    return s


def _enum_components(doc, facts):
    """The enum components of the document whose values are a C vocabulary: a request
    member with those values becomes a reference to it."""
    v = facts["vocabularies"]
    out = {}
    for comp, values in (("EmployeeCategory", v["employee_categories"]),
                         ("TaskPriority", v["task_priorities"]), ("Provider", v["providers"]),
                         ("EventType", v["event_types"]), ("Scope", v["scopes"])):
        if comp in doc["components"]["schemas"]:
            out[comp] = {"type": "string", "enum": values}
    return out


def _name_nested(node, named):
    """'node' (rendered) with every nested object whose shape is a named C shape replaced by a
    reference to its component (the component keeps the prose; a description stays here)."""
    if not isinstance(node, dict):
        return node
    t = node.get("type")
    nullable = isinstance(t, list) and "null" in t
    cand = dict(node)
    if nullable:
        cand["type"] = [x for x in t if x != "null"][0]
    for comp, shape in named.items():
        if _strip_prose(cand) == _strip_prose(shape):
            ref = {"$ref": "#/components/schemas/" + comp}
            out = {"anyOf": [ref, {"type": "null"}]} if nullable else \
                ({"allOf": [ref]} if "description" in node else ref)
            if "description" in node:
                out["description"] = node["description"]
            return out
    if isinstance(node.get("properties"), dict):
        node["properties"] = {k: _name_nested(v, named) for k, v in node["properties"].items()}
    if isinstance(node.get("items"), dict):
        node["items"] = _name_nested(node["items"], named)
    return node


def _replace_equal(node, old, new):
    """'node' with every sub-schema equal to 'old' replaced by a copy of 'new'."""
    if node == old:
        return copy.deepcopy(new)
    if isinstance(node, dict):
        return {k: _replace_equal(v, old, new) for k, v in node.items()}
    if isinstance(node, list):
        return [_replace_equal(v, old, new) for v in node]
    return node


def _options_union(actions):
    """The options of every action as one object schema: an option several actions take with
    different rules is anyOf them."""
    props, order = {}, []
    for a in actions:
        for name, s in a["options"]["properties"].items():
            if name not in props:
                props[name] = []
                order.append(name)
            if s not in props[name]:
                props[name].append(s)
    out = {}
    for name in order:
        variants = props[name]
        out[name] = variants[0] if len(variants) == 1 else {"anyOf": variants}
    return {"type": "object", "additionalProperties": False, "properties": out}


def _named_components(doc, orig, facts):
    """Render the components of the named shapes from the C, with their prose ('orig': the
    document as gen_openapi.py wrote it)."""
    schemas = doc["components"]["schemas"]
    hand = orig["components"]["schemas"]
    step_c = copy.deepcopy(facts["schemas"]["WorkflowSteps"]["items"])
    step_c["properties"]["options"] = _options_union(facts["actions"])
    for key, comp in NAMED.items():
        schemas[comp] = render(orig, facts["schemas"][key], hand.get(comp), comp, top=True)
    schemas["WorkflowStep"] = render(orig, step_c, hand.get("WorkflowStep"), "WorkflowStep",
                                     top=True)
    # inside the trigger, the recurrence is the Recurring component
    trig = schemas["WorkflowTrigger"]["properties"]
    trig["recurring"] = _name_nested(trig["recurring"], {"Recurring": facts["schemas"]["Recurring"]})
    named = {comp: facts["schemas"][key] for key, comp in NAMED.items()}
    named["WorkflowStep"] = step_c
    return named, step_c


def _apply_body(doc, orig, op, route, named, done):
    """The request body of 'op' rendered from the route's C schema; a component shared by
    several routes must come out the same for each ('done': name -> rendered)."""
    content = op.get("requestBody", {}).get("content", {}).get("application/json")
    where = "%s %s" % (route["method"], route["path"])
    if not content:
        return
    hand = content["schema"]
    rendered = _name_nested(render(orig, route["body_schema"], hand, where, top=True), named)
    if "$ref" not in hand:
        content["schema"] = rendered
        return
    name = hand["$ref"].split("/")[-1]
    if name in done and done[name] != rendered:
        raise FactError("gen_openapi: %s: component %s is the body of routes the C binds "
                        "differently" % (where, name))
    done[name] = rendered
    doc["components"]["schemas"][name] = rendered


def _param(doc, p):
    while "$ref" in p:
        p = doc["components"]["parameters"][p["$ref"].split("/")[-1]]
    return p


def _apply_query(doc, op, route):
    where = "%s %s" % (route["method"], route["path"])
    params = op.get("parameters", [])
    have = {}
    for i, p in enumerate(params):
        q = _param(doc, p)
        if q.get("in") == "query":
            have[q["name"]] = i
    want = {q["name"]: q for q in route["query"]}
    extra = sorted(set(have) - set(want))
    missing = sorted(set(want) - set(have))
    if extra or missing:
        raise FactError("gen_openapi: %s: query parameters %s are not the route's (extra %s, "
                        "missing %s)" % (where, sorted(have), extra, missing))
    for name, i in have.items():
        q = want[name]
        if q["kind"] not in ("limit", "enum"):
            continue
        p = _param(doc, params[i])
        hand = p.get("schema", {})
        if _strip_prose(_resolve(doc, hand)) == _strip_prose(q["schema"]):
            continue  # the document says what the C says (maybe through a component)
        prose = {k: v for k, v in hand.items() if k not in STRUCTURE}
        schema = dict(prose, **q["schema"])
        if p.get("schema") == schema:
            continue
        inline = copy.deepcopy(p)
        inline["schema"] = schema
        params[i] = inline


def _limit_text(text, schema):
    """A page size's description with @range and @max written from its C schema."""
    return text.replace("@range", "%d..%d, default %d" % (schema["minimum"], schema["maximum"],
                                                        schema["default"])) \
        .replace("@max", "%d" % schema["maximum"])


def _fill_limits(doc, facts):
    """Every page size's description, in components and operations, from its C schema."""
    for route in facts["routes"]:
        op = doc["paths"][route["path"]][route["method"].lower()]
        for q in route["query"]:
            if q["kind"] != "limit":
                continue
            for i, p in enumerate(op.get("parameters", [])):
                target = _param(doc, p)
                if target.get("name") == "limit" and "@range" in target.get("description", ""):
                    if "$ref" in p:
                        target["description"] = _limit_text(target["description"],
                                                            _resolve(doc, target["schema"]))
                    else:
                        p["description"] = _limit_text(p["description"], q["schema"])


def apply(doc, facts):
    """Make every fact of 'doc' that the C holds the C's (see the top)."""
    orig = copy.deepcopy(doc)
    named, step_c = _named_components(doc, orig, facts)
    named.update(_enum_components(doc, facts))
    step_bare = facts["schemas"]["WorkflowSteps"]["items"]
    done = {}
    for route in facts["routes"]:
        item = doc["paths"].get(route["path"], {})
        op = item.get(route["method"].lower())
        if op is None:
            raise FactError("gen_openapi: the document has no %s %s" % (route["method"],
                                                                        route["path"]))
        if route["body_schema"]:
            # a step's options are its action's: the union of the actions' table
            route = dict(route, body_schema=_replace_equal(route["body_schema"], step_bare,
                                                           step_c))
            _apply_body(doc, orig, op, route, named, done)
        _apply_query(doc, op, route)
    _fill_limits(doc, facts)
    if PROBLEMS:
        raise FactError("gen_openapi: request schemas restate what the C holds (write only "
                        "prose there, with P and PO):\n  " + "\n  ".join(PROBLEMS))
    used = json.dumps(doc["paths"])
    for name in list(doc["components"].get("parameters", {})):
        if '"#/components/parameters/%s"' % name not in used:
            del doc["components"]["parameters"][name]
