"""What Tests/cli/relay.sh runs around the relay, on loopback:

  providers.py upstream PORT LOG [DELAY]   the APNs and FCM double: HTTP/2 with prior knowledge (the
                                h2 library), that answers POST /3/device/<token> as Apple does (200
                                with the request's apns-id; 403 MissingProviderToken without a
                                bearer token) and POST /v1/projects/<project>/messages:send as Google
                                does (200 {"name": "projects/<project>/messages/<n>"}; 401
                                UNAUTHENTICATED without one), and writes each request it received to
                                LOG as a JSON line, before it answers (after DELAY seconds, when given)
  providers.py oauth PORT       Google's OAuth 2 token endpoint for a service account: POST /token
                                with an RS256 JWT assertion (RFC 7523) answered with an access token
                                (HTTP/1.1, as google-auth asks for it)
  providers.py send PORT CA KEY PAYLOAD [no-alpn]   aioapns, a real APNs client library, sending
                                PAYLOAD (JSON) to the relay on 127.0.0.1:PORT over TLS trusting CA,
                                with a provider token signed by the .p8-style KEY; prints "sent
                                STATUS" or "refused STATUS REASON". no-alpn: the context as
                                ssl.create_default_context makes it, offering no protocol
  providers.py burst PORT CA KEY PAYLOAD COUNT INTERVAL OUT   aioapns sending COUNT notifications, one
                                every INTERVAL seconds without waiting for answers; writes
                                "APNS-ID sent" or "APNS-ID failed" to OUT as each ends
  providers.py hostile PORT CASE [N M]   a client that never finishes its requests, to the relay in
                                clear text on 127.0.0.1:PORT: "unfinished" sends HEADERS and a whole
                                JSON body without END_STREAM and closes the connection; "reset"
                                sends half a body and resets the stream (RST_STREAM CANCEL), then
                                closes; "headers" opens N connections of M streams each with
                                HEADERS alone, then closes them; "http1" sends an HTTP/1.1 request
                                whose body stops short of its Content-Length, then closes;
                                "rapid" opens N connections that each open and reset M streams
                                (HEADERS, then RST_STREAM at once: the rapid-reset attack)
  providers.py malformed PORT   one HTTP/2 connection in clear text sending requests whose header
                                blocks RFC 9113 calls malformed (an upper-case name, a
                                connection-specific field, CR in a value, a pseudo-header twice,
                                after a regular field, unknown, missing, in a response only, empty
                                or with a space, te other than trailers, a body that is not its
                                content-length), each on its own stream, then a well-formed one;
                                prints "reset N of M PROTOCOL_ERROR, then STATUS"
  providers.py early PORT       httpx over HTTP/2 in clear text (the client firebase-admin sends
                                with), which sends a whole body before it reads: 70,000 bytes, past
                                the stream's first window, to a path the relay does not serve, with
                                a method it refuses, and as a send past its body limit; prints each
                                status, or the error when none came within 5 s
  providers.py oversized PORT   one HTTP/2 connection in clear text: a request, then one whose header
                                block is past 16 KB (a connection error, RFC 9113 § 10.5.1); prints
                                "goaway CODE, closed" once the relay has closed the connection, or
                                "goaway CODE, open" when it is still open 5 s later
  providers.py stalled PORT     one HTTP/2 connection in clear text that gives no window for answers,
                                with requests whose bodies stop: a send's HEADERS alone, a send with
                                half its body, a body half sent to a path the relay answers 404 at
                                once; then a whole send, and a whole request answered 404 (whose
                                body the window holds back). Waits up to 30 s for the four stalled
                                streams to be reset, then sends one more whole request; prints
                                "answered ID:STATUS...; reset ID:CODE...; after SECONDS" (the time
                                of the last reset)
  providers.py halfclosed PORT  one HTTP/2 connection in clear text: a send's HEADERS alone and a whole
                                send; once that is answered, the client's side of the connection is
                                shut (SHUT_WR); reads on and prints "answered ID:STATUS; reset
                                ID:CODE; closed|open SECONDS after the shut"
  providers.py held PORT        one HTTP/2 connection in clear text holding a send's HEADERS alone;
                                prints "holding", then, once the connection closes (or 30 s), what
                                came: "goaway CODE, reset ID:CODE; closed|open after SECONDS"
  providers.py slowloris PORT   an HTTP/1.1 request line, then a byte of headers every half second;
                                prints the seconds until the relay closed the connection
  providers.py hold PORT N      opens N connections at once and sends nothing; prints how many of
                                them the relay closed within a second
"""
import asyncio
import itertools
import json
import ssl
import sys
import uuid

