/* SPDX-License-Identifier: MIT */
/*
 * task: a task made and shown without an HTTP request (contract §10). The caller has checked
 * the fields (employee of the tenant and tier, title, due, recurrence); this gives the task its
 * id, status and schedule, stores it, and writes its record as the API shows it.
 */
#ifndef WORKFORCE_TASKS_TASK_H
#define WORKFORCE_TASKS_TASK_H

#include "../json/json.h"
#include "../store/store.h"

#include <stdint.h>

/* The priorities of a task, from the lowest (and the order of the queue, reversed), and its
 * statuses: each vocabulary's one list, NULL-terminated. */
extern const char *const task_priorities[];
extern const char *const task_statuses[];

/* Store the new task 'k' (employee_id, title, description?, priority?, due_at, recurring
 * filled; its id written into 'id', ID_MAX bytes, and the rest of 'k' completed) at 'now'.
 * The caller wakes the runner. 0 or the store's error. */
int task_create(struct store *s, const struct store_tenant *t, struct store_task *k, char *id,
                int64_t now);

/* The task record (contract §10). */
void task_write(struct jw *w, const struct store_task *k);

#endif
