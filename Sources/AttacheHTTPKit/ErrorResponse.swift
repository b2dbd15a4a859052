import AttachePayload
import HTTPTypes
import Hummingbird
import NIOCore

/// The service's one error shape, `{"error": "<message>"}` as JSON, for every answer that is not a
/// payload (400, 401, 413, 503): written here, with the JSON writer, so that a message is always
/// escaped and every route says it alike.
public enum ErrorResponse {
    /// `more`: members after `error` (the lab's `line` and `column` of invalid JSON).
    public static func body(_ message: String, more: JSONObject = JSONObject()) -> ByteBuffer {
        var object = JSONObject(["error": .string(message)])
        object.members += more.members
        return ByteBuffer(bytes: JSONWriter.bytes(.object(object)))
    }

    /// The response, with `headers` besides the JSON Content-Type.
    public static func response(_ status: HTTPResponse.Status, _ message: String, headers: HTTPFields = [:],
                                more: JSONObject = JSONObject()) -> Response {
        var fields = headers
        fields[.contentType] = "application/json"
        return Response(status: status, headers: fields, body: .init(byteBuffer: body(message, more: more)))
    }
}
