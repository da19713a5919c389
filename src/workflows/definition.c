/* SPDX-License-Identifier: MIT */
/*
 * definition.c: a workflow's trigger and steps checked whole (see workflow.h). Every failure
 * names its exact `param`; on success the canonical JSON of both is kept, which is what the
 * store holds and the API shows: absent optional members are made explicit (condition null,
 * options {}), so that a definition reads back exactly as it was accepted.
 */
#include "workflow.h"

#include "template.h"

#include "../integrations/providers.h"
#include "../core/utf8.h"

#include <stdio.h>
#include <string.h>

static const char *const trigger_names[] = {"manual", "webhook", "schedule", "integration"};

/* See workflow.h. */
const char *wf_trigger_name(enum wf_trigger t)
{
    return trigger_names[t];
}

/* The param of member 'k' of 'prefix', safe to show whatever bytes 'k' holds. */
static const char *member_param(char *buf, size_t cap, const char *prefix, const char *k)
{
    size_t len = strlen(k);
    snprintf(buf, cap, "%s.%.*s", prefix, (int)utf8_prefix(k, len, 60),
             utf8_valid(k, len) ? k : "?");
    return buf;
}

static int invalid(struct err *e, const char *param, const char *what)
{
    return err_set(e, ERR_INVALID, "invalid_request", param, "Invalid %s: %s.", param, what);
}

/* A string member of 1..max bytes of valid UTF-8 without NUL. */
static bool text_ok(json_t *v, size_t max)
{
    const char *s = json_string_value(v);
    size_t len = json_string_length(v);
    return s && len >= 1 && len <= max && strlen(s) == len && utf8_valid(s, len);
}

/* ---- Trigger ---- */

/* An integration event: "<provider>.<event>", the provider one of the five. */
static bool integration_event_ok(const char *ev)
{
    const char *dot = strchr(ev, '.');
    if (!dot || dot[1] == '\0')
        return false;
    for (const char *p = ev; *p; p++) {
        if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_' || *p == '.'))
            return false;
    }
    for (size_t i = 0; integ_provider_at(i); i++) {
        const char *id = integ_provider_at(i)->id;
        if (strlen(id) == (size_t)(dot - ev) && memcmp(id, ev, (size_t)(dot - ev)) == 0)
            return true;
    }
    return false;
}

static int parse_trigger(json_t *v, struct wf_def *d, struct err *e)
{
    json_t *type, *event, *rec, *canon;
    const char *k;
    json_t *m;
    char p[96];
    size_t t;
    int rc;

    if (!json_is_object(v))
        return invalid(e, "trigger", "must be an object with a type");
    json_object_foreach(v, k, m)
    {
        if (strcmp(k, "type") != 0 && strcmp(k, "event") != 0 && strcmp(k, "recurring") != 0)
            return err_set(e, ERR_INVALID, "invalid_request",
                           member_param(p, sizeof(p), "trigger", k), "Unknown parameter: %s.", p);
    }
    type = json_object_get(v, "type");
    event = json_object_get(v, "event");
    rec = json_object_get(v, "recurring");
    if (!type)
        return err_set(e, ERR_INVALID, "invalid_request", "trigger.type",
                       "Missing required parameter: trigger.type.");
    for (t = 0; t < 4; t++) {
        if (json_is_string(type) && strcmp(json_string_value(type), trigger_names[t]) == 0)
            break;
    }
    if (t == 4)
        return invalid(e, "trigger.type", "must be one of manual, webhook, schedule, integration");
    d->trigger = (enum wf_trigger)t;
    canon = json_object();
    d->trigger_json = canon;
    jo_str(canon, "type", trigger_names[t]);

    if (event && !json_is_null(event)) {
        if (d->trigger != WF_WEBHOOK && d->trigger != WF_INTEGRATION)
            return invalid(e, "trigger.event",
                           "only webhook and integration triggers name an event");
        if (!text_ok(event, WF_EVENT_MAX))
            return invalid(e, "trigger.event", "must be a string of 1 to 100 bytes");
        if (d->trigger == WF_INTEGRATION && !integration_event_ok(json_string_value(event)))
            return invalid(e, "trigger.event",
                           "must be <provider>.<event> with a provider of slack, "
                           "google_calendar, outlook, github, hubspot (e.g. "
                           "github.issues.opened)");
        jo_str(canon, "event", json_string_value(event));
        d->event = json_string_value(json_object_get(canon, "event"));
    } else if (d->trigger == WF_INTEGRATION) {
        return err_set(e, ERR_INVALID, "invalid_request", "trigger.event",
                       "Missing required parameter: trigger.event (integration triggers name "
                       "the event that starts them, e.g. github.issues.opened).");
    }

    if (rec && !json_is_null(rec)) {
        if (d->trigger != WF_SCHEDULE)
            return invalid(e, "trigger.recurring", "only schedule triggers take recurring");
        rc = sched_recurring_parse(rec, &d->recurring, e);
        if (rc) {
            /* The schedule's own params are "recurring..."; here they sit under trigger. */
            if (e) {
                char inner[sizeof(e->param)];
                snprintf(inner, sizeof(inner), "%s", e->param);
                snprintf(e->param, sizeof(e->param), "trigger.%.100s", inner);
                if (strncmp(e->msg, "Invalid recurring", 17) == 0) {
                    char msg[sizeof(e->msg)];
                    snprintf(msg, sizeof(msg), "%s", e->msg + 8);
                    snprintf(e->msg, sizeof(e->msg), "Invalid trigger.%.200s", msg);
                }
            }
            return rc;
        }
        jo_set(canon, "recurring", sched_recurring_json(&d->recurring));
    } else if (d->trigger == WF_SCHEDULE) {
        return err_set(e, ERR_INVALID, "invalid_request", "trigger.recurring",
                       "Missing required parameter: trigger.recurring (a schedule trigger runs "
                       "at each occurrence of it, in the tasks' recurring format).");
    }
    return 0;
}

