"""Checks of deploy/kubernetes's rendered objects against what Attache expects (Tests/cli/kubernetes.sh).

kubernetes.py settings RENDERED HELP   every ATTACHE_* key of the ConfigMap is named in attache's --help
kubernetes.py service RENDERED         the service's Deployment, Service, HPA and PDB
kubernetes.py worker RENDERED          the worker's Deployment
kubernetes.py batch RENDERED           the Indexed Job
kubernetes.py keda RENDERED WORKERHELP the ScaledObject, as KEDA documents the nats-jetstream trigger
kubernetes.py local RENDERED           what the local overlay adds
kubernetes.py monitors RENDERED        the prometheus-operator overlay's ServiceMonitor and PodMonitor
Exits non-zero with the reason on the first failed expectation.
"""
import re
import sys

import yaml


def objects(path):
    return [d for d in yaml.safe_load_all(open(path)) if d]


def one(docs, kind, name):
    found = [d for d in docs if d["kind"] == kind and d["metadata"]["name"] == name]
    assert len(found) == 1, f"expected one {kind} {name}, found {len(found)}"
    return found[0]


def container(deployment):
    containers = deployment["spec"]["template"]["spec"]["containers"]
    assert len(containers) == 1, "one container per pod"
    return containers[0]


def locked_down(pod, c):
    ps = pod["securityContext"]
    assert ps.get("runAsNonRoot") is True, "runAsNonRoot"
    assert ps.get("seccompProfile", {}).get("type") == "RuntimeDefault", "seccompProfile RuntimeDefault"
    cs = c["securityContext"]
    assert cs.get("allowPrivilegeEscalation") is False, "allowPrivilegeEscalation false"
    assert cs.get("readOnlyRootFilesystem") is True, "readOnlyRootFilesystem"
    assert "ALL" in cs.get("capabilities", {}).get("drop", []), "capabilities dropped"
    mounts = {m["mountPath"]: m["name"] for m in c.get("volumeMounts", [])}
    volumes = {v["name"]: v for v in pod.get("volumes", [])}
    # A read-only root needs writable scratch where attache writes: the media directory and /tmp.
    media = c["args"][c["args"].index("--media-dir") + 1]
    for path in (media, "/tmp"):
        assert path in mounts, f"{path} is not mounted"
        assert "emptyDir" in volumes[mounts[path]] or "persistentVolumeClaim" in volumes[mounts[path]], f"{path} is not writable"
    r = c["resources"]
    assert r["requests"]["cpu"] and r["requests"]["memory"] and r["limits"]["memory"], "resource requests and limits"


def scraped(dep, port):
    """A Prometheus that discovers pods by annotation scrapes /metrics on the port it is served on."""
    notes = dep["spec"]["template"]["metadata"].get("annotations", {})
    assert notes.get("prometheus.io/scrape") == "true", f"{dep['metadata']['name']} is not marked for scraping"
    assert notes.get("prometheus.io/port") == str(port), f"{dep['metadata']['name']} is scraped on {notes.get('prometheus.io/port')}, not {port}"
    assert notes.get("prometheus.io/path") == "/metrics", "scraped on /metrics"


def settings(rendered, help_path):
    docs = objects(rendered)
    config = one(docs, "ConfigMap", next(d["metadata"]["name"] for d in docs
                                         if d["kind"] == "ConfigMap" and d["metadata"]["name"].startswith("attache-config")))
    helptext = open(help_path).read()
    for key in config["data"]:
        if key.startswith("ATTACHE_"):
            assert key in helptext, f"{key} is set in the ConfigMap but no attache command reads it"
    # Every container takes it.
    for d in docs:
        if d["kind"] in ("Deployment", "Job"):
            refs = [e.get("configMapRef", {}).get("name") for e in container(d).get("envFrom", [])]
            assert config["metadata"]["name"] in refs, f"{d['metadata']['name']} does not read the ConfigMap"


