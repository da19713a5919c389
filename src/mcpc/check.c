/* SPDX-License-Identifier: MIT */
/*
 * check.c: what a client may register as an MCP server (mcpc.h): its name, its URL and the
 * headers sent to it. Pure: no I/O, no globals beyond constant tables.
 *
 * The URL follows the webhook endpoints' check (httpc/url.c: strict, unambiguous to every URL
 * reader) and the outbound address rules: a host written as an IP address is judged here, at
 * once, by the policy the connection will apply (httpc/addr.c); a host name is judged at each
 * connection, after DNS. Headers are sent as the client wrote them, so a name must be an HTTP
 * token and a value must hold no line break (it would start another header); the headers the
 * transport itself sets, or that change how the request is framed or routed, are refused.
 */
#include "mcpc.h"

#include "../core/utf8.h"
#include "../httpc/hook.h"
#include "../json/json.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

const char *const mcpc_versions[] = {"2025-11-25", "2025-06-18", "2025-03-26", NULL};

/* ---- Names ---- */

/* See mcpc.h. */
bool mcpc_name_ok(const char *s, size_t len)
{
    if (len == 0 || len > MCPC_NAME_MAX)
        return false;
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_'))
            return false;
    }
    return true;
}

/* ---- URLs ---- */

/* The host 'h' as a socket address into 'ss' when it is an IP address; its length, else 0. */
static size_t literal_addr(struct str h, struct sockaddr_storage *ss)
{
    char host[64];
    memset(ss, 0, sizeof(*ss));
    if (h.len == 0 || h.len >= sizeof(host))
        return 0;
    memcpy(host, h.p, h.len);
    host[h.len] = '\0';
    if (memchr(host, ':', h.len)) {
        struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;
        s6->sin6_family = AF_INET6;
        return inet_pton(AF_INET6, host, &s6->sin6_addr) == 1 ? sizeof(*s6) : 0;
    }
    struct sockaddr_in *s4 = (struct sockaddr_in *)ss;
    s4->sin_family = AF_INET;
    return inet_pton(AF_INET, host, &s4->sin_addr) == 1 ? sizeof(*s4) : 0;
}

/* See mcpc.h. */
int mcpc_url_check(const char *url, bool allow_private, const char *param, struct err *e)
{
    struct httpc_hook_url u;
    struct sockaddr_storage ss;
    enum httpc_addr_class k;
    char ip[64];
    size_t len;
    int rc = httpc_hook_url_parse(url, strlen(url), &u, param, e);

    if (rc)
        return rc;
    len = literal_addr(u.host, &ss);
    if (!len)
        return 0;
    httpc_addr_format((const struct sockaddr *)&ss, len, ip, sizeof(ip));
    if (httpc_addr_metadata((const struct sockaddr *)&ss, len))
        return err_set(e, ERR_INVALID, "invalid_request", param,
                       "Invalid %s: %s is a cloud metadata address, which is never called.", param,
                       ip);
    k = httpc_addr_classify((const struct sockaddr *)&ss, len);
    if (k != HTTPC_ADDR_PUBLIC && !allow_private)
        return err_set(e, ERR_INVALID, "invalid_request", param,
                       "Invalid %s: %s is %s; this server calls public addresses only.", param, ip,
                       httpc_addr_class_desc(k));
    return 0;
}

/* ---- Headers ---- */

/* Headers the transport sets, or that would change how a request is framed, routed or kept:
 * never taken from a client. */
static const char *const reserved[] = {
    "accept",
    "connection",
    "content-encoding",
    "content-length",
    "content-type",
    "cookie2",
    "expect",
    "host",
    "keep-alive",
    "last-event-id",
    "mcp-protocol-version",
    "mcp-session-id",
    "proxy-authorization",
    "proxy-connection",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    NULL,
};

/* An RFC 9110 tchar. */
static bool tchar(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           (c && strchr("!#$%&'*+-.^_`|~", c) != NULL);
}

static bool token_ok(const char *s, size_t len)
{
    if (len == 0 || len > MCPC_HEADER_NAME_MAX)
        return false;
    for (size_t i = 0; i < len; i++) {
        if (!tchar(s[i]))
            return false;
    }
    return true;
}

