// SPDX-License-Identifier: MIT
// normalise.c: older trace versions read as the latest (internal.h): what each version has room
// for (nd_trace_has_t, the facts the rest of ndmemreport tests in place of version numbers), the
// payload size each version wrote a record with and the records it may hold, a short record
// read with its later fields 0, and a header's job fields read as unknown before version 12.
#include "read/internal.h"

#include <stddef.h>
#include <string.h>

// What a trace of `version` has room for (nd_trace_has_t): the one place that maps version
// numbers to the facts the rest of ndmemreport tests.
void nd_read_facts(nd_trace_has_t *has, uint32_t version) {
  *has = (nd_trace_has_t){
      .workspaces = version >= 2,
      .limits = version >= 3,
      .exit_record = version >= 4,
      .site_history = version >= 5,
      .devices = version >= 6,
      .python = version >= 7,
      .resident = version >= 8,
      .allocator_view = version >= 9,
      .ws_served = version >= 10,
      .limit_details = version >= 10,
      .device_ws = version >= 11,
      .job = version >= 12,
      .py_depth = version >= 12,
      .reach = version >= 14,
      .ws_held = version >= 15,
      .admissions = version >= 16,
      .end_causes = version >= 16,
      .rss = version >= 18,
      .cuda_fns = version >= 11 ? ND_CUDA_FN_USED : ND_CUDA_FN_USED_V10};
}

// The payload size a tag allows in a trace of `version`: exact for fixed records, a minimum (and
// *var set) otherwise. Version 5 lengthened four records (trace_format.h).
uint32_t nd_read_size(unsigned tag, uint32_t version, int *var) {
  *var = 0;
  int old = version < 5;
  switch (tag) {
  case ND_REC_MODULE: *var = 1; return sizeof(nd_rec_module_t);
  case ND_REC_STACK: *var = 1; return sizeof(nd_rec_stack_t);
  case ND_REC_SITE: return old ? ND_REC_SITE_V4_SIZE : sizeof(nd_rec_site_t);
  case ND_REC_COUNTERS: return sizeof(nd_rec_counters_t);
  case ND_REC_BLOCK: return old ? ND_REC_BLOCK_V4_SIZE : sizeof(nd_rec_block_t);
  case ND_REC_FLUSH: return old ? ND_REC_FLUSH_V4_SIZE : sizeof(nd_rec_flush_t);
  case ND_REC_WORKSPACE:
    return old ? ND_REC_WORKSPACE_V4_SIZE
           : version < 10 ? ND_REC_WORKSPACE_V9_SIZE
           : version < 15 ? ND_REC_WORKSPACE_V14_SIZE
                          : sizeof(nd_rec_workspace_t);
  case ND_REC_GROWTH: return sizeof(nd_rec_growth_t);
  case ND_REC_WS_ESCAPE: return sizeof(nd_rec_ws_escape_t);
  case ND_REC_LIMITS: return version < 10 ? ND_REC_LIMITS_V9_SIZE : sizeof(nd_rec_limits_t);
  case ND_REC_BREACH: return version < 10 ? ND_REC_BREACH_V9_SIZE : sizeof(nd_rec_breach_t);
  case ND_REC_SNAPSHOT: return sizeof(nd_rec_snapshot_t);
  case ND_REC_SNAP_SITE: return sizeof(nd_rec_snap_site_t);
  case ND_REC_EXIT: return sizeof(nd_rec_exit_t);
  case ND_REC_DEVICE: return sizeof(nd_rec_device_t);
  case ND_REC_CUDA: return sizeof(nd_rec_cuda_t);
  case ND_REC_PYCODE: *var = 1; return sizeof(nd_rec_pycode_t);
  case ND_REC_PYTHON: return sizeof(nd_rec_python_t);
  case ND_REC_RESIDENT: return version < 9 ? ND_REC_RESIDENT_V8_SIZE : sizeof(nd_rec_resident_t);
  case ND_REC_DEVICE_WS: return sizeof(nd_rec_device_ws_t);
  case ND_REC_DEVICE_SPILL: return sizeof(nd_rec_device_spill_t);
  case ND_REC_SCAN: return version < 17 ? ND_REC_SCAN_V16_SIZE : sizeof(nd_rec_scan_t);
  case ND_REC_PEAK: return sizeof(nd_rec_peak_t);
  case ND_REC_SITE_PEAK: return sizeof(nd_rec_site_peak_t);
  case ND_REC_ADMITTED: return sizeof(nd_rec_admitted_t);
  case ND_REC_ADMIT_SITE: return sizeof(nd_rec_admit_site_t);
  case ND_REC_REFUSAL: return sizeof(nd_rec_refusal_t);
  case ND_REC_EXEC: *var = 1; return sizeof(nd_rec_exec_t);
  case ND_REC_RSS: return sizeof(nd_rec_rss_t);
  case ND_REC_SITE_UNTOUCHED: return sizeof(nd_rec_site_untouched_t);
  default: return sizeof(nd_rec_end_t);
  }
}

