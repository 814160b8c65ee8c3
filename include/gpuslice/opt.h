/* Declarative options: each command-line option (and each setting of a config file) is one
 * entry of a table, as redis declares its settings in static_configs[] and crun its verbs'
 * options in argp_option[]. From the table come
 *   - the parsing, with getopt_long (opt.c),
 *   - the setting of values from a config file and the environment (opt-config.c),
 *   - --help, the Markdown option tables of docs/cli.md and the man page (opt-render.c).
 * A default is given once, as text in its entry, and parsed like a typed value: the code,
 * --help and the docs all read that one entry.
 *
 * Nothing here prints on its own: renderers write to the FILE the caller gives, and errors
 * travel in a gs_error_t whose message is the whole line after "gpuslice: VERB: ". */
#ifndef GS_OPT_H
#define GS_OPT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include <gpuslice/error.h>

enum gs_opt_kind {
  GS_OPT_FLAG,    /* no value: sets a bool */
  GS_OPT_STRING,  /* const char *, pointing into argv (or, with GS_OPT_OWNED, a copy) */
  GS_OPT_INT,     /* long long in [min, max] */
  GS_OPT_DOUBLE,  /* double in [min, max] */
  GS_OPT_PERCENT, /* "12" or "12%", min..max percent: stored as the fraction, double */
  GS_OPT_MODE,    /* an octal file mode up to 0777: unsigned */
  GS_OPT_ENUM,    /* one of choices[]: its index, int */
  GS_OPT_CALL,    /* parse() does it all */
  GS_OPT_HELP,    /* -h, --help: parsing stops and says so */
};

enum {
  GS_OPT_REPEAT = 1 << 0,    /* may be given more than once (else, under GS_OPTS_ONCE, an error) */
  GS_OPT_ABOVE_MIN = 1 << 1, /* min itself is out of bounds */
  GS_OPT_OWNED = 1 << 2,     /* GS_OPT_STRING: keep a copy (free it with gs_opt_release) */
  GS_OPT_SETTING = 1 << 3,   /* also a key of the config file (gs_opt_load_file) */
  GS_OPT_STOP = 1 << 4,      /* acts when met, as --help does: parsing stops after it, so what
                                follows is neither read nor refused (--version --bogus) */
};

struct gs_opt {
  const char *name; /* the long option without its dashes; a config key has '_' for '-' */
  char letter;      /* the short option, or 0 */
  const char *arg;  /* the value's name in --help, e.g. SIZE; NULL: takes no value */
  enum gs_opt_kind kind;
  size_t offset;    /* where the value goes in the options struct */
  const char *def;  /* the default, as it would be typed; NULL: none (the struct's zero) */
  const char *help; /* one or two sentences, for --help, the docs and the man page */
  double min, max;  /* INT, DOUBLE, PERCENT: the bounds, inclusive (see GS_OPT_ABOVE_MIN) */
  const char *const *choices;                                /* ENUM: NULL-terminated */
  int (*parse)(void *dst, const char *arg, gs_error_t *err); /* CALL: 0, or -1 with err */
  const char
    *want;         /* what a bad value is told to be ("a number > 0"); NULL: from kind and bounds */
  const char *env; /* the environment variable that sets it (config tables), or NULL */
  const char *(*def_now)(void); /* a default known only at run time; def is then what docs show */
  bool (*valid)(const char *value); /* STRING: a value it refuses is a bad value (told `want`) */
  unsigned flags;
};

enum {
  GS_OPTS_PERMUTE = 1 << 0, /* options may follow operands (else parsing stops at the first) */
  GS_OPTS_ONCE = 1 << 1,    /* each option without GS_OPT_REPEAT at most once */
};

struct gs_opt_table {
  const char *verb;     /* "run"; NULL for gpuslice's own options */
  const char *synopsis; /* what follows "gpuslice " on the Usage: line; '\n' starts another */
  const char *summary;  /* one line: what the verb does (gpuslice --help, the man page) */
  const char *intro;    /* the prose --help prints between Usage: and the options, or NULL */
  const char *outro;    /* the prose --help prints after the options, or NULL */
  const char *heading;  /* the options' heading in --help; NULL: "Options:" */
  const struct gs_opt *opts;
  int nopts;
  unsigned flags;
};