def service(rendered):
    docs = objects(rendered)
    dep = one(docs, "Deployment", "attache")
    pod = dep["spec"]["template"]["spec"]
    c = container(dep)
    assert c["args"][0] == "serve", "the service runs attache serve"
    port = int(c["args"][c["args"].index("--port") + 1])
    assert c["ports"][0]["containerPort"] == port, "the container port is serve's --port"
    scraped(dep, port)
    assert c["readinessProbe"]["httpGet"]["path"] == "/readyz", "readiness on /readyz"
    assert c["livenessProbe"]["httpGet"]["path"] == "/healthz", "liveness on /healthz"
    pre = c["lifecycle"]["preStop"]
    assert pre.get("sleep", {}).get("seconds", 0) > 0 or "exec" in pre, "a preStop pause"
    # Draining answers every payload in flight within its deadline (at most 30 s, the default
    # --max-deadline) after the preStop pause.
    pause = pre.get("sleep", {}).get("seconds", 0)
    assert pod["terminationGracePeriodSeconds"] >= 30 + pause, "the grace period covers preStop and the longest deadline"
    locked_down(pod, c)
    svc = one(docs, "Service", "attache")
    assert svc["spec"]["selector"].items() <= dep["spec"]["template"]["metadata"]["labels"].items(), "the Service selects the service's pods"
    hpa = one(docs, "HorizontalPodAutoscaler", "attache")
    assert hpa["spec"]["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": "attache"}, "the HPA scales the service"
    assert any(m["type"] == "Resource" and m["resource"]["name"] == "cpu" for m in hpa["spec"]["metrics"]), "the HPA scales on CPU"
    pdb = one(docs, "PodDisruptionBudget", "attache")
    assert pdb["spec"]["selector"]["matchLabels"].items() <= dep["spec"]["template"]["metadata"]["labels"].items(), "the PDB covers the service"


def worker(rendered):
    docs = objects(rendered)
    dep = one(docs, "Deployment", "attache-worker")
    c = container(dep)
    assert c["args"][0] == "worker", "the worker runs attache worker"
    mport = int(c["args"][c["args"].index("--metrics-port") + 1])
    scraped(dep, mport)
    assert c["args"][c["args"].index("--host") + 1] == "0.0.0.0", "the metrics port listens beyond loopback (probes)"
    for probe in ("readinessProbe", "livenessProbe"):
        get = c[probe]["httpGet"]
        assert get["path"] == "/healthz", f"{probe} on /healthz"
        named = {p["name"]: p["containerPort"] for p in c["ports"]}
        assert named.get(get["port"], get["port"]) == mport, f"{probe} on the metrics port"
    locked_down(dep["spec"]["template"]["spec"], c)


def batch(rendered):
    docs = objects(rendered)
    job = one(docs, "Job", "attache-batch")
    spec = job["spec"]
    assert spec["completionMode"] == "Indexed", "an Indexed Job"
    c = container(job)
    assert c["args"][0] == "batch", "its pods run attache batch"
    shard = c["args"][c["args"].index("--shard") + 1]
    m = re.fullmatch(r"\$\(JOB_COMPLETION_INDEX\)/(\d+)", shard)
    assert m, f"--shard is $(JOB_COMPLETION_INDEX)/N, not {shard}"
    assert int(m.group(1)) == spec["completions"], "N is the Job's completions"
    output = c["args"][c["args"].index("--output") + 1]
    assert "$(JOB_COMPLETION_INDEX)" in output, "each shard writes its own output"
    assert "--resume" in c["args"], "a retried index resumes from its report"
    env = {e["name"]: e for e in c.get("env", [])}
    assert "JOB_COMPLETION_INDEX" in env, "JOB_COMPLETION_INDEX is declared (so $(…) expands in args)"
    locked_down(job["spec"]["template"]["spec"], c)


def keda(rendered, worker_help):
    docs = objects(rendered)
    scaled = [d for d in docs if d["kind"] == "ScaledObject"]
    assert len(scaled) == 1, "one ScaledObject"
    so = scaled[0]
    assert so["apiVersion"] == "keda.sh/v1alpha1", "apiVersion keda.sh/v1alpha1"
    target = so["spec"]["scaleTargetRef"]
    assert target.get("kind", "Deployment") == "Deployment" and target.get("apiVersion", "apps/v1") == "apps/v1", "targets a Deployment"
    one(docs, "Deployment", target["name"])
    assert container(one(docs, "Deployment", target["name"]))["args"][0] == "worker", "scaleTargetRef names the worker's Deployment"
    triggers = so["spec"]["triggers"]
    assert [t["type"] for t in triggers] == ["nats-jetstream"], "one nats-jetstream trigger"
    md = triggers[0]["metadata"]
    for key in ("natsServerMonitoringEndpoint", "account", "stream", "consumer", "lagThreshold"):
        assert key in md, f"metadata.{key}"
    for key, value in md.items():
        assert isinstance(value, str), f"metadata.{key} is a string (KEDA reads every value as one), not {value!r}"
    assert int(md["lagThreshold"]) > 0, "lagThreshold is a positive number"
    if "activationLagThreshold" in md:
        int(md["activationLagThreshold"])
    assert md.get("useHttps", "false") in ("true", "false"), "useHttps is true or false"
    # The stream and consumer the worker reads (its defaults, as --help states them).
    text = " ".join(open(worker_help).read().split())  # --help wraps its lines
    stream = re.search(r"ATTACHE_INPUT_STREAM, default (\w+)", text).group(1)
    consumer = re.search(r"ATTACHE_CONSUMER, default (\w+)", text).group(1)
    assert md["stream"] == stream, f"stream {md['stream']} is the worker's {stream}"
    assert md["consumer"] == consumer, f"consumer {md['consumer']} is the worker's {consumer}"
    # The monitoring endpoint is a Service of the rendering with that port (the local overlay's NATS).
    host, port = md["natsServerMonitoringEndpoint"].rsplit(":", 1)
    svc = one(docs, "Service", host.split(".")[0])
    assert int(port) in [p["port"] for p in svc["spec"]["ports"]], f"the NATS Service has port {port}"


