// SPDX-License-Identifier: MIT
// test_config: the NDMEM_* parsers accept every documented form and reject the rest; loading
// applies good values, warns once per bad or unknown variable with the exact documented line and
// keeps the default; AT_SECURE ignores the environment. `test_config --list` prints the table.
#include "../check.h"
#include "runtime/config.h"
#include "runtime/sysmem.h"
#include "trace_format.h"

#include <sys/stat.h>
#include <unistd.h>

static char warnings[8][256];
static int nwarn;
static void collect(const char *line, void *ctx) {
  (void)ctx;
  if (nwarn < 8) snprintf(warnings[nwarn++], sizeof warnings[0], "%s", line);
}

static void put(const char *dir, const char *name, const char *text) {
  char p[512];
  snprintf(p, sizeof p, "%s/%s", dir, name);
  FILE *f = fopen(p, "w");
  fputs(text, f);
  fclose(f);
}

// The limits: every accepted form, a table of bad ones, '%' against the cgroup limit, the
// default watermark, and the cgroup and statm readers on fake /proc and /sys trees.
static void limits(void) {
  int64_t v;
  static const struct { const char *s; uint64_t base; int automatic; int64_t want; } good[] = {
      {"8G", 0, 0, 8589934592LL}, {"512m", 0, 0, 536870912}, {"1.5g", 0, 0, 1610612736},
      {"1073741824", 0, 0, 1073741824}, {"75%", 1000, 0, 750}, {"0", 0, 0, 0},
      {"off", 0, 0, 0}, {"NONE", 0, 0, 0}, {"auto", 0, 1, -1}, {"Auto", 0, 1, -1},
      {"100%", 4096, 0, 4096}, {"150%", 1000, 0, 1500}, {"2TB", 0, 0, 2199023255552LL},
      {"0.5k", 0, 0, 512}, {"12.5%", 8000, 0, 1000},
  };
  for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
    v = 77;
    if (nd_parse_limit(good[i].s, good[i].base, good[i].automatic, &v) != 0)
      fprintf(stderr, "rejected good limit '%s'\n", good[i].s);
    CHECK_EQ(v, good[i].want);
  }
  static const struct { const char *s; uint64_t base; int automatic; } bad[] = {
      {"", 1000, 1}, {"8x", 1000, 1}, {"-1", 1000, 1}, {"1.5.5g", 1000, 1}, {"75%", 0, 1},
      {"auto", 1000, 0}, {"0k", 1000, 1}, {"0.1b", 1000, 1}, {"0.0001%", 1000, 1}, {"8 G", 1000, 1},
      {"1e9", 1000, 1}, {"%", 1000, 1}, {"99999999999999999999", 1000, 1}, {"offf", 1000, 1},
      {"9000000000G", 1000, 1},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    v = 77;
    if (nd_parse_limit(bad[i].s, bad[i].base, bad[i].automatic, &v) == 0)
      fprintf(stderr, "accepted bad limit '%s'\n", bad[i].s);
    CHECK_EQ(v, 77);
  }

  // NDMEM_LIMIT_SLACK: auto, a size, a percentage of the limit (stored as -ppm); in bytes for a
  // limit: auto is the larger of 64 MiB and 10 %
  static const struct { const char *s; int64_t want, limit, bytes; } slack[] = {
      {"auto", ND_SLACK_AUTO, 100 << 20, 64 << 20}, {"AUTO", ND_SLACK_AUTO, 8LL << 30, 858993459},
      {"0", 0, 100 << 20, 0}, {"16m", 16 << 20, 100 << 20, 16 << 20},
      {"10%", -100000, 100 << 20, 10485760}, {"12.5%", -125000, 8000, 1000},
      {"1000%", -10000000, 1000, 10000}, {"1.5g", 1610612736, 1, 1610612736},
  };
  for (size_t i = 0; i < sizeof slack / sizeof slack[0]; i++) {
    v = 77;
    if (nd_parse_slack(slack[i].s, &v) != 0) fprintf(stderr, "rejected good slack '%s'\n", slack[i].s);
    CHECK_EQ(v, slack[i].want);
    CHECK_EQ(nd_config_slack_bytes(v, slack[i].limit), slack[i].bytes);
  }
  CHECK_EQ(nd_config_slack_bytes(ND_SLACK_AUTO, 0), 0); // no limit: no slack
  static const char *bad_slack[] = {"", "x", "-1m", "1001%", "%", "10%%", "autox", "8 m"};
  for (size_t i = 0; i < sizeof bad_slack / sizeof bad_slack[0]; i++) {
    v = 77;
    if (nd_parse_slack(bad_slack[i], &v) == 0) fprintf(stderr, "accepted bad slack '%s'\n", bad_slack[i]);
    CHECK_EQ(v, 77);
  }

  // A fake cgroup v2 tree: the process in /a/b, limits at / (none: "max"), /a (300 MiB) and
  // /a/b (500 MiB): the tighter one, up the path, wins.
  char root[] = "/tmp/ndmem-cg-XXXXXX";
  CHECK(mkdtemp(root) != NULL);
  char d[600], d2[600], mi[1200], pc[600];
  snprintf(d, sizeof d, "%s/sys", root);
  mkdir(d, 0700);
  snprintf(d2, sizeof d2, "%s/sys/a", root);
  mkdir(d2, 0700);
  put(d2, "memory.max", "314572800\n");
  snprintf(d2, sizeof d2, "%s/sys/a/b", root);
  mkdir(d2, 0700);
  put(d2, "memory.max", "524288000\n");
  put(d, "memory.max", "max\n");
  snprintf(mi, sizeof mi,
           "22 1 8:1 / / rw - ext4 /dev/sda1 rw\n"
           "30 22 0:26 / %s rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n"
           "31 22 0:27 / /overlay rw - overlay overlay rw,lowerdir=/x:/y\n", d);
  put(root, "mountinfo", mi);
  put(root, "cgroup", "0::/a/b\n");
  char dir[1024], mount[1024];
  int v1 = -1;
  snprintf(mi, sizeof mi, "%s/mountinfo", root);
  snprintf(pc, sizeof pc, "%s/cgroup", root);
  CHECK_EQ(nd_cgroup_locate(pc, mi, dir, mount, sizeof dir, &v1), 0);
  CHECK_STR(dir, d2);
  CHECK_STR(mount, d);
  CHECK_EQ(v1, 0);
  CHECK_EQ(nd_cgroup_walk(dir, mount, v1), 314572800);
  // Hybrid: the v1 memory controller wins; its mount root is the cgroup itself (a namespace).
  char d3[600];
  snprintf(d3, sizeof d3, "%s/mem", root);
  mkdir(d3, 0700);
  put(d3, "memory.limit_in_bytes", "9223372036854771712\n"); // v1's "unlimited"
  char mi2[1600];
  snprintf(mi2, sizeof mi2,
           "30 22 0:26 / %s rw - cgroup2 cgroup2 rw\n"
           "34 22 0:31 /docker/abc %s rw,relatime - cgroup cgroup rw,memory\n", d, d3);
  put(root, "mountinfo", mi2);
  put(root, "cgroup", "4:memory:/docker/abc\n0::/a/b\n");
  CHECK_EQ(nd_cgroup_locate(pc, mi, dir, mount, sizeof dir, &v1), 0);
  CHECK_STR(dir, d3);
  CHECK_EQ(v1, 1);
  CHECK_EQ(nd_cgroup_walk(dir, mount, v1), 0);
  put(d3, "memory.limit_in_bytes", "268435456\n");
  CHECK_EQ(nd_cgroup_walk(dir, mount, v1), 268435456);
  put(root, "cgroup", "1:cpu:/x\n");
  CHECK_EQ(nd_cgroup_locate(pc, mi, dir, mount, sizeof dir, &v1), -1);

  // Loading: '%' of the smaller of RAM and the cgroup limit; the watermark defaults to 90 % of
  // the cgroup limit; bad values cost one line each and turn the limit off.
  char env_dir[700];
  snprintf(env_dir, sizeof env_dir, "NDMEM_TEST_CGROUP_DIR=%s/sys/a", root);
  char *env[] = {"NDMEM_MAX_BYTES=50%", "NDMEM_MAX_PHYSICAL_BYTES=1.5g", env_dir,
                 "NDMEM_ON_LIMIT=warn", NULL};
  nd_config_t cfg;
  nwarn = 0;
  CHECK_EQ(nd_config_load(&cfg, env, 0, collect, NULL), 0);
  CHECK_EQ(cfg.cgroup_bytes, 314572800);
  CHECK_EQ(cfg.max_bytes, 157286400);
  CHECK_EQ(cfg.max_physical_bytes, 1610612736);
  CHECK_EQ(cfg.warn_at, 283115520);
  CHECK_EQ(cfg.on_limit, 1);
  // 1.5g is above the 300 MiB cgroup limit: kept, said in one line (a remark, not a bad value)
  CHECK_EQ(nwarn, 1);
  CHECK_STR(warnings[0], "ndmem: NDMEM_MAX_PHYSICAL_BYTES='1.5g' is 1.50 GiB (1610612736 B), more "
                         "than the cgroup memory limit 300.00 MiB (314572800 B): it is never "
                         "reached before memory runs out; kept as given");
  nwarn = 0;
  char *env2[] = {"NDMEM_MAX_BYTES=8x", "NDMEM_WARN_AT=lots", "NDMEM_ON_LIMIT=explode", env_dir, NULL};
  CHECK_EQ(nd_config_load(&cfg, env2, 0, collect, NULL), 3);
  CHECK_EQ(cfg.max_bytes, 0);
  CHECK_EQ(cfg.warn_at, 283115520); // auto
  CHECK_EQ(cfg.on_limit, 0);
  CHECK_STR(warnings[0], "ndmem: NDMEM_MAX_BYTES='8x' is not a limit (e.g. 8G, 512m, 1.5g, "
                         "1073741824, 75% or off); using none (the limit is off)");
  CHECK_STR(warnings[1], "ndmem: NDMEM_WARN_AT='lots' is not a limit (e.g. 8G, 512m, 1.5g, "
                         "1073741824, 75%, auto or off); using auto");
  CHECK_STR(warnings[2], "ndmem: NDMEM_ON_LIMIT='explode' is not one of fail/warn/abort; using fail");
  // Which requests a limit may refuse, and how far the others may pass it
  char *env_adm[] = {"NDMEM_LIMIT_REFUSE=%exe,libfoo.so*", "NDMEM_LIMIT_SLACK=5%",
                     "NDMEM_LIMIT_LARGE=1g", NULL};
  nwarn = 0;
  CHECK_EQ(nd_config_load(&cfg, env_adm, 0, collect, NULL), 0);
  CHECK_STR(cfg.limit_refuse, "%exe,libfoo.so*");
  CHECK_EQ(cfg.limit_slack, -50000);
  CHECK_EQ(cfg.limit_large, 1073741824);
  char *env_adm2[] = {"NDMEM_LIMIT_REFUSE=", "NDMEM_LIMIT_SLACK=lots", NULL};
  nwarn = 0;
  CHECK_EQ(nd_config_load(&cfg, env_adm2, 0, collect, NULL), 1); // an empty list is none
  CHECK_STR(cfg.limit_refuse, "");
  CHECK_EQ(cfg.limit_slack, ND_SLACK_AUTO);
  CHECK_EQ(cfg.limit_large, 64 << 20);
  CHECK_STR(warnings[0], "ndmem: NDMEM_LIMIT_SLACK='lots' is not a slack (e.g. 64m, 10% of the "
                         "limit, auto or 0); using auto");
  char *env3[] = {"NDMEM_TEST_CGROUP_DIR=/nonexistent", "NDMEM_WARN_AT=0", NULL};
  nd_config_load(&cfg, env3, 0, collect, NULL);
  CHECK_EQ(cfg.cgroup_bytes, 0);
  CHECK_EQ(cfg.warn_at, 0);

  // Device limits: every device, device i alone (its own setting wins, in any order), '%' of
  // the device's memory kept as a fraction in units of 2^-40, a bad value for one device only.
  char *env4[] = {"NDMEM_MAX_DEVICE_BYTES_1=512k", "NDMEM_MAX_DEVICE_BYTES=1g",
                  "NDMEM_MAX_DEVICE_BYTES_15=50%", "NDMEM_MAX_DEVICE_BYTES_3=banana",
                  "NDMEM_MAX_DEVICE_BYTES_16=1g", "NDMEM_MAX_DEVICE_BYTES_x=1g", NULL};
  nwarn = 0;
  CHECK_EQ(nd_config_load(&cfg, env4, 0, collect, NULL), 3);
  CHECK_EQ(cfg.max_device[16], 1073741824);
  CHECK_EQ(cfg.max_device[1], 524288);
  CHECK_EQ(cfg.max_device[15], 1ll << 39);
  CHECK_EQ(cfg.max_device_frac, 1u << 15);
  CHECK_EQ(cfg.max_device_given, (1u << 1) | (1u << 15));
  CHECK_STR(warnings[0], "ndmem: NDMEM_MAX_DEVICE_BYTES_3='banana' is not a limit (e.g. 8G, 512m, "
                         "1.5g, 1073741824, 75% of the device or off); using none (the limit is "
                         "off)");
  CHECK_STR(warnings[1], "ndmem: NDMEM_MAX_DEVICE_BYTES_16 is not a known setting; ignored (see "
                         "ndmem(1): `man ndmem`)");
  CHECK_STR(warnings[2], "ndmem: NDMEM_MAX_DEVICE_BYTES_x is not a known setting; ignored (see "
                         "ndmem(1): `man ndmem`)");
  int frac = 0;
  int64_t v64 = 0;
  CHECK_EQ(nd_parse_device_limit("100%", &v64, &frac), 0);
  CHECK(frac && v64 == 1ll << 40);
  CHECK_EQ(nd_parse_device_limit("101%", &v64, &frac), -1);
  CHECK_EQ(nd_parse_device_limit("off", &v64, &frac), 0);
  CHECK(!frac && v64 == 0);

  // statm: resident - shared pages
  uint64_t b = 0;
  CHECK_EQ(nd_statm_parse("1000 300 100 10 0 200 0\n", 4096, &b), 0);
  CHECK_EQ(b, 200 * 4096);
  CHECK_EQ(nd_statm_parse("1000 30 100 10 0 200 0\n", 4096, &b), 0);
  CHECK_EQ(b, 0);
  CHECK_EQ(nd_statm_parse("1000 x", 4096, &b), -1);
  CHECK_EQ(nd_statm_parse("", 4096, &b), -1);

  // /proc/PID/stat: the threads still running (num_threads, field 20; less the main thread
  // where it is a zombie), whatever the command name holds
  const char *tail = " 1 1 1 0 -1 4194560 100 0 0 0 1 1 0 0 20 0 5 0 123 4096 100";
  char st[256];
  snprintf(st, sizeof st, "4242 (python3) S%s", tail);
  CHECK_EQ(nd_stat_threads_parse(st), 5);
  snprintf(st, sizeof st, "4242 (python3) Z%s", tail);
  CHECK_EQ(nd_stat_threads_parse(st), 4);
  snprintf(st, sizeof st, "4242 (a ) Z (b) S%s", tail);
  CHECK_EQ(nd_stat_threads_parse(st), 5);
  CHECK_EQ(nd_stat_threads_parse("4242 (python3) S 1 1 1"), -1);
  CHECK_EQ(nd_stat_threads_parse("4242 python3 S"), -1);
  CHECK_EQ(nd_stat_threads_parse(""), -1);

  char cmd[100];
  snprintf(cmd, sizeof cmd, "rm -rf %s", root);
  CHECK_EQ(system(cmd), 0);
}


