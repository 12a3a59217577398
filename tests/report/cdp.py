"""Headless Chromium over the DevTools protocol, python3 stdlib only.

Chromium speaks the protocol over a pipe (--remote-debugging-pipe: it reads commands
from fd 3 and writes replies and events to fd 4, each message NUL-terminated), so no
websocket client and nothing from PyPI is needed. A page is opened in a fresh target
with Runtime, Log, Network and Page enabled; every console error, uncaught exception,
failed load and request that leaves the page's own file is collected while it loads.
"""

import base64
import fcntl
import json
import os
import shutil
import subprocess
import tempfile
import time


def find_chromium():
    """The real binary: Debian's /usr/bin/chromium is a shell wrapper that adds flags."""
    for path in ("/usr/lib/chromium/chromium", shutil.which("chromium") or "", shutil.which("chromium-browser") or ""):
        if path and os.access(path, os.X_OK):
            return path
    return None


class ProtocolError(Exception):
    pass


class Browser:
    def __init__(self, binary, timeout_s=60):
        self.timeout_s = timeout_s
        self.profile = tempfile.mkdtemp(prefix="railbench-chromium-")
        to_child_r, self.to_child = os.pipe()
        self.from_child, from_child_w = os.pipe()

        # The protocol's fixed descriptors: 3 = commands in, 4 = replies out. Copied above 4
        # first, so neither dup2 in the child overwrites the other's source.
        hi_r = fcntl.fcntl(to_child_r, fcntl.F_DUPFD, 5)
        hi_w = fcntl.fcntl(from_child_w, fcntl.F_DUPFD, 5)

        def wire_fds():
            os.dup2(hi_r, 3)
            os.dup2(hi_w, 4)

        args = [
            binary, "--headless", "--remote-debugging-pipe", "--user-data-dir=" + self.profile,
            "--no-first-run", "--no-default-browser-check", "--disable-gpu", "--disable-extensions",
            "--disable-dev-shm-usage", "--hide-scrollbars", "about:blank",
        ]
        if os.geteuid() == 0:
            args.insert(1, "--no-sandbox")  # Chromium refuses to run as root with its sandbox
        self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL, preexec_fn=wire_fds, pass_fds=(3, 4))
        for fd in (to_child_r, from_child_w, hi_r, hi_w):
            os.close(fd)
        self.buf = b""
        self.next_id = 0
        self.events = []

    def close(self):
        try:
            self.send("Browser.close", timeout_s=5)
        except Exception:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for fd in (self.to_child, self.from_child):
            try:
                os.close(fd)
            except OSError:
                pass
        shutil.rmtree(self.profile, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _read_message(self, deadline):
        import select
        while b"\0" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise ProtocolError("chromium did not answer in time")
            ready, _, _ = select.select([self.from_child], [], [], left)
            if not ready:
                continue
            chunk = os.read(self.from_child, 1 << 20)
            if not chunk:
                raise ProtocolError("chromium closed the protocol pipe (exit code %s)" % self.proc.poll())
            self.buf += chunk
        raw, self.buf = self.buf.split(b"\0", 1)
        return json.loads(raw)

    def send(self, method, params=None, session=None, timeout_s=None):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        data = json.dumps(msg).encode() + b"\0"
        while data:
            data = data[os.write(self.to_child, data):]
        deadline = time.monotonic() + (timeout_s or self.timeout_s)
        while True:
            reply = self._read_message(deadline)
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise ProtocolError("%s: %s" % (method, reply["error"]))
                return reply.get("result", {})
            self.events.append(reply)

    def wait_event(self, method, session, timeout_s):
        deadline = time.monotonic() + timeout_s
        while True:
            for i, e in enumerate(self.events):
                if e.get("method") == method and e.get("sessionId") == session:
                    return self.events.pop(i)
            self.events.append(self._read_message(deadline))

    def drain(self, seconds):
        """Collect events for a little while (late console messages, image decodes)."""
        deadline = time.monotonic() + seconds
        try:
            while True:
                self.events.append(self._read_message(deadline))
        except ProtocolError as e:
            if "in time" not in str(e):
                raise

    def open(self, path, width=1400, height=900):
        """Loads a local file; returns a Page with the problems seen while it loaded."""
        url = "file://" + os.path.abspath(path)
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Runtime", "Log", "Network", "Page"):
            self.send(domain + ".enable", session=session)
        self.send("Emulation.setDeviceMetricsOverride",
                  {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False}, session=session)
        self.events = [e for e in self.events if e.get("sessionId") != session]
        start = time.monotonic()
        self.send("Page.navigate", {"url": url}, session=session)
        self.wait_event("Page.loadEventFired", session, self.timeout_s)
        load_s = time.monotonic() - start
        self.drain(0.5)
        return Page(self, session, url, load_s)


class Page:
    def __init__(self, browser, session, url, load_s):
        self.browser = browser
        self.session = session
        self.url = url
        self.load_s = load_s

    def problems(self):
        """Console errors, exceptions, failed loads and any request beyond the page itself."""
        out = []
        for e in self.browser.events:
            if e.get("sessionId") != self.session:
                continue
            m, p = e.get("method"), e.get("params", {})
            if m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
                args = " ".join(str(a.get("value", a.get("description", ""))) for a in p.get("args", []))
                out.append("console.%s: %s" % (p["type"], args))
            elif m == "Runtime.exceptionThrown":
                d = p.get("exceptionDetails", {})
                out.append("uncaught exception: %s" % d.get("exception", {}).get("description", d.get("text")))
            elif m == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
                entry = p["entry"]
                out.append("log error (%s): %s %s" % (entry.get("source"), entry.get("text"), entry.get("url", "")))
            elif m == "Network.loadingFailed":
                out.append("failed load: %s (%s)" % (p.get("requestId"), p.get("errorText")))
            elif m == "Network.requestWillBeSent":
                req = p.get("request", {}).get("url", "")
                if req != self.url and not req.startswith("data:"):
                    out.append("request beyond the page: %s" % req)
        return out

    def evaluate(self, expression):
        r = self.browser.send("Runtime.evaluate", {"expression": expression, "returnByValue": True},
                              session=self.session)
        if "exceptionDetails" in r:
            raise ProtocolError("evaluate %r: %s" % (expression, r["exceptionDetails"]))
        return r["result"].get("value")

    def screenshot(self, path, max_height=None):
        """A PNG of the whole page (or its top max_height pixels)."""
        width = self.evaluate("document.documentElement.scrollWidth")
        height = self.evaluate("document.documentElement.scrollHeight")
        if max_height:
            height = min(height, max_height)
        shot = self.browser.send("Page.captureScreenshot", {
            "format": "png", "captureBeyondViewport": True,
            "clip": {"x": 0, "y": 0, "width": width, "height": height, "scale": 1}}, session=self.session)
        with open(path, "wb") as f:
            f.write(base64.b64decode(shot["data"]))
