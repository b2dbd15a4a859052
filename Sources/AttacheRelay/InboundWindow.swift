import NIOHTTP2

/// What of HTTP/2's inbound flow-control window has been used and not yet given back, on a
/// connection or a stream. NIO's stream channels give it back as their reader reads; the relay's
/// frame handlers (`RelayStreams`, `Exchanges`) have none, so each counts here and sends
/// WINDOW_UPDATE once half of HTTP/2's default window (65,535) is used.
struct InboundWindow {
    private var used = 0
    private static let step = 32_768

    /// Counts a DATA frame (its padding too); the WINDOW_UPDATE to send for `stream` now, if any.
    mutating func received(_ data: HTTP2Frame.FramePayload.Data, on stream: HTTP2StreamID) -> HTTP2Frame? {
        used += data.data.readableBytes + (data.paddingBytes.map { $0 + 1 } ?? 0)
        guard used >= Self.step else { return nil }
        defer { used = 0 }
        return HTTP2Frame(streamID: stream, payload: .windowUpdate(windowSizeIncrement: used))
    }
}
