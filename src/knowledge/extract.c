/* SPDX-License-Identifier: MIT */
/*
 * extract.c: the entry of knowledge/extract. It tells what an upload is (extract_detect) and
 * gets its text (extract_file) by running the extractor in a child process, so that a crash,
 * hang or memory blow-up in a parser of untrusted files fails that document and not the
 * server (contract §11). The extractors are in extract_text.c (pure: TXT, MD, CSV, HTML,
 * JSON) and extract_docx.c (libzip + libxml2); PDFs go to poppler's pdftotext.
 *
 * DESIGN
 * Detection trusts content over names. "%PDF-" at the start is a PDF; a ZIP ("PK\3\4") is a
 * DOCX when a "word/" part shows in its first bytes (or, when the head is too short to show
 * one, when the name or type says DOCX), and unsupported otherwise (xlsx, pptx, plain zips).
 * Anything else must look like UTF-8 text (no NUL, few control characters, extract_text.c's
 * encoding rule); then a strong sign in the content (an HTML doctype or <html>, a JSON object
 * or array) decides, and after it the file name's extension, then the declared content type,
 * then plain text. So a text file named .pdf is text, and binary named .txt is unsupported.
 *
 * The child. extract_file() forks; the child:
 *   - becomes the leader of its own process group (so a kill reaches anything it starts),
 *     asks to die with its parent, and may gain no privileges;
 *   - restores default signal handling, except SIGXFSZ, which it ignores so that a write to a
 *     file fails instead of killing it; unblocks all signals;
 *   - gets the result pipe as stdout, a diagnostics pipe as stderr, /dev/null as stdin, and
 *     closes every other descriptor (the server's sockets, database, keys);
 *   - sets RLIMIT_CPU (the timeout, rounded up), RLIMIT_FSIZE 0, RLIMIT_CORE 0 and RLIMIT_AS
 *     'max_memory' (the address space of the program it execs; none for a sanitized build's
 *     helper, whose shadow memory alone is terabytes);
 *   - then execs: pdftotext for a PDF (with only PATH in its environment), and for every other
 *     type the extraction helper, which is this same binary run as
 *     `workforce extract-helper TYPE ...` with an EMPTY environment and the file as stdin. The
 *     helper seeds jansson and sets its time zone (what the libraries would open a file for),
 *     enters a seccomp allow-list (sandbox/: read and write of the descriptors it has, memory,
 *     the clock, exit; anything else kills it), and only then reads the file, parses it from
 *     memory (DOCX too, with libzip over a buffer), writes the text to stdout and exits with 0
 *     or an EXTRACT_R_* reason (extract_int.h). No byte of the server's memory or environment
 *     is in the process that parses the file.
 * The parent reads both pipes with poll() until both close, keeping at most 'max_text' bytes
 * of text and 4 KiB of diagnostics, and kills the whole group (SIGKILL) when the wall-clock
 * deadline passes or the text passes its cap. It then reaps the child and maps what happened
 * (exit status, signal, timeout, cap) to one clear, client-safe ERR_INVALID message. The
 * diagnostics are only searched for a known phrase (pdftotext's "Incorrect password"); they
 * are never shown to the client.
 *
 * What comes back is not trusted either: it is capped, re-cleaned (valid UTF-8, no control
 * characters) and, for a PDF, split into pages at the form feeds pdftotext puts after each
 * page. A text with no visible character fails ("no text"): a scanned PDF has no text layer.
 *
 * Limits of this isolation: pdftotext runs without the seccomp filter (it opens its fonts and
 * configuration files); it is a fresh exec with an empty environment and the same resource
 * limits. The in-process runner (CHILD_INPROC) remains for the unit tests of the runner itself.
 */
#include "extract.h"
#include "extract_int.h"

#include "../core/clock.h"
#include "../core/err.h"
#include "../core/mem.h"
#include "../core/str.h"
#include "../sandbox/sandbox.h"

#include <errno.h>
#include <jansson.h>
#include <sys/random.h>
#include <time.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ---- Detection ---- */

static unsigned char lc(unsigned char c)
{
    return c >= 'A' && c <= 'Z' ? (unsigned char)(c + 32) : c;
}

/* Whether the C strings 'a' and 'b' are equal ignoring ASCII case. */
static bool eq_nocase(const char *a, const char *b)
{
    while (*a && *b && lc((unsigned char)*a) == lc((unsigned char)*b)) {
        a++;
        b++;
    }
    return *a == '\0' && *b == '\0';
}

/* Whether the 'n' bytes at 'p' start with the lower-case 'lit', ignoring ASCII case. */
static bool head_is(const unsigned char *p, size_t n, const char *lit)
{
    size_t k = strlen(lit);

    if (n < k)
        return false;
    for (size_t i = 0; i < k; i++) {
        if (lc(p[i]) != (unsigned char)lit[i])
            return false;
    }
    return true;
}

/* Whether 'lit' (lower case) occurs in the 'n' bytes at 'p', ignoring ASCII case. */
static bool has_nocase(const unsigned char *p, size_t n, const char *lit)
{
    for (size_t i = 0; i < n; i++) {
        if (head_is(p + i, n - i, lit))
            return true;
    }
    return false;
}

