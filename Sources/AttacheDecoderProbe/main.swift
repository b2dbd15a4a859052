// The tests' decoder helper: attache-decode's process, sandbox and decoders, and one job more,
// `{"op": "test", "call": NAME}`, which makes a forbidden call (or spins) inside the sandbox, so
// the tests see what the filter and the limits do to it. Built for the tests, never shipped.
import AttacheDecoderHelper
import AttacheMedia
import AttachePayload
internal import CSandboxProbe
#if canImport(Glibc)
import Glibc
#endif

DecoderHelper.run { frame in
    guard frame.header["op"] == .string("test"), let call = frame.header["call"]?.stringValue else { return nil }
    let rc = attache_sandbox_probe(call)
    let code = errno
    return WireFrame(JSONObject(["ok": .bool(false), "code": .string("invalid-media"),
                                 "message": .string("\(call) returned \(rc), errno \(code)"),
                                 "cpu_ms": .int(DecoderHelper.cpuMilliseconds)]))
}
