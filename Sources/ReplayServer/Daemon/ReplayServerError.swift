/// Why the daemon could not start or go on: a message for its operator.
struct ReplayServerError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
