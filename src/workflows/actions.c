/* SPDX-License-Identifier: MIT */
/*
 * actions.c: THE table of workflow actions (contract §12): each action's name, its options
 * and their bounds, the shape of its output, and what a language model is asked to do. The
 * options are checked by walking the table (wf_action_check), so an action is added by adding
 * a row, not code. How the built-in engine does each action lives with the runner.
 */
#include "workflow.h"

#include "template.h"

#include "../tasks/task.h"

#include "../core/mem.h"
#include "../core/utf8.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static const char *const field_types[] = {"string", "number", "boolean", "date",
                                          "email",  "url",    "phone",   NULL};

#define END                                                                                        \
    {                                                                                              \
        NULL, WF_OPT_INT, false, 0, 0, NULL                                                        \
    }

static const struct wf_option no_options[] = {END};
static const struct wf_option summarize_options[] = {
    {"max_sentences", WF_OPT_INT, false, 1, 20, NULL}, END};
static const struct wf_option classify_options[] = {{"labels", WF_OPT_LABELS, true, 2, 50, NULL},
                                                    END};
static const struct wf_option extract_options[] = {{"fields", WF_OPT_FIELDS, true, 1, 50, NULL},
                                                   END};
static const struct wf_option draft_options[] = {
    {"to", WF_OPT_TEXT, false, 1, WF_TEXT_OPTION_MAX, NULL},
    {"tone", WF_OPT_TEXT, false, 1, 100, NULL},
    END};
static const struct wf_option search_options[] = {
    {"limit", WF_OPT_INT, false, 1, 50, NULL}, {"tags", WF_OPT_TAGS, false, 1, 50, NULL}, END};
static const struct wf_option task_options[] = {
    {"title", WF_OPT_TEXT, false, 1, 200, NULL},
    {"priority", WF_OPT_ENUM, false, 0, 0, task_priorities},
    {"due_in_hours", WF_OPT_NUMBER, false, 0, 8760, NULL},
    END};

static const struct wf_option slack_options[] = {{"channel", WF_OPT_TEXT, true, 1, 200, NULL}, END};
static const struct wf_option github_options[] = {{"repo", WF_OPT_TEXT, true, 3, 200, NULL}, END};
static const struct wf_option calendar_options[] = {
    {"calendar_id", WF_OPT_TEXT, false, 1, 500, NULL}, END};
static const struct wf_option mail_options[] = {
    {"to", WF_OPT_TEXT, true, 3, WF_TEXT_OPTION_MAX, NULL},
    {"subject", WF_OPT_TEXT, true, 1, 500, NULL},
    END};
static const struct wf_option note_options[] = {{"contact_email", WF_OPT_TEXT, false, 3, 320, NULL},
                                                END};

static const struct wf_action actions[] = {
    {"respond", WF_ACT_RESPOND, no_options, "string: the employee's answer to the input",
     "Answer the input as this employee would, drawing on the knowledge given.", false},
    {"summarize", WF_ACT_SUMMARIZE, summarize_options, "string: a summary of the input",
     "Summarize the input in at most max_sentences sentences (default 3). Answer with the "
     "summary only.",
     false},
    {"classify", WF_ACT_CLASSIFY, classify_options,
     "{label, score}: the best label's name and a score in [0, 1]",
     "Classify the input into exactly one of the labels. Answer with a JSON object "
     "{\"label\": <one label name, exactly as given>, \"score\": <confidence from 0 to 1>}.",
     true},
    {"extract", WF_ACT_EXTRACT, extract_options,
     "object: every field, null where the input does not hold it",
     "Extract the fields from the input. Answer with a JSON object holding every field; use "
     "null for a field the input does not state. Never invent a value.",
     true},
    {"draft_email", WF_ACT_DRAFT_EMAIL, draft_options, "{subject, body}: an email ready to send",
     "Draft an email from the input. Answer with a JSON object {\"subject\": ..., \"body\": "
     "...}.",
     true},
    {"search_knowledge", WF_ACT_SEARCH_KNOWLEDGE, search_options,
     "{results: [...]}: as POST /v1/knowledge/query, with the employee's access rule", NULL, true},
    {"create_task", WF_ACT_CREATE_TASK, task_options, "the created task record", NULL, true},
    {"slack.post_message", WF_ACT_INTEGRATION, slack_options,
     "{id, url}: the message's ts, and no url (the input is the text)", NULL, true},
    {"github.create_issue", WF_ACT_INTEGRATION, github_options,
     "{id, url}: the issue (the input's first line is the title, the rest the body)", NULL, true},
    {"google_calendar.create_event", WF_ACT_INTEGRATION, calendar_options,
     "{id, url}: the event (the input is JSON {summary, start, end, description?})", NULL, true},
    {"outlook.send_mail", WF_ACT_INTEGRATION, mail_options,
     "{id, url}: the request id of the sent mail, no url (the input is the body)", NULL, true},
    {"hubspot.create_note", WF_ACT_INTEGRATION, note_options,
     "{id, url}: the note, no url (the input is the note)", NULL, true},
};

