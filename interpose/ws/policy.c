// SPDX-License-Identifier: MIT
// policy.c: declared workspaces. A thread's named spaces (ndmem_workspace_enter, and "cycle" for
// ndmem_cycle_begin), their cycles marked by the program (a stack of open ones: they nest), and
// their policies (ndmem_workspace_configure: ND4J's keys, the same NDMEM_WS_* names; the device
// workspaces read their policy lists with the same nd_ws_option).
#include "ws/space.h"

#include "common/fmt.h"

#include <string.h>

static space_t *named_space(ws_thread_t *w, const char *name) {
  for (space_t *s = w->named; s; s = s->next)
    if (strncmp(s->name, name, sizeof s->name - 1) == 0) return s;
  space_t *s = nd_ws_space_new(name, 0);
  if (!s) return NULL;
  s->next = w->named;
  w->named = s;
  return s;
}

// One policy of a workspace configuration (ndmem_workspace_configure's keys): 1 when the key is
// known and its value good (then applied to *c), 0 for an unknown key, -1 for a bad value.
int nd_ws_option(ws_config_t *c, const char *key, size_t keylen, const char *val) {
  static const struct { const char *key; int kind; const char *words; } keys[] = {
      {"learning", 'c', "none|first_loop|over_time"}, {"cycles", 'i', NULL},
      {"allocation", 'c', "strict|overallocate"},     {"overallocate", 'f', NULL},
      {"spill", 'c', "external|reallocate|fail"},     {"reset", 'c', "block_left|endofbuffer"},
      {"location", 'c', "ram|mmap"},                  {"initial_size", 's', NULL},
      {"min_size", 's', NULL},                        {"max_size", 's', NULL}};
  for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
    if (strlen(keys[k].key) != keylen || strncmp(key, keys[k].key, keylen)) continue;
    int64_t v;
    int ok = keys[k].kind == 'c'   ? nd_parse_choice(val, keys[k].words, &v) == 0
             : keys[k].kind == 'i' ? nd_parse_int(val, &v) == 0 && v >= 1 && v <= 1000
             : keys[k].kind == 'f' ? nd_parse_fraction(val, &v) == 0
                                   : nd_parse_size(val, 0, &v) == 0;
    if (!ok) return -1;
    switch (k) {
    case 0: c->learning = (ws_learning_t)v; break;
    case 1: c->cycles_before_init = (uint32_t)v; break;
    case 2: c->allocation = (ws_allocation_t)v; break;
    case 3: c->overallocation_limit = (double)v / 1e6; break;
    case 4: c->spill = (ws_spill_t)v; break;
    case 5: c->reset = (ws_reset_t)v; break;
    case 6: c->location = (ws_location_t)v; break;
    case 7: c->initial_size = (uint64_t)v; break;
    case 8: c->min_size = (uint64_t)v; break;
    default: c->max_size = (uint64_t)v; break;
    }
    return 1;
  }
  return 0;
}

// The next item of a comma-separated option list into item (cut at its size); *p moves past it.
size_t nd_ws_next_item(const char **p, char *item, size_t cap) {
  size_t n = 0;
  while ((*p)[n] && (*p)[n] != ',' && n + 1 < cap) item[n] = (*p)[n], n++;
  item[n] = 0;
  *p += n;
  while (**p && **p != ',') (*p)++;
  if (**p == ',') (*p)++;
  return n;
}

int nd_ws_configure(const char *name, const char *opts) {
  nd_tls_t *t = &nd_tls;
  if (nd_ws_min == SIZE_MAX || nd_thread_prepare(t) != ND_T_COUNT) return -1;
  ws_thread_t *w = nd_ws_thread(t);
  space_t *s = w ? named_space(w, name ? name : "cycle") : NULL;
  if (!s || !opts) return -1;
  int rc = 0;
  ws_config_t c = s->learn.cfg;
  for (const char *p = opts; *p;) {
    char item[128];
    nd_ws_next_item(&p, item, sizeof item);
    char *eq = strchr(item, '=');
    if (!item[0] || (eq && nd_ws_option(&c, item, (size_t)(eq - item), eq + 1) == 1)) continue;
    nd_buf_t b;
    nd_ws_say(&b, "ndmem: ndmem_workspace_configure(\"", s, "\"): '");
    nd_buf_str(&b, item);
    nd_buf_str(&b, "' is not a known option with a valid value; ignored");
    nd_buf_line(&b, 2);
    rc = -1;
  }
  ws_learn_configure(&s->learn, s, &c); // arenas stay registered for the blocks they hold
  return rc;
}

void nd_ws_cycle_begin(const char *name) {
  nd_tls_t *t = &nd_tls;
  if (nd_ws_min == SIZE_MAX || t->mode != ND_T_COUNT) return;
  ws_thread_t *w = nd_ws_thread(t);
  if (!w || w->depth >= 16) return;
  w->marked = 1;
  space_t *s = named_space(w, name ? name : "cycle");
  if (!s) return;
  w->stack[w->depth++] = s;
  ws_learn_begin(&s->learn, s); // the previous cycle's blocks had until now to be freed
}

void nd_ws_cycle_end(void) {
  nd_tls_t *t = &nd_tls;
  ws_thread_t *w = t->ws;
  if (!w || !w->depth) return;
  space_t *s = w->stack[--w->depth];
  ws_learn_end(&s->learn, s);
}