from h2.config import H2Configuration
from h2.connection import H2Connection
from h2.events import DataReceived, RequestReceived, StreamEnded


FCM_MESSAGE_IDS = itertools.count(1)


class Upstream(asyncio.Protocol):
    def __init__(self, log, delay=0.0):
        self.delay = delay
        self.conn = H2Connection(H2Configuration(client_side=False, header_encoding="utf-8"))
        self.streams = {}
        self.log = log

    def connection_made(self, transport):
        self.transport = transport
        self.conn.initiate_connection()
        transport.write(self.conn.data_to_send())

    def data_received(self, data):
        for event in self.conn.receive_data(data):
            if isinstance(event, RequestReceived):
                self.streams[event.stream_id] = {"headers": dict(event.headers), "body": b""}
            elif isinstance(event, DataReceived):
                self.streams[event.stream_id]["body"] += event.data
                self.conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
            elif isinstance(event, StreamEnded):
                if self.delay:
                    asyncio.get_running_loop().call_later(self.delay, self.answer_later, event.stream_id)
                else:
                    self.answer(event.stream_id)
        self.transport.write(self.conn.data_to_send())

    def answer_later(self, stream_id):
        self.answer(stream_id)
        self.transport.write(self.conn.data_to_send())

    def answer(self, stream_id):
        request = self.streams.pop(stream_id)
        headers = request["headers"]
        with open(self.log, "a") as log:
            fields = {k: v for k, v in headers.items() if not k.startswith(":")}
            log.write(json.dumps({"path": headers.get(":path"), "fields": fields, "body": request["body"].decode(errors="replace")}) + "\n")
        path = headers.get(":path", "")
        if path.startswith("/v1/projects/"):
            return self.answer_fcm(stream_id, path, headers)
        apns_id = headers.get("apns-id", str(uuid.uuid4()).upper())
        if headers.get("authorization", "").startswith("bearer "):
            self.conn.send_headers(stream_id, [(":status", "200"), ("apns-id", apns_id)], end_stream=True)
        else:
            body = b'{"reason":"MissingProviderToken"}'
            self.conn.send_headers(stream_id, [(":status", "403"), ("apns-id", apns_id), ("content-length", str(len(body)))])
            self.conn.send_data(stream_id, body, end_stream=True)


    def answer_fcm(self, stream_id, path, headers):
        project = path.split("/")[3]
        if headers.get("authorization", "").lower().startswith("bearer "):
            status, body = "200", {"name": "projects/%s/messages/%d" % (project, next(FCM_MESSAGE_IDS))}
        else:
            status, body = "401", {"error": {"code": 401, "message": "Request is missing required authentication credential.",
                                             "status": "UNAUTHENTICATED"}}
        data = json.dumps(body).encode()
        self.conn.send_headers(stream_id, [(":status", status), ("content-type", "application/json; charset=UTF-8"),
                                           ("content-length", str(len(data)))])
        self.conn.send_data(stream_id, data, end_stream=True)


def oauth(port):
    import http.server
    import urllib.parse

    class Token(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            form = urllib.parse.parse_qs(self.rfile.read(int(self.headers["Content-Length"])).decode())
            ok = form.get("grant_type") == ["urn:ietf:params:oauth:grant-type:jwt-bearer"] and form.get("assertion", [""])[0].count(".") == 2
            body = json.dumps({"access_token": "ya29.double-%s" % uuid.uuid4().hex, "expires_in": 3599, "token_type": "Bearer"}
                              if ok else {"error": "invalid_grant"}).encode()
            self.send_response(200 if ok else 400)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Token)
    print("listening", flush=True)
    server.serve_forever()


