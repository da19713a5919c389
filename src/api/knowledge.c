/* SPDX-License-Identifier: MIT */
/*
 * knowledge.c: the knowledge base API (contract §11).
 *
 * DESIGN (upload): POST /v1/knowledge/documents is a ROUTE_UPLOAD route. When its headers are
 * accepted, upload_begin() refuses a declared body over the limit (413, unread) and installs a
 * sink: the multipart parser streams the file part into a temporary file while hashing it and
 * counting its bytes, and keeps the small fields (name, tags, employee_ids) in capped buffers.
 * Past 52,428,800 file bytes nothing more is written and the request ends in 413. The handler
 * then validates, detects the type by content and name, stores the record (status processing),
 * moves the file under files/<document id> and wakes the worker, which extracts, chunks,
 * embeds and indexes it in the background. The temporary file never outlives the request.
 *
 * The query itself is search.c's: this file validates it and writes the answer.
 */
#include "api.h"

#include "../core/buf.h"
#include "../core/clock.h"
#include "../core/crypto.h"
#include "../core/id.h"
#include "../core/log.h"
#include "../core/str.h"
#include "../core/utf8.h"
#include "../http/multipart.h"
#include "../knowledge/extract.h"
#include "../knowledge/document.h"
#include "../knowledge/index.h"
#include "../knowledge/worker.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_FIELD (64u * 1024)
#define MAX_TAGS 32
#define UPLOAD_TMP_PREFIX ".upload-" /* an upload being received; leftovers of a crash */
#define MAX_EMPLOYEES 100

enum part_kind { PART_NONE, PART_FILE, PART_NAME, PART_TAGS, PART_EMPLOYEES };

struct upload {
    struct router_req *r;
    struct multipart mp;
    bool mp_ok;
    struct crypto_sha256 *raw;
    struct crypto_sha256 *file_hash;
    int fd;
    char tmp[1300];
    bool moved;
    uint64_t file_bytes;
    bool too_large;
    bool have_file;
    int files;
    enum part_kind kind;
    struct buf field;
    struct buf name;
    bool have_name;
    const char *tags[MAX_TAGS + 1];
    size_t ntags;
    const char *emps[MAX_EMPLOYEES + 1];
    size_t nemps;
    char filename[256];
    char part_ctype[128];
    unsigned char head[1024];
    size_t head_len;
    struct err bad; /* the first problem with the fields */
    int io_error;
};

/* ---- Upload: sink and cleanup ---- */

/*
 * Remove the temporary files of uploads that a crash or kill left in 'dir' (start only, before
 * the server accepts requests). Returns how many were removed.
 */
int api_knowledge_sweep_uploads(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    int n = 0;
    if (!d)
        return 0;
    while ((de = readdir(d)) != NULL) {
        if (strncmp(de->d_name, UPLOAD_TMP_PREFIX, strlen(UPLOAD_TMP_PREFIX)) == 0 &&
            unlinkat(dirfd(d), de->d_name, 0) == 0)
            n++;
    }
    closedir(d);
    if (n)
        log_info("knowledge: removed %d unfinished upload%s left by a previous run", n,
                 n == 1 ? "" : "s");
    return n;
}

static void upload_cleanup(struct router_req *r)
{
    struct upload *u = r->upload_state;
    if (!u)
        return;
    if (u->fd >= 0)
        close(u->fd);
    if (u->tmp[0] && !u->moved)
        unlink(u->tmp);
    crypto_sha256_free(u->raw);
    crypto_sha256_free(u->file_hash);
    if (u->mp_ok)
        multipart_cleanup(&u->mp);
    buf_cleanup(&u->field);
    buf_cleanup(&u->name);
    r->upload_state = NULL;
}

