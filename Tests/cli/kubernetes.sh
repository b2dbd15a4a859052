#!/usr/bin/env bash
# deploy/kubernetes, checked offline (no cluster runs here): the base and the local overlay render
# with kubectl's kustomize, every object validates against the Kubernetes schemas of the version
# below (kubernetes-validate --strict: an unknown field is an error), and the objects are checked
# against what Attache itself expects — the commands and probes it answers, the settings it reads,
# the stream and consumer the worker uses, what KEDA documents for its nats-jetstream trigger.
set -uo pipefail
source "$(dirname "$0")/lib.sh"
trap 'rm -rf "$tmp"' EXIT
KUBERNETES_VERSION=1.32.0
validate=.build/tools/bin/kubernetes-validate
python=.build/tools/bin/python3

for dir in base overlays/local overlays/prometheus-operator; do
  name=${dir//\//-}
  check "kubectl kustomize deploy/kubernetes/$dir renders" \
    "kubectl kustomize deploy/kubernetes/$dir > '$tmp/$name.yaml' 2> '$tmp/$name.err' || { cat '$tmp/$name.err'; false; }"
  # KEDA's and the Prometheus Operator's kinds have no schema in kubernetes-validate: they are
  # checked on their own below.
  "$python" -c 'import sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d and d["kind"] not in ("ScaledObject", "ServiceMonitor", "PodMonitor")]
yaml.safe_dump_all(docs, open(sys.argv[2], "w"))' "$tmp/$name.yaml" "$tmp/$name.core.yaml"
  check "$dir: every object valid for Kubernetes $KUBERNETES_VERSION (strict)" \
    "'$validate' --strict --quiet -k $KUBERNETES_VERSION '$tmp/$name.core.yaml' || false"
done
# The validator does refuse: a field Kubernetes does not have fails it.
sed 's/readinessProbe:/readinessProbes:/' "$tmp/base.core.yaml" > "$tmp/typo.yaml"
check "a misspelt field fails the strict validation" "! '$validate' --strict --quiet -k $KUBERNETES_VERSION '$tmp/typo.yaml' >/dev/null 2>&1"

# What Attache expects of its objects.
"$bin" worker --help > "$tmp/worker-help" 2>&1
"$bin" serve --help > "$tmp/serve-help" 2>&1
"$bin" batch --help > "$tmp/batch-help" 2>&1
cat "$tmp"/*-help > "$tmp/all-help"
check "the settings the ConfigMap sets are ones attache reads" "$python Tests/cli/kubernetes.py settings '$tmp/base.yaml' '$tmp/all-help'"
check "the service: serve, /readyz and /healthz probes, drain-aware grace and preStop, locked down" "$python Tests/cli/kubernetes.py service '$tmp/base.yaml'"
check "the worker: the worker command, locked down, its health on the metrics port" "$python Tests/cli/kubernetes.py worker '$tmp/base.yaml'"
check "batch: an Indexed Job whose pods run --shard \$(JOB_COMPLETION_INDEX)/N for its N" "$python Tests/cli/kubernetes.py batch '$tmp/base.yaml'"
check "KEDA: a ScaledObject as KEDA documents the nats-jetstream trigger, on the worker's stream and consumer" \
  "$python Tests/cli/kubernetes.py keda '$tmp/overlays-local.yaml' '$tmp/worker-help'"
check "the local overlay: the tenants file, SeaweedFS and NATS the base expects" "$python Tests/cli/kubernetes.py local '$tmp/overlays-local.yaml'"
check "the local overlay's tenants file is one attache accepts" "'$bin' tenants check deploy/kubernetes/overlays/local/tenants.yaml > '$tmp/tenants.out' 2>&1 || { cat '$tmp/tenants.out'; false; }"
check "the prometheus-operator overlay: a ServiceMonitor on the service's port, a PodMonitor on the workers' metrics port" \
  "$python Tests/cli/kubernetes.py monitors '$tmp/overlays-prometheus-operator.yaml'"
finish kubernetes
