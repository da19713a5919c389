/* SPDX-License-Identifier: MIT */
/*
 * ledger_bench: a ledger of ENTRIES entries, written through the store's own chat path, for
 * bench/ledger.sh to time GET /v1/account/usage and GET /v1/account/credit_transactions over
 * (issue 29). No SQL of ours: every entry and every hourly usage sum is written by
 * src/store/ledger.c (credits_apply) inside the chat's own writes, as a live chat of the
 * server makes them:
 *   - store_chat_begin_submit(): a new conversation, the user message, one credit held (an
 *     entry, reason chat, with its hour's usage sum), the employee busy; a job of a committer
 *     (store_committer_new()), which applies the begins waiting in one transaction, as the
 *     server's committer does (store_chat_begin_committed()); store_chat_begin() on this
 *     handle while the committer checkpoints, as the server does;
 *   - store_chat_finish_in(), applied in groups of 64 by store_group_apply() (what the server's
 *     committer does with the replies that end together: one commit and one flush a group):
 *     the reply, its price settled against the held credit (a second entry, the rest of the
 *     price: every chat here costs 2 to 5 credits, 1,001 to 5,000 tokens), the statistics fact,
 *     the employee no longer busy.
 * So a chat makes two entries, and ENTRIES / 2 chats are written, spread evenly over the last
 * DAYS days (the wall clock is injected: clock_set_fake_ms(), the tests' hook) and over
 * EMPLOYEES employees of one organization (slug bench-ledger, agency, 10^12 credits granted at
 * its creation: one more entry, a grant). Each reply ends 1.5 s after its chat began; the 64
 * begins of a group read the clock once, at the group's middle (the committer applies them on
 * its thread), so their entries share a millisecond, as a group of the server's nearly do.
 * Prints one JSON line: {"org", "entries", "chats", "seconds"}.
 *
 *     ledger_bench DATABASE [ENTRIES] [DAYS] [EMPLOYEES]
 */
#include "../src/core/clock.h"
#include "../src/core/config.h"
#include "../src/core/mem.h"
#include "../src/store/store.h"

#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GROUP 64 /* the committer's COMMIT_MAX */
#define DAY_MS 86400000LL
#define REPLY_AFTER_MS 1500LL

/* One chat of a group: its begin's input and its finish as a job of the group. */
struct chat {
    struct store_chat_begin_job bjob; /* the begin, a job of the committer */
    struct store_job job;             /* the finish, a job of the group (chat_of()) */
    const struct store_tenant *t;
    const char *emp;
    int64_t at, end_at;
    char conv_id[ID_MAX], user_id[ID_MAX], reply_id[ID_MAX];
    struct store_chat_begin begin;
    struct store_chat_finish fin;
    int64_t charged;
};

/* The chat whose finish is 'job'. */
static struct chat *chat_of(struct store_job *job)
{
    return (struct chat *)(void *)((char *)job - offsetof(struct chat, job));
}

/* The begins of a group not yet told, and the first failure (the committer's thread tells). */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static long pending;
static int begin_rc;

static void begin_done(struct store_job *job, int rc)
{
    (void)job;
    pthread_mutex_lock(&mu);
    if (rc && !begin_rc)
        begin_rc = rc;
    if (--pending == 0)
        pthread_cond_signal(&cv);
    pthread_mutex_unlock(&mu);
}

/* The finish of one chat, at its own time (the group runs on this thread, so the injected
 * clock is the one its entry's created_at reads). */
static int finish_apply(struct store *s, struct store_job *job)
{
    struct chat *c = chat_of(job);
    clock_set_fake_ms(c->end_at);
    return store_chat_finish_in(s, c->t, &c->fin, &c->charged);
}