#define NACTIONS (sizeof(actions) / sizeof(actions[0]))

/* See workflow.h. */
const struct wf_action *wf_action_find(const char *name, size_t len)
{
    for (size_t i = 0; i < NACTIONS; i++) {
        if (strlen(actions[i].name) == len && memcmp(actions[i].name, name, len) == 0)
            return &actions[i];
    }
    return NULL;
}

/* See workflow.h. */
const struct wf_action *wf_actions(size_t *n)
{
    *n = NACTIONS;
    return actions;
}

/* ---- Checking options ---- */

/* A string of 1..max bytes of valid UTF-8 without NUL. */
static bool good_text(json_t *v, size_t max)
{
    const char *s = json_string_value(v);
    size_t len = json_string_length(v);
    return s && len >= 1 && len <= max && strlen(s) == len && utf8_valid(s, len);
}

static bool one_of(const char *v, const char *const *list)
{
    for (size_t i = 0; v && list[i]; i++) {
        if (strcmp(v, list[i]) == 0)
            return true;
    }
    return false;
}

static int bad(struct err *e, const char *param, const char *what)
{
    return err_set(e, ERR_INVALID, "invalid_request", param, "Invalid %s: %s.", param, what);
}

static int check_labels(json_t *v, const struct wf_option *o, const char *param, struct err *e)
{
    char p[192];
    size_t i, n = json_array_size(v);
    json_t *l;

    if (!json_is_array(v) || n < (size_t)o->min || n > (size_t)o->max)
        return bad(e, param, "must be an array of 2 to 50 labels");
    json_array_foreach(v, i, l)
    {
        json_t *name = l;
        snprintf(p, sizeof(p), "%s[%zu]", param, i);
        if (json_is_object(l)) {
            const char *k;
            json_t *m;
            json_object_foreach(l, k, m)
            {
                if (strcmp(k, "name") != 0 && strcmp(k, "description") != 0) {
                    char q[256];
                    snprintf(q, sizeof(q), "%s.%.40s", p, utf8_valid(k, strlen(k)) ? k : "?");
                    return bad(e, q, "unknown member (a label takes name and description)");
                }
            }
            name = json_object_get(l, "name");
            m = json_object_get(l, "description");
            if (m && !good_text(m, WF_LABEL_DESC_MAX)) {
                char q[256];
                snprintf(q, sizeof(q), "%s.description", p);
                return bad(e, q, "must be a string of 1 to 1000 bytes");
            }
            if (!name) {
                char q[256];
                snprintf(q, sizeof(q), "%s.name", p);
                return bad(e, q, "is required");
            }
            snprintf(p, sizeof(p), "%s[%zu].name", param, i);
        }
        if (!good_text(name, WF_LABEL_MAX))
            return bad(e, p, "a label name must be a string of 1 to 200 bytes");
        /* Names are what the output names: two alike could not be told apart. */
        for (size_t j = 0; j < i; j++) {
            json_t *prev = json_array_get(v, j);
            if (json_is_object(prev))
                prev = json_object_get(prev, "name");
            if (json_equal(prev, name))
                return bad(e, p, "repeats an earlier label's name");
        }
    }
    return 0;
}

