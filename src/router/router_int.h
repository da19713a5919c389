/* SPDX-License-Identifier: MIT */
/*
 * router_int.h: what the pipeline's files share and no handler needs (people.c for
 * middleware.c).
 */
#ifndef WORKFORCE_ROUTER_INT_H
#define WORKFORCE_ROUTER_INT_H

#include "router.h"

/* The request names a session in its cookie. */
bool router_has_session_cookie(struct router_req *r);
/* Authenticate 'r' by its session cookie (see people.c): 0 with r->by_session, r->user, the
 * tenant and the person's limits set, or 401 invalid_session, 403 csrf_token_invalid, 400. */
int router_session_authenticate(struct router_req *r, struct err *e);
/* Record the key's last use when the one recorded is a minute old or more. */
void router_key_touch(struct router_req *r);

#endif
