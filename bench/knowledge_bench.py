#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""bench/knowledge_bench.py: the knowledge base figures (contract §11, stack.md "What we compare
against"), against build/workforce on a free 127.0.0.1 port, Python 3 standard library only.

  (1) ingest: generated English prose (1 MB by default) uploaded as several
      TXT documents through POST /v1/knowledge/documents (a live key of an agency org); the time
      from the first upload to every document 'ready' (polled) gives MB/s and chunks/s. The
      worker is one thread, so that is per core (embedding included); the worker's own times
      from the server log give the same figures without the polling and upload overhead.
  (2) query latency: with the server stopped, synthetic documents (status ready) and chunks
      (~100 words of the same prose, a random unit-length 512-float32 embedding each) go straight
      into the bench's own SQLite database (the FTS5 triggers index them), in the org and mode
      of the bench key, up to 10k and then 100k chunks; after each restart, N sequential
      POST /v1/knowledge/query {query, limit: 5} with varied queries; p50/p99 (goal: p50 < 50 ms
      at 100k). At 100k also where the time goes: BM25 only (the server restarted with
      WORKFORCE_EMBEDDINGS_PATH=/nonexistent, no model) and vectors only (queries without a word,
      so no FTS5 query), and the brute-force scan bound (the embedding bytes over this machine's
      memory read bandwidth, measured here with memchr over a 256 MiB buffer).
  (3) memory: the server's RSS after the queries at 100k minus its RSS idle (same database,
      right after the start), and the database file size.