async def upstream(port, log, delay):
    server = await asyncio.get_running_loop().create_server(lambda: Upstream(log, delay), "127.0.0.1", port)
    print("listening", flush=True)
    async with server:
        await server.serve_forever()


def client_(port, ca, key, alpn=True):
    from aioapns import APNs
    from aioapns.connection import APNsProductionClientProtocol

    # aioapns has no host argument: its protocol class names the server (docs/relay.md).
    APNsProductionClientProtocol.APNS_SERVER = "127.0.0.1"
    APNsProductionClientProtocol.APNS_PORT = port
    context = ssl.create_default_context(cafile=ca)
    if alpn:
        context.set_alpn_protocols(["h2"])
    return APNs(key=open(key).read(), key_id="ABC123DEFG", team_id="DEF123GHIJ", topic="com.example.app",
                ssl_context=context, max_connection_attempts=1)


async def send(port, ca, key, payload, alpn=True):
    from aioapns import NotificationRequest

    client = client_(port, ca, key, alpn)
    request = NotificationRequest(device_token="abc", message=json.loads(payload), notification_id=str(uuid.uuid4()))
    result = await asyncio.wait_for(client.send_notification(request), 20)
    print(("sent %s" % result.status) if result.is_successful else ("refused %s %s" % (result.status, result.description)))


async def burst(port, ca, key, payload, count, interval, out):
    from aioapns import NotificationRequest

    client = client_(port, ca, key)
    results = open(out, "a")

    async def one():
        apns_id = str(uuid.uuid4()).upper()
        request = NotificationRequest(device_token="abc", message=json.loads(payload), notification_id=apns_id)
        try:
            result = await asyncio.wait_for(client.send_notification(request), 10)
            outcome = "sent" if result.is_successful else "failed"
            print(apns_id, result.status, result.description, flush=True)
        except Exception as error:
            print(apns_id, repr(error), flush=True)
            outcome = "failed"
        results.write("%s %s\n" % (apns_id, outcome))
        results.flush()

    tasks = []
    for _ in range(count):
        tasks.append(asyncio.create_task(one()))
        await asyncio.sleep(interval)
    await asyncio.gather(*tasks)


APNS_HEADERS = [("apns-topic", "com.example.app"), ("authorization", "bearer eyJhbGciOiJFUzI1NiJ9.e30.c2ln"),
                ("apns-push-type", "alert")]
# The pseudo-header fields of an APNs send to the relay in clear text.
SEND_HEAD = [(":method", "POST"), (":scheme", "http"), (":authority", "relay"), (":path", "/3/device/abc")]
SECRET = b'{"aps":{"alert":"Your code is 123456","mutable-content":0}}'


def slowloris(port):
    import socket
    import time
    start = time.monotonic()
    with socket.create_connection(("127.0.0.1", port)) as s:
        s.sendall(b"POST /v1/projects/p1/messages:send HTTP/1.1\r\n")
        s.settimeout(0.5)
        while time.monotonic() - start < 60:
            try:
                if s.recv(1024) == b"":
                    break
            except socket.timeout:
                pass
            except ConnectionResetError:
                # The relay closes with bytes of ours unread, which the kernel answers with a
                # reset: closed all the same.
                break
            try:
                s.sendall(b"X")
            except OSError:
                break
    print("%.1f" % (time.monotonic() - start))


def hold(port, count):
    import socket
    import time
    held = [socket.create_connection(("127.0.0.1", port)) for _ in range(count)]
    time.sleep(1)
    closed = 0
    for s in held:
        s.setblocking(False)
        try:
            closed += s.recv(1) == b""
        except BlockingIOError:
            pass
        except OSError:
            closed += 1
        s.close()
    print(closed)


