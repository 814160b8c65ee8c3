/* Command-line parsing for gpusim-workload: one table of options, each with the field it
 * sets and how to read it. What each mode requires is checked in main.c. */
#include "wl.h"

#include <errno.h>
#include <getopt.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum wl_kind { K_SIZE, K_U64, K_DOUBLE, K_PATH, K_ALLOC, K_LAUNCH, K_INT, K_FLAG };

struct wl_optdef {
  const char *name;
  enum wl_kind kind;
  size_t off;  /* field of struct wl_opts */
  size_t flag; /* bool field set when given, or 0 */
};

#define F(field) offsetof(struct wl_opts, field)
static const struct wl_optdef wl_optdefs[] = {
  { "path", K_PATH, F(path), 0 },
  { "device", K_INT, F(device), 0 },
  { "alloc", K_ALLOC, F(alloc), 0 },
  { "chunk", K_SIZE, F(chunk), 0 },
  { "bytes", K_SIZE, F(bytes), 0 },
  { "hold-bytes", K_SIZE, F(hold_bytes), 0 },
  { "max-bytes", K_SIZE, F(max_bytes), 0 },
  { "seconds", K_DOUBLE, F(seconds), F(have_seconds) },
  { "duty", K_DOUBLE, F(duty), 0 },
  { "every", K_DOUBLE, F(every), F(have_every) },
  { "kernel-us", K_U64, F(kernel_us), 0 },
  { "launch", K_LAUNCH, F(launch), 0 },
  { "us", K_U64, F(us), F(have_us) },
  { "count", K_U64, F(count), 0 },
  { "ops", K_U64, F(ops), 0 },
  { "seed", K_U64, F(seed), 0 },
  { "rounds", K_U64, F(rounds), F(have_rounds) },
  { "procaddr-version", K_U64, F(procaddr_version), F(have_procaddr_version) },
  { "start-at-ns", K_U64, F(start_at_ns), F(have_start_at) },
  { "window-start-ns", K_U64, F(window_start_ns), F(have_window_start) },
  { "window-end-ns", K_U64, F(window_end_ns), F(have_window_end) },
  { "latency", K_FLAG, F(latency), 0 },
};
#undef F
#define WL_NOPTS (sizeof(wl_optdefs) / sizeof(wl_optdefs[0]))

static const char wl_usage[] =
  "usage: gpusim-workload MODE [options]\n"
  "modes:\n"
  "  info                                   devices, memory, SMs, UUIDs\n"
  "  alloc-until-oom --chunk SIZE [--rounds N]\n"
  "                                         allocate until the driver refuses, free it all;\n"
  "                                         N times (default 1)\n"
  "  hold --bytes SIZE [--chunk SIZE]       allocate, then wait for SIGTERM/SIGINT/SIGUSR1 or EOF "
  "on stdin\n"
  "  busy --seconds T [--duty D | --every E] [--kernel-us U] [--hold-bytes SIZE]\n"
  "       [--start-at-ns S] [--window-start-ns A] [--window-end-ns B] [--latency]\n"
  "                                         E: one step every E seconds, as a rarely\n"
  "                                         called service does (instead of a duty cycle);\n"
  "                                         S: start at CLOCK_MONOTONIC time S and stop at S+T;\n"
  "                                         reports the device time of its kernels inside\n"
  "                                         [A, B] (default [start, start+T]); --latency:\n"
  "                                         p50/p99/max of launch-to-completion per step\n"
  "  kernel-time --us U [--count N]         time single kernels with events and the host clock\n"
  "  churn --ops N --max-bytes SIZE [--seed S]\n"
  "  procaddr-check                         which symbol cuGetProcAddress_v2 returns per version\n"
  "options: --path direct|dlsym|procaddr|procaddr-v1  --device N\n"
  "         --procaddr-version V   cudaVersion the procaddr paths ask for, 12000..13000 (default "
  "13000)\n"
  "         --alloc plain|pitch|managed|async|pool|vmm|array  --launch plain|ex|coop|graph\n"
  "SIZE is bytes with an optional K, M, G or T suffix (also Ki, Mi, Gi, Ti, and a trailing B);\n"
  "both spellings are binary: 1K = 1Ki = 1024.\n"
  "Output: one JSON object per line on stdout. Exit: 0 ok, 1 CUDA failure, 2 usage error.\n";

