import Foundation
import ReplayDerive
import Testing

/// Programs refused at creation: those that do not compile (with where), and those that
/// read anything but their input (naming the builtin).
@Suite("jq programs")
struct ProgramTests {
    @Test(arguments: [
        ("now", "now"), (".t = now", "now"), ("env.HOME", "env"), ("$ENV.PATH", "$ENV"), ("input", "input"),
        ("[inputs]", "inputs"), ("debug", "debug"), (". as $x | stderr", "stderr"), ("input_filename", "input_filename"),
        ("\"at \\(now)\"", "now"), ("{a: (1 | localtime)}", "localtime"), ("import \"x\" as x; .", "import"),
        ("include \"x\"; .", "include"), ("halt_error", "halt_error"), ("input_line_number", "input_line_number"),
    ])
    func aBuiltinThatReadsTheWorldIsRefusedByName(program: String, builtin: String) {
        let error = #expect(throws: JQProgram.Failure.self) { try JQProgram(program) }
        #expect(error?.message.contains("uses '\(builtin)'") == true, "\(error?.message ?? "")")
    }

    /// A field, an object key, a string's text and a comment are not calls.
    @Test(arguments: [".now", "{now: 1}", "{env}", "\"now and env\"", ". # now", "{\"now\": .input}", "{a: 1, now: 2}", ".inputs[0]?"])
    func theSameWordsWhereTheyAreNotCallsAreAccepted(program: String) throws {
        _ = try JQProgram(program)
    }

    @Test func aProgramThatDoesNotCompileSaysWhere() {
        let error = #expect(throws: JQProgram.Failure.self) { try JQProgram(".a | | .b") }
        #expect(error?.message.contains("syntax error") == true, "\(error?.message ?? "")")
        #expect(error?.message.contains("line 1") == true, "\(error?.message ?? "")")
        let unknown = #expect(throws: JQProgram.Failure.self) { try JQProgram("nosuchfunction(1)") }
        #expect(unknown?.message.contains("nosuchfunction/1 is not defined") == true, "\(unknown?.message ?? "")")
    }

    @Test func aRuntimeErrorCarriesJqsMessage() throws {
        let program = try JQProgram(".a + 1")
        let error = #expect(throws: JQProgram.Failure.self) { try program.run(json: Data(#"{"a":"x"}"#.utf8)) }
        #expect(error?.message.contains("cannot be added") == true, "\(error?.message ?? "")")
        // The interpreter goes on after an error.
        #expect(try program.run(json: Data(#"{"a":1}"#.utf8)) == [Data("2".utf8)])
    }

    @Test func aNonJSONEventIsARuntimeErrorThatSaysSo() throws {
        let program = try JQProgram(".")
        let error = #expect(throws: JQProgram.Failure.self) { try program.run(json: Data("hello".utf8)) }
        #expect(error?.message.hasPrefix("the event is not JSON") == true, "\(error?.message ?? "")")
    }
}