/* Take one tag or employee id (or a JSON array of them) from a finished field. */
static void add_values(struct upload *u, const char *text, size_t len, const char **list, size_t *n,
                       size_t max, const char *param)
{
    struct arena *a = u->r->arena;
    if (u->bad.code)
        return;
    if (len > 0 && text[0] == '[') {
        json_error_t je;
        json_t *arr = json_loadb(text, len, 0, &je);
        size_t i;
        json_t *v;
        if (!json_is_array(arr)) {
            json_decref(arr);
            err_set(&u->bad, ERR_INVALID, "invalid_request", param,
                    "Invalid %s: a JSON array of strings, or the field repeated.", param);
            return;
        }
        json_array_foreach(arr, i, v)
        {
            if (!json_is_string(v) || json_string_length(v) == 0 ||
                jb_utf8_len(json_string_value(v), json_string_length(v)) > 100) {
                err_set(&u->bad, ERR_INVALID, "invalid_request", param,
                        "Invalid %s: each item is a string of 1 to 100 characters.", param);
                break;
            }
            if (*n >= max) {
                err_set(&u->bad, ERR_INVALID, "invalid_request", param,
                        "Invalid %s: at most %zu items.", param, max);
                break;
            }
            list[(*n)++] = arena_strdup(a, json_string_value(v));
        }
        json_decref(arr);
        return;
    }
    if (len == 0 || !utf8_valid(text, len) || jb_utf8_len(text, len) > 100 ||
        memchr(text, '\0', len)) {
        err_set(&u->bad, ERR_INVALID, "invalid_request", param,
                "Invalid %s: each item is a string of 1 to 100 characters.", param);
        return;
    }
    if (*n >= max) {
        err_set(&u->bad, ERR_INVALID, "invalid_request", param, "Invalid %s: at most %zu items.",
                param, max);
        return;
    }
    list[(*n)++] = arena_strndup(a, text, len);
}

/*
 * Whether the file name 's' is UTF-8 text without control characters. The multipart parser
 * keeps at most 'cap' bytes of it, so a character it cut at the end is not held against it.
 */
static bool name_ok(const char *s, size_t cap)
{
    size_t n = strlen(s);
    for (size_t i = 0; i < n; i++) {
        if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
            return false;
    }
    if (n >= cap)
        n = utf8_prefix(s, n, n - 3);
    return utf8_valid(s, n);
}

static int on_part(void *ud, const struct multipart_part *p)
{
    struct upload *u = ud;
    size_t n;
    buf_reset(&u->field);
    if (strcmp(p->name, "file") == 0 && p->filename) {
        const char *base = strrchr(p->filename, '/');
        u->kind = PART_FILE;
        if (++u->files > 1) {
            if (!u->bad.code)
                err_set(&u->bad, ERR_INVALID, "invalid_request", "file", "Send one file only.");
            u->kind = PART_NONE;
            return 0;
        }
        base = base ? base + 1 : p->filename;
        if (!name_ok(base, MULTIPART_FILENAME_MAX)) {
            if (!u->bad.code)
                err_set(&u->bad, ERR_INVALID, "invalid_request", "file",
                        "Invalid file name: it must be UTF-8 text without control characters.");
            u->kind = PART_NONE;
            return 0;
        }
        if (!*base)
            base = "upload";
        /* kept to 255 bytes, cut at a character boundary */
        n = utf8_prefix(base, strlen(base), sizeof(u->filename) - 1);
        memcpy(u->filename, base, n);
        u->filename[n] = '\0';
        snprintf(u->part_ctype, sizeof(u->part_ctype), "%s",
                 p->content_type ? p->content_type : "");
        u->have_file = true;
        return 0;
    }
    if (strcmp(p->name, "file") == 0) {
        u->kind = PART_NONE;
        if (!u->bad.code)
            err_set(&u->bad, ERR_INVALID, "invalid_request", "file",
                    "Invalid file: send it as a file part (with a file name).");
        return 0;
    }
    if (strcmp(p->name, "name") == 0)
        u->kind = PART_NAME;
    else if (strcmp(p->name, "tags") == 0 || strcmp(p->name, "tags[]") == 0)
        u->kind = PART_TAGS;
    else if (strcmp(p->name, "employee_ids") == 0 || strcmp(p->name, "employee_ids[]") == 0)
        u->kind = PART_EMPLOYEES;
    else {
        u->kind = PART_NONE;
        if (!u->bad.code)
            err_set(&u->bad, ERR_INVALID, "invalid_request", p->name[0] ? p->name : "file",
                    "Unknown form field: %.80s.", p->name);
    }
    return 0;
}

