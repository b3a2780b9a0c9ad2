#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# t_refusal: an end after a refused allocation is named with it in every format. t_refusal.c asks
# for 128 MiB under NDMEM_MAX_BYTES=64m and then crashes on the NULL (SIGSEGV), calls exit(1), or
# returns 3 from main: the shim's exit line on stderr, the text report's exit and refused lines and
# its limits view, JSON (process.exit.after_refusal, limits.last_refusal) and the HTML page (its
# summary and its limits card) name the signal or the status, the 128 MiB (134217728 B) and
# t_refusal.c at the malloc's line, on the thread that asked. A clean exit 5.3 s after the
# refusal is not tied to it (ND_REFUSAL_NEAR_NS is 5 s): the limits view still shows the request.
# usage: t_refusal.py LIBNDMEM T_REFUSAL NDMEMREPORT T_REFUSAL_C
import json
import os
import re
import subprocess
import sys
import tempfile

LIB, EXE, REPORT, SRC = (os.path.abspath(a) for a in sys.argv[1:5])
LINE = next(i for i, ln in enumerate(open(SRC), 1) if "REFUSED_LINE" in ln)
PLACE = "t_refusal.c:%d (main)" % LINE
failures = []


def fail(what):
    failures.append(what)
    print("FAIL:", what, file=sys.stderr)


def flat(text):
    return re.sub(r"\s+", " ", text)


