#!/usr/bin/env bash
# Runs `swift test` with the arguments given and, when it fails, repeats what failed at the very end.
#
# Why: swift-testing reports a failure where it happens, among the parallel tests' hundreds of lines,
# and ends with only "N tests … failed with 1 issue". A CI log is often read from its tail alone;
# this puts the failing tests, their places and their messages there.
set -uo pipefail

log=$(mktemp "${TMPDIR:-/tmp}/attache-swift-test.XXXXXX")
trap 'rm -f "$log"' EXIT

"${SWIFT:-swift}" test "$@" 2>&1 | tee "$log"
code=${PIPESTATUS[0]}
if [ "$code" -ne 0 ]; then
    echo
    echo "── what failed (swift test $*, exit $code) ──"
    # "✘ Test x() recorded an issue at File.swift:12:5: Expectation failed: …" with the lines of a
    # multi-line message after it; a crash shows as a fatal error or a signal instead.
    grep -E -A4 '✘ Test .*recorded an issue|Fatal error|^error: ' "$log" \
        | grep -v -E '^(◇|✔)' | head -60
fi
exit "$code"
