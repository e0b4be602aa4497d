import Dispatch
import HTTPTypes
import Hummingbird
import Metrics
import ReplaySync

/// The HTTP door's request figures, by route, method and status: the same names and
/// labels as hummingbird's `MetricsMiddleware` (`hb_requests`,
/// `http_server_request_duration`, `hb_request_errors`, `http_server_active_requests`),
/// recorded by the front door's plain functions rather than by one more middleware. One
/// difference: the router answers the errors its routes throw, so `hb_request_errors`
/// counts the answers of status 400 and above (`error.type` is the status), where
/// hummingbird's middleware, inside the router, saw them thrown.
///
/// Why not that middleware: each one the router chains, and its own frame, take a few
/// async frames of every request's task, and a parked SSE reader's connection task keeps
/// the slabs of the deepest request it served for as long as it lives (`FrontDoorResponder`
/// says how deep that was). Here the recording is two plain calls around the router's
/// answer.
final class RequestMetrics: Sendable {
    /// A request under way: counted as active from `start` until its body is written.
    struct Started {
        let method: HTTPRequest.Method
        let nanoseconds: UInt64
        let active: Meter
    }

    fileprivate struct Route: Hashable {
        let path: String
        let method: HTTPRequest.Method
        let status: HTTPResponse.Status
    }

    fileprivate struct Figures {
        let requests: Counter
        let duration: Timer
        /// Only for a status of 400 and above: a success has no error series.
        let errors: Counter?
    }

    /// What a connection's handler last looked up in the tables below, kept by that handler
    /// so that its next request of the same kind skips their lock and lookup: a framed
    /// connection's requests are all POSTs, their answers nearly all of one status.
    struct Memo {
        fileprivate var active: (method: HTTPRequest.Method, meter: Meter)?
        fileprivate var answered: (route: Route, figures: Figures)?

        init() {}
    }

    private let active = Locked<[HTTPRequest.Method: Meter]>([:])
    private let routes = Locked<[Route: Figures]>([:])

    func start(_ method: HTTPRequest.Method) -> Started {
        started(method, meter: meter(method))
    }

    /// A request under way, its meter from `memo` if it is of the method last started there.
    func start(_ method: HTTPRequest.Method, memo: inout Memo) -> Started {
        if memo.active?.method != method { memo.active = (method, meter(method)) }
        return started(method, meter: memo.active!.meter)
    }

    private func started(_ method: HTTPRequest.Method, meter: Meter) -> Started {
        meter.increment()
        return Started(method: method, nanoseconds: DispatchTime.now().uptimeNanoseconds, active: meter)
    }

    private func meter(_ method: HTTPRequest.Method) -> Meter {
        active.withLock { meters in
            if let meter = meters[method] { return meter }
            let meter = Meter(label: "http.server.active_requests", dimensions: [("http.request.method", method.description)])
            meters[method] = meter
            return meter
        }
    }

    /// An answer: counted and timed once its body is written (an SSE response's when it ends).
    func answered(_ response: inout Response, _ started: Started, route: String?) {
        let figures = figures(Route(path: route ?? "Unknown", method: started.method, status: response.status))
        let body = response.body
        response.body = ResponseBody(contentLength: body.contentLength) { writer in
            defer { Self.record(figures, started) }
            try await body.write(writer)
        }
    }

    /// An answer written without hummingbird (`InlineAppendHandler`): counted and timed now.
    func answered(_ status: HTTPResponse.Status, _ started: Started, route: String) {
        Self.record(figures(Route(path: route, method: started.method, status: status)), started)
    }

    /// The same, its figures from `memo` if they are of the route, method and status last
    /// answered there.
    func answered(_ status: HTTPResponse.Status, _ started: Started, route: String, memo: inout Memo) {
        let route = Route(path: route, method: started.method, status: status)
        if memo.answered?.route != route { memo.answered = (route, figures(route)) }
        Self.record(memo.answered!.figures, started)
    }

    private static func record(_ figures: Figures, _ started: Started) {
        figures.requests.increment()
        figures.errors?.increment()
        figures.duration.recordNanoseconds(DispatchTime.now().uptimeNanoseconds - started.nanoseconds)
        started.active.decrement()
    }

    /// An error no one answered: the router and the front door answer every
    /// `HTTPResponseError`, so what reaches here hummingbird answers with 500, counted as a
    /// request and an error of that status.
    func failed(_ started: Started, route: String?) {
        let figures = figures(Route(path: route ?? "NotFound", method: started.method, status: .internalServerError))
        figures.requests.increment()
        figures.errors?.increment()
        started.active.decrement()
    }

    private func figures(_ route: Route) -> Figures {
        routes.withLock { routes in
            if let figures = routes[route] { return figures }
            let labels = [("http.route", route.path), ("http.request.method", route.method.description)]
            let status = route.status.code.description
            let figures = Figures(
                requests: Counter(label: "hb.requests", dimensions: labels + [("http.response.status_code", status)]),
                duration: Timer(
                    label: "http.server.request.duration", dimensions: labels + [("http.response.status_code", status)],
                    preferredDisplayUnit: .seconds),
                errors: route.status.code >= 400 ? Counter(label: "hb.request.errors", dimensions: labels + [("error.type", status)]) : nil)
            routes[route] = figures
            return figures
        }
    }
}
