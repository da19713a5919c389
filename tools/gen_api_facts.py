#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Keep docs/api-facts.json, the API's facts as the C holds them, in step with the binary.

`build/workforce describe` prints every fact of the API that the C holds (src/api/describe.c):
the route table (method, path, scopes, flags, query parameters with their schemas, the JSON
Schema of each request body), the error table (code, status, the one description), the
vocabularies, the size limits, each workflow action's options and the shapes of the nested
request objects. This script keeps a copy of it in docs/api-facts.json, which
tools/gen_openapi.py reads, so that the OpenAPI document is generated without a build and stays
deterministic; tests/openapi/run.sh fails when the copy differs from the binary.

Usage (from anywhere; paths are relative to the repository root):
    python3 tools/gen_api_facts.py            write docs/api-facts.json
    python3 tools/gen_api_facts.py --check    exit 1 if it differs from the binary's facts
Options: --bin PATH (default $WORKFORCE_BIN or build/workforce).
Standard library only.
"""

import argparse
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
JSON_PATH = os.path.join(ROOT, "docs", "api-facts.json")


def dump(facts):
    return json.dumps(facts, indent=1, sort_keys=True, ensure_ascii=True) + "\n"


def from_binary(binary):
    """The facts as the binary prints them (no WORKFORCE_* variable matters to them)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("WORKFORCE_")}
    out = subprocess.run([binary, "describe"], env=env, check=True, capture_output=True,
                         text=True, stdin=subprocess.DEVNULL, timeout=60).stdout
    return json.loads(out)


def load(path=JSON_PATH):
    """The checked-in facts (docs/api-facts.json)."""
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--bin", default=os.environ.get("WORKFORCE_BIN",
                                                    os.path.join(ROOT, "build", "workforce")))
    args = ap.parse_args(argv)
    text = dump(from_binary(args.bin))
    if args.check:
        try:
            with open(JSON_PATH, encoding="utf-8") as f:
                current = f.read()
        except OSError:
            current = ""
        if current != text:
            print("docs/api-facts.json differs from `%s describe`; run python3 "
                  "tools/gen_api_facts.py, then python3 tools/gen_openapi.py" % args.bin)
            return 1
        return 0
    with open(JSON_PATH, "w", encoding="utf-8") as f:
        f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
