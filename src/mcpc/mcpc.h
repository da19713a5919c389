/* SPDX-License-Identifier: MIT */
/*
 * mcpc: a Model Context Protocol client over the Streamable HTTP transport, for the MCP servers
 * an organization registers (POST /v1/mcp_servers): it reads a server's tool list and calls its
 * tools. It knows no store and no tenant: the caller gives it a server's URL and its header
 * lines (the values unsealed), and keeps what comes back.
 *
 *  - check.c: what a client may register (a server's name, its URL, its headers), pure;
 *  - read.c: the answers (a JSON body or an event stream carrying the JSON-RPC response), a
 *    tools/list page, a tools/call result; pure, fuzzed (tests/fuzz/fuzz_mcpc.c);
 *  - client.c: the exchanges, over httpc's thread (no thread waits on a server), with a
 *    blocking form for threads that may wait.
 *
 * DESIGN. Every operation (list, call) is a session of its own: initialize (the newest protocol
 * version we speak is offered; the server's answer must be one of mcpc_versions),
 * notifications/initialized, then the operation's requests, then a DELETE of the session when
 * the server gave one. After initialize each POST carries `MCP-Protocol-Version` and the
 * server's `Mcp-Session-Id`. A POST accepts `application/json` and `text/event-stream`: in a
 * stream, notifications and requests of the server are skipped until the response to our
 * request, and the stream is then left. No state is kept between operations, so any node can
 * run any of them, and a server restarted in between is no matter. Each operation has one
 * deadline (MCPC_TIMEOUT_MS unless the caller says), every answer is capped
 * (MCPC_ANSWER_MAX), and a tool list is bounded (MCPC_TOOLS_MAX tools over at most
 * MCPC_PAGES_MAX pages, MCPC_TOOLS_JSON_MAX bytes kept).
 *
 * Calling a tool of a tenant's server (a turn): find the row (store_mcp_server_find() by the
 * server's name, the part between "mcp." and the next '.'; it must be enabled), open its
 * headers (integ_open(key, tenant, row.id, STORE_MCP_SEAL_WHAT, row.headers, row.headers_len,
 * arena): the JSON object text, NULL when it does not open), turn them into lines
 * (mcpc_header_lines()), and call mcpc_call_start() (or mcpc_call() on a thread that may wait)
 * with {httpc, cfg->mcp_allow_private, 0} and the tool's own name (after "mcp.<server>.").
 * The outcome's text is the result for the model: is_error says whether it is a tool error.
 *
 * Addresses (outbound rules): a server is reached only at public addresses, unless the operator
 * allows private ones (WORKFORCE_MCP_ALLOW_PRIVATE=1); cloud metadata (169.254.0.0/16,
 * fd00:ec2::/32) is refused always. The address judged is the one connected to, after DNS, on a
 * connection of its own, without proxy; redirects are not followed.
 */
#ifndef WORKFORCE_MCPC_H
#define WORKFORCE_MCPC_H

#include "../core/buf.h"
#include "../core/err.h"
#include "../core/mem.h"
#include "../httpc/sse.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct httpc;

#define MCPC_NAME_MAX 32               /* a server's name: [a-z0-9_]{1,32} */
#define MCPC_URL_MAX 2048              /* bytes of a server's URL */
#define MCPC_HEADERS_MAX 16            /* headers of one server */
#define MCPC_HEADER_NAME_MAX 100       /* bytes of a header's name */
#define MCPC_HEADER_VALUE_MAX 4096     /* characters of a header's value */
#define MCPC_TIMEOUT_MS 30000          /* one operation (list or call), every exchange included */
#define MCPC_ANSWER_MAX (4u << 20)     /* bytes of one HTTP answer read */
#define MCPC_TOOLS_MAX 1000            /* tools of one server */
#define MCPC_PAGES_MAX 64              /* tools/list pages of one listing */
#define MCPC_TOOLS_JSON_MAX (1u << 20) /* bytes of a server's tool list as kept */
#define MCPC_TOOL_NAME_MAX 128         /* bytes of a tool's name (longer ones are skipped) */
#define MCPC_DESCRIPTION_MAX 4096      /* bytes of a tool's description kept (cut beyond) */
#define MCPC_SESSION_ID_MAX 512        /* bytes of an Mcp-Session-Id */
#define MCPC_CLIENT_VERSION "1.0.0"

/* The protocol versions we speak, newest first, NULL-terminated (those of our own MCP server,
 * src/api/mcp.c). */
extern const char *const mcpc_versions[];