static int on_data(void *ud, const char *p, size_t n)
{
    struct upload *u = ud;
    if (u->kind == PART_FILE) {
        if (u->head_len < sizeof(u->head)) {
            size_t k = n < sizeof(u->head) - u->head_len ? n : sizeof(u->head) - u->head_len;
            memcpy(u->head + u->head_len, p, k);
            u->head_len += k;
        }
        u->file_bytes += n;
        if (u->file_bytes > API_UPLOAD_FILE_MAX) {
            u->too_large = true; /* keep reading (and dropping) so that the client gets the 413 */
            return 0;
        }
        crypto_sha256_update(u->file_hash, p, n);
        while (n > 0 && !u->io_error) {
            ssize_t w = write(u->fd, p, n);
            if (w < 0 && errno == EINTR)
                continue;
            if (w <= 0) {
                u->io_error = errno ? errno : EIO;
                break;
            }
            p += w;
            n -= (size_t)w;
        }
        return 0;
    }
    if (u->kind != PART_NONE && buf_append(&u->field, p, n) == ERR_LIMIT && !u->bad.code) {
        static const char *const names[] = {"", "file", "name", "tags", "employee_ids"};
        err_set(&u->bad, ERR_INVALID, "invalid_request", names[u->kind],
                "Invalid %s: the field is longer than 64 KiB.", names[u->kind]);
    }
    return 0;
}

static int on_end(void *ud)
{
    struct upload *u = ud;
    switch (u->kind) {
    case PART_NAME:
        buf_reset(&u->name);
        buf_append(&u->name, buf_ptr(&u->field), buf_len(&u->field));
        u->have_name = true;
        break;
    case PART_TAGS:
        add_values(u, buf_ptr(&u->field), buf_len(&u->field), u->tags, &u->ntags, MAX_TAGS, "tags");
        break;
    case PART_EMPLOYEES:
        add_values(u, buf_ptr(&u->field), buf_len(&u->field), u->emps, &u->nemps, MAX_EMPLOYEES,
                   "employee_ids");
        break;
    default:
        break;
    }
    u->kind = PART_NONE;
    return 0;
}

static int sink(void *ud, const char *p, size_t n)
{
    struct upload *u = ud;
    struct multipart_cb cb = {on_part, on_data, on_end, u};
    crypto_sha256_update(u->raw, p, n);
    multipart_feed(&u->mp, p, n, &cb); /* errors are sticky and reported at the end */
    return 0;
}

/* The body is read: its digest joins the Idempotency-Key fingerprint (before the handler). */
static void upload_digest(struct router_req *r)
{
    struct upload *u = r->upload_state;
    unsigned char digest[CRYPTO_SHA256_LEN];
    char hex[2 * CRYPTO_SHA256_LEN + 1];
    if (!u || !u->raw || r->body_digest)
        return;
    crypto_sha256_final(u->raw, digest);
    crypto_hex(digest, sizeof(digest), hex);
    r->body_digest = arena_strdup(r->arena, hex);
}

/* When the upload's headers are accepted: refuse what is too large, set up the sink. */
int api_knowledge_upload_begin(struct router_req *r, struct err *e)
{
    const char *ct = http_req_header(r->http, "Content-Type");
    const char *cl = http_req_header(r->http, "Content-Length");
    struct upload *u;
    uint64_t n;
    int fd;
    char tmpname[ID_MAX];

    if (cl && !str_to_u64(str_c(cl), &n) && n > API_UPLOAD_FILE_MAX + MAX_FIELD * 4)
        return err_set(e, ERR_LIMIT, "file_too_large", "file",
                       "The file is larger than 52,428,800 bytes.");
    u = arena_calloc(r->arena, sizeof(*u));
    u->r = r;
    u->fd = -1;
    buf_init(&u->field, MAX_FIELD);
    buf_init(&u->name, MAX_FIELD);
    err_clear(&u->bad);
    r->upload_state = u;
    /* a chunked or under-declared upload far past the limit is cut off, not read to its end */
    http_req_set_body_max(r->http, (uint64_t)API_UPLOAD_FILE_MAX + MAX_FIELD * 4 + (1u << 20));
    r->cleanup = upload_cleanup;
    r->body_end = upload_digest;
    if (multipart_init(&u->mp, ct) != 0) {
        multipart_cleanup(&u->mp);
        return err_set(e, ERR_INVALID, "unsupported_media_type", NULL,
                       "Send the document as multipart/form-data with a file field.");
    }
    u->mp_ok = true;
    u->raw = crypto_sha256_new();
    u->file_hash = crypto_sha256_new();
    /* Named by the server alone (a client's X-Request-Id is not unique, not even per org). */
    if (id_new("upl", tmpname, sizeof(tmpname)) != 0)
        return err_set(e, ERR_INTERNAL, "internal_error", NULL, "upload storage failed");
    snprintf(u->tmp, sizeof(u->tmp), "%s/" UPLOAD_TMP_PREFIX "%s", r->env->cfg->files_dir, tmpname);
    fd = open(u->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0 || !u->raw || !u->file_hash) {
        log_error("knowledge: cannot create %s: %s", u->tmp, strerror(errno));
        u->tmp[0] = '\0';
        return err_set(e, ERR_IO, "internal_error", NULL, "upload storage failed");
    }
    u->fd = fd;
    http_req_set_body_sink(r->http, sink, u);
    return 0;
}

