/// The token of an `Authorization: Bearer <token>` header, the one place it is read (the
/// HTTP door, and the token fuzzer). The scheme's name is case-insensitive (RFC 9110
/// §11.1), so `bearer` is accepted too; an empty token is none.
public enum BearerToken {
    public static func from(header: String) -> String? {
        let scheme = "bearer "
        guard header.utf8.count > scheme.utf8.count, header.prefix(scheme.count).lowercased() == scheme else { return nil }
        return String(header.dropFirst(scheme.count))
    }
}