static int check_fields(json_t *v, const struct wf_option *o, const char *param, struct err *e)
{
    const char *k;
    json_t *t;
    size_t n = json_object_size(v);

    if (!json_is_object(v) || n < (size_t)o->min || n > (size_t)o->max)
        return bad(e, param, "must be an object of 1 to 50 fields ({\"name\": \"type\"})");
    json_object_foreach(v, k, t)
    {
        char p[224];
        size_t klen = strlen(k);
        bool name_ok = klen >= 1 && klen <= WF_FIELD_NAME_MAX && utf8_valid(k, klen);
        snprintf(p, sizeof(p), "%s.%.64s", param, name_ok ? k : "?");
        if (!name_ok)
            return bad(e, param, "field names must be 1 to 64 bytes of text");
        if (!json_is_string(t) || !one_of(json_string_value(t), field_types))
            return bad(e, p, "must be one of string, number, boolean, date, email, url, phone");
    }
    return 0;
}

static int check_one(const struct wf_option *o, json_t *v, const char *param, int step,
                     struct wf_step *st, struct err *e)
{
    char buf[96];
    int rc;

    switch (o->type) {
    case WF_OPT_INT: {
        json_int_t x = json_integer_value(v);
        if (!json_is_integer(v) || x < (json_int_t)o->min || x > (json_int_t)o->max) {
            snprintf(buf, sizeof(buf), "must be an integer from %.0f to %.0f", o->min, o->max);
            return bad(e, param, buf);
        }
        return 0;
    }
    case WF_OPT_NUMBER: {
        double x = json_number_value(v);
        if (!json_is_number(v) || !isfinite(x) || x <= o->min || x > o->max) {
            snprintf(buf, sizeof(buf), "must be a number above %.0f and at most %.0f", o->min,
                     o->max);
            return bad(e, param, buf);
        }
        return 0;
    }
    case WF_OPT_ENUM:
        if (!json_is_string(v) || !one_of(json_string_value(v), o->values))
            return bad(e, param, "must be one of low, medium, high, urgent");
        return 0;
    case WF_OPT_TEXT:
        if (!good_text(v, (size_t)o->max)) {
            snprintf(buf, sizeof(buf), "must be a string of 1 to %.0f bytes", o->max);
            return bad(e, param, buf);
        }
        if (st->nopts >= sizeof(st->opts) / sizeof(st->opts[0]))
            return err_set(e, ERR_INTERNAL, "internal_error", NULL, "too many text options");
        rc = tmpl_parse(json_string_value(v), json_string_length(v), step, param,
                        &st->opts[st->nopts].t, e);
        if (rc)
            return rc;
        st->opts[st->nopts++].name = o->name;
        return 0;
    case WF_OPT_TAGS: {
        size_t i, n = json_array_size(v);
        json_t *t;
        if (!json_is_array(v) || n < 1 || n > 50)
            return bad(e, param, "must be an array of 1 to 50 tags");
        json_array_foreach(v, i, t)
        {
            if (!good_text(t, WF_TAG_MAX)) {
                char p[192];
                snprintf(p, sizeof(p), "%s[%zu]", param, i);
                return bad(e, p, "a tag must be a string of 1 to 100 bytes");
            }
        }
        return 0;
    }
    case WF_OPT_LABELS:
        return check_labels(v, o, param, e);
    case WF_OPT_FIELDS:
        return check_fields(v, o, param, e);
    }
    return err_set(e, ERR_INTERNAL, "internal_error", NULL, "unknown option type");
}

/* ---- The options' schema ---- */

/* {"type": 'type', 'lo_key': lo, 'hi_key': hi} (a new object). */
static json_t *bounded(const char *type, const char *lo_key, double lo, const char *hi_key,
                       double hi)
{
    json_t *o = json_pack("{s:s}", "type", type);
    json_object_set_new(o, lo_key, jo_number(lo));
    json_object_set_new(o, hi_key, jo_number(hi));
    return o;
}

