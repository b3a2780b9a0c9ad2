#!/bin/sh
# SPDX-License-Identifier: MIT
# t_admit: runs the modes of t_admit.c (the program checks the numbers in-process) and checks what
# the user sees of them: the summary's limits line (the admissions' count, bytes, how far past the
# limit, the slack and the site most admitted from), ndmemreport's text and JSON (every admitted
# site at its file:line in libadmit.c, why the refused requests could be refused), and who is
# refused under NDMEM_LIMIT_REFUSE.
# usage: t_admit.sh LIBNDMEM T_ADMIT NDMEMREPORT LIBADMIT_C T_ADMIT_C
set -u
lib=$1 prog=$2 report=$3 libsrc=$4 src=$5
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail=0
no() { echo "FAIL: $*" >&2; fail=1; }
line_of() { grep -n "$2" "$1" | head -1 | cut -d: -f1; }

# run NAME [VAR=VALUE...] -- ARGS...: t_admit under the shim, exit status 0 wanted
run() {
  name=$1
  shift
  vars=
  while [ "$1" != "--" ]; do vars="$vars $1"; shift; done
  shift
  env NDMEM_WORKSPACES=0 NDMEM_SUMMARY=1 NDMEM_OUTPUT="$tmp/$name.%p.trace" $vars LD_PRELOAD="$lib" \
    "$prog" "$@" >"$tmp/$name.out" 2>"$tmp/$name.err"
  rc=$?
  [ $rc -eq 0 ] || { no "$name: exit status $rc"; cat "$tmp/$name.out" "$tmp/$name.err" >&2; }
  cat "$tmp/$name.out"
}
has() { # has NAME REGEX: stderr of run NAME has a line matching REGEX
  grep -q -- "$2" "$tmp/$1.err" || { no "$1: no stderr line matching: $2"; cat "$tmp/$1.err" >&2; }
}
out() { # out NAME TEXT: stdout of run NAME is exactly TEXT
  [ "$(cat "$tmp/$1.out")" = "$2" ] || no "$1: stdout '$(cat "$tmp/$1.out")', want '$2'"
}
trace_of() { ls "$tmp/$1".*.trace 2>/dev/null | head -1; }
flat() { tr '\n' ' ' <"$1" | tr -s ' '; } # a report's lines as one, its 80-column breaks undone
# reports NAME: the text limits view and the JSON report of run NAME's trace
reports() {
  t=$(trace_of "$1")
  "$report" --limits "$t" >"$tmp/$1.txt" 2>&1 || { no "$1: ndmemreport failed"; cat "$tmp/$1.txt" >&2; }
  "$report" --format=json "$t" >"$tmp/$1.json" 2>&1 || { no "$1: ndmemreport --format=json failed"; cat "$tmp/$1.json" >&2; }
}
text_has() { flat "$tmp/$1.txt" | grep -q -- "$2" || { no "$1: the text report lacks: $2"; cat "$tmp/$1.txt" >&2; }; }
# json NAME PYTHON-EXPR: the expression over the JSON report (d) is true
json() {
  /usr/bin/env python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
sys.exit(0 if eval(sys.argv[2]) else 1)' "$tmp/$1.json" "$2" || no "$1: the JSON report fails: $2"
}

l_small=$(line_of "$libsrc" 'unsigned char \*p = malloc(size);')
l_scratch=$(line_of "$libsrc" 'unsigned char \*p = mmap(NULL, size')
l_try=$(line_of "$libsrc" 'void \*admit_try(size_t size) { return malloc')
l_own=$(line_of "$src" 'static void \*own_request(size_t n) { return malloc')

