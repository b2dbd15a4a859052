import Attache
import AttacheFetch
import AttacheMedia

extension Reason {
    /// The reason for a fetch error; a body the media policy refused has the media's reason.
    /// Exhaustive: a new fetch code does not compile until it has its reason here.
    public init(_ error: FetchError) {
        switch error.code.base {
        case .addressDenied: self = .addressDenied
        case .hostNotAllowed: self = .hostNotAllowed
        case .fetchFailed: self = .fetchFailed
        case .tooLarge: self = .tooLarge
        case .timeout: self = .timeout
        case .quotaExceeded: self = .quotaExceeded
        case .tooSlow: self = .originTooSlow
        case .rejected:
            // Attache's only prefix inspector is the media policy, which rejects with a MediaError.
            self = (error.rejection as? MediaError).map { Reason($0.code) } ?? .unsupportedType
        }
    }

    /// The reason for a media error (exhaustive, as above).
    public init(_ code: MediaError.Code) {
        switch code.base {
        case .unsupportedType: self = .unsupportedType
        case .invalidMedia: self = .invalidMedia
        case .limitsExceeded: self = .limitsExceeded
        case .tooLarge: self = .tooLarge
        }
    }
}

extension FailureDetail {
    /// What a report says of a media error's detail (exhaustive, as the reasons).
    public init(_ detail: MediaError.Detail) {
        switch detail {
        case .decoderCrashed: self = .decoderCrashed
        case .decoderCPULimit: self = .decoderCPULimit
        case .decoderUnavailable: self = .decoderUnavailable
        }
    }
}

extension StageTimings {
    mutating func setFetch(_ t: FetchTimings) {
        (dns, connect, tls, firstByte, download) = t.stages
    }
}
