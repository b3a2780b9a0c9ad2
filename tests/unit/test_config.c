// SPDX-License-Identifier: MIT
// test_config: the NDMEM_* parsers accept every documented form and reject the rest; loading
// applies good values, warns once per bad or unknown variable with the exact documented line and
// keeps the default; AT_SECURE ignores the environment. `test_config --list` prints the table.
#include "../check.h"
#include "config.h"

#include <unistd.h>

static char warnings[8][256];
static int nwarn;
static void collect(const char *line, void *ctx) {
  (void)ctx;
  if (nwarn < 8) snprintf(warnings[nwarn++], sizeof warnings[0], "%s", line);
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "--list") == 0) {
    for (size_t i = 0; i < nd_options_count; i++) printf("%s\n", nd_options[i].name);
    return 0;
  }
  int64_t v;
  static const struct { const char *s; uint64_t base; int64_t want; } good[] = {
      {"1073741824", 0, 1073741824}, {"0", 0, 0},           {"512k", 0, 524288},
      {"512KB", 0, 524288},          {"512KiB", 0, 524288}, {"512m", 0, 536870912},
      {"8G", 0, 8589934592LL},       {"1.5g", 0, 1610612736}, {"0.5k", 0, 512},
      {"2T", 0, 2199023255552LL},    {"7b", 0, 7},          {"75%", 1000, 750},
      {"12.5%", 8000, 1000},         {"100%", 123, 123},    {"1.25", 0, 1},
  };
  for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
    v = -1;
    CHECK_EQ(nd_parse_size(good[i].s, good[i].base, &v), 0);
    CHECK_EQ(v, good[i].want);
  }
  static const char *bad[] = {"", "abc", "12x", "1.5.5", "%", "75%", "-1", "8 G", "1e9",
                              "99999999999999999999", "16E", "k", "5%%"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    v = 77;
    if (nd_parse_size(bad[i], 0, &v) == 0) fprintf(stderr, "accepted bad size '%s'\n", bad[i]);
    CHECK_EQ(nd_parse_size(bad[i], 0, &v), -1);
    CHECK_EQ(v, 77);
  }
  CHECK_EQ(nd_parse_size("9223372036854775807", 0, &v), 0);
  CHECK_EQ(nd_parse_size("8388608T", 0, &v), -1); // 2^63: one past the largest
  static const char *yes[] = {"1", "yes", "TRUE", "On"}, *no[] = {"0", "No", "false", "OFF"};
  for (int i = 0; i < 4; i++) {
    CHECK(nd_parse_bool(yes[i], &v) == 0 && v == 1);
    CHECK(nd_parse_bool(no[i], &v) == 0 && v == 0);
  }
  CHECK_EQ(nd_parse_bool("2", &v), -1);
  CHECK_EQ(nd_parse_bool("", &v), -1);
  CHECK(nd_parse_int("-12", &v) == 0 && v == -12);
  CHECK_EQ(nd_parse_int("1x", &v), -1);
  CHECK_EQ(nd_parse_int("", &v), -1);
  CHECK_EQ(nd_parse_int("99999999999999999999", &v), -1);

  char *env[] = {"PATH=/bin", "NDMEM_SUMMARY=2", "NDMEM_ENABLED=no", "NDMEM_FOLLOW_FORK=maybe",
                 "NDMEM_SUMMARYX=1", "NDMEM_SUMMARY", "XNDMEM_ENABLED=0", NULL};
  nd_config_t cfg;
  int n = nd_config_load(&cfg, env, 0, collect, NULL);
  CHECK_EQ(cfg.summary, 2);
  CHECK_EQ(cfg.enabled, 0);
  CHECK_EQ(cfg.follow_fork, 1);
  CHECK_EQ(n, 3);
  CHECK_EQ(nwarn, 3);
  CHECK_STR(warnings[0], "ndmem: NDMEM_FOLLOW_FORK='maybe' is not a boolean (0/1, yes/no, "
                         "true/false, on/off); using 1");
  CHECK_STR(warnings[1], "ndmem: NDMEM_SUMMARYX is not a known setting; ignored (see `ndmem --help`)");
  CHECK_STR(warnings[2], "ndmem: NDMEM_SUMMARY is not a known setting; ignored (see `ndmem --help`)");

  char *env2[] = {"NDMEM_SUMMARY=7", NULL};
  nwarn = 0;
  nd_config_load(&cfg, env2, 0, collect, NULL);
  CHECK_EQ(cfg.summary, 1);
  CHECK_STR(warnings[0], "ndmem: NDMEM_SUMMARY='7' is not an integer in 0..2; using 1");

  nwarn = 0;
  CHECK_EQ(nd_config_load(&cfg, env, 1, collect, NULL), 0); // AT_SECURE
  CHECK_EQ(nwarn, 0);
  CHECK(cfg.summary == 1 && cfg.enabled == 1 && cfg.follow_fork == 1);
  // the trace settings and the NDMEM_OUTPUT pattern
  CHECK(cfg.trace == 1 && cfg.depth == 32 && cfg.track_min == 8192 && cfg.sample == 524288 &&
        cfg.flush_ms == 1000);
  CHECK_STR(cfg.output, "ndmem.%p.trace");
  char *env3[] = {"NDMEM_OUTPUT=/tmp/x.%q", "NDMEM_TRACK_MIN=64k", "NDMEM_DEPTH=500", NULL};
  nwarn = 0;
  nd_config_load(&cfg, env3, 0, collect, NULL);
  CHECK_STR(cfg.output, "ndmem.%p.trace");
  CHECK_EQ(cfg.track_min, 65536);
  CHECK_EQ(cfg.depth, 32);
  CHECK_EQ(nwarn, 2);
  CHECK_STR(warnings[0], "ndmem: NDMEM_OUTPUT='/tmp/x.%q' is not a path pattern (at most 511 "
                         "bytes; %p %h %r %%); using ndmem.%p.trace");
  CHECK_STR(warnings[1], "ndmem: NDMEM_DEPTH='500' is not an integer in 1..128; using 32");
  char path[600], want[600], host[256];
  char *env4[] = {"HOME=/root", "OMPI_COMM_WORLD_RANK=5", "RANK=3", NULL};
  CHECK_EQ(nd_config_expand_path(path, sizeof path, "/t/%h-%r-%p-100%%.trace", env4), 0);
  gethostname(host, sizeof host);
  snprintf(want, sizeof want, "/t/%s-3-%d-100%%.trace", host, (int)getpid());
  CHECK_STR(path, want);
  char *env5[] = {"PMI_RANK=9", "OMPI_COMM_WORLD_RANK=7", NULL};
  CHECK_EQ(nd_config_expand_path(path, sizeof path, "r%r", env5), 0);
  CHECK_STR(path, "r7");
  CHECK_EQ(nd_config_expand_path(path, sizeof path, "r%r", NULL), 0);
  CHECK_STR(path, "r0");
  CHECK_EQ(nd_config_expand_path(path, sizeof path, "bad%", env5), -1);
  CHECK_EQ(nd_config_expand_path(path, 4, "toolong", env5), -1);
  return CHECK_DONE();
}
