#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""bench/memory.py: the server's memory (issue 12, item 5), run by bench/run.sh.

Two servers whose databases sit in one directory, so that they use one weight cache
(embeddings.cache beside the databases, mapped read-only):
  1. idle: RSS (anonymous and file-backed) once /healthz answers, nothing embedded yet;
     goal: < 20 MiB;
  2. after each has embedded a document: RSS, and the cache mapping's resident and
     proportional (shared) size in each process: a shared copy shows a PSS near RSS/2.
Python 3 standard library only; every process is stopped by its own PID."""

import http.client
import json
import os
import shutil
import sys
import tempfile
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from wfbench import Server, log, proc_status  # noqa: E402

GOAL_IDLE_KIB = 20 * 1024


def mapping(pid, name):
    """(Rss, Pss) in KiB of the mappings of file 'name' in process 'pid'."""
    rss = pss = 0
    cur = None
    with open("/proc/%d/smaps" % pid) as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 5 and "-" in parts[0] and ":" not in parts[0]:
                cur = parts[5] if len(parts) > 5 else ""
            elif cur and cur.endswith(name):
                if line.startswith("Rss:"):
                    rss += int(parts[1])
                elif line.startswith("Pss:"):
                    pss += int(parts[1])
    return rss, pss


def upload(port, key, text):
    boundary = "b" + uuid.uuid4().hex
    body = ("--%s\r\nContent-Disposition: form-data; name=\"file\"; filename=\"m.txt\"\r\n"
            "Content-Type: text/plain\r\n\r\n%s\r\n--%s--\r\n" % (boundary, text, boundary))
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    c.request("POST", "/v1/knowledge/documents", body=body.encode(),
              headers={"Authorization": "Bearer " + key,
                       "Content-Type": "multipart/form-data; boundary=" + boundary})
    doc = json.loads(c.getresponse().read())
    deadline = time.time() + 120
    while time.time() < deadline:
        c.request("GET", "/v1/knowledge/documents/" + doc["id"],
                  headers={"Authorization": "Bearer " + key})
        d = json.loads(c.getresponse().read())
        if d["status"] != "processing":
            c.close()
            return d
        time.sleep(0.05)
    raise RuntimeError("the document was not processed in 120 s")


def main():
    binary = os.environ.get("BENCH_BINARY", "build/workforce")
    tmp = tempfile.mkdtemp(prefix="wf-bench-mem-")
    servers = []
    try:
        a = Server(binary, tmp, {}, name="a").start()
        servers.append(a)
        time.sleep(1)  # let start-up work settle before reading the idle figure
        idle = proc_status(a.pid)
        b = Server(binary, tmp, {}, name="b").start()
        servers.append(b)
        text = " ".join("Sentence %d says something about refunds, shipping and returns." % i
                        for i in range(400))
        for s in servers:
            upload(s.port, s.key("mem-" + s.name), text)
        after = [proc_status(s.pid) for s in servers]
        maps = [mapping(s.pid, "embeddings.cache") for s in servers]
        size = os.path.getsize(os.path.join(tmp, "embeddings.cache")) // 1024
        print("memory: idle RSS %.1f MiB (anonymous %.1f, file-backed %.1f), goal < 20 MiB: %s"
              % (idle["VmRSS"] / 1024, idle["RssAnon"] / 1024, idle["RssFile"] / 1024,
                 "PASS" if idle["VmRSS"] < GOAL_IDLE_KIB else "FAIL"))
        print("memory: weight cache %.1f MiB, mapped read-only by both servers" % (size / 1024))
        for s, st, (rss, pss) in zip(servers, after, maps):
            print("memory: server %s after embedding a document: RSS %.1f MiB (anonymous %.1f), "
                  "cache resident %.1f MiB, its proportional share %.1f MiB"
                  % (s.name, st["VmRSS"] / 1024, st["RssAnon"] / 1024, rss / 1024, pss / 1024))
        shared = all(rss and pss < rss * 0.75 for rss, pss in maps)
        print("memory: two processes share one copy of the weights: %s"
              % ("yes" if shared else "no"))
        return 0
    finally:
        for s in servers:
            s.stop()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Exception as e:  # noqa: BLE001 - a bench reports and exits non-zero
        log("memory bench failed: %s" % e)
        sys.exit(1)