#define GS_OPT_COUNT(a) ((int) (sizeof(a) / sizeof((a)[0])))
/* A table's .opts and .nopts, from one array of entries. */
#define GS_OPT_ENTRIES(a) .opts = (a), .nopts = GS_OPT_COUNT(a)
#define GS_OPT_HELP_ENTRY                                                                 \
  {                                                                                       \
    .name = "help", .letter = 'h', .kind = GS_OPT_HELP, .help = "Show this help and exit" \
  }

/* What gs_opt_parse found. */
enum { GS_OPT_GO_ON = 0, GS_OPT_HELP_ASKED = 1 };

/* Sets every option of t that has a default to it, in dst. Returns 0, or -1 with err when a
 * default does not parse (a bug in the table). */
int gs_opt_defaults(const struct gs_opt_table *t, void *dst, gs_error_t *err);
/* Parses argv's options into dst with getopt_long (from argv[1]; optind is reset). Returns
 * GS_OPT_GO_ON with *next the index of the first operand, GS_OPT_HELP_ASKED, or -1 with err
 * ("--frobnicate: unknown option (see gpuslice run --help)"). Defaults are not set here.
 * After a GS_OPT_STOP option it returns GS_OPT_GO_ON at once, *next just after it. */
int gs_opt_parse(const struct gs_opt_table *t, void *dst, int argc, char **argv, int *next,
                 gs_error_t *err);
/* Sets one option from text; `from` prefixes the error ("option", "FILE:LINE", an env var):
 * NULL gives "--name 'value': want ...". Returns 0, or -1 with err. */
int gs_opt_set(const struct gs_opt *o, void *dst, const char *value, const char *from,
               gs_error_t *err);
/* The entry named name, as a long option ("socket-mode") or a config key ("socket_mode"). */
const struct gs_opt *gs_opt_find(const struct gs_opt_table *t, const char *name);
/* Frees the copies GS_OPT_OWNED strings hold, and sets them to NULL. */
void gs_opt_release(const struct gs_opt_table *t, void *dst);
/* The default in effect here: def_now() when given, else def (maybe NULL). */
const char *gs_opt_default(const struct gs_opt *o);

/* ---- config files and the environment (opt-config.c) ---- */

/* Reads `key value` lines (an '=' between is allowed; '#' starts a comment) into dst. A
 * missing file is no error unless must. Returns 0, or -1 with err naming FILE:LINE. */
int gs_opt_load_file(const struct gs_opt_table *t, void *dst, const char *path, bool must,
                     gs_error_t *err);
/* Sets every option whose environment variable is set and not empty. Returns 0, or -1. */
int gs_opt_load_env(const struct gs_opt_table *t, void *dst, gs_error_t *err);
/* Writes the config key of o: its name with '_' for '-'. */
void gs_opt_key(const struct gs_opt *o, char *buf, size_t size);

/* ---- rendering (opt-render.c) ---- */

/* The --help text: Usage:, intro, the options with their defaults, outro. */
void gs_opt_help(const struct gs_opt_table *t, FILE *f);
/* The Markdown table of docs/cli.md: | Option | Effect |, or with an Environment column
 * when any option has one. */
void gs_opt_markdown(const struct gs_opt_table *t, FILE *f);
/* The settings table of docs/configuration.md: the GS_OPT_SETTING entries' config keys, flags,
 * environment variables, defaults (def, as a system install has them) and help. */
void gs_opt_markdown_settings(const struct gs_opt_table *t, FILE *f);
/* The body of a commented sample config file: per setting its help, its environment
 * variable, and "#key default", each setting after a blank line. */
void gs_opt_sample(const struct gs_opt_table *t, FILE *f);
/* The man page section of one verb (.SS, synopsis, summary, intro, .TP per option); for
 * gpuslice's own table (verb NULL) only the .TP entries. */
void gs_opt_man(const struct gs_opt_table *t, FILE *f);
/* "-s, --seconds N": how an option is shown. */
void gs_opt_label(const struct gs_opt *o, char *buf, size_t size);

#endif
