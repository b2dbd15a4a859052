#!/usr/bin/env bash
# The documents speak of the software and its users, never of how it was developed, and every
# setting is documented once:
# - no file in the project mentions a numbered session (history belongs in git log);
# - every ATTACHE_* variable the code reads appears in docs/operations.md, and the page names
#   none the code does not read;
# - every relative link in the README and docs/ resolves.
set -euo pipefail
cd "$(dirname "$0")/../.."
status=0

if git grep -n -i -w -E 'session [0-9]+' -- . ; then
  echo "docs-check: the lines above speak of development sessions; say what the software does" >&2
  status=1
fi

# The variables the code reads are the setting keys (SettingKeys.swift: `cache-ttl` is
# ATTACHE_CACHE_TTL) and any variable still named as a string literal (the C codecs' ATTACHE_OK and
# the like are not); the test harness's own (AttacheTesting) are not settings, nor the worker's
# stream names.
streams='ATTACHE_IN|ATTACHE_OUT'
code=$( (grep -hoE 'SettingKey = "[a-z0-9-]+"' Sources/AttacheCommandLine/SettingKeys.swift | sed -E 's/.*"(.*)"/\1/' \
    | tr 'a-z-' 'A-Z_' | sed 's/^/ATTACHE_/'
  grep -rhoE '"ATTACHE_[A-Z0-9_]+"' Sources --include='*.swift' --exclude-dir=AttacheTesting | tr -d '"') \
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
# Every relative link in the README and docs/ names a file that exists, and a heading in it when it
# has an anchor (GitHub's slugs: lower case, punctuation dropped, spaces as hyphens).
if ! python3 - README.md docs/*.md <<'PY'
import os, re, sys
def slugs(path):
    out = set()
    for line in open(path, encoding="utf-8"):
        m = re.match(r"#+ (.*)", line)
        if m:
            text = re.sub(r"[^\w\- ]", "", m.group(1).strip().lower())
            out.add(text.replace(" ", "-"))
    return out
bad = []
for doc in sys.argv[1:]:
    text = open(doc, encoding="utf-8").read()
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+://", target):
            continue
        path, _, anchor = target.partition("#")
        full = os.path.normpath(os.path.join(os.path.dirname(doc), path)) if path else doc
        if not os.path.exists(full):
            bad.append(f"{doc}: {target} (no {full})")
        elif anchor and full.endswith(".md") and anchor not in slugs(full):
            bad.append(f"{doc}: {target} (no heading #{anchor} in {full})")
for b in bad:
    print("docs-check: broken link", b, file=sys.stderr)
sys.exit(1 if bad else 0)
PY
then
  status=1
fi

# A code block preceded by `<!-- from FILE -->` shows FILE's own lines, verbatim: the code the tests
# run is the code the page shows.
if ! python3 - README.md docs/*.md <<'PY'
import re, sys
bad = []
for doc in sys.argv[1:]:
    lines = open(doc, encoding="utf-8").read().split("\n")
    for i, line in enumerate(lines):
        m = re.match(r"<!-- from (\S+) -->$", line)
        if not m:
            continue
        end = lines.index("```", i + 2)
        block = "\n".join(lines[i + 2:end])
        try:
            source = open(m.group(1), encoding="utf-8").read()
        except OSError:
            bad.append(f"{doc}:{i + 1}: no file {m.group(1)}")
            continue
        if block not in source:
            bad.append(f"{doc}:{i + 3}: the block is not {m.group(1)}'s text")
for b in bad:
    print("docs-check:", b, file=sys.stderr)
sys.exit(1 if bad else 0)
PY
then
  status=1
fi

[ "$status" = 0 ] && echo "docs-check: no history in documents; $(echo "$code" | wc -l) settings, each documented; links resolve"
exit "$status"
