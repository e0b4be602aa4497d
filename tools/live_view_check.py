#!/usr/bin/env python3
"""Drives the live view (GET /) in a real headless Chromium against the real replayd.

The page tails a stream while events are published over the Unix socket: each shown with
its sequence number and time, JSON pretty-printed; the tail pauses, filters and starts from
a sequence number. The stream list shows rates as sparklines, a group's and a consumer's
lag, and a source's exit status and last line of stderr. The daemon is then restarted on
the same port and database: the list comes back live, and the tail resumes after its last
event (every event shown once, in order). Last, 1,000 streams: the first screen is a page
of 50, and a filter finds one. With --screenshot PATH, a picture of the page is saved.

Chromium is driven over its DevTools protocol on a pipe (--remote-debugging-pipe: JSON
messages separated by NUL bytes on fds 3 and 4), so nothing beyond the standard library is
needed. The page's DOM is read with Runtime.evaluate and polled until it shows what is
expected (readiness polling, with a generous deadline; no timing is asserted).

  python3 tools/live_view_check.py --replayd .build/debug/replayd [--chromium chromium] [--screenshot docs/live-view.png]
Exit status 0 and a JSON summary on success; 1 and the reason otherwise.
"""
import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from replay_client import ReplayConnection  # noqa: E402

STREAM = "view/demo"
DEADLINE = 60.0


class BrowserGone(RuntimeError):
    """Chromium exited under us."""


class DevTools:
    """The DevTools protocol over Chromium's pipe."""

    def __init__(self, chromium, user_data):
        to_browser_read, self.to_browser = os.pipe()
        self.from_browser, from_browser_write = os.pipe()

        def child_fds():
            # Through fresh copies: dup2 onto the same number would keep close-on-exec.
            read_copy, write_copy = os.dup(to_browser_read), os.dup(from_browser_write)
            os.dup2(read_copy, 3)
            os.dup2(write_copy, 4)

        self.process = subprocess.Popen(
            [chromium, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run", "--enable-logging=stderr",
             "--remote-debugging-pipe", "--user-data-dir=" + user_data, "about:blank"],
            # The pipe ends land on fds 3 and 4 in the child (dup2 makes them inheritable);
            # close_fds would close them again after preexec_fn.
            close_fds=False, preexec_fn=child_fds,
            stdout=subprocess.DEVNULL, stderr=open(user_data + ".log", "wb"))
        os.close(to_browser_read)
        os.close(from_browser_write)
        self.next_id = 0
        self.buffer = b""
        self.session = None

    def call(self, method, params=None, session=True):
        self.next_id += 1
        message = {"id": self.next_id, "method": method, "params": params or {}}
        if session and self.session:
            message["sessionId"] = self.session
        os.write(self.to_browser, json.dumps(message).encode() + b"\0")
        while True:
            while b"\0" not in self.buffer:
                chunk = os.read(self.from_browser, 65536)
                if not chunk:
                    raise BrowserGone(f"chromium closed its DevTools pipe (exit status {self.process.wait(10)})")
                self.buffer += chunk
            raw, self.buffer = self.buffer.split(b"\0", 1)
            reply = json.loads(raw)
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})

    def open(self, url):
        target = self.call("Target.createTarget", {"url": url}, session=False)["targetId"]
        self.session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True}, session=False)["sessionId"]

    def evaluate(self, expression):
        result = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True})
        return result.get("result", {}).get("value")

    def screenshot(self, path):
        import base64
        self.call("Emulation.setDeviceMetricsOverride", {"width": 1280, "height": 820, "deviceScaleFactor": 1, "mobile": False})
        time.sleep(1.5)  # a second snapshot, so the rates have two points (a picture, not an assertion)
        data = self.call("Page.captureScreenshot", {"format": "png"})["data"]
        with open(path, "wb") as out:
            out.write(base64.b64decode(data))

    def close(self):
        self.process.terminate()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_daemon(replayd, folder, port, log):
    daemon = subprocess.Popen(
        [replayd, "--socket", folder + "/replayd.sock", "--db", folder + "/replay.sqlite", "--http", f"127.0.0.1:{port}"],
        stdout=subprocess.DEVNULL, stderr=log)
    until(lambda: os.path.exists(folder + "/replayd.sock") and ping(folder), "replayd to start")
    return daemon


def ping(folder):
    try:
        with ReplayConnection(folder + "/replayd.sock") as connection:
            connection.ping()
        return True
    except OSError:
        return False


def until(condition, what):
    deadline = time.monotonic() + DEADLINE
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.05)
    raise RuntimeError(f"gave up waiting for {what}")


def http(port, method, path, body):
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=body, method=method,
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as response:
        return response.status


def publish(folder, *payloads, stream=STREAM):
    with ReplayConnection(folder + "/replayd.sock") as connection:
        connection.publish(stream, [p.encode() for p in payloads])


def replayctl(replayd, folder, *arguments):
    tool = os.path.join(os.path.dirname(replayd), "replayctl")
    subprocess.run([tool, *arguments, "--socket", folder + "/replayd.sock"], check=True, stdout=subprocess.DEVNULL)