int main(int argc, char **argv)
{
    long entries = argc > 2 ? strtol(argv[2], NULL, 10) : 1000000;
    long days = argc > 3 ? strtol(argv[3], NULL, 10) : 90;
    long nemp = argc > 4 ? strtol(argv[4], NULL, 10) : 20;
    struct store_employee *seed = NULL;
    struct store_emp_filter ef = {.status = -1, .limit = 100};
    struct store_emp_page page = {0};
    struct chat *group = xcalloc(GROUP, sizeof(*group));
    struct store_tenant t;
    struct store_org org;
    struct store *s = NULL;
    struct store_committer *com = NULL;
    struct arena a;
    struct err e;
    char(*names)[32] = NULL;
    int64_t now, start, step, t0;
    long chats, done = 0;
    int64_t folded = 0;
    int rc;

    if (argc < 2 || entries < 2 || days < 1 || nemp < 1 || nemp > 100) {
        fprintf(stderr, "usage: ledger_bench DATABASE [ENTRIES] [DAYS] [EMPLOYEES<=100]\n");
        return 2;
    }
    chats = entries / 2;
    err_clear(&e);
    arena_init(&a);
    seed = xcalloc((size_t)nemp, sizeof(*seed));
    names = xcalloc((size_t)nemp, sizeof(*names));
    for (long i = 0; i < nemp; i++) {
        snprintf(names[i], sizeof(names[i]), "Bench %ld", i + 1);
        seed[i] = (struct store_employee){.name = names[i],
                                          .role = "Analyst",
                                          .category = "operations",
                                          .tier = "starter",
                                          .capabilities = "[]"};
    }
    now = clock_now_ms();
    start = now - days * DAY_MS + 60000; /* the first chat a minute inside the period */
    step = (days * DAY_MS - 120000) / chats;
    t0 = clock_mono_us();
    clock_set_fake_ms(start - 60000);
    rc = store_open(argv[1], &s, &e);
    if (!rc)
        rc = store_migrate(s, &e);
    if (!rc)
        rc = store_org_create(s, "bench-ledger", TIER_AGENCY, 1000000000000LL, seed, (size_t)nemp,
                              &org, &e);
    if (!rc) {
        snprintf(t.org_id, sizeof(t.org_id), "%s", org.id);
        t.mode = STORE_LIVE;
        rc = store_employee_list(s, &t, &ef, &a, &page);
    }
    if (!rc)
        rc = store_committer_new(argv[1], &com, &e);
    if (rc || page.n != (size_t)nemp) {
        fprintf(stderr, "ledger_bench: setup failed (%d): %s\n", rc, e.msg);
        return 1;
    }
    for (long i = 0; i < chats && !rc; i += GROUP) {
        struct store_job *head = NULL, **tail = &head;
        long n = chats - i < GROUP ? chats - i : GROUP;

        /* the begins, grouped by the committer as the server's are (store_chat_begin_submit),
         * at the group's middle time: the committer reads the clock when it applies them */
        clock_set_fake_ms(start + (i + n / 2) * step);
        pending = n;
        begin_rc = 0;
        for (long k = 0; k < n && !rc; k++) {
            struct chat *c = &group[k];
            int64_t at = start + (i + k) * step;
            const char *emp = page.items[(i + k) % nemp].id;

            memset(c, 0, sizeof(*c));
            c->t = &t;
            c->at = at;
            c->emp = emp;
            rc = id_new("conv", c->conv_id, sizeof(c->conv_id));
            if (!rc)
                rc = id_new("msg", c->user_id, sizeof(c->user_id));
            if (!rc)
                rc = id_new("msg", c->reply_id, sizeof(c->reply_id));
            if (rc) {
                pthread_mutex_lock(&mu); /* wait for the ones submitted, not these */
                pending -= n - k;
                pthread_mutex_unlock(&mu);
                break;
            }
            c->begin.new_conversation = true;
            c->begin.conversation.id = c->conv_id;
            c->begin.conversation.employee_id = emp;
            c->begin.conversation.title = "Weekly status";
            c->begin.conversation.created_at = at;
            c->begin.user.id = c->user_id;
            c->begin.user.conversation_id = c->conv_id;
            c->begin.user.employee_id = emp;
            c->begin.user.role = "user";
            c->begin.user.content = "Give me a one-line status update.";
            c->begin.user.response_ms = -1;
            c->begin.user.created_at = at;
            c->begin.reserve_credit = true;
            c->begin.reply_id = c->reply_id;
            if (!store_chat_begin_submit(com, &t, &c->begin, &c->bjob, begin_done)) {
                /* the committer checkpoints: the server writes it on its own handle then */
                int brc = store_chat_begin(s, &t, &c->begin);
                begin_done(&c->bjob.job, brc);
            }
        }
        pthread_mutex_lock(&mu);
        while (pending > 0)
            pthread_cond_wait(&cv, &mu);
        if (!rc)
            rc = begin_rc;
        pthread_mutex_unlock(&mu);
        if (rc)
            break;
        /* the replies, 1.5 s after each began, in one group (the committer's store_group_apply) */
        for (long k = 0; k < n; k++) {
            struct chat *c = &group[k];
            long j = i + k;
            c->end_at = c->at + REPLY_AFTER_MS;
            c->fin.reply.id = c->reply_id;
            c->fin.reply.conversation_id = c->conv_id;
            c->fin.reply.employee_id = c->emp;
            c->fin.reply.role = "assistant";
            c->fin.reply.content = "All green: three tickets closed, one waiting on the vendor.";
            c->fin.reply.sources = "[]";
            c->fin.reply.input_tokens = 900 + 1000 * (j % 4);
            c->fin.reply.output_tokens = 101;
            c->fin.reply.credits_used = 2 + j % 4; /* ledger_price() of those tokens */
            c->fin.reply.response_ms = REPLY_AFTER_MS;
            c->fin.reply.created_at = c->at;
            c->fin.reply.stop_reason = "completed";
            c->fin.reserved = true;
            c->fin.charge = true;
            c->job.apply = finish_apply;
            *tail = &c->job;
            tail = &c->job.next;
        }
        store_group_apply(s, head);
        for (struct store_job *j = head; j && !rc; j = j->next) {
            rc = j->rc;
            if (!rc && chat_of(j)->charged != chat_of(j)->fin.reply.credits_used)
                rc = -1; /* the balance ran out: the entries would not be the ones asked */
        }
        done = i + n;
    }
    clock_set_fake_ms(0);
    if (rc) {
        fprintf(stderr, "ledger_bench: chat %ld failed (%d)\n", done, rc);
        return 1;
    }
    /* what a server's keeper does within its first minute on this database: the usage sums of
     * the hours of days that ended more than a day ago folded into one row a day */
    rc = store_credit_usage_compact(s, clock_now_ms(), &folded);
    if (rc) {
        fprintf(stderr, "ledger_bench: the hours could not be folded (%d)\n", rc);
        return 1;
    }
    printf("{\"org\": \"%s\", \"entries\": %ld, \"chats\": %ld, \"folded\": %lld, \"seconds\": "
           "%.1f}\n",
           org.id, 2 * chats + 1, chats, (long long)folded, (double)(clock_mono_us() - t0) / 1e6);
    store_committer_free(com);
    store_close(s);
    arena_cleanup(&a);
    free(group);
    free(seed);
    free(names);
    return 0;
}
