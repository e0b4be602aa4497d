import Foundation
import NIOCore
import NIOSSL
import ReplaySync

/// The HTTP door's certificate and key (`--tls-cert`, `--tls-key`), read from their PEM
/// files at start and again on `reload` (SIGHUP). Every TLS handshake takes the pair held
/// now (swift-nio-ssl's context callback), so a certificate renewed on disk is served to
/// the next connection while those already open go on with theirs: nothing is dropped.
/// `--tls-client-ca` makes it mutual: a client must present a certificate that CA signed.
public final class TLSCertificates: Sendable {
    public struct Paths: Sendable {
        public var certificate: String
        public var key: String
        public var clientCA: String?

        public init(certificate: String, key: String, clientCA: String? = nil) {
            self.certificate = certificate
            self.key = key
            self.clientCA = clientCA
        }
    }

    public let paths: Paths
    private let current: Locked<(chain: [NIOSSLCertificate], key: NIOSSLPrivateKey)>

    /// Reads the files; a missing or malformed one is an error that names it.
    public init(_ paths: Paths) throws {
        self.paths = paths
        current = Locked(try Self.read(paths))
        if let ca = paths.clientCA { _ = try Self.certificates(ca, what: "--tls-client-ca") }
    }

    /// Reads the files again. On an error the pair held stays, and the error says why.
    public func reload() throws {
        let fresh = try Self.read(paths)
        current.withLock { $0 = fresh }
    }

    /// The server's TLS configuration: TLS 1.2 at least, the pair held now for each
    /// handshake, and client certificates required when a client CA is given.
    func configuration() throws -> TLSConfiguration {
        let pair = current.withLock { $0 }
        var configuration = TLSConfiguration.makeServerConfiguration(
            certificateChain: pair.chain.map { .certificate($0) }, privateKey: .privateKey(pair.key))
        configuration.minimumTLSVersion = .tlsv12
        if let ca = paths.clientCA {
            configuration.certificateVerification = .noHostnameVerification
            configuration.trustRoots = .certificates(try Self.certificates(ca, what: "--tls-client-ca"))
        }
        let current = self.current
        configuration.sslContextCallback = { _, promise in
            let pair = current.withLock { $0 }
            var override = NIOSSLContextConfigurationOverride()
            override.certificateChain = pair.chain.map { .certificate($0) }
            override.privateKey = .privateKey(pair.key)
            promise.succeed(override)
        }
        return configuration
    }

    private static func read(_ paths: Paths) throws -> (chain: [NIOSSLCertificate], key: NIOSSLPrivateKey) {
        let chain = try certificates(paths.certificate, what: "--tls-cert")
        do {
            return (chain, try NIOSSLPrivateKey(file: paths.key, format: .pem))
        } catch {
            throw TLSFileError(path: paths.key, what: "--tls-key", reason: "\(error)")
        }
    }

    private static func certificates(_ path: String, what: String) throws -> [NIOSSLCertificate] {
        let chain: [NIOSSLCertificate]
        do {
            chain = try NIOSSLCertificate.fromPEMFile(path)
        } catch {
            throw TLSFileError(path: path, what: what, reason: "\(error)")
        }
        guard !chain.isEmpty else { throw TLSFileError(path: path, what: what, reason: "it holds no PEM certificate") }
        return chain
    }
}

/// A certificate or key file that cannot be used, in words that name it.
public struct TLSFileError: Error, CustomStringConvertible {
    public let path: String
    public let what: String
    public let reason: String

    public var description: String { "\(what) \(path): \(reason)" }
}
