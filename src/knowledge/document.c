/* SPDX-License-Identifier: MIT */
/*
 * document.c: the document record as the API shows it (contract §11), written by the
 * knowledge endpoints and by the events that report a document (document.ready, .failed).
 */
#include "document.h"

#include <stdio.h>
#include <string.h>

/* See document.h. */
void knowledge_document_write(struct jw *w, const struct store_document *d)
{
    jw_obj(w);
    jw_key(w, "id");
    jw_str(w, d->id);
    jw_key(w, "name");
    jw_str(w, d->name);
    jw_key(w, "filename");
    jw_str(w, d->filename);
    jw_key(w, "content_type");
    jw_str(w, d->content_type);
    jw_key(w, "size_bytes");
    jw_int(w, d->size_bytes);
    jw_key(w, "sha256");
    jw_str(w, d->sha256);
    jw_key(w, "tags");
    jw_raw(w, d->tags, "[]");
    jw_key(w, "employee_ids");
    jw_raw(w, d->employee_ids, "[]");
    jw_key(w, "status");
    jw_str(w, d->status);
    jw_key(w, "error");
    jw_str(w, d->error);
    jw_key(w, "chunk_count");
    jw_int(w, d->chunk_count);
    /* Chunks embedded / chunks while processing (null until the text is cut); 1 once done. */
    jw_key(w, "progress");
    if (strcmp(d->status, "processing") != 0)
        jw_raw(w, "1", "1");
    else if (d->progress_chunks <= 0)
        jw_null(w);
    else {
        char v[32];
        double f = (double)d->progress_embedded / (double)d->progress_chunks;
        snprintf(v, sizeof(v), "%.4f", f > 1 ? 1.0 : f);
        jw_raw(w, v, "0");
    }
    jw_key(w, "created_at");
    jw_time(w, d->created_at);
    jw_key(w, "updated_at");
    jw_time(w, d->updated_at);
    jw_obj_end(w);
}
