#!/usr/bin/env python3
"""Mutation fuzzing of the attache process: no input may crash it.

Usage: mutate.py BIN [CASES] [SEED]
Media cases mutate the files in Samples/media and Samples/media/scans (bytes flipped, magic values written, spans cut or
inserted) and run `thumbnail` (half of them with a random poster time and mode) or `probe`: the
exit status must be 0 or 1, never a signal.
Payload cases mutate Samples/payloads and run `enrich -`: exit 0 with a payload on stdout, or 2
with nothing on stdout. Seeded, so a run is repeatable; failing inputs are kept in the current
directory. Prints "N passed, N failed".
"""
import glob, os, random, subprocess, sys

from mutation import PAYLOAD_INSERTS, mutate

root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
binary = sys.argv[1]
cases = int(sys.argv[2]) if len(sys.argv) > 2 else 600
rng = random.Random(int(sys.argv[3]) if len(sys.argv) > 3 else 1)
media = sorted(p for d in ("", "scans/", "hostile/") for p in glob.glob(os.path.join(root, f"Samples/media/{d}*"))
               if os.path.isfile(p) and not p.endswith((".html", ".sh")) and os.path.getsize(p) < 300_000)
payloads = [open(p, "rb").read() for p in sorted(glob.glob(os.path.join(root, "Samples/payloads/*.json")))]
work = os.environ.get("TMPDIR", "/tmp")
passed = failed = 0

for n in range(cases):
    if n % 3 < 2:
        seed = rng.choice(media)
        data = mutate(rng, open(seed, "rb").read(), [b"\xff\xff\xff\xff", b"\x00\x00\x00\x00", b"\x7f\xff\xff\xff", b"\x80\x00\x00\x00"])
        path = os.path.join(work, "attache-fuzz-case")
        open(path, "wb").write(data)
        r = rng.random()
        if r < 0.55:
            command = [binary, "thumbnail", path, "-o", path + ".jpg"]
            # Movies: the poster frame at a random time, in either mode (exact decodes many frames).
            if rng.random() < 0.5:
                command += ["--time", f"{rng.uniform(0, 12):.2f}", "--poster", rng.choice(["fast", "exact"])]
        elif r < 0.75:
            # Movies, sounds and animations made playable (a small target makes the planner cut).
            command = [binary, "convert", path, "-o", path + ".mp4"] + rng.choice([[], ["--movie-max-bytes", "20000", "--movie-keep", "1s"]])
        else:
            command = [binary, "probe", path]
        result = subprocess.run(command, capture_output=True, timeout=30)
        ok = result.returncode in (0, 1)
    else:
        data = mutate(rng, rng.choice(payloads), PAYLOAD_INSERTS)
        command = [binary, "enrich", "-", "--deadline", "200ms", "--media-dir", os.path.join(work, "attache-fuzz-media")]
        result = subprocess.run(command, input=data, capture_output=True, timeout=30)
        ok = (result.returncode == 0 and result.stdout) or (result.returncode == 2 and not result.stdout)
    if ok:
        passed += 1
    else:
        failed += 1
        keep = f"fuzz-failure-{n}"
        open(keep, "wb").write(data)
        print(f"FAIL: case {n}: {' '.join(command[1:2])} exited {result.returncode}; input kept as {keep}")
print(f"fuzz: {passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