// Checks a record header before its payload is needed, so an impossible size is an error even
// when the file ends before the payload would.
int nd_read_check(nd_trace_t *t, uint64_t off, const nd_rec_t *r) {
  if (t->ended)
    return nd_read_fail(t, off, "%s record after END",
                        r->tag > 0 && r->tag < ND_REC_TAG_MAX ? nd_read_tag_names[r->tag] : "a");
  if (r->tag == 0 || r->tag >= ND_REC_TAG_MAX)
    return nd_read_fail(t, off, "unknown record tag %u", r->tag);
  if (t->hdr.version < 2 && (r->tag == ND_REC_WORKSPACE || r->tag == ND_REC_WS_ESCAPE))
    return nd_read_fail(t, off, "%s record in a version %u trace (version 2 introduced it)",
                nd_read_tag_names[r->tag], t->hdr.version);
  if (t->hdr.version < 3 && r->tag >= ND_REC_LIMITS)
    return nd_read_fail(t, off, "%s record in a version %u trace (version 3 introduced it)",
                nd_read_tag_names[r->tag], t->hdr.version);
  if (t->hdr.version < 4 && r->tag == ND_REC_EXIT)
    return nd_read_fail(t, off, "EXIT record in a version %u trace (version 4 introduced it)",
                t->hdr.version);
  if (t->hdr.version < 5 && r->tag == ND_REC_GROWTH)
    return nd_read_fail(t, off, "GROWTH record in a version %u trace (version 5 introduced it)",
                t->hdr.version);
  if (t->hdr.version < 8 && r->tag == ND_REC_RESIDENT)
    return nd_read_fail(t, off, "RESIDENT record in a version %u trace (version 8 introduced it)",
                t->hdr.version);
  if (t->hdr.version < 7 && (r->tag == ND_REC_PYCODE || r->tag == ND_REC_PYTHON))
    return nd_read_fail(t, off, "%s record in a version %u trace (version 7 introduced it)",
                nd_read_tag_names[r->tag], t->hdr.version);
  if (t->hdr.version < 11 && (r->tag == ND_REC_DEVICE_WS || r->tag == ND_REC_DEVICE_SPILL))
    return nd_read_fail(t, off, "%s record in a version %u trace (version 11 introduced it)",
                nd_read_tag_names[r->tag], t->hdr.version);
  if (t->hdr.version < 6 && (r->tag == ND_REC_DEVICE || r->tag == ND_REC_CUDA))
    return nd_read_fail(t, off, "%s record in a version %u trace (version 6 introduced it)",
                nd_read_tag_names[r->tag], t->hdr.version);
  if (t->hdr.version < 14 && r->tag == ND_REC_SCAN)
    return nd_read_fail(t, off, "SCAN record in a version %u trace (version 14 introduced it)",
                t->hdr.version);
  if (t->hdr.version < 15 && (r->tag == ND_REC_PEAK || r->tag == ND_REC_SITE_PEAK))
    return nd_read_fail(t, off, "%s record in a version %u trace (version 15 introduced it)",
                        nd_read_tag_names[r->tag], t->hdr.version);
  if (t->hdr.version < 16 && (r->tag == ND_REC_ADMITTED || r->tag == ND_REC_ADMIT_SITE ||
                              r->tag == ND_REC_REFUSAL || r->tag == ND_REC_EXEC))
    return nd_read_fail(t, off, "%s record in a version %u trace (version 16 introduced it)",
                        nd_read_tag_names[r->tag], t->hdr.version);
  if (t->hdr.version < 18 && (r->tag == ND_REC_RSS || r->tag == ND_REC_SITE_UNTOUCHED))
    return nd_read_fail(t, off, "%s record in a version %u trace (version 18 introduced it)",
                        nd_read_tag_names[r->tag], t->hdr.version);
  if (r->tag == ND_REC_EXIT && t->have_exit) return nd_read_fail(t, off, "a second EXIT record");
  if (r->tag == ND_REC_SCAN && t->have_scan) return nd_read_fail(t, off, "a second SCAN record");
  if (r->size > ND_TRACE_MAX_RECORD)
    return nd_read_fail(t, off, "%s record size %u above the maximum %u", nd_read_tag_names[r->tag],
                        r->size, ND_TRACE_MAX_RECORD);
  int var;
  uint32_t want = nd_read_size(r->tag, t->hdr.version, &var);
  if (var ? r->size < want : r->size != want)
    return nd_read_fail(t, off, "%s record size %u impossible (%s%u)", nd_read_tag_names[r->tag],
                        r->size, var ? "at least " : "", want);
  if (r->tag == ND_REC_STACK) {
    if ((r->size - want) % 8)
      return nd_read_fail(t, off, "STACK record size %u is not a whole number of frames", r->size);
    uint32_t max = t->hdr.version >= 12 ? ND_TRACE_MAX_STACK : ND_TRACE_MAX_DEPTH;
    if ((r->size - want) / 8 > max)
      return nd_read_fail(t, off, "STACK depth %u above the maximum %u", (r->size - want) / 8, max);
  }
  return nd_read_check_snap_run(t, off, r);
}

