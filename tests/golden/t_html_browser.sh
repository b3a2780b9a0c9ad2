#!/bin/sh
# SPDX-License-Identifier: MIT
# t_html_browser: a real browser renders ndmemreport's HTML offline. Headless Chromium (Debian's
# `chromium`) screenshots the report of one stored trace: the PNG must exist and not be blank
# (png_pixels.py decodes it with the standard library: some pixel differs from the first), and
# the DOM Chromium built must hold the timeline's plotted <polyline> and the top sites'. Exit 77
# (skip) without chromium. usage: t_html_browser.sh NDMEMREPORT TRACE PNG_PIXELS_PY
set -u
report=$1 trace=$2 pixels=$3
browser=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$browser" ]; then
  echo "SKIP: no chromium on PATH (Debian: apt-get install chromium)"
  exit 77
fi
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
"$report" --format html "$trace" >"$tmp/report.html" || { echo "FAIL: ndmemreport failed"; exit 1; }
# Its own profile and no first-run work; --headless=new first, the old headless mode if refused.
run() { # MODE ARGS...
  mode=$1
  shift
  timeout 60 "$browser" "$mode" --no-sandbox --disable-gpu --no-first-run \
    --user-data-dir="$tmp/profile" --window-size=1200,2000 "$@" "file://$tmp/report.html" \
    2>>"$tmp/stderr"
}
mode=--headless=new
run $mode --screenshot="$tmp/shot.png" >/dev/null
if [ ! -s "$tmp/shot.png" ]; then
  mode=--headless
  run $mode --screenshot="$tmp/shot.png" >/dev/null
fi
fail=0
if [ ! -s "$tmp/shot.png" ]; then
  echo "FAIL: no screenshot from $browser; its stderr:"
  tail -n 20 "$tmp/stderr"
  exit 1
fi
python3 "$pixels" "$tmp/shot.png" || fail=1
run $mode --dump-dom >"$tmp/dom.html"
if ! grep -q '<svg' "$tmp/dom.html"; then
  echo "FAIL: the DOM has no <svg>"
  fail=1
elif ! grep -q '<polyline class="series"[^>]* points="[0-9]' "$tmp/dom.html"; then
  echo "FAIL: the DOM's <svg> has no plotted <polyline>"
  fail=1
elif ! grep -q '<polyline class="series site"[^>]* points="[0-9]' "$tmp/dom.html"; then
  echo "FAIL: the DOM has no plotted top site over time"
  fail=1
fi
# NDMEM_HTML_SHOT=FILE keeps the screenshot, to look at.
[ -n "${NDMEM_HTML_SHOT:-}" ] && cp "$tmp/shot.png" "$NDMEM_HTML_SHOT"
[ $fail = 0 ] && echo "ok: $browser ($mode) rendered $(basename "$trace")'s report"
exit $fail
