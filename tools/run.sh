#!/bin/sh
# SPDX-License-Identifier: MIT
# `make run`: start the server on the embedded defaults (SQLite in ./data, the built-in engine),
# after creating a test-mode key for the organization "demo" and printing it with a curl line.
set -eu
cd "$(dirname "$0")/.."
listen="${WORKFORCE_LISTEN:-127.0.0.1:8080}"
key=$(build/workforce keys create --org demo --mode test 2>/dev/null)
cat <<MSG

  Workforce is starting on http://$listen (database ${WORKFORCE_DATABASE:-./data/workforce.db})
  A test-mode key for the organization "demo":

    $key

  Open the console and sign in with that key:

    http://$listen/console/

  Or try the API (its reference: http://$listen/docs):

    curl -H "Authorization: Bearer $key" http://$listen/v1/employees

  To sign in as a person instead, make yourself the owner (in another terminal; it prints a
  link to set your password):

    build/workforce users create --org demo --email you@example.com --role owner

  Stop with Ctrl-C. More keys: build/workforce keys create --org demo [--mode live]

MSG
exec build/workforce serve
