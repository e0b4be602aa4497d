import ReplayModel
import Testing

/// The glob rules of the Durable Streams protocol: `*` is one segment, `**` zero or more.
@Suite("StreamPattern")
struct StreamPatternTests {
    func pattern(_ text: String) throws -> StreamPattern {
        try StreamPattern.parse(text).get()
    }

    @Test(arguments: [
        ("orders/*", "orders/eu", true),
        ("orders/*", "orders", false),
        ("orders/*", "orders/eu/paris", false),
        ("orders/*/paris", "orders/eu/paris", true),
        ("orders/*/paris", "orders/eu/lyon", false),
        ("orders/**", "orders", true),
        ("orders/**", "orders/eu", true),
        ("orders/**", "orders/eu/paris", true),
        ("orders/**", "ordersx/eu", false),
        ("**/paris", "paris", true),
        ("**/paris", "orders/eu/paris", true),
        ("**/paris", "orders/eu/paris/x", false),
        ("**", "anything/at/all", true),
        ("*", "top", true),
        ("*", "top/level", false),
        ("a/**/b/**/c", "a/b/c", true),
        ("a/**/b/**/c", "a/x/b/y/z/c", true),
        ("a/**/b/**/c", "a/x/c", false),
        ("a/**/**/c", "a/c", true),
    ])
    func matchesWholeSegments(_ text: String, _ name: String, _ expected: Bool) throws {
        #expect(try pattern(text).matches(name) == expected)
    }

    @Test func aTargetWithAStarIsAPatternAndNoNameHasOne() {
        #expect(StreamPattern.isPattern("orders/*"))
        #expect(!StreamPattern.isPattern("orders/eu"))
        #expect(!StreamName.isValid("orders/*"))
    }

    @Test(arguments: [
        ("ord*", "whole segments"),
        ("orders/e*", "whole segments"),
        ("orders//*", "empty"),
        ("../*", "'..'"),
        ("orders/*x*", "whole segments"),
        ("", "1 to"),
        ("a b/*", "space"),
    ])
    func refusesWhatCouldMatchNothing(_ text: String, _ reason: String) {
        guard case .failure(let error) = StreamPattern.parse(text) else {
            Issue.record("'\(text)' was accepted")
            return
        }
        #expect(error.description.contains(reason), "\(error)")
    }
}
