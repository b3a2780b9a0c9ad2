#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# t_html_browser: the HTML report as a user gets it, in a real browser. Headless Chromium
# (Debian's `chromium`) is driven over the DevTools protocol on a pipe (--remote-debugging-pipe:
# JSON messages ending in NUL, commands on fd 3, answers on fd 4; the standard library only) for
# three pages: (a) the report of a real numpy run, made here (examples/train_numpy.py under the
# built libndmem.so with the interpreter that has numpy), (b) the stored trace with Python
# frames (python.trace), and (c) the report of a real torch run (examples/torch_leak.py, where an
# interpreter imports torch; skipped, said, where none does). At 1366x900 and 390x844 (a narrow window; mobile emulation's zoom-to-fit
# would move elements off the coordinates they report) each page must: load with no exception and no
# console error; show a non-blank first screen (png_pixels.py); hold the flame graphs and the
# stacked timeline; on a click (Input.dispatchMouseEvent at the frame's place on screen) of a
# frame named in the trace, show that frame's site stack in the panel (the frames' text known
# from the trace); on a pointer move over the timeline, show the cursor and its readout; at 1366
# px, be no wider than the window (document.documentElement.scrollWidth). With
# scripts disabled before navigation the flame graph's SVG and the tables are still there and
# the script's tools stay hidden. NDMEM_HTML_SHOT_DIR=DIR keeps the screenshots. Exit 77 (skip)
# without chromium, or after (b) passes when no interpreter has numpy.
# usage: t_html_browser.py NDMEMREPORT PYTHON_TRACE PNG_PIXELS LIBNDMEM TRAIN_PY FIND_PYTHON TMPDIR
import base64
import glob
import json
import os
import select
import shutil
import subprocess
import sys
import time

report, py_trace, pixels, lib, train, find_python, tmp = sys.argv[1:8]
browser = shutil.which("chromium") or shutil.which("chromium-browser")
if not browser:
    print("SKIP: no chromium on PATH (Debian: apt-get install chromium)")
    sys.exit(77)
os.makedirs(tmp, exist_ok=True)
shots = os.environ.get("NDMEM_HTML_SHOT_DIR") or os.path.join(tmp, "shots")
os.makedirs(shots, exist_ok=True)
fails = []
SIZES = [(1366, 900), (390, 844)]


def want(cond, what):
    if not cond:
        fails.append(what)
    return cond


class Browser:
    """Chromium with its DevTools protocol on fds 3 (commands) and 4 (answers and events)."""

    def __init__(self):
        cmd_r, self.cmd_w = os.pipe()
        self.res_r, res_w = os.pipe()

        def fds():  # in the child: the pipe's ends where Chromium wants them, inheritable
            a, b = os.dup(cmd_r), os.dup(res_w)  # above 4: the pipes' own fds hold 3 and 4
            os.dup2(a, 3)
            os.dup2(b, 4)

        self.proc = subprocess.Popen(
            [browser, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--remote-debugging-pipe", "--user-data-dir=" + os.path.join(tmp, "profile"),
             "--hide-scrollbars", "about:blank"],
            preexec_fn=fds, close_fds=False, stdout=subprocess.DEVNULL,
            stderr=open(os.path.join(tmp, "chromium.err"), "wb"))
        os.close(cmd_r)
        os.close(res_w)
        self.buf, self.next_id, self.events = b"", 0, []

    def _read(self, deadline):
        while b"\0" not in self.buf:
            left = deadline - time.time()
            if left <= 0 or not select.select([self.res_r], [], [], left)[0]:
                raise TimeoutError("no answer from chromium")
            chunk = os.read(self.res_r, 1 << 20)
            if not chunk:
                raise EOFError("chromium closed its pipe")
            self.buf += chunk
        msg, self.buf = self.buf.split(b"\0", 1)
        return json.loads(msg)

    def send(self, method, params=None, session=None, timeout=30):
        self.next_id += 1
        m = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            m["sessionId"] = session
        os.write(self.cmd_w, json.dumps(m).encode() + b"\0")
        deadline = time.time() + timeout
        while True:
            r = self._read(deadline)
            if r.get("id") == self.next_id:
                if "error" in r:
                    raise RuntimeError(f"{method}: {r['error']}")
                return r.get("result", {})
            self.events.append(r)

    def wait(self, method, session, timeout=30):
        deadline = time.time() + timeout
        while True:
            for i, e in enumerate(self.events):
                if e.get("method") == method and e.get("sessionId") == session:
                    return self.events.pop(i)
            self.events.append(self._read(deadline))

    def close(self):
        try:
            self.send("Browser.close", timeout=10)
        except Exception:  # noqa: BLE001 (it may be gone already)
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def errors_of(b, session):
    """The console errors and exceptions the page gave so far."""
    out = []
    for e in b.events:
        if e.get("sessionId") != session:
            continue
        m, p = e.get("method"), e.get("params", {})
        if m == "Runtime.exceptionThrown":
            out.append("exception: " + json.dumps(p.get("exceptionDetails", {}))[:300])
        elif m == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
            out.append("log error: " + p["entry"].get("text", "")[:300])
        elif m == "Runtime.consoleAPICalled" and p.get("type") == "error":
            out.append("console.error: " + json.dumps(p.get("args", []))[:300])
    return out