def hostile(port, case, connections=1, streams=1):
    import socket
    import time
    if case == "http1":
        with socket.create_connection(("127.0.0.1", port)) as s:
            s.sendall(b"POST /v1/projects/p1/messages:send HTTP/1.1\r\nHost: relay\r\nContent-Type: application/json\r\n"
                      + b"Content-Length: %d\r\n\r\n" % len(SECRET) + SECRET[:34])
            time.sleep(0.5)
        return
    sockets = []
    for _ in range(connections):
        s = socket.create_connection(("127.0.0.1", port))
        conn = H2Connection(H2Configuration(client_side=True))
        conn.initiate_connection()
        for n in range(streams):
            stream = conn.get_next_available_stream_id()
            conn.send_headers(stream, [(":method", "POST"), (":scheme", "http"), (":authority", "relay"),
                                       (":path", "/3/device/abc%d" % n)] + APNS_HEADERS)
            if case == "rapid":
                conn.reset_stream(stream, error_code=8)  # CANCEL
            elif case == "unfinished":
                conn.send_data(stream, SECRET)
            elif case == "reset":
                conn.send_data(stream, SECRET[:34])
        s.sendall(conn.data_to_send())
        if case == "reset":
            time.sleep(0.2)
            for stream in range(1, 2 * streams, 2):
                conn.reset_stream(stream, error_code=8)  # CANCEL
            s.sendall(conn.data_to_send())
        sockets.append(s)
    time.sleep(0.5)
    for s in sockets:
        s.close()


def malformed(port):
    import socket
    from h2.events import ResponseReceived, StreamReset
    request = SEND_HEAD
    cases = [
        request + [("Apns-Topic", "com.example.app")],
        request + [("connection", "keep-alive")],
        request + [("apns-topic", "com.example\rapp")],
        request + [(":path", "/3/device/abc")],
        [(":method", "POST"), (":scheme", "http"), ("apns-topic", "com.example.app"), (":path", "/3/device/abc")],
        request + [(":protocol", "websocket")],
        [(":method", "POST"), (":scheme", "http"), (":path", "/3/device/abc"), (":foo", "bar")],
        [(":method", "POST"), (":authority", "relay"), (":path", "/3/device/abc")],
        request + [(":status", "200")],
        [(":method", "POST"), (":scheme", "http"), (":authority", "relay"), (":path", "")],
        [(":method", "POST"), (":scheme", "http"), (":authority", "relay"), (":path", "/3/device/a b")],
        request + [("te", "gzip")],
        # A body that is not its content-length (RFC 9113 § 8.1.1): none here, or one said wrong.
        request + [("content-length", "5")],
        request + [("content-length", "5x")],
        request + [("content-length", "5"), ("content-length", "6")],
    ]
    # ... and with a body: longer than said, shorter than said.
    bodies = [request + [("content-length", "5")], request + [("content-length", str(len(SECRET) + 1))]]
    # h2 checks and normalises what it sends unless told not to: these blocks must go as written.
    conn = H2Connection(H2Configuration(client_side=True, validate_outbound_headers=False, normalize_outbound_headers=False,
                                        validate_inbound_headers=False))
    conn.initiate_connection()
    resets, status = {}, None
    with socket.create_connection(("127.0.0.1", port)) as s:
        s.settimeout(5)
        for headers in cases:
            conn.send_headers(conn.get_next_available_stream_id(), headers + APNS_HEADERS[1:], end_stream=True)
        for headers in bodies:
            stream = conn.get_next_available_stream_id()
            conn.send_headers(stream, headers + APNS_HEADERS)
            conn.send_data(stream, SECRET, end_stream=True)
        whole = conn.get_next_available_stream_id()
        conn.send_headers(whole, request + APNS_HEADERS + [("content-length", str(len(SECRET)))])
        conn.send_data(whole, SECRET, end_stream=True)
        s.sendall(conn.data_to_send())
        while status is None:
            data = s.recv(65536)
            if not data:
                break
            for event in conn.receive_data(data):
                if isinstance(event, StreamReset):
                    resets[event.stream_id] = event.error_code
                elif isinstance(event, ResponseReceived) and event.stream_id == whole:
                    status = dict(event.headers).get(b":status", b"?").decode()
            s.sendall(conn.data_to_send())
    protocol = sum(1 for code in resets.values() if code == 1)
    print("reset %d of %d PROTOCOL_ERROR, then %s" % (protocol, len(cases) + len(bodies), status))