def start(tmp, mode):
    env = dict(os.environ, LD_PRELOAD=LIB, NDMEM_MAX_BYTES="64m",
               NDMEM_OUTPUT=os.path.join(tmp, mode + ".%p.trace"))
    return subprocess.Popen([EXE, mode], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def finish(tmp, mode, p, status):
    out, err = p.communicate(timeout=60)
    pid = int(out.split()[1])
    if p.returncode != status:
        fail("%s: exit status %d, want %d (as without ndmem); stderr %r" % (mode, p.returncode,
                                                                           status, err))
    trace = os.path.join(tmp, "%s.%d.trace" % (mode, pid))
    rep = {}
    for fmt, args in (("text", []), ("limits", ["--limits"]), ("json", ["--format", "json"]),
                      ("html", ["--format", "html"])):
        r = subprocess.run([REPORT] + args + [trace], capture_output=True, text=True, timeout=60)
        if r.returncode != 0:
            fail("%s: ndmemreport %s: %s" % (mode, fmt, r.stderr))
        rep[fmt] = r.stdout
    return pid, err, rep


def has(mode, what, text, want):
    if want not in text:
        fail("%s: %s lacks %r" % (mode, what, want))
        print(text[:3000], file=sys.stderr)


def named(mode, pid, err, rep, stderr_end, text_end, json_exit, html_end):
    # stderr: the shim's exit line, with the request's frame (file:line is the report's)
    m = re.search(r"^ndmem\[%d\]: %s ([0-9]+\.[0-9]+) s after a refused request \(malloc of "
                  r"128\.00 MiB over maxBytes 64\.00 MiB on thread %d, requested at \[stack "
                  r"[0-9]+\] t_refusal\+0x[0-9a-f]+ .*\)" % (pid, re.escape(stderr_end), pid),
                  err, re.M)
    if not m or float(m.group(1)) >= 1:
        fail("%s: no exit line naming the refusal on stderr:\n%s" % (mode, err))
    text = flat(rep["text"])
    has(mode, "the text report", text, "exit %s in thread %d, 0." % (text_end, pid))
    has(mode, "the text report", text, " after a refused request (below)")
    has(mode, "the text report", text, "refused malloc of 128.00 MiB (134217728 B) over maxBytes "
        "64.00 MiB (67108864 B) on thread %d at " % pid)
    has(mode, "the text report", text, ", at %s " % PLACE)
    has(mode, "the limits view", flat(rep["limits"]), "refused last malloc of 128.00 MiB "
        "(134217728 B) over maxBytes 64.00 MiB (67108864 B) on thread %d at " % pid)
    has(mode, "the limits view", flat(rep["limits"]), ", at %s; 1 request refused in all; the "
        "process ended %s 0." % (PLACE, html_end))
    j = json.loads(rep["json"])
    e = j["process"]["exit"]
    after = e.get("after_refusal") or {}
    for k, v in json_exit.items():
        if e.get(k) != v:
            fail("%s: JSON exit %s is %r, want %r" % (mode, k, e.get(k), v))
    if (after.get("requested"), after.get("function"), after.get("limit"), after.get("place")) != \
            (134217728, "malloc", "max_bytes", PLACE) or not 0 <= after.get("ns", -1) < 10**9:
        fail("%s: JSON exit.after_refusal %r" % (mode, after))
    last = j["limits"]["last_refusal"] or {}
    if (last.get("requested"), last.get("limit_bytes"), last.get("tid"), last.get("place"),
            last.get("refusals"), last.get("end_after_ns")) != \
            (134217728, 67108864, pid, PLACE, 1, after.get("ns")):
        fail("%s: JSON limits.last_refusal %r" % (mode, {k: last.get(k) for k in
             ("requested", "limit_bytes", "tid", "place", "refusals", "end_after_ns")}))
    html = rep["html"]
    has(mode, "the HTML summary", html, "<tr><th>refused</th><td>malloc of 128.00 MiB "
        "(134217728 B) over maxBytes 64.00 MiB (67108864 B) on thread %d at " % pid)
    has(mode, "the HTML summary", html, "<tr><th>exit</th><td>%s in thread %d, 0." % (text_end, pid))
    has(mode, "the HTML limits card", html, '<h2>What hit a limit</h2>\n<p class="big"><b '
        'class="bad">refused</b> malloc of <span title="134217728 B">128.00 MiB</span>')
    has(mode, "the HTML limits card", html, "<p>at <b>%s</b>; the process ended %s 0." %
        (PLACE, html_end))


def main():
    tmp = tempfile.mkdtemp(prefix="ndmem-refusal-")
    later = start(tmp, "later")  # 5.3 s: meanwhile the others
    for mode, status, stderr_end, text_end, json_exit, html_end in (
            ("segv", -11, "ended by signal 11 (SEGV)", "ended by signal 11 (SIGSEGV)",
             {"how": "signal", "code": 11, "status": None}, "by signal 11 (SIGSEGV)"),
            ("exit1", 1, "ended by exit(1)", "exit(1)", {"how": "exit", "code": 1, "status": 1},
             "by exit(1)"),
            ("main3", 3, "ended by exit(3)", "exit(3)", {"how": "exit", "code": 3, "status": 3},
             "by exit(3)")):
        pid, err, rep = finish(tmp, mode, start(tmp, mode), status)
        named(mode, pid, err, rep, stderr_end, text_end, json_exit, html_end)

    pid, err, rep = finish(tmp, "later", later, 0)
    if "after a refused request" in err or "ndmem[%d]: ended" % pid in err:
        fail("later: a clean exit 5.3 s after the refusal is tied to it on stderr:\n" + err)
    text = flat(rep["text"])
    has("later", "the text report", text, "exit normal (END record)")
    if "refused malloc" in text or "after a refused request" in text:
        fail("later: the text report ties the clean exit to the refusal")
    limits = flat(rep["limits"])
    has("later", "the limits view", limits, ", at %s; 1 request refused in all " % PLACE)
    if "the process ended" in limits:
        fail("later: the limits view ties the clean exit to the refusal")
    j = json.loads(rep["json"])
    e, last = j["process"]["exit"], j["limits"]["last_refusal"]
    if e.get("after_refusal") is not None or e.get("status") != 0 or \
            (last or {}).get("end_after_ns", 0) is not None or \
            (last or {}).get("place") != PLACE:
        fail("later: JSON exit %r, last_refusal %r" % (e, last))
    html = rep["html"]
    if "<tr><th>refused</th>" in html or "the process ended" in html:
        fail("later: the HTML page ties the clean exit to the refusal")
    has("later", "the HTML limits card", html, "<p>at <b>%s</b></p>" % PLACE)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
