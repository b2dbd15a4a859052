#!/usr/bin/env python3
"""Mutation fuzzing of `attache relay`: every send answered by the provider's answer, no input lost.

Usage: relay.py BIN [CASES] [SEED]   (run with the tools' python, .build/tools/bin/python: httpx, h2)
Starts the sample origin, nghttpd --echo-upload as both providers (an answer's body is what reached
it) and a clear-text relay to it, all on 127.0.0.1 with free ports. Sends CASES sample payloads,
nine in ten mutated, to the APNs and FCM paths with a random Attache-Deadline-Ms, 32 at once over
HTTP/2 and one at a time over HTTP/1.1 alternately. Each answer must be the upstream's 200 (never
a 5xx: the upstream is up), and one that went out unenriched (passthrough, fallback) must have
reached the upstream byte for byte. One send in six is the relay's to refuse, its body sent whole
before the answer is read (as httpx sends): to a path it does not serve (404), with a method it
does not take (405), or past 64 KiB (413); a body past 64 KiB (up to 300 KB, half the 404s and
405s too) goes on an HTTP/2 connection of its own. Each must get that answer, not a timeout.
Then the relay is still up and exits 0 on SIGTERM. Seeded, so a run is repeatable; failing inputs
are kept in the current directory. Prints "N passed, N failed".
"""
import asyncio, glob, os, random, shutil, socket, subprocess, sys, tempfile, time

import httpx

from mutation import PAYLOAD_INSERTS, mutate

root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
binary = os.path.abspath(sys.argv[1])
cases = int(sys.argv[2]) if len(sys.argv) > 2 else 600
rng = random.Random(int(sys.argv[3]) if len(sys.argv) > 3 else 1)
APNS, FCM = "/3/device/abc", "/v1/projects/p/messages:send"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until_answered(url):
    for _ in range(200):
        try:
            httpx.get(url, timeout=1)
            return
        except httpx.TransportError:
            time.sleep(0.05)
    sys.exit(f"relay fuzz: nothing answers at {url}")


def run(relay_port, origin_port):
    payloads = [open(p, "rb").read().replace(b"http://127.0.0.1:8765", b"http://127.0.0.1:%d" % origin_port)
                for p in sorted(glob.glob(os.path.join(root, "Samples/payloads/*.json")))]
    sends = []
    for n in range(cases):
        body = rng.choice(payloads)
        if n % 10:
            body = mutate(rng, body, PAYLOAD_INSERTS)
        path = FCM if b'"message"' in body and rng.random() < 0.8 else APNS
        method, expected = "POST", 200
        refused = rng.randrange(18)
        if refused == 0:
            path, expected = rng.choice(["/nowhere", "/4/device/abc", "/v1/projects/p/messages:sent"]), 404
        elif refused == 1:
            method, expected = rng.choice(["GET", "PUT", "DELETE"]), 405
        elif refused == 2:
            expected = 413
        if refused == 2 or (refused < 2 and rng.random() < 0.5):
            body += b" " * rng.randrange(max(0, 65_537 - len(body)), 300_000)
        sends.append((n, method, path, body, rng.choice([None, "0", "1", "50", "2000", "abc"]), expected))
    failures = []

    def judge(n, path, body, expected, answer):
        outcome = answer.headers.get("attache-outcome", "").split(";")[0]
        if expected != 200:
            if answer.status_code != expected:
                failures.append((n, body, f"{path}: {answer.status_code}, not {expected}: {answer.content[:120]!r}"))
        elif answer.status_code != 200:
            failures.append((n, body, f"{path}: {answer.status_code} {answer.content[:120]!r}"))
        elif outcome in ("passthrough", "fallback") and answer.content != body:
            failures.append((n, body, f"{path}: {outcome}, but the upstream got other bytes"))

    def label(method, path):
        return path if method == "POST" else f"{method} {path}"

    def headers(deadline):
        fields = {"apns-topic": "com.example.app", "content-type": "application/json", "authorization": "Bearer fuzz"}
        if deadline is not None:
            fields["attache-deadline-ms"] = deadline
        return fields

    async def over_http2(batch):
        limit = asyncio.Semaphore(32)
        async with httpx.AsyncClient(http1=False, http2=True, timeout=30) as client:
            async def one(n, method, path, body, deadline, expected):
                async with limit:
                    try:
                        url = f"http://127.0.0.1:{relay_port}{path}"
                        if len(body) > 65_536:
                            # A body past the window on a connection of its own: httpcore (1.0.9)
                            # stalls when several of its streams wait for window on one
                            # connection (a stream whose update another's read took reads again).
                            async with httpx.AsyncClient(http1=False, http2=True, timeout=30) as own:
                                answer = await own.request(method, url, content=body, headers=headers(deadline))
                        else:
                            answer = await client.request(method, url, content=body, headers=headers(deadline))
                        judge(n, label(method, path), body, expected, answer)
                    except httpx.HTTPError as error:
                        failures.append((n, body, f"{label(method, path)}: {error!r}"))
            await asyncio.gather(*(one(*send) for send in batch))

    for start in range(0, len(sends), 100):
        batch = sends[start:start + 100]
        if start // 100 % 2 == 0:
            asyncio.run(over_http2(batch))
            continue
        with httpx.Client(timeout=30) as client:
            for n, method, path, body, deadline, expected in batch:
                try:
                    answer = client.request(method, f"http://127.0.0.1:{relay_port}{path}", content=body, headers=headers(deadline))
                    judge(n, label(method, path), body, expected, answer)
                except httpx.HTTPError as error:
                    failures.append((n, body, f"{label(method, path)}: {error!r}"))
    return failures


