import Foundation

/// Every connection is a file descriptor: raise the soft limit to the hard one at start
/// (many systems default to 1024), as Go's runtime and nginx do.
enum FileLimits {
    /// Returns the soft limit in force afterwards.
    @discardableResult
    static func raise() -> UInt64 {
        var limit = rlimit()
        guard getrlimit(RLIMIT_NOFILE_VALUE, &limit) == 0 else { return 0 }
        if limit.rlim_cur < limit.rlim_max {
            var raised = limit
            raised.rlim_cur = limit.rlim_max
            if setrlimit(RLIMIT_NOFILE_VALUE, &raised) == 0 { return UInt64(raised.rlim_cur) }
        }
        return UInt64(limit.rlim_cur)
    }

    /// The soft limit in force.
    static var current: UInt64 {
        var limit = rlimit()
        guard getrlimit(RLIMIT_NOFILE_VALUE, &limit) == 0 else { return 0 }
        return UInt64(limit.rlim_cur)
    }

    // Glibc imports RLIMIT_NOFILE as an enum case of __rlimit_resource.
    private static var RLIMIT_NOFILE_VALUE: __rlimit_resource_t {
        __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
    }
}
