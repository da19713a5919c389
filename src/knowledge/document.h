/* SPDX-License-Identifier: MIT */
/*
 * document: the document record of the API (contract §11), one writer for every place that
 * shows it.
 */
#ifndef WORKFORCE_KNOWLEDGE_DOCUMENT_H
#define WORKFORCE_KNOWLEDGE_DOCUMENT_H

#include "../json/json.h"
#include "../store/store.h"

/* The record of document 'd', progress included. */
void knowledge_document_write(struct jw *w, const struct store_document *d);

#endif