def main():
    if not shutil.which("nghttpd"):
        sys.exit("relay fuzz: no nghttpd (the providers' double): run make test-deps")
    work = tempfile.mkdtemp()
    processes = []
    log = None
    try:
        for directory in ("up/3/device", "up/v1/projects/p"):
            os.makedirs(os.path.join(work, directory))
        for answer in ("up" + APNS, "up" + FCM):
            open(os.path.join(work, answer), "w").close()
        origin_port, upstream_port, relay_port = free_port(), free_port(), free_port()
        log = open(os.path.join(work, "processes.log"), "w")
        processes.append(subprocess.Popen([binary, "origin", "--root", os.path.join(root, "Samples/media"), "--port", str(origin_port)],
                                          stdout=log, stderr=log))
        processes.append(subprocess.Popen(["nghttpd", "--no-tls", "--echo-upload", "-d", os.path.join(work, "up"), str(upstream_port)],
                                          stdout=log, stderr=log))
        upstream = f"http://127.0.0.1:{upstream_port}"
        relay = subprocess.Popen([binary, "relay", "--port", str(relay_port), "--allow-address", "127.0.0.1/32",
                                  "--media-dir", os.path.join(work, "media"), "--public-base-url", "https://cdn.example.com/m",
                                  "--apns-upstream", upstream, "--fcm-upstream", upstream], stdout=log, stderr=log)
        processes.append(relay)
        wait_until_answered(f"http://127.0.0.1:{origin_port}/")
        wait_until_answered(f"http://127.0.0.1:{relay_port}/")
        failures = run(relay_port, origin_port)
        for n, body, why in failures:
            keep = f"relay-fuzz-failure-{n}"
            open(keep, "wb").write(body)
            print(f"FAIL: case {n}: {why}; input kept as {keep}")
        alive = relay.poll() is None
        if not alive:
            print(f"FAIL: the relay exited ({relay.returncode}) under the fuzz")
        else:
            relay.terminate()
            code = relay.wait(timeout=15)
            if code != 0:
                print(f"FAIL: on SIGTERM the relay exited {code}, not 0")
                alive = False
        print(f"relay fuzz: {cases - len(failures)} passed, {len(failures)} failed")
        return 0 if not failures and alive else 1
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
            process.wait()
        if log:
            log.close()
        shutil.rmtree(work, ignore_errors=True)


sys.exit(main())
