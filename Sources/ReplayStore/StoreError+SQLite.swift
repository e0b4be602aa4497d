import GRDB

extension StoreError {
    /// Maps an error thrown while talking to SQLite to the store's vocabulary.
    init(_ error: any Error, path: String = "the database") {
        if let error = error as? StoreError {
            self = error
            return
        }
        guard let error = error as? DatabaseError else {
            self = .sqlite(code: -1, message: "\(error)")
            return
        }
        switch error.resultCode {
        case .SQLITE_FULL: self = .storageFull
        case .SQLITE_NOTADB: self = .notADatabase(path: path)
        case .SQLITE_READONLY, .SQLITE_PERM: self = .readOnly(path: path)
        case .SQLITE_CANTOPEN: self = .readOnly(path: path)
        default: self = .sqlite(code: error.resultCode.rawValue, message: error.message ?? "\(error)")
        }
    }
}
