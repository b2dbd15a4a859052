import ArgumentParser
import Attache
import AttacheCommandLine
import AttacheEnrichment
import AttacheSupport
import AttacheTenants
import Logging

/// `attache tenants token` and `attache tenants check FILE`.
struct TenantsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "attache tenants",
        abstract: "Make a tenant's token and its hash, or check a tenants file as the service would read it.",
        discussion: """
        The tenants file keeps hashes only (sha256:…), so it can be shared and committed without \
        giving anyone a token; hand the token to the tenant and put the hash in the file. See docs/tenants.md.
        """,
        subcommands: [Token.self, Check.self]
    )

    struct Token: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "token",
            abstract: "Print a new random token, and the line for the tenants file (its SHA-256).",
            discussion: "With --hash, prints the hash of a token you have instead (from standard input, so it stays out of the shell's history)."
        )

        @Flag(help: "Hash a token read from standard input instead of making one.")
        var hash = false

        func run() throws {
            if hash {
                guard let line = readLine(strippingNewline: true), !line.isEmpty else {
                    throw ValidationError("no token on standard input")
                }
                print(TenantToken.hashLine(line))
                return
            }
            let token = TenantToken.make()
            print("token: \(token)")
            print("tokens:\n  - \(TenantToken.hashLine(token))")
        }
    }

    struct Check: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "check",
            abstract: "Read a tenants file as the service would: each tenant on a line, or the first error with its line and key (exit 1)."
        )

        @Argument(help: "The tenants file.")
        var file: String

        func run() throws {
            let tenants = try readTenantsFile(file)
            for t in tenants {
                var line = "\(t.name): \(t.tokenHashes.count) token\(t.tokenHashes.count == 1 ? "" : "s"), store prefix \"\(t.storePrefix)\""
                line += ", hosts " + (t.hosts.map { $0.description } ?? "any")
                if let d = t.maxBudget { line += ", max deadline \(DurationText.format(d))" }
                if let r = t.rate { line += ", \(r.perSecond)/s burst \(r.burst)" }
                if let c = t.concurrency { line += ", \(c) at once" }
                if let q = t.dailyDownloadBytes { line += ", \(q) bytes a day" }
                if let g = t.cacheGroup { line += ", cache group \(g)" }
                print(line)
            }
        }
    }
}

/// The file's tenants, or an error that names the file, the line and the key.
func readTenantsFile(_ path: String) throws -> [Tenant] {
    let text: String
    do {
        text = try String(decoding: readFile(path), as: UTF8.self)
    } catch {
        throw TenantsFileProblem("the tenants file \(path) cannot be read: \(error)")
    }
    do {
        return try TenantsFile.parse(text)
    } catch {
        throw TenantsFileProblem("the tenants file \(path): \(error)")
    }
}

/// A long-running command's enrichment, and the tenants file's service on its store (nil without a
/// file); a file that is not valid stops the start with its line and key, the enrichment shut down.
func startEnrichment(_ options: Enrichment.Configuration, tenantsFile path: String?,
                     logger: Logger) async throws -> (Enrichment, TenantsFileService?) {
    let enrichment = try Enrichment(configuration: options, logger: logger)
    if options.storage.publicBaseURL == nil, options.storage.location.isLocal {
        // Right for a try on one machine, never for devices: said once, at start.
        logger.warning("no --public-base-url: attachments will name file:// URLs, which no device can fetch; give the URL the media directory is served under", metadata: [
            "attache.media_dir": "\(options.storage.directory)",
        ])
    }
    guard let path else { return (enrichment, nil) }
    do {
        return (enrichment, try await TenantsFileService(path: path, makeScope: Tenants.scope(in: enrichment), logger: logger))
    } catch let error as TenantsFileError {
        enrichment.shutdown()
        throw TenantsFileProblem("the tenants file \(path): \(error)")
    } catch {
        enrichment.shutdown()
        throw TenantsFileProblem("the tenants file \(path) cannot be used: \(error)")
    }
}

/// A tenants file that cannot be used, said once (no usage text: the command line was right).
struct TenantsFileProblem: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
