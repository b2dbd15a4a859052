#!/usr/bin/env bash
# The C files of each of Attache's C targets call one another as a stack, never in a circle: read
# from the objects of a debug build (`nm`: what each file defines and what it needs), so a call
# counts whichever header declared it. A cycle is printed with its files and fails the check.
#   usage: Tests/cli/c-calls.sh [BUILD_DIR]   (default .build/debug)
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-.build/debug}
python3 - "$build" Sources/C* <<'PY'
import glob, os, subprocess, sys
build, sources = sys.argv[1], sys.argv[2:]
bad, checked = [], 0
for source in sources:
    target = os.path.basename(source)
    objects = sorted(glob.glob(os.path.join(build, target + ".build", "*.c.o")))
    if not glob.glob(os.path.join(source, "*.c")):
        continue  # a system-library map: no C of ours
    if not objects:
        sys.exit("c-calls: no objects for %s under %s: build first" % (target, build))
    defined, needed = {}, {}
    for path in objects:
        name = os.path.basename(path)[:-2]
        out = subprocess.run(["nm", path], check=True, capture_output=True, text=True).stdout
        needed[name] = set()
        for line in out.splitlines():
            parts = line.split()
            if len(parts) == 3 and parts[1] in "TDRB":
                defined[parts[2]] = name
            elif len(parts) == 2 and parts[0] == "U":
                needed[name].add(parts[1])
    calls = {f: sorted({defined[s] for s in syms if s in defined and defined[s] != f}) for f, syms in needed.items()}
    checked += len(calls)
    # Depth-first search; a grey file met again closes a cycle.
    state, path = {}, []
    def visit(f):
        state[f] = "grey"; path.append(f)
        for g in calls[f]:
            if state.get(g) == "grey":
                bad.append("%s: %s" % (target, " -> ".join(path[path.index(g):] + [g])))
            elif g not in state:
                visit(g)
        path.pop(); state[f] = "black"
    for f in sorted(calls):
        if f not in state:
            visit(f)
for b in bad:
    print("c-calls: a cycle of calls:", b, file=sys.stderr)
if bad:
    sys.exit(1)
print("c-calls: %d C files, no cycle of calls between them" % checked)
PY