Every server is stopped by its own PID. Prints a table with the goals; exits 1 only when something
failed to run. Usage: knowledge_bench.py --bin build/workforce --tmp DIR [--mb 1.5] [-n 200].
"""

import argparse
import hashlib
import http.client
import json
import os
import random
import sqlite3
import struct
import sys
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import wfbench  # noqa: E402
from wfbench import log, pct  # noqa: E402

ORG = "kbench"
DIM = 512
CHUNKS_PER_DOC = 100  # synthetic documents

# ---------------------------------------------------------------- English-like prose
# Function words first (most frequent), then general and business/support vocabulary; word
# frequencies follow Zipf's law by rank, so BM25 meets both very common and rare terms.
FUNCTION = """the of and to a in is that it for was on are as with be by this at or from have an
they which you not we but all can were their has will one there been if more when would so
what about up out them into some than its only other then these may our also could should
how each after most over such any new where both those through between must while under
because before during without within however every many few same again""".split()
CONTENT = """time people year way day man thing woman life child world school state family
student group country problem hand part place case week company system program question work
government number night point home water room mother area money story fact month lot right study
book eye job word business issue side kind head house service friend father power hour game line
end member law car city community name president team minute idea kid body information back
parent face others level office door health person art war history party result change morning
reason research girl guy moment air teacher force education account password billing invoice
refund subscription plan customer support ticket order shipping delivery product price payment
card bank transfer report dashboard user admin permission role access token key security policy
privacy data export import backup restore server database network deployment release version
update upgrade install configure setting option feature error warning log incident outage
latency performance memory storage disk file document upload download search query index
schedule meeting calendar email message notification alert team project task deadline budget
contract agreement employee manager salary leave holiday training onboarding handbook benefit
insurance expense travel receipt approval workflow integration webhook endpoint request response
limit quota usage plan tier trial discount coupon tax region currency language translation
mobile desktop browser application interface button page screen menu profile avatar
reset change create delete remove add edit review approve reject submit cancel renew
verify confirm enable disable connect migrate monitor measure improve reduce increase
quickly carefully monthly annual daily weekly new old large small important available
secure private public internal external simple complex fast slow first last next previous
warehouse inventory supplier vendor purchase quote estimate forecast revenue margin cost
analysis metric goal target quarter strategy market campaign lead prospect partner
""".split()
VOCAB = FUNCTION + CONTENT
WEIGHTS = [1.0 / (r + 2.7) ** 1.07 for r in range(len(VOCAB))]

QUESTIONS = [
    "How do I reset my password?",
    "What is the refund policy for annual subscriptions?",
    "How can an admin change the role of a user?",
    "When is the invoice sent each month?",
    "Which payment card types are accepted for billing?",
    "How do I export data from the dashboard?",
    "What are the rate limit quota tiers?",
    "How is employee travel expense approval handled?",
    "Steps to restore a database backup after an outage",
    "security policy for API key access token",
    "How many holiday leave days does a new employee get?",
    "configure webhook endpoint integration",
    "What does the onboarding training cover?",
    "shipping delivery time for international orders",
    "How do I cancel my subscription plan?",
    "upgrade to the latest release version",
    "privacy policy and data retention",
    "how to submit a receipt for an expense report",
    "quarterly revenue forecast and margin analysis",
    "monitor latency and memory performance of the server",
    "supplier purchase order approval workflow",
    "mobile application notification settings",
    "discount coupon for the trial tier",
    "tax and currency per region on the invoice",
]


class Prose:
    def __init__(self, seed):
        self.rnd = random.Random(seed)
        self.cum = []
        acc = 0.0
        for w in WEIGHTS:
            acc += w
            self.cum.append(acc)

    def sentence(self):
        words = self.rnd.choices(VOCAB, cum_weights=self.cum, k=self.rnd.randint(8, 22))
        words[0] = words[0].capitalize()
        return " ".join(words) + self.rnd.choice(".....?!")

    def paragraph(self):
        return " ".join(self.sentence() for _ in range(self.rnd.randint(3, 7)))

    def text(self, nbytes):
        parts, n = [], 0
        while n < nbytes:
            p = self.paragraph()
            parts.append(p)
            n += len(p) + 2
        return "\n\n".join(parts) + "\n"

    def query(self):
        if self.rnd.random() < 0.5:
            return self.rnd.choice(QUESTIONS)
        words = self.rnd.choices(VOCAB, cum_weights=self.cum, k=self.rnd.randint(3, 9))
        return " ".join(words) + "?"


# ---------------------------------------------------------------- HTTP


class Client:
    def __init__(self, port, key):
        self.port, self.key = port, key
        self.c = http.client.HTTPConnection("127.0.0.1", port, timeout=120)

    def call(self, method, path, body=None, ctype="application/json"):
        hdr = {"Authorization": "Bearer " + self.key}
        if body is not None:
            hdr["Content-Type"] = ctype
        try:
            self.c.request(method, path, body=body, headers=hdr)
            r = self.c.getresponse()
            data = r.read()
        except (OSError, http.client.HTTPException):
            self.c.close()
            self.c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)
            raise
        return r.status, data

    def close(self):
        self.c.close()


def upload(cl, name, text):
    boundary = "----wfbench" + uuid.uuid4().hex
    body = b"".join([
        ("--%s\r\nContent-Disposition: form-data; name=\"name\"\r\n\r\n%s\r\n"
         % (boundary, name)).encode(),
        ("--%s\r\nContent-Disposition: form-data; name=\"tags\"\r\n\r\nbench\r\n" % boundary).encode(),
        ("--%s\r\nContent-Disposition: form-data; name=\"file\"; filename=\"%s.txt\"\r\n"
         "Content-Type: text/plain\r\n\r\n" % (boundary, name)).encode(),
        text.encode(),
        ("\r\n--%s--\r\n" % boundary).encode(),
    ])
    st, data = cl.call("POST", "/v1/knowledge/documents", body,
                       "multipart/form-data; boundary=" + boundary)
    if st not in (200, 201, 202):
        raise RuntimeError("upload answered %d: %s" % (st, data[:300]))
    return json.loads(data)["id"]


def ingest(srv, key, mb, ndocs, prose):
    texts = [prose.text(int(mb * 1e6 / ndocs)) for _ in range(ndocs)]
    total = sum(len(t.encode()) for t in texts)
    cl = Client(srv.port, key)
    log("ingest: uploading %d TXT documents, %.2f MB" % (ndocs, total / 1e6))
    t0 = time.monotonic()
    ids = [upload(cl, "prose-%d" % i, t) for i, t in enumerate(texts)]
    t_up = time.monotonic() - t0
    pending = set(ids)
    chunks = 0
    while pending:
        if time.monotonic() - t0 > 600:
            raise RuntimeError("documents not ready after 600 s")
        if not srv.alive():
            raise RuntimeError("workforce exited during ingest: " + srv.log_tail())
        for i in sorted(pending):
            st, data = cl.call("GET", "/v1/knowledge/documents/" + i)
            if st != 200:
                raise RuntimeError("GET document answered %d: %s" % (st, data[:300]))
            d = json.loads(data)
            if d["status"] == "failed":
                raise RuntimeError("document %s failed: %s" % (i, d.get("error")))
            if d["status"] == "ready":
                pending.discard(i)
                chunks += d["chunk_count"]
            else:
                break  # the worker goes in id order: wait for this one
        if pending:
            time.sleep(0.05)
    elapsed = time.monotonic() - t0
    cl.close()
    # The worker's own time per document, from its log lines.
    worker_ms = 0
    with open(srv.logpath, "rb") as f:
        for line in f.read().decode("utf-8", "replace").splitlines():
            if "knowledge: document" in line and " ready: " in line:
                try:
                    worker_ms += int(line.rsplit(",", 1)[1].split()[0])
                except (IndexError, ValueError):
                    pass
    return {"bytes": total, "docs": ndocs, "chunks": chunks, "elapsed_s": elapsed,
            "upload_s": t_up, "worker_s": worker_ms / 1000.0}


# ---------------------------------------------------------------- synthetic rows

B62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


def new_id(rnd, prefix):
    return prefix + "_" + "".join(rnd.choice(B62) for _ in range(24))


def sign_table():
    """byte -> the 8 float32 of its bits as +-1/sqrt(512): every such vector has unit length."""
    c = 1.0 / DIM ** 0.5
    return [struct.pack("<8f", *[(c if (b >> k) & 1 else -c) for k in range(8)])
            for b in range(256)]


def fill(db, target, prose, table, pool):
    """Insert synthetic ready documents and chunks until the bench org holds 'target' chunks."""
    con = sqlite3.connect(db, isolation_level=None)
    con.execute("PRAGMA synchronous = OFF")
    org, mode = con.execute("SELECT org_id, mode FROM documents LIMIT 1").fetchone()
    have = con.execute("SELECT count(*) FROM chunks WHERE org_id = ? AND mode = ?",
                       (org, mode)).fetchone()[0]
    rnd = prose.rnd
    t0 = time.monotonic()
    con.execute("BEGIN")
    ndoc = 0
    while have < target:
        k = min(CHUNKS_PER_DOC, target - have)
        doc = new_id(rnd, "doc")
        now = int(time.time() * 1000)
        rows = []
        size = 0
        for seq in range(k):
            words, parts = 0, []
            while words < 100:
                s = rnd.choice(pool)
                parts.append(s)
                words += s.count(" ") + 1
            text = " ".join(parts)
            size += len(text)
            emb = b"".join([table[b] for b in os.urandom(DIM // 8)])
            rows.append((new_id(rnd, "chunk"), doc, org, mode, seq, text, emb))
        con.execute("INSERT INTO documents (id, org_id, mode, name, filename, content_type,"
                    " size_bytes, sha256, tags, employee_ids, status, chunk_count, created_at,"
                    " updated_at) VALUES (?, ?, ?, ?, ?, 'text/plain', ?, ?, '[\"synthetic\"]',"
                    " '[]', 'ready', ?, ?, ?)",
                    (doc, org, mode, "synthetic-%d" % ndoc, "synthetic-%d.txt" % ndoc, size,
                     hashlib.sha256(doc.encode()).hexdigest(), k, now, now))
        # The built-in model's name: vectors of another model are not searched (and would be
        # embedded again in the background).
        con.executemany("INSERT INTO chunks (id, document_id, org_id, mode, seq, page, content,"
                        " embedding, embed_model) VALUES (?, ?, ?, ?, ?, NULL, ?, ?,"
                        " 'use-lite-512')", rows)
        have += k
        ndoc += 1
    con.execute("COMMIT")
    total = con.execute("SELECT count(*) FROM chunks WHERE org_id = ? AND mode = ?",
                        (org, mode)).fetchone()[0]
    con.close()
    log("fill: %d chunks in the bench org (%d synthetic documents added in %.1f s)"
        % (total, ndoc, time.monotonic() - t0))
    return total


def db_bytes(db):
    return sum(os.path.getsize(p) for p in (db, db + "-wal", db + "-shm") if os.path.exists(p))


# ---------------------------------------------------------------- queries


def run_queries(srv, key, queries, warmup=5):
    cl = Client(srv.port, key)
    lat, bad, nres = [], [], 0
    for i, q in enumerate(queries[:warmup] + queries):
        body = json.dumps({"query": q, "limit": 5})
        t0 = time.perf_counter()
        try:
            st, data = cl.call("POST", "/v1/knowledge/query", body)
        except (OSError, http.client.HTTPException) as e:
            bad.append(repr(e))
            continue
        dt = (time.perf_counter() - t0) * 1000.0
        if st != 200:
            bad.append("%d %s" % (st, data[:200]))
            continue
        if i >= warmup:
            lat.append(dt)
            nres += len(json.loads(data)["results"])
    cl.close()
    return {"n": len(lat), "p50": pct(lat, 50), "p99": pct(lat, 99),
            "mean": sum(lat) / len(lat) if lat else float("nan"), "failures": bad,
            "results": nres}


def read_bandwidth():
    """Bytes/s of a memchr over 256 MiB (a read-only scan of memory, the vector scan's bound)."""
    buf = b"\x01" * (256 << 20)
    best = None
    for _ in range(3):
        t0 = time.perf_counter()
        buf.find(b"\x02")
        dt = time.perf_counter() - t0
        best = dt if best is None or dt < best else best
    return len(buf) / best


def rss_kib(pid):
    return wfbench.proc_status(pid).get("VmRSS", 0)


def start_without_model(binary, tmp, servers):
    """The server on the same database without an embedding model (BM25 only)."""
    s = wfbench.Server(binary, tmp, {"WORKFORCE_EMBEDDINGS_PATH": "/nonexistent"}, "workforce")
    servers.append(s)
    s.start()
    if "no embedding model" not in s.log_tail(50):
        raise RuntimeError("the BM25-only server loaded a model: " + s.log_tail())
    return s


# ---------------------------------------------------------------- main


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default="build/workforce")
    ap.add_argument("--tmp", required=True)
    ap.add_argument("--mb", type=float, default=1.0)
    ap.add_argument("--docs", type=int, default=5)
    ap.add_argument("-n", type=int, default=200, help="queries per measurement")
    ap.add_argument("--sizes", default="10000,100000")
    args = ap.parse_args()
    sizes = [int(x) for x in args.sizes.split(",")]
    binary = os.path.abspath(args.bin)
    t_start = time.monotonic()

    prose = Prose(4)
    queries = [prose.query() for _ in range(args.n)]
    tmp = os.path.abspath(args.tmp)
    srv = wfbench.Server(binary, tmp, {}, "workforce")
    servers = [srv]
    rc = 0
    try:
        key = srv.key(ORG)
        srv.start()
        time.sleep(0.5)
        idle_empty = rss_kib(srv.pid)
        if "embedding model loaded" not in srv.log_tail(50):
            raise RuntimeError("the server did not load the embedding model (run npm ci): "
                               + srv.log_tail())
        ing = ingest(srv, key, args.mb, args.docs, prose)
        srv.stop()

        log("fill: generating a pool of sentences")
        pool = [prose.sentence() for _ in range(20000)]
        table = sign_table()
        res = {}
        for size in sizes:
            total = fill(srv.db, size, prose, table, pool)
            srv.start()
            time.sleep(0.5)
            idle = rss_kib(srv.pid)
            log("query: %d chunks, %d queries" % (total, len(queries)))
            q = run_queries(srv, key, queries)
            after = rss_kib(srv.pid)
            srv.stop()
            res[size] = {"chunks": total, "q": q, "idle": idle, "after": after,
                         "db": db_bytes(srv.db)}

        # Where the time goes at the largest size.
        big = sizes[-1]
        log("breakdown at %d chunks: vectors only (queries without a word)" % big)
        srv.start()
        wordless = ["?" * (1 + i % 7) for i in range(min(args.n, 100))]
        vec_only = run_queries(srv, key, wordless)
        srv.stop()
        log("breakdown at %d chunks: BM25 only (no embedding model)" % big)
        nomodel = start_without_model(binary, tmp, servers)
        bm25_only = run_queries(nomodel, key, queries[:min(args.n, 100)])
        nomodel.stop()
        bw = read_bandwidth()
    finally:
        for s in servers:
            if s.proc is not None and s.alive():
                s.stop()

    # ---------------------------------------------------------------- report
    mb = ing["bytes"] / 1e6
    print()
    print("workforce knowledge bench: %d cores shared by the client and the server; %d queries"
          " per size (limit 5, sequential, one keep-alive connection)" % (os.cpu_count(), args.n))
    print()
    print("ingest (%d TXT documents, %.2f MB of generated prose, %d chunks; one worker thread)"
          % (ing["docs"], mb, ing["chunks"]))
    print("  %-44s %10.2f s" % ("first upload -> all ready", ing["elapsed_s"]))
    print("  %-44s %10.2f s" % ("  of which uploads", ing["upload_s"]))
    print("  %-44s %10.2f s" % ("worker time (server log)", ing["worker_s"]))
    print("  %-44s %10.3f" % ("MB/s per core (end to end)", mb / ing["elapsed_s"]))
    print("  %-44s %10.1f" % ("chunks/s per core (end to end)", ing["chunks"] / ing["elapsed_s"]))
    if ing["worker_s"] > 0:
        print("  %-44s %10.3f" % ("MB/s per core (worker time)", mb / ing["worker_s"]))
        print("  %-44s %10.1f" % ("chunks/s per core (worker time)",
                                  ing["chunks"] / ing["worker_s"]))
    print()
    print("query POST /v1/knowledge/query (BM25 + vectors, fused)")
    print("  %-12s %10s %10s %10s %12s %12s %12s" % ("chunks", "p50 ms", "p99 ms", "mean ms",
                                                     "idle RSS MiB", "after MiB", "db MiB"))
    for size in sizes:
        r = res[size]
        print("  %-12d %10.2f %10.2f %10.2f %12.1f %12.1f %12.1f"
              % (r["chunks"], r["q"]["p50"], r["q"]["p99"], r["q"]["mean"], r["idle"] / 1024,
                 r["after"] / 1024, r["db"] / 2**20))
    r = res[big]
    vec_bytes = r["chunks"] * DIM * 4
    print()
    print("where the time goes at %d chunks (p50 / p99 ms)" % r["chunks"])
    print("  %-44s %8.2f / %.2f" % ("fused (model + BM25 + vector scan)", r["q"]["p50"],
                                    r["q"]["p99"]))
    print("  %-44s %8.2f / %.2f" % ("BM25 only (no embedding model)", bm25_only["p50"],
                                    bm25_only["p99"]))
    print("  %-44s %8.2f / %.2f" % ("vectors only (query without a word)", vec_only["p50"],
                                    vec_only["p99"]))
    print("  %-44s %8.2f" % ("scan bound: %.0f MB of vectors at %.1f GB/s" % (vec_bytes / 1e6,
                                                                            bw / 1e9),
                             vec_bytes / bw * 1000))
    print()
    mem_delta = (r["after"] - r["idle"]) / 1024
    per100k = 100000.0 / r["chunks"]
    print("memory")
    print("  %-44s %10.1f" % ("idle RSS, empty database (MiB)", idle_empty / 1024))
    print("  %-44s %10.1f" % ("RSS after - idle, at %d chunks (MiB)" % r["chunks"], mem_delta))
    print("  %-44s %10.1f" % ("database size per 100k chunks (MiB)",
                              r["db"] / 2**20 * per100k))
    print()
    p50 = r["q"]["p50"]
    ok = "PASS" if p50 < 50 else "FAIL"
    print("goals")
    print("  %-40s %-10s %s" % ("query p50 < 50 ms at %dk chunks" % (r["chunks"] // 1000),
                                "%.2f" % p50, ok))
    for name, q in [("%d" % s, res[s]["q"]) for s in sizes] + [("vectors only", vec_only),
                                                                 ("BM25 only", bm25_only)]:
        if q["failures"]:
            print("warning: %d failed queries (%s): %s" % (len(q["failures"]), name,
                                                          q["failures"][0]))
            rc = 1
    if vec_only["results"] == 0:
        print("warning: the queries without a word returned nothing (no vector search?)")
    if res[big]["q"]["results"] == 0:
        print("warning: the queries at %d chunks returned no results" % big)
    log("knowledge bench took %.0f s" % (time.monotonic() - t_start))
    return rc


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (RuntimeError, OSError, sqlite3.Error) as e:
        log("knowledge bench failed: %s" % e)
        sys.exit(1)