def row_text(browser, stream, cell):
    return browser.evaluate(
        f"(() => {{ const c = document.querySelector('tr[data-stream=\"{stream}\"] td.{cell}'); return c ? c.textContent : null }})()")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--replayd", required=True)
    parser.add_argument("--chromium", default=shutil.which("chromium") or "chromium")
    parser.add_argument("--screenshot", help="save a picture of the page here")
    args = parser.parse_args()

    folder = tempfile.mkdtemp(prefix="replay-view-")
    log = open(folder + "/replayd.log", "wb")
    port = free_port()
    daemon = start_daemon(args.replayd, folder, port, log)
    browser = None
    try:
        publish(folder, "e1\n")
        browser = DevTools(args.chromium, folder + "/chromium")
        browser.open(f"http://127.0.0.1:{port}/?stream={STREAM}")
        shown = "JSON.stringify([...document.querySelectorAll('#tail li[data-seq]')].filter(li => !li.hidden).map(li => li.querySelector('.payload').textContent))"
        seqs = "JSON.stringify([...document.querySelectorAll('#tail li[data-seq]')].map(li => +li.dataset.seq))"

        def tail():
            return json.loads(browser.evaluate(shown) or "[]")

        until(lambda: tail() == ["e1"], "the page to show the first event (catch-up)")
        publish(folder, "e2\n")
        publish(folder, "e3\n")
        until(lambda: tail() == ["e1", "e2", "e3"], "the page to show e2 and e3 live")
        if json.loads(browser.evaluate(seqs)) != [1, 2, 3]:
            raise RuntimeError("each event shows its sequence number")
        timed = browser.evaluate("document.querySelector('#tail li .time').textContent")
        listed = until(lambda: browser.evaluate(
            "(() => { const row = document.querySelector('tr[data-stream=\"view/demo\"]');"
            " return row && row.querySelector('td.retained').textContent.startsWith('1–3') ? row.textContent : null })()"),
            "the stream list to show 3 events retained")
        # A scheduled event waits beside the retained ones.
        replayctl(args.replayd, folder, "send", STREAM, "--delay", "1h", "later")
        scheduled = until(lambda: browser.evaluate(
            "(() => { const s = document.querySelector('tr[data-stream=\"view/demo\"] td.retained .scheduled');"
            " return s && s.textContent.startsWith('1 scheduled, next 20') ? s.textContent : null })()"),
            "the stream list to show the scheduled event")
        # A compacted stream shows its compaction: the older event of the key goes.
        replayctl(args.replayd, folder, "create", "view/keys", "--compact")
        replayctl(args.replayd, folder, "send", "view/keys", "--key", "k", "old")
        replayctl(args.replayd, folder, "send", "view/keys", "--key", "k", "new")
        compacted = until(lambda: browser.evaluate(
            "(() => { const s = document.querySelector('tr[data-stream=\"view/keys\"] td.retained .compaction');"
            " return s && s.textContent.startsWith('compacted at ') && s.textContent.endsWith(', 1 removed') ? s.textContent : null })()"),
            "the stream list to show the compaction")
        # Publish rates over time: the sparkline gains points each second.
        until(lambda: browser.evaluate(
            "(() => { const p = document.querySelector('tr[data-stream=\"view/demo\"] td.published polyline');"
            " return p && p.getAttribute('points').split(' ').length >= 2 })()"), "a publish-rate sparkline")

        # Pause holds new events back; the filter hides what does not match; "from" restarts.
        browser.evaluate("document.getElementById('pause').click()")
        publish(folder, "e4\n")
        until(lambda: browser.evaluate("document.getElementById('held').textContent") == "1 new", "the pause to hold e4")
        if "e4" in tail():
            raise RuntimeError("a paused tail showed a new event")
        browser.evaluate("document.getElementById('pause').click()")
        until(lambda: tail() == ["e1", "e2", "e3", "e4"], "resuming to show e4")
        browser.evaluate("(() => { const f = document.getElementById('tail-filter'); f.value = 'e2'; f.oninput(); })()")
        filtered = tail()
        browser.evaluate("(() => { const f = document.getElementById('tail-filter'); f.value = ''; f.oninput(); })()")
        browser.evaluate("(() => { document.getElementById('tail-from').value = '3'; document.getElementById('tail-go').click(); })()")
        until(lambda: tail() == ["e3", "e4"], "the tail to start again from seq 3")
        browser.evaluate(f"tail('{STREAM}', 1)")
        until(lambda: tail() == ["e1", "e2", "e3", "e4"], "the tail from the start again")

        # JSON, pretty-printed and collapsible.
        publish(folder, '{"order":7,"items":["a","b"]}', stream="view/json")
        browser.evaluate("tail('view/json')")
        pretty = until(lambda: browser.evaluate(
            "(() => { const pre = document.querySelector('#tail li details pre'); return pre ? pre.textContent : null })()"),
            "the JSON event pretty-printed")

        # A consumer group and a durable consumer beside the stream, with their lag.
        with ReplayConnection(folder + "/replayd.sock") as member:
            jobs = member.group(STREAM, "workers", member="m1", max_pending=2)
            next(jobs)
            next(jobs)
            grouped = until(lambda: browser.evaluate(
                "(() => { const g = document.querySelector('tr[data-stream=\"view/demo\"] td.groups .group');"
                " return g && g.textContent.includes('2 pending') ? g.title : null })()"),
                "the stream list to show the group")
            jobs.close()
        with ReplayConnection(folder + "/replayd.sock") as reader:
            list(reader.subscribe(STREAM, durable="audit", count=1))  # acknowledges seq 1
        consumer = until(lambda: browser.evaluate(
            "(() => { const c = document.querySelector('tr[data-stream=\"view/demo\"] td.groups .reader[data-name=\"audit\"]');"
            " return c && c.textContent.includes('lag 3') ? c.textContent : null })()"), "the durable consumer's lag")

        # A source that fails: its state, exit status and last line of stderr.
        replayctl(args.replayd, folder, "create", "view/source", "--connect", "eager", "--source", "echo starting >&2; echo boom >&2; exit 3")
        source = until(lambda: (lambda t: t if t and "failed" in t and "boom" in t else None)(row_text(browser, "view/source", "source")),
                       "the source's failure in the list")

        # A Durable Streams subscription over the stream, in the list beside it.
        http(port, "PUT", "/v1/stream/view/wake", b"[]")
        http(port, "PUT", "/v1/stream/__ds/subscriptions/billing",
             json.dumps({"type": "pull-wake", "pattern": "view/*", "wake_stream": "view/wake"}).encode())
        http(port, "PUT", "/v1/stream/view/orders", None)
        http(port, "POST", "/v1/stream/view/orders", b'{"n": 1}')
        subscribed = until(lambda: browser.evaluate(
            "(() => { const row = document.querySelector('tr[data-subscription=\"billing\"]');"
            " return row && row.children[6].textContent === '1' && row.children[3].textContent === '1'"
            " ? [...row.children].map(td => td.textContent).join('|') : null })()"),
            "the subscription list to show the subscription and its lag")
        if args.screenshot:
            browser.evaluate(f"tail('{STREAM}')")
            until(lambda: len(tail()) == 4, "the tail for the picture")
            browser.screenshot(args.screenshot)
        browser.evaluate(f"tail('{STREAM}', 1)")
        until(lambda: tail() == ["e1", "e2", "e3", "e4"], "the tail before the restart")

        daemon.send_signal(signal.SIGTERM)
        daemon.wait(30)
        until(lambda: browser.evaluate("document.getElementById('status').textContent") == "reconnecting", "the page to see the daemon go")
        daemon = start_daemon(args.replayd, folder, port, log)
        publish(folder, "e5\n")
        until(lambda: "e5" in tail(), "the tail to resume after the restart and show e5")
        until(lambda: browser.evaluate("document.getElementById('status').textContent") == "live", "the list to be live again")
        final = tail()
        if final != ["e1", "e2", "e3", "e4", "e5"]:
            raise RuntimeError(f"the tail shows {final}, expected each of e1..e5 once, in order")

        # 1,000 streams: the first screen is a page of 50, and the filter finds one.
        with ReplayConnection(folder + "/replayd.sock") as connection:
            for n in range(1000):
                connection.publish(f"many/{n:04d}", [b"x"])
        browser.open(f"http://127.0.0.1:{port}/")
        counted = until(lambda: (lambda t: t if t and "of 10" in t else None)(browser.evaluate("document.getElementById('count').textContent")),
                        "the page of a thousand streams")
        rows = browser.evaluate("document.querySelectorAll('#streams tr').length")
        first_screen_ms = browser.evaluate("window.replayFirstScreen")
        browser.evaluate("(() => { const f = document.getElementById('filter'); f.value = 'many/0777'; f.oninput(); })()")
        found = until(lambda: browser.evaluate(
            "(() => { const r = [...document.querySelectorAll('#streams tr')]; return r.length === 1 ? r[0].dataset.stream : null })()"),
            "the filter to find one stream")
        print(json.dumps({"tail": final, "listed": listed, "time": timed, "filtered": filtered, "pretty": pretty, "group": grouped,
                          "consumer": consumer, "source": source, "subscription": subscribed, "page": counted, "rows": rows, "scheduled": scheduled, "compacted": compacted,
                          "first_screen_ms": first_screen_ms, "found": found, "port": port}))
        return 0
    except Exception as error:  # noqa: BLE001 - report any failure with the daemon's log
        log.flush()
        print(f"live view check failed: {error}", file=sys.stderr)
        print(open(folder + "/replayd.log", encoding="utf-8", errors="replace").read()[-3000:], file=sys.stderr)
        if os.path.exists(folder + "/chromium.log"):
            print("chromium's own log:", file=sys.stderr)
            print(open(folder + "/chromium.log", encoding="utf-8", errors="replace").read()[-3000:], file=sys.stderr)
        return 1
    finally:
        if browser:
            browser.close()
        daemon.send_signal(signal.SIGTERM)
        try:
            daemon.wait(30)
        except subprocess.TimeoutExpired:
            daemon.kill()
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
