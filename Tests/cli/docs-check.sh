#!/usr/bin/env bash
# The documents speak of the software and its users, never of how it was developed, and every
# setting is documented once:
# - no file in the project mentions a numbered session (history belongs in git log);
# - every ATTACHE_* variable the code reads appears in docs/operations.md, and the page names
#   none the code does not read.
set -euo pipefail
cd "$(dirname "$0")/../.."
status=0

if git grep -n -i -w -E 'session [0-9]+' -- . ; then
  echo "docs-check: the lines above speak of development sessions; say what the software does" >&2
  status=1
fi

# The variables the code reads are string literals (the C codecs' ATTACHE_OK and the like are not);
# the test harness's own (AttacheTesting) are not settings, nor the worker's stream names.
streams='ATTACHE_IN|ATTACHE_OUT'
code=$(grep -rhoE '"ATTACHE_[A-Z0-9_]+"' Sources --include='*.swift' --exclude-dir=AttacheTesting | tr -d '"' \
  | grep -v -x -E "$streams" | sort -u)
documented=$(grep -hoE 'ATTACHE_[A-Z0-9_]+[A-Z0-9]' docs/operations.md | grep -v -x -E "$streams" | sort -u)
missing=$(comm -23 <(echo "$code") <(echo "$documented"))
stale=$(comm -13 <(echo "$code") <(echo "$documented"))
if [ -n "$missing" ]; then
  echo "docs-check: settings the code reads that docs/operations.md does not document:" $missing >&2
  status=1
fi
if [ -n "$stale" ]; then
  echo "docs-check: docs/operations.md documents settings the code does not read:" $stale >&2
  status=1
fi
[ "$status" = 0 ] && echo "docs-check: no history in documents; $(echo "$code" | wc -l) settings, each documented"
exit "$status"