def open_page(b, url, w, h, scripts=True):
    target = b.send("Target.createTarget", {"url": "about:blank"})["targetId"]
    s = b.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
    for domain in ("Page", "Runtime", "Log", "DOM"):
        b.send(domain + ".enable", session=s)
    b.send("Emulation.setDeviceMetricsOverride",
           {"width": w, "height": h, "deviceScaleFactor": 1, "mobile": False}, session=s)
    if not scripts:
        b.send("Emulation.setScriptExecutionDisabled", {"value": True}, session=s)
    b.send("Page.navigate", {"url": url}, session=s)
    b.wait("Page.loadEventFired", s)
    return target, s


def js(b, s, expr):
    r = b.send("Runtime.evaluate", {"expression": expr, "returnByValue": True,
                                    "awaitPromise": True}, session=s)
    if "exceptionDetails" in r:
        raise RuntimeError(f"evaluate {expr[:80]!r}: {r['exceptionDetails']}")
    return r["result"].get("value")


def shot(b, s, name):
    png = base64.b64decode(b.send("Page.captureScreenshot", {"format": "png"}, session=s)["data"])
    path = os.path.join(shots, name + ".png")
    with open(path, "wb") as f:
        f.write(png)
    r = subprocess.run([sys.executable, pixels, path], capture_output=True, text=True)
    want(r.returncode == 0, f"{name}: blank screenshot: {r.stdout.strip()}")
    return path


# The centre of an element's part inside the viewport, after scrolling it into view (the flame
# graph scrolls sideways on a narrow window): [x, y], or null when none of it shows.
CENTRE = """(function (el) {
  el.scrollIntoView({block: "center", inline: "center"});
  var r = el.getBoundingClientRect(), W = innerWidth, H = innerHeight;
  var x0 = Math.max(r.left, 0), x1 = Math.min(r.right, W), y0 = Math.max(r.top, 0),
      y1 = Math.min(r.bottom, H);
  return x1 > x0 && y1 > y0 ? [(x0 + x1) / 2, (y0 + y1) / 2] : null;
})(%s)"""


def click(b, s, x, y):
    for t in ("mouseMoved", "mousePressed", "mouseReleased"):
        b.send("Input.dispatchMouseEvent", {"type": t, "x": x, "y": y, "button": "left",
                                            "clickCount": 1}, session=s)