static const struct {
    const char *ext;
    enum extract_type t;
} exts[] = {
    {"txt", EXTRACT_TXT},    {"text", EXTRACT_TXT},    {"log", EXTRACT_TXT},
    {"md", EXTRACT_MD},      {"markdown", EXTRACT_MD}, {"mdown", EXTRACT_MD},
    {"mkd", EXTRACT_MD},     {"html", EXTRACT_HTML},   {"htm", EXTRACT_HTML},
    {"xhtml", EXTRACT_HTML}, {"csv", EXTRACT_CSV},     {"tsv", EXTRACT_CSV},
    {"json", EXTRACT_JSON},  {"pdf", EXTRACT_PDF},     {"docx", EXTRACT_DOCX},
};

static const struct {
    const char *mime;
    enum extract_type t;
} mimes[] = {
    {"text/plain", EXTRACT_TXT},
    {"text/markdown", EXTRACT_MD},
    {"text/x-markdown", EXTRACT_MD},
    {"text/html", EXTRACT_HTML},
    {"application/xhtml+xml", EXTRACT_HTML},
    {"text/csv", EXTRACT_CSV},
    {"text/tab-separated-values", EXTRACT_CSV},
    {"application/json", EXTRACT_JSON},
    {"text/json", EXTRACT_JSON},
    {"application/pdf", EXTRACT_PDF},
    {"application/vnd.openxmlformats-officedocument.wordprocessingml.document", EXTRACT_DOCX},
};

/* The type the file name's extension names, or EXTRACT_UNKNOWN. */
static enum extract_type by_name(const char *filename)
{
    const char *dot, *slash;

    if (!filename)
        return EXTRACT_UNKNOWN;
    dot = strrchr(filename, '.');
    slash = strrchr(filename, '/');
    if (!dot || (slash && slash > dot))
        return EXTRACT_UNKNOWN;
    for (size_t i = 0; i < sizeof(exts) / sizeof(exts[0]); i++) {
        if (eq_nocase(dot + 1, exts[i].ext))
            return exts[i].t;
    }
    return EXTRACT_UNKNOWN;
}

/* The type a Content-Type value names ("text/html; charset=utf-8"), or EXTRACT_UNKNOWN. */
static enum extract_type by_content_type(const char *ct)
{
    char media[96];
    size_t n = 0;

    if (!ct)
        return EXTRACT_UNKNOWN;
    while (*ct == ' ' || *ct == '\t')
        ct++;
    while (ct[n] && ct[n] != ';' && ct[n] != ' ' && ct[n] != '\t' && n + 1 < sizeof(media)) {
        media[n] = (char)lc((unsigned char)ct[n]);
        n++;
    }
    media[n] = '\0';
    for (size_t i = 0; i < sizeof(mimes) / sizeof(mimes[0]); i++) {
        if (strcmp(media, mimes[i].mime) == 0)
            return mimes[i].t;
    }
    if (n > 5 && strcmp(media + n - 5, "+json") == 0)
        return EXTRACT_JSON;
    return EXTRACT_UNKNOWN;
}

/* What the name says, else what the content type says. */
static enum extract_type by_hint(const char *filename, const char *content_type)
{
    enum extract_type t = by_name(filename);

    return t != EXTRACT_UNKNOWN ? t : by_content_type(content_type);
}

static bool is_text_type(enum extract_type t)
{
    return t == EXTRACT_TXT || t == EXTRACT_MD || t == EXTRACT_HTML || t == EXTRACT_CSV ||
           t == EXTRACT_JSON;
}

/* Whether the head looks like UTF-8 text (a sequence cut by the end of the head is fine). */
static bool looks_text(const unsigned char *p, size_t n)
{
    size_t ctl = 0, cut = n;

    for (size_t i = 0; i < n; i++) {
        if (p[i] == 0)
            return false;
        if ((p[i] < 0x20 && p[i] != '\t' && p[i] != '\n' && p[i] != '\r' && p[i] != '\f' &&
             p[i] != '\v' && p[i] != 0x1B) ||
            p[i] == 0x7F)
            ctl++;
    }
    if (ctl > n / 32)
        return false;
    /* Drop a lead byte (and its continuations) that the end of the head may have cut. */
    for (size_t k = 1; k <= 3 && k <= n; k++) {
        unsigned char c = p[n - k];
        if (c >= 0xC0) {
            size_t want = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
            if (want > k)
                cut = n - k;
            break;
        }
        if (c < 0x80)
            break;
    }
    return extract_utf8_mostly(extract_utf8_bad((const char *)p, cut), cut);
}

/* A strong sign of HTML or JSON at the start of text, or EXTRACT_UNKNOWN. */
static enum extract_type sniff_text(const unsigned char *p, size_t n)
{
    size_t i = 0;

