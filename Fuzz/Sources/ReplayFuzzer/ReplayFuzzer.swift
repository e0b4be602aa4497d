import Foundation

/// What is fuzzed, from `FUZZ_TARGET`: `commands` (the default), the socket protocol's
/// decoder and connection state machine; `tokens`, the HTTP door's Authorization header
/// and token verification (`TokenFuzzing.swift`).
let fuzzTarget = ProcessInfo.processInfo.environment["FUZZ_TARGET"] ?? "commands"

func fuzzOne(_ input: UnsafeRawBufferPointer) {
    switch fuzzTarget {
    case "tokens": fuzzTokens(input)
    default: fuzzCommands(input)
    }
}

#if FUZZING
    @_cdecl("LLVMFuzzerTestOneInput")
    public func fuzzerTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
        fuzzOne(UnsafeRawBufferPointer(start: data, count: size))
        return 0
    }

    /// libFuzzer's entry point for programs that have their own `main`.
    @_silgen_name("LLVMFuzzerRunDriver")
    func runFuzzerDriver(
        _ argc: UnsafeMutablePointer<CInt>,
        _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
        _ testOneInput: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt
    ) -> CInt

    /// SwiftPM links an executable's `main` to `<module>_main`: hand over to libFuzzer.
    @_cdecl("ReplayFuzzer_main")
    public func fuzzerMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
        var argc = argc
        var argv = argv
        return runFuzzerDriver(&argc, &argv) { data, size in fuzzerTestOneInput(data, size) }
    }
#else
    /// Without libFuzzer: replays every file given (or found in the given folders).
    @main
    enum CorpusReplayer {
        static func main() throws {
            var files: [String] = []
            for path in CommandLine.arguments.dropFirst() {
                var isDirectory: ObjCBool = false
                guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else { continue }
                if isDirectory.boolValue {
                    files += try FileManager.default.contentsOfDirectory(atPath: path).sorted().map { path + "/" + $0 }
                } else {
                    files.append(path)
                }
            }
            for file in files {
                let data = try Data(contentsOf: URL(fileURLWithPath: file))
                data.withUnsafeBytes { fuzzOne($0) }
            }
            print("replayed \(files.count) inputs")
        }
    }
#endif
