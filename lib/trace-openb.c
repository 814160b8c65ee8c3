/* The openb CSV reader (see gs-trace-openb.h). Plain comma-separated fields without
 * quoting, which is all the published traces use; a quote is refused rather than misread.
 * Lines and fields come from gs-csv.h, as for every CSV; what is stricter is here: the
 * quote refusal, the exact headers, and no blank or '#' lines skipped.
 * Numbers are decimal digits only, so "1e3", "-1" or " 5" are errors, not surprises.
 * gpu_milli is clamped to 1..1000 for GPU pods as the paper's simulator does, and ignored
 * (0) for CPU-only pods. */
#include <gpuslice/trace-openb.h>

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <gpuslice/csv.h>

#define NODE_FIELDS 5
#define POD_FIELDS 11
#define POD_FIELDS_SHORT 5 /* the multigpu* variants stop after gpu_milli */
#define MAX_FIELDS 16

static const char node_header[] = "sn,cpu_milli,memory_mib,gpu,model";
static const char pod_header[] = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,"
                                 "pod_phase,creation_time,deletion_time,scheduled_time";
static const char pod_header_short[] = "name,cpu_milli,memory_mib,num_gpu,gpu_milli";

struct csv {
  FILE *f;
  const char *name;
  size_t line_no;
  char *line;
  size_t cap;
  char *field[MAX_FIELDS];
  int n_fields;
};

static int csv_error(struct csv *c, gs_error_t *err, const char *what)
{
  return gs_make_error(err, 0, "%s: line %zu: %s", c->name, c->line_no, what);
}

/* Reads the next line into fields. Returns 1, 0 at the end, or -1 with *err. */
static int csv_next(struct csv *c, gs_error_t *err)
{
  int r = gs_csv_getline(c->f, &c->line, &c->cap, err);
  if (r == 0)
    return 0;
  c->line_no++;
  if (r < 0)
    return gs_error_prepend(err, "%s: line %zu", c->name, c->line_no);
  if (strchr(c->line, '"'))
    return csv_error(c, err, "quoted fields are not supported");
  /* GS_CSV_PLAIN leaves the fields in place, which csv_header's rejoining relies on. */
  c->n_fields = gs_csv_split(c->line, GS_CSV_PLAIN, c->field, MAX_FIELDS, err);
  return c->n_fields < 0 ? gs_error_prepend(err, "%s: line %zu", c->name, c->line_no) : 1;
}

/* Matches the header against want, or alt when alt is not NULL. Returns the number of
 * fields of the header that matched, or -1. */
static int csv_header(struct csv *c, const char *want, const char *alt, gs_error_t *err)
{
  int r = csv_next(c, err);
  if (r < 0)
    return -1;
  if (r == 0) {
    c->line_no = 1;
    return csv_error(c, err, "empty file, expected a header");
  }
  /* Rejoin the fields to compare the whole header at once. */
  for (int i = 1; i < c->n_fields; i++)
    c->field[i][-1] = ',';
  if (strcmp(c->line, want) != 0 && (!alt || strcmp(c->line, alt) != 0))
    return gs_make_error(err, 0, "%s: line 1: header is not '%s'", c->name, want);
  return c->n_fields;
}

/* Parses field i as a decimal integer in [lo, hi]. */
static int csv_int(struct csv *c, int i, const char *what, long long lo, long long hi,
                   long long *out, gs_error_t *err)
{
  const char *s = c->field[i];
  if (!*s)
    return gs_make_error(err, 0, "%s: line %zu: %s is empty", c->name, c->line_no, what);
  long long v = 0;
  for (const char *p = s; *p; p++) {
    if (*p < '0' || *p > '9')
      return gs_make_error(err, 0, "%s: line %zu: %s '%s' is not a non-negative integer", c->name,
                           c->line_no, what, s);
    if (v > (hi - (*p - '0')) / 10)
      return gs_make_error(err, 0, "%s: line %zu: %s '%s' is out of range (%lld..%lld)", c->name,
                           c->line_no, what, s, lo, hi);
    v = v * 10 + (*p - '0');
  }
  if (v < lo)
    return gs_make_error(err, 0, "%s: line %zu: %s '%s' is out of range (%lld..%lld)", c->name,
                         c->line_no, what, s, lo, hi);
  *out = v;
  return 0;
}

static int csv_fields(struct csv *c, int want, gs_error_t *err)
{
  if (c->n_fields == 1 && !*c->field[0])
    return csv_error(c, err, "empty line");
  if (c->n_fields != want)
    return gs_make_error(err, 0, "%s: line %zu: %d fields, expected %d", c->name, c->line_no,
                         c->n_fields, want);
  if (!*c->field[0])
    return csv_error(c, err, "empty name");
  return 0;
}

