import ReplayModel
import Testing

/// The one rule of a stream's name, segment by segment.
@Suite("Stream names")
struct StreamNameTests {
    @Test func aNameIsRefusedForAnEmptyDotOrDotDotSegmentAndNothingElseOfItsShape() {
        for good in ["a", "orders/eu", "a.b", "...", ".a", "a..b", "a/.../b", "v1.2/x_y-z"] {
            #expect(StreamName.problem(with: good) == nil, "\(good)")
        }
        let refused: [(String, String)] = [
            ("a//b", "empty segment"), ("/a", "empty segment"), ("a/", "empty segment"), ("/", "empty segment"),
            (".", "'.' segment"), ("..", "'..' segment"), ("a/./b", "'.' segment"), ("x/..", "'..' segment"), ("../x", "'..' segment"),
        ]
        for (bad, why) in refused {
            #expect(StreamName.problem(with: bad)?.contains(why) == true, "\(bad): \(StreamName.problem(with: bad) ?? "taken")")
        }
    }
}
