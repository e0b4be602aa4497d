import Hummingbird

/// `GET /`: the live view, one self-contained page (no CDN, no build step) built into the
/// binary, written for the browser's own APIs. A page of streams at a time (50, filtered
/// by name, for daemons with thousands), live over SSE (`/v1/streams?live=sse`, every
/// second): publish and delivery rates as sparklines over the last five minutes (from the
/// changes of `last_seq` and `delivered`), the retained window, subscribers, lag bars for
/// durable consumers and groups (with pending and dead letters), and each source's state,
/// restarts, exit status and last line of stderr. The subscriptions beside them. A tail of
/// one stream (`/v1/tail/<name>`: seq, time, payload; JSON pretty-printed and collapsible)
/// that can be paused, filtered and started from a sequence number. Both reconnect after
/// a daemon restart, the tail from the sequence after the last one shown. With token
/// rules, the page takes its token from `#token=…` once (kept for the tab's session) and
/// sends it with every request, so it shows what that token may read.
enum LiveViewPage {
    static func respond() -> Response {
        var fields = HTTPFields()
        fields[.contentType] = "text/html; charset=utf-8"
        fields[.cacheControl] = "no-cache"
        fields[.contentSecurityPolicy] = "default-src 'self'; script-src 'unsafe-inline'; style-src 'unsafe-inline'"
        return Response(status: .ok, headers: fields, body: ResponseBody(byteBuffer: ByteBuffer(string: html)))
    }

