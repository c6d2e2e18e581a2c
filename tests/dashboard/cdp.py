"""Headless Chromium driven over its DevTools pipe (python3 standard library only).

Chromium started with --remote-debugging-pipe reads DevTools commands on fd 3 and writes replies
and events on fd 4, each a JSON message ended by a NUL byte. Browser.open() starts it, load() opens
a page and waits for its load event, evaluate() runs an expression in the page and returns its
value, screenshot() returns a PNG of the whole page.
"""

import base64
import json
import os
import shutil
import subprocess
import tempfile
import time

SKIP = 77  # ctest's SKIP_RETURN_CODE for the browser tests


def find_chromium():
    """The Chromium binary, or None: $CHROMIUM, then the Debian and upstream names."""
    for name in (os.environ.get("CHROMIUM", ""), "chromium", "chromium-browser", "google-chrome"):
        if name and shutil.which(name):
            return shutil.which(name)
    return None


class Browser:
    def __init__(self, binary, width=1400, height=1000):
        self.profile = tempfile.mkdtemp(prefix="gdn-chromium-")
        to_child_r, self.to_child = os.pipe()
        self.from_child, from_child_w = os.pipe()

        def wire_fds():  # the child's fd 3 reads our commands, its fd 4 carries the replies
            # Copies first: a pipe end may itself be fd 3 or 4 (and dup2 of an fd onto itself keeps
            # its close-on-exec flag).
            read_end, write_end = os.dup(to_child_r), os.dup(from_child_w)
            os.dup2(read_end, 3)
            os.dup2(write_end, 4)
            os.set_inheritable(3, True)
            os.set_inheritable(4, True)

        args = [binary, "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--no-first-run", "--no-default-browser-check", "--disable-extensions", "--mute-audio",
                "--remote-debugging-pipe", "--user-data-dir=" + self.profile,
                "--window-size={},{}".format(width, height), "about:blank"]
        # close_fds would close 3 and 4 after wire_fds ran; Python's own descriptors are close-on-exec.
        self.proc = subprocess.Popen(args, close_fds=False, preexec_fn=wire_fds,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        os.close(to_child_r)
        os.close(from_child_w)
        self.next_id = 0
        self.buffer = b""
        self.events = []
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.page_id = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        self.call("Page.enable", in_page=True)
        self.call("Runtime.enable", in_page=True)
        self.call("Emulation.setDeviceMetricsOverride",
                  {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False}, in_page=True)

    def _read_message(self, deadline):
        while b"\0" not in self.buffer:
            if time.monotonic() > deadline:
                raise TimeoutError("no reply from Chromium")
            chunk = os.read(self.from_child, 1 << 20)
            if not chunk:
                err = self.proc.stderr.read().decode(errors="replace") if self.proc.poll() is not None else ""
                raise RuntimeError("Chromium closed its DevTools pipe" + (": " + err[-2000:] if err else ""))
            self.buffer += chunk
        text, self.buffer = self.buffer.split(b"\0", 1)
        return json.loads(text)

    def call(self, method, params=None, in_page=False, timeout=60):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if in_page:
            msg["sessionId"] = self.page_id
        os.write(self.to_child, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            reply = self._read_message(deadline)
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise RuntimeError("{}: {}".format(method, reply["error"]))
                return reply.get("result", {})
            self.events.append(reply)

    def wait_event(self, method, timeout=60):
        deadline = time.monotonic() + timeout
        while True:
            for i, e in enumerate(self.events):
                if e.get("method") == method:
                    return self.events.pop(i)
            self.events.append(self._read_message(deadline))

    def load(self, path, timeout=60):
        self.events.clear()
        self.call("Page.navigate", {"url": "file://" + os.path.abspath(path)}, in_page=True)
        self.wait_event("Page.loadEventFired", timeout)

    def console_errors(self):
        return [e["params"] for e in self.events
                if e.get("method") == "Runtime.exceptionThrown"
                or (e.get("method") == "Runtime.consoleAPICalled" and e["params"].get("type") == "error")]

    def evaluate(self, expression):
        r = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": True},
                      in_page=True)
        if "exceptionDetails" in r:
            raise RuntimeError("page script failed: {}".format(r["exceptionDetails"]))
        return r["result"].get("value")

    def screenshot(self, path, full_page=True):
        params = {"format": "png"}
        if full_page:  # the whole document, not only the window
            size = self.call("Page.getLayoutMetrics", in_page=True)["cssContentSize"]
            params.update(captureBeyondViewport=True,
                          clip={"x": 0, "y": 0, "width": size["width"], "height": size["height"], "scale": 1})
        png = self.call("Page.captureScreenshot", params, in_page=True)
        with open(path, "wb") as f:
            f.write(base64.b64decode(png["data"]))

    def close(self):
        try:
            self.call("Browser.close", timeout=10)
        except Exception:  # noqa: BLE001 - closing a browser that is already gone
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self.to_child)
        os.close(self.from_child)
        shutil.rmtree(self.profile, ignore_errors=True)