def local(rendered):
    docs = objects(rendered)
    assert all(d["metadata"].get("namespace") == "attache" for d in docs if d["kind"] != "Namespace"), "everything in the namespace attache"
    tenants = one(docs, "Secret", "attache-tenants")
    assert "tenants.yaml" in tenants.get("data", {}), "the tenants Secret has tenants.yaml"
    for name in ("attache-store", "attache-nats"):
        one(docs, "Secret", name)
    for name in ("seaweedfs", "nats"):
        one(docs, "Deployment", name)
        one(docs, "Service", name)
    one(docs, "PersistentVolumeClaim", "attache-campaigns")
    nats = container(one(docs, "Deployment", "nats"))
    assert "-js" in nats["args"] and "-m" in nats["args"], "NATS with JetStream and its monitoring port"


# The fields of the Prometheus Operator's monitoring.coreos.com/v1 API the monitors may use (no
# schema of those kinds is at hand offline: a misspelt field would be silently dropped by the
# operator, so it is refused here).
MONITOR_SPEC = {"selector", "namespaceSelector", "jobLabel", "podTargetLabels", "targetLabels", "sampleLimit"}
ENDPOINT = {"port", "path", "interval", "scrapeTimeout", "scheme", "authorization", "tlsConfig", "relabelings",
            "metricRelabelings", "honorLabels"}


def monitors(rendered):
    docs = objects(rendered)
    sm = one(docs, "ServiceMonitor", "attache")
    pm = one(docs, "PodMonitor", "attache-worker")
    for m, endpoints in ((sm, "endpoints"), (pm, "podMetricsEndpoints")):
        assert m["apiVersion"] == "monitoring.coreos.com/v1", f"{m['kind']} is monitoring.coreos.com/v1"
        unknown = set(m["spec"]) - MONITOR_SPEC - {endpoints}
        assert not unknown, f"{m['kind']} spec has fields the operator does not know: {unknown}"
        for e in m["spec"][endpoints]:
            assert not set(e) - ENDPOINT, f"{m['kind']} endpoint has fields the operator does not know: {set(e) - ENDPOINT}"
            assert e["path"] == "/metrics", f"{m['kind']} scrapes /metrics"
    # The ServiceMonitor selects the service's Service by its labels, on the port that reaches serve's --port.
    svc = one(docs, "Service", "attache")
    assert sm["spec"]["selector"]["matchLabels"].items() <= svc["metadata"]["labels"].items(), "the ServiceMonitor selects the Service"
    port = next((p for p in svc["spec"]["ports"] if p["name"] == sm["spec"]["endpoints"][0]["port"]), None)
    assert port, "the ServiceMonitor's port is one the Service names"
    dep = one(docs, "Deployment", "attache")
    c = container(dep)
    named = {p["name"]: p["containerPort"] for p in c["ports"]}
    assert named.get(port["targetPort"], port["targetPort"]) == int(c["args"][c["args"].index("--port") + 1]), "… and reaches serve's --port"
    # The PodMonitor selects the worker's pods, on the container port that is its --metrics-port.
    wdep = one(docs, "Deployment", "attache-worker")
    labels = wdep["spec"]["template"]["metadata"]["labels"]
    assert pm["spec"]["selector"]["matchLabels"].items() <= labels.items(), "the PodMonitor selects the worker's pods"
    assert not pm["spec"]["selector"]["matchLabels"].items() <= dep["spec"]["template"]["metadata"]["labels"].items(), "… and not the service's"
    wc = container(wdep)
    wnamed = {p["name"]: p["containerPort"] for p in wc["ports"]}
    mport = int(wc["args"][wc["args"].index("--metrics-port") + 1])
    assert wnamed.get(pm["spec"]["podMetricsEndpoints"][0]["port"]) == mport, "the PodMonitor scrapes the worker's --metrics-port"


if __name__ == "__main__":
    command, *args = sys.argv[1:]
    try:
        globals()[command](*args)
    except AssertionError as e:
        sys.exit(f"{command}: {e}")
