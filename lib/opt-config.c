/* Options set from outside argv: a config file of `key value` lines and the environment,
 * through the same table entries (and the same typed setters, opt.c) as the flags. Which
 * source wins is the caller's choice: it loads them in order, last wins. */
#include <gpuslice/opt.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <gpuslice/env.h>
#include <gpuslice/xalloc.h>

/* Splits "key = value  # comment" in place; *key is "" for a blank or comment line. */
static void split_line(char *line, char **key, char **value)
{
  line[strcspn(line, "#\n")] = '\0';
  char *k = line + strspn(line, " \t");
  char *v = k + strcspn(k, " \t=");
  if (*v)
    *v++ = '\0';
  v += strspn(v, " \t=");
  for (char *e = v + strlen(v); e > v && (e[-1] == ' ' || e[-1] == '\t');)
    *--e = '\0';
  *key = k;
  *value = v;
}

static int file_line(const struct gs_opt_table *t, void *dst, char *line, const char *from,
                     gs_error_t *err)
{
  char *key, *value;
  split_line(line, &key, &value);
  if (!*key)
    return 0;
  const struct gs_opt *o = strchr(key, '-') ? NULL : gs_opt_find(t, key);
  if (!o || !(o->flags & GS_OPT_SETTING))
    return gs_make_error(err, 0, "%s: unknown setting '%s'", from, key);
  return gs_opt_set(o, dst, value, from, err);
}

int gs_opt_load_file(const struct gs_opt_table *t, void *dst, const char *path, bool must,
                     gs_error_t *err)
{
  _cleanup_fclose_ FILE *f = fopen(path, "re");
  char line[4096], from[4200];
  int lineno = 0;
  if (!f) {
    if (!must && errno == ENOENT)
      return 0;
    return gs_make_error(err, errno, "config '%s'", path);
  }
  while (fgets(line, sizeof(line), f)) {
    snprintf(from, sizeof(from), "%s:%d", path, ++lineno);
    if (file_line(t, dst, line, from, err) < 0)
      return -1;
  }
  return 0;
}

int gs_opt_load_env(const struct gs_opt_table *t, void *dst, gs_error_t *err)
{
  for (int i = 0; i < t->nopts; i++) {
    const char *v = t->opts[i].env ? gs_getenv_nonempty(t->opts[i].env) : NULL;
    if (v && gs_opt_set(&t->opts[i], dst, v, t->opts[i].env, err) < 0)
      return -1;
  }
  return 0;
}