/* ---- What a client registers (check.c, pure) ---- */

/* Whether 'len' bytes at 's' are a server name: 1 to MCPC_NAME_MAX of [a-z0-9_]. A jb_check_fn. */
bool mcpc_name_ok(const char *s, size_t len);
/* The message of a name that is not one, for a binding table (it names the pattern). */
#define MCPC_NAME_RULE "must match ^[a-z0-9_]{1,32}$"

/*
 * Check 'url' as a server's URL: an absolute http(s) URL with a host, no user information, no
 * fragment, at most MCPC_URL_MAX bytes of printable ASCII (httpc_hook_url_parse()); a host that
 * is an IP address must be one the outbound rules let through ('allow_private': the operator's
 * setting). A host name is judged at each connection instead. 0, or ERR_INVALID on 'param'.
 */
int mcpc_url_check(const char *url, bool allow_private, const char *param, struct err *e);

/*
 * Check 'headers', a request's {name: value} object of headers to send to the server: at most
 * MCPC_HEADERS_MAX, each name an HTTP token of 1 to MCPC_HEADER_NAME_MAX bytes that is not one
 * the transport sets itself (Content-Type, Accept, Host, Mcp-Session-Id, ...) and not twice in
 * another case, each value a string of 1 to MCPC_HEADER_VALUE_MAX characters without control
 * characters (a tab is allowed). 0, or ERR_INVALID with param 'param' or "<param>.<name>".
 */
int mcpc_headers_check(json_t *headers, const char *param, struct err *e);
/* The JSON Schema of such an object (a new reference), for the API document. */
json_t *mcpc_headers_schema(void);
/*
 * The "Name: value" lines of the headers object text 'json' (what mcpc_headers_check()
 * accepted, as the caller unsealed it), in '*lines' ('*n' of them), all from 'a'. NULL or ""
 * gives none. ERR_INVALID when the text is not such an object.
 */
int mcpc_header_lines(const char *json, struct arena *a, const char ***lines, size_t *n);

/* ---- Answers (read.c, pure) ---- */

enum mcpc_body { MCPC_BODY_JSON, MCPC_BODY_SSE, MCPC_BODY_OTHER };

/* A reader of one HTTP answer's body, looking for the JSON-RPC response to request 'id'.
 * Members are private (it may live on the stack): use the functions. */
struct mcpc_reader {
    enum mcpc_body kind_;
    int64_t id_;
    size_t max_, seen_;
    struct buf json_;       /* MCPC_BODY_JSON: the body so far */
    struct sse_reader sse_; /* MCPC_BODY_SSE */
    json_t *found_;         /* the response, once read */
};

/* The kind of body 'len' bytes of a Content-Type value announce (parameters ignored). */
enum mcpc_body mcpc_body_kind(const char *ctype, size_t len);
/* A reader for a body of 'kind' answering request 'id', reading at most 'max' bytes. */
void mcpc_reader_init(struct mcpc_reader *r, enum mcpc_body kind, int64_t id, size_t max);
void mcpc_reader_cleanup(struct mcpc_reader *r); /* frees; NULL-safe members */
#define MCPC_READ_DONE 1                         /* mcpc_reader_feed(): the response is in */
/* Feed 'n' body bytes, split anywhere: 0 (read on), MCPC_READ_DONE (the response to 'id' came:
 * stop reading), ERR_LIMIT (over 'max'), ERR_INVALID (MCPC_BODY_OTHER). */
int mcpc_reader_feed(struct mcpc_reader *r, const char *p, size_t n);
/* The end of the body: 0 when the response came, else ERR_INVALID with why in 'why'. */
int mcpc_reader_finish(struct mcpc_reader *r, char *why, size_t n);
/* The response read (a JSON-RPC message with our id), or NULL; the reader keeps it. */
const json_t *mcpc_reader_response(const struct mcpc_reader *r);

/* The result object of JSON-RPC response 'msg' into '*result' (borrowed from 'msg'): 0, or
 * ERR_UPSTREAM with the error's code and message in 'why' ("MCP error -32601: ..."), or
 * ERR_INVALID when 'msg' is neither a result nor an error. */
int mcpc_response_result(const json_t *msg, const json_t **result, char *why, size_t n);

