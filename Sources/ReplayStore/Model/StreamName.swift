/// Stream names travel in text control lines and shell commands, so they are kept simple.
enum StreamName {
    static let maxLength = 200

    static func validate(_ name: String) throws(StoreError) {
        let valid = !name.isEmpty && name.utf8.count <= maxLength
            && name.utf8.allSatisfy { byte in
                (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A)
                    || (byte >= 0x61 && byte <= 0x7A) || byte == 0x2E || byte == 0x5F || byte == 0x2D
            }
        if !valid { throw .invalidStreamName(name) }
    }
}