    if (n >= 3 && memcmp(p, "\xEF\xBB\xBF", 3) == 0)
        i = 3;
    while (i < n && (p[i] == ' ' || p[i] == '\t' || p[i] == '\n' || p[i] == '\r'))
        i++;
    if (i >= n)
        return EXTRACT_UNKNOWN;
    if (p[i] == '<') {
        if (head_is(p + i, n - i, "<!doctype html") || head_is(p + i, n - i, "<html") ||
            has_nocase(p + i, n - i, "<html") || has_nocase(p + i, n - i, "<body"))
            return EXTRACT_HTML;
        return EXTRACT_UNKNOWN;
    }
    if (p[i] == '{' || p[i] == '[') {
        size_t j = i + 1;
        while (j < n && (p[j] == ' ' || p[j] == '\t' || p[j] == '\n' || p[j] == '\r'))
            j++;
        if (j < n && (p[j] == '"' || (p[i] == '{' && p[j] == '}') ||
                      (p[i] == '[' && (p[j] == '{' || p[j] == ']' || p[j] == '['))))
            return EXTRACT_JSON;
    }
    return EXTRACT_UNKNOWN;
}

/*
 * The type of an upload (see DESIGN): 'head' is its first 'n' bytes (NULL when 'n' is 0; give
 * a few KiB), 'filename' and 'content_type' what the client said (either may be NULL). With
 * no bytes at all only the name and type are left to go by. Returns EXTRACT_UNKNOWN for what
 * we cannot read.
 */
enum extract_type extract_detect(const char *filename, const char *content_type,
                                 const unsigned char *head, size_t n)
{
    enum extract_type hint = by_hint(filename, content_type), sniff;

    if (!head || n == 0)
        return hint;
    if (n >= 5 && memcmp(head, "%PDF-", 5) == 0)
        return EXTRACT_PDF;
    if (n >= 4 && memcmp(head, "PK\x03\x04", 4) == 0) {
        if (memmem(head, n, "word/", 5))
            return EXTRACT_DOCX;
        if (memmem(head, n, "xl/", 3) || memmem(head, n, "ppt/", 4))
            return EXTRACT_UNKNOWN;
        return hint == EXTRACT_DOCX ? EXTRACT_DOCX : EXTRACT_UNKNOWN;
    }
    if (!looks_text(head, n))
        return EXTRACT_UNKNOWN;
    sniff = sniff_text(head, n);
    if (sniff != EXTRACT_UNKNOWN)
        return sniff;
    return is_text_type(hint) ? hint : EXTRACT_TXT;
}

/* The media type of 't', as the document record shows it. */
const char *extract_type_mime(enum extract_type t)
{
    switch (t) {
    case EXTRACT_TXT:
        return "text/plain";
    case EXTRACT_MD:
        return "text/markdown";
    case EXTRACT_HTML:
        return "text/html";
    case EXTRACT_CSV:
        return "text/csv";
    case EXTRACT_JSON:
        return "application/json";
    case EXTRACT_PDF:
        return "application/pdf";
    case EXTRACT_DOCX:
        return "application/vnd.openxmlformats-officedocument.wordprocessingml.document";
    case EXTRACT_UNKNOWN:
        break;
    }
    return "application/octet-stream";
}

/* A short name of 't' for messages ("the PDF file could not be read"). */
const char *extract_type_name(enum extract_type t)
{
    switch (t) {
    case EXTRACT_TXT:
        return "text";
    case EXTRACT_MD:
        return "Markdown";
    case EXTRACT_HTML:
        return "HTML";
    case EXTRACT_CSV:
        return "CSV";
    case EXTRACT_JSON:
        return "JSON";
    case EXTRACT_PDF:
        return "PDF";
    case EXTRACT_DOCX:
        return "DOCX";
    case EXTRACT_UNKNOWN:
        break;
    }
    return "unknown";
}

/* ---- The child process ---- */

/*
 * What runs in the child after the setup: exec a program (and return only when that fails)
 * or extract, write the text to stdout, and return the exit status (0 or an EXTRACT_R_*).
 */
typedef int (*child_fn)(void *arg, const struct extract_limits *lim);

enum child_mode {
    CHILD_EXEC,   /* 'fn' execs: RLIMIT_AS is max_memory */
    CHILD_HELPER, /* 'fn' execs our helper: max_memory too, none in a sanitized build */
    CHILD_INPROC  /* 'fn' is our code: RLIMIT_AS is the forked image plus max_memory */
};

#if defined(__SANITIZE_ADDRESS__)
#define SANITIZED_BUILD 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define SANITIZED_BUILD 1
#endif
#endif

/* How a child ended. */
enum child_end {
    CHILD_EXITED,   /* 'code' is its exit status */
    CHILD_SIGNALED, /* 'code' is the signal that killed it */
    CHILD_TIMEOUT,  /* we killed it at the deadline */
    CHILD_TOO_MUCH  /* we killed it when the text passed max_text */
};

struct child_status {
    enum child_end end;
    int code;
};

#define DIAG_MAX 4096

/* Bytes of address space mapped now (from /proc/self/statm), or 0 when unknown. */
static size_t mapped_bytes(void)
{
    char b[64];
    size_t pages = 0;
    ssize_t r;
    int fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
    long pg = sysconf(_SC_PAGESIZE);

    if (fd < 0)
        return 0;
    r = read(fd, b, sizeof(b));
    close(fd);
    for (ssize_t i = 0; i < r && b[i] >= '0' && b[i] <= '9'; i++)
        pages = pages * 10 + (size_t)(b[i] - '0');
    return pg > 0 ? pages * (size_t)pg : 0;
}