/*
 * Add the tools of tools/list result 'result' to the array 'tools' as {name, description,
 * effect ("read" when annotations.readOnlyHint is true, else "write"), input_schema}: a tool
 * whose name is not a string of 1 to MCPC_TOOL_NAME_MAX bytes, or is already there, is skipped;
 * a description is cut at MCPC_DESCRIPTION_MAX bytes; an input schema that is not an object is
 * {"type": "object"}. '*cursor' is the page's nextCursor (borrowed from 'result') or NULL. 0, or
 * ERR_INVALID ('why') when 'result' has no `tools` array, ERR_LIMIT past MCPC_TOOLS_MAX.
 */
int mcpc_tools_page(const json_t *result, json_t *tools, const char **cursor, char *why, size_t n);

/*
 * The text of tools/call result 'result' into 'out': the text of each content item, one per
 * line (an image, audio or resource without text as "[image: image/png]", "[resource: uri]",
 * ...), or the structuredContent as JSON when there is no content. '*is_error' is the result's
 * isError. 0, ERR_LIMIT when 'out' is full (what fitted is kept).
 */
int mcpc_result_text(const json_t *result, struct buf *out, bool *is_error);

/* ---- Exchanges (client.c) ---- */

struct mcpc_env {
    struct httpc *httpc;
    bool allow_private; /* WORKFORCE_MCP_ALLOW_PRIVATE: private addresses too (never metadata) */
    long timeout_ms;    /* one operation; <= 0: MCPC_TIMEOUT_MS */
};

/* A server as the caller has it: its URL and its own header lines, values in clear. */
struct mcpc_server {
    const char *url;
    const char *const *headers; /* "Name: value" lines (mcpc_header_lines()) */
    size_t nheaders;
};

/*
 * A listing ended. 'rc' 0: 'tools' is the server's whole tool list (see mcpc_tools_page()),
 * borrowed for the length of the call (json_incref() to keep it). Else 'tools' is NULL and
 * 'why' says, client-safe, what failed: ERR_UPSTREAM (no answer: "connection refused", "timed
 * out after 30 s", "address refused: ...", an HTTP status, an MCP error), ERR_INVALID (an answer
 * that breaks the protocol), ERR_LIMIT (over a bound).
 */
typedef void (*mcpc_list_fn)(void *ud, int rc, json_t *tools, const char *why);

/*
 * Read the tool list of 'srv' (everything in it is copied). 'done' is called exactly once: on
 * httpc's thread, or on this one before this returns when the client is stopping (so the
 * caller holds no lock 'done' takes). Returns 0.
 */
int mcpc_list_start(const struct mcpc_env *env, const struct mcpc_server *srv, mcpc_list_fn done,
                    void *ud);

/* What a tool call came to. */
struct mcpc_outcome {
    /*
     * 0: the tool answered; 'text' is its result (see mcpc_result_text()), and 'is_error' says
     * whether it is a tool error (isError). Else the call failed before a result came:
     * ERR_UPSTREAM (no answer, an HTTP status, a JSON-RPC error such as an unknown tool or bad
     * arguments), ERR_INVALID (an answer that breaks the protocol), ERR_LIMIT (an answer over
     * MCPC_ANSWER_MAX); 'text' then says why, client-safe, and 'is_error' is true.
     */
    int rc;
    bool is_error;
    char *text; /* NUL-terminated; owned by the outcome (mcpc_outcome_cleanup()) */
    size_t len;
};
void mcpc_outcome_cleanup(struct mcpc_outcome *o); /* frees 'text' */

/* A call ended: 'o' is the callee's, its 'text' valid for the length of the call (take it by
 * setting o->text to NULL). */
typedef void (*mcpc_call_fn)(void *ud, struct mcpc_outcome *o);

/*
 * Call tool 'tool' of 'srv' with 'args' (an object, or NULL for {}; everything is copied) under
 * the rules above; 'done' as for mcpc_list_start(). Returns 0.
 */
int mcpc_call_start(const struct mcpc_env *env, const struct mcpc_server *srv, const char *tool,
                    const json_t *args, mcpc_call_fn done, void *ud);

/*
 * The blocking forms, for a thread that may wait (never httpc's own: it would wait for itself).
 * mcpc_list(): 0 with '*tools' a new reference the caller releases, or the error with 'why'
 * (NUL-terminated, 'n' bytes). mcpc_call(): always fills 'out' (the caller cleans it up) and
 * returns out->rc. Both wait at most the operation's deadline.
 */
int mcpc_list(const struct mcpc_env *env, const struct mcpc_server *srv, json_t **tools, char *why,
              size_t n);
int mcpc_call(const struct mcpc_env *env, const struct mcpc_server *srv, const char *tool,
              const json_t *args, struct mcpc_outcome *out);

#endif
