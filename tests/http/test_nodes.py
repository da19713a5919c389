# SPDX-License-Identifier: MIT
"""Several nodes on one PostgreSQL (issue 13), black-box: three server processes share one
database, requests alternate between them, and work held by a node that dies (kill -9) is taken
back by the others once its lease (WORKFORCE_LEASE_SECONDS) has expired: the cut task run ends
`failed` ("Interrupted ...") and uncharged and the task runs again; a cut workflow step runs
again, its cut attempt not counted. The language model is tests/mock/openai_mock.py (live keys,
WORKFORCE_LLM_RETRIES=0: one run or step attempt is at most one model request).

- NodesKillTest: 200 tasks and 50 workflow runs (2 steps each) over 3 nodes; kill -9 of the node
  holding the most work, restart, and again. Every task ends completed with exactly one
  completed run, every workflow run completed with each step completed once, nothing lost,
  nothing charged twice: the organization's balance fell by exactly what the completed runs
  and steps say they cost. Which node holds what (to kill one that holds work, and to know
  exactly which runs each kill cut) is read from the database (task_runs.node_id,
  workflow_runs.lease_node, nodes.started_at). About 35 s.
- NodesRecurringTest: a recurring task (daily: the shortest rule there is) over 3 nodes gives
  exactly one run per occurrence. The first occurrence is a real clock minute (up to ~70 s
  away, all nodes' workers wake for it at once); the next day's two occurrences are brought
  forward by setting the task's next_run_at a few seconds ahead in the database (the server has
  no test clock), where every node again wakes for the same instant. 20 to 90 s.

PostgreSQL only (WORKFORCE_HTTP_PG_URL): several nodes cannot share a SQLite file.
"""

import json
import re
import subprocess
import sys
import time
import unittest
import urllib.parse

from chatlib import MOCK_API_KEY, MOCK_MODEL, ChatTestCase, openai_mock, uniq

from harness import GENEROUS_LIMITS, REDIS_URL, Server, parse_ts, pg_only

NODES = 3
LEASE = 5          # seconds: a dead node's work is taken back 5..7 s after its last heartbeat
TASKS = 200
WORKFLOWS = 5
RUNS_PER_WORKFLOW = 10
PAUSE_MS = 1200    # each model call: long enough that a kill cuts calls in flight
INTERRUPTED = "interrupt"


def iso(ts):
    """A Unix time in seconds as the contract's timestamp (milliseconds, Z)."""
    ms = int(round(ts * 1000))
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ms // 1000)) + ".%03dZ" % (ms % 1000)


@pg_only("several nodes share one database only on PostgreSQL")
@unittest.skipIf(bool(REDIS_URL), "run once, on the PostgreSQL run without Redis (the work "
                 "taken over does not depend on where the limits are kept)")
