#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Run the black-box HTTP tests: tests/http/test_*.py against build/workforce.

Usage: python3 tests/http/run.py [-q] [TEST_NAME ...]
  TEST_NAME as unittest understands it, e.g. test_auth or test_auth.KeysTest.test_revoked.
Env: WORKFORCE_BIN (default build/workforce in the repository), WORKFORCE_HTTP_KEEP=1 keeps
the temp dirs (database and server.log) for debugging, and the file of answers.
WORKFORCE_HTTP_ANSWERS: where the tests' answers are written (default a temp file; emptied
first). After the tests, tests/openapi/validate_answers.mjs validates each answer against the
API document's response for its operation and status: each operation and status answered
counts as one test more, passed when every answer of it is valid.
The last line is always `http: N passed, N failed[, N skipped]`; exit 0 iff nothing failed.
"""

import os
import re
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import harness  # noqa: E402


class Result(unittest.TextTestResult):
    """Names the running test in the answers it records (harness.current_test)."""

    def startTest(self, test):
        harness.current_test = test.id()
        super().startTest(test)


def validate_answers(path):
    """Validate the recorded answers against docs/openapi.json; (passed, failed) operation and
    status pairs. Its report goes to stderr; a validator that cannot run is one failure."""
    script = os.path.join(harness.REPO_ROOT, "tests", "openapi", "validate_answers.mjs")
    doc = os.path.join(harness.REPO_ROOT, "docs", "openapi.json")
    try:
        p = subprocess.run(["node", script, doc, path], cwd=harness.REPO_ROOT,
                           capture_output=True, text=True, timeout=600,
                           stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError) as e:
        print("answers: the validator did not run: %s" % e, file=sys.stderr)
        return 0, 1
    sys.stderr.write(p.stderr)
    sys.stderr.write(p.stdout)
    m = re.search(r"^answers: (\d+) operation statuses valid, (\d+) invalid", p.stdout, re.M)
    if not m or (p.returncode != 0) != (int(m.group(2)) > 0):
        print("answers: the validator failed (exit %d, no result line)" % p.returncode,
              file=sys.stderr)
        return 0, 1
    return int(m.group(1)), int(m.group(2))


def main(argv):
    verbosity = 2
    names = []
    for a in argv:
        if a == "-q":
            verbosity = 1
        else:
            names.append(a)

    bin_path = harness.binary_path()
    if not os.path.exists(bin_path):
        print("http: server binary not found: %s (run make, or set WORKFORCE_BIN)" % bin_path,
              file=sys.stderr)
        print("http: 0 passed, 1 failed")
        return 1

    loader = unittest.TestLoader()
    if names:
        suite = loader.loadTestsFromNames(names)
    else:
        suite = loader.discover(HERE, pattern="test_*.py", top_level_dir=HERE)

    answers = os.environ.get("WORKFORCE_HTTP_ANSWERS")
    own_answers = not answers
    if own_answers:
        fd, answers = tempfile.mkstemp(prefix="workforce-answers-", suffix=".jsonl")
        os.close(fd)
        os.environ["WORKFORCE_HTTP_ANSWERS"] = answers
    open(answers, "wb").close()

    runner = unittest.TextTestRunner(stream=sys.stderr, verbosity=verbosity,
                                     resultclass=Result)
    result = runner.run(suite)
    harness.current_test = None
    sys.stderr.flush()
    valid, invalid = validate_answers(answers)
    if own_answers and not invalid and not os.environ.get("WORKFORCE_HTTP_KEEP"):
        os.unlink(answers)
    else:
        print("answers: kept in %s" % answers, file=sys.stderr)

    def test_id(t):
        return getattr(t, "test_case", t).id()  # a failing subTest counts for its test

    bad = result.failures + result.errors + [(t, "") for t in result.unexpectedSuccesses]
    # Errors raised in setUpClass/tearDownClass are not tests and not counted in testsRun.
    class_errors = [t for t, _ in bad if not isinstance(getattr(t, "test_case", t),
                                                        unittest.TestCase)]
    failed_tests = {test_id(t) for t, _ in bad
                    if isinstance(getattr(t, "test_case", t), unittest.TestCase)}
    skipped_tests = {test_id(t) for t, _ in result.skipped} - failed_tests
    failed = len(failed_tests) + len(class_errors) + invalid
    skipped = len(skipped_tests)
    passed = result.testsRun - len(failed_tests) - skipped + valid
    line = "http: %d passed, %d failed" % (max(passed, 0), failed)
    if skipped:
        line += ", %d skipped" % skipped
    sys.stderr.flush()
    print(line)
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