/* The JSON Schema of option 'o' (a new object): what check_one() accepts. */
static json_t *option_schema(const struct wf_option *o)
{
    json_t *s;

    switch (o->type) {
    case WF_OPT_INT:
        return bounded("integer", "minimum", o->min, "maximum", o->max);
    case WF_OPT_NUMBER:
        return bounded("number", "exclusiveMinimum", o->min, "maximum", o->max);
    case WF_OPT_ENUM:
        return json_pack("{s:s,s:o}", "type", "string", "enum", jb_values_json(o->values));
    case WF_OPT_TEXT:
        return bounded("string", "minLength", o->min, "maxLength", o->max);
    case WF_OPT_TAGS:
        s = bounded("array", "minItems", 1, "maxItems", 50);
        json_object_set_new(s, "items", bounded("string", "minLength", 1, "maxLength", WF_TAG_MAX));
        return s;
    case WF_OPT_LABELS:
        s = bounded("array", "minItems", o->min, "maxItems", o->max);
        json_object_set_new(
            s, "items",
            json_pack("{s:[o,{s:s,s:{s:o,s:o},s:[s],s:b}]}", "oneOf",
                      bounded("string", "minLength", 1, "maxLength", WF_LABEL_MAX), "type",
                      "object", "properties", "name",
                      bounded("string", "minLength", 1, "maxLength", WF_LABEL_MAX), "description",
                      bounded("string", "minLength", 1, "maxLength", WF_LABEL_DESC_MAX), "required",
                      "name", "additionalProperties", 0));
        return s;
    case WF_OPT_FIELDS:
        s = bounded("object", "minProperties", o->min, "maxProperties", o->max);
        json_object_set_new(s, "propertyNames",
                            json_pack("{s:i,s:i}", "minLength", 1, "maxLength", WF_FIELD_NAME_MAX));
        json_object_set_new(
            s, "additionalProperties",
            json_pack("{s:s,s:o}", "type", "string", "enum", jb_values_json(field_types)));
        return s;
    }
    return json_object();
}

/* See workflow.h. */
json_t *wf_action_options_schema(const struct wf_action *act)
{
    json_t *props = json_object(), *req = json_array();
    for (const struct wf_option *o = act->options; o->name; o++) {
        json_object_set_new(props, o->name, option_schema(o));
        if (o->required)
            json_array_append_new(req, json_string(o->name));
    }
    return json_pack("{s:s,s:o,s:o,s:b}", "type", "object", "properties", props, "required", req,
                     "additionalProperties", 0);
}

/* See workflow.h. */
int wf_action_check(const struct wf_action *act, json_t *options, int step, struct wf_step *st,
                    json_t **out, struct err *e)
{
    char param[128];
    const char *k;
    json_t *v;
    int rc;

    *out = NULL;
    if (options && !json_is_null(options) && !json_is_object(options)) {
        snprintf(param, sizeof(param), "steps[%d].options", step);
        return bad(e, param, "must be an object");
    }
    if (!options || json_is_null(options))
        options = NULL;
    json_object_foreach(options, k, v)
    {
        const struct wf_option *o = act->options;
        while (o->name && strcmp(o->name, k) != 0)
            o++;
        snprintf(param, sizeof(param), "steps[%d].options.%.60s", step,
                 utf8_valid(k, strlen(k)) ? k : "?");
        if (!o->name)
            return err_set(e, ERR_INVALID, "invalid_request", param,
                           "Unknown parameter: %s (the action %s takes %s).", param, act->name,
                           act->options[0].name ? "other options" : "no options");
        rc = check_one(o, v, param, step, st, e);
        if (rc)
            return rc;
    }
    for (const struct wf_option *o = act->options; o->name; o++) {
        if (o->required && !json_object_get(options, o->name)) {
            snprintf(param, sizeof(param), "steps[%d].options.%s", step, o->name);
            return err_set(e, ERR_INVALID, "invalid_request", param,
                           "Missing required parameter: %s (the action %s needs it).", param,
                           act->name);
        }
    }
    *out = options ? json_deep_copy(options) : json_object();
    return 0;
}