// What is wrong with a version 12 header's job fields (the offset of the field at *at), or NULL.
static const char *job_problem(const nd_trace_header_t *h, size_t *at) {
  if (h->rank_from > ND_RANK_FROM_MAX)
    return *at = offsetof(nd_trace_header_t, rank_from), "header rank source %u out of range";
  if (h->origin > ND_ORIGIN_MAX)
    return *at = offsetof(nd_trace_header_t, origin), "header origin %u out of range";
  // -1 is unknown; a size is at least 1 (the writer writes -1 for a size of 0)
  if (h->rank_from != ND_RANK_FROM_NONE &&
      (h->rank < -1 || h->local_rank < -1 || h->world_size < -1 || h->local_world_size < -1 ||
       !h->world_size || !h->local_world_size))
    return *at = offsetof(nd_trace_header_t, rank),
           "impossible rank %d, world size %d, local rank %d or local world size %d";
  return NULL;
}

// The version 12 fields of a header that has them (where the process stands in its job), checked;
// a shorter header's read as unknown. 0 or -1.
int nd_read_header_job(nd_trace_t *t) {
  nd_trace_header_t *h = &t->hdr;
  if (h->version < 12 || h->header_size < sizeof *h) {
    h->ppid = 0;
    h->rank = h->world_size = h->local_rank = h->local_world_size = -1;
    h->rank_from = ND_RANK_FROM_NONE;
    h->origin = ND_ORIGIN_UNKNOWN;
    return 0;
  }
  size_t at = 0;
  const char *why = job_problem(h, &at);
  if (why && at == offsetof(nd_trace_header_t, rank_from))
    return nd_read_fail(t, at, why, h->rank_from);
  if (why && at == offsetof(nd_trace_header_t, origin)) return nd_read_fail(t, at, why, h->origin);
  if (why)
    return nd_read_fail(t, at, why, h->rank, h->world_size, h->local_rank, h->local_world_size);
  if (h->rank_from == ND_RANK_FROM_NONE) // no variable named: no rank (a zeroed header's 0s)
    h->rank = h->world_size = h->local_rank = h->local_world_size = -1;
  return 0;
}

bool nd_trace_header_valid(const nd_trace_header_t *h) {
  size_t at;
  return !memcmp(h->magic, ND_TRACE_MAGIC, sizeof h->magic) && h->version >= 12 &&
         h->version <= ND_TRACE_VERSION && h->header_size >= sizeof *h &&
         h->header_size <= ND_TRACE_MAX_RECORD && h->depth <= ND_TRACE_MAX_DEPTH &&
         !job_problem(h, &at) &&
         !((h->version >= 13 ? h->flags : 0) & ~(uint32_t)ND_TRACE_FLAGS_KNOWN);
}

// Version 5 lengthened SITE, BLOCK, FLUSH and WORKSPACE; version 9 RESIDENT (the allocator's
// view: none in the short form); version 10 LIMITS and BREACH, and WORKSPACE again (bytes served,
// learning trims: none known in the short form). nd_read_check let through only the trace
// version's size.
_Static_assert(ND_READ_LONGEST >= sizeof(nd_rec_site_t) &&
                   ND_READ_LONGEST >= sizeof(nd_rec_block_t) &&
                   ND_READ_LONGEST >= sizeof(nd_rec_flush_t) &&
                   ND_READ_LONGEST >= sizeof(nd_rec_resident_t) &&
                   ND_READ_LONGEST >= sizeof(nd_rec_limits_t) &&
                   ND_READ_LONGEST >= sizeof(nd_rec_breach_t) &&
                   ND_READ_LONGEST >= sizeof(nd_rec_scan_t),
               "room for every lengthened record");
const char *nd_read_lengthen(const nd_rec_t *r, const char *p, char *full) {
  int var;
  uint32_t now = nd_read_size(r->tag, ND_TRACE_VERSION, &var);
  if (var || r->size >= now || now > ND_READ_LONGEST) return p;
  memset(full, 0, ND_READ_LONGEST);
  memcpy(full, p, r->size);
  if (r->tag == ND_REC_RESIDENT) // reserved in version 8
    ((nd_rec_resident_t *)(void *)full)->alloc_trimmed_bytes = 0;
  return full;
}
