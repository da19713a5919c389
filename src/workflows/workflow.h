/* SPDX-License-Identifier: MIT */
/*
 * workflow: the definition of a workflow (contract §12), checked whole: the trigger, 1 to 20
 * steps, each step's action with its options (one table, actions.c), its input template and
 * its condition (template.c). One parser serves the API (create, PATCH) and the runner (the
 * stored definition read back), so a definition that was accepted always reads back the same.
 *
 * Pure: no store, no I/O. Whether each step's employee exists and may be employed is the
 * caller's check (it needs the store); wf_def_parse() only checks its shape.
 */
#ifndef WORKFORCE_WORKFLOWS_WORKFLOW_H
#define WORKFORCE_WORKFLOWS_WORKFLOW_H

#include "../core/err.h"
#include "../json/json.h"
#include "../tasks/schedule.h"

#include <stdbool.h>
#include <stddef.h>

#define WF_MAX_STEPS 20
#define WF_NAME_MAX 200
#define WF_DESCRIPTION_MAX 2000
#define WF_EVENT_MAX 100
#define WF_TEXT_OPTION_MAX 2000 /* a string option (to, tone, title) */
#define WF_LABEL_MAX 200        /* bytes of a classify label's name */
#define WF_LABEL_DESC_MAX 1000  /* bytes of a classify label's description */
#define WF_FIELD_NAME_MAX 64    /* bytes of an extract field's name */
#define WF_TAG_MAX 100          /* bytes of a search_knowledge tag */

enum wf_trigger { WF_MANUAL, WF_WEBHOOK, WF_SCHEDULE, WF_INTEGRATION };

struct tmpl;
struct wf_action;

/* The templates of one string option of a step (create_task.title, draft_email.to ...). */
struct wf_option_tmpl {
    const char *name;
    struct tmpl *t;
};

struct wf_step {
    const char *employee_id; /* borrowed from the definition's JSON */
    const struct wf_action *action;
    struct tmpl *input;
    struct tmpl *condition; /* NULL: the step always runs */
    json_t *options;        /* borrowed: the canonical options object ({} when none) */
    struct wf_option_tmpl opts[4];
    size_t nopts;
};

/* A checked definition. Every member is owned by it: wf_def_cleanup() frees them. */
struct wf_def {
    enum wf_trigger trigger;
    const char *event;                /* webhook (optional) and integration triggers */
    struct sched_recurring recurring; /* schedule triggers */
    size_t nsteps;
    struct wf_step steps[WF_MAX_STEPS];
    json_t *trigger_json; /* canonical: {type, event?, recurring?} */
    json_t *steps_json;   /* canonical: [{employee_id, action, input, condition, options}] */
};

/* The name of a trigger type ("webhook"). */
const char *wf_trigger_name(enum wf_trigger t);

/*
 * Check the 'trigger' object and the 'steps' array (borrowed) into '*out', which the caller
 * cleans up whatever the result. 0, or ERR_INVALID with the exact `param` ("trigger.type",
 * "steps[2].condition", "steps[1].options.labels[3]").
 */
int wf_def_parse(json_t *trigger, json_t *steps, struct wf_def *out, struct err *e);

/* Free what wf_def_parse() left in 'd' (also after a failure); 'd' is empty again. */
void wf_def_cleanup(struct wf_def *d);

/* ---- Actions (actions.c) ---- */

/* How an action is done; the runner's executors dispatch on it. */
enum wf_action_kind {
    WF_ACT_RESPOND,
    WF_ACT_SUMMARIZE,
    WF_ACT_CLASSIFY,
    WF_ACT_EXTRACT,
    WF_ACT_DRAFT_EMAIL,
    WF_ACT_SEARCH_KNOWLEDGE,
    WF_ACT_CREATE_TASK,
    WF_ACT_INTEGRATION /* <provider>.<operation>: integrations/operations.c */
};

/* What an option of an action takes. */
enum wf_opt_type {
    WF_OPT_INT,    /* integer in [min, max] */
    WF_OPT_TEXT,   /* string of 1..max bytes; may hold {{ }} templates */
    WF_OPT_ENUM,   /* one of 'values' */
    WF_OPT_TAGS,   /* array of 1..50 non-empty strings */
    WF_OPT_LABELS, /* classify: 2..50 labels, each a string or {name, description?} */
    WF_OPT_FIELDS, /* extract: {name: type} with 1..50 fields */
    WF_OPT_NUMBER  /* a number in (min, max] */
};

struct wf_option {
    const char *name;
    enum wf_opt_type type;
    bool required;
    double min, max;
    const char *const *values; /* WF_OPT_ENUM */
};

struct wf_action {
    const char *name;
    enum wf_action_kind kind;
    const struct wf_option *options; /* ends with a NULL name */
    const char *output;              /* the output's shape, for the docs and the engine */
    const char *instruction;         /* what a language model is asked to do */
    bool json_output;                /* the output is a JSON value, not a string */
};

/* The action named 'name' ('len' bytes), or NULL. */
const struct wf_action *wf_action_find(const char *name, size_t len);

/* Every action, for documentation and tests ('*n' entries). */
const struct wf_action *wf_actions(size_t *n);

/* The JSON Schema of the options of 'act' (a new object), from its table row: what
 * wf_action_check() accepts. */
json_t *wf_action_options_schema(const struct wf_action *act);
/* The JSON Schema of a workflow's trigger and of its steps (definition.c; new objects). */
json_t *wf_trigger_schema(void);
json_t *wf_steps_schema(void);

/*
 * Check 'options' (borrowed; NULL: none) of 'act' for step 'step' and return the canonical
 * options object in '*out' (a new reference; the caller releases it). Text options that hold
 * templates are parsed into 'st->opts'. 0 or ERR_INVALID naming "steps[N].options.<name>".
 */
int wf_action_check(const struct wf_action *act, json_t *options, int step, struct wf_step *st,
                    json_t **out, struct err *e);

#endif
