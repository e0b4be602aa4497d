// A child process for the store's crash test: appends events with many in flight and
// prints "<seq> <payload>" for each one the store acknowledged, flushing every line, until
// it has done `count` or is killed. The test SIGKILLs it mid-stream, reopens the database
// and checks that every line it printed is stored.
//
//   replay-store-probe DB STREAM COUNT
import Dispatch
import Foundation
import ReplayStore

let arguments = CommandLine.arguments
guard arguments.count == 4, let count = Int(arguments[3]) else {
    FileHandle.standardError.write(Data("usage: replay-store-probe DB STREAM COUNT\n".utf8))
    exit(2)
}
let store: EventStore
do {
    store = try EventStore(path: arguments[1], options: .init(autoCreate: .unlimited))
} catch {
    FileHandle.standardError.write(Data("\(error)\n".utf8))
    exit(1)
}
let stream = arguments[2]
let inFlight = DispatchSemaphore(value: 256)
let finished = DispatchGroup()
for n in 0..<count {
    inFlight.wait()
    finished.enter()
    let payload = "event-\(n)"
    store.append(Data(payload.utf8), to: stream) { result in
        switch result {
        case .success(let event):
            // One write per acknowledgement: nothing reported sits in a buffer at the kill.
            FileHandle.standardOutput.write(Data("\(event.sequence) \(payload)\n".utf8))
        case .failure(let error): FileHandle.standardError.write(Data("append failed: \(error)\n".utf8))
        }
        inFlight.signal()
        finished.leave()
    }
}
finished.wait()
store.close()
