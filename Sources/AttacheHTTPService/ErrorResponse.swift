import AttachePayload
import HTTPTypes
import Hummingbird
import NIOCore

/// The service's one error shape, `{"error": "<message>"}` as JSON, for every answer that is not a
/// payload (400, 401, 413, 503): written here, with the JSON writer, so that a message is always
/// escaped and every route says it alike.
enum ErrorResponse {
    static func body(_ message: String) -> ByteBuffer {
        ByteBuffer(bytes: JSONWriter.bytes(.object(JSONObject(["error": .string(message)]))))
    }

    /// The response, with `headers` besides the JSON Content-Type.
    static func response(_ status: HTTPResponse.Status, _ message: String, headers: HTTPFields = [:]) -> Response {
        var fields = headers
        fields[.contentType] = "application/json"
        return Response(status: status, headers: fields, body: .init(byteBuffer: body(message)))
    }
}