/* Set the limit 'res' to 'soft'/'hard', never above the hard limit we already have. */
static void limit(int res, rlim_t soft, rlim_t hard)
{
    struct rlimit rl;

    if (getrlimit(res, &rl) == 0 && rl.rlim_max != RLIM_INFINITY) {
        if (hard > rl.rlim_max)
            hard = rl.rlim_max;
        if (soft > hard)
            soft = hard;
    }
    rl.rlim_cur = soft;
    rl.rlim_max = hard;
    (void)setrlimit(res, &rl);
}

/* The child side of run_child(): set up (see DESIGN), run 'fn', exit. Never returns. */
static void child_main(child_fn fn, void *arg, enum child_mode mode,
                       const struct extract_limits *lim, int out_w, int diag_w, pid_t parent)
{
    sigset_t none;
    rlim_t cpu, as;
    size_t base = 0;
    int o, d, nul;

    (void)setpgid(0, 0);
    (void)prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent)
        _exit(EXTRACT_R_UNREADABLE); /* the server is gone */
    (void)prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
    for (int s = 1; s < NSIG; s++) {
        if (s != SIGKILL && s != SIGSTOP)
            (void)signal(s, s == SIGXFSZ ? SIG_IGN : SIG_DFL);
    }
    sigemptyset(&none);
    (void)sigprocmask(SIG_SETMASK, &none, NULL);

    /* Move the pipe ends above 2 first, so that no dup2() below clobbers the other. */
    o = fcntl(out_w, F_DUPFD, 3);
    d = fcntl(diag_w, F_DUPFD, 3);
    if (o < 0 || d < 0 || dup2(o, 1) < 0 || dup2(d, 2) < 0)
        _exit(EXTRACT_R_NOMEM);
    nul = open("/dev/null", O_RDONLY);
    if (nul > 0) {
        (void)dup2(nul, 0);
    } else if (nul < 0) {
        close(0);
    }
    if (close_range(3, ~0U, 0) != 0) {
        for (int fd = 3; fd < 65536; fd++)
            close(fd);
    }

    as = (rlim_t)lim->max_memory;
#ifdef SANITIZED_BUILD
    if (mode == CHILD_HELPER)
        as = RLIM_INFINITY; /* the sanitizer's shadow memory is terabytes of address space */
#endif
    if (mode == CHILD_INPROC) {
        base = mapped_bytes();
        as = base ? (rlim_t)(base + lim->max_memory) : RLIM_INFINITY; /* unknown: no cap */
    }
    cpu = (rlim_t)((lim->timeout_ms + 999) / 1000);
    limit(RLIMIT_CPU, cpu, cpu + 1);
    limit(RLIMIT_FSIZE, 0, 0);
    limit(RLIMIT_CORE, 0, 0);
    limit(RLIMIT_AS, as, as);

    _exit(fn(arg, lim));
}

/*
 * Append what can be read from 'fd' now to 'b'. With 'truncate' what passes the cap of 'b'
 * is dropped; else a refused append is kept in '*rc'. Returns 0 at EOF (or on a read error),
 * -1 while the pipe is open.
 */
static int drain(int fd, struct buf *b, bool truncate, int *rc)
{
    char chunk[65536];
    ssize_t r = read(fd, chunk, sizeof(chunk));

    if (r < 0)
        return errno == EINTR || errno == EAGAIN ? -1 : 0;
    if (r == 0)
        return 0;
    if (truncate) {
        size_t room = DIAG_MAX - buf_len(b);
        (void)buf_append(b, chunk, room < (size_t)r ? room : (size_t)r);
    } else if (!*rc) {
        *rc = buf_append(b, chunk, (size_t)r);
    }
    return -1;
}

/* Kill the child's whole process group, then the child itself should it have left it. */
static void kill_child(pid_t pid)
{
    (void)kill(-pid, SIGKILL);
    (void)kill(pid, SIGKILL);
}