class NodesCase(ChatTestCase):
    """A fresh 3-node server per test, in front of one in-process mock language model."""

    mock = None

    @classmethod
    def setUpClass(cls):  # no class-wide server: each test starts its own nodes
        cls.mock = openai_mock.MockLLM().start()

    @classmethod
    def tearDownClass(cls):
        cls.mock.stop()

    def setUp(self):
        self.mock.reset()
        self.server = Server(nodes=NODES, env={
            "WORKFORCE_RATE_LIMITS": GENEROUS_LIMITS, "WORKFORCE_LLM": "openai",
            "WORKFORCE_LLM_BASE_URL": self.mock.base_url, "WORKFORCE_LLM_MODEL": MOCK_MODEL,
            "WORKFORCE_LLM_API_KEY": MOCK_API_KEY, "WORKFORCE_LLM_RETRIES": "0",
            "WORKFORCE_LEASE_SECONDS": str(LEASE)})
        self.addCleanup(self.server.cleanup)
        self.server.start()
        # the nodes start one after the other, each answering /healthz before the next starts
        self.node_ids = [row[0] for row in self.sql("SELECT id FROM nodes ORDER BY started_at")]
        self.assertEqual(len(self.node_ids), NODES, self.node_ids)

    # -- the database of the nodes (psql), for what the API does not say: who holds what --

    def sql(self, query):
        p = subprocess.run(["psql", self.server.db, "-qAt", "-F", "\t", "-v", "ON_ERROR_STOP=1",
                            "-c", query], capture_output=True, text=True, timeout=30,
                           stdin=subprocess.DEVNULL)
        self.assertEqual(p.returncode, 0, "psql: %s\n%s" % (query, p.stderr))
        return [line.split("\t") for line in p.stdout.splitlines() if line]

    def restart(self, i):
        """Start node i again (a new process: a new node id)."""
        self.server.start_node(i)
        self.node_ids[i] = self.sql("SELECT id FROM nodes ORDER BY started_at DESC LIMIT 1")[0][0]

    # -- requests --

    def ok(self, r, status=200):
        self.assertEqual(r.status, status, r)
        self.assertIsNotNone(r.json, r)
        return r.json

    def all_tasks(self, key):
        """Every task of the organization, walked with the `before` cursor."""
        out, before = [], None
        for _ in range(100):
            q = {"limit": 100}
            if before:
                q["before"] = before
            body = self.ok(self.server.get("/v1/tasks?" + urllib.parse.urlencode(q), key=key))
            out += body["tasks"]
            if not body["has_more"]:
                return out
            before = body["next_cursor"]
        self.fail("task pagination does not end")

    def task_runs(self, key, tid):
        out, before = [], None
        for _ in range(100):
            q = {"limit": 100}
            if before:
                q["before"] = before
            body = self.ok(self.server.get("/v1/tasks/%s/runs?%s"
                                           % (tid, urllib.parse.urlencode(q)), key=key))
            out += body["runs"]
            if not body["has_more"]:
                return out
            before = body["next_cursor"]
        self.fail("run pagination does not end")

    def wf_runs(self, key, wf_id):
        out, before = [], None
        for _ in range(100):
            q = {"limit": 100}
            if before:
                q["before"] = before
            body = self.ok(self.server.get("/v1/workflows/%s/runs?%s"
                                           % (wf_id, urllib.parse.urlencode(q)), key=key))
            out += body["runs"]
            if not body["has_more"]:
                return out
            before = body["next_cursor"]
        self.fail("run pagination does not end")

    def balance(self, key):
        return self.ok(self.server.get("/v1/account", key=key))["credits_remaining"]

    def engine_calls(self, pattern):
        """Model requests per token: {token: count} for each match of 'pattern' (one group)."""
        rx = re.compile(pattern)
        counts = {}
        for r in self.mock.requests():
            if not r["path"].endswith("/chat/completions"):
                continue
            for tok in set(rx.findall(r.get("last_user") or "")):
                counts[tok] = counts.get(tok, 0) + 1
        return counts


