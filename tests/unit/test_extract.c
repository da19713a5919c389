/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of knowledge/extract*.c: detection by content and by name; the pure extractors
 * (text, HTML, JSON, DOCX XML); the child runner with injected children that hang, crash,
 * spew, allocate, leave a grandchild or look for the server's descriptors; and extract_file()
 * on REAL files made here at run time in a temporary directory: a 3-page PDF from groff, a
 * DOCX from pandoc, a corrupt and an encrypted (qpdf) PDF, zip bombs (honest and lying
 * sizes), too many entries, XXE and billion-laughs DOCX. A case is skipped only when its tool
 * is not installed.
 *
 * extract.c is included (style.md G7) to reach run_child() and the error mapping.
 */
#include "../../src/knowledge/extract.c"

#include "../../src/core/buf.h"
#include "../../src/core/err.h"
#include "../../src/core/mem.h"
#include "t.h"

#include <ftw.h>
#include <stdio.h>
#include <sys/mman.h>
#include <zip.h>

static char tmp[64];

/* The path of 'name' in the temporary directory, in 'out'. */
static char *tpath(char *out, size_t n, const char *name)
{
    snprintf(out, n, "%s/%s", tmp, name);
    return out;
}

static void write_file(const char *path, const void *p, size_t n)
{
    FILE *f = fopen(path, "wb");

    if (f) {
        fwrite(p, 1, n, f);
        fclose(f);
    }
}

