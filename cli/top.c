/* `gpuslice top`: a live view of the node, per GPU and per tenant, redrawn every interval with
 * ncurses until `q`. With --once, or when stdout is not a terminal, it prints one frame as
 * plain text and exits (scripts and tests read that). The frame is the tables of `gpus` and
 * `ps` (cli-node-tables.h), fetched over one reused connection to the daemon. */
#include "cli.h"

#include <curses.h>
#include <errno.h>
#include <locale.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli-daemon-request.h"
#include "cli-node-tables.h"

struct top_opts {
  const char *socket;
  double interval;
  bool once;
};

// clang-format off
static const struct gs_opt top_entries[] = {
  { .name = "once", .kind = GS_OPT_FLAG, .offset = offsetof(struct top_opts, once),
    .help = "Print one frame as plain text and exit" },
  { .name = "interval", .arg = "SECONDS", .kind = GS_OPT_DOUBLE, .offset = offsetof(struct top_opts, interval),
    .def = "1", .min = 0.1, .max = 3600, .want = "seconds from 0.1 to 3600",
    .help = "Time between refreshes, 0.1 to 3600 seconds; decimals allowed" },
  VERB_SOCKET_ENTRY(struct top_opts),
  GS_OPT_HELP_ENTRY,
};
// clang-format on

// clang-format off
const struct gs_opt_table cli_top_table = {
  .verb = "top",
  .synopsis = "top [--once] [--interval SECONDS] [--socket PATH]",
  .summary = "Show GPUs and tenants live",
  .intro = "Shows the node's GPUs and tenants live, refreshed every interval. Press q to quit.\n"
           "When stdout is not a terminal, prints one frame and exits, as --once does.\n",
  .outro = "Exit status: 0 success, 1 failure (no daemon answers, with --once), 2 usage error.\n",
  GS_OPT_ENTRIES(top_entries),
};
// clang-format on

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
  struct top_opts o = { 0 };
  int r = cli_parse_options(&cli_top_table, &o, argc, argv);
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