class NodesKillTest(NodesCase):

    def held(self):
        """What each node holds now: {node id: ([task run id], [(workflow run id, step)])}."""
        out = {}
        for node, run in self.sql("SELECT node_id, id FROM task_runs WHERE status ="
                                  " 'in_progress' AND node_id IS NOT NULL"):
            out.setdefault(node, ([], []))[0].append(run)
        for node, run, step in self.sql("SELECT lease_node, id, next_step FROM workflow_runs"
                                        " WHERE lease IS NOT NULL AND lease_node IS NOT NULL"):
            out.setdefault(node, ([], []))[1].append((run, int(step)))
        return out

    def kill_busiest(self, what, spare=()):
        """kill -9 the node holding the most work (at least 2 pieces; not one of 'spare'),
        restart it; its index and the work it held when it died (read once it is dead, so
        exact) as (task run ids, (workflow run id, step) pairs)."""
        def busiest():
            h = self.held()
            load = {i: sum(map(len, h.get(self.node_ids[i], ([], []))))
                    for i in range(NODES) if i not in spare}
            best = max(load, key=load.get)
            return (best,) if load[best] >= 2 else None
        i = self.poll(busiest, "%s: a node holding work" % what, 60, 0.05)[0]
        dead = self.node_ids[i]
        self.server.kill_node(i)
        runs, steps = self.held().get(dead, ([], []))
        self.assertTrue(runs or steps, "%s: node %d held nothing when it died" % (what, i))
        self.restart(i)
        return i, dead, set(runs), set(steps)

    def test_kill9_twice_under_load(self):
        s = self.server
        t_start = time.time()
        org = uniq("nodes")
        key = s.create_key(org, tier="agency", credits=1000000)
        starters = [e["id"] for e in self.employees(key) if e["tier"] == "starter"][:4]
        self.assertGreaterEqual(len(starters), 2)
        b0 = self.balance(key)
        tok = uniq("nk").replace("-", "")
        pause = " [[pause:%d]]" % PAUSE_MS

        workflows = []
        for w in range(WORKFLOWS):
            body = {"name": "Nodes flow %d %s" % (w, tok), "trigger": {"type": "manual"},
                    "steps": [{"employee_id": starters[w % len(starters)], "action": "respond",
                               "input": "{{trigger.text}}-s0." + pause},
                              {"employee_id": starters[(w + 1) % len(starters)],
                               "action": "respond", "input": "{{trigger.text}}-s1." + pause}]}
            workflows.append(self.ok(s.post("/v1/workflows", body, key=key))["id"])

        # 200 tasks and 50 runs, interleaved, the requests alternating between the nodes
        tasks, runs = {}, {}  # id -> label; run id -> (workflow id, label)
        per_run = TASKS // (WORKFLOWS * RUNS_PER_WORKFLOW)
        for n in range(WORKFLOWS * RUNS_PER_WORKFLOW):
            for m in range(per_run):
                i = n * per_run + m
                label = "%s-t%03d" % (tok, i)
                t = self.ok(s.post("/v1/tasks", {
                    "employee_id": starters[i % len(starters)], "title": "Job %s." % label,
                    "description": "Work for the nodes test." + pause}, key=key))
                tasks[t["id"]] = label
            wf = workflows[n % WORKFLOWS]
            label = "%s-w%02d" % (tok, n)
            r = self.ok(s.post("/v1/workflows/%s/run" % wf, {"input": {"text": label}}, key=key))
            runs[r["id"]] = (wf, label)
        self.assertEqual((len(tasks), len(runs)), (TASKS, WORKFLOWS * RUNS_PER_WORKFLOW))
        t_created = time.time()

        # kill -9 twice, each time the node holding the most work; the second, another node,
        # once the first one's work has been taken back
        node1, dead1, runs1, steps1 = self.kill_busiest("first kill")
        t_kill1 = time.time()
        self.poll(lambda: not self.held().get(dead1), "the first dead node's work taken back",
                  LEASE * 4 + 10, 0.2)
        node2, dead2, runs2, steps2 = self.kill_busiest("second kill", spare=(node1,))
        t_kill2 = time.time()

        # everything ends
        def all_done():
            ts = self.all_tasks(key)
            rs = [r for wf in workflows for r in self.wf_runs(key, wf)]
            if all(t["status"] in ("completed", "failed") for t in ts) and \
                    all(r["status"] in ("completed", "failed", "cancelled") for r in rs):
                return ts, rs
            return None
        final_tasks, final_runs = self.poll(all_done, "every task and workflow run ended", 150,
                                            0.5)
        t_done = time.time()

        # -- tasks: none lost, none extra, each completed with exactly one completed run --
        self.assertEqual(sorted(t["id"] for t in final_tasks), sorted(tasks), "tasks lost/added")
        calls = self.engine_calls(r"(%s-t\d{3})\." % re.escape(tok))
        charged = 0
        interrupted = set()
        for t in final_tasks:
            rs = self.task_runs(key, t["id"])
            label = tasks[t["id"]]
            what = "task %s (%s): %s runs %s" % (t["id"], label, json.dumps(t)[:600],
                                                 json.dumps(rs)[:1500])
            self.assertEqual(t["status"], "completed", what)
            done = [r for r in rs if r["status"] == "completed"]
            self.assertEqual(len(done), 1, "exactly one completed run: " + what)
            self.assertEqual(t["run_count"], len(rs), what)
            self.assertEqual(len({r["id"] for r in rs}), len(rs), what)
            for r in rs:
                if r["status"] == "completed":
                    continue
                self.assertEqual(r["status"], "failed", what)
                self.assertIn(INTERRUPTED, (r["error"] or "").lower(), what)
                self.assertEqual((r["result"], r["credits_used"]), (None, 0), what)
                self.assertIsNotNone(r["completed_at"], what)
                interrupted.add(r["id"])
            ok = done[0]
            self.assertGreaterEqual(ok["credits_used"], 1, what)
            self.assertEqual((t["result"], t["credits_used"], t["started_at"]),
                             (ok["result"], ok["credits_used"], ok["started_at"]), what)
            self.assertIsNone(t["error"], what)
            # one model request per run at most, and at least the completed run's
            self.assertGreaterEqual(calls.get(label, 0), 1, what)
            self.assertLessEqual(calls.get(label, 0), len(rs), what)
            charged += ok["credits_used"]
        # exactly the runs the kills cut were interrupted: no live node's run was taken
        self.assertEqual(interrupted, runs1 | runs2,
                         "interrupted runs are not the runs of the dead nodes")

        # -- workflow runs: none lost, each step completed once --
        self.assertEqual(sorted(r["id"] for r in final_runs), sorted(runs), "runs lost/added")
        step_calls = self.engine_calls(r"(%s-w\d\d-s\d)\." % re.escape(tok))
        for r in final_runs:
            wf, label = runs[r["id"]]
            what = "run %s (%s): %s" % (r["id"], label, json.dumps(r)[:2000])
            self.assertEqual((r["workflow_id"], r["status"], r["error"]), (wf, "completed", None),
                             what)
            self.assertEqual(len(r["steps"]), 2, what)
            for st in r["steps"]:
                self.assertEqual((st["status"], st["attempts"], st["error"]),
                                 ("completed", 1, None), what)
                self.assertIsNotNone(st["output"], what)
                self.assertEqual(st["input"], "%s-s%d.%s" % (label, st["index"], pause), what)
                self.assertGreaterEqual(st["credits_used"], 1, what)
                # one model request per attempt: the completed one, and at most one per kill
                # that cut the step
                n = step_calls.get("%s-s%d" % (label, st["index"]), 0)
                cuts = ((r["id"], st["index"]) in steps1) + ((r["id"], st["index"]) in steps2)
                self.assertGreaterEqual(n, 1, what)
                self.assertLessEqual(n, 1 + cuts, "a step ran more often than it was cut: " + what)
            self.assertEqual(r["credits_used"], sum(st["credits_used"] for st in r["steps"]), what)
            charged += r["credits_used"]
        for wf in workflows:
            w = self.ok(s.get("/v1/workflows/" + wf, key=key))
            self.assertEqual(w["run_count"], RUNS_PER_WORKFLOW, w)

        # -- credits: charged exactly once per completed run and step --
        self.assertEqual(self.balance(key), b0 - charged,
                         "the balance is not the start minus what the runs cost")
        # the employees are idle again: the dead nodes' hold on them was taken back
        for e in starters:
            self.poll(lambda: self.ok(s.get("/v1/employees/" + e, key=key))["status"] == "idle",
                      "employee %s idle again" % e, 30, 0.2)
        self.assertEqual(self.server.stop(), 0)
        # for the report: how the test went
        sys.stderr.write(
            "\nnodes: created in %.1fs; kill 1 (node %d) at +%.1fs cut %d runs and %d steps; kill"
            " 2 (node %d) at +%.1fs cut %d runs and %d steps; all ended at +%.1fs; %d credits\n"
            % (t_created - t_start, node1, t_kill1 - t_start, len(runs1), len(steps1), node2,
               t_kill2 - t_start, len(runs2), len(steps2), t_done - t_start, charged))


