#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Run the black-box HTTP tests: tests/http/test_*.py against build/workforce.

Usage: python3 tests/http/run.py [-q] [TEST_NAME ...]
  TEST_NAME as unittest understands it, e.g. test_auth or test_auth.KeysTest.test_revoked.
Env: WORKFORCE_BIN (default build/workforce in the repository), WORKFORCE_HTTP_KEEP=1 keeps
the temp dirs (database and server.log) for debugging.
The last line is always `http: N passed, N failed[, N skipped]`; exit 0 iff nothing failed.
"""

import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import harness  # noqa: E402


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

    runner = unittest.TextTestRunner(stream=sys.stderr, verbosity=verbosity)
    result = runner.run(suite)

    def test_id(t):
        return getattr(t, "test_case", t).id()  # a failing subTest counts for its test

    bad = result.failures + result.errors + [(t, "") for t in result.unexpectedSuccesses]
    # Errors raised in setUpClass/tearDownClass are not tests and not counted in testsRun.
    class_errors = [t for t, _ in bad if not isinstance(getattr(t, "test_case", t),
                                                        unittest.TestCase)]
    failed_tests = {test_id(t) for t, _ in bad
                    if isinstance(getattr(t, "test_case", t), unittest.TestCase)}
    skipped_tests = {test_id(t) for t, _ in result.skipped} - failed_tests
    failed = len(failed_tests) + len(class_errors)
    skipped = len(skipped_tests)
    passed = result.testsRun - len(failed_tests) - skipped
    line = "http: %d passed, %d failed" % (max(passed, 0), failed)
    if skipped:
        line += ", %d skipped" % skipped
    sys.stderr.flush()
    print(line)
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
