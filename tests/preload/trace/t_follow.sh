#!/bin/sh
# SPDX-License-Identifier: MIT
# t_follow: `ndmemreport --follow` on the trace of a program that runs under the shim meanwhile
# (t_follow.c: its live heap grows by 2 MiB every 0.3 s; flushes every 50 ms). Stdout is not a
# terminal, so each refresh is headed `== refresh N at HH:MM:SS, +SIZE read, STATE`: at least
# two refreshes while the program runs (state `running`), live bytes at the last flush growing
# between them, a final refresh once the trace is complete, and exit status 0 soon after the
# program ended. The bytes read over all refreshes add up to the trace's size (each refresh
# reads what was appended; a record cut short is read again whole, so a little more).
# Then a trace without an END record (KILLED, written on another host) replaced by a shorter
# complete one (DONE): a line says the trace was read again from its start, then the final refresh.
# Last, the program killed (SIGKILL) while followed: its trace never gets an END record; once
# the writer is gone and the trace stopped growing, the view ends by itself (status 0) with a
# line saying so.
# usage: t_follow.sh LIBNDMEM T_FOLLOW NDMEMREPORT KILLED DONE
set -u
lib=$1 prog=$2 rep=$3 killed=$4 done=$5
tmp=$(mktemp -d) || exit 1
fail=0
no() { echo "FAIL: $*" >&2; fail=1; }
trap 'kill -9 $pid 2>/dev/null; rm -rf "$tmp"' EXIT
NDMEM_SUMMARY=0 NDMEM_FLUSH_MS=50 NDMEM_OUTPUT="$tmp/t.trace" LD_PRELOAD=$lib "$prog" &
pid=$!
# A missing trace is an error (a wrong path fails at once): wait until the shim has made it.
n=0
while [ ! -e "$tmp/t.trace" ] && [ $n -lt 100 ]; do sleep 0.05; n=$((n + 1)); done
timeout 30 "$rep" --follow --follow-interval 100 "$tmp/t.trace" >"$tmp/out" 2>"$tmp/err"
rc=$?
wait $pid || no "the program failed"
[ "$rc" = 0 ] || no "exit status $rc, want 0 (124: still following after 30 s)"
[ -s "$tmp/err" ] && { no "stderr not empty:"; cat "$tmp/err" >&2; }
hm='[0-9][0-9]:[0-9][0-9]:[0-9][0-9]' sz='+[0-9.]* [KMG]*i*B'
running=$(grep -c "^== refresh [0-9]* at $hm, $sz read, running\$" "$tmp/out")
[ "$running" -ge 2 ] || no "$running refreshes while the program ran, want 2 or more"
grep -q "^== refresh [0-9]* at $hm, $sz read (final: the trace is complete)\$" "$tmp/out" ||
  no "no final refresh"
[ "$(grep -c '^== refresh' "$tmp/out")" = $((running + 1)) ] || no "refreshes after the final one"
# The heap's live bytes at the last flush, one value per refresh that had a flush.
sed -n 's/^ *live at last flush [^(]*(\([0-9]*\) B) in.*/\1/p' "$tmp/out" >"$tmp/live"
first=$(head -n 1 "$tmp/live") last=$(tail -n 1 "$tmp/live")
[ -n "$first" ] && [ "$last" -gt "$first" ] ||
  no "live bytes did not grow between refreshes: $(tr '\n' ' ' <"$tmp/live")"
sort -n -c "$tmp/live" 2>/dev/null || no "live bytes fell while the program only allocated"
# Bytes read per refresh ("512 B", "2.20 KiB": B exact, KiB rounded to 1/100): their sum, against
# the file's size. A full re-read each refresh would read it several times over.
size=$(wc -c <"$tmp/t.trace")
sum=$(sed -n 's/^== refresh .*, +\([0-9.]*\) \([KMG]*i*B\) read.*/\1 \2/p' "$tmp/out" |
  awk '{ m = $2 == "KiB" ? 1024 : $2 == "MiB" ? 1048576 : 1; s += $1 * m } END { printf "%d", s }')
[ "$sum" -ge $((size - size / 50)) ] && [ "$sum" -le $((size + size / 4)) ] ||
  no "refreshes read $sum bytes in all, the trace has $size"
[ $fail = 0 ] || { echo "--- output" >&2; cat "$tmp/out" >&2; }

# A trace replaced by a shorter one while followed.
out2=$tmp/out2
cp "$killed" "$tmp/r.trace"
timeout 30 "$rep" --follow --follow-interval 100 "$tmp/r.trace" >"$out2" 2>"$tmp/err2" &
fpid=$!
sleep 0.5
cp "$done" "$tmp/r.trace.new" && mv "$tmp/r.trace.new" "$tmp/r.trace"
wait $fpid
rc=$?
[ "$rc" = 0 ] || no "replaced: exit status $rc, want 0"
[ -s "$tmp/err2" ] && { no "replaced: stderr not empty:"; cat "$tmp/err2" >&2; }
grep -q '^== refresh 1 at [0-9:]*, +3.95 KiB read, written on another host (its state unknown)$' \
  "$out2" || no "replaced: the first refresh does not read all of KILLED, another host's"
grep -q "^($tmp/r.trace was replaced or cut short: read again from its start)$" "$out2" ||
  no "replaced: no line saying the trace was read again"
grep -q '^== refresh [0-9]* at [0-9:]*, +971 B read (final: the trace is complete)$' "$out2" ||
  no "replaced: no final refresh reading all of DONE"
[ "$(grep -c 'read again from its start' "$out2")" = 1 ] || no "replaced: read again more than once"
[ $fail = 0 ] || { echo "--- output (replaced)" >&2; cat "$out2" >&2; }

# The writer killed.
out3=$tmp/out3
NDMEM_SUMMARY=0 NDMEM_FLUSH_MS=50 NDMEM_OUTPUT="$tmp/k.trace" LD_PRELOAD=$lib "$prog" &
pid=$!
n=0
while [ ! -s "$tmp/k.trace" ] && [ $n -lt 100 ]; do sleep 0.05; n=$((n + 1)); done
timeout 30 "$rep" --follow --follow-interval 100 "$tmp/k.trace" >"$out3" 2>"$tmp/err3" &
fpid=$!
sleep 0.6
kill -9 $pid
wait $pid 2>/dev/null
wait $fpid
rc=$?
[ "$rc" = 0 ] || no "killed: exit status $rc, want 0 (124: still following after 30 s)"
[ -s "$tmp/err3" ] && { no "killed: stderr not empty:"; cat "$tmp/err3" >&2; }
grep -q "^== refresh [0-9]* at $hm, $sz read, running\$" "$out3" ||
  no "killed: no refresh while the program ran"
[ "$(grep -c "^== refresh [0-9]* at $hm, +0 B read, the writer is gone (no END record)\$" \
  "$out3")" -ge 2 ] || no "killed: fewer than 2 refreshes saw the writer gone and nothing read"
[ "$(tail -n 1 "$out3" | head -c 7)" != "== refr" ] || no "killed: ends with a bare header"
grep -q '^(final: the writer is gone and the trace stopped growing; it has no END record)$' \
  "$out3" || no "killed: no final line"
grep -q 'complete)' "$out3" && no "killed: a trace without END called complete"
[ $fail = 0 ] || { echo "--- output (killed)" >&2; cat "$out3" >&2; }
exit $fail
