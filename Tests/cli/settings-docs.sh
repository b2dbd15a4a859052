#!/usr/bin/env bash
# docs/operations.md's default for every setting is what the code uses: `attache config COMMAND`,
# run with no setting given, prints each setting the long-running commands read with the value
# it resolves to, and this compares it with the table's default column (its per-command variants,
# "3 s for `serve`", included). A default changed in the code and not in the page fails here.
#   usage: Tests/cli/settings-docs.sh BIN
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=$(realpath "${1:?usage: settings-docs.sh BIN}")
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
for command in serve worker relay lab; do
  # An empty environment but for what a process needs: no ATTACHE_* or AWS_* setting leaks in.
  (cd "$scratch" && env -i PATH="$PATH" HOME="$scratch" "$bin" config "$command") > "$scratch/$command.txt"
done
python3 - "$scratch" docs/operations.md <<'PY'
import re, sys
scratch, page = sys.argv[1], sys.argv[2]
docs = {}
for line in open(page):
    cells = [c.strip() for c in line.split("|")]
    if len(cells) > 4 and re.fullmatch(r"`ATTACHE_[A-Z0-9_]+`", cells[2] or ""):
        docs[cells[2].strip("`")] = cells[3]

def seconds(text):
    m = re.fullmatch(r"([0-9.]+)\s*(ms|s|min|h)", text)
    if not m: return None
    return float(m.group(1)) * {"ms": 0.001, "s": 1, "min": 60, "h": 3600}[m.group(2)]

def normal(text):
    """A comparable form of a value, or None when the text is a description, not a value."""
    text = text.strip()
    if text != "(none)": text = re.sub(r"\s*\(.*\)$", "", text).strip("`").strip()
    if text in ("none", "(none)", "off", "false"): return "off"
    if text == "true": return "on"
    d = seconds(text)
    if d is not None: return "%gs" % d
    if re.fullmatch(r"[0-9][0-9,]*", text): return text.replace(",", "")
    if re.fullmatch(r"[A-Za-z0-9_./:-]+", text) and " " not in text: return text
    return None

def documented(cell, command):
    """The page's default for one command: the variant that names it, else the general one."""
    general, named = None, {}
    for part in [p.strip() for p in cell.split(";")]:
        m = re.fullmatch(r"(.+?) for (`[a-z-]+`(?:(?:, | and |, and )`[a-z-]+`)*)(?:,.*)?", part)
        if m:
            for c in re.findall(r"`([a-z-]+)`", m.group(2)): named[c] = m.group(1)
        elif general is None:
            general = part
    return named.get(command, general)

bad, compared = [], 0
for command in ("serve", "worker", "relay", "lab"):
    for line in open("%s/%s.txt" % (scratch, command)).read().splitlines()[1:]:
        variable, value, source = line.split()[0], " ".join(line.split()[1:-1]), line.split()[-1]
        if source != "default": bad.append("%s %s: not read as a default (%s)" % (command, variable, source)); continue
        if variable not in docs: bad.append("%s: %s is not in the table" % (command, variable)); continue
        want = documented(docs[variable], command)
        if want is None or normal(want) is None: continue  # described, not a value ("one per core")
        compared += 1
        if normal(want) != normal(value):
            bad.append("%s: %s defaults to %s, the page says %s" % (command, variable, value, docs[variable]))
for b in bad:
    print("settings-docs:", b, file=sys.stderr)
if bad: sys.exit(1)
print("settings-docs: %d defaults of serve, worker, relay and lab are what docs/operations.md says" % compared)
PY
