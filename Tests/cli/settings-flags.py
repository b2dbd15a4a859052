#!/usr/bin/env python3
"""Every setting a long-running command reads, given as its flag, is read back from that flag.

`attache config COMMAND` lists what the command reads (each setting's key spells its variable and
its flag). This gives every one of them that the command's --help offers as a flag, with its
default (or a sample when it has none), and fails when `attache config` does not then say the
value came from the flag: a flag the command parses but does not hand to the reader.
  usage: settings-flags.py BIN
"""
import os, re, subprocess, sys, tempfile

bin = os.path.realpath(sys.argv[1])
scratch = tempfile.mkdtemp()
env = {"PATH": os.environ["PATH"], "HOME": scratch}
# Values for settings with no default; the files the relay reads at start are left out (a key
# and a service account would have to be made for it).
samples = {"store": "./attache-media", "metrics-port": "9999", "allow-addresses": "10.0.0.0/8", "tenants-file": "tenants.yaml",
           "samples": "samples"}
os.makedirs(os.path.join(scratch, "samples", "payloads"))  # the lab's --samples must hold payloads/
skipped = {"config-file", "apns-key", "apns-key-id", "apns-team-id", "fcm-service-account"}
# A switch that turns a part off (its settings are then not read) is given on its own.
alone = {"no-transcode"}


def config(command, arguments):
    done = subprocess.run([bin, "config", command] + arguments, cwd=scratch, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit("settings-flags: attache config %s %s: %s" % (command, " ".join(arguments), done.stderr.strip()))
    rows = {}
    for line in done.stdout.splitlines()[1:]:
        parts = line.split()
        rows[parts[0]] = (" ".join(parts[1:-1]), parts[-1])
    return rows


def flag(variable):
    return variable[len("ATTACHE_"):].lower().replace("_", "-")


bad, given = [], 0
for command in ("serve", "worker", "relay", "lab"):
    help_text = subprocess.run([bin, command, "--help"], env=env, capture_output=True, text=True).stdout
    offered = set(re.findall(r"--([a-z0-9-]+)", help_text))
    arguments, expected = [], []
    for variable, (value, _) in config(command, []).items():
        name = flag(variable)
        if name not in offered or name in skipped:
            continue
        if value in ("false", "true"):
            arguments.append("--" + name)  # a switch
        elif value == "(none)":
            arguments += ["--" + name, samples.get(name, "x")]
        else:
            arguments += ["--" + name, value]
        expected.append(variable)
    off = [a for a in arguments if a[2:] in alone]
    runs = [([a for a in arguments if a not in off], [v for v in expected if "--" + flag(v) not in off])]
    runs += [([a], ["ATTACHE_" + a[2:].upper().replace("-", "_")]) for a in off]
    for run_arguments, run_expected in runs:
        read = config(command, run_arguments)
        for variable in run_expected:
            given += 1
            source = read.get(variable, ("", "nowhere"))[1]
            if source != "flag":
                bad.append("%s: --%s is parsed but %s was read from %s" % (command, flag(variable), variable, source))
for b in bad:
    print("settings-flags:", b, file=sys.stderr)
if bad:
    sys.exit(1)
print("settings-flags: %d flags of serve, worker, relay and lab each reach their setting" % given)