/* ---- Steps ---- */

/* The members of a step, the first three required. */
static const char *const step_members[] = {"employee_id", "action",  "input",
                                           "condition",   "options", NULL};
#define STEP_ID_MAX 100 /* bytes of a step's employee_id and action */

static int parse_step(json_t *v, int i, struct wf_def *d, struct err *e)
{
    const char *const *members = step_members;
    struct wf_step *st = &d->steps[i];
    json_t *emp, *action, *input, *cond, *opts = NULL, *canon;
    char prefix[32], p[96];
    const char *k;
    json_t *m;
    int rc;

    snprintf(prefix, sizeof(prefix), "steps[%d]", i);
    if (!json_is_object(v))
        return invalid(e, prefix,
                       "must be an object {employee_id, action, input, condition?, "
                       "options?}");
    json_object_foreach(v, k, m)
    {
        size_t j = 0;
        while (members[j] && strcmp(members[j], k) != 0)
            j++;
        if (!members[j])
            return err_set(e, ERR_INVALID, "invalid_request", member_param(p, sizeof(p), prefix, k),
                           "Unknown parameter: %s.", p);
    }
    emp = json_object_get(v, "employee_id");
    action = json_object_get(v, "action");
    input = json_object_get(v, "input");
    cond = json_object_get(v, "condition");
    for (size_t j = 0; j < 3; j++) {
        json_t *req[] = {emp, action, input};
        if (!req[j]) {
            snprintf(p, sizeof(p), "%s.%s", prefix, members[j]);
            return err_set(e, ERR_INVALID, "invalid_request", p, "Missing required parameter: %s.",
                           p);
        }
    }
    snprintf(p, sizeof(p), "%s.employee_id", prefix);
    if (!text_ok(emp, STEP_ID_MAX))
        return invalid(e, p, "must be an employee id");
    st->employee_id = json_string_value(emp);

    snprintf(p, sizeof(p), "%s.action", prefix);
    if (!text_ok(action, STEP_ID_MAX))
        return invalid(e, p, "must be an action name");
    st->action = wf_action_find(json_string_value(action), json_string_length(action));
    if (!st->action)
        return err_set(e, ERR_INVALID, "invalid_request", p,
                       "Invalid %s: unknown action %.60s (one of respond, summarize, classify, "
                       "extract, draft_email, search_knowledge, create_task, slack.post_message, "
                       "github.create_issue, google_calendar.create_event, outlook.send_mail, "
                       "hubspot.create_note).",
                       p, json_string_value(action));

    snprintf(p, sizeof(p), "%s.input", prefix);
    if (!json_is_string(input) || strlen(json_string_value(input)) != json_string_length(input))
        return invalid(e, p, "must be a string (a template)");
    rc = tmpl_parse(json_string_value(input), json_string_length(input), i, p, &st->input, e);
    if (rc)
        return rc;

    if (cond && !json_is_null(cond)) {
        snprintf(p, sizeof(p), "%s.condition", prefix);
        if (!json_is_string(cond) || strlen(json_string_value(cond)) != json_string_length(cond))
            return invalid(e, p, "must be a string {{ expression }} or null");
        rc = tmpl_cond_parse(json_string_value(cond), json_string_length(cond), i, p,
                             &st->condition, e);
        if (rc)
            return rc;
    }

    rc = wf_action_check(st->action, json_object_get(v, "options"), i, st, &opts, e);
    if (rc)
        return rc;
    canon = json_object();
    jo_str(canon, "employee_id", st->employee_id);
    jo_str(canon, "action", st->action->name);
    jo_set(canon, "input", json_incref(input));
    jo_set(canon, "condition", cond ? json_incref(cond) : json_null());
    jo_set(canon, "options", opts);
    json_array_append_new(d->steps_json, canon);
    /* The strings now point into the canonical copy, which the definition owns. */
    st->employee_id = json_string_value(json_object_get(canon, "employee_id"));
    st->options = opts;
    return 0;
}

