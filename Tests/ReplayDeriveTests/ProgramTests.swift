import Foundation
import ReplayDerive
import Synchronization
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

/// A program that loops or grows without bound on one event is cut off by its budget and
/// counts as a runtime error; the interpreter goes on with the next event. What is asserted
/// is the outcome (the error, and the next event's result), never how long it took.
@Suite("jq budgets")
struct BudgetTests {
    @Test(arguments: ["def f: f; f", "last(range(1e18))", "until(false; .)", "[limit(1; repeat(.) | select(false))]"])
    func aProgramThatLoopsIsCutOffByTheTimeLimit(program: String) throws {
        try Self.expectCutOff(
            program, JQProgram.Budget(timeLimit: .milliseconds(50), memoryLimit: 1 << 40),
            saying: "the program ran past its time limit of 0.05 s on one event")
    }

    @Test(arguments: ["[range(1e10) | tostring]", "[range(1e10)]", "def f: [f]; f", "reduce range(1e10) as $i ({}; .[\"k\\($i)\"] = $i)"])
    func aProgramThatGrowsWithoutBoundIsCutOffByTheMemoryLimit(program: String) throws {
        try Self.expectCutOff(
            program, JQProgram.Budget(timeLimit: .seconds(600), memoryLimit: 64 << 20),
            saying: "the program grew past its memory limit of 64 MB on one event")
    }

    /// `program` on the event `1` fails with `message`; the event `2` then passes through.
    static func expectCutOff(_ program: String, _ budget: JQProgram.Budget, saying message: String) throws {
        let cut = try JQProgram("if . == 1 then (\(program)) else . end", budget: budget)
        let error = #expect(throws: JQProgram.Failure.self) { try cut.run(json: Data("1".utf8)) }
        #expect(error?.message == message, "\(error?.message ?? "")")
        #expect(try cut.run(json: Data("2".utf8)) == [Data("2".utf8)])
    }

    /// A program's memory is what jq allocates for it on its own thread: another thread
    /// taking far more than its limit while it runs costs it nothing. (Measured as the
    /// process's heap, the 512 MB taken beside it passed its 8 MB.)
    @Test func otherThreadsAllocationsDoNotCountAgainstAProgram() async throws {
        let program = try JQProgram("reduce range(.) as $i (0; . + $i)", budget: JQProgram.Budget(timeLimit: .seconds(600), memoryLimit: 8 << 20))
        let running = Running()
        let hog = Thread {
            var held: [UnsafeMutableRawPointer] = []
            while running.flag.load(ordering: .relaxed) {
                if held.count == 8 { held.removeFirst().deallocate() }
                let block = UnsafeMutableRawPointer.allocate(byteCount: 64 << 20, alignment: 64)
                block.initializeMemory(as: UInt8.self, repeating: 1, count: 64 << 20)
                held.append(block)
            }
            for block in held { block.deallocate() }
        }
        hog.start()
        defer { running.flag.store(false, ordering: .relaxed) }
        for _ in 0..<3 {
            #expect(try program.run(json: Data("2000000".utf8)) == [Data("1999999000000".utf8)])
        }
    }

    private final class Running: Sendable {
        let flag = Atomic(true)
    }

    /// Halting one program leaves another, run on another thread meanwhile, alone.
    @Test func aBreachHaltsOnlyItsOwnProgram() async throws {
        let budget = JQProgram.Budget(timeLimit: .milliseconds(50), memoryLimit: 1 << 40)
        let sums = try await withThrowingTaskGroup(of: Int.self) { group in
            group.addTask {
                let looping = try JQProgram("def f: f; f", budget: budget)
                #expect(throws: JQProgram.Failure.self) { try looping.run(json: Data("1".utf8)) }
                return 0
            }
            group.addTask {
                let counting = try JQProgram("[range(.)] | add", budget: JQProgram.Budget())
                var total = 0
                for _ in 0..<2_000 { total += Int(String(decoding: try counting.run(json: Data("100".utf8))[0], as: UTF8.self))! }
                return total
            }
            return try await group.reduce(0, +)
        }
        #expect(sums == 2_000 * 4_950)
    }
}