def oversized(port):
    import socket
    request = SEND_HEAD + APNS_HEADERS
    conn = H2Connection(H2Configuration(client_side=True))
    conn.initiate_connection()
    conn.send_headers(1, request)
    conn.send_data(1, SECRET, end_stream=True)
    conn.send_headers(3, request + [("x-padding", "x" * 17_000)], end_stream=True)
    received, state = b"", "open"
    with socket.create_connection(("127.0.0.1", port)) as s:
        s.settimeout(5)
        s.sendall(conn.data_to_send())
        try:
            while data := s.recv(65536):
                received += data
            state = "closed"
        except socket.timeout:
            pass
        except ConnectionResetError:
            state = "closed"
    # The frames are read here, not by h2: after a GOAWAY h2 refuses the answer to stream 1
    # that follows it, and with that error loses the GOAWAY read in the same batch.
    goaway, at = None, 0
    while goaway is None and at + 9 <= len(received):
        length, kind = int.from_bytes(received[at:at + 3], "big"), received[at + 3]
        if kind == 0x7 and at + 17 <= len(received):  # GOAWAY: last stream id, then the code
            goaway = int.from_bytes(received[at + 13:at + 17], "big")
        at += 9 + length
    print("goaway %s, %s" % (goaway if goaway is not None else "none", state))


def tally(events, statuses, resets):
    """Each answer's status and each reset's error code, by stream id, from h2's events."""
    from h2.events import ResponseReceived, StreamReset
    for event in events:
        if isinstance(event, StreamReset):
            resets[event.stream_id] = event.error_code.name
        elif isinstance(event, ResponseReceived):
            statuses[event.stream_id] = dict(event.headers).get(b":status", b"?").decode()


def answered(statuses, resets):
    """"answered ID:STATUS ...; reset ID:CODE ..." """
    return "answered %s; reset %s" % (" ".join("%d:%s" % item for item in sorted(statuses.items())),
                                      " ".join("%d:%s" % item for item in sorted(resets.items())))


def stalled(port):
    import socket
    import time
    from h2.settings import SettingCodes
    conn = H2Connection(H2Configuration(client_side=True))
    conn.initiate_connection()
    # No window for the relay's answers: a body is held back (a 200 from Apple has none).
    conn.update_settings({SettingCodes.INITIAL_WINDOW_SIZE: 0})
    request = SEND_HEAD + APNS_HEADERS
    nowhere = [(":method", "POST"), (":scheme", "http"), (":authority", "relay"), (":path", "/nowhere")] + APNS_HEADERS
    conn.send_headers(1, request)  # HEADERS alone
    conn.send_headers(3, request)
    conn.send_data(3, SECRET[:34])  # half a body
    conn.send_headers(5, nowhere)
    conn.send_data(5, SECRET[:34])  # answered 404 at once, then half a body more never comes
    conn.send_headers(7, request)
    conn.send_data(7, SECRET, end_stream=True)
    conn.send_headers(9, nowhere, end_stream=True)  # answered 404, its body held back
    statuses, resets, last = {}, {}, None
    start = time.monotonic()
    with socket.create_connection(("127.0.0.1", port)) as s:
        s.settimeout(1)
        s.sendall(conn.data_to_send())
        while len(resets) < 4 and time.monotonic() - start < 30:
            try:
                data = s.recv(65536)
            except socket.timeout:
                continue
            if not data:
                break
            before = len(resets)
            tally(conn.receive_data(data), statuses, resets)
            if len(resets) > before:
                last = time.monotonic() - start
            s.sendall(conn.data_to_send())
        # The connection goes on: a request after the resets is answered.
        conn.send_headers(11, request)
        conn.send_data(11, SECRET, end_stream=True)
        s.sendall(conn.data_to_send())
        s.settimeout(5)
        while 11 not in statuses:
            try:
                data = s.recv(65536)
            except socket.timeout:
                break
            if not data:
                break
            tally(conn.receive_data(data), statuses, resets)
    print("%s; after %s" % (answered(statuses, resets), "%.1f" % last if last is not None else "none"))