def check_page(b, name, html, frame_js, stack_texts):
    """One page at both sizes with scripts on, then once with scripts off."""
    url = "file://" + os.path.abspath(html)
    for w, h in SIZES:
        tag = f"{name}-{w}x{h}"
        target, s = open_page(b, url, w, h)
        shot(b, s, tag)
        # The page never scrolls sideways at a laptop's width (a wide table scrolls in its box)
        if w == 1366:
            sw = js(b, s, "document.documentElement.scrollWidth")
            want(sw is not None and sw <= w, f"{tag}: the page is {sw} px wide: it scrolls sideways")
        n = js(b, s, "document.querySelectorAll('svg.flamesvg g.fr').length")
        want(n and n > 1, f"{tag}: no flame graph frames in the DOM ({n})")
        n = js(b, s, "document.querySelectorAll('svg.stack polygon.band').length")
        want(n and n >= 1, f"{tag}: no stacked timeline bands in the DOM ({n})")
        want(js(b, s, "!document.querySelector('.ftools').hidden"),
             f"{tag}: the flame graph's search is still hidden: did the script run?")
        # A click on the named frame shows its site's stack in the panel.
        at = js(b, s, CENTRE % f"({frame_js}).querySelector('rect')")
        if want(at, f"{tag}: the frame to click is not on screen"):
            click(b, s, at[0], at[1])
            panel = js(b, s, "document.getElementById('fpanel').textContent")
            for text in stack_texts:
                want(text in panel, f"{tag}: after the click the panel lacks {text!r}: "
                     f"{panel[:300]!r}")
            zoomed = js(b, s, f"({frame_js}).querySelector('rect').getAttribute('width')")
            want(zoomed == "1180.00", f"{tag}: the clicked frame was not zoomed to the full "
                 f"width (width {zoomed})")
            shot(b, s, tag + "-click")
        # The pointer over the timeline: the cursor and its readout.
        at = js(b, s, CENTRE % "document.querySelector('svg.stack .frame')")
        if want(at, f"{tag}: the stacked timeline is not on screen"):
            b.send("Input.dispatchMouseEvent", {"type": "mouseMoved", "x": at[0], "y": at[1]},
                   session=s)
            vis = js(b, s, "document.querySelector('svg.stack line.cursor')"
                           ".getAttribute('visibility')")
            ro = js(b, s, "document.querySelector('.stackfig .readout').textContent")
            want(vis == "visible", f"{tag}: no cursor line after a pointer move ({vis})")
            want(ro.startswith("At ") and "highest point drawn" not in ro and " s: " in ro,
                 f"{tag}: the readout did not follow the cursor: {ro[:200]!r}")
            shot(b, s, tag + "-cursor")
        for e in errors_of(b, s):
            fails.append(f"{tag}: {e}")
        b.send("Target.closeTarget", {"targetId": target})
    # Scripts off: the server-rendered content carries the page.
    tag = f"{name}-noscript"
    target, s = open_page(b, url, 1366, 900, scripts=False)
    doc = b.send("DOM.getDocument", {"depth": 1}, session=s)["root"]["nodeId"]

    def count(sel):
        return len(b.send("DOM.querySelectorAll", {"nodeId": doc, "selector": sel},
                          session=s)["nodeIds"])
    want(count("svg.flamesvg g.fr rect") > 1, f"{tag}: no flame graph")
    want(count(".fg-live svg.flamesvg") == 1, f"{tag}: no flame graph of live memory")
    want(count(".fg-site-peak svg.flamesvg") == 1, f"{tag}: no flame graph by each site's peak")
    want(count("table") >= 3, f"{tag}: fewer than 3 tables")
    want(count("svg.stack polygon.band") >= 1, f"{tag}: no stacked timeline")
    want(count(".ftools[hidden]") == 1, f"{tag}: the script ran (its tools are shown)")
    shot(b, s, tag)
    b.send("Target.closeTarget", {"targetId": target})


