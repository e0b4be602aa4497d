import Dispatch
import Foundation
import ReplayAuth
import ReplayTesting

/// The key file the token corpus was signed with (`Fuzz/tokens.keys.json`; test keys,
/// never used elsewhere), or `FUZZ_KEYS`.
let tokenKeyFile =
    ProcessInfo.processInfo.environment["FUZZ_KEYS"]
    ?? URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    .appendingPathComponent("tokens.keys.json").path

let tokenKeys: TokenKeys = blocking { try! await TokenKeys.load(tokenKeyFile) }
let tokenOracle = try! TokenOracle(keyFile: tokenKeyFile)

/// One fuzz input: an Authorization header's value, as the HTTP door reads it. Invariants
/// (a violation traps, which libFuzzer reports as a crash):
/// - parsing and verifying never trap, whatever the bytes;
/// - a token that verifies is genuine (`TokenOracle`): no forgery is accepted, be it
///   `alg: none`, a payload changed under an old signature, a key named that did not
///   sign it, or an HS256 token signed with an EdDSA key's public half.
func fuzzTokens(_ input: UnsafeRawBufferPointer) {
    let header = String(decoding: input, as: UTF8.self)
    // What FrontDoorMiddleware takes from the header.
    guard let token = BearerToken.from(header: header) else { return }
    let principal: Principal? = blocking { try? await tokenKeys.verify(token) }
    if principal != nil, !tokenOracle.isGenuine(token) {
        preconditionFailure("a token that was not signed by the key it names was accepted: \(token)")
    }
}

/// Runs async work to completion from the fuzzer's synchronous entry point.
func blocking<T: Sendable>(_ work: @escaping @Sendable () async -> T) -> T {
    let done = DispatchSemaphore(value: 0)
    let result = ResultBox<T>()
    Task {
        result.value = await work()
        done.signal()
    }
    done.wait()
    return result.value!
}

/// Written by the task before `signal`, read after `wait`: the semaphore orders them.
final class ResultBox<T>: @unchecked Sendable {
    var value: T?
}