// The rank reading behind the trace header and %r (nd_config_rank): each launcher's family gives
// rank, world size, local rank and local world size; the first family whose rank variable is set
// (and not empty) wins, even with a bad value; a value that is not a plain non-negative integer is
// unknown (-1), alone.
static void ranks(void) {
  static const struct {
    const char *env[6];
    int32_t rank, size, local, local_size;
    uint32_t from;
  } cases[] = {
      {{NULL}, -1, -1, -1, -1, ND_RANK_FROM_NONE},
      {{"RANK=3", "WORLD_SIZE=8", "LOCAL_RANK=1", "LOCAL_WORLD_SIZE=2"}, 3, 8, 1, 2,
       ND_RANK_FROM_TORCH},
      {{"OMPI_COMM_WORLD_RANK=1", "OMPI_COMM_WORLD_SIZE=2", "OMPI_COMM_WORLD_LOCAL_RANK=1",
        "OMPI_COMM_WORLD_LOCAL_SIZE=2", "PMIX_RANK=1"}, 1, 2, 1, 2, ND_RANK_FROM_OMPI},
      {{"PMI_RANK=5", "PMI_SIZE=6", "MPI_LOCALRANKID=0", "MPI_LOCALNRANKS=3"}, 5, 6, 0, 3,
       ND_RANK_FROM_PMI},
      {{"PMIX_RANK=4", "WORLD_SIZE=9"}, 4, -1, -1, -1, ND_RANK_FROM_PMIX},
      {{"SLURM_PROCID=12", "SLURM_NTASKS=16", "SLURM_LOCALID=3", "SLURM_NNODES=4"}, 12, 16, 3, -1,
       ND_RANK_FROM_SLURM},
      // torch's RANK before the launcher around it; the sizes come from the same family only
      {{"SLURM_PROCID=7", "SLURM_NTASKS=8", "RANK=2", "OMPI_COMM_WORLD_SIZE=4"}, 2, -1, -1, -1,
       ND_RANK_FROM_TORCH},
      // bad values: unknown, not their digits; the family that has its rank set still decides
      {{"RANK=abc", "OMPI_COMM_WORLD_RANK=1"}, -1, -1, -1, -1, ND_RANK_FROM_TORCH},
      {{"RANK=-1", "WORLD_SIZE=2"}, -1, 2, -1, -1, ND_RANK_FROM_TORCH},
      {{"RANK=1 ", "WORLD_SIZE=+2", "LOCAL_RANK=0x1", "LOCAL_WORLD_SIZE=2k"}, -1, -1, -1, -1,
       ND_RANK_FROM_TORCH},
      {{"RANK=2147483648", "WORLD_SIZE=0", "LOCAL_RANK=", "LOCAL_WORLD_SIZE=1.5"}, -1, -1, -1, -1,
       ND_RANK_FROM_TORCH},
      {{"RANK=007", "WORLD_SIZE=2147483647"}, 7, 2147483647, -1, -1, ND_RANK_FROM_TORCH},
      // an empty rank variable is an unset one: the next family's
      {{"RANK=", "WORLD_SIZE=4", "PMI_RANK=0", "PMI_SIZE=1"}, 0, 1, -1, -1, ND_RANK_FROM_PMI},
      // a name that only starts like one is not it
      {{"RANKS=1", "XRANK=2", "RANK_X=3"}, -1, -1, -1, -1, ND_RANK_FROM_NONE},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char *env[7] = {0};
    for (int k = 0; k < 6 && cases[i].env[k]; k++) env[k] = (char *)cases[i].env[k];
    nd_rank_t r = {0, 0, 0, 0, 99};
    nd_config_rank(env, &r);
    if (r.rank != cases[i].rank || r.world_size != cases[i].size ||
        r.local_rank != cases[i].local || r.local_world_size != cases[i].local_size ||
        r.from != cases[i].from)
      fprintf(stderr, "rank case %zu (%s ...): got %d %d %d %d from %u\n", i,
              cases[i].env[0] ? cases[i].env[0] : "none", r.rank, r.world_size, r.local_rank,
              r.local_world_size, r.from);
    CHECK_EQ(r.rank, cases[i].rank);
    CHECK_EQ(r.world_size, cases[i].size);
    CHECK_EQ(r.local_rank, cases[i].local);
    CHECK_EQ(r.local_world_size, cases[i].local_size);
    CHECK_EQ(r.from, cases[i].from);
    // %r is the same reading: the rank, 0 when unknown
    char path[64], want[32];
    CHECK_EQ(nd_config_expand_path(path, sizeof path, "%r", env), 0);
    snprintf(want, sizeof want, "%d", cases[i].rank >= 0 ? cases[i].rank : 0);
    CHECK_STR(path, want);
  }
  CHECK_STR(nd_rank_from_name(ND_RANK_FROM_OMPI), "OMPI_COMM_WORLD_RANK");
  CHECK(nd_rank_from_name(ND_RANK_FROM_NONE) == NULL);
  CHECK(nd_rank_from_name(ND_RANK_FROM_MAX + 1) == NULL);
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
                 "NDMEM_SUMMARYX=1", "NDMEM_SUMMARY", "XNDMEM_ENABLED=0",
                 "NDMEM_LIB=/opt/ndmem/libndmem.so", "NDMEM_LIBX=1", NULL};
  nd_config_t cfg;
  int n = nd_config_load(&cfg, env, 0, collect, NULL);
  CHECK_EQ(cfg.summary, 2);
  CHECK_EQ(cfg.enabled, 0);
  CHECK_EQ(cfg.follow_fork, 1);
  CHECK_EQ(n, 4); // NDMEM_LIB, the wrapper's, is not remarked on; NDMEM_LIBX is
  CHECK_EQ(nwarn, 4);
  CHECK_STR(warnings[0], "ndmem: NDMEM_FOLLOW_FORK='maybe' is not a boolean (0/1, yes/no, "
                         "true/false, on/off); using 1");
  CHECK_STR(warnings[1], "ndmem: NDMEM_SUMMARYX is not a known setting; ignored (see ndmem(1): `man ndmem`)");
  CHECK_STR(warnings[2], "ndmem: NDMEM_SUMMARY is not a known setting; ignored (see ndmem(1): `man ndmem`)");
  CHECK_STR(warnings[3], "ndmem: NDMEM_LIBX is not a known setting; ignored (see ndmem(1): `man ndmem`)");
  // NDMEM_ENABLED=0 is the off switch: what it silences is not listed

  // Every setting that cannot take effect says so, naming what it fell back to or what decides.
  static const struct { const char *env[4]; const char *want; } noeffect[] = {
      {{"NDMEM_WS_MIN=0"}, "ndmem: NDMEM_WS_MIN='0' is below the minimum 1 B; using 65536"},
      {{"NDMEM_TEST_STATM=/x%q"}, NULL}, // a plain path: any bytes are fine
      {{"NDMEM_WORKSPACES=0", "NDMEM_WS_GUARD=1"},
       "ndmem: NDMEM_WS_GUARD has no effect: NDMEM_WORKSPACES=0 (no workspace is made)"},
      {{"NDMEM_TRACE=off", "NDMEM_DEPTH=8"},
       "ndmem: NDMEM_DEPTH has no effect: NDMEM_TRACE=0 (no trace is written)"},
      {{"NDMEM_WS_CYCLES=5"}, "ndmem: NDMEM_WS_CYCLES has no effect: NDMEM_WS_LEARNING is not "
                              "over_time (only over_time learns over several cycles)"},
      {{"NDMEM_WS_LEARNING=over_time", "NDMEM_WS_CYCLES=5"}, NULL},
      {{"NDMEM_WS_ALLOCATION=strict", "NDMEM_WS_OVERALLOCATE=0.5"},
       "ndmem: NDMEM_WS_OVERALLOCATE has no effect: NDMEM_WS_ALLOCATION=strict (the arena is "
       "the plan, nothing more)"},
      {{"NDMEM_WS_MMAP_DIR=/var/tmp"}, "ndmem: NDMEM_WS_MMAP_DIR has no effect: "
                                       "NDMEM_WS_LOCATION=ram (arenas are anonymous memory)"},
      {{"NDMEM_SUMMARY=0", "NDMEM_SUMMARY_CHILDREN=1"},
       "ndmem: NDMEM_SUMMARY_CHILDREN has no effect: NDMEM_SUMMARY=0 (no summary is printed)"},
  };
  for (size_t i = 0; i < sizeof noeffect / sizeof noeffect[0]; i++) {
    nwarn = 0;
    nd_config_load(&cfg, (char **)noeffect[i].env, 0, collect, NULL);
    CHECK_EQ(nwarn, noeffect[i].want ? 1 : 0);
    if (noeffect[i].want && nwarn) CHECK_STR(warnings[0], noeffect[i].want);
  }
  CHECK_EQ(cfg.summary_children, 1);
  nwarn = 0; // a test-only path that is malformed names no default it does not have
  char *env8[] = {"NDMEM_TEST_CGROUP_DIR=", NULL};
  nd_config_load(&cfg, env8, 0, collect, NULL);
  CHECK_EQ(nwarn, 1);
  CHECK_STR(warnings[0], "ndmem: NDMEM_TEST_CGROUP_DIR='' is not a path (at most 511 bytes); "
                         "using none (unset)");

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
  // %r is the rank nd_config_rank reads (the trace header's): a value that is not a plain
  // non-negative integer is unknown, written 0, never its bytes (RANK=../trav once wrote outside
  // the folder the pattern names).
  static const struct { const char *rank, *want; } unsafe[] = {
      {"RANK=../trav", "/tmp/safe/0.trace"}, {"RANK=..", "/tmp/safe/0.trace"},
      {"RANK=.", "/tmp/safe/0.trace"}, {"RANK=a/b\\c d", "/tmp/safe/0.trace"},
      {"RANK=", "/tmp/safe/0.trace"}, {"RANK=node-1.rank_2", "/tmp/safe/0.trace"},
      {"RANK=\xc3\xa9\n", "/tmp/safe/0.trace"}, {"RANK=-1", "/tmp/safe/0.trace"},
      {"RANK=007", "/tmp/safe/7.trace"}, {"RANK=2147483647", "/tmp/safe/2147483647.trace"},
      {"RANK=2147483648", "/tmp/safe/0.trace"},
  };
  for (size_t i = 0; i < sizeof unsafe / sizeof unsafe[0]; i++) {
    char *env6[] = {(char *)unsafe[i].rank, NULL};
    CHECK_EQ(nd_config_expand_path(path, sizeof path, "/tmp/safe/%r.trace", env6), 0);
    CHECK_STR(path, unsafe[i].want);
  }
  char longrank[200] = "RANK=";
  memset(longrank + 5, '7', 150);
  char *env7[] = {longrank, NULL};
  CHECK_EQ(nd_config_expand_path(path, sizeof path, "%r", env7), 0);
  CHECK_STR(path, "0");
  CHECK_EQ(nd_config_expand_path(path, sizeof path, "bad%", env5), -1);
  CHECK_EQ(nd_config_expand_path(path, 4, "toolong", env5), -1);
  limits();
  ranks();
  return CHECK_DONE();
}