class NodesRecurringTest(NodesCase):

    def test_recurring_task_one_run_per_occurrence(self):
        s = self.server
        key = s.create_key(uniq("nodesr"), tier="agency", credits=100000)
        wkey = s.create_key(uniq("nodesw"), mode="test")
        emp = self.employee(key, "starter")
        wemp = self.employee(wkey, "starter")
        b0 = self.balance(key)
        tok = uniq("nr").replace("-", "")
        now = time.time()
        slot = (int(now // 60) + 1) * 60
        if slot - now < 10:
            slot += 60
        rule = {"frequency": "daily", "time": time.strftime("%H:%M", time.gmtime(slot))}
        t = self.ok(s.post("/v1/tasks", {"employee_id": emp, "title": "Report %s." % tok,
                                         "description": "Daily. [[pause:300]]",
                                         "recurring": rule}, key=key))
        tid = t["id"]
        self.assertEqual((t["status"], t["run_count"], t["next_run_at"]),
                         ("pending", 0, iso(slot)))

        def occurrence(k, timeout):
            def ran():
                x = self.ok(s.get("/v1/tasks/" + tid, key=key))
                return x if x["run_count"] >= k and x["status"] == "completed" else None
            done = self.poll(ran, "occurrence %d of the recurring task" % k, timeout, 0.1)
            self.assertEqual(done["run_count"], k, "occurrence %d ran more than once: %s"
                             % (k, json.dumps(done)))
            self.assertEqual(done["next_run_at"], iso(slot + 86400), done)
            self.assertGreaterEqual(parse_ts(done["started_at"]), slot, done)
            return done

        # 1: the real minute, for which every node's workers wake at once
        before = self.ok(s.get("/v1/tasks/" + tid, key=key))
        self.assertEqual(before["run_count"], 0, "it ran before its slot")
        occurrence(1, slot + 45 - time.time())
        # 2 and 3: the next occurrence brought forward to a few seconds from now, so that every
        # node has read it (they look at least every 2 s) and wakes for that same instant
        for k in (2, 3):
            at = int((time.time() + 3) * 1000)
            rows = self.sql("UPDATE tasks SET next_run_at = %d WHERE id = '%s' AND status ="
                            " 'completed' RETURNING id" % (at, tid))
            self.assertEqual(len(rows), 1, "occurrence %d: the task was not completed" % k)
            occurrence(k, 30)

        # nothing more runs: witnesses created through each node complete
        wits = [self.ok(s.post("/v1/tasks", {"employee_id": wemp, "title": "Witness %d" % i,
                                             "priority": "low"}, key=wkey))["id"]
                for i in range(NODES)]
        for w in wits:
            self.poll(lambda: self.ok(s.get("/v1/tasks/" + w, key=wkey))["status"] == "completed",
                      "witness %s completed" % w, 30, 0.1)
        final = self.ok(s.get("/v1/tasks/" + tid, key=key))
        self.assertEqual((final["status"], final["run_count"], final["next_run_at"]),
                         ("completed", 3, iso(slot + 86400)), final)
        rs = self.task_runs(key, tid)
        self.assertEqual([r["status"] for r in rs], ["completed"] * 3, rs)
        self.assertEqual(len({r["id"] for r in rs}), 3, rs)
        self.assertEqual(self.engine_calls(r"(%s)\." % re.escape(tok)).get(tok, 0), 3,
                         "one model request per occurrence")
        self.assertEqual(self.balance(key), b0 - sum(r["credits_used"] for r in rs),
                         "charged once per occurrence")
        nodes = self.sql("SELECT node_id FROM task_runs WHERE task_id = '%s'" % tid)
        self.assertEqual(len(nodes), 3)
        self.assertEqual(self.server.stop(), 0)
        sys.stderr.write("\nnodes: the occurrences ran on nodes %s\n" % [
            self.node_ids.index(n[0]) if n[0] in self.node_ids else n[0] for n in nodes])