/* Grows *arr (of elem-byte items, *cap of them) so that index n fits. */
static int grow(void **arr, size_t *cap, size_t n, size_t elem)
{
  if (n < *cap)
    return 0;
  size_t nc = *cap ? *cap * 2 : 256;
  void *p = realloc(*arr, nc * elem);
  if (!p)
    return -1;
  *arr = p;
  *cap = nc;
  return 0;
}

static int node_row(struct csv *c, struct gs_place_node_spec *s, gs_error_t *err)
{
  long long cpu, mem, gpus;
  if (csv_fields(c, NODE_FIELDS, err) < 0 ||
      csv_int(c, 1, "cpu_milli", 0, INT64_MAX / 4, &cpu, err) < 0 ||
      csv_int(c, 2, "memory_mib", 0, INT64_MAX / 4, &mem, err) < 0 ||
      csv_int(c, 3, "gpu", 0, GS_PLACE_MAX_GPUS, &gpus, err) < 0)
    return -1;
  if (gpus > 0 && !*c->field[4])
    return csv_error(c, err, "a node with GPUs needs a model");
  if (strchr(c->field[4], '|'))
    return csv_error(c, err, "model contains '|'");
  s->cpu_milli = cpu;
  s->mem_mib = mem;
  s->gpus = (int) gpus;
  s->name = strdup(c->field[0]);
  s->model = strdup(c->field[4]);
  if (!s->name || !s->model)
    return gs_make_error(err, ENOMEM, "%s: line %zu", c->name, c->line_no);
  return 0;
}

/* Parses field i as a time in seconds; *v is -1 when the field is empty. */
static int check_time(struct csv *c, int i, const char *what, long long *v, gs_error_t *err)
{
  *v = -1;
  return *c->field[i] ? csv_int(c, i, what, 0, INT64_MAX / 4, v, err) : 0;
}

/* The pod's lifetime, deletion_time − creation_time, or -1 when the row lacks either
 * or deletes before it creates. */
static int pod_life(struct csv *c, int64_t *life, gs_error_t *err)
{
  long long created, deleted, scheduled;
  *life = -1;
  if (c->n_fields != POD_FIELDS)
    return 0;
  if (check_time(c, 8, "creation_time", &created, err) < 0 ||
      check_time(c, 9, "deletion_time", &deleted, err) < 0 ||
      check_time(c, 10, "scheduled_time", &scheduled, err) < 0)
    return -1;
  if (created >= 0 && deleted >= created)
    *life = deleted - created;
  return 0;
}

static int pod_numbers(struct csv *c, struct gs_place_request *r, gs_error_t *err)
{
  long long cpu, mem, num, milli;
  if (csv_int(c, 1, "cpu_milli", 0, INT64_MAX / 4, &cpu, err) < 0 ||
      csv_int(c, 2, "memory_mib", 0, INT64_MAX / 4, &mem, err) < 0 ||
      csv_int(c, 3, "num_gpu", 0, GS_PLACE_MAX_GPUS, &num, err) < 0 ||
      csv_int(c, 4, "gpu_milli", 0, INT32_MAX, &milli, err) < 0)
    return -1;
  if (num > 1 && milli < GS_PLACE_MILLI)
    return csv_error(c, err, "gpu_milli below 1000 needs num_gpu 1");
  r->cpu_milli = cpu;
  r->mem_mib = mem;
  r->num_gpu = (int) num;
  r->gpu_milli = num == 0    ? 0
    : milli < 1              ? 1
    : milli > GS_PLACE_MILLI ? GS_PLACE_MILLI
                             : (int) milli;
  return 0;
}

static int pod_row(struct csv *c, int fields, struct gs_place_request *r, int64_t *life,
                   gs_error_t *err)
{
  memset(r, 0, sizeof(*r));
  if (csv_fields(c, fields, err) < 0 || pod_numbers(c, r, err) < 0 || pod_life(c, life, err) < 0)
    return -1;
  const char *spec = fields > POD_FIELDS_SHORT ? c->field[5] : "";
  if (*spec && (spec[0] == '|' || spec[strlen(spec) - 1] == '|' || strstr(spec, "||")))
    return csv_error(c, err, "gpu_spec has an empty model name");
  r->name = strdup(c->field[0]);
  r->gpu_spec = *spec ? strdup(spec) : NULL;
  r->model_mask = GS_PLACE_ANY_MODEL;
  if (!r->name || (*spec && !r->gpu_spec))
    return gs_make_error(err, ENOMEM, "%s: line %zu", c->name, c->line_no);
  return 0;
}

