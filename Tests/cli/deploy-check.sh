#!/usr/bin/env bash
# No Docker engine runs on our machines, so the deployment files are checked here: the compose
# file against the Compose Specification's JSON schema (when ../shared/schemas has it), and the
# Dockerfile's build step against the Makefile target it names.
set -uo pipefail
source "$(dirname "$0")/lib.sh"
trap 'rm -rf "$tmp"' EXIT

schema=../shared/schemas/compose-spec.json
if [ -f "$schema" ]; then
  python3 -c "import jsonschema, yaml" 2>/dev/null || pip install --quiet jsonschema pyyaml >/dev/null 2>&1
  validate='import json, sys, yaml, jsonschema
try:
    jsonschema.validate(yaml.safe_load(open("docker-compose.yml")), json.load(open(sys.argv[1])))
except jsonschema.ValidationError as e:
    sys.exit("docker-compose.yml: " + e.message)'
  check "docker-compose.yml is valid against the Compose Specification" "python3 -c '$validate' '$schema'"
else
  echo "note: $schema not present; compose schema check skipped"
fi
for target in $(sed -n 's/^RUN make \([a-z-]*\).*/\1/p' Dockerfile); do
  check "Dockerfile's 'make $target' is a Makefile target" "grep -q '^$target:' Makefile"
done
check "Dockerfile runs a make target" "grep -q '^RUN make ' Dockerfile"
check "the image runs the serve command" "grep -q '\"serve\"' Dockerfile"
check "the image has attache-serve beside attache" "grep -q '^COPY .*release/attache-serve /usr/local/bin/' Dockerfile"
finish deploy
