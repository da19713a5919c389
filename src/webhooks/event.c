/* SPDX-License-Identifier: MIT */
/*
 * event.c: what an event says. The store records an event inside the transaction of the change
 * it reports and asks webhooks_render() for the object as the API shows it at that moment (the
 * same writers as the endpoints': tasks, workflow runs, documents); an integration is shown by
 * its connection's state, without the account's secrets.
 */
#include "webhooks.h"

#include "../act/act.h"
#include "../core/buf.h"
#include "../integrations/providers.h"
#include "../knowledge/document.h"
#include "../ledger/ledger.h"
#include "../tasks/task.h"
#include "../workflows/run.h"

#include <string.h>

#define RENDER_CAP (8u << 20)

const char *const webhooks_event_selectors[] = {"*",
                                                "task.completed",
                                                "task.failed",
                                                "workflow_run.completed",
                                                "workflow_run.failed",
                                                "document.ready",
                                                "document.failed",
                                                "integration.connected",
                                                "integration.disconnected",
                                                "integration.error",
                                                "approval.requested",
                                                "approval.decided",
                                                "message.completed",
                                                "account.credits_added",
                                                "account.credits_low",
                                                NULL};

/* See webhooks.h. */
bool webhooks_type_known(const char *type, size_t len)
{
    for (size_t i = 0; WEBHOOKS_EVENT_TYPES[i]; i++)
        if (strlen(WEBHOOKS_EVENT_TYPES[i]) == len &&
            memcmp(WEBHOOKS_EVENT_TYPES[i], type, len) == 0)
            return true;
    return false;
}

/* {provider, name, category, status, error, connected_at} */
static void write_integration(struct jw *w, const struct store_integration *in)
{
    const struct integ_provider *p = integ_provider_find(in->provider);
    jw_obj(w);
    jw_key(w, "provider");
    jw_str(w, in->provider);
    jw_key(w, "name");
    jw_str(w, p ? p->name : NULL);
    jw_key(w, "category");
    jw_str(w, p ? p->category : NULL);
    jw_key(w, "status");
    jw_str(w, in->status);
    jw_key(w, "error");
    jw_str(w, in->error);
    jw_key(w, "connected_at");
    jw_time(w, in->connected_at);
    jw_obj_end(w);
}

/* See webhooks.h. */
const char *webhooks_render(enum store_hook_kind kind, const void *obj, struct arena *a)
{
    const char *out = NULL;
    struct buf b;
    struct jw w;

    buf_init(&b, RENDER_CAP);
    jw_init(&w, &b);
    switch (kind) {
    case STORE_HOOK_TASK:
        task_write(&w, obj);
        break;
    case STORE_HOOK_RUN:
        wf_run_write(&w, obj);
        break;
    case STORE_HOOK_DOCUMENT:
        knowledge_document_write(&w, obj);
        break;
    case STORE_HOOK_INTEGRATION:
        write_integration(&w, obj);
        break;
    case STORE_HOOK_APPROVAL:
        act_approval_write(&w, obj);
        break;
    case STORE_HOOK_CREDIT:
        ledger_tx_write(&w, obj);
        break;
    case STORE_HOOK_MESSAGE: {
        const struct store_message_hook *h = obj;
        act_message_write(&w, h->message, h->calls, h->ncalls);
        break;
    }
    }
    if (jw_finish(&w) == 0)
        out = arena_strndup(a, buf_ptr(&b), buf_len(&b));
    buf_cleanup(&b);
    return out;
}

/* See webhooks.h. */
void webhooks_event_write(struct jw *w, const struct store_hook_event *ev)
{
    jw_obj(w);
    jw_key(w, "id");
    jw_str(w, ev->id);
    jw_key(w, "type");
    jw_str(w, ev->type);
    jw_key(w, "created_at");
    jw_time(w, ev->created_at);
    jw_key(w, "data");
    jw_raw(w, ev->data, "{}");
    jw_obj_end(w);
}
