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
# Every executable the Makefile builds is installed side by side (attache runs attache-serve from
# its own directory, and the service its sandboxed decoders, attache-decode).
for product in $(sed -n 's/^PRODUCTS := //p' Makefile); do
  check "the image has $product beside attache" "grep -q '^COPY .*release/$product[ /].*/usr/local/bin/' Dockerfile"
done
# Every Debian library the built executables link directly (their NEEDED entries, resolved by ldd to a
# package with dpkg -S) is installed in the runtime image, but for what bookworm-slim has already
# and what libcurl4 brings; the Swift runtime, linked in statically by release builds, belongs to
# no package. (Libraries loaded with dlopen, curl and FFmpeg's, are checked by name above.)
base="libc6 libgcc-s1 libstdc++6 zlib1g libssl3"
bin_dir=${DEPLOY_BIN_DIR:-.build/debug}
for product in $(sed -n 's/^PRODUCTS := //p' Makefile); do
  [ -x "$bin_dir/$product" ] || continue
  needed=$(readelf -d "$bin_dir/$product" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
  resolved=$(ldd "$bin_dir/$product")
  for lib in $(for name in $needed; do awk -v n="$name" '$1 == n && $3 ~ /^\// { print $3 }' <<< "$resolved"; done); do
    package=$(dpkg -S "$(readlink -f "$lib")" 2>/dev/null | head -1 | cut -d: -f1)
    [ -z "$package" ] && package=$(dpkg -S "$lib" 2>/dev/null | head -1 | cut -d: -f1)
    [ -z "$package" ] && continue
    case " $base " in *" $package "*) continue ;; esac
    echo "$package"
  done
done | sort -u > "$tmp/runtime-packages"
for package in $(cat "$tmp/runtime-packages"); do
  check "the runtime image installs $package (linked by the executables)" "grep -qw '$package' Dockerfile"
done
check "the runtime image has libseccomp (the decoders' sandbox)" "grep -q 'libseccomp2' Dockerfile"
check "the runtime image has libcrypto (loaded for SHA-256; libcurl4 brings libssl3)" "grep -q 'libcurl4' Dockerfile && dpkg -s libcurl4 | grep -q '^Depends:.*libssl3'"
# Two replicas behind nginx, sharing SeaweedFS as their store: the pieces, and that the config
# files they mount are in the repository.
compose='import sys, yaml
c = yaml.safe_load(open("docker-compose.yml"))["services"]
replicas = [n for n, s in c.items() if s.get("environment", {}).get("ATTACHE_STORE", "").startswith("s3://")]
assert len(replicas) >= 2, "fewer than two replicas on an s3:// store"
assert any(s.get("image", "").startswith("nginx:") for s in c.values()), "no nginx balancer"
assert any(s.get("image", "").startswith("chrislusf/seaweedfs:") for s in c.values()), "no SeaweedFS"
for s in c.values():
    for v in s.get("volumes", []):
        src = v.split(":")[0]
        assert not src.startswith("./") or __import__("os").path.exists(src), src + " is missing"'
check "docker-compose.yml: two replicas on SeaweedFS behind nginx, mounts present" "python3 -c '$compose'"
# Two workers on NATS (the official image, with JetStream), sharing the same store; their
# command is the one the Makefile's checks run (`attache worker`).
queue='import yaml
c = yaml.safe_load(open("docker-compose.yml"))["services"]
workers = [s for s in c.values() if s.get("command", [None])[0] == "worker"]
assert len(workers) >= 2, "fewer than two workers"
assert all(s["environment"]["ATTACHE_NATS_URL"].startswith("nats://") for s in workers), "a worker without ATTACHE_NATS_URL"
assert all(s["environment"]["ATTACHE_STORE"].startswith("s3://") for s in workers), "a worker off the shared store"
nats = [s for s in c.values() if s.get("image", "").startswith("nats:")]
assert nats and "-js" in nats[0]["command"], "no NATS with JetStream"'
check "docker-compose.yml: two workers on NATS JetStream, on the shared store" "python3 -c '$queue'"
check "the worker's command is the one the checks run" "grep -q 'worker --nats' Tests/cli/worker.sh"
check "the runtime image has nats.c's library" "grep -q 'libnats3.4' Dockerfile"
# The relay in front of the APNs double the relay's check uses, with the command that check runs.
relay='import os, yaml
c = yaml.safe_load(open("docker-compose.yml"))["services"]
relays = [s for s in c.values() if s.get("command", [None])[0] == "relay"]
assert relays, "no relay"
upstream = relays[0]["command"][relays[0]["command"].index("--apns-upstream") + 1]
assert upstream.split("//")[1].split(":")[0] in c, "the relay forwards to no service of the file: " + upstream
assert os.path.exists("Tests/cli/providers.py"), "no APNs double"'
check "docker-compose.yml: the relay in front of the APNs double" "python3 -c '$relay'"
check "the relay's command is the one the checks run" "grep -q 'relay --port' Tests/cli/relay.sh"
# Two tenants share the deployment: every Attache container reads the same tenants file, mounted
# from the repository, and attache reads it as valid.
tenants='import os, yaml
c = yaml.safe_load(open("docker-compose.yml"))["services"]
attache = [s for s in c.values() if s.get("build") and s.get("command", ["serve"])[0] in ("serve", "worker", "relay")]
assert len(attache) >= 5, "fewer Attache containers than expected"
for s in attache:
    path = s["environment"]["ATTACHE_TENANTS_FILE"]
    mounts = {v.split(":")[1]: v.split(":")[0] for v in s.get("volumes", [])}
    assert path in mounts and os.path.exists(mounts[path]), "the tenants file is not mounted from the repository"
    assert len(yaml.safe_load(open(mounts[path]))["tenants"]) >= 2, "fewer than two tenants"'
check "docker-compose.yml: every Attache container reads one tenants file with two tenants" "python3 -c '$tenants'"
if [ -x "$bin_dir/attache" ]; then
  check "attache reads the compose file's tenants file as valid" "'$bin_dir/attache' tenants check deploy/tenants.yaml >/dev/null"
fi
finish deploy