/* Sleep about 'ms' milliseconds. */
static void nap(long ms)
{
    struct timespec ts = {0, ms * 1000000L};

    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* What watching a child saw: why the watch ended early, and the text's outcome. */
struct watch {
    int64_t deadline; /* monotonic ms */
    bool timed_out, cancelled;
    int text_rc; /* ERR_LIMIT: the text passed its cap; ERR_NOMEM: it could not grow */
};

/* Read the child's stdout into 'text' and its stderr into 'diag' until both pipes close, the
 * deadline passes, the caller cancels, or the text passes its cap. */
static void read_child(int out_fd, int diag_fd, const struct extract_limits *lim, struct buf *text,
                       struct buf *diag, struct watch *w)
{
    bool out_open = true, diag_open = true;
    int diag_rc = 0;

    while (out_open || diag_open) {
        struct pollfd pf[2];
        int64_t left = w->deadline - clock_mono_us() / 1000;
        nfds_t k = 0;
        int pr;

        if (left <= 0) {
            w->timed_out = true;
            return;
        }
        if (lim->cancel && atomic_load(lim->cancel)) {
            w->cancelled = true;
            return;
        }
        if (out_open)
            pf[k++] = (struct pollfd){.fd = out_fd, .events = POLLIN};
        if (diag_open)
            pf[k++] = (struct pollfd){.fd = diag_fd, .events = POLLIN};
        pr = poll(pf, k, left > 200 ? 200 : (int)left);
        if (pr < 0 && errno != EINTR)
            return;
        for (nfds_t i = 0; pr > 0 && i < k; i++) {
            if (!pf[i].revents)
                continue;
            if (pf[i].fd == out_fd)
                out_open = drain(out_fd, text, false, &w->text_rc) != 0;
            else
                diag_open = drain(diag_fd, diag, true, &diag_rc) != 0;
        }
        if (w->text_rc)
            return;
    }
}

/* Wait for child 'pid' to exit without reaping it, so the group id stays ours while it is
 * killed, unless the watch has already ended (or ends now: deadline, cancel). */
static void await_exit(pid_t pid, const struct extract_limits *lim, struct watch *w)
{
    while (!w->timed_out && !w->text_rc && !w->cancelled) {
        siginfo_t si;

        memset(&si, 0, sizeof(si));
        if (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) != 0 && errno != EINTR)
            return;
        if (si.si_pid == pid)
            return;
        if (clock_mono_us() / 1000 >= w->deadline)
            w->timed_out = true;
        else if (lim->cancel && atomic_load(lim->cancel))
            w->cancelled = true;
        else
            nap(2);
    }
}

/* How the reaped child ended ('status' of waitpid), after the watch 'w', into '*st'. */
static int child_end(const struct watch *w, int status, struct child_status *st, struct err *e)
{
    if (w->text_rc == ERR_LIMIT) {
        st->end = CHILD_TOO_MUCH;
    } else if (w->text_rc) {
        return w->text_rc;
    } else if (w->cancelled) {
        return err_set(e, ERR_CONFLICT, "invalid_request", NULL, "cancelled");
    } else if (w->timed_out) {
        st->end = CHILD_TIMEOUT;
    } else if (WIFEXITED(status)) {
        st->end = CHILD_EXITED;
        st->code = WEXITSTATUS(status);
    } else if (WIFSIGNALED(status)) {
        st->end = CHILD_SIGNALED;
        st->code = WTERMSIG(status);
    } else {
        st->end = CHILD_SIGNALED;
        st->code = SIGKILL;
    }
    return 0;
}

/*
 * Run 'fn' with 'arg' in a child process set up as the DESIGN says ('mode' picks the memory
 * limit), under the limits 'lim'. The child's stdout is appended to 'text' (whose cap should
 * be lim->max_text), its stderr to 'diag' (cap DIAG_MAX). '*st' tells how the child ended.
 * Returns 0 when the child ran (whatever it did), ERR_NOMEM when 'text' could not grow, or
 * ERR_INTERNAL when no child could be started (e->msg says why).
 */
static int run_child(child_fn fn, void *arg, enum child_mode mode, const struct extract_limits *lim,
                     struct buf *text, struct buf *diag, struct child_status *st, struct err *e)
{
    int out_p[2] = {-1, -1}, diag_p[2] = {-1, -1};
    struct watch w = {0, false, false, 0};
    pid_t pid, reaped, parent = getpid();
    int status = 0, rc = 0;

    st->end = CHILD_EXITED;
    st->code = 0;
    if (pipe2(out_p, O_CLOEXEC) != 0 || pipe2(diag_p, O_CLOEXEC) != 0) {
        rc = err_set(e, ERR_INTERNAL, "internal_error", NULL, "cannot start the extractor");
        goto out;
    }
    w.deadline = clock_mono_us() / 1000 + lim->timeout_ms;
    pid = fork();
    if (pid < 0) {
        rc = err_set(e, ERR_INTERNAL, "internal_error", NULL, "cannot start the extractor");
        goto out;
    }
    if (pid == 0)
        child_main(fn, arg, mode, lim, out_p[1], diag_p[1], parent);
    (void)setpgid(pid, pid); /* also here: the kill below must not race the child's own */
    close(out_p[1]);
    close(diag_p[1]);
    out_p[1] = diag_p[1] = -1;
    read_child(out_p[0], diag_p[0], lim, text, diag, &w);
    await_exit(pid, lim, &w);
    kill_child(pid); /* the child, if it still runs, and anything it started */
    while ((reaped = waitpid(pid, &status, 0)) < 0 && errno == EINTR)
        ;
    if (reaped != pid)
        /* Only when SIGCHLD is ignored (children reaped by the kernel): no status to trust. */
        rc = err_set(e, ERR_INTERNAL, "internal_error", NULL, "cannot wait for the extractor");
    else
        rc = child_end(&w, status, st, e);
out:
    for (int i = 0; i < 2; i++) {
        if (out_p[i] >= 0)
            close(out_p[i]);
        if (diag_p[i] >= 0)
            close(diag_p[i]);
    }
    return rc;
}

/* ---- Extractors run in the child ---- */