def job_page(tag, name, module, args, timeout, **env_extra):
    """The report of a job (args after the interpreter) run under the shim by the interpreter
    that imports `module`, as NAME.html, or None when no interpreter does (said: SKIP (tag))."""
    r = subprocess.run([find_python, module], capture_output=True, text=True)
    if r.returncode:
        print(f"SKIP ({tag}): " + r.stderr.strip())
        return None
    for old in glob.glob(os.path.join(tmp, name + ".*.trace")):
        os.unlink(old)
    env = {k: v for k, v in os.environ.items() if k != "NDMEM_HTML_SHOT_DIR"}  # not the shim's
    env = dict(env, LD_PRELOAD=os.path.abspath(lib), NDMEM_SUMMARY="0",
               NDMEM_OUTPUT=os.path.join(tmp, name + ".%p.trace"), **env_extra)
    subprocess.run([r.stdout.strip()] + args, env=env, check=True, stdout=subprocess.DEVNULL,
                   timeout=timeout)
    traces = glob.glob(os.path.join(tmp, name + ".*.trace"))
    if not want(len(traces) == 1, f"({tag}): {len(traces)} traces from the {module} run, want 1"):
        return None
    page = os.path.join(tmp, name + ".html")
    with open(page, "wb") as f:
        subprocess.run([report, "--format", "html", traces[0]], stdout=f, check=True)
    return page


# (b) python.trace (gen_trace.c, python_trace): load_table at data.py:15, called from <module>
# at train.py:9, holds the largest site; its panel shows those frames with their files.
py_page = os.path.join(tmp, "python.html")
with open(py_page, "wb") as f:
    subprocess.run([report, "--format", "html", py_trace], stdout=f, check=True)
# (a) a short numpy run; (c) examples/torch_leak.py, a CPU training loop that keeps an activation
# a step
np_page = job_page("a", "numpy", "numpy", [train, "--steps", "40", "--log-every", "20"], 120,
                   OPENBLAS_NUM_THREADS="2")
torch_pg = job_page("c", "torch", "torch", [os.path.join(os.path.dirname(train), "torch_leak.py")],
                    180, OMP_NUM_THREADS="2")
b = Browser()
try:
    b.send("Target.setDiscoverTargets", {"discover": False})
    check_page(b, "python", py_page,
               # (a trace before the peak moment: live at exit is its first graph)
               "[...document.querySelectorAll('.fg-live g.fr')].find(g => g.querySelector("
               "'title').textContent.startsWith('load_table (/nonexistent/app/data.py:15)'))",
               ["load_table (/nonexistent/app/data.py:15)", "load_table",
                "/nonexistent/app/data.py:15", "<module>", "/nonexistent/app/train.py:9",
                "live at exit", "its own peak"])
    if np_page:
        # The loop's own frame: main() at the line that runs the steps, from train_numpy.py.
        check_page(b, "numpy", np_page,
                   "[...document.querySelectorAll('.fg-peak g.fr')].find(g => /^main \\(.*"
                   "train_numpy\\.py:\\d+\\)/.test(g.querySelector('title').textContent))",
                   ["main", os.path.abspath(train) + ":", "py", "live at the peak",
                    "its own peak"])
    if torch_pg:
        # The script's own line that keeps the activations: <module> at torch_leak.py.
        check_page(b, "torch", torch_pg,
                   "[...document.querySelectorAll('.fg-peak g.fr')].find(g => /^<module> \\(.*"
                   "torch_leak\\.py:\\d+\\)/.test(g.querySelector('title').textContent))",
                   ["<module>", "torch_leak.py:", "live at the peak"])
except Exception as e:  # noqa: BLE001 (a protocol failure is a test failure, with its reason)
    fails.append(f"DevTools: {type(e).__name__}: {e}")
finally:
    b.close()
for f in fails:
    print("FAIL:", f)
if fails:
    sys.exit(1)
print(f"ok: {browser}: the reports of python.trace{', a numpy run' if np_page else ''}"
      f"{', a torch run' if torch_pg else ''} at "
      f"{' and '.join(f'{w}x{h}' for w, h in SIZES)}: flame graphs, stacked timeline, a click "
      f"to a stack, the cursor, no console error, readable with scripts off; screenshots in "
      f"{shots}")
sys.exit(0 if np_page else 77)
