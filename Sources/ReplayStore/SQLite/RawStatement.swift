import Foundation
import GRDB
import GRDBSQLite
import ReplayModel

/// A statement prepared (and cached) by GRDB, driven through SQLite's C API.
///
/// Only the statements that run once per event use this: the writer's INSERT, a consumer
/// group's pending rows, and the catch-up page SELECT. Going through `StatementArguments` boxes every value and
/// `Row` copies every blob; here values are bound in place and rows are read straight
/// from SQLite's buffers, which took the largest share of the writer's and readers' time.
/// Each use binds, steps to the end and resets, so GRDB finds the statement as it left it.
struct RawStatement {
    private let prepared: Statement
    private let statement: SQLiteStatement
    private let connection: SQLiteConnection?

    init(_ statement: Statement, in db: Database) {
        self.prepared = statement
        self.statement = statement.sqliteStatement
        self.connection = db.sqliteConnection
    }

    func bind(_ value: Int64, at index: Int32) {
        sqlite3_bind_int64(statement, index, value)
    }

    /// Binds `text` for the duration of the call (SQLite copies it: a short string).
    func bind(_ text: String, at index: Int32) {
        sqlite3_bind_text(statement, index, text, -1, Self.transient)
    }

    func bind(_ value: Int64?, at index: Int32) {
        guard let value else {
            sqlite3_bind_null(statement, index)
            return
        }
        sqlite3_bind_int64(statement, index, value)
    }

    func bind(_ text: String?, at index: Int32) {
        guard let text else {
            sqlite3_bind_null(statement, index)
            return
        }
        sqlite3_bind_text(statement, index, text, -1, Self.transient)
    }

    func bindNull(at index: Int32) {
        sqlite3_bind_null(statement, index)
    }

    /// Binds UTF-8 `text` in place: it must stay valid until the statement runs (`execute`).
    func bind(text: UnsafeRawBufferPointer, at index: Int32) {
        sqlite3_bind_text(statement, index, text.baseAddress?.assumingMemoryBound(to: CChar.self), Int32(text.count), nil)
    }

    /// Binds `blob` in place: it must stay valid until the statement runs (`execute`).
    func bind(blob: UnsafeRawBufferPointer, at index: Int32) {
        sqlite3_bind_blob(statement, index, blob.baseAddress ?? UnsafeRawPointer(bitPattern: 1), Int32(blob.count), nil)
    }

    /// Binds a chain hash in place, as its column holds it (NULL for `.zero`: no event
    /// yet), for the length of `body`, which runs the statement.
    func withBound<T>(hash: EventHash, at index: Int32, _ body: () throws -> T) rethrows -> T {
        guard hash != .zero else {
            bindNull(at: index)
            return try body()
        }
        return try hash.withUnsafeBytes { bytes in
            bind(blob: bytes, at: index)
            return try body()
        }
    }

    /// Runs a statement that returns no rows, with the values bound.
    func execute() throws {
        let code = sqlite3_step(statement)
        sqlite3_reset(statement)
        sqlite3_clear_bindings(statement)
        guard code == SQLITE_DONE else { throw error(code) }
    }

    /// Runs a statement that returns no rows, with `blob` bound in place at `index`.
    func execute(blob: some ContiguousBytes, at index: Int32) throws {
        let code = blob.withUnsafeBytes { bytes in
            // A zero-length blob still needs a non-null pointer to be a blob, not NULL.
            sqlite3_bind_blob(statement, index, bytes.baseAddress ?? UnsafeRawPointer(bitPattern: 1), Int32(bytes.count), nil)
            defer { sqlite3_clear_bindings(statement) }
            return sqlite3_step(statement)
        }
        sqlite3_reset(statement)
        guard code == SQLITE_DONE else { throw error(code) }
    }

    /// Steps through the rows, handing each to `row` while SQLite's buffers are valid;
    /// `row` returns `false` to stop early.
    func forEachRow(_ row: (RawRow) -> Bool) throws {
        defer {
            sqlite3_reset(statement)
            sqlite3_clear_bindings(statement)
        }
        while true {
            let code = sqlite3_step(statement)
            if code == SQLITE_DONE { return }
            guard code == SQLITE_ROW else { throw error(code) }
            guard row(RawRow(statement: statement)) else { return }
        }
    }

    private func error(_ code: Int32) -> DatabaseError {
        let message = connection.flatMap { sqlite3_errmsg($0) }.map { String(cString: $0) }
        // `Statement.sql` is costly (it trims the text with Foundation): only for errors.
        return DatabaseError(resultCode: ResultCode(rawValue: code), message: message, sql: prepared.sql)
    }

    private static let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
}

/// The current row of a `RawStatement`: valid only inside `forEachRow`'s closure.
struct RawRow {
    fileprivate let statement: SQLiteStatement

    /// The column's bytes, `nil` where it is NULL.
    func optionalBytes(_ column: Int32) -> UnsafeRawBufferPointer? {
        sqlite3_column_type(statement, column) == SQLITE_NULL ? nil : bytes(column)
    }

    func int64(_ column: Int32) -> Int64 {
        sqlite3_column_int64(statement, column)
    }

    /// The column's integer, `nil` where it is NULL.
    func optionalInt64(_ column: Int32) -> Int64? {
        sqlite3_column_type(statement, column) == SQLITE_NULL ? nil : sqlite3_column_int64(statement, column)
    }

    /// The column's bytes (text or blob), in SQLite's buffer.
    func bytes(_ column: Int32) -> UnsafeRawBufferPointer {
        // sqlite3_column_blob first, then _bytes: the order SQLite documents as safe.
        let pointer = sqlite3_column_blob(statement, column)
        let count = Int(sqlite3_column_bytes(statement, column))
        guard let pointer, count > 0 else { return UnsafeRawBufferPointer(start: nil, count: 0) }
        return UnsafeRawBufferPointer(start: pointer, count: count)
    }
}
