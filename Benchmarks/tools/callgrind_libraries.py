"""Where a Swift process's instructions go, by library, from a callgrind dump: what
Benchmarks/relay-instructions.sh prints for the relay's passthrough.

  callgrind_libraries.py DUMP REQUESTS
  callgrind_libraries.py --by-object DUMP REQUESTS   (a C process: nghttpx)
  callgrind_libraries.py --difference DUMP BASE REQUESTS   (what DUMP runs more than BASE)

A function belongs to the module its Swift symbol is declared in (`$s8NIOHTTP2…` is
swift-nio-http2's, `$s12AttacheRelay…` Attache's, a generic of one library specialised for another's
types stays the first one's). What belongs to none (the Swift runtime's retain, release and
exclusivity checks, the standard library, malloc) is charged to its callers, in proportion to the
instructions each caller's calls to it cost, up the call graph until a library's function is met:
a retain that swift-nio-http2's frame handling makes is swift-nio-http2's cost. What is still
unclaimed six calls up (closures and thunks without a module, the event loop's own entry) is shown
as such. Kernel time is not counted: callgrind sees user space only.
Prints instructions per request per library, and swift-nio-http2's by part (by the type and name
of its functions, demangled by `swift demangle`).
"""
import collections
import re
import subprocess
import sys

UNCLAIMED = "runtime and stdlib, unclaimed"


def read(path):
    """Each function's own cost, and each call edge's inclusive cost (caller -> callee)."""
    names = {}

    def name(kind, text):
        m = re.match(r"\((\d+)\)(?: (.*))?", text)
        if not m:
            return text
        if m.group(2) is not None:
            names[(kind, m.group(1))] = m.group(2)
        return names.get((kind, m.group(1)), text)

    own = collections.Counter()
    calls = collections.defaultdict(collections.Counter)
    objects = {}
    function = callee = obj = None
    call_line = False
    for line in open(path):
        line = line.rstrip("\n")
        if not line or line.startswith("#"):
            continue
        key, _, rest = line.partition("=")
        if key == "fn":
            function = name("fn", rest)
            objects[function] = obj
        elif key == "cfn":
            callee = name("fn", rest)
        elif key == "ob":
            obj = name("ob", rest)
        elif key == "cob":
            name("ob", rest)
        elif key in ("fl", "fi", "fe", "cfi", "cfl"):
            name("fl", rest)
        elif key == "calls":
            call_line = True
        elif line[0] in "0123456789+-*":
            fields = line.split()
            if len(fields) < 2:
                continue
            if call_line:
                calls[function][callee] += int(fields[1])
                call_line = False
            else:
                own[function] += int(fields[1])
    return own, calls, objects


def library(function):
    m = re.match(r"\$s(\d+)", function)
    if m:
        module = function[2 + len(m.group(1)):2 + len(m.group(1)) + int(m.group(1))]
        for prefix, label in (("NIOHTTP2", "swift-nio-http2"), ("NIOHPACK", "swift-nio-http2"), ("NIOSSL", "swift-nio-ssl"),
                              ("Attache", "Attache"), ("Hummingbird", "Hummingbird"), ("NIO", "swift-nio"), ("_NIO", "swift-nio")):
            if module.startswith(prefix):
                return label
    if "CNIOBoringSSL" in function or re.search(r"aesni|gcm_|ghash|sha256_block", function):
        return "swift-nio-ssl"
    return None


PARTS = (("HPACK", "HPACK"), ("Huffman", "HPACK"), ("StreamChannel", "child channels"), ("Multiplexer", "child channels"),
         ("FrameDecoder", "frame decoding"), ("FrameParser", "frame decoding"), ("FrameEncoder", "frame encoding"),
         ("StateMachine", "connection and stream states"), ("StreamState", "connection and stream states"),
         ("FlowControl", "flow control"), ("WindowManager", "flow control"), ("OutboundBuffer", "outbound buffers"),
         ("FrameBuffer", "outbound buffers"), ("NIOHTTP2Handler", "the handler's own"))


def main(path, requests):
    own, calls, _ = read(path)
    callers = collections.defaultdict(collections.Counter)
    for caller, callees in calls.items():
        for callee, cost in callees.items():
            callers[callee][caller] += cost
    memo = {}

    def owners(function, depth=0):
        """{(library, owning function): share} for a function's own instructions."""
        label = library(function)
        if label:
            return {(label, function): 1.0}
        if depth > 6 or not callers[function]:
            return {(UNCLAIMED, function): 1.0}
        if function in memo:
            return memo[function]
        memo[function] = {(UNCLAIMED, function): 1.0}  # a cycle stops here
        total = sum(callers[function].values())
        shares = collections.Counter()
        for caller, cost in callers[function].items():
            for key, share in owners(caller, depth + 1).items():
                shares[key] += share * cost / total
        memo[function] = dict(shares)
        return memo[function]

    by_library = collections.Counter()
    http2 = collections.Counter()
    for function, cost in own.items():
        for (label, owner), share in owners(function).items():
            by_library[label] += cost * share
            if label == "swift-nio-http2":
                http2[owner] += cost * share
    # A part by the function's own name (its type and name, not its parameters' types), demangled.
    symbols = list(http2)
    demangled = subprocess.run(["swift", "demangle", "--simplified"], input="\n".join(symbols), capture_output=True,
                               text=True).stdout.split("\n")
    by_part = collections.Counter()
    for symbol, text in zip(symbols, demangled):
        head = text.split("(")[0] if symbol.startswith("$s") else symbol
        module = "NIOHPACK" if symbol.startswith("$s8NIOHPACK") else ""
        by_part[next((p for key, p in PARTS if key in head + module), "the rest")] += http2[symbol]
    total = sum(own.values())
    for label, cost in by_library.most_common():
        print(f"  {label:<32} {cost / requests:9,.0f}  {100 * cost / total:5.1f}%")
    print("  swift-nio-http2's, by part: " + ", ".join(f"{part} {cost / requests:,.0f}" for part, cost in by_part.most_common()))


# nghttpx's instructions by what it is made of: C has no runtime to charge to callers, so a
# function is its object file's. Debian's libnghttp2 exports its API only: its HPACK, frame and
# session functions have no names to split it by.
def by_object(path, requests):
    own, _, objects = read(path)
    by_label = collections.Counter()
    for function, cost in own.items():
        obj = (objects.get(function) or "?").rsplit("/", 1)[-1]
        if obj.startswith(("libssl", "libcrypto")):
            label = "OpenSSL"
        elif obj.startswith(("libc.", "ld-linux")):
            label = "libc"
        else:
            label = obj.split(".so")[0].removeprefix("lib")
        by_label[label] += cost
    total = sum(own.values())
    for label, cost in by_label.most_common(6):
        print(f"  {label:<32} {cost / requests:9,.0f}  {100 * cost / total:5.1f}%")


def difference(path, base, requests, count=12):
    """The functions whose own instructions grew most from `base` to `path`, per request."""
    own, _, _ = read(path)
    before, _, _ = read(base)
    grown = sorted(((own[f] - before[f], f) for f in own), reverse=True)[:count]
    names = subprocess.run(["swift", "demangle", "--simplified"], input="\n".join(f for _, f in grown), capture_output=True,
                           text=True).stdout.split("\n")
    for (cost, _), name in zip(grown, names):
        print(f"  {cost / requests:7,.0f}  {name[:100]}")


if __name__ == "__main__":
    if sys.argv[1] == "--difference":
        difference(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    elif sys.argv[1] == "--by-object":
        by_object(sys.argv[2], int(sys.argv[3]))
    else:
        main(sys.argv[1], int(sys.argv[2]))
