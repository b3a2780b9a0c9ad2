#!/bin/sh
# SPDX-License-Identifier: MIT
# t_limits_edge: the limit records' edge cases (trace version 3), on traces gen_trace writes at
# test time. Each malformed one (a version 3 record in a version 2 trace, a limit, action,
# function or snapshot reason out of range, a record size one byte short, a SNAP_SITE record
# without its SNAPSHOT, too few or too many of them, or one naming an unknown stack) must give
# exit status 2 and exactly the expected error; so must version 16's admission records made bad
# (a limit out of range, a host limit naming a device, an unknown stack, counts or a memory kind
# that contradict, a version 16 record in a version 15 trace, a breach that does not say why it
# could be refused, or says so before version 16), and a good one is shown exactly. A trace cut
# inside a snapshot's sites, inside a record or at a record boundary, must report the sites
# before the cut; one with more breaches, snapshots and snapshot sites than the reader keeps must
# say what it kept and what it counted.
# usage: t_limits_edge.sh NDMEMREPORT GEN_TRACE
set -u
. "$(dirname "$0")/edge_common.sh"

# gen_trace writes a STACK and a FLUSH first: the first bad record is at offset 432.
bad bad-v2-limits 432 'LIMITS record in a version 2 trace (version 3 introduced it)'
bad bad-limits-action 432 'LIMITS action 3 out of range'
bad bad-breach-limit 432 'BREACH limit 2 out of range'
bad bad-breach-fn 432 'BREACH function 15 out of range'
bad bad-breach-size 432 'BREACH record size 55 impossible (56)'
bad bad-snap-reason 432 'SNAPSHOT reason 2 out of range'
bad bad-snap-site-alone 432 'SNAP_SITE record without a SNAPSHOT before it'
# SNAPSHOT (48 bytes with its header) at 432, SNAP_SITE (32) at 480, the next record at 512
bad bad-snap-too-few 512 'END record where SNAP_SITE 2 of 2 was expected'
bad bad-snap-too-many 512 'SNAP_SITE record beyond the 1 site its SNAPSHOT announced'
bad bad-snap-stack 480 'SNAP_SITE names unknown stack 7'
# version 10 (its FLUSH is longer: the bad record at 448): a breach naming a stack the trace never
# wrote; a retry loop whose breach did not stop the process
bad bad-breach-stack 448 'BREACH names unknown stack 7'
bad bad-breach-retry 448 'BREACH marks a retry loop but did not stop the process'

# Cut inside the third of 3 SNAP_SITE records (631 bytes: the third starts at 611), then at the
# boundary before it: both report the 2 sites read, by live bytes.
"$gen" limits-cut cut.trace || { no "gen_trace limits-cut"; exit 1; }
head -c 611 cut.trace >cut-boundary.trace
snap='
== limits
  (no LIMITS record: the limits in force and the totals are unknown)

== limit breaches: none

== snapshot 1 of 1 at 0.020 s: the warning watermark was crossed
  tracked 8.00 MiB (8388608 B); physical 9.00 MiB (9437184 B);
    watermark 9.00 MiB (9437184 B)
  2 of 3 sites (the trace ends inside the snapshot), live 8.00 MiB (8388608 B)
#1   heap     live 5.00 MiB (5242880 B) in 5 blocks  [stack 1]
      #0  /nonexistent/bin/limits_cut+0x1900
#2   mmap     live 3.00 MiB (3145728 B) in 1 mapping  [stack 1]
      #0  /nonexistent/bin/limits_cut+0x1900'