/* See workflow.h. */
int wf_def_parse(json_t *trigger, json_t *steps, struct wf_def *out, struct err *e)
{
    size_t n, i;
    json_t *v;
    int rc;

    memset(out, 0, sizeof(*out));
    rc = parse_trigger(trigger, out, e);
    if (rc)
        return rc;
    n = json_array_size(steps);
    if (!json_is_array(steps) || n < 1 || n > WF_MAX_STEPS)
        return invalid(e, "steps", "must be an array of 1 to 20 steps");
    out->steps_json = json_array();
    json_array_foreach(steps, i, v)
    {
        rc = parse_step(v, (int)i, out, e);
        out->nsteps = i + 1; /* cleaned up whatever happened */
        if (rc)
            return rc;
    }
    return 0;
}

/* ---- Schemas: what parse_trigger() and parse_step() accept ---- */

/* See workflow.h. Which members a type takes is in the trigger's description (the rules of
 * parse_trigger() above). */
json_t *wf_trigger_schema(void)
{
    json_t *types = json_array();
    for (size_t i = 0; i < sizeof(trigger_names) / sizeof(trigger_names[0]); i++)
        json_array_append_new(types, json_string(trigger_names[i]));
    return json_pack("{s:s,s:{s:{s:s,s:o},s:{s:s,s:i,s:i},s:o},s:[s],s:b}", "type", "object",
                     "properties", "type", "type", "string", "enum", types, "event", "type",
                     "string", "minLength", 1, "maxLength", WF_EVENT_MAX, "recurring",
                     sched_recurring_schema(), "required", "type", "additionalProperties", 0);
}

/* See workflow.h. A step's options are those of its action (wf_action_options_schema()). */
json_t *wf_steps_schema(void)
{
    json_t *actions = json_array(), *req = json_array(), *step;
    size_t n = 0;
    const struct wf_action *all = wf_actions(&n);

    for (size_t i = 0; i < n; i++)
        json_array_append_new(actions, json_string(all[i].name));
    for (size_t i = 0; i < 3; i++)
        json_array_append_new(req, json_string(step_members[i]));
    step = json_pack("{s:s,s:{s:{s:s,s:i,s:i},s:{s:s,s:o},s:{s:s},s:{s:[s,s]},s:{s:s}},s:o,s:b}",
                     "type", "object", "properties", "employee_id", "type", "string", "minLength",
                     1, "maxLength", STEP_ID_MAX, "action", "type", "string", "enum", actions,
                     "input", "type", "string", "condition", "type", "string", "null", "options",
                     "type", "object", "required", req, "additionalProperties", 0);
    return json_pack("{s:s,s:o,s:i,s:i}", "type", "array", "items", step, "minItems", 1, "maxItems",
                     WF_MAX_STEPS);
}

/* See workflow.h. */
void wf_def_cleanup(struct wf_def *d)
{
    for (size_t i = 0; i < d->nsteps; i++) {
        tmpl_free(d->steps[i].input);
        tmpl_free(d->steps[i].condition);
        for (size_t j = 0; j < d->steps[i].nopts; j++)
            tmpl_free(d->steps[i].opts[j].t);
    }
    json_decref(d->trigger_json);
    json_decref(d->steps_json);
    memset(d, 0, sizeof(*d));
}
