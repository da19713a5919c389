/* SPDX-License-Identifier: MIT */
/*
 * queue.c: queueing a run of a workflow (contract §12), the one path of every trigger that
 * has a caller: a manual run, a webhook, an integration event. (A schedule's occurrences are
 * queued by the queue itself, store_claim, under the same balance gate.) An integration event
 * queues a run of each workflow it triggers (wf_runs_for_event). The ledger decides
 * whether a live run may be queued (402 before anything is stored); the run is stored with its
 * trigger data and the workflow's steps as they are now, and read back in the same
 * transaction, before any worker can have started it.
 */
#include "run.h"

#include "../core/clock.h"
#include "../core/id.h"
#include "../core/log.h"
#include "../ledger/ledger.h"
#include "../store/store.h"

#include <stdlib.h>
#include <string.h>

/* See run.h. */
int wf_run_queue(struct store *s, const struct store_tenant *t, const struct store_workflow *wf,
                 const struct wf_trigger_in *in, struct arena *a, struct store_wf_run *queued,
                 struct err *e)
{
    struct store_wf_run run;
    char *id = arena_alloc(a, ID_MAX);
    char *text;
    int rc;

    if (t->mode == STORE_LIVE) {
        struct store_org org;
        rc = store_org_get(s, t->org_id, &org);
        if (rc)
            return err_set(e, rc, "internal_error", NULL, "organization read failed");
        rc = ledger_gate(&org, t->mode, NULL, NULL, NULL, true, e);
        if (rc)
            return rc;
    }
    if (id_new("run", id, ID_MAX))
        return err_set(e, ERR_INTERNAL, "internal_error", NULL, "no id");
    text = json_dumps(in->data, JSON_COMPACT);
    memset(&run, 0, sizeof(run));
    run.id = id;
    run.workflow_id = wf->id;
    run.trigger_type = in->type;
    run.trigger_event = in->event;
    run.trigger_data = arena_strdup(a, text ? text : "{}");
    run.definition = wf->steps;
    run.created_at = clock_now_ms();
    run.depth = in->depth;
    run.own_rights = in->own_rights;
    run.started_by = in->started_by;
    run.scopes = in->scopes;
    free(text);
    rc = store_wf_run_create(s, t, &run, a, queued);
    if (rc == ERR_NOT_FOUND)
        return err_set(e, rc, "workflow_not_found", "id", "No workflow %.60s.", wf->id);
    if (rc)
        return err_set(e, rc, "internal_error", NULL, "run create failed");
    return 0;
}

/* See run.h. */
int wf_runs_for_event(struct store *s, const struct store_tenant *t, const char *event,
                      json_t *data, struct arena *a, json_t *runs, struct err *e)
{
    struct store_workflow *wfs = NULL;
    struct wf_trigger_in in = {"integration", event, data, 0, false, NULL, 0};
    size_t n = 0;
    int rc = store_workflows_for_event(s, t, event, a, &wfs, &n);

    if (rc)
        return err_set(e, rc, "internal_error", NULL, "workflow read failed");
    for (size_t i = 0; i < n; i++) {
        struct store_wf_run queued;
        struct err qe;
        err_clear(&qe);
        if (wf_run_queue(s, t, &wfs[i], &in, a, &queued, &qe) == 0)
            json_array_append_new(runs, json_string(queued.id));
        else
            log_warn("integrations: event %s did not start workflow %s: %s", event, wfs[i].id,
                     qe.msg);
    }
    return 0;
}