/* PDF: exec pdftotext on 'arg' (the path), its stdout our pipe. Returns only on failure. */
static int pdf_child(void *arg, const struct extract_limits *lim)
{
    char a0[] = "pdftotext", a1[] = "-enc", a2[] = "UTF-8", a3[] = "-eol", a4[] = "unix";
    char a6[] = "-", e0[] = "PATH=/usr/local/bin:/usr/bin:/bin";
    char *argv[] = {a0, a1, a2, a3, a4, arg, a6, NULL};
    char *envp[] = {e0, NULL};

    (void)lim;
    execvpe(a0, argv, envp);
    return EXTRACT_R_NO_TOOL;
}

/* What helper_child() extracts. */
struct helper_job {
    const char *path;
    enum extract_type type;
    const char *probe; /* tests only: "probe-env" or "probe-open" instead of a type */
};

/*
 * Our extractors run in a fresh process: the server's own binary exec'd as
 * `workforce extract-helper ...` with an empty environment, the file as stdin and only the
 * pipes of run_child() besides. Nothing of the server's memory, and no secret of its
 * environment, reaches the code that parses the file. Returns only when the exec failed.
 */
static int helper_child(void *arg, const struct extract_limits *lim)
{
    const struct helper_job *job = arg;
    char type[24], text[24], unzipped[24], input[24], a0[] = "workforce", a1[] = "extract-helper";
    char *argv[] = {a0, a1, type, text, unzipped, input, NULL};
    char *envp[] = {NULL};
    int fd = open(job->path, O_RDONLY);

    if (fd < 0 || dup2(fd, 0) < 0)
        return EXTRACT_R_UNREADABLE;
    if (fd != 0)
        close(fd);
    if (job->probe)
        snprintf(type, sizeof(type), "%s", job->probe);
    else
        snprintf(type, sizeof(type), "%d", (int)job->type);
    snprintf(text, sizeof(text), "%zu", lim->max_text);
    snprintf(unzipped, sizeof(unzipped), "%zu", lim->max_unzipped);
    snprintf(input, sizeof(input), "%zu", lim->max_memory);
    execve(lim->helper ? lim->helper : "/proc/self/exe", argv, envp);
    return EXTRACT_R_NO_TOOL;
}

