#!/usr/bin/env python3
"""Every metric and label that a rules file (or a Grafana dashboard's queries) names is one the
processes export (`job` and `instance` are the scrape's own).

Usage: prometheus-names.py EXPOSITION... -- FILE...
       prometheus-names.py --accepted-by PROMETHEUS_URL FILE...   (each query parses there)
EXPOSITION: what /metrics answered (text format). FILE: Prometheus rules (YAML: each rule's
`expr`) or a Grafana dashboard (JSON: each target's `expr`). Prints what is missing and exits 1,
or says how many names it checked.
"""
import json, re, sys


args = sys.argv[1:]

def expressions(path):
    if path.endswith(".json"):
        def walk(node):
            if isinstance(node, dict):
                if isinstance(node.get("expr"), str):
                    yield node["expr"]
                for value in node.values():
                    yield from walk(value)
            elif isinstance(node, list):
                for value in node:
                    yield from walk(value)
        yield from walk(json.load(open(path)))
    else:
        import yaml
        for group in yaml.safe_load(open(path))["groups"]:
            for rule in group["rules"]:
                yield rule["expr"]

if args[:1] == ["--accepted-by"]:
    # --accepted-by URL FILE...: each query, its Grafana variables given values, is one the
    # Prometheus server at URL accepts.
    import urllib.parse, urllib.request
    bad = 0
    for path in args[2:]:
        for expr in expressions(path):
            query = expr.replace("$__rate_interval", "1m").replace("$job", ".*")
            try:
                with urllib.request.urlopen(args[1] + "/api/v1/query?" + urllib.parse.urlencode({"query": query})) as r:
                    ok = json.load(r)["status"] == "success"
            except Exception as error:
                ok = False
                print(f"{query}: {error}")
            bad += not ok
    print(f"bad {bad}")
    sys.exit(1 if bad else 0)

split = args.index("--")
expositions, files = args[:split], args[split + 1:]

# metric family -> label names seen on it (histograms: the family, its _bucket/_sum/_count)
families = {}
for path in expositions:
    for line in open(path):
        if line.startswith("#") or not line.strip():
            continue
        m = re.match(r"([a-zA-Z_:][a-zA-Z0-9_:]*)(\{([^}]*)\})?\s", line)
        if not m:
            continue
        name, labels = m.group(1), set(re.findall(r'([a-zA-Z_][a-zA-Z0-9_]*)="', m.group(3) or ""))
        for family in {name, re.sub(r"_(bucket|sum|count)$", "", name)}:
            families.setdefault(family, set()).update(labels)

recorded = set()
for path in files:
    if not path.endswith(".json"):
        import yaml
        recorded |= {r["record"] for g in yaml.safe_load(open(path))["groups"] for r in g["rules"] if "record" in r}

problems, checked = [], 0
for path in files:
    for expr in expressions(path):
        used = set()
        for m in re.finditer(r"\b(attache_[a-z0-9_]+)\s*(\{([^}]*)\})?", expr):
            name = m.group(1)
            family = re.sub(r"_(bucket|sum|count)$", "", name) if name not in families else name
            checked += 1
            if family not in families:
                problems.append(f"{path}: {name} is not exported")
                continue
            used.add(family)
            for label in re.findall(r'([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)', m.group(3) or ""):
                if label not in ("le", "job", "instance") and label not in families[family]:
                    problems.append(f"{path}: {name} has no label {label}")
        for name in re.findall(r"\b(attache:[a-z0-9_:]+)", expr):
            checked += 1
            if name not in recorded:
                problems.append(f"{path}: {name} is no recording rule here")
        # `by (…)` and `ignoring (…)` name labels of the metrics the expression reads.
        for clause in re.findall(r"\b(?:by|ignoring|on|without)\s*\(([^)]*)\)", expr):
            for label in filter(None, (l.strip() for l in clause.split(","))):
                checked += 1
                if label != "le" and used and not any(label in families[f] for f in used):
                    problems.append(f"{path}: no metric of `{expr.split()[0]}…` has the label {label}")

for problem in problems:
    print(problem)
if problems:
    sys.exit(1)
print(f"{checked} metric and label names checked against {len(families)} exported families")