static bool is_reserved(const char *name)
{
    for (size_t i = 0; reserved[i]; i++) {
        if (strcasecmp(reserved[i], name) == 0)
            return true;
    }
    return false;
}

/* No control character but a tab (CR and LF above all), and no DEL. */
static bool value_ok(const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if ((c < 0x20 && c != '\t') || c == 0x7f)
            return false;
    }
    return true;
}

/* See mcpc.h. */
int mcpc_headers_check(json_t *headers, const char *param, struct err *e)
{
    const char *names[MCPC_HEADERS_MAX];
    const char *key;
    json_t *v;
    size_t n = 0;

    if (!json_is_object(headers) || json_object_size(headers) > MCPC_HEADERS_MAX)
        return err_set(e, ERR_INVALID, "invalid_request", param,
                       "Invalid %s: must be an object of at most %d headers {name: value}.", param,
                       MCPC_HEADERS_MAX);
    json_object_foreach(headers, key, v)
    {
        const char *s = json_string_value(v);
        size_t len = json_string_length(v);
        if (!token_ok(key, strlen(key)))
            return err_set(e, ERR_INVALID, "invalid_request", param,
                           "Invalid %s: a header name is an HTTP token of 1 to %d characters "
                           "(letters, digits and !#$%%&'*+-.^_`|~).",
                           param, MCPC_HEADER_NAME_MAX);
        if (is_reserved(key))
            return err_set(e, ERR_INVALID, "invalid_request", param,
                           "Invalid %s: %s is set by the server itself and cannot be given.", param,
                           key);
        for (size_t i = 0; i < n; i++) {
            if (strcasecmp(names[i], key) == 0)
                return err_set(e, ERR_INVALID, "invalid_request", param,
                               "Invalid %s: %s and %s are the same header.", param, names[i], key);
        }
        names[n++] = key;
        if (!s || len == 0 || !utf8_valid(s, len) || jb_utf8_len(s, len) > MCPC_HEADER_VALUE_MAX ||
            !value_ok(s, len)) {
            char at[128];
            snprintf(at, sizeof(at), "%s.%s", param, key);
            return err_set(e, ERR_INVALID, "invalid_request", at,
                           "Invalid %s: a header value is a string of 1 to %d characters "
                           "without control characters (no line breaks).",
                           at, MCPC_HEADER_VALUE_MAX);
        }
    }
    return 0;
}

/* See mcpc.h. */
json_t *mcpc_headers_schema(void)
{
    return json_pack("{s:s,s:i,s:{s:s},s:{s:s,s:i,s:i,s:s}}", "type", "object", "maxProperties",
                     MCPC_HEADERS_MAX, "propertyNames", "pattern",
                     "^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,100}$", "additionalProperties", "type",
                     "string", "minLength", 1, "maxLength", MCPC_HEADER_VALUE_MAX, "pattern",
                     "^[^\\u0000-\\u0008\\u000a-\\u001f\\u007f]*$");
}

/* See mcpc.h. */
int mcpc_header_lines(const char *json, struct arena *a, const char ***lines, size_t *n)
{
    json_t *o;
    const char *key;
    json_t *v;
    size_t i = 0;

    *lines = NULL;
    *n = 0;
    if (!json || !*json)
        return 0;
    o = json_loads(json, 0, NULL);
    if (!json_is_object(o) || json_object_size(o) > MCPC_HEADERS_MAX) {
        json_decref(o);
        return ERR_INVALID;
    }
    *lines = arena_alloc(a, (json_object_size(o) + 1) * sizeof(**lines));
    json_object_foreach(o, key, v)
    {
        const char *s = json_string_value(v);
        if (!s || !token_ok(key, strlen(key)) || !value_ok(s, strlen(s))) {
            json_decref(o);
            *lines = NULL;
            return ERR_INVALID;
        }
        (*lines)[i++] = arena_printf(a, "%s: %s", key, s);
    }
    *n = i;
    json_decref(o);
    return 0;
}