for t in cut cut-boundary; do
  if [ $t = cut ]; then
    line='TRUNCATED: 631 bytes, the last record cut short at offset 611;
              read the 6 whole records before it;
              intact up to its last flush
              (#1 at 0.010 s) and 3 records after it, included'
  else # cut at a record's end: whole, but without its END record, never called complete
    line='no END record: 611 bytes, 6 records;
              intact up to its last flush
              (#1 at 0.010 s) and 3 records after it, included'
  fi
  cat >want <<EOF
== summary
  trace       $line
  limits      no LIMITS record; 0 logged breaches, 1 snapshot
$snap
EOF
  "$report" --limits $t.trace >out 2>err
  rc=$?
  [ $rc = 0 ] || no "$t: exit status $rc"
  [ ! -s err ] || no "$t: stderr: $(cat err)"
  diff -u want out || no "$t: output differs"
  "$report" --limits --format json $t.trace >out 2>err || no "$t: JSON exit status $?"
  want='"sites": 3, "sites_read": 2, "sites_not_kept": 0, "complete": false, "live_bytes": 8388608'
  grep -qF "$want" out || no "$t: JSON snapshot counts"
done

# 1030 breaches (1024 kept), 7 snapshots (the 1st and the 4th to 7th kept), the 7th with 4097
# sites of 1 to 4097 bytes (the first 4096 kept: 4096 * 4097 / 2 = 8390656 bytes).
"$gen" many-limits many.trace || { no "gen_trace many-limits"; exit 1; }
"$report" --limits --top 1 many.trace >out 2>err
rc=$?
[ $rc = 0 ] || no "many-limits: exit status $rc"
[ ! -s err ] || no "many-limits: stderr: $(cat err)"
grep '^== \|^   [^ ]\|^  snapshots \|^  4097 sites\|^    1 more' out >got
cat >want <<'EOF'
== summary
== limits
  snapshots         7 taken; 7 in the trace, the first and the last 4 kept
== limit breaches: 1030 breaches, 1030 logged
   (the 1st, 2nd, 4th, 8th, ... of each limit); 6 more not kept (over 1024);
   first 1
== snapshot 1 of 7 at 2.001 s: the warning watermark was crossed
== snapshot 4 of 7 at 2.004 s: the warning watermark was crossed
== snapshot 5 of 7 at 2.005 s: the warning watermark was crossed
== snapshot 6 of 7 at 2.006 s: the warning watermark was crossed
== snapshot 7 of 7 at 3.000 s: the warning watermark was crossed
  4097 sites, live 8.00 MiB (8390656 B) in the 4096 kept;
    1 more not kept (over 4096); top 1
EOF
diff -u want got || no "many-limits: output differs"
grep -qx '#1   mmap     live 4.00 KiB (4096 B) in 1 mapping  \[stack 1\]' out ||
  no "many-limits: the largest kept site of snapshot 7"
"$report" --limits --brief --format json many.trace >out 2>err || no "many-limits: JSON exit $?"
want='"records": {"breaches": 1030, "breaches_kept": 1024, "snapshots": 7, "snapshots_kept": 5}'
grep -qF "$want" out || no "many-limits: JSON counts"

# version 16: the admissions (the good trace, then each made bad; modules and stacks come first,
# so the first bad record is at offset 691, an ADMIT_SITE after its ADMITTED at 771)
bad bad-admit-v15 691 'ADMITTED record in a version 15 trace (version 16 introduced it)'
bad bad-admit-limit 691 'ADMITTED limit 3 out of range'
bad bad-admit-host-device 691 'ADMITTED names device 2 for a host limit'
bad bad-admit-stack 771 'ADMIT_SITE names unknown stack 7'
bad bad-admit-counts 771 'ADMIT_SITE record whose counts contradict each other'
bad bad-admit-kind 771 'ADMIT_SITE memory kind 5 for maxBytes'
bad bad-breach-why 691 'BREACH without why the request could be refused'
bad bad-breach-why-v15 691 'BREACH flags 0x4 unknown before version 16'
"$gen" admitted admitted.trace || { no "gen_trace admitted"; exit 1; }
"$report" --limits admitted.trace >out 2>err || no "admitted: exit status $?"
[ ! -s err ] || no "admitted: stderr: $(cat err)"
sed -n '/^  limits /,/^$/p; /^== limit breaches/,$p' out >got
cat >want <<'WANT'
  limits      maxBytes 64.00 MiB (peak tracked 66.00 MiB, 103.1 %),
              maxPhysicalBytes none; no warning watermark; on limit fail;
              2 breaches, 2 allocations failed;
              302 requests admitted over them (67.00 MiB)

== limit breaches: 2 breaches, 2 logged
   (the 1st, 2nd, 4th, 8th, ... of each limit)
#1   maxBytes breach 1 at 0.050 s on thread 1616: malloc of
      128.00 MiB (134217728 B) -> failed
      tracked 66.00 MiB (69206016 B) before the call;
        limit 64.00 MiB (67108864 B)
      refusable: a large request (NDMEM_LIMIT_LARGE)
      #0  /nonexistent/bin/admitted+0x1100
      #1  /nonexistent/bin/admitted+0x1200
#2   maxBytes breach 2 at 0.060 s on thread 1617: malloc of 1.00 MiB (1048576 B)
      -> failed
      tracked 80.00 MiB (83886080 B) before the call;
        limit 64.00 MiB (67108864 B)
      refusable: admitting it would have passed the limit's slack
        (NDMEM_LIMIT_SLACK)

== admitted over limits: 302 requests
   (from code that cannot take a refusal: let through within the limit's slack;
   NDMEM_LIMIT_REFUSE names code to refuse)
  maxBytes: 300 requests, 3.00 MiB (3145728 B);
    at most 2.00 MiB (2097152 B) past the limit 64.00 MiB (67108864 B);
    slack 16.00 MiB (16777216 B); 1 refused past the slack
#1   heap     200 requests, 2.00 MiB (2097152 B);
      at most 2.00 MiB (2097152 B) past the limit  [stack 2]
      from admitted+0x1300, in libfoo.so+0x5100
      asked by libfoo.so+0x5180
      #0  /nonexistent/lib/libfoo.so+0x5100
      #1  /nonexistent/lib/libfoo.so+0x5180
      #2  /nonexistent/bin/admitted+0x1300
#2   heap     100 requests, 1.00 MiB (1048576 B);
      at most 1.00 MiB (1048576 B) past the limit (no stack recorded)
      asked by libfoo.so+0x7000
  maxDeviceBytes (device 1): 2 requests, 64.00 MiB (67108864 B);
    at most 40.00 MiB (41943040 B) past the limit 1.00 GiB (1073741824 B);
    slack 100.00 MiB (104857600 B); 0 refused past the slack
#3   device1  2 requests, 64.00 MiB (67108864 B);
      at most 40.00 MiB (41943040 B) past the limit  [stack 3]
      from admitted+0x1400, in libfoo.so+0x6100
      asked by libfoo.so+0x6100
      #0  /nonexistent/lib/libfoo.so+0x6100
      #1  /nonexistent/bin/admitted+0x1400

== snapshots: none
WANT
diff -u want got || no "admitted: output differs"
"$report" --limits --format json admitted.trace >out 2>err || no "admitted: JSON exit $?"
python3 - out <<'CHECK' || no "admitted: JSON"
import json, sys
d = json.load(open(sys.argv[1]))["limits"]
got = [(a["limit"], a["device"], a["requests"], a["bytes"], a["over_max_bytes"], a["slack_bytes"],
        a["refused_past_slack"], [(s["kind"], s["requests"], s["bytes"], s["stack_id"], s["place"])
                                  for s in a["sites"]]) for a in d["admitted"]]
want = [("max_bytes", None, 300, 3145728, 2097152, 16777216, 1,
         [("heap", 200, 2097152, 2, "admitted+0x1300, in libfoo.so+0x5100"),
          ("heap", 100, 1048576, None, None)]),
        ("max_device_bytes", 1, 2, 67108864, 41943040, 104857600, 0,
         [("device1", 2, 67108864, 3, "admitted+0x1400, in libfoo.so+0x6100")])]
assert got == want, got
assert [b["why"] for b in d["breaches"]] == [["large"], ["past_slack"]], d["breaches"]
CHECK
exit $fail