/* ---- Records ---- */

static int respond_document(struct router_req *r, const char *id, struct err *e)
{
    struct store_document d;
    struct buf b;
    struct jw w;
    int rc = store_document_get(r->store, &r->tenant, id, r->arena, &d);
    if (rc == ERR_NOT_FOUND)
        return err_set(e, rc, "document_not_found", "id", "No document %.60s.", id);
    if (rc)
        return err_set(e, rc, "internal_error", NULL, "document read failed");
    buf_init(&b, 1u << 20);
    jw_init(&w, &b);
    knowledge_document_write(&w, &d);
    return router_respond_jw(r, &w, &b, e);
}

static const char *json_list(struct router_req *r, const char *const *v, size_t n)
{
    json_t *arr = json_array();
    char *s, *copy;
    for (size_t i = 0; i < n; i++)
        json_array_append_new(arr, jo_string(v[i]));
    s = jo_dump(arr, NULL);
    json_decref(arr);
    copy = arena_strdup(r->arena, s);
    free(s);
    return copy;
}

/* POST /v1/knowledge/documents (multipart/form-data) */
int api_knowledge_upload(struct router_req *r, struct err *e)
{
    struct upload *u = r->upload_state;
    struct store_document d;
    enum extract_type type;
    unsigned char digest[CRYPTO_SHA256_LEN];
    char hex[2 * CRYPTO_SHA256_LEN + 1], id[ID_MAX], final_path[1200];
    int rc;

    if (!u)
        return err_set(e, ERR_INTERNAL, "internal_error", NULL, "no upload state");
    upload_digest(r);
    if (u->too_large)
        return err_set(e, ERR_LIMIT, "file_too_large", "file",
                       "The file is larger than 52,428,800 bytes.");
    if (multipart_finish(&u->mp) != 0)
        return err_set(e, ERR_INVALID, "invalid_request", NULL,
                       "The multipart/form-data body is malformed or cut short.");
    if (u->bad.code) {
        *e = u->bad;
        return e->kind;
    }
    if (!u->have_file)
        return err_set(e, ERR_INVALID, "invalid_request", "file",
                       "Missing required parameter: file (a form field with a file name).");
    if (u->file_bytes == 0)
        return err_set(e, ERR_INVALID, "invalid_request", "file", "Invalid file: it is empty.");
    if (u->io_error)
        return err_set(e, ERR_IO, "internal_error", NULL, "upload write failed");
    if (u->have_name && (!utf8_valid(buf_ptr(&u->name), buf_len(&u->name)) ||
                         memchr(buf_ptr(&u->name), '\0', buf_len(&u->name))))
        return err_set(e, ERR_INVALID, "invalid_request", "name",
                       "Invalid name: it must be UTF-8 text without NUL characters.");
    if (u->have_name &&
        (buf_len(&u->name) == 0 || jb_utf8_len(buf_ptr(&u->name), buf_len(&u->name)) > 200))
        return err_set(e, ERR_INVALID, "invalid_request", "name",
                       "Invalid name: length must be between 1 and 200 characters.");
    for (size_t i = 0; i < u->nemps; i++) {
        struct store_employee emp;
        rc = store_employee_get(r->store, &r->tenant, u->emps[i], r->arena, &emp);
        if (rc == ERR_NOT_FOUND)
            return err_set(e, rc, "employee_not_found", "employee_ids",
                           "No employee %.60s (in employee_ids).", u->emps[i]);
        if (rc)
            return err_set(e, rc, "internal_error", NULL, "employee read failed");
    }
    type = extract_detect(u->filename, u->part_ctype, u->head, u->head_len);
    if (type == EXTRACT_UNKNOWN)
        return err_set(e, ERR_INVALID, "unsupported_file_type", "file",
                       "Unsupported file type. Send PDF, DOCX, TXT, Markdown, HTML, CSV or JSON.");
    if (id_new("doc", id, sizeof(id)))
        return err_set(e, ERR_INTERNAL, "internal_error", NULL, "no id");
    r->audit.target_id = arena_strdup(r->arena, id);
    crypto_sha256_final(u->file_hash, digest);
    crypto_hex(digest, sizeof(digest), hex);
    if (fsync(u->fd) != 0)
        return err_set(e, ERR_IO, "internal_error", NULL, "upload sync failed");
    snprintf(final_path, sizeof(final_path), "%s/%s", r->env->cfg->files_dir, id);
    if (rename(u->tmp, final_path) != 0)
        return err_set(e, ERR_IO, "internal_error", NULL, "upload move failed");
    u->moved = true;
    memset(&d, 0, sizeof(d));
    d.id = id;
    d.name = u->have_name ? buf_ptr(&u->name) : u->filename;
    if (!u->have_name) {
        /* The file name is the default name, cut to 200 characters (not bytes). */
        size_t cut = 0, chars = 0;
        while (u->filename[cut] && chars < 200) {
            cut++;
            while (((unsigned char)u->filename[cut] & 0xC0) == 0x80)
                cut++;
            chars++;
        }
        d.name = arena_strndup(r->arena, u->filename, cut);
    }
    d.filename = u->filename;
    d.content_type = extract_type_mime(type);
    d.sha256 = hex;
    d.tags = json_list(r, u->tags, u->ntags);
    d.employee_ids = json_list(r, u->emps, u->nemps);
    d.size_bytes = (int64_t)u->file_bytes;
    d.created_at = clock_now_ms();
    rc = store_document_create(r->store, &r->tenant, &d);
    if (rc) {
        unlink(final_path);
        return err_set(e, rc, "internal_error", NULL, "document insert failed");
    }
    knowledge_worker_wake(api_svc(r)->kworker);
    return respond_document(r, id, e);
}

