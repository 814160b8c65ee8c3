/* What an option table looks like to people: a verb's --help, its Markdown table in
 * docs/cli.md, its section of the man page (docs/gpuslice.1), and for a table of settings
 * the commented sample config file and the settings table of docs/configuration.md. All
 * show the same entries, help texts and defaults, so none can drift from what the parser
 * does. */
#include <gpuslice/opt.h>

#include <stdarg.h>
#include <string.h>

#define HELP_WIDTH 79

void gs_opt_label(const struct gs_opt *o, char *buf, size_t size)
{
  int n = o->letter ? snprintf(buf, size, "-%c, ", o->letter) : 0;
  if (n < 0 || (size_t) n >= size)
    n = 0;
  snprintf(buf + n, size - (size_t) n, "--%s%s%s", o->name, o->arg ? " " : "",
           o->arg ? o->arg : "");
}

static void append(char *buf, size_t size, const char *fmt, ...)
  __attribute__((format(printf, 3, 4)));
static void append(char *buf, size_t size, const char *fmt, ...)
{
  size_t n = strlen(buf);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf + n, size - n, fmt, ap);
  va_end(ap);
}

/* The help text with its default (and, when env, its environment variable) after it: a
 * sentence gets " Default: X.", a phrase " (default X)". */
static void help_with_default(const struct gs_opt *o, const char *def, const char *quote, bool env,
                              char *buf, size_t size)
{
  size_t n = strlen(o->help);
  bool sentence = n && o->help[n - 1] == '.';
  snprintf(buf, size, "%s", o->help);
  if (def)
    append(buf, size, sentence ? " Default: %s%s%s." : " (default %s%s%s)", quote, def, quote);
  if (env && o->env)
    append(buf, size, sentence ? " Environment: %s." : " (environment %s)", o->env);
}

/* ---- --help ---- */

/* Writes text word by word from column `indent`, wrapping before HELP_WIDTH. */
static void wrap(FILE *f, const char *text, int col, int indent)
{
  const char *p = text;
  while (*p) {
    size_t w = strcspn(p, " ");
    if (p > text && col + 1 + (int) w > HELP_WIDTH) {
      fprintf(f, "\n%*s", indent, "");
      col = indent;
    } else if (p > text) {
      fputc(' ', f);
      col++;
    }
    fwrite(p, 1, w, f);
    col += (int) w;
    p += w;
    p += strspn(p, " ");
  }
  fputc('\n', f);
}

static int label_width(const struct gs_opt_table *t)
{
  int width = 0;
  char label[128];
  for (int i = 0; i < t->nopts; i++) {
    gs_opt_label(&t->opts[i], label, sizeof(label));
    width = (int) strlen(label) > width ? (int) strlen(label) : width;
  }
  return width;
}

static void synopsis(FILE *f, const char *text, const char *first, const char *next)
{
  const char *p = text;
  for (const char *lead = first; *p; lead = next) {
    size_t n = strcspn(p, "\n");
    fprintf(f, "%s%.*s\n", lead, (int) n, p);
    p += n + (p[n] == '\n');
  }
}

void gs_opt_help(const struct gs_opt_table *t, FILE *f)
{
  char label[128], help[1024];
  int width = label_width(t);
  synopsis(f, t->synopsis, "Usage: gpuslice ", "       gpuslice ");
  if (t->intro)
    fprintf(f, "\n%s", t->intro);
  fprintf(f, "\n%s\n", t->heading ? t->heading : "Options:");
  for (int i = 0; i < t->nopts; i++) {
    gs_opt_label(&t->opts[i], label, sizeof(label));
    help_with_default(&t->opts[i], gs_opt_default(&t->opts[i]), "", true, help, sizeof(help));
    fprintf(f, "  %-*s  ", width, label);
    wrap(f, help, 4 + width, 4 + width);
  }
  if (t->outro)
    fprintf(f, "\n%s", t->outro);
}

/* ---- Markdown ---- */

/* Text in a table cell: '|' would end the cell, and '<' start an HTML tag ("run-<pid>"). */
static void md_text(FILE *f, const char *s)
{
  for (; *s; s++) {
    if (*s == '|' || *s == '<')
      fputc('\\', f);
    fputc(*s == '\n' ? ' ' : *s, f);
  }
}