int wl_parse_size(const char *s, uint64_t *out)
{
  static const char units[] = "KMGT";
  char *end = NULL;

  if (*s < '0' || *s > '9')
    return -1;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno)
    return -1;
  int shift = 0;
  const char *u = *end ? strchr(units, *end) : NULL;
  if (u) {
    shift = 10 * (int) (u - units + 1);
    end++;
    if (*end == 'i')
      end++;
  }
  if (*end == 'B')
    end++;
  if (*end || (shift && v > (UINT64_MAX >> shift)))
    return -1;
  *out = (uint64_t) v << shift;
  return 0;
}

static int parse_u64(const char *s, uint64_t *out)
{
  char *end = NULL;
  if (*s < '0' || *s > '9')
    return -1;
  errno = 0;
  *out = strtoull(s, &end, 10);
  return errno || *end ? -1 : 0;
}

static int parse_name(const char *s, const char *const names[], int n)
{
  for (int i = 0; i < n; i++)
    if (strcmp(s, names[i]) == 0)
      return i;
  return -1;
}

static int set_enum(void *field, const char *arg, const char *const names[], int n)
{
  int v = parse_name(arg, names, n);
  if (v < 0)
    return -1;
  *(int *) field = v;
  return 0;
}

/* Stores arg into the field that d names. Returns 0 or -1 if arg does not parse. */
static int set_option(struct wl_opts *o, const struct wl_optdef *d, const char *arg)
{
  static const char *const paths[] = { "direct", "dlsym", "procaddr", "procaddr-v1" };
  static const char *const launches[] = { "plain", "ex", "coop", "graph" };
  void *field = (char *) o + d->off;
  char *end = NULL;
  uint64_t v = 0;

  if (d->flag)
    *(bool *) ((char *) o + d->flag) = true;
  switch (d->kind) {
  case K_SIZE: return wl_parse_size(arg, field);
  case K_U64: return parse_u64(arg, field);
  case K_FLAG: *(bool *) field = true; return 0;
  case K_INT:
    if (parse_u64(arg, &v) < 0 || v > 1024)
      return -1;
    *(int *) field = (int) v;
    return 0;
  case K_DOUBLE: *(double *) field = strtod(arg, &end); return end == arg || *end ? -1 : 0;
  case K_PATH: return set_enum(field, arg, paths, 4);
  case K_LAUNCH: return set_enum(field, arg, launches, 4);
  case K_ALLOC:
    *(const struct wl_alloc_ops **) field = wl_alloc_find(arg);
    return *(const struct wl_alloc_ops **) field ? 0 : -1;
  }
  return -1;
}

static void opts_defaults(struct wl_opts *o)
{
  *o = (struct wl_opts){
    .path = WL_PATH_DIRECT,
    .alloc = &wl_alloc_plain,
    .launch = WL_LAUNCH_PLAIN,
    .duty = 1.0,
    .kernel_us = 1000,
    .count = 5,
    .seed = 1,
    .rounds = 1,
    .procaddr_version = WL_PROCADDR_VERSION,
  };
}

static void longopts_build(struct option *lo)
{
  for (size_t i = 0; i < WL_NOPTS; i++)
    lo[i] = (struct option){ wl_optdefs[i].name,
                             wl_optdefs[i].kind == K_FLAG ? no_argument : required_argument, NULL,
                             256 + (int) i };
  lo[WL_NOPTS] = (struct option){ "help", no_argument, NULL, 'h' };
  lo[WL_NOPTS + 1] = (struct option){ 0 };
}

int wl_options_parse(int argc, char **argv, struct wl_opts *o)
{
  struct option lo[WL_NOPTS + 2];
  int c;

  opts_defaults(o);
  longopts_build(lo);
  opterr = 0;
  while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
    if (c == 'h') {
      fputs(wl_usage, stdout);
      return 1;
    }
    if (c == '?' || c == ':')
      return wl_fail("bad option '%s' (see --help)", argv[optind - 1]);
    const struct wl_optdef *d = &wl_optdefs[c - 256];
    if (set_option(o, d, optarg) < 0)
      return wl_fail("--%s: bad value '%s'", d->name, optarg);
  }
  if (optind >= argc)
    return wl_fail("no mode given (see --help)");
  if (optind != argc - 1)
    return wl_fail("unexpected argument '%s' after mode '%s'", argv[optind + 1], argv[optind]);
  o->mode = argv[optind];
  if (o->have_window_start && o->have_window_end && o->window_end_ns <= o->window_start_ns)
    return wl_fail("--window-end-ns must be after --window-start-ns");
  return 0;
}