int gs_openb_read_nodes(FILE *f, const char *name, struct gs_openb_nodes *out, gs_error_t *err)
{
  struct csv c = { .f = f, .name = name };
  struct gs_openb_nodes l = { 0 };
  size_t cap = 0;
  int r;
  if (csv_header(&c, node_header, NULL, err) < 0)
    goto fail;
  while ((r = csv_next(&c, err)) > 0) {
    if (grow((void **) &l.nodes, &cap, l.n, sizeof(*l.nodes)) < 0) {
      gs_make_error(err, ENOMEM, "%s: line %zu", name, c.line_no);
      goto fail;
    }
    memset(&l.nodes[l.n], 0, sizeof(l.nodes[0]));
    l.n++; /* counted first so that release frees a half-filled row */
    if (node_row(&c, &l.nodes[l.n - 1], err) < 0)
      goto fail;
  }
  if (r < 0)
    goto fail;
  if (l.n == 0) {
    gs_make_error(err, 0, "%s: no nodes", name);
    goto fail;
  }
  free(c.line);
  *out = l;
  return 0;
fail:
  free(c.line);
  gs_openb_nodes_release(&l);
  return -1;
}

int gs_openb_read_pods(FILE *f, const char *name, struct gs_openb_pods *out, gs_error_t *err)
{
  struct csv c = { .f = f, .name = name };
  struct gs_openb_pods l = { 0 };
  size_t cap = 0, life_cap = 0;
  int r, fields = csv_header(&c, pod_header, pod_header_short, err);
  if (fields < 0)
    goto fail;
  while ((r = csv_next(&c, err)) > 0) {
    if (grow((void **) &l.pods, &cap, l.n, sizeof(*l.pods)) < 0 ||
        grow((void **) &l.life_s, &life_cap, l.n, sizeof(*l.life_s)) < 0) {
      gs_make_error(err, ENOMEM, "%s: line %zu", name, c.line_no);
      goto fail;
    }
    l.n++;
    if (pod_row(&c, fields, &l.pods[l.n - 1], &l.life_s[l.n - 1], err) < 0)
      goto fail;
  }
  if (r < 0)
    goto fail;
  if (l.n == 0) {
    gs_make_error(err, 0, "%s: no pods", name);
    goto fail;
  }
  free(c.line);
  *out = l;
  return 0;
fail:
  free(c.line);
  gs_openb_pods_release(&l);
  return -1;
}

typedef int (*reader_fn)(FILE *, const char *, void *, gs_error_t *);

static int load(const char *path, reader_fn fn, void *out, gs_error_t *err)
{
  FILE *f = fopen(path, "re");
  if (!f)
    return gs_make_error(err, errno, "open '%s'", path);
  int r = fn(f, path, out, err);
  fclose(f);
  return r;
}

static int read_nodes_any(FILE *f, const char *name, void *out, gs_error_t *err)
{
  return gs_openb_read_nodes(f, name, out, err);
}

static int read_pods_any(FILE *f, const char *name, void *out, gs_error_t *err)
{
  return gs_openb_read_pods(f, name, out, err);
}

int gs_openb_load_nodes(const char *path, struct gs_openb_nodes *out, gs_error_t *err)
{
  return load(path, read_nodes_any, out, err);
}

int gs_openb_load_pods(const char *path, struct gs_openb_pods *out, gs_error_t *err)
{
  return load(path, read_pods_any, out, err);
}

/* The specs hold const strings because placement never changes them; the list owns them. */
static void free_const(const char *p)
{
  free((void *) (uintptr_t) p);
}

void gs_openb_nodes_release(struct gs_openb_nodes *l)
{
  for (size_t i = 0; i < l->n; i++) {
    free_const(l->nodes[i].name);
    free_const(l->nodes[i].model);
  }
  free(l->nodes);
  l->nodes = NULL;
  l->n = 0;
}

void gs_openb_pods_release(struct gs_openb_pods *l)
{
  for (size_t i = 0; i < l->n; i++) {
    free_const(l->pods[i].name);
    free_const(l->pods[i].gpu_spec);
  }
  free(l->pods);
  free(l->life_s);
  l->pods = NULL;
  l->life_s = NULL;
  l->n = 0;
}

/* The 11-column form, which gs_openb_read_pods reads back to the same pods: a pod's
 * lifetime is written as creation_time 0 and deletion_time life_s (empty when unknown);
 * qos, pod_phase and scheduled_time are not kept and stay empty. */
int gs_openb_write_pods(FILE *f, const struct gs_openb_pods *l, gs_error_t *err)
{
  fprintf(f, "%s\n", pod_header);
  for (size_t i = 0; i < l->n; i++) {
    const struct gs_place_request *r = &l->pods[i];
    int64_t life = l->life_s ? l->life_s[i] : -1;
    fprintf(f, "%s,%lld,%lld,%d,%d,%s,,,", r->name ? r->name : "", (long long) r->cpu_milli,
            (long long) r->mem_mib, r->num_gpu, r->gpu_milli, r->gpu_spec ? r->gpu_spec : "");
    if (life >= 0)
      fprintf(f, "0,%lld,\n", (long long) life);
    else
      fputs(",,\n", f);
  }
  if (fflush(f) != 0 || ferror(f))
    return gs_make_error(err, errno, "write pod list");
  return 0;
}