# ---- maxBytes: the library's 100 blocks of 1000 B and its 256 KiB scratch mapping admitted (the
# program checked the tracked bytes), the program's own 128 MiB refused
run bytes -- bytes
out bytes 'bytes: admitted 101 requests, 362144 B, past the limit by 362144 B; own 128 MiB refused (ENOMEM)'
has bytes '^ndmem\[[0-9]*\]: limits: maxBytes 3.91 KiB (peak tracked [0-9.]* KiB), maxPhysicalBytes none, watermark none; on limit fail; breaches 1 + 0 physical, 1 failed; snapshots 1; admitted 101 requests over maxBytes (353.66 KiB; at most 353.66 KiB past it, slack 64.00 MiB), most from admit_scratch+0x[0-9a-f]* (libadmit.so)$'
reports bytes
text_has bytes ' 1 breach, 1 allocation failed; 101 requests admitted over them (353.66 KiB) '
text_has bytes ' malloc of 128.00 MiB (134217728 B) -> failed tracked [0-9.]* KiB ([0-9]* B) before the call; limit 3.91 KiB (4008 B) refusable: a large request (NDMEM_LIMIT_LARGE) #0 own_request (.*t_admit.c:'"$l_own"')'
text_has bytes '== admitted over limits: 101 requests .* maxBytes: 101 requests, 353.66 KiB (362144 B); at most 353.66 KiB (362144 B) past the limit 3.91 KiB (4008 B); slack 64.00 MiB (67108864 B); 0 refused past the slack'
text_has bytes '#1 mmap 1 request, 256.00 KiB (262144 B); at most 353.66 KiB (362144 B) past the limit \[stack [0-9]*\] from libadmit.c:'"$l_scratch"' (admit_scratch) asked by admit_scratch (libadmit.c:'"$l_scratch"') #0 admit_scratch (.*libadmit.c:'"$l_scratch"')'
text_has bytes '#2 heap 100 requests, 97.66 KiB (100000 B); at most 97.66 KiB (100000 B) past the limit \[stack [0-9]*\] from libadmit.c:'"$l_small"' (admit_small) asked by admit_small (libadmit.c:'"$l_small"') #0 admit_small (.*libadmit.c:'"$l_small"')'
json bytes "[(a['limit'], a['requests'], a['bytes'], a['over_max_bytes'], a['slack_bytes'], a['large_bytes'], a['refused_past_slack']) for a in d['limits']['admitted']] == [('max_bytes', 101, 362144, 362144, 67108864, 67108864, 0)]"
json bytes "[(s['kind'], s['requests'], s['bytes'], s['place']) for s in d['limits']['admitted'][0]['sites']] == [('mmap', 1, 262144, 'libadmit.c:$l_scratch (admit_scratch)'), ('heap', 100, 100000, 'libadmit.c:$l_small (admit_small)')]"
json bytes "[(b['requested'], b['why'], b['frames'][0]['line']) for b in d['limits']['breaches']] == [(134217728, ['large'], $l_own)]"

# ---- NDMEM_LIMIT_REFUSE: a named object is refused, the program's own code by %exe, '-' takes
# one out; the default refuses neither of two small requests
run refuse_default -- refuse admitted admitted
out refuse_default 'refuse: program admitted, library admitted'
has refuse_default '; breaches 0 + 0 physical, 0 failed; snapshots 0; admitted 2 requests over maxBytes (1.95 KiB; at most 1.95 KiB past it, slack 64.00 MiB), most from t_admit+0x'
run refuse_lib NDMEM_LIMIT_REFUSE=libadmit.so -- refuse admitted refused
out refuse_lib 'refuse: program admitted, library refused'
has refuse_lib "^ndmem: Can't allocate \[HOST\] memory: 1000 B requested; tracked 4.89 KiB + 1000 B > maxBytes 3.91 KiB after relief gave back [^;]*; thread [0-9]* (NDMEM_ON_LIMIT=fail; breach 1, next logged: 2)$"
reports refuse_lib
text_has refuse_lib ' malloc of 1000 B -> failed tracked 4.89 KiB (5008 B) before the call; limit 3.91 KiB (4008 B) refusable: from an object NDMEM_LIMIT_REFUSE names #0 admit_try (.*libadmit.c:'"$l_try"')'
json refuse_lib "[b['why'] for b in d['limits']['breaches']] == [['named']]"
run refuse_exe NDMEM_LIMIT_REFUSE=%exe -- refuse refused admitted
out refuse_exe 'refuse: program refused, library admitted'
run refuse_glob 'NDMEM_LIMIT_REFUSE=*,-libadmit*' -- refuse refused admitted
out refuse_glob 'refuse: program refused, library admitted'
run refuse_path "NDMEM_LIMIT_REFUSE=$(cd "$(dirname "$prog")" && pwd)/lib*.so" -- refuse admitted refused
out refuse_path 'refuse: program admitted, library refused'