static void md_row(FILE *f, const struct gs_opt *o, bool env_column)
{
  char help[1024];
  fputs("| ", f);
  if (o->letter)
    fprintf(f, "`-%c`, ", o->letter);
  fprintf(f, "`--%s%s", o->name, o->arg ? " " : "");
  md_text(f, o->arg ? o->arg : "");
  fputs("` | ", f);
  if (env_column)
    fprintf(f, "%s%s%s | ", o->env ? "`" : "", o->env ? o->env : "", o->env ? "`" : "");
  help_with_default(o, o->def, "`", !env_column, help, sizeof(help));
  md_text(f, help);
  fputs(" |\n", f);
}

void gs_opt_markdown(const struct gs_opt_table *t, FILE *f)
{
  bool env = false;
  for (int i = 0; i < t->nopts; i++)
    env = env || t->opts[i].env;
  fputs(env ? "| Option | Environment | Effect |\n|--------|-------------|--------|\n"
            : "| Option | Effect |\n|--------|--------|\n",
        f);
  for (int i = 0; i < t->nopts; i++)
    md_row(f, &t->opts[i], env);
}

/* | Setting | Flag | Environment | Default | Effect |, for the entries that are settings. */
void gs_opt_markdown_settings(const struct gs_opt_table *t, FILE *f)
{
  char key[64];
  fputs("| Setting | Flag | Environment | Default | Effect "
        "|\n|---------|------|-------------|---------|--------|\n",
        f);
  for (int i = 0; i < t->nopts; i++) {
    const struct gs_opt *o = &t->opts[i];
    if (!(o->flags & GS_OPT_SETTING))
      continue;
    gs_opt_key(o, key, sizeof(key));
    fprintf(f, "| `%s` | `--%s` | %s%s%s | ", key, o->name, o->env ? "`" : "", o->env ? o->env : "",
            o->env ? "`" : "");
    fprintf(f, "%s%s%s | ", o->def ? "`" : "", o->def ? o->def : "", o->def ? "`" : "");
    md_text(f, o->help);
    fputs(" |\n", f);
  }
}

/* ---- the sample config file ---- */

void gs_opt_sample(const struct gs_opt_table *t, FILE *f)
{
  char key[64];
  for (int i = 0; i < t->nopts; i++) {
    const struct gs_opt *o = &t->opts[i];
    if (!(o->flags & GS_OPT_SETTING))
      continue;
    gs_opt_key(o, key, sizeof(key));
    fprintf(f, "\n# %s\n", o->help);
    if (o->env)
      fprintf(f, "# Environment: %s\n", o->env);
    fprintf(f, "#%s %s\n", key, o->def ? o->def : "");
  }
}

/* ---- the man page ---- */

/* roff text: '-' and '\' escaped, and no line may start with a control character. */
static void man_text(FILE *f, const char *s)
{
  bool bol = true;
  for (; *s; s++) {
    if (bol && (*s == '.' || *s == '\''))
      fputs("\\&", f);
    if (*s == '-' || *s == '\\')
      fputc('\\', f);
    fputc(*s, f);
    bol = *s == '\n';
  }
}

/* Prose: a blank line starts a new paragraph. */
static void man_prose(FILE *f, const char *s)
{
  while (*s) {
    size_t n = strcspn(s, "\n");
    if (n == 0) {
      fputs(".PP\n", f);
    } else {
      char line[1024];
      snprintf(line, sizeof(line), "%.*s", (int) n, s);
      man_text(f, line);
      fputc('\n', f);
    }
    s += n + (s[n] == '\n');
  }
}

static void man_synopsis(const struct gs_opt_table *t, FILE *f)
{
  char line[1024];
  const char *p = t->synopsis;
  fprintf(f, ".SS \"gpuslice %s\"\n", t->verb);
  while (*p) {
    size_t n = strcspn(p, "\n");
    snprintf(line, sizeof(line), "%.*s", (int) n, p);
    fputs(".B gpuslice\n", f);
    man_text(f, line);
    fputs("\n.br\n", f);
    p += n + (p[n] == '\n');
  }
  fputs(".PP\n", f);
  if (t->summary) {
    man_prose(f, t->summary);
    fputs(".PP\n", f);
  }
  if (t->intro)
    man_prose(f, t->intro);
}

void gs_opt_man(const struct gs_opt_table *t, FILE *f)
{
  char label[128], help[1024];
  if (t->verb)
    man_synopsis(t, f);
  for (int i = 0; i < t->nopts; i++) {
    gs_opt_label(&t->opts[i], label, sizeof(label));
    help_with_default(&t->opts[i], t->opts[i].def, "", true, help, sizeof(help));
    fputs(".TP\n.B ", f);
    man_text(f, label);
    fputc('\n', f);
    man_text(f, help);
    fputc('\n', f);
  }
}
