/* `gpuslice top`: a live view of the node, per GPU and per tenant, redrawn every interval with
 * ncurses until `q`. With --once, or when stdout is not a terminal, it prints one frame as
 * plain text and exits (scripts and tests read that). The frame is the tables of `gpus` and
 * `ps` (node-tables.h), fetched over one reused connection to the daemon. */
#include "cli.h"

#include <curses.h>
#include <errno.h>
#include <getopt.h>
#include <locale.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "daemon-verb.h"
#include "node-tables.h"

static const char top_usage[] =
  "Usage: gpuslice top [--once] [--interval SECONDS] [--socket PATH]\n"
  "\n"
  "Shows the node's GPUs and tenants live, refreshed every interval. Press q to quit.\n"
  "When stdout is not a terminal, prints one frame and exits, as --once does.\n"
  "\n"
  "Options:\n"
  "  --once              Print one frame as plain text and exit\n"
  "  --interval SECONDS  Time between refreshes (default 1; decimals allowed, >= 0.1)\n"
  "  --socket PATH       The daemon's socket (default: $GPUSLICE_SOCKET, else\n"
  "                      /run/gpuslice/gpuslice.sock for root)\n"
  "  -h, --help          Show this help and exit\n"
  "\n"
  "Exit status: 0 success, 1 failure (no daemon answers, with --once), 2 usage error.\n";

struct top_opts {
  const char *socket;
  double interval;
  bool once;
};

static int top_option(struct top_opts *o, int c, char **argv)
{
  char *end;
  switch (c) {
  case 'h':
    fputs(top_usage, stdout);
    return CLI_OK;
  case 'S': o->socket = optarg; return -1;
  case 'o': o->once = true; return -1;
  case 'i':
    errno = 0;
    o->interval = strtod(optarg, &end);
    if (errno || end == optarg || *end || !isfinite(o->interval) || o->interval < 0.1 ||
        o->interval > 3600)
      return cli_usage_error("top", "--interval '%s': want seconds from 0.1 to 3600", optarg);
    return -1;
  default: return cli_bad_option("top", argv, c);
  }
}

static int parse_args(int argc, char **argv, struct top_opts *o)
{
  static const struct option opts[] = {
    { "once", no_argument, NULL, 'o' },       { "interval", required_argument, NULL, 'i' },
    { "socket", required_argument, NULL, 'S' }, { "help", no_argument, NULL, 'h' },
    { NULL, 0, NULL, 0 },
  };
  int c, r;
  opterr = 0;
  while ((c = getopt_long(argc, argv, "+:h", opts, NULL)) != -1)
    if ((r = top_option(o, c, argv)) >= 0)
      return r;
  if (optind < argc)
    return cli_usage_error("top", "'%s': unexpected argument (see gpuslice top --help)",
                           argv[optind]);
  return -1;
}

static void print_section(FILE *f, const char *title, struct table *t)
{
  fprintf(f, "%s\n", title);
  table_print(t, f);
  table_free(t);
}

/* One frame as text: a title line, the GPU table, the tenant table. */
static int fetch_frame(struct daemon_client *c, char **text, gs_error_t *err)
{
  _cleanup_json_ json_t *gpus = NULL;
  _cleanup_json_ json_t *tenants = NULL;
  if (daemon_client_get(c, "/v1/gpus", &gpus, err) < 0 ||
      daemon_client_get(c, "/v1/tenants", &tenants, err) < 0)
    return -1;
  const json_t *ga = json_object_get(gpus, "gpus"), *ta = json_object_get(tenants, "tenants");
  if (!json_is_array(ga) || !json_is_array(ta))
    return gs_make_error(err, 0, "daemon reply has no \"gpus\" or \"tenants\" array");
  size_t len = 0;
  FILE *f = open_memstream(text, &len);
  if (!f)
    return gs_make_error(err, errno, "open_memstream");
  time_t now = time(NULL);
  char when[32];
  strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", localtime(&now));
  fprintf(f, "gpuslice top  %s  %zu GPU(s), %zu tenant(s)\n\n", when, json_array_size(ga),
          json_array_size(ta));
  print_section(f, "GPUs", gpus_table(ga));
  fputc('\n', f);
  print_section(f, "Tenants", tenants_table(ta));
  fclose(f);
  return 0;
}

static int top_once(struct daemon_client *c)
{
  _cleanup_free_ char *text = NULL;
  gs_error_t err = NULL;
  if (fetch_frame(c, &text, &err) < 0)
    return cli_fail("top", &err);
  fputs(text, stdout);
  return fflush(stdout) == 0 ? CLI_OK : CLI_FAILURE;
}

/* Draws text from the top-left corner, each line cut at the screen's width. */
static void draw(const char *text)
{
  int row = 0;
  erase();
  for (const char *p = text; *p && row < LINES; row++) {
    const char *nl = strchr(p, '\n');
    int n = nl ? (int) (nl - p) : (int) strlen(p);
    mvaddnstr(row, 0, p, n < COLS ? n : COLS);
    p += n + (nl ? 1 : 0);
  }
  mvaddstr(LINES - 1, 0, "q: quit");
  refresh();
}

static int top_live(struct daemon_client *c, double interval)
{
  setlocale(LC_ALL, "");
  initscr();
  cbreak();
  noecho();
  curs_set(0);
  timeout((int) (interval * 1000));
  for (;;) {
    char *text = NULL;
    gs_error_t err = NULL;
    if (fetch_frame(c, &text, &err) < 0) {
      /* Live, a daemon that is restarting is worth waiting for: say so and try again. */
      free(text);
      xasprintf(&text, "gpuslice top: %s\n", err->msg);
      gs_error_release(&err);
    }
    draw(text);
    free(text);
    int ch = getch();
    if (ch == 'q' || ch == 'Q')
      break;
  }
  endwin();
  return CLI_OK;
}

int cli_top(int argc, char **argv)
{
  struct top_opts o = { .interval = 1.0 };
  int r = parse_args(argc, argv, &o);
  if (r >= 0)
    return r;
  gs_error_t err = NULL;
  struct daemon_client *c = daemon_client_new(o.socket, &err);
  if (!c)
    return cli_fail("top", &err);
  r = o.once || !isatty(STDOUT_FILENO) ? top_once(c) : top_live(c, o.interval);
  daemon_client_free(c);
  return r;
}