/* ---- List, read, delete ---- */

/* GET /v1/knowledge/documents */
int api_knowledge_list(struct router_req *r, struct err *e)
{
    struct store_doc_filter f;
    struct store_doc_page page;
    struct buf b;
    struct jw w;
    int rc;

    memset(&f, 0, sizeof(f));
    rc = router_query_limit(r, &f.limit, e);
    if (rc)
        return rc;
    f.tag = router_query(r, "tag");
    f.employee_id = router_query(r, "employee_id");
    if (f.employee_id) {
        rc = api_employee_find(r, f.employee_id, "employee_id", NULL, e);
        if (rc)
            return rc;
    }
    rc = router_query_before(r, "doc", &f.before_created, &f.before_id, e);
    if (rc)
        return rc;
    rc = store_document_list(r->store, &r->tenant, &f, r->arena, &page);
    if (rc)
        return err_set(e, rc, "internal_error", NULL, "document list failed");
    buf_init(&b, 64u << 20);
    jw_init(&w, &b);
    jw_obj(&w);
    jw_key(&w, "documents");
    jw_arr(&w);
    for (size_t i = 0; i < page.n; i++)
        knowledge_document_write(&w, &page.items[i]);
    jw_arr_end(&w);
    router_write_more(r, &w, page.has_more, page.has_more ? page.items[page.n - 1].created_at : 0,
                      page.has_more ? page.items[page.n - 1].id : NULL);
    jw_obj_end(&w);
    return router_respond_jw(r, &w, &b, e);
}

/* GET /v1/knowledge/documents/{id} */
int api_knowledge_get(struct router_req *r, struct err *e)
{
    return respond_document(r, r->params[0], e);
}

/* DELETE /v1/knowledge/documents/{id}: the record, its chunks, index entries and file. */
int api_knowledge_delete(struct router_req *r, struct err *e)
{
    char path[1100];
    json_t *o;
    int rc = store_document_delete(r->store, &r->tenant, r->params[0]);
    if (rc == ERR_NOT_FOUND)
        return err_set(e, rc, "document_not_found", "id", "No document %.60s.", r->params[0]);
    if (rc)
        return err_set(e, rc, "internal_error", NULL, "document delete failed");
    knowledge_worker_cancel(api_svc(r)->kworker, r->params[0]);
    kindex_invalidate(api_svc(r)->agent.knowledge.kindex, &r->tenant);
    snprintf(path, sizeof(path), "%s/%s", r->env->cfg->files_dir, r->params[0]);
    unlink(path);
    o = jo_object();
    jo_str(o, "id", r->params[0]);
    jo_bool(o, "deleted", true);
    router_respond(r, o);
    return 0;
}

/* ---- Query ---- */

