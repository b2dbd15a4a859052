"""A small OTLP/HTTP receiver for the traces tests (Tests/cli/traces.sh), and the checks they make.

otlp.py serve PORT SPANS.jsonl [CERT KEY]
    Answers POST /v1/traces as an OpenTelemetry collector does (protobuf in, an empty
    ExportTraceServiceResponse out), decoding each request with the opentelemetry-proto package and
    appending one JSON line per span: ids in hex, name, kind, parent, start and end in ns, status,
    attributes, and the resource's service.name. Prints "listening" once bound. With CERT and
    KEY (PEM files), over TLS, as a collector's https endpoint.
otlp.py tree SPANS.jsonl TRACE_ID PARENT_SPAN_ID DOOR
    Checks the span tree of one payload enriched through DOOR (service, relay or worker) under the
    caller's trace: an attache.enrich span in TRACE_ID whose parent is PARENT_SPAN_ID (the caller's,
    or, through the service, the request's server span, itself the caller's child), with its
    outcome; under it an attache.attachment span with the URL's server and no query, and under
    that the stages, each inside its attachment. Prints what it found; exits non-zero with why not.
    TRACE_ID and PARENT_SPAN_ID `-`: a caller that sent no context (a client library as written
    for Apple); the door's one attache.enrich span without a parent starts its own trace.
"""
import gzip
import json
import signal
import ssl
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def value(v):
    kind = v.WhichOneof("value")
    return getattr(v, kind) if kind else None


def serve(port, path, cert=None, key=None):
    from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            if self.headers.get("Content-Encoding") == "gzip":
                body = gzip.decompress(body)
            if self.path != "/v1/traces" or "protobuf" not in self.headers.get("Content-Type", ""):
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            request = trace_service_pb2.ExportTraceServiceRequest()
            request.ParseFromString(body)
            with open(path, "a") as out:
                for rs in request.resource_spans:
                    resource = {a.key: value(a.value) for a in rs.resource.attributes}
                    for ss in rs.scope_spans:
                        for s in ss.spans:
                            out.write(json.dumps({
                                "trace": s.trace_id.hex(), "span": s.span_id.hex(), "parent": s.parent_span_id.hex(),
                                "name": s.name, "kind": s.kind, "start": s.start_time_unix_nano, "end": s.end_time_unix_nano,
                                "status": s.status.code, "message": s.status.message,
                                "attributes": {a.key: value(a.value) for a in s.attributes},
                                "service": resource.get("service.name"),
                            }) + "\n")
            answer = trace_service_pb2.ExportTraceServiceResponse().SerializeToString()
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", int(port)), Handler)
    if cert:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        server.socket = context.wrap_socket(server.socket, server_side=True)
    print("listening", flush=True)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    server.serve_forever()


STAGES = {"dns", "connect", "tls", "first_byte", "download", "inspect", "render", "transcode", "store"}


def tree(path, trace, parent, door):
    spans = [json.loads(line) for line in open(path)]
    if trace == "-":
        roots = [s for s in spans if s["name"] == "attache.enrich" and s["attributes"].get("attache.door") == door and not s["parent"]]
        assert len(roots) == 1, f"expected one attache.enrich span of the {door} starting a trace, found {len(roots)}"
        trace, parent = roots[0]["trace"], ""
    mine = [s for s in spans if s["trace"] == trace]
    assert mine, f"no span in trace {trace} ({len(spans)} spans in all)"
    by_id = {s["span"]: s for s in mine}
    enrich = [s for s in mine if s["name"] == "attache.enrich" and s["attributes"].get("attache.door") == door]
    assert len(enrich) == 1, f"expected one attache.enrich span of the {door}, found {len(enrich)}: {[s['name'] for s in mine]}"
    e = enrich[0]
    assert e["service"] == "attache", f"service.name is {e['service']}"
    # Its parent is the caller's span, or (the service) the request's server span under it.
    up = by_id.get(e["parent"])
    if door == "service":
        assert up and up["kind"] == 2 and up["parent"] == parent, f"the enrich span's parent is not a server span under {parent}: {up}"
        attributes = up["attributes"]
        assert up["name"] == "POST /v1/enrich" and attributes.get("http.request.method") == "POST" \
            and attributes.get("http.route") == "/v1/enrich" and attributes.get("url.path") == "/v1/enrich" \
            and attributes.get("url.scheme") == "http" and "http.request.body.size" not in attributes \
            and attributes.get("http.response.status_code") == 200, f"the server span: {up['name']} {attributes}"
        assert up["start"] <= e["start"] and e["end"] <= up["end"], f"the enrich span is not inside the server span: {up} {e}"
    else:
        assert e["parent"] == parent, f"the enrich span's parent is {e['parent']}, not the caller's {parent}"
    assert e["attributes"].get("attache.outcome") == "enriched", f"outcome {e['attributes']}"
    if door == "worker":
        assert e["attributes"].get("messaging.system") == "nats" and e["attributes"].get("messaging.destination.name") == "attache.in", \
            f"the worker's span has no messaging attributes: {e['attributes']}"
    attachments = [s for s in mine if s["parent"] == e["span"] and s["name"] == "attache.attachment"]
    assert len(attachments) == 1, f"expected one attachment span, found {len(attachments)}"
    a = attachments[0]
    assert a["kind"] == 3, "the attachment span is a client span"
    url = a["attributes"].get("url.full", "")
    assert url.startswith("http://127.0.0.1:") and "?" not in url and "secret" not in url, f"url.full {url!r} keeps its query"
    assert a["attributes"].get("server.address") == "127.0.0.1", f"server.address {a['attributes']}"
    assert a["attributes"].get("http.response.status_code") == 200, f"status {a['attributes']}"
    stages = [s for s in mine if s["parent"] == a["span"]]
    names = {s["name"] for s in stages}
    assert names <= STAGES and {"download", "render", "store"} <= names, f"stages {sorted(names)}"
    for s in stages + [a]:
        outer = e if s is a else a
        assert outer["start"] <= s["start"] <= s["end"] <= outer["end"] + 1_000_000, f"{s['name']} is outside {outer['name']}"
    print(f"{door}: {e['name']} under {e['parent'][:8]}… with {len(stages)} stages ({', '.join(sorted(names))})")


if __name__ == "__main__":
    command, *args = sys.argv[1:]
    if command == "serve":
        serve(*args)
    else:
        try:
            tree(*args)
        except AssertionError as e:
            sys.exit(f"otlp.py tree: {e}")