    // A raw string: the page's backslashes are its own.
    static let html = #"""
        <!doctype html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <title>replay</title>
        <style>
          :root { --ink: #1d2330; --muted: #6b7280; --line: #e5e7eb; --accent: #2563eb; --warn: #b45309; --bad: #b91c1c; --ok: #15803d; }
          body { font: 14px/1.4 system-ui, sans-serif; margin: 1.25rem 1.5rem; color: var(--ink); }
          header { display: flex; gap: 1rem; align-items: baseline; flex-wrap: wrap; margin-bottom: .75rem; }
          h1 { font-size: 1.2rem; margin: 0; }
          h2 { font-size: 1rem; margin: 1.25rem 0 .5rem; }
          #status { font-size: .85rem; padding: .1rem .5rem; border-radius: 1rem; background: #fef3c7; color: var(--warn); }
          #status.live { background: #dcfce7; color: var(--ok); }
          input, button { font: inherit; padding: .15rem .4rem; }
          table { border-collapse: collapse; width: 100%; }
          th, td { text-align: left; padding: .3rem .6rem; border-bottom: 1px solid var(--line); vertical-align: top; }
          th { font-weight: 600; color: var(--muted); font-size: .8rem; text-transform: uppercase; letter-spacing: .03em; }
          td.n { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
          .rate { display: flex; gap: .4rem; align-items: center; justify-content: flex-end; font-variant-numeric: tabular-nums; white-space: nowrap; }
          svg.spark { width: 96px; height: 22px; }
          svg.spark polyline { fill: none; stroke: var(--accent); stroke-width: 1.5; }
          svg.spark.delivered polyline { stroke: var(--ok); }
          a { color: var(--accent); cursor: pointer; }
          .muted { color: var(--muted); font-size: .85rem; }
          .reader { display: grid; grid-template-columns: 9rem 80px auto; gap: .4rem; align-items: center; font-size: .85rem; }
          .bar { height: 8px; background: var(--line); border-radius: 4px; overflow: hidden; }
          .bar > div { height: 100%; background: var(--warn); }
          .source.failed, .state.failed, .derivation.stopped { color: var(--bad); }
          .state.closed { color: var(--muted); }
          #tail { font: 13px/1.5 ui-monospace, monospace; list-style: none; padding: 0; margin: 0; }
          #tail li { display: grid; grid-template-columns: 5rem 7.5rem 1fr; gap: .75rem; border-bottom: 1px solid #f3f4f6; }
          #tail li[hidden] { display: none; }
          #tail .seq { color: var(--muted); text-align: right; }
          #tail .time { color: var(--muted); }
          #tail .payload { white-space: pre-wrap; word-break: break-all; }
          #tail pre { margin: 0; }
          .tools { display: flex; gap: .5rem; align-items: center; flex-wrap: wrap; margin-bottom: .5rem; }
        </style>
        </head>
        <body>
        <header>
          <h1>replay</h1><span id="status">connecting</span>
          <input id="filter" placeholder="filter streams" size="18">
          <button id="prev">‹</button><span id="count" class="muted"></span><button id="next">›</button>
        </header>
        <table>
          <thead><tr><th>stream</th><th>published/s</th><th>delivered/s</th><th>retained</th><th>subs</th><th>readers: lag</th><th>source</th><th>state</th></tr></thead>
          <tbody id="streams"></tbody>
        </table>
        <section id="subscriptions-section" hidden>
          <h2>Durable Streams subscriptions</h2>
          <table>
            <thead><tr><th>subscription</th><th>type</th><th>follows</th><th>generation</th><th>holder</th><th>status</th><th>lag</th></tr></thead>
            <tbody id="subscriptions"></tbody>
          </table>
        </section>
        <h2 id="tail-title">Pick a stream to tail it.</h2>
        <div class="tools">
          <button id="pause">pause</button><span id="held" class="muted"></span>
          <input id="tail-filter" placeholder="show events containing" size="22">
          <label class="muted">from seq <input id="tail-from" size="8" inputmode="numeric"></label><button id="tail-go">go</button>
        </div>
        <ul id="tail"></ul>
        <script>
        "use strict";
        // One page, no build step, no CDN: a machine running replayd may be offline. Live data
        // comes over SSE read with fetch (an EventSource cannot send a token): the stream list
        // every second from /v1/streams?live=sse, a stream's events from /v1/tail/<name>.
        // Both reconnect after a restart; the tail from the sequence after the last one shown.
        const $ = (id) => document.getElementById(id);
        const PAGE = 50, HISTORY = 300, TAIL_ROWS = 500;
        const token = (() => {
          const hash = new URLSearchParams(location.hash.slice(1)).get("token");
          if (hash) { sessionStorage.setItem("replay-token", hash); history.replaceState(null, "", location.pathname + location.search); }
          return sessionStorage.getItem("replay-token");
        })();
        const headers = token ? { Authorization: "Bearer " + token } : {};
        const path = (name) => name.split("/").map(encodeURIComponent).join("/");
        const el = (tag, cls, text) => { const e = document.createElement(tag); if (cls) e.className = cls; if (text !== undefined) e.textContent = text; return e; };

        // Reads an SSE response with fetch until it ends or `abort` fires; calls on(type, data).
        async function events(url, on, abort) {
          const response = await fetch(url, { headers, cache: "no-store", signal: abort.signal });
          if (!response.ok) throw new Error(url + ": " + response.status);
          const reader = response.body.getReader();
          const decoder = new TextDecoder();
          let text = "";
          for (;;) {
            const { value, done } = await reader.read();
            if (done) return;
            text += decoder.decode(value, { stream: true });
            let end;
            while ((end = text.indexOf("\n\n")) >= 0) {
              const block = text.slice(0, end);
              text = text.slice(end + 2);
              let type = "message", data = [];
              for (const line of block.split("\n")) {
                if (line.startsWith("event:")) type = line.slice(6).trim();
                else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
              }
              on(type, data.join("\n"));
            }
          }
        }

        // The stream list: one page of it, live.
        let offset = 0, filter = "", listAbort = null, firstShown = false;
        const history_ = new Map();   // name -> [{t, seq, delivered}]

        function rates(name, s, now) {
          const h = history_.get(name) || [];
          h.push({ t: now, seq: s.last_seq, delivered: s.delivered });
          while (h.length > HISTORY) h.shift();
          history_.set(name, h);
          const per = (key) => h.slice(1).map((p, i) => Math.max(0, (p[key] - h[i][key]) / Math.max(0.001, (p.t - h[i].t) / 1000)));
          return { published: per("seq"), delivered: per("delivered") };
        }

        function spark(values, cls) {
          const svg = document.createElementNS("http://www.w3.org/2000/svg", "svg");
          svg.setAttribute("class", "spark " + cls);
          svg.setAttribute("viewBox", "0 0 96 22");
          const line = document.createElementNS("http://www.w3.org/2000/svg", "polyline");
          const shown = values.slice(-96), top = Math.max(1, ...shown);
          line.setAttribute("points", shown.map((v, i) => `${i + 96 - shown.length},${21 - (v / top) * 20}`).join(" "));
          svg.appendChild(line);
          return svg;
        }

        function rateCell(values, cls) {
          const td = el("td", cls);
          const box = el("div", "rate");
          const now = values.length ? values[values.length - 1] : 0;
          box.append(spark(values, cls), el("span", "value", now >= 10 ? Math.round(now).toString() : now.toFixed(1)));
          td.appendChild(box);
          return td;
        }

        function bytes(n) {
          return n < 1024 ? n + " B" : n < 1 << 20 ? (n / 1024).toFixed(1) + " KiB" : (n / (1 << 20)).toFixed(1) + " MiB";
        }

        // A durable consumer or a group: its lag as a bar against the retained events.
        function reader(label, lag, retained, extra) {
          const row = el("div", "reader");
          row.dataset.name = label;
          const bar = el("div", "bar"), fill = el("div");
          fill.style.width = Math.min(100, retained ? (lag / retained) * 100 : 0) + "%";
          bar.appendChild(fill);
          row.append(el("span", "", label), bar, el("span", "muted", `lag ${lag}` + (extra ? ", " + extra : "")));
          return row;
        }

        // A derived stream's cell: what it reads, where it stands, how fast, and why it stopped.
        function derivationCell(d) {
          const td = el("td", "source derivation " + d.status);
          td.append(el("div", "", `derived from ${d.inputs.join(", ")}: ${d.status}`));
          td.append(el("div", "muted", `lag ${d.lag}, ${Math.round(d.rate)}/s, ${d.processed} computed` + (d.errors ? `, ${d.errors} errors` : "")));
          if (d.error) td.append(el("div", "muted stderr", d.error));
          return td;
        }

        function sourceCell(source, derivation) {
          if (derivation) return derivationCell(derivation);
          const td = el("td", "source");
          if (!source) return td;
          td.classList.add(source.state.replace(/ /g, "-"));
          td.append(el("div", "", `${source.state}` + (source.pid ? ` (pid ${source.pid})` : "") + `, ${Math.max(0, source.starts - 1)} restarts`));
          if (source.reason) {
            // "exited with status 3; stderr:\n...": the status, and the last line it wrote.
            const [status, ...rest] = source.reason.split("; stderr:\n");
            const lines = rest.join("\n").split("\n").filter((l) => l.trim());
            td.append(el("div", "muted exit", status));
            if (lines.length) td.append(el("div", "muted stderr", lines[lines.length - 1]));
          }
          return td;
        }

        function showStreams(snapshot) {
          const now = Date.now();
          const rows = snapshot.streams.map((s) => {
            const tr = el("tr");
            tr.dataset.stream = s.name;
            const name = el("td", "name"), link = el("a", "", s.name);
            link.onclick = () => tail(s.name);
            name.appendChild(link);
            const r = rates(s.name, s, now);
            const readers = el("td", "groups");
            for (const c of s.consumers) readers.appendChild(reader(c.name, c.lag, s.count));
            for (const g of s.groups) {
              const row = reader(g.name, g.lag, s.count, `${g.pending} pending` + (g.dead_lettered ? `, ${g.dead_lettered} dead` : ""));
              row.classList.add("group");
              row.title = `${g.name}: ${g.members.length} members, ${g.pending} pending, lag ${g.lag}`;
              readers.appendChild(row);
            }
            const retained = el("td", "n retained", s.count ? `${s.first_seq}–${s.last_seq}` : "empty");
            retained.appendChild(el("div", "muted", `${s.count} ${s.count === 1 ? "event" : "events"}, ${bytes(s.bytes)}`));
            // Scheduled events waiting for their time, and when the next falls due.
            if (s.scheduled) retained.appendChild(el("div", "muted scheduled", `${s.scheduled} scheduled, next ${s.next_due}`));
            // A compacted stream: its last pass, and what compaction removed in all.
            if (s.compaction) retained.appendChild(el("div", "muted compaction",
              `compacted ${s.compaction.last_run ? "at " + s.compaction.last_run.slice(11, 19) : "not yet"}, ${s.compaction.removed} removed`));
            tr.append(name, rateCell(r.published, "published"), rateCell(r.delivered, "delivered"), retained,
              el("td", "n subscribers", s.subscribers), readers, sourceCell(s.source, s.derivation), el("td", "state " + s.state, s.state));
            return tr;
          });
          $("streams").replaceChildren(...rows);
          const last = Math.min(snapshot.total, offset + PAGE);
          $("count").textContent = snapshot.total ? `${offset + 1}–${last} of ${snapshot.total} streams` : "no streams";
          $("prev").disabled = offset === 0;
          $("next").disabled = last >= snapshot.total;
          if (!firstShown) { firstShown = true; window.replayFirstScreen = performance.now(); }
        }

        async function follow() {
          if (listAbort) listAbort.abort();
          const abort = new AbortController();
          listAbort = abort;
          const query = `/v1/streams?live=sse&limit=${PAGE}&offset=${offset}` + (filter ? "&q=" + encodeURIComponent(filter) : "");
          while (!abort.signal.aborted) {
            try {
              await events(query, (type, data) => {
                if (type !== "streams") return;
                $("status").textContent = "live";
                $("status").className = "live";
                showStreams(JSON.parse(data));
              }, abort);
            } catch (error) {
              if (abort.signal.aborted) return;
            }
            $("status").textContent = "reconnecting";
            $("status").className = "";
            await new Promise((r) => setTimeout(r, 1000));
          }
        }

        $("filter").oninput = () => { filter = $("filter").value.trim(); offset = 0; follow(); };
        $("prev").onclick = () => { offset = Math.max(0, offset - PAGE); follow(); };
        $("next").onclick = () => { offset += PAGE; follow(); };

        // Each subscription: what it follows, its wake's generation and holder, and its lag.
        async function refreshSubscriptions() {
          try {
            const response = await fetch("/v1/stream/__ds/subscriptions", { headers, cache: "no-store" });
            if (!response.ok) return;
            const rows = (await response.json()).map((s) => {
              const tr = el("tr");
              tr.dataset.subscription = s.id;
              const follows = [s.pattern].concat(s.streams.filter((l) => l.link_type === "explicit").map((l) => l.path)).filter(Boolean);
              const lag = s.streams.reduce((sum, l) => sum + (l.lag || 0), 0);
              tr.append(el("td", "", s.id), el("td", "", s.type), el("td", "", follows.join(", ")), el("td", "n", s.generation),
                el("td", "", s.holder || "-"), el("td", s.status === "failed" ? "failed" : "", s.status), el("td", "n", lag));
              return tr;
            });
            $("subscriptions").replaceChildren(...rows);
            $("subscriptions-section").hidden = rows.length === 0;
          } catch {
            // The stream list says whether the daemon is reachable.
          }
        }

        // The tail: seq, time and payload; JSON pretty-printed and collapsible.
        let tailed = null, tailAbort = null, nextSeq = null, paused = false, held = [];

        function tail(name, from) {
          if (tailAbort) tailAbort.abort();
          tailed = name;
          nextSeq = from || null;
          held = [];
          $("held").textContent = "";
          $("tail").replaceChildren();
          $("tail-title").textContent = "Tail of " + name;
          history.replaceState(null, "", "?stream=" + encodeURIComponent(name));
          const abort = new AbortController();
          tailAbort = abort;
          (async () => {
            while (!abort.signal.aborted) {
              try {
                await events(`/v1/tail/${path(name)}` + (nextSeq ? `?from=${nextSeq}` : ""), (type, data) => {
                  if (abort.signal.aborted) return;
                  if (type === "events") {
                    const list = JSON.parse(data);
                    nextSeq = list[list.length - 1].seq + 1;
                    if (paused) { held.push(...list); $("held").textContent = `${held.length} new`; } else list.forEach(show);
                  } else if (type === "gap") {
                    const gap = JSON.parse(data);
                    $("tail").appendChild(el("li", "muted", `… events ${gap.from}–${gap.through} are no longer retained`));
                  } else if (type === "control") {
                    const control = JSON.parse(data);
                    if (control.closed) $("tail-title").textContent = "Tail of " + name + " (closed)";
                  }
                }, abort);
              } catch {
                if (abort.signal.aborted) return;
              }
              await new Promise((r) => setTimeout(r, 1000));
            }
          })();
        }

        function show(event) {
          const li = el("li");
          li.dataset.seq = event.seq;
          const time = new Date(event.time);
          const payload = el("span", "payload");
          const text = event.text !== undefined ? event.text.replace(/\n$/, "") : "base64 " + event.base64;
          let parsed = null;
          try { if (/^\s*[\[{]/.test(text)) parsed = JSON.parse(text); } catch { parsed = null; }
          if (parsed !== null) {
            const details = el("details"), summary = el("summary", "", text.length > 120 ? text.slice(0, 117) + "…" : text);
            details.append(summary, el("pre", "", JSON.stringify(parsed, null, 2)));
            payload.appendChild(details);
          } else {
            payload.textContent = text;
          }
          li.append(el("span", "seq", event.seq), el("span", "time", isNaN(time) ? event.time : time.toLocaleTimeString([], { hour12: false }) + "." + String(time.getMilliseconds()).padStart(3, "0")), payload);
          li.hidden = !matches(li);
          $("tail").appendChild(li);
          while ($("tail").children.length > TAIL_ROWS) $("tail").firstChild.remove();
        }

        const matches = (li) => { const f = $("tail-filter").value; return !f || li.querySelector(".payload").textContent.includes(f); };
        $("tail-filter").oninput = () => { for (const li of $("tail").children) if (li.dataset.seq) li.hidden = !matches(li); };
        $("pause").onclick = () => {
          paused = !paused;
          $("pause").textContent = paused ? "resume" : "pause";
          if (!paused) { held.forEach(show); held = []; $("held").textContent = ""; }
        };
        $("tail-go").onclick = () => { const from = parseInt($("tail-from").value, 10); if (tailed && from > 0) tail(tailed, from); };

        follow();
        refreshSubscriptions();
        setInterval(refreshSubscriptions, 2000);
        const wanted = new URLSearchParams(location.search).get("stream");
        if (wanted) tail(wanted);
        </script>
        </body>
        </html>
        """#
}