/* Whether the program 'name' is on the PATH. */
static bool have_tool(const char *name)
{
    const char *path = getenv("PATH");
    char dirs[4096], file[4200];
    char *save = NULL;

    if (!path)
        path = "/usr/bin:/bin";
    snprintf(dirs, sizeof(dirs), "%s", path);
    for (char *d = strtok_r(dirs, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
        snprintf(file, sizeof(file), "%s/%s", d, name);
        if (access(file, X_OK) == 0)
            return true;
    }
    return false;
}

/* Run 'argv' with stdout to 'out_path' (or /dev/null), stderr to /dev/null; exit status. */
static int run_tool(const char *out_path, char *const argv[])
{
    int status = 0;
    pid_t pid;

    fflush(stdout);
    pid = fork();
    if (pid == 0) {
        int o = open(out_path ? out_path : "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0644);
        int nul = open("/dev/null", O_WRONLY);
        if (o >= 0)
            dup2(o, 1);
        if (nul >= 0)
            dup2(nul, 2);
        execvp(argv[0], argv);
        _exit(127);
    }
    if (pid < 0 || waitpid(pid, &status, 0) < 0)
        return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* Case 'what' cannot run: its 'tool' is not installed (a TAP skip, t.h). */
static void skip_tool(const char *what, const char *tool)
{
    char why[128];

    snprintf(why, sizeof(why), "%s is not installed", tool);
    skip(what, why);
}

/* Whether the message of 'e' contains 'part'. */
static bool msg_has(const struct err *e, const char *part)
{
    bool yes = strstr(e->msg, part) != NULL;

    if (!yes)
        printf("#   message: '%s' (wanted '%s')\n", e->msg, part);
    return yes;
}

/* 'helper' is set in main(): the workforce binary beside this test's directory. */
static struct extract_limits default_lim = {
    20000, (size_t)512 << 20, (size_t)16 << 20, (size_t)64 << 20, NULL, NULL};
static char helper_path[4096];

/* ---- Detection ---- */

static void test_detect(void)
{
    subtest("detect")
    {
        static const char docx_head[] = "PK\x03\x04\x14\0\0\0\x08\0[Content_Types].xml....."
                                        "PK\x03\x04\x14\0\0\0\x08\0word/document.xml...";
        static const char xlsx_head[] = "PK\x03\x04\x14\0\0\0\x08\0[Content_Types].xml....."
                                        "PK\x03\x04\x14\0\0\0\x08\0xl/workbook.xml...";
        static const struct {
            const char *name, *ctype, *head;
            size_t n;
            enum extract_type want;
            const char *what;
        } rows[] = {
            {"report.txt", NULL, "%PDF-1.7\n%\xE2\xE3\xCF\xD3\n1 0 obj", 22, EXTRACT_PDF,
             "a PDF named .txt is a PDF"},
            {"a.pdf", "application/pdf", "Just some text.\n", 16, EXTRACT_TXT,
             "text named .pdf is text (content wins)"},
            {"a.zip", NULL, docx_head, sizeof(docx_head) - 1, EXTRACT_DOCX,
             "a ZIP with word/ is a DOCX whatever its name"},
            {"a.docx", NULL, xlsx_head, sizeof(xlsx_head) - 1, EXTRACT_UNKNOWN,
             "an XLSX named .docx is unsupported"},
            {"a.docx", NULL, "PK\x03\x04\x14\0", 6, EXTRACT_DOCX,
             "a short ZIP head named .docx is a DOCX"},
            {"a.zip", "application/zip", "PK\x03\x04\x14\0", 6, EXTRACT_UNKNOWN,
             "a plain ZIP is unsupported"},
            {"x", "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
             "PK\x03\x04\x14\0", 6, EXTRACT_DOCX, "a short ZIP head with the DOCX type"},
            {"a.txt", NULL, "<!DOCTYPE html>\n<html><body>x</body></html>", 42, EXTRACT_HTML,
             "HTML named .txt is HTML"},
            {"a.txt", NULL, "  <HTML lang=en>", 16, EXTRACT_HTML, "upper-case <HTML"},
            {"a.html", NULL, "<p>hi</p>", 9, EXTRACT_HTML, "a fragment named .html"},
            {"a.txt", NULL, "<p>hi</p>", 9, EXTRACT_TXT, "a fragment named .txt is text"},
            {"a.txt", NULL, "{\"a\": 1}", 8, EXTRACT_JSON, "a JSON object named .txt"},
            {"notes", NULL, "\xEF\xBB\xBF[ {\"a\":1} ]", 14, EXTRACT_JSON, "BOM, array of objects"},
            {"a.txt", NULL, "[1] A footnote.", 15, EXTRACT_TXT, "[1] is not a JSON sign"},
            {"a.json", NULL, "[1, 2]", 6, EXTRACT_JSON, "but named .json it is JSON"},
            {"README.MD", NULL, "# Title\n\nText.", 14, EXTRACT_MD, "Markdown by name"},
            {"x.markdown", NULL, "Text", 4, EXTRACT_MD, ".markdown"},
            {"t.csv", NULL, "a,b\n1,2\n", 8, EXTRACT_CSV, "CSV by name"},
            {NULL, "text/csv; charset=utf-8", "a,b\n1,2\n", 8, EXTRACT_CSV, "CSV by type"},
            {"t.bin", "text/markdown", "# x", 3, EXTRACT_MD, "type when the name says nothing"},
            {"t.csv", "text/markdown", "a,b", 3, EXTRACT_CSV, "the name before the type"},
            {"dir.v2/file", NULL, "plain", 5, EXTRACT_TXT, "a dot in a directory is no ext"},
            {"a.txt", NULL, "ab\0cd", 5, EXTRACT_UNKNOWN, "a NUL byte: binary"},
            {"a.png", NULL, "\x89PNG\r\n\x1a\n\0\0\0\rIHDR", 16, EXTRACT_UNKNOWN, "PNG"},
            {"a.txt", NULL, "caf\xE9 cr\xE8me br\xFBl\xE9\x65", 17, EXTRACT_UNKNOWN,
             "Latin-1 text is not UTF-8"},
            {"a.txt", NULL,
             "\xFF\xFE"
             "a\0b\0",
             6, EXTRACT_UNKNOWN, "UTF-16 is unsupported"},
            {"a.txt", NULL, "caf\xC3\xA9 cr\xC3\xA8me \xE2\x82", 15, EXTRACT_TXT,
             "UTF-8 cut by the end of the head"},
            {"a.txt", NULL, "\x01\x02\x03\x04\x05x", 6, EXTRACT_UNKNOWN, "control bytes"},
            {"a.pdf", NULL, NULL, 0, EXTRACT_PDF, "no content: by name"},
            {NULL, "Text/HTML; charset=utf-8", NULL, 0, EXTRACT_HTML, "no content: by type"},
            {"a.exe", NULL, NULL, 0, EXTRACT_UNKNOWN, "no content, unknown name"},
            {"a.exe", NULL, "hello", 5, EXTRACT_TXT, "text with an unknown name is text"},
        };
        for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
            enum extract_type got = extract_detect(rows[i].name, rows[i].ctype,
                                                   (const unsigned char *)rows[i].head, rows[i].n);
            is_int(got, rows[i].want, rows[i].what);
        }
        is_str(extract_type_mime(EXTRACT_PDF), "application/pdf", "mime of PDF");
        is_str(extract_type_mime(EXTRACT_DOCX),
               "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
               "mime of DOCX");
        is_str(extract_type_mime(EXTRACT_MD), "text/markdown", "mime of Markdown");
        is_str(extract_type_mime(EXTRACT_UNKNOWN), "application/octet-stream", "mime of unknown");
        /* Every mime maps back to its type (the worker stores the mime, then extracts). */
        for (int t = EXTRACT_TXT; t <= EXTRACT_DOCX; t++) {
            is_int(extract_detect(NULL, extract_type_mime((enum extract_type)t), NULL, 0), t,
                   "the mime of a type detects as that type");
        }
    }
}

/* ---- Pure extractors ---- */

/* Run 'fn' on the C string 's' with a 1 MiB cap; the text in 'b' (caller cleans up). */
static int run_pure(int (*fn)(const char *, size_t, struct buf *), const char *s, size_t n,
                    struct buf *b)
{
    buf_init(b, 1 << 20);
    return fn(s, n, b);
}

static void test_text(void)
{
    subtest("extract_text")
    {
        struct buf b;
        static const char in[] = "\xEF\xBB\xBF"
                                 "a\r\nb\rc\0d\x01"
                                 "e\tf\xC2\x85g\x7Fh\f";

        is_int(run_pure(extract_text, in, sizeof(in) - 1, &b), 0, "mixed input");
        is_str(buf_ptr(&b), "a\nb\ncde\tfgh", "BOM gone, CRLF/CR to LF, controls dropped");
        buf_cleanup(&b);

        is_int(run_pure(extract_text, "x\xFFy", 3, &b), 0, "one stray byte");
        is_str(buf_ptr(&b), "x\xEF\xBF\xBDy", "becomes U+FFFD");
        buf_cleanup(&b);

        is_int(run_pure(extract_text, "ab\xF0\x9F\x98", 5, &b), 0, "a cut-off last character");
        is_str(buf_ptr(&b), "ab\xEF\xBF\xBD", "is one U+FFFD");
        buf_cleanup(&b);

        is_int(run_pure(extract_text, "\xED\xA0\x80 \xC0\xAF \xF4\x90\x80\x80", 12, &b),
               ERR_INVALID, "surrogates, overlongs, past U+10FFFF: not UTF-8");
        buf_cleanup(&b);

        is_int(run_pure(extract_text, "caf\xE9 cr\xE8me", 10, &b), ERR_INVALID,
               "Latin-1 is refused");
        buf_cleanup(&b);

        is_int(run_pure(extract_text, "Emoji \xF0\x9F\x98\x80 ok", 13, &b), 0, "4-byte UTF-8");
        is_str(buf_ptr(&b), "Emoji \xF0\x9F\x98\x80 ok", "kept as is");
        buf_cleanup(&b);

        buf_init(&b, 3);
        is_int(extract_text("abcdef", 6, &b), ERR_LIMIT, "the cap of 'out' holds");
        buf_cleanup(&b);
        is_int(run_pure(extract_text, "", 0, &b), 0, "empty input");
        is_int(buf_len(&b), 0, "empty output");
        buf_cleanup(&b);
    }
}

static void test_html(void)
{
    subtest("extract_html")
    {
        static const char doc[] =
            "<!DOCTYPE html>\n"
            "<html><head><title>The &amp; Title</title>\n"
            "<style>body { color: red; } p > a { }</style>\n"
            "<script>if (a < b && c > d) { document.write(\"<p>no</p>\"); }</script>\n"
            "</head>\n<body>\n"
            "<h1>Heading   One</h1>\n"
            "<p>First <b>bold</b> para&nbsp;with &lt;tags&gt; &#233;t&#xE9; &euro;5 &#150; "
            "dash.</p>\n"
            "<!-- a comment <p>hidden</p> -->\n"
            "<ul><li>one</li><li>two</li></ul>\n"
            "<table><tr><td>a</td><td>b</td></tr></table>\n"
            "<pre>  keep\n   this</pre>\n"
            "<p>a < b and &unknown; &amp</p>\n"
            "<noscript><p>enable js</p><noscript>x</noscript></noscript>\n"
            "<div title=\"x > y\">after</div>\n"
            "<SCRIPT type=x>hidden()</SCRIPT >"
            "</body></html>\n";
        struct buf b;

        is_int(run_pure(extract_html, doc, sizeof(doc) - 1, &b), 0, "a whole document");
        is_str(buf_ptr(&b),
               "The & Title\n\nHeading One\n\nFirst bold para with <tags> \xC3\xA9t\xC3\xA9 "
               "\xE2\x82\xAC"
               "5 \xE2\x80\x93 dash.\n\none\ntwo\n\na b\n\n  keep\n   this\n\na < b and "
               "&unknown; &amp\n\nafter",
               "tags, scripts, styles, comments out; entities; blocks as breaks");
        buf_cleanup(&b);

        is_int(run_pure(extract_html, "&#0;&#xD800;&#99999999999;&#x41&#65;", 36, &b), 0,
               "odd numeric references");
        is_str(buf_ptr(&b),
               "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD"
               "AA",
               "NUL, surrogate, too big: U+FFFD; the ';' is optional");
        buf_cleanup(&b);

        is_int(run_pure(extract_html, "&#10;a&#13;&#9;b<pre>&#9;c&#10;d</pre>", 38, &b), 0,
               "whitespace references");
        is_str(buf_ptr(&b), "a b\n\n\tc\nd", "collapse like whitespace, kept in <pre>");
        buf_cleanup(&b);

        is_int(run_pure(extract_html, "<p>open <b", 10, &b), 0, "an unterminated tag");
        is_str(buf_ptr(&b), "open", "ends the text");
        buf_cleanup(&b);
        is_int(run_pure(extract_html, "x<!-- never closed <p>y</p>", 27, &b), 0,
               "an unterminated comment");
        is_str(buf_ptr(&b), "x", "ends the text");
        buf_cleanup(&b);
        is_int(run_pure(extract_html, "a<script>never closed", 21, &b), 0, "open script");
        is_str(buf_ptr(&b), "a", "drops the rest");
        buf_cleanup(&b);
        is_int(run_pure(extract_html, "<![CDATA[x<y]]>z <br/>w<?pi x?>", 31, &b), 0, "CDATA");
        is_str(buf_ptr(&b), "x<yz\nw", "CDATA is text; <br/> a line; <?pi?> dropped");
        buf_cleanup(&b);
        is_int(run_pure(extract_html, "<p>caf\xE9 cr\xE8me br\xFBl\xE9\x65</p>", 24, &b),
               ERR_INVALID, "Latin-1 HTML is refused");
        buf_cleanup(&b);
        is_int(run_pure(extract_html, "a\xC2\x80\x01\x00z", 6, &b), 0, "controls");
        is_str(buf_ptr(&b), "az", "C0, C1 and NUL are dropped");
        buf_cleanup(&b);
    }
}

static void test_json(void)
{
    subtest("extract_json")
    {
        static const char doc[] = "{\"title\":\"Doc\",\"n\":3,\"ok\":true,\"none\":null,"
                                  "\"tags\":[\"a\",\"b\"],"
                                  "\"items\":[{\"name\":\"x\",\"v\":1.5},{\"name\":\"y\\r\\nz\"}]}";
        struct buf b;

        is_int(run_pure(extract_json, doc, sizeof(doc) - 1, &b), 0, "an object");
        is_str(buf_ptr(&b),
               "title: Doc\nn: 3\nok: true\ntags\na\nb\nitems\nname: x\nv: 1.5\n\nname: y\nz\n\n",
               "keys and values line by line, records as paragraphs");
        buf_cleanup(&b);

        is_int(run_pure(extract_json, "\"just a string\"", 15, &b), 0, "a scalar");
        is_str(buf_ptr(&b), "just a string\n", "is one line");
        buf_cleanup(&b);
        is_int(run_pure(extract_json, "{\"a\":", 5, &b), ERR_INVALID, "truncated JSON");
        buf_cleanup(&b);
        is_int(run_pure(extract_json, "[\"a\\u0000b\"]", 12, &b), ERR_INVALID, "a NUL escape");
        buf_cleanup(&b);
        is_int(run_pure(extract_json, "[\"\xFF\"]", 5, &b), ERR_INVALID, "invalid UTF-8");
        buf_cleanup(&b);
        is_int(run_pure(extract_json, "\xEF\xBB\xBF{}", 5, &b), 0, "a BOM is skipped");
        buf_cleanup(&b);
        {
            /* Nesting deeper than jansson's limit is refused, not a stack overflow. */
            char deep[5000];
            memset(deep, '[', sizeof(deep));
            is_int(run_pure(extract_json, deep, sizeof(deep), &b), ERR_INVALID, "deep nesting");
            buf_cleanup(&b);
        }
    }
}

#define W_NS "xmlns:w=\"http://schemas.openxmlformats.org/wordprocessingml/2006/main\""

static void test_docx_xml(void)
{
    subtest("extract_docx_xml")
    {
        static const char doc[] =
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>"
            "<w:document " W_NS "><w:body>"
            "<w:p><w:r><w:t>Hello</w:t></w:r><w:r><w:tab/><w:t xml:space=\"preserve\"> world"
            "</w:t></w:r></w:p><w:p/>"
            "<w:p><w:pPr><w:tabs><w:tab w:val=\"left\"/></w:tabs></w:pPr><w:r><w:t>Line</w:t>"
            "<w:br/><w:t>two &amp; <![CDATA[three]]></w:t><w:delText>gone</w:delText></w:r>"
            "<w:del><w:r><w:delText>deleted</w:delText></w:r></w:del>"
            "<w:r><w:instrText>PAGE</w:instrText><w:noBreakHyphen/></w:r></w:p>"
            "</w:body></w:document>";
        static const char laughs[] =
            "<?xml version=\"1.0\"?><!DOCTYPE w:document [<!ENTITY a \"lollollollol\">"
            "<!ENTITY b \"&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;\"><!ENTITY c \"&b;&b;&b;&b;&b;&b;&b;&b;\">"
            "<!ENTITY d \"&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;\"><!ENTITY e \"&d;&d;&d;&d;&d;&d;&d;\">"
            "<!ENTITY f \"&e;&e;&e;&e;&e;&e;&e;&e;&e;&e;\"><!ENTITY g \"&f;&f;&f;&f;&f;&f;&f;\">"
            "<!ENTITY h \"&g;&g;&g;&g;&g;&g;&g;&g;&g;&g;\">]>"
            "<w:document " W_NS "><w:body><w:p><w:r><w:t>x&h;y</w:t></w:r></w:p></w:body>"
            "</w:document>";
        struct buf b;
        int rc;

        is_int(run_pure(extract_docx_xml, doc, sizeof(doc) - 1, &b), 0, "a document");
        is_str(buf_ptr(&b), "Hello\t world\n\nLine\ntwo & three-\n\n",
               "runs, tab, break, paragraphs; deleted text and field codes skipped");
        buf_cleanup(&b);

        is_int(run_pure(extract_docx_xml, "<w:document " W_NS "><w:body>", 80, &b), ERR_INVALID,
               "not well-formed XML");
        buf_cleanup(&b);

        rc = run_pure(extract_docx_xml, laughs, sizeof(laughs) - 1, &b);
        ok(rc == 0 || rc == ERR_INVALID, "billion laughs: refused or parsed");
        ok(buf_len(&b) < 100, "billion laughs: nothing expanded");
        ok(!strstr(buf_ptr(&b), "lol"), "billion laughs: no entity text");
        buf_cleanup(&b);
    }
}

/* ---- The child runner ---- */

static int fn_sleep(void *arg, const struct extract_limits *lim)
{
    (void)arg;
    (void)lim;
    for (;;)
        pause();
    return 0;
}

static int fn_segv(void *arg, const struct extract_limits *lim)
{
    (void)arg;
    (void)lim;
    raise(SIGSEGV);
    return 0;
}

static int fn_abort(void *arg, const struct extract_limits *lim)
{
    (void)arg;
    (void)lim;
    abort();
}

static int fn_exit(void *arg, const struct extract_limits *lim)
{
    (void)lim;
    (void)!write(1, "some text", 9);
    (void)!write(2, "diag", 4);
    return *(const int *)arg;
}

/* Write text forever: the parent must stop it at max_text. */
static int fn_spew(void *arg, const struct extract_limits *lim)
{
    static char block[8192];

    (void)arg;
    (void)lim;
    memset(block, 'x', sizeof(block));
    for (;;) {
        if (write(1, block, sizeof(block)) < 0)
            return 1;
    }
}

/* Map 1 GiB: RLIMIT_AS must refuse it (42), else 43. */
static int fn_mem(void *arg, const struct extract_limits *lim)
{
    void *p =
        mmap(NULL, (size_t)1 << 30, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

    (void)arg;
    (void)lim;
    return p == MAP_FAILED ? 42 : 43;
}

/* The parent's descriptor '*arg' must be closed, stdin /dev/null, signals unblocked. */
static int fn_fds(void *arg, const struct extract_limits *lim)
{
    char c;
    sigset_t cur;

    (void)lim;
    if (fcntl(*(const int *)arg, F_GETFD) != -1 || errno != EBADF)
        return 1;
    if (read(0, &c, 1) != 0)
        return 2;
    if (sigprocmask(SIG_SETMASK, NULL, &cur) != 0 || sigismember(&cur, SIGTERM))
        return 3;
    return 0;
}

/* Creating a file works, writing to it must not (RLIMIT_FSIZE 0, SIGXFSZ ignored). */
static int fn_fsize(void *arg, const struct extract_limits *lim)
{
    int fd = open(arg, O_WRONLY | O_CREAT | O_TRUNC, 0600);

    (void)lim;
    if (fd < 0)
        return 1;
    if (write(fd, "data", 4) != -1 || errno != EFBIG)
        return 2;
    close(fd);
    return 0;
}

/* Start a grandchild that holds the pipe and sleeps; tell its pid; sleep. */
static int fn_grandchild(void *arg, const struct extract_limits *lim)
{
    pid_t g = fork();
    char line[32];

    (void)arg;
    (void)lim;
    if (g == 0) {
        for (;;)
            pause();
    }
    snprintf(line, sizeof(line), "%d\n", (int)g);
    (void)!write(1, line, strlen(line));
    for (;;)
        pause();
    return 0;
}

/* Whether process 'pid' is gone (or a zombie waiting for init) within about a second. */
static bool gone(pid_t pid)
{
    for (int i = 0; i < 100; i++) {
        char path[64], st[256];
        FILE *f;
        size_t n;
        const char *rp;

        snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
        f = fopen(path, "r");
        if (!f)
            return true;
        n = fread(st, 1, sizeof(st) - 1, f);
        fclose(f);
        st[n] = '\0';
        rp = strrchr(st, ')');
        if (rp && rp[1] == ' ' && (rp[2] == 'Z' || rp[2] == 'X'))
            return true;
        nap(10);
    }
    return false;
}

static void test_child(void)
{
    subtest("child runner")
    {
        struct extract_limits lim = default_lim;
        struct child_status st;
        struct buf text, diag;
        struct err e;
        int64_t t0;
        int rc, code = 7;

        /* A hang: killed at the deadline, and the test goes on. */
        lim.timeout_ms = 300;
        buf_init(&text, lim.max_text);
        buf_init(&diag, DIAG_MAX);
        t0 = clock_mono_us();
        rc = run_child(fn_sleep, NULL, CHILD_INPROC, &lim, &text, &diag, &st, &e);
        is_int(rc, 0, "hang: the runner returns");
        is_int(st.end, CHILD_TIMEOUT, "hang: timeout");
        ok(clock_mono_us() - t0 < 3000000, "hang: within the deadline (plus slack)");
        is_int(child_error(EXTRACT_PDF, &st, &diag, &lim, &e), ERR_INVALID, "hang: ERR_INVALID");
        ok(msg_has(&e, "the PDF file could not be read: extraction took longer than 300 ms"),
           "hang: a clear message");
        lim.timeout_ms = default_lim.timeout_ms;

        /* A cancel (the document was deleted): the hanging child is killed at once. */
        {
            atomic_bool cancel = true;
            lim.cancel = &cancel;
            buf_reset(&text);
            t0 = clock_mono_us();
            rc = run_child(fn_sleep, NULL, CHILD_INPROC, &lim, &text, &diag, &st, &e);
            is_int(rc, ERR_CONFLICT, "cancel: ERR_CONFLICT");
            ok(clock_mono_us() - t0 < 2000000, "cancel: long before the 20 s deadline");
            lim.cancel = NULL;
        }

        /* A crash: SIGSEGV in the child, reported; we are still here. */
        buf_reset(&text);
        rc = run_child(fn_segv, NULL, CHILD_INPROC, &lim, &text, &diag, &st, &e);
        is_int(rc, 0, "crash: the runner returns");
        ok(st.end == CHILD_SIGNALED && st.code == SIGSEGV, "crash: killed by SIGSEGV");
        is_int(child_error(EXTRACT_DOCX, &st, &diag, &lim, &e), ERR_INVALID, "crash: ERR_INVALID");
        ok(msg_has(&e, "the DOCX file could not be read: the extractor crashed"),
           "crash: a clear message");
        rc = run_child(fn_abort, NULL, CHILD_INPROC, &lim, &text, &diag, &st, &e);
        ok(rc == 0 && st.end == CHILD_SIGNALED && st.code == SIGABRT, "abort(): SIGABRT");

        /* Exit statuses, stdout and stderr come back. */
        buf_reset(&text);
        buf_reset(&diag);
        rc = run_child(fn_exit, &code, CHILD_INPROC, &lim, &text, &diag, &st, &e);
        ok(rc == 0 && st.end == CHILD_EXITED && st.code == 7, "exit status 7");
        is_str(buf_ptr(&text), "some text", "stdout is the text");
        is_str(buf_ptr(&diag), "diag", "stderr is the diagnostics");
        code = EXTRACT_R_ZIP_TOO_BIG;
        rc = run_child(fn_exit, &code, CHILD_INPROC, &lim, &text, &diag, &st, &e);
        child_error(EXTRACT_DOCX, &st, &diag, &lim, &e);
        ok(msg_has(&e, "unzips to more than"), "a reason becomes its message");
        code = 55;
        rc = run_child(fn_exit, &code, CHILD_INPROC, &lim, &text, &diag, &st, &e);
        child_error(EXTRACT_TXT, &st, &diag, &lim, &e);
        ok(msg_has(&e, "the extractor failed (status 55)"), "an unknown status");
        st.end = CHILD_SIGNALED;
        st.code = SIGXCPU;
        child_error(EXTRACT_PDF, &st, &diag, &lim, &e);
        ok(msg_has(&e, "more CPU time"), "SIGXCPU: CPU limit");
        st.end = CHILD_EXITED;
        st.code = EXTRACT_R_NO_TOOL;
        is_int(child_error(EXTRACT_PDF, &st, &diag, &lim, &e), ERR_INTERNAL,
               "no pdftotext: ERR_INTERNAL");

        /* Text past max_text: killed, reported. */
        lim.max_text = 65536;
        buf_cleanup(&text);
        buf_init(&text, lim.max_text);
        rc = run_child(fn_spew, NULL, CHILD_INPROC, &lim, &text, &diag, &st, &e);
        ok(rc == 0 && st.end == CHILD_TOO_MUCH, "endless text: stopped at the cap");
        ok(buf_len(&text) <= 65536, "endless text: no more than the cap kept");
        child_error(EXTRACT_PDF, &st, &diag, &lim, &e);
        ok(msg_has(&e, "its text is longer than 65536 bytes"), "endless text: a clear message");
        lim.max_text = default_lim.max_text;

        /* Memory: RLIMIT_AS refuses 1 GiB over a 64 MiB budget. */
        lim.max_memory = (size_t)64 << 20;
        rc = run_child(fn_mem, NULL, CHILD_INPROC, &lim, &text, &diag, &st, &e);
        ok(rc == 0 && st.end == CHILD_EXITED && st.code == 42,
           "1 GiB over a 64 MiB budget: refused");
        lim.max_memory = default_lim.max_memory;

        /* Isolation: the server's descriptors, stdin, signal mask, file writes. */
        {
            char p[256];
            int fd = open(tpath(p, sizeof(p), "held"), O_WRONLY | O_CREAT, 0600);
            sigset_t block, old;

            sigemptyset(&block);
            sigaddset(&block, SIGTERM);
            sigprocmask(SIG_BLOCK, &block, &old);
            rc = run_child(fn_fds, &fd, CHILD_INPROC, &lim, &text, &diag, &st, &e);
            sigprocmask(SIG_SETMASK, &old, NULL);
            ok(rc == 0 && st.end == CHILD_EXITED, "isolation: ran");
            is_int(st.code, 0, "no inherited descriptor, stdin /dev/null, signals unblocked");
            close(fd);
            rc = run_child(fn_fsize, tpath(p, sizeof(p), "written"), CHILD_INPROC, &lim, &text,
                           &diag, &st, &e);
            ok(rc == 0 && st.end == CHILD_EXITED && st.code == 0,
               "RLIMIT_FSIZE 0: writing a file fails with EFBIG");
        }

        /* A grandchild holding the pipe: the group is killed at the deadline. */
        {
            long g;

            lim.timeout_ms = 300;
            buf_reset(&text);
            rc = run_child(fn_grandchild, NULL, CHILD_INPROC, &lim, &text, &diag, &st, &e);
            ok(rc == 0 && st.end == CHILD_TIMEOUT, "grandchild: timeout");
            g = strtol(buf_ptr(&text), NULL, 10);
            ok(g > 0 && gone((pid_t)g), "grandchild: killed with its group");
            lim.timeout_ms = default_lim.timeout_ms;
        }
        buf_cleanup(&text);
        buf_cleanup(&diag);
    }
}

/* ---- Real files ---- */

/* Extract 'name' in the temp dir as 't'; the result in 'r' (cleaned up by the caller). */
static int extract_named(const char *name, enum extract_type t, const struct extract_limits *lim,
                         struct extract_result *r, struct err *e)
{
    char p[256];

    err_clear(e);
    return extract_file(tpath(p, sizeof(p), name), t, lim, r, e);
}

static void test_text_files(void)
{
    subtest("text files in the child")
    {
        struct extract_result r;
        struct extract_limits lim = default_lim;
        struct err e;
        char p[256];
        int rc;

        write_file(tpath(p, sizeof(p), "a.txt"), "Line one\r\nLine two\r\n", 20);
        is_int(extract_named("a.txt", EXTRACT_TXT, &lim, &r, &e), 0, "TXT");
        is_str(r.text, "Line one\nLine two\n", "TXT: CRLF to LF");
        ok(r.pages == NULL && r.npages == 0, "TXT: no pages");
        extract_result_cleanup(&r);

        write_file(tpath(p, sizeof(p), "a.html"), "<p>Hello <b>HTML</b></p><p>Bye</p>", 34);
        is_int(extract_named("a.html", EXTRACT_HTML, &lim, &r, &e), 0, "HTML");
        is_str(r.text, "Hello HTML\n\nBye", "HTML: text");
        extract_result_cleanup(&r);

        write_file(tpath(p, sizeof(p), "a.json"), "{\"k\":\"v\"}", 9);
        is_int(extract_named("a.json", EXTRACT_JSON, &lim, &r, &e), 0, "JSON");
        is_str(r.text, "k: v\n", "JSON: text");
        extract_result_cleanup(&r);

        write_file(tpath(p, sizeof(p), "bad.json"), "{\"k\":", 5);
        is_int(extract_named("bad.json", EXTRACT_JSON, &lim, &r, &e), ERR_INVALID, "bad JSON");
        ok(msg_has(&e, "the JSON file could not be read: it is not valid JSON"),
           "bad JSON: a clear message");
        ok(r.text == NULL, "bad JSON: no result");

        write_file(tpath(p, sizeof(p), "latin1.txt"), "caf\xE9 cr\xE8me br\xFBl\xE9\x65", 17);
        is_int(extract_named("latin1.txt", EXTRACT_TXT, &lim, &r, &e), ERR_INVALID, "Latin-1");
        ok(msg_has(&e, "it is not UTF-8 text"), "Latin-1: a clear message");

        write_file(tpath(p, sizeof(p), "blank.txt"), " \n\t\n", 4);
        is_int(extract_named("blank.txt", EXTRACT_TXT, &lim, &r, &e), ERR_INVALID, "blank");
        ok(msg_has(&e, "the text file contains no text"), "blank: no text");

        {
            char big[5000];
            memset(big, 'a', sizeof(big));
            write_file(tpath(p, sizeof(p), "big.txt"), big, sizeof(big));
            lim.max_text = 1000;
            is_int(extract_named("big.txt", EXTRACT_TXT, &lim, &r, &e), ERR_INVALID, "too long");
            ok(msg_has(&e, "longer than"), "too long: a clear message");
            lim.max_text = default_lim.max_text;
        }

        rc = extract_named("missing.txt", EXTRACT_TXT, &lim, &r, &e);
        is_int(rc, ERR_IO, "a missing file is ERR_IO");
        is_int(extract_named("a.txt", EXTRACT_UNKNOWN, &lim, &r, &e), ERR_INVALID, "unknown");
        is_str(e.code, "unsupported_file_type", "unknown: unsupported_file_type");
        lim.timeout_ms = 0;
        is_int(extract_named("a.txt", EXTRACT_TXT, &lim, &r, &e), ERR_INTERNAL, "bad limits");
    }
}

static void test_pdf(void)
{
    subtest("PDF")
    {
        static const char ms[] = ".LP\nAlpha page one. The quick brown fox jumps over the lazy "
                                 "dog.\n.bp\n.LP\nBravo page two. Pack my box with five dozen "
                                 "liquor jugs.\n.bp\n.LP\nCharlie page three. Sphinx of black "
                                 "quartz, judge my vow.\n";
        struct extract_limits lim = default_lim;
        struct extract_result r;
        struct err e;
        char src[256], pdf[256], enc[256];
        char a0[] = "groff", a1[] = "-ms", a2[] = "-Tpdf";
        char q0[] = "qpdf", q1[] = "--encrypt", q2[] = "user", q3[] = "owner", q4[] = "256",
             q5[] = "--";

        if (!have_tool("pdftotext")) {
            skip_tool("PDF extraction", "pdftotext (poppler-utils)");
            return;
        }
        /* Corrupt PDFs need only pdftotext. */
        {
            unsigned char junk[3000];
            uint32_t s = 7;
            for (size_t i = 0; i < sizeof(junk); i++) {
                s = s * 1103515245u + 12345u;
                junk[i] = (unsigned char)(s >> 16);
            }
            write_file(tpath(src, sizeof(src), "junk.pdf"), junk, sizeof(junk));
            is_int(extract_named("junk.pdf", EXTRACT_PDF, &lim, &r, &e), ERR_INVALID,
                   "random bytes named .pdf");
            ok(msg_has(&e, "the PDF file could not be read: it is damaged or not a PDF"),
               "random bytes: a clear message");
            write_file(tpath(src, sizeof(src), "trunc.pdf"), "%PDF-1.4\n1 0 obj\n<<", 19);
            is_int(extract_named("trunc.pdf", EXTRACT_PDF, &lim, &r, &e), ERR_INVALID,
                   "a truncated PDF");
            ok(msg_has(&e, "damaged or not a PDF"), "truncated: a clear message");
        }
        if (!have_tool("groff")) {
            skip_tool("PDF from groff", "groff");
            return;
        }
        write_file(tpath(src, sizeof(src), "doc.ms"), ms, sizeof(ms) - 1);
        {
            char *argv[] = {a0, a1, a2, src, NULL};
            is_int(run_tool(tpath(pdf, sizeof(pdf), "doc.pdf"), argv), 0, "groff made a PDF");
        }
        is_int(extract_named("doc.pdf", EXTRACT_PDF, &lim, &r, &e), 0, "a 3-page PDF");
        is_int(r.npages, 3, "three pages");
        if (r.npages == 3) {
            bool ordered = true;
            for (size_t i = 0; i < 3; i++) {
                if (r.pages[i].page != (int)i + 1 || r.pages[i].off + r.pages[i].len > r.len ||
                    (i && r.pages[i].off < r.pages[i - 1].off + r.pages[i - 1].len))
                    ordered = false;
            }
            ok(ordered, "pages 1, 2, 3 in order, within the text");
            {
                char *p1 = xstrndup(r.text + r.pages[0].off, r.pages[0].len);
                char *p2 = xstrndup(r.text + r.pages[1].off, r.pages[1].len);
                char *p3 = xstrndup(r.text + r.pages[2].off, r.pages[2].len);
                ok(strstr(p1, "Alpha page one. The quick brown fox") && !strstr(p1, "Bravo"),
                   "page 1 holds its text only");
                ok(strstr(p2, "Bravo page two.") && !strstr(p2, "Alpha") && !strstr(p2, "Charlie"),
                   "page 2 holds its text only");
                ok(strstr(p3, "Charlie page three.") != NULL, "page 3 holds its text");
                free(p1);
                free(p2);
                free(p3);
            }
            ok(!memchr(r.text, '\f', r.len), "no form feed left in the text");
            {
                /* Chunks carry the page of their start. */
                struct chunk *c;
                size_t n, right = 0;
                int max_page = 0;

                is_int(chunk_text(r.text, r.len, r.pages, r.npages, 6, 0, &c, &n), 0, "chunked");
                for (size_t i = 0; i < n; i++) {
                    int want = 0;
                    for (size_t k = 0; k < r.npages; k++) {
                        if (r.pages[k].off <= c[i].off)
                            want = r.pages[k].page;
                    }
                    right += c[i].page == want;
                    if (c[i].page > max_page)
                        max_page = c[i].page;
                }
                is_int(right, n, "every chunk has the page of its first byte");
                is_int(max_page, 3, "chunks reach page 3");
                free(c);
            }
        }
        extract_result_cleanup(&r);

        /* Extraction is by content: the same PDF named .txt, detected, is still a PDF. */
        {
            unsigned char head[64];
            FILE *f = fopen(pdf, "rb");
            size_t n = f ? fread(head, 1, sizeof(head), f) : 0;
            if (f)
                fclose(f);
            is_int(extract_detect("doc.txt", "text/plain", head, n), EXTRACT_PDF,
                   "the groff PDF detects as PDF under any name");
        }

        /* A timeout on a real PDF: 1 ms is not enough for pdftotext. */
        lim.timeout_ms = 1;
        is_int(extract_named("doc.pdf", EXTRACT_PDF, &lim, &r, &e), ERR_INVALID, "1 ms timeout");
        ok(msg_has(&e, "took longer than 1 ms"), "1 ms timeout: a clear message");
        lim.timeout_ms = default_lim.timeout_ms;

        if (!have_tool("qpdf")) {
            skip_tool("encrypted PDF", "qpdf");
            return;
        }
        {
            char *argv[] = {q0, q1, q2, q3, q4, q5, pdf, tpath(enc, sizeof(enc), "enc.pdf"), NULL};
            is_int(run_tool(NULL, argv), 0, "qpdf encrypted the PDF");
        }
        is_int(extract_named("enc.pdf", EXTRACT_PDF, &lim, &r, &e), ERR_INVALID,
               "a password-protected PDF");
        ok(msg_has(&e, "the PDF file could not be read: it is encrypted (password-protected)"),
           "encrypted: a clear message");
    }
}

/* Write a ZIP at 'path' with 'n' entries; each data pointer must live until this returns. */
static int make_zip(const char *path, const char *const *names, const char *const *data,
                    const size_t *lens, size_t n)
{
    int zerr = 0;
    zip_t *z = zip_open(path, ZIP_CREATE | ZIP_TRUNCATE, &zerr);

    if (!z)
        return -1;
    for (size_t i = 0; i < n; i++) {
        zip_source_t *s = zip_source_buffer(z, data[i], lens[i], 0);
        if (!s || zip_file_add(z, names[i], s, ZIP_FL_ENC_UTF_8) < 0) {
            zip_source_free(s);
            zip_discard(z);
            return -1;
        }
    }
    return zip_close(z) == 0 ? 0 : -1;
}

/* A one-entry DOCX whose word/document.xml is the 'n' bytes at 'xml'. */
static int make_docx(const char *name, const char *xml, size_t n)
{
    char p[256];
    const char *names[] = {"[Content_Types].xml", "word/document.xml"};
    const char *data[] = {"<Types/>", xml};
    size_t lens[] = {8, n};

    return make_zip(tpath(p, sizeof(p), name), names, data, lens, 2);
}

/* Put 'v' as the uncompressed size of every entry, in local and central headers alike. */
static int patch_sizes(const char *path, uint32_t v)
{
    FILE *f = fopen(path, "r+b");
    unsigned char b[1 << 16];
    size_t n;
    int patched = 0;

    if (!f)
        return -1;
    n = fread(b, 1, sizeof(b), f);
    for (size_t i = 0; i + 46 <= n; i++) {
        size_t at = 0;
        if (memcmp(b + i, "PK\x03\x04", 4) == 0)
            at = i + 22;
        else if (memcmp(b + i, "PK\x01\x02", 4) == 0)
            at = i + 24;
        if (at) {
            b[at] = (unsigned char)v;
            b[at + 1] = (unsigned char)(v >> 8);
            b[at + 2] = (unsigned char)(v >> 16);
            b[at + 3] = (unsigned char)(v >> 24);
            patched++;
        }
    }
    fseek(f, 0, SEEK_SET);
    fwrite(b, 1, n, f);
    fclose(f);
    return patched;
}

static void test_docx(void)
{
    subtest("DOCX")
    {
        struct extract_limits lim = default_lim;
        struct extract_result r;
        struct err e;
        char p[256], md[256];
        int rc;

        if (have_tool("pandoc")) {
            static const char src[] = "# Title here\n\nFirst paragraph with *emphasis* and "
                                      "text.\n\nSecond paragraph.\n";
            char a0[] = "pandoc", a1[] = "-o";
            char *argv[] = {a0, tpath(md, sizeof(md), "doc.md"), a1,
                            tpath(p, sizeof(p), "doc.docx"), NULL};

            write_file(md, src, sizeof(src) - 1);
            is_int(run_tool(NULL, argv), 0, "pandoc made a DOCX");
            {
                unsigned char head[4096];
                FILE *f = fopen(p, "rb");
                size_t n = f ? fread(head, 1, sizeof(head), f) : 0;
                if (f)
                    fclose(f);
                is_int(extract_detect("upload.bin", NULL, head, n), EXTRACT_DOCX,
                       "pandoc's DOCX detects as DOCX by content");
            }
            is_int(extract_named("doc.docx", EXTRACT_DOCX, &lim, &r, &e), 0, "pandoc DOCX");
            ok(r.text && strstr(r.text, "Title here\n\nFirst paragraph with emphasis and text."
                                        "\n\nSecond paragraph."),
               "its text, paragraphs as blank lines");
            ok(r.npages == 0, "DOCX: no pages");
            extract_result_cleanup(&r);
        } else {
            skip_tool("DOCX from pandoc", "pandoc");
        }

        /* A zip bomb: 8 MiB of one letter (8 KiB zipped) against a 1 MiB budget. */
        {
            size_t big = (size_t)8 << 20;
            char *xml = xmalloc(big);
            memset(xml, 'a', big);
            is_int(make_docx("bomb.docx", xml, big), 0, "made a zip bomb");
            free(xml);
            lim.max_unzipped = (size_t)1 << 20;
            lim.max_memory = (size_t)64 << 20;
            is_int(extract_named("bomb.docx", EXTRACT_DOCX, &lim, &r, &e), ERR_INVALID,
                   "zip bomb refused");
            ok(msg_has(&e, "the DOCX file could not be read: it unzips to more than the size "
                           "limit"),
               "zip bomb: a clear message");
        }
        /* Declared 4 GiB, really 1 KiB: refused from the directory, before inflating (else
         * the size mismatch would show up as a damaged file instead). */
        {
            char xml[1024];
            memset(xml, 'b', sizeof(xml));
            make_docx("claims.docx", xml, sizeof(xml));
            ok(patch_sizes(tpath(p, sizeof(p), "claims.docx"), 0xFFFF0000u) >= 4,
               "patched the declared sizes");
            lim.max_unzipped = (size_t)1 << 30;
            is_int(extract_named("claims.docx", EXTRACT_DOCX, &lim, &r, &e), ERR_INVALID,
                   "declared 4 GiB: refused");
            ok(msg_has(&e, "unzips to more than"), "declared 4 GiB: refused before inflating");
        }
        /* Declared 100 bytes, really 8 MiB: the capped read stops it. */
        {
            size_t big = (size_t)8 << 20;
            char *xml = xmalloc(big);
            memset(xml, 'c', big);
            make_docx("lies.docx", xml, big);
            free(xml);
            patch_sizes(tpath(p, sizeof(p), "lies.docx"), 100);
            rc = extract_named("lies.docx", EXTRACT_DOCX, &lim, &r, &e);
            is_int(rc, ERR_INVALID, "declared 100 bytes, inflates to 8 MiB: refused");
            ok(strstr(e.msg, "unzips to more than") || strstr(e.msg, "damaged"),
               "lying sizes: refused as a bomb or as damaged");
        }
        lim = default_lim;

        /* Too many entries. */
        {
            size_t n = EXTRACT_DOCX_MAX_ENTRIES + 1;
            const char **names = xcalloc(n, sizeof(*names));
            const char **data = xcalloc(n, sizeof(*data));
            size_t *lens = xcalloc(n, sizeof(*lens));
            char(*nm)[24] = xcalloc(n, sizeof(*nm));

            for (size_t i = 0; i < n; i++) {
                snprintf(nm[i], sizeof(nm[i]), "word/f%zu.xml", i);
                names[i] = nm[i];
                data[i] = "x";
                lens[i] = 1;
            }
            is_int(make_zip(tpath(p, sizeof(p), "many.docx"), names, data, lens, n), 0,
                   "made a ZIP of 10001 entries");
            is_int(extract_named("many.docx", EXTRACT_DOCX, &lim, &r, &e), ERR_INVALID,
                   "too many entries");
            ok(msg_has(&e, "too many parts"), "too many entries: a clear message");
            free(names);
            free(data);
            free(lens);
            free(nm);
        }

        /* XXE: an external entity and an external DTD are never read. */
        {
            char secret[256], dtd[256], xml[2048];
            int n;

            write_file(tpath(secret, sizeof(secret), "secret.txt"), "TOPSECRET", 9);
            write_file(tpath(dtd, sizeof(dtd), "evil.dtd"), "<!ENTITY leak \"DTDLEAK\">", 24);
            n = snprintf(xml, sizeof(xml),
                         "<?xml version=\"1.0\" encoding=\"UTF-8\"?>"
                         "<!DOCTYPE w:document [<!ENTITY xxe SYSTEM \"file://%s\">"
                         "<!ENTITY %% ext SYSTEM \"file://%s\"> %%ext;"
                         "<!ENTITY inner \"INNERTEXT\">]>"
                         "<w:document " W_NS "><w:body><w:p><w:r><w:t>Visible &xxe; text "
                         "&inner; end</w:t></w:r></w:p></w:body></w:document>",
                         secret, dtd);
            make_docx("xxe.docx", xml, (size_t)n);
            rc = extract_named("xxe.docx", EXTRACT_DOCX, &lim, &r, &e);
            is_int(rc, 0, "XXE DOCX: extracted");
            ok(r.text && strstr(r.text, "Visible") && strstr(r.text, "end"),
               "XXE DOCX: the visible text is there");
            ok(r.text && !strstr(r.text, "TOPSECRET"), "XXE DOCX: the file is not read");
            ok(r.text && !strstr(r.text, "DTDLEAK"), "XXE DOCX: the external DTD is not read");
            ok(r.text && !strstr(r.text, "INNERTEXT"), "XXE DOCX: entities are not expanded");
            extract_result_cleanup(&r);

            /* The same through the pure function, in this process. */
            {
                struct buf b;
                buf_init(&b, 1 << 20);
                is_int(extract_docx_xml(xml, (size_t)n, &b), 0, "XXE XML: parsed");
                ok(!strstr(buf_ptr(&b), "TOPSECRET") && !strstr(buf_ptr(&b), "DTDLEAK"),
                   "XXE XML: nothing external read");
                buf_cleanup(&b);
            }
        }

        /* Not a ZIP at all, and a ZIP without word/document.xml. */
        write_file(tpath(p, sizeof(p), "text.docx"), "just text", 9);
        is_int(extract_named("text.docx", EXTRACT_DOCX, &lim, &r, &e), ERR_INVALID, "not a ZIP");
        ok(msg_has(&e, "the DOCX file could not be read: it is damaged or not a Word document"),
           "not a ZIP: a clear message");
        {
            const char *names[] = {"readme.txt"};
            const char *data[] = {"hello"};
            size_t lens[] = {5};
            make_zip(tpath(p, sizeof(p), "plain.docx"), names, data, lens, 1);
            is_int(extract_named("plain.docx", EXTRACT_DOCX, &lim, &r, &e), ERR_INVALID,
                   "a ZIP without word/document.xml");
            ok(msg_has(&e, "not a Word document"), "no document.xml: a clear message");
        }
        make_docx("badxml.docx", "<w:document><w:body>", 20);
        is_int(extract_named("badxml.docx", EXTRACT_DOCX, &lim, &r, &e), ERR_INVALID, "bad XML");
        ok(msg_has(&e, "not well-formed XML"), "bad XML: a clear message");
    }
}

/* ---- Main ---- */

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path);
}

/* Extraction isolation: the helper is a fresh exec, with nothing of our environment, under a
 * seccomp allow-list that kills a call outside it. */
static void test_helper(void)
{
    subtest("helper isolation")
    {
        struct extract_limits lim = default_lim;
        struct child_status st;
        struct buf text, diag;
        struct err e;
        struct helper_job job = {"/dev/null", EXTRACT_TXT, "probe-env"};
        int rc;

        setenv("WORKFORCE_LLM_API_KEY", "sk-probe-secret", 1);
        buf_init(&text, lim.max_text);
        buf_init(&diag, DIAG_MAX);
        rc = run_child(helper_child, &job, CHILD_HELPER, &lim, &text, &diag, &st, &e);
        is_int(rc, 0, "env: the runner returns");
        ok(st.end == CHILD_EXITED && st.code == 0, "env: the helper ran");
        buf_append(&text, "", 1);
        is_str(buf_ptr(&text), "TZ=UTC0\n", "env: empty but for the time zone it sets itself");
        ok(!strstr(buf_ptr(&text), "sk-probe-secret"), "env: no secret of ours");

        job.probe = "probe-open";
        buf_reset(&text);
        rc = run_child(helper_child, &job, CHILD_HELPER, &lim, &text, &diag, &st, &e);
        is_int(rc, 0, "open: the runner returns");
        ok(st.end == CHILD_SIGNALED && st.code == SIGSYS,
           "open: a call outside the allow-list kills the helper (SIGSYS)");
        buf_cleanup(&text);
        buf_cleanup(&diag);
        unsetenv("WORKFORCE_LLM_API_KEY");
    }
}

int main(int argc, char **argv)
{
    (void)argc;
    if (realpath(argv[0], helper_path)) {
        char *slash = strrchr(helper_path, '/');
        if (slash)
            *slash = '\0';
        slash = strrchr(helper_path, '/');
        if (slash)
            snprintf(slash + 1, sizeof(helper_path) - (size_t)(slash + 1 - helper_path),
                     "workforce");
        default_lim.helper = helper_path;
    }
    snprintf(tmp, sizeof(tmp), "/tmp/wf-extract-XXXXXX");
    if (!mkdtemp(tmp)) {
        printf("Bail out! cannot make a temporary directory\n");
        return 1;
    }
    test_detect();
    test_text();
    test_html();
    test_json();
    test_docx_xml();
    test_child();
    test_helper();
    test_text_files();
    test_pdf();
    test_docx();
    nftw(tmp, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    return done_testing();
}
