import Foundation

/// A fresh folder under the system's temp folder, removed when the body returns.
public func withTemporaryDirectory<T>(
    _ body: (_ directory: String) async throws -> T
) async throws -> T {
    var template = Array((NSTemporaryDirectory() + "/replay-test-XXXXXX").utf8CString)
    guard let made = mkdtemp(&template) else { throw TestFailure("mkdtemp failed: errno \(errno)") }
    let path = String(cString: made)
    defer { try? FileManager.default.removeItem(atPath: path) }
    return try await body(path)
}

/// The folder holding the package's built executables (beside the test bundle).
public func builtProductsDirectory() -> String {
    let candidates = [
        URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().path,
        Bundle.main.bundlePath,
    ]
    for directory in candidates {
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory), isDirectory.boolValue {
            return directory
        }
    }
    return FileManager.default.currentDirectoryPath + "/.build/debug"
}

/// The repository's folder (the one holding Package.swift), for tests that read its files.
public let repositoryRoot = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path

/// A script of the repository's `tools/` folder, for tests that run it.
public func toolScript(_ name: String) -> String {
    repositoryRoot + "/tools/" + name
}

/// The path of the package's executable `name`, built alongside the tests.
public func builtExecutable(_ name: String) throws -> String {
    let path = builtProductsDirectory() + "/" + name
    guard FileManager.default.isExecutableFile(atPath: path) else {
        throw TestFailure("\(name) is not built at \(path); run `swift build` first")
    }
    return path
}
