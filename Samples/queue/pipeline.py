"""A push pipeline's side of `attache worker`, with nats-py: publish payloads to attache.in, read
what to send from ATTACHE_OUT. Run by Tests/cli/worker.sh and Benchmarks/worker.sh; the README
shows its `publish` and `read` functions.

  pipeline.py publish URL COUNT TEMPLATE [DEADLINE_MS]   TEMPLATE: a payload, {i} replaced by 0..COUNT-1
  pipeline.py read URL [N]                                the next N payloads to send (default 1), as they come: id, outcome, payload
  pipeline.py count URL                                   messages in ATTACHE_OUT
  pipeline.py check URL COUNT                             each id p0..p{COUNT-1} exactly once in ATTACHE_OUT
  pipeline.py run URL COUNT TEMPLATE                      publish COUNT, wait for every output: payloads/s, p50 and p99 ms
  pipeline.py files URL DIR OUT DEADLINE_MS               each DIR/NAME published (id NAME); its output written to OUT/NAME,
                                                          its Attache-Outcome to OUT/NAME.outcome
"""
import asyncio
import json
import os
import sys
import time

import nats
from nats.js.errors import NotFoundError


async def ensure_input_stream(js):
    # The worker makes it too; whoever comes first makes it, the other uses it as it is.
    try:
        await js.stream_info("ATTACHE_IN")
    except NotFoundError:
        await js.add_stream(name="ATTACHE_IN", subjects=["attache.in"])


async def publish(js, payload: bytes, msg_id: str, deadline_ms=None):
    """One payload in: its id (for deduplication and to match the output), and optionally its
    deadline, counted from now."""
    headers = {"Nats-Msg-Id": msg_id}
    if deadline_ms:
        headers["Attache-Deadline-Ms"] = str(deadline_ms)
    await js.publish("attache.in", payload, headers=headers)


async def read(js, durable="sender"):
    """What to send, as it comes: the payload, and which input it answers."""
    # The worker makes ATTACHE_OUT when it starts: a sender started at the same time waits for it.
    for _ in range(50):
        try:
            sub = await js.pull_subscribe("attache.out", durable=durable, stream="ATTACHE_OUT")
            break
        except NotFoundError:
            await asyncio.sleep(0.2)
    else:
        raise SystemExit("no ATTACHE_OUT stream: is attache worker running?")
    while True:
        try:
            messages = await sub.fetch(batch=100, timeout=1)
        except nats.errors.TimeoutError:
            continue
        for msg in messages:
            yield msg.headers["Attache-Source-Id"], msg.headers["Attache-Outcome"], msg.data
            await msg.ack()


async def all_outputs(js):
    """Every message ATTACHE_OUT holds, in order (for checks; a sender uses `read`)."""
    try:
        info = await js.stream_info("ATTACHE_OUT")
    except NotFoundError:  # the worker makes it when it starts: a poller started with it finds none yet
        return []
    out = []
    if info.state.messages == 0:  # an empty stream's first and last are 0: no message to ask for
        return out
    for seq in range(info.state.first_seq, info.state.last_seq + 1):
        try:
            out.append(await js.get_msg("ATTACHE_OUT", seq))
        except NotFoundError:  # a gap the stream left (a message removed)
            continue
    return out


async def outputs_of(js, prefix, count, timeout=30):
    """The headers of the outputs whose input ids start with `prefix`, by id, once `count` of them
    are in ATTACHE_OUT (or `timeout` seconds passed): for checks that publish ids of their own."""
    found, deadline = {}, time.monotonic() + timeout
    while len(found) < count and time.monotonic() < deadline:
        for m in await all_outputs(js):
            source = (m.headers or {}).get("Attache-Source-Id", "")
            if source.startswith(prefix):
                found[source] = dict(m.headers)
        await asyncio.sleep(0.2)
    return found


