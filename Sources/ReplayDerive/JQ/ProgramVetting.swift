/// Refuses, before compiling, the jq builtins that read anything but the program's input:
/// the clock, the environment, other inputs, files, the terminal. A derivation's outputs
/// must depend only on its inputs, or recomputing it (`--rebuild`, a crash's redo) would
/// give other outputs than the first run.
///
/// jq 1.6 has no API to list the functions a compiled program calls, so the program's
/// text is scanned: every name in call position, outside string literals and comments
/// (string interpolations `\(…)` are code and are scanned), is looked up. A field
/// (`.now`), an object key (`{now: 1}`, `{env}`) or a variable other than `$ENV` is not a
/// call. A program that defines a function of one of these names is refused too: that is
/// stricter than needed, and keeps the rule one sentence long.
public enum ProgramVetting {
    /// The refused names, and what each would read.
    public static let refused: [String: String] = [
        "now": "reads the clock",
        "localtime": "reads the time zone",
        "strflocaltime": "reads the time zone",
        "env": "reads the environment",
        "$ENV": "reads the environment",
        "input": "reads other inputs",
        "inputs": "reads other inputs",
        "input_filename": "reads the input's file name",
        "input_line_number": "reads the input's position",
        "debug": "writes to the daemon's standard error",
        "stderr": "writes to the daemon's standard error",
        "halt": "stops the interpreter",
        "halt_error": "stops the interpreter",
        "get_search_list": "reads the module search path",
        "get_prog_origin": "reads the program's origin",
        "get_jq_origin": "reads jq's installation path",
        "import": "reads a module file",
        "include": "reads a module file",
        "modulemeta": "reads module files",
    ]

    /// Why the program is refused, naming the builtin and where it is; `nil` if it reads
    /// nothing but its input.
    public static func refusal(of program: String) -> String? {
        var scanner = Scanner(Array(program.utf8))
        scanner.code(untilInterpolationEnd: false)
        guard let found = scanner.found else { return nil }
        let (line, column) = position(of: found.offset, in: Array(program.utf8))
        let reason = refused[found.name] ?? "is not allowed"
        return "the program uses '\(found.name)', which \(reason): a derivation's outputs depend only on its inputs (line \(line), column \(column))"
    }

    private static func position(of offset: Int, in bytes: [UInt8]) -> (Int, Int) {
        var line = 1
        var column = 1
        for byte in bytes[..<offset] {
            if byte == UInt8(ascii: "\n") {
                line += 1
                column = 1
            } else {
                column += 1
            }
        }
        return (line, column)
    }

    /// A hand-written scanner: jq's lexer is not exposed by libjq, and its grammar for
    /// strings (nested interpolations) is the only part that needs care.
    private struct Scanner {
        let bytes: [UInt8]
        var index = 0
        var found: (name: String, offset: Int)?
        /// The open brackets, to tell an object key (`{now: 1}`) from a call.
        var brackets: [UInt8] = []
        /// The last byte that was not a space, to tell a field (`.now`) and a key.
        var previous: UInt8 = 0

        init(_ bytes: [UInt8]) { self.bytes = bytes }

        /// Scans code until the end, or until the `)` that closes an interpolation.
        mutating func code(untilInterpolationEnd: Bool) {
            var depth = 0
            while index < bytes.count, found == nil {
                let byte = bytes[index]
                switch byte {
                case UInt8(ascii: "#"):
                    while index < bytes.count, bytes[index] != UInt8(ascii: "\n") { index += 1 }
                    continue
                case UInt8(ascii: "\""):
                    index += 1
                    string()
                    previous = UInt8(ascii: "\"")
                    continue
                case UInt8(ascii: "("):
                    depth += 1
                    brackets.append(byte)
                case UInt8(ascii: ")"):
                    if untilInterpolationEnd, depth == 0 {
                        index += 1
                        return
                    }
                    depth -= 1
                    _ = brackets.popLast()
                case UInt8(ascii: "{"), UInt8(ascii: "["):
                    brackets.append(byte)
                case UInt8(ascii: "}"), UInt8(ascii: "]"):
                    _ = brackets.popLast()
                case UInt8(ascii: "$"):
                    let start = index
                    index += 1
                    let name = "$" + identifier()
                    if name == "$ENV" {
                        found = (name, start)
                        return
                    }
                    previous = UInt8(ascii: "a")
                    continue
                default:
                    if Self.startsIdentifier(byte) {
                        let start = index
                        let name = identifier()
                        if ProgramVetting.refused[name] != nil, previous != UInt8(ascii: "."), !isObjectKey() {
                            found = (name, start)
                            return
                        }
                        previous = UInt8(ascii: "a")
                        continue
                    }
                }
                if !Self.isSpace(byte) { previous = byte }
                index += 1
            }
        }

        /// After the opening quote, to after the closing one; interpolations are code.
        mutating func string() {
            while index < bytes.count, found == nil {
                let byte = bytes[index]
                if byte == UInt8(ascii: "\"") {
                    index += 1
                    return
                }
                if byte == UInt8(ascii: "\\"), index + 1 < bytes.count {
                    if bytes[index + 1] == UInt8(ascii: "(") {
                        index += 2
                        let saved = (brackets, previous)
                        brackets = []
                        previous = UInt8(ascii: "(")
                        code(untilInterpolationEnd: true)
                        (brackets, previous) = saved
                        continue
                    }
                    index += 2
                    continue
                }
                index += 1
            }
        }

        /// A name, with its module prefix (`a::b`).
        mutating func identifier() -> String {
            let start = index
            while index < bytes.count,
                Self.continuesIdentifier(bytes[index])
                    || (bytes[index] == UInt8(ascii: ":") && index + 1 < bytes.count && bytes[index + 1] == UInt8(ascii: ":"))
            {
                index += bytes[index] == UInt8(ascii: ":") ? 2 : 1
            }
            return String(decoding: bytes[start..<index], as: UTF8.self)
        }

        /// Whether the name just read is an object key: inside `{`, after `{` or `,`, and
        /// followed by `:` (not `::`), `,` or `}`.
        func isObjectKey() -> Bool {
            guard brackets.last == UInt8(ascii: "{"), previous == UInt8(ascii: "{") || previous == UInt8(ascii: ",") else { return false }
            var next = index
            while next < bytes.count, Self.isSpace(bytes[next]) { next += 1 }
            guard next < bytes.count else { return false }
            switch bytes[next] {
            case UInt8(ascii: ":"): return next + 1 >= bytes.count || bytes[next + 1] != UInt8(ascii: ":")
            case UInt8(ascii: ","), UInt8(ascii: "}"): return true
            default: return false
            }
        }

        static func startsIdentifier(_ byte: UInt8) -> Bool {
            (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z")) || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z")) || byte == UInt8(ascii: "_")
        }

        static func continuesIdentifier(_ byte: UInt8) -> Bool {
            startsIdentifier(byte) || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9"))
        }

        static func isSpace(_ byte: UInt8) -> Bool {
            byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\n") || byte == UInt8(ascii: "\t") || byte == UInt8(ascii: "\r")
        }
    }
}
