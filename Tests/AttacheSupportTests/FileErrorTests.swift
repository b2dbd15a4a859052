import AttacheSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// A file that cannot be used is said with what was being done, the file and the system's reason,
/// each readable apart, as well as in words.
struct FileErrorTests {
    @Test func whatFailedTheFileAndWhyAreEachReadable() throws {
        let directory = "/tmp/attache-file-error-\(getpid())"
        try makeDirectories(directory)
        defer { unlink("\(directory)/f"); rmdir(directory) }

        let missing = #expect(throws: FileError.self) { try readFile("\(directory)/none") }
        #expect(missing?.code == .cannotOpen && missing?.path == "\(directory)/none" && missing?.systemError == ENOENT)
        #expect(missing?.description == "cannot open \(directory)/none: No such file or directory")

        let notAFile = #expect(throws: FileError.self) { try readRegularFile(directory) }
        #expect(notAFile?.code == .notRegular && notAFile?.path == directory)

        try writeFileAtomically("\(directory)/f", Array("x".utf8))
        let cannotMake = #expect(throws: FileError.self) { try makeDirectories("\(directory)/f/sub") }
        #expect(cannotMake?.code == .cannotMakeDirectory && cannotMake?.systemError == ENOTDIR)
        let cannotCreate = #expect(throws: FileError.self) { try writeFileAtomically("\(directory)/x", [1], tempDirectory: "\(directory)/f") }
        #expect(cannotCreate?.code == .cannotCreate && cannotCreate?.path == "\(directory)/f" && cannotCreate?.systemError == ENOTDIR)
    }
}