async def main(argv):
    command, url = argv[1], argv[2]
    nc = await nats.connect(url)
    js = nc.jetstream()
    try:
        if command == "publish":
            count, template = int(argv[3]), argv[4]
            deadline = int(argv[5]) if len(argv) > 5 else None
            await ensure_input_stream(js)
            pending = []
            for i in range(count):
                payload = template.replace("{i}", str(i)).encode()
                pending.append(publish(js, payload, f"p{i}", deadline))
                if len(pending) == 200:
                    await asyncio.gather(*pending)
                    pending = []
            await asyncio.gather(*pending)
        elif command == "read":
            left = int(argv[3]) if len(argv) > 3 else 1
            async for source, outcome, payload in read(js):
                print(f"{source}  {outcome}  {payload.decode()}", flush=True)
                left -= 1
                if left == 0:
                    break
        elif command == "count":
            try:
                print((await js.stream_info("ATTACHE_OUT")).state.messages)
            except NotFoundError:
                print(0)
        elif command == "check":
            count = int(argv[3])
            seen = {}
            invalid = 0
            for m in await all_outputs(js):
                source = m.headers.get("Attache-Source-Id")
                seen[source] = seen.get(source, 0) + 1
                try:
                    if not isinstance(json.loads(m.data), dict):
                        invalid += 1
                except ValueError:
                    invalid += 1
            expected = {f"p{i}" for i in range(count)}
            missing = expected - set(seen)
            twice = [k for k, n in seen.items() if n > 1]
            extra = set(seen) - expected
            print(f"outputs {sum(seen.values())} missing {len(missing)} twice {len(twice)} unknown {len(extra)} invalid {invalid}")
            return 0 if not missing and not twice and not extra and invalid == 0 else 1
        elif command == "files":
            directory, out, deadline = argv[3], argv[4], int(argv[5])
            await ensure_input_stream(js)
            names = sorted(os.listdir(directory))
            for name in names:
                with open(os.path.join(directory, name), "rb") as f:
                    await publish(js, f.read(), name, deadline)
            wanted, written, until = set(names), set(), time.monotonic() + 120
            while written != wanted and time.monotonic() < until:
                for m in await all_outputs(js):
                    name = (m.headers or {}).get("Attache-Source-Id")
                    if name in wanted and name not in written:
                        with open(os.path.join(out, name), "wb") as f:
                            f.write(m.data)
                        with open(os.path.join(out, name + ".outcome"), "w") as f:
                            f.write(m.headers.get("Attache-Outcome", "") + "\n")
                        written.add(name)
                await asyncio.sleep(0.2)
            return 0 if written == wanted else 1
        elif command == "run":
            # Outputs are also delivered to plain subscribers of attache.out: each is timed as it
            # arrives, against when its input was published.
            count, template = int(argv[3]), argv[4]
            await ensure_input_stream(js)
            # Ids of this run only: the input stream drops an id it saw in its duplicate window.
            run_id = f"r{time.time_ns()}-"
            sent, latencies, done = {}, {}, asyncio.Event()
            loop = asyncio.get_running_loop()

            async def arrived(msg):
                source = msg.headers.get("Attache-Source-Id") if msg.headers else None
                if source in sent and source not in latencies:
                    latencies[source] = (loop.time() - sent[source]) * 1000
                    if len(latencies) == count:
                        done.set()

            await nc.subscribe("attache.out", cb=arrived)
            start = loop.time()
            for first in range(0, count, 200):
                batch = []
                for i in range(first, min(count, first + 200)):
                    sent[f"{run_id}{i}"] = loop.time()
                    batch.append(publish(js, template.replace("{i}", str(i)).encode(), f"{run_id}{i}"))
                await asyncio.gather(*batch)
            await asyncio.wait_for(done.wait(), timeout=120)
            elapsed = loop.time() - start
            lat = sorted(latencies.values())
            print(f"{count / elapsed:.0f} {lat[len(lat) // 2]:.1f} {lat[min(len(lat) - 1, int(len(lat) * 0.99))]:.1f}")
        return 0
    finally:
        await nc.close()


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv)))