def halfclosed(port):
    import socket
    import time
    conn = H2Connection(H2Configuration(client_side=True))
    conn.initiate_connection()
    request = SEND_HEAD + APNS_HEADERS
    conn.send_headers(1, request)  # HEADERS alone
    conn.send_headers(3, request)
    conn.send_data(3, SECRET, end_stream=True)
    statuses, resets = {}, {}

    def read(data):
        tally(conn.receive_data(data), statuses, resets)

    with socket.create_connection(("127.0.0.1", port)) as s:
        s.settimeout(30)
        s.sendall(conn.data_to_send())
        # Once the whole request is answered (the relay has read both), the client's side is shut.
        while 3 not in statuses and (data := s.recv(65536)):
            read(data)
        start = time.monotonic()
        s.shutdown(socket.SHUT_WR)
        state = "open"
        try:
            while data := s.recv(65536):
                read(data)
            state = "closed"
        except socket.timeout:
            pass
        except ConnectionResetError:
            state = "closed"
    print("%s; %s after %.1f" % (answered(statuses, resets), state, time.monotonic() - start))


def held(port):
    import socket
    import time
    from h2.events import ConnectionTerminated, StreamReset
    conn = H2Connection(H2Configuration(client_side=True))
    conn.initiate_connection()
    conn.send_headers(1, SEND_HEAD + APNS_HEADERS)  # HEADERS alone
    said = []
    start = time.monotonic()
    with socket.create_connection(("127.0.0.1", port)) as s:
        s.sendall(conn.data_to_send())
        print("holding", flush=True)
        s.settimeout(30)
        state = "open"
        try:
            while data := s.recv(65536):
                for event in conn.receive_data(data):
                    if isinstance(event, StreamReset):
                        said.append("reset %d:%s" % (event.stream_id, event.error_code.name))
                    elif isinstance(event, ConnectionTerminated):
                        said.append("goaway %d" % event.error_code)
                s.sendall(conn.data_to_send())
            state = "closed"
        except socket.timeout:
            pass
        except (ConnectionResetError, BrokenPipeError):
            state = "closed"
    print("%s; %s after %.1f" % (", ".join(said), state, time.monotonic() - start))


def early(port):
    import httpx
    body = b"x" * 70_000
    statuses = []
    for method, path in (("POST", "/nowhere"), ("GET", "/3/device/abc"), ("POST", "/3/device/abc")):
        with httpx.Client(http1=False, http2=True, timeout=5) as client:
            try:
                statuses.append(str(client.request(method, "http://127.0.0.1:%d%s" % (port, path), content=body,
                                                   headers=dict(APNS_HEADERS)).status_code))
            except httpx.HTTPError as error:
                statuses.append(type(error).__name__)
    print(" ".join(statuses))


if __name__ == "__main__":
    if sys.argv[1] == "oauth":
        oauth(int(sys.argv[2]))
    elif sys.argv[1] == "upstream":
        asyncio.run(upstream(int(sys.argv[2]), sys.argv[3], float(sys.argv[4]) if len(sys.argv) > 4 else 0.0))
    elif sys.argv[1] == "malformed":
        malformed(int(sys.argv[2]))
    elif sys.argv[1] == "oversized":
        oversized(int(sys.argv[2]))
    elif sys.argv[1] == "halfclosed":
        halfclosed(int(sys.argv[2]))
    elif sys.argv[1] == "held":
        held(int(sys.argv[2]))
    elif sys.argv[1] == "stalled":
        stalled(int(sys.argv[2]))
    elif sys.argv[1] == "early":
        early(int(sys.argv[2]))
    elif sys.argv[1] == "slowloris":
        slowloris(int(sys.argv[2]))
    elif sys.argv[1] == "hold":
        hold(int(sys.argv[2]), int(sys.argv[3]))
    elif sys.argv[1] == "hostile":
        hostile(int(sys.argv[2]), sys.argv[3], *map(int, sys.argv[4:6]))
    elif sys.argv[1] == "burst":
        asyncio.run(burst(int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5], int(sys.argv[6]), float(sys.argv[7]), sys.argv[8]))
    else:
        asyncio.run(send(int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5], sys.argv[6:7] != ["no-alpn"]))
