import ArgumentParser
import Attache
import AttacheEnrichment
import AttacheFetch
import AttacheIsolation
import AttacheMedia
import AttacheSupport

public func parseDuration(_ text: String) throws -> Duration {
    guard let d = DurationText.parse(text) else { throw ValidationError(DurationText.problem(text)) }
    return d
}

public func parseCIDR(_ text: String) throws -> CIDR {
    guard let c = CIDR(text) else { throw ValidationError("not an address or CIDR: \(text)") }
    return c
}

extension DeadlinePolicy.OnTimeout: ExpressibleByArgument {}
extension PosterMode: ExpressibleByArgument {}
extension Isolation: ExpressibleByArgument {}