# ---- the slack: the library's checked 4 KiB blocks until the next would pass the limit plus it
run slack_1m NDMEM_LIMIT_SLACK=1m -- slack 1048576
out slack_1m 'slack: 255 blocks of 4 KiB admitted (1046520 B), the next refused; at most 1046520 B past the limit, slack 1048576 B'
has slack_1m "^ndmem: Can't allocate \[HOST\] memory: 4.00 KiB requested; tracked 11.01 MiB + 4.00 KiB > maxBytes 10.01 MiB + slack 1.00 MiB after relief gave back [^;]*; thread [0-9]* (NDMEM_ON_LIMIT=fail; breach 1, next logged: 2)$"
has slack_1m '; admitted 255 requests over maxBytes (1021.99 KiB; at most 1021.99 KiB past it, slack 1.00 MiB), most from admit_try+0x[0-9a-f]* (libadmit.so); 1 refused past the slack$'
reports slack_1m
text_has slack_1m ' malloc of 4.00 KiB (4096 B) -> failed tracked 11.01 MiB ([0-9]* B) before the call; limit 10.01 MiB ([0-9]* B) refusable: admitting it would have passed the limit.s slack (NDMEM_LIMIT_SLACK) #0 admit_try (.*libadmit.c:'"$l_try"')'
text_has slack_1m ' maxBytes: 255 requests, 1021.99 KiB (1046520 B); at most 1021.99 KiB (1046520 B) past the limit 10.01 MiB ([0-9]* B); slack 1.00 MiB (1048576 B); 1 refused past the slack '
json slack_1m "[b['why'] for b in d['limits']['breaches']] == [['past_slack']] and d['limits']['admitted'][0]['refused_past_slack'] == 1"
run slack_pct NDMEM_LIMIT_SLACK=10% -- slack 10%
grep -q '^slack: 25[0-9] blocks of 4 KiB admitted ([0-9]* B), the next refused; at most [0-9]* B past the limit, slack 104[0-9]* B$' "$tmp/slack_pct.out" ||
  no "slack_pct: stdout '$(cat "$tmp/slack_pct.out")'"
run slack_default -- slack 67108864
out slack_default 'slack: 16352 blocks of 4 KiB admitted (67108608 B), the next refused; at most 67108608 B past the limit, slack 67108864 B'

# ---- maxPhysicalBytes (resident memory from a file): the library's requests admitted while they
# add at most the slack past the limit (a fresh mapping adds nothing: none of it is resident); the
# program's 128 MiB refused; the slack whole again after a reading under the limit
printf '2048 1124 100 10 0 100 0\n' >"$tmp/statm"
run physical NDMEM_TEST_STATM="$tmp/statm" NDMEM_MAX_PHYSICAL_BYTES=100m NDMEM_LIMIT_SLACK=8m NDMEM_LIMIT_STEP=1 NDMEM_LIMIT_POLL_MS=0 -- physical "$tmp/statm"
out physical 'physical: admitted 13 requests (10 blocks, 2 checked, a fresh 128 MiB mapping); own 128 MiB refused; 8 MiB past the slack refused; after a reading under the limit, 8 MiB admitted'
has physical "^ndmem: Can't allocate \[HOST\] memory: 128.00 MiB requested; physical 101.00 MiB > maxPhysicalBytes 100.00 MiB after relief gave back [^;]*; thread [0-9]* (NDMEM_ON_LIMIT=fail; breach 1, next logged: 2)$"
has physical "^ndmem: Can't allocate \[HOST\] memory: 8.00 MiB requested; physical 101.00 MiB > maxPhysicalBytes 100.00 MiB; admitted past it 10.74 KiB + 8.00 MiB > slack 8.00 MiB after relief gave back [^;]*; thread [0-9]* (NDMEM_ON_LIMIT=fail; breach 2, next logged: 4)$"
has physical '; breaches 0 + 2 physical, 2 failed; snapshots 1; admitted 13 requests over maxPhysicalBytes (8.01 MiB; resident at most 13.00 MiB past it, slack 8.00 MiB), most from admit_try+0x[0-9a-f]* (libadmit.so); 1 refused past the slack$'
reports physical
json physical "[(a['limit'], a['requests'], a['bytes'], a['over_max_bytes'], a['refused_past_slack']) for a in d['limits']['admitted']] == [('max_physical_bytes', 13, 8399608, 13631488, 1)]"
json physical "sorted((s['kind'], s['requests'], s['bytes']) for s in d['limits']['admitted'][0]['sites']) == [('heap', 2, 8389608), ('heap', 10, 10000), ('mmap', 1, 0)]"
json physical "[b['why'] for b in d['limits']['breaches']] == [['large'], ['past_slack']]"
exit $fail
