#!/usr/bin/env bash
# The layers of docs/architecture.md, read from the package as SwiftPM sees it (`swift package
# describe`) and from the kernel's own imports:
# - `Attache`, what an extension author imports, depends on the payload model and logging alone;
# - `AttachePayload` depends on nothing;
# - a front door never depends on another front door, nor on an executable, and what the HTTP doors
#   share (AttacheHTTPKit) on neither;
# - nothing but the executables and the tests depends on `AttacheCommandLine` (the settings' reader).
set -euo pipefail
cd "$(dirname "$0")/../.."
swift package describe --type json > "${TMPDIR:-/tmp}/attache-describe.$$.json"
trap 'rm -f "${TMPDIR:-/tmp}/attache-describe.$$.json"' EXIT
python3 - "${TMPDIR:-/tmp}/attache-describe.$$.json" <<'PY'
import glob, json, re, sys
targets = {t["name"]: t for t in json.load(open(sys.argv[1]))["targets"]}
deps = {n: set(t.get("target_dependencies") or []) for n, t in targets.items()}
products = {n: set(t.get("product_dependencies") or []) for n, t in targets.items()}
bad = []
if deps["Attache"] != {"AttachePayload"} or products["Attache"] != {"Logging"}:
    bad.append("Attache depends on %s and %s: the kernel takes AttachePayload and Logging alone"
               % (sorted(deps["Attache"]), sorted(products["Attache"])))
imports = set()
for path in glob.glob("Sources/Attache/*.swift"):
    imports |= set(re.findall(r"^(?:@testable |internal |package )?import (\w+)", open(path).read(), re.M))
if imports - {"AttachePayload", "Logging", "Synchronization"}:
    bad.append("Sources/Attache imports %s" % sorted(imports - {"AttachePayload", "Logging", "Synchronization"}))
if deps["AttachePayload"] or products["AttachePayload"]:
    bad.append("AttachePayload depends on %s" % sorted(deps["AttachePayload"] | products["AttachePayload"]))
# (`attache timeline` is AttacheMain's; AttacheTimeline is the timing library the lab draws with.)
front_doors = {"AttacheHTTPService", "AttacheRelay", "AttacheQueueWorker", "AttacheBatch", "AttacheLab"}
executables = {n for n, t in targets.items() if t["type"] == "executable"}
for door in sorted(front_doors | {"AttacheHTTPKit"}):
    for other in sorted(deps[door] & (front_doors | executables)):
        bad.append("%s depends on %s, a front door or an executable" % (door, other))
for name, d in sorted(deps.items()):
    if "AttacheCommandLine" in d and name not in executables and targets[name]["type"] != "test":
        bad.append("%s depends on AttacheCommandLine, which only executables and tests may" % name)
for b in bad:
    print("layers:", b, file=sys.stderr)
print("layers: %d targets; the kernel, the payload model and the front doors keep to their layers" % len(targets) if not bad else "")
sys.exit(1 if bad else 0)
PY
