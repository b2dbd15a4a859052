"""Publishes messages with exact header blocks (raw HPUB, as any NATS client may send them) to
attache.in, then prints, for each, the worker's answer headers as JSON lines once all are out.
Used by worker.sh: headers with empty, blank and repeated values must read as sent."""
import asyncio, json, os, socket, sys
import nats
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "../../Samples/queue"))
from pipeline import outputs_of

CASES = [  # (id, header lines after NATS/1.0)
    ("hdr-plain", ["Nats-Msg-Id: hdr-plain"]),
    ("hdr-empty-last", ["Nats-Msg-Id: hdr-empty-last", "Attache-Deadline-Ms: 1", "X-Trace: "]),
    ("hdr-empty-middle", ["Nats-Msg-Id: hdr-empty-middle", "X-Trace: ", "Attache-Deadline-Ms: 1"]),
    ("hdr-empty-nospace", ["Nats-Msg-Id: hdr-empty-nospace", "X-Trace:", "Attache-Deadline-Ms: 1"]),
    ("hdr-blank", ["Nats-Msg-Id: hdr-blank", "X-Trace: \t  ", "Attache-Deadline-Ms: 1"]),
    ("hdr-repeated", ["Nats-Msg-Id: hdr-repeated", "Attache-Deadline-Ms: 1", "Attache-Deadline-Ms: 5000"]),
    ("hdr-23-digits", ["Nats-Msg-Id: hdr-23-digits", "Attache-Deadline-Ms: 12345678901234567890123"]),
    ("hdr-huge", ["Nats-Msg-Id: hdr-huge", "Attache-Deadline-Ms: 999999999"]),
    ("hdr-nbsp", ["Nats-Msg-Id: hdr-nbsp", "Attache-Deadline-Ms: 5\u00a0"]),
]


def publish(host, port, payload):
    s = socket.create_connection((host, port))
    f = s.makefile("rb")
    f.readline()  # INFO
    s.sendall(b'CONNECT {"headers":true,"verbose":false,"pedantic":false}\r\n')
    for _, lines in CASES:
        block = ("NATS/1.0\r\n" + "".join(l + "\r\n" for l in lines) + "\r\n").encode()
        s.sendall(b"HPUB attache.in %d %d\r\n" % (len(block), len(block) + len(payload)) + block + payload + b"\r\n")
    s.sendall(b"PING\r\n")
    while True:
        line = f.readline()
        if line.startswith(b"PONG") or not line:
            break
        if line.startswith(b"-ERR"):
            sys.exit("server refused: %r" % line)
    s.close()


async def answers(url):
    nc = await nats.connect(url)
    found = await outputs_of(nc.jetstream(), "hdr-", len(CASES))
    await nc.close()
    for id, _ in CASES:
        print(json.dumps({"id": id, "headers": found.get(id)}))


url, payload = sys.argv[1], sys.argv[2].encode()
host, port = url.removeprefix("nats://").rsplit(":", 1)
publish(host, int(port), payload)
asyncio.run(answers(url))