static bool blank(const char *s)
{
    for (; *s; s++) {
        if (*s != ' ' && *s != '\t' && *s != '\n' && *s != '\r')
            return false;
    }
    return true;
}

struct query_body {
    const char *query;
    int64_t limit;
    json_t *filters;
};

static const struct jb_field query_fields[] = {
    {"query", JB_STRING, offsetof(struct query_body, query), JB_REQUIRED, 1, 2000, NULL, NULL,
     NULL},
    {"limit", JB_INT, offsetof(struct query_body, limit), 0, 1, 50, NULL, NULL, NULL},
    {"filters", JB_ANY, offsetof(struct query_body, filters), JB_OBJECT, 0, 0, NULL, NULL, NULL},
};

const struct jb_binding api_knowledge_query_body = {query_fields, 3};

/* The search of a query is done: answer {query, results}. */
static void query_done(void *ud, int rc, struct store *s, const struct store_hit *hits, size_t n,
                       const struct err *e)
{
    struct router_req *r = ud;
    const char *query = json_string_value(json_object_get(r->body, "query"));
    struct buf out;
    struct jw w;
    struct err fe;

    (void)s;
    if (rc) {
        router_async_finish(r, rc, e);
        return;
    }
    buf_init(&out, 16u << 20);
    jw_init(&w, &out);
    jw_obj(&w);
    jw_key(&w, "query");
    jw_str(&w, query ? query : "");
    jw_key(&w, "results");
    knowledge_write_hits(&w, hits, n);
    jw_obj_end(&w);
    err_clear(&fe);
    rc = router_respond_jw(r, &w, &out, &fe);
    router_async_finish(r, rc, rc ? &fe : NULL);
}

/* See api.h: what the filters of api_knowledge_query() accept. */
json_t *api_knowledge_filters_schema(void)
{
    return json_pack("{s:s,s:{s:{s:s,s:{s:s}},s:{s:s}},s:b}", "type", "object", "properties",
                     "tags", "type", "array", "items", "type", "string", "employee_id", "type",
                     "string", "additionalProperties", 0);
}

/* POST /v1/knowledge/query */
int api_knowledge_query(struct router_req *r, struct err *e)
{
    struct query_body b = {NULL, 5, NULL};
    struct jb_result res;
    struct store_search_filter f = {NULL, NULL};
    struct knowledge_query q;
    int rc;

    rc = jb_bind(r->body, query_fields, 3, &b, r->arena, &res, e);
    if (rc)
        return rc;
    if (blank(b.query))
        return err_set(e, ERR_INVALID, "invalid_request", "query", "Invalid query: it is blank.");
    if (b.filters) {
        const char *key;
        json_t *v;
        json_object_foreach(b.filters, key, v)
        {
            if (strcmp(key, "tags") == 0) {
                size_t i;
                json_t *t;
                if (!json_is_array(v))
                    return err_set(e, ERR_INVALID, "invalid_request", "filters.tags",
                                   "Invalid filters.tags: must be an array of strings.");
                json_array_foreach(v, i, t)
                {
                    if (!json_is_string(t))
                        return err_set(e, ERR_INVALID, "invalid_request", "filters.tags",
                                       "Invalid filters.tags[%zu]: must be a string.", i);
                }
                if (json_array_size(v) > 0) {
                    char *s = jo_dump(v, NULL);
                    f.tags_json = arena_strdup(r->arena, s);
                    free(s);
                }
            } else if (strcmp(key, "employee_id") == 0) {
                if (!json_is_string(v))
                    return err_set(e, ERR_INVALID, "invalid_request", "filters.employee_id",
                                   "Invalid filters.employee_id: must be a string.");
                f.employee_id = arena_strdup(r->arena, json_string_value(v));
                rc = api_employee_find(r, f.employee_id, "filters.employee_id", NULL, e);
                if (rc)
                    return rc;
            } else {
                return err_set(e, ERR_INVALID, "invalid_request",
                               arena_printf(r->arena, "filters.%.60s", key),
                               "Unknown parameter: filters.%.60s.", key);
            }
        }
    }
    q.ks = &api_svc(r)->agent.knowledge;
    q.tenant = r->tenant;
    q.query = b.query;
    q.filter = f;
    q.limit = (unsigned)b.limit;
    q.min_cosine = -1.0;
    /* Answered from the embedding pool's thread when the query needs its vector. */
    r->async = true;
    http_req_defer(r->http);
    knowledge_search_start(&q, r->store, query_done, r);
    return 0;
}
