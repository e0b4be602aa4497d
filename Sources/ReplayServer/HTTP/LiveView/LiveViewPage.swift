import Hummingbird

/// `GET /`: the live view, one self-contained page (no CDN, no build step) built into the
/// binary. It lists the streams and the Durable Streams subscriptions (polling
/// `/v1/streams` and `/v1/stream/__ds/subscriptions` each second, so it notices a daemon
/// that went away and came back) and tails one stream over SSE. The tail keeps the last
/// `streamNextOffset` it was given and, when the connection drops (a daemon restart),
/// reconnects from there itself: the browser's own EventSource retry would reopen the
/// first URL and replay what was already shown.
enum LiveViewPage {
    static func respond() -> Response {
        var fields = HTTPFields()
        fields[.contentType] = "text/html; charset=utf-8"
        fields[.cacheControl] = "no-cache"
        fields[.contentSecurityPolicy] = "default-src 'self'; script-src 'unsafe-inline'; style-src 'unsafe-inline'"
        return Response(status: .ok, headers: fields, body: ResponseBody(byteBuffer: ByteBuffer(string: html)))
    }

    static let html = """
        <!doctype html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <title>replay</title>
        <style>
          body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5rem; color: #222; }
          h1 { font-size: 1.2rem; margin: 0 0 1rem; }
          table { border-collapse: collapse; margin-bottom: 1.5rem; }
          th, td { text-align: left; padding: .25rem .75rem; border-bottom: 1px solid #ddd; }
          td.n { text-align: right; font-variant-numeric: tabular-nums; }
          a { color: #0645ad; cursor: pointer; }
          #status { color: #666; margin-left: .5rem; font-size: .9rem; }
          #tail { font: 13px/1.5 ui-monospace, monospace; list-style: none; padding: 0; margin: 0; }
          #tail li { border-bottom: 1px solid #f0f0f0; white-space: pre-wrap; }
          .closed { color: #777; } .failed { color: #b00; }
        </style>
        </head>
        <body>
        <h1>replay <span id="status">connecting</span></h1>
        <table>
          <thead><tr><th>stream</th><th>events</th><th>last seq</th><th>bytes</th><th>subscribers</th><th>state</th><th>groups</th></tr></thead>
          <tbody id="streams"></tbody>
        </table>
        <table id="subscriptions-table" hidden>
          <thead><tr><th>subscription</th><th>type</th><th>follows</th><th>generation</th><th>holder</th><th>status</th><th>lag</th></tr></thead>
          <tbody id="subscriptions"></tbody>
        </table>
        <h2 id="tail-title" style="font-size:1rem">Pick a stream to tail it.</h2>
        <ul id="tail"></ul>
        <script>
        "use strict";
        const $ = (id) => document.getElementById(id);
        const cell = (text, cls) => { const td = document.createElement("td"); td.textContent = text; if (cls) td.className = cls; return td; };

        async function refreshStreams() {
          try {
            const response = await fetch("/v1/streams", { cache: "no-store" });
            const streams = await response.json();
            const rows = streams.map((s) => {
              const tr = document.createElement("tr");
              tr.dataset.stream = s.name;
              const name = document.createElement("td");
              const link = document.createElement("a");
              link.textContent = s.name;
              link.onclick = () => tail(s.name);
              name.appendChild(link);
              // Each consumer group: its members, events pending (handed out, not acknowledged),
              // lag (not handed out yet) and dead letters.
              const groups = s.groups.map((g) =>
                `${g.name}: ${g.members} members, ${g.pending} pending, lag ${g.lag}` + (g.dead_lettered ? `, ${g.dead_lettered} dead` : ""));
              const groupCell = cell(groups.join("; "));
              groupCell.className = "groups";
              tr.append(name, cell(s.events, "n"), cell(s.last_seq, "n"), cell(s.bytes, "n"), cell(s.subscribers, "n"), cell(s.state, s.state), groupCell);
              return tr;
            });
            $("streams").replaceChildren(...rows);
            $("status").textContent = "live";
          } catch {
            $("status").textContent = "daemon unreachable, retrying";
          }
        }

        // Each subscription: what it follows, its wake's generation and holder, and its lag
        // (events past its positions, summed over its linked streams).
        async function refreshSubscriptions() {
          try {
            const response = await fetch("/v1/stream/__ds/subscriptions", { cache: "no-store" });
            if (!response.ok) return;
            const subscriptions = await response.json();
            const rows = subscriptions.map((s) => {
              const tr = document.createElement("tr");
              tr.dataset.subscription = s.id;
              const follows = [s.pattern].concat(s.streams.filter((l) => l.link_type === "explicit").map((l) => l.path)).filter(Boolean);
              const lag = s.streams.reduce((sum, l) => sum + (l.lag || 0), 0);
              tr.append(cell(s.id), cell(s.type), cell(follows.join(", ")), cell(s.generation, "n"), cell(s.holder || "-"),
                cell(s.status, s.status === "failed" ? "failed" : ""), cell(lag, "n"));
              return tr;
            });
            $("subscriptions").replaceChildren(...rows);
            $("subscriptions-table").hidden = rows.length === 0;
          } catch {
            // The stream list says the daemon is unreachable.
          }
        }

        let source = null;
        let tailed = null;
        let offset = "-1";
        let retry = null;

        function tail(name) {
          if (source) source.close();
          clearTimeout(retry);
          tailed = name;
          offset = "-1";
          $("tail").replaceChildren();
          $("tail-title").textContent = "Tail of " + name;
          history.replaceState(null, "", "?stream=" + encodeURIComponent(name));
          connect();
        }

        async function connect() {
          const name = tailed;
          const path = "/v1/stream/" + name.split("/").map(encodeURIComponent).join("/");
          // SSE carries text and JSON as text, anything else as base64 (an EventSource
          // cannot see the response's headers, so the content type comes from HEAD).
          let binary = false;
          try {
            const head = await fetch(path, { method: "HEAD", cache: "no-store" });
            const type = (head.headers.get("content-type") || "").toLowerCase();
            binary = !(type.startsWith("text/") || type.startsWith("application/json"));
          } catch {
            if (name === tailed) retry = setTimeout(connect, 500);
            return;
          }
          if (name !== tailed) return;
          const events = new EventSource(path + "?offset=" + encodeURIComponent(offset) + "&live=sse");
          source = events;
          events.addEventListener("data", (message) => {
            if (name !== tailed) return;
            show(binary ? new TextDecoder().decode(Uint8Array.from(atob(message.data.replace(/\\s/g, "")), (c) => c.charCodeAt(0))) : message.data);
          });
          events.addEventListener("control", (message) => {
            const control = JSON.parse(message.data);
            offset = control.streamNextOffset;
            $("tail").dataset.offset = offset;
            if (control.streamClosed) {
              events.close();
              $("tail-title").textContent = "Tail of " + name + " (closed)";
            }
          });
          events.onerror = () => {
            // Reconnect from the last offset received, never from the first URL.
            events.close();
            if (name !== tailed) return;
            retry = setTimeout(connect, 500);
          };
        }

        function show(data) {
          let lines;
          try {
            const parsed = JSON.parse(data);
            lines = Array.isArray(parsed) ? parsed.map((m) => JSON.stringify(m)) : [data];
          } catch {
            lines = data.split("\\n").filter((line) => line.length > 0);
          }
          for (const line of lines) {
            const li = document.createElement("li");
            li.textContent = line;
            $("tail").appendChild(li);
          }
        }

        refreshStreams();
        refreshSubscriptions();
        setInterval(() => { refreshStreams(); refreshSubscriptions(); }, 1000);
        const wanted = new URLSearchParams(location.search).get("stream");
        if (wanted) tail(wanted);
        </script>
        </body>
        </html>
        """
}