/* Write the 'n' bytes at 'p' to stdout. 0 or -1. */
static int write_all(const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(1, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Read all of stdin (at most 'cap' bytes) into a new buffer. 0 or an EXTRACT_R_* reason. */
static int read_stdin(size_t cap, char **out, size_t *n)
{
    size_t got = 0, alloc = 1 << 16;
    char *p = mem_try_alloc(alloc);

    *out = NULL;
    *n = 0;
    if (!p)
        return EXTRACT_R_NOMEM;
    for (;;) {
        ssize_t r;
        if (got == alloc) {
            char *q;
            if (alloc >= cap) {
                free(p);
                return EXTRACT_R_NOMEM;
            }
            alloc = alloc * 2 < cap ? alloc * 2 : cap;
            q = realloc(p, alloc);
            if (!q) {
                free(p);
                return EXTRACT_R_NOMEM;
            }
            p = q;
        }
        r = read(0, p + got, alloc - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            free(p);
            return EXTRACT_R_UNREADABLE;
        }
        if (r == 0)
            break;
        got += (size_t)r;
    }
    *out = p;
    *n = got;
    return 0;
}

/* The extractor of 't' over the 'n' bytes at 'data' into 'out': 0 or an EXTRACT_R_* reason. */
static int run_extractor(enum extract_type t, const char *data, size_t n, size_t max_unzipped,
                         struct buf *out)
{
    int rc;
    if (t == EXTRACT_DOCX)
        return extract_docx(data, n, max_unzipped, out);
    switch (t) {
    case EXTRACT_HTML:
        rc = extract_html(data, n, out);
        break;
    case EXTRACT_JSON:
        rc = extract_json(data, n, out);
        break;
    default:
        rc = extract_text(data, n, out);
        break;
    }
    if (rc == ERR_LIMIT)
        return EXTRACT_R_TEXT_LIMIT;
    if (rc == ERR_NOMEM)
        return EXTRACT_R_NOMEM;
    if (rc)
        return t == EXTRACT_JSON ? EXTRACT_R_BAD_JSON : EXTRACT_R_NOT_TEXT;
    return 0;
}

static uint64_t arg_u64(const char *s)
{
    uint64_t v = 0;
    return str_to_u64(str_c(s), &v) == 0 ? v : 0;
}

/*
 * `workforce extract-helper TYPE MAX_TEXT MAX_UNZIPPED MAX_INPUT` (see extract.h). The filter
 * is entered before a byte of the file is read; the process then ends with _exit(), so that
 * nothing runs after the parse (no atexit handler, no leak scan that the filter would kill).
 */
void extract_helper_main(int argc, char **argv)
{
    struct buf out;
    char *data = NULL;
    size_t n = 0;
    int rc;
    uint64_t type;

    if (argc != 6)
        _exit(EXTRACT_R_UNREADABLE);
    /* What the libraries would open a file for, done before the filter: jansson's hash seed
     * (else read from /dev/urandom) and the time zone libzip's date conversion asks for (else
     * /etc/localtime; the dates are not used). */
    {
        uint32_t seed = 0;
        if (getrandom(&seed, sizeof(seed), 0) != (ssize_t)sizeof(seed))
            seed = (uint32_t)getpid() ^ (uint32_t)clock_mono_us();
        json_object_seed(seed ? seed : 1);
        (void)setenv("TZ", "UTC0", 1);
        tzset();
    }
    if (sandbox_enter() != 0) {
        static const char msg[] = "extract-helper: cannot enter the seccomp filter\n";
        (void)!write(2, msg, sizeof(msg) - 1);
        _exit(EXTRACT_R_UNREADABLE);
    }
    if (strcmp(argv[2], "probe-env") == 0) { /* tests: the environment the helper got */
        for (char **e = environ; *e; e++) {
            (void)!write(1, *e, strlen(*e));
            (void)!write(1, "\n", 1);
        }
        _exit(0);
    }
    if (strcmp(argv[2], "probe-open") == 0) /* tests: a call outside the list kills */
        _exit(open("/etc/hostname", O_RDONLY) >= 0 ? 0 : EXTRACT_R_UNREADABLE);
    type = arg_u64(argv[2]);
    if (type == EXTRACT_UNKNOWN || type == EXTRACT_PDF || type > EXTRACT_DOCX)
        _exit(EXTRACT_R_UNREADABLE);
    buf_init(&out, (size_t)arg_u64(argv[3]));
    rc = read_stdin((size_t)arg_u64(argv[5]), &data, &n);
    if (!rc)
        rc = run_extractor((enum extract_type)type, data, n, (size_t)arg_u64(argv[4]), &out);
    if (!rc && write_all(buf_ptr(&out), buf_len(&out)) != 0)
        rc = EXTRACT_R_UNREADABLE;
    _exit(rc);
}

/* ---- The result ---- */

/* What an EXTRACT_R_* exit status means, for the client. */
static const char *reason_msg(int code)
{
    switch (code) {
    case EXTRACT_R_UNREADABLE:
        return "the file cannot be read";
    case EXTRACT_R_NOT_TEXT:
        return "it is not UTF-8 text";
    case EXTRACT_R_BAD_JSON:
        return "it is not valid JSON";
    case EXTRACT_R_NOT_DOCX:
        return "it is damaged or not a Word document";
    case EXTRACT_R_BAD_XML:
        return "its document.xml is not well-formed XML";
    case EXTRACT_R_ZIP_TOO_BIG:
        return "it unzips to more than the size limit";
    case EXTRACT_R_ZIP_TOO_MANY:
        return "it holds too many parts";
    case EXTRACT_R_ENCRYPTED:
        return "it is encrypted";
    case EXTRACT_R_TEXT_LIMIT:
        return "its text is longer than the limit";
    case EXTRACT_R_NOMEM:
        return "it needs more memory than allowed";
    default:
        return NULL;
    }
}

/* Set 'e' for a child that did not succeed; returns the error code. */
static int child_error(enum extract_type t, const struct child_status *st, const struct buf *diag,
                       const struct extract_limits *lim, struct err *e)
{
    const char *what = extract_type_name(t), *why;

    switch (st->end) {
    case CHILD_TIMEOUT:
        return err_set(e, ERR_INVALID, "unsupported_file_type", "file",
                       "the %s file could not be read: extraction took longer than %ld ms", what,
                       lim->timeout_ms);
    case CHILD_TOO_MUCH:
        return err_set(e, ERR_INVALID, "unsupported_file_type", "file",
                       "the %s file could not be read: its text is longer than %zu bytes", what,
                       lim->max_text);
    case CHILD_SIGNALED:
        if (st->code == SIGXCPU)
            why = "extraction used more CPU time than allowed";
        else if (st->code == SIGKILL)
            why = "the extractor was killed (out of memory?)";
        else
            why = "the extractor crashed";
        return err_set(e, ERR_INVALID, "unsupported_file_type", "file",
                       "the %s file could not be read: %s", what, why);
    case CHILD_EXITED:
        break;
    }
    if (st->code == EXTRACT_R_NO_TOOL)
        return err_set(e, ERR_INTERNAL, "internal_error", NULL,
                       "%s extraction is not available on this server", what);
    if (t == EXTRACT_PDF) {
        /* pdftotext: 1 cannot open or parse (or wrong password), 3 permissions, 99 other. */
        if (memmem(buf_ptr(diag), buf_len(diag), "password", 8))
            why = "it is encrypted (password-protected)";
        else if (st->code == 3)
            why = "it does not permit text extraction";
        else if (st->code == 1)
            why = "it is damaged or not a PDF";
        else
            why = reason_msg(st->code);
    } else {
        why = reason_msg(st->code);
    }
    if (!why)
        return err_set(e, ERR_INVALID, "unsupported_file_type", "file",
                       "the %s file could not be read: the extractor failed (status %d)", what,
                       st->code);
    return err_set(e, ERR_INVALID, "unsupported_file_type", "file",
                   "the %s file could not be read: %s", what, why);
}

/* Whether the 'n' bytes at 'p' hold something other than whitespace. */
static bool has_text(const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (p[i] != ' ' && p[i] != '\t' && p[i] != '\n')
            return true;
    }
    return false;
}

/*
 * Turn the child's raw output into 'out': cleaned again, and for a PDF cut into pages at the
 * form feeds (each page is followed by one; a page break becomes a line end in the text).
 */
static int finish(enum extract_type t, const char *raw, size_t n, struct extract_result *out)
{
    struct buf b;
    struct extract_page *pages = NULL;
    size_t npages = 0, cap = 0, i = 0;
    int rc = 0;

    buf_init(&b, n * 3 + 16); /* U+FFFD for each byte is the most it can grow */
    if (t != EXTRACT_PDF) {
        rc = extract_put_clean(&b, raw, n);
        goto out;
    }
    for (size_t k = 0; k < n; k++)
        cap += raw[k] == '\f';
    cap++;
    pages = mem_try_alloc(cap * sizeof(*pages));
    if (!pages) {
        rc = ERR_NOMEM;
        goto out;
    }
    while (i < n && !rc) {
        const char *ff = memchr(raw + i, '\f', n - i);
        size_t end = ff ? (size_t)(ff - raw) : n, start;

        if (npages > 0 && buf_len(&b) && buf_ptr(&b)[buf_len(&b) - 1] != '\n')
            rc = buf_append(&b, "\n", 1);
        start = buf_len(&b);
        if (!rc)
            rc = extract_put_clean(&b, raw + i, end - i);
        pages[npages].page = (int)(npages + 1);
        pages[npages].off = start;
        pages[npages].len = buf_len(&b) - start;
        npages++;
        i = end + 1;
    }
out:
    if (rc) {
        free(pages);
        buf_cleanup(&b);
        return rc;
    }
    out->text = buf_take(&b, &out->len);
    out->pages = npages ? pages : NULL;
    out->npages = npages;
    if (!npages)
        free(pages);
    return 0;
}

/*
 * Extract the text of the file at 'path', of type 't' (from extract_detect()), in a child
 * process under the limits 'lim' (see DESIGN). On success '*out' holds the text (valid UTF-8,
 * LF line ends) and, for a PDF, its pages; the caller frees it with extract_result_cleanup().
 * Returns 0; ERR_INVALID with a client-safe e->msg ("the PDF file could not be read: it is
 * encrypted (password-protected)") when the file is unsupported, undecodable, has no text,
 * or its extraction crashed, hung or passed a limit; ERR_IO when 'path' cannot be opened;
 * ERR_INTERNAL when no child could be started or the extractor is not installed; ERR_NOMEM.
 * On an error '*out' is empty.
 */
int extract_file(const char *path, enum extract_type t, const struct extract_limits *lim,
                 struct extract_result *out, struct err *e)
{
    struct buf text, diag;
    struct child_status st;
    struct helper_job job = {path, t, NULL};
    char *pdf_arg = NULL;
    int fd, rc = 0;

    memset(out, 0, sizeof(*out));
    buf_init(&text, lim->max_text);
    buf_init(&diag, DIAG_MAX);
    if (lim->timeout_ms <= 0 || !lim->max_memory || !lim->max_text || !lim->max_unzipped) {
        rc = err_set(e, ERR_INTERNAL, "internal_error", NULL, "bad extraction limits");
        goto out;
    }
    if (t == EXTRACT_UNKNOWN) {
        rc = err_set(e, ERR_INVALID, "unsupported_file_type", "file",
                     "the file type is not supported");
        goto out;
    }
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        rc = err_set(e, ERR_IO, "internal_error", NULL, "the uploaded file cannot be opened");
        goto out;
    }
    close(fd);

    if (t == EXTRACT_PDF) {
        /* pdftotext would take a path starting with '-' for an option. */
        size_t n = strlen(path) + 3;
        pdf_arg = xmalloc(n);
        snprintf(pdf_arg, n, "%s%s", path[0] == '-' ? "./" : "", path);
        rc = run_child(pdf_child, pdf_arg, CHILD_EXEC, lim, &text, &diag, &st, e);
    } else {
        rc = run_child(helper_child, &job, CHILD_HELPER, lim, &text, &diag, &st, e);
    }
    if (rc == ERR_NOMEM)
        err_set(e, ERR_NOMEM, "internal_error", NULL, "out of memory");
    if (rc)
        goto out;
    if (st.end != CHILD_EXITED || st.code != 0) {
        rc = child_error(t, &st, &diag, lim, e);
        goto out;
    }
    rc = finish(t, buf_ptr(&text), buf_len(&text), out);
    if (rc) {
        err_set(e, rc, "internal_error", NULL, "out of memory");
        goto out;
    }
    if (!has_text(out->text, out->len)) {
        extract_result_cleanup(out);
        if (t == EXTRACT_PDF)
            rc = err_set(e, ERR_INVALID, "unsupported_file_type", "file",
                         "the PDF file has no text layer (a scanned document?)");
        else
            rc = err_set(e, ERR_INVALID, "unsupported_file_type", "file",
                         "the %s file contains no text", extract_type_name(t));
    }
out:
    free(pdf_arg);
    buf_cleanup(&text);
    buf_cleanup(&diag);
    return rc;
}

/* Free what 'r' holds (the text and the pages); 'r' is empty again. */
void extract_result_cleanup(struct extract_result *r)
{
    free(r->text);
    free(r->pages);
    memset(r, 0, sizeof(*r));
}
