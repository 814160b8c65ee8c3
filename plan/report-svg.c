/* The charts of `gpuslice plan --format html`, each written as one inline <svg> element
 * with no script and no external reference: GPUs before and after, the cost waterfall,
 * the utilization distribution per workload, and the MIG layout. The page around them is
 * report-html.c. */
#include "plan-internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define GIB (1024.0 * 1024.0 * 1024.0)
#define INK "#1f2933"
#define MUTED "#7b8794"
#define GRID "#e4e7eb"
#define TODAY "#9aa5b1"
#define SAVED "#3ebd93"

const char *gs__plan_mech_colour(enum gs_plan_mechanism m)
{
  static const char *const c[] = { "#3b4cca", "#0fa3b1", "#f0a04b", "#b56576", "#5fad56" };
  return (unsigned) m < 5 ? c[m] : MUTED;
}

void gs__plan_html_escape(FILE *f, const char *s)
{
  for (; *s; s++)
    switch (*s) {
    case '&': fputs("&amp;", f); break;
    case '<': fputs("&lt;", f); break;
    case '>': fputs("&gt;", f); break;
    case '"': fputs("&quot;", f); break;
    case '\'': fputs("&#39;", f); break;
    default: fputc(*s, f);
    }
}

static void bar(FILE *f, double x, double y, double w, double h, const char *fill,
                const char *title)
{
  fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" rx=\"3\" fill=\"%s\">", x,
          y, w > 0 ? w : 0, h, fill);
  if (title) {
    fputs("<title>", f);
    gs__plan_html_escape(f, title);
    fputs("</title>", f);
  }
  fputs("</rect>", f);
}

static void text(FILE *f, double x, double y, const char *anchor, int size, const char *fill,
                 const char *s)
{
  fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\" font-size=\"%d\" fill=\"%s\">", x, y,
          anchor, size, fill);
  gs__plan_html_escape(f, s);
  fputs("</text>", f);
}

/* ---- GPUs before and after ---- */

void gs__plan_svg_gpus(FILE *f, const struct gs_plan_run *p)
{
  const struct gs_plan_fleet *fl = &p->fleet;
  const double W = 560, x0 = 90, span = W - x0 - 70;
  double max = fmax(fmax(fl->gpus_today, fl->gpus_after), 1);
  fprintf(f,
          "<svg id=\"gpus-before-after\" viewBox=\"0 0 %.0f 190\" role=\"img\" aria-label=\"GPUs "
          "before and after\">",
          W);
  char s[96];
  text(f, 10, 58, "start", 14, INK, "Today");
  bar(f, x0, 36, span * fl->gpus_today / max, 34, TODAY, "GPUs used today");
  snprintf(s, sizeof(s), "%d", fl->gpus_today);
  text(f, x0 + span * fl->gpus_today / max + 8, 59, "start", 16, INK, s);
  text(f, 10, 128, "start", 14, INK, "Planned");
  const int part[3] = { fl->gpus_dedicated, fl->gpus_mig, fl->gpus_shared };
  const enum gs_plan_mechanism colour[3] = { GS_PLAN_DEDICATED, GS_PLAN_MIG, GS_PLAN_FRACTION };
  const char *name[3] = { "dedicated", "MIG", "shared (MPS, time-slice, fraction)" };
  double x = x0;
  for (int i = 0; i < 3; i++) {
    snprintf(s, sizeof(s), "%d GPUs %s", part[i], name[i]);
    bar(f, x, 106, span * part[i] / max, 34, gs__plan_mech_colour(colour[i]), s);
    x += span * part[i] / max;
  }
  snprintf(s, sizeof(s), "%d", fl->gpus_after);
  text(f, x + 8, 129, "start", 16, INK, s);
  snprintf(s, sizeof(s), "dedicated %d · MIG %d · shared %d", part[0], part[1], part[2]);
  text(f, x0, 164, "start", 12, MUTED, s);
  fputs("</svg>\n", f);
}

/* ---- the cost waterfall ---- */

/* "$12,345", or "$1.2M" / "$45k" when short is asked for (axis labels). */
void gs__plan_money(char *out, size_t len, double v, bool shorter)
{
  double a = fabs(v);
  const char *sign = v < 0 ? "-" : "";
  if (shorter && a >= 1e6)
    snprintf(out, len, "%s$%.1fM", sign, a / 1e6);
  else if (shorter && a >= 1e4)
    snprintf(out, len, "%s$%.0fk", sign, a / 1e3);
  else if (a >= 1e6)
    snprintf(out, len, "%s$%d,%03d,%03d", sign, (int) (a / 1e6), (int) fmod(a / 1e3, 1e3),
             (int) fmod(a, 1e3));
  else if (a >= 1e3)
    snprintf(out, len, "%s$%d,%03d", sign, (int) (a / 1e3), (int) fmod(round(a), 1e3));
  else
    snprintf(out, len, "%s$%.0f", sign, a);
}

static const char *step_name(int i, int n)
{
  static const char *const names[] = { "Sharing", "Spot", "Commitment" };
  return n == 3 && i < 3 ? names[i] : "Step";
}

static void waterfall_axis(FILE *f, double max, double y0, double h, double x0, double W)
{
  for (int k = 0; k <= 4; k++) {
    double v = max * k / 4, y = y0 + h - h * k / 4;
    char s[32];
    gs__plan_money(s, sizeof(s), v, true);
    fprintf(f, "<line x1=\"%.0f\" y1=\"%.1f\" x2=\"%.0f\" y2=\"%.1f\" stroke=\"%s\"/>", x0, y,
            W - 10, y, GRID);
    text(f, x0 - 6, y + 4, "end", 11, MUTED, s);
  }
}

void gs__plan_svg_waterfall(FILE *f, const struct gs_plan_run *p)
{
  const struct gs_plan_fleet *fl = &p->fleet;
  const double W = 560, H = 280, x0 = 70, y0 = 20, h = 200;
  int cols = fl->nsteps + 2;
  double colw = (W - x0 - 10) / cols, max = fmax(fl->monthly_before, 1);
  fprintf(f,
          "<svg id=\"cost-waterfall\" viewBox=\"0 0 %.0f %.0f\" "
          "role=\"img\" aria-label=\"Monthly cost waterfall\">",
          W, H);
  waterfall_axis(f, max, y0, h, x0, W);
  char s[160];
  for (int c = 0; c < cols; c++) {
    bool first = c == 0, last = c == cols - 1;
    double top = first ? fl->monthly_before
      : last           ? fl->monthly_after
                       : fl->steps[c - 1].monthly_before;
    double bottom = first || last ? 0 : fl->steps[c - 1].monthly_after;
    double x = x0 + c * colw + colw * 0.15, w = colw * 0.7;
    double ytop = y0 + h - h * top / max, ybot = y0 + h - h * bottom / max;
    const char *label = first ? "Today" : last ? "Planned" : step_name(c - 1, fl->nsteps);
    snprintf(s, sizeof(s), "%s", first || last ? "" : fl->steps[c - 1].what);
    bar(f, x, ytop, w, fmax(ybot - ytop, 1),
        first    ? TODAY
          : last ? gs__plan_mech_colour(0)
                 : SAVED,
        s[0] ? s : label);
    gs__plan_money(s, sizeof(s), first || last ? top : bottom - top, false);
    text(f, x + w / 2, ytop - 6, "middle", 12, INK, s);
    text(f, x + w / 2, y0 + h + 18, "middle", 12, INK, label);
  }
  double saving = fl->monthly_before > 0 ? 100 * (1 - fl->monthly_after / fl->monthly_before) : 0;
  snprintf(s, sizeof(s), "%.0f%% less a month, each step applied to what the one before left",
           saving);
  text(f, x0, H - 14, "start", 12, MUTED, s);
  fputs("</svg>\n", f);
}

/* ---- utilization distribution ---- */

static const struct gs_plan_run *sort_run; /* qsort has no context argument */

static int by_mech_then_p95(const void *a, const void *b)
{
  size_t i = *(const size_t *) a, j = *(const size_t *) b;
  const struct gs_plan_run *p = sort_run;
  if (p->rec[i].mech != p->rec[j].mech)
    return (int) p->rec[i].mech - (int) p->rec[j].mech;
  double x = p->st[i].util_p95, y = p->st[j].util_p95;
  return (y > x) - (y < x);
}

#define ROW 15
#define UX 210.0 /* utilization track: x and width */
#define UW 560.0
#define MX 820.0 /* memory track */
#define MW 240.0

/* A track's vertical grid lines, n + 1 of them across [x0, x0 + w], each under its
 * percentage (0% to 100%). */
static void pct_grid(FILE *f, double x0, double w, int n, double height)
{
  char s[16];
  for (int k = 0; k <= n; k++) {
    double x = x0 + w * k / n;
    fprintf(f, "<line x1=\"%.1f\" y1=\"34\" x2=\"%.1f\" y2=\"%.0f\" stroke=\"%s\"/>", x, x,
            height - 6, GRID);
    snprintf(s, sizeof(s), "%d%%", 100 / n * k);
    text(f, x, 28, "middle", 11, MUTED, s);
  }
}

static void util_axes(FILE *f, double height)
{
  pct_grid(f, UX, UW, 4, height);
  pct_grid(f, MX, MW, 2, height);
  text(f, UX, 12, "start", 12, INK, "GPU utilization: p50 (dot), p50–p95 (bar), max (whisker)");
  text(f, MX, 12, "start", 12, INK, "Memory p95 (+ headroom) of one GPU");
}

static void util_row(FILE *f, const struct gs_plan_run *p, size_t i, double y)
{
  const struct gs_plan_stats *s = &p->st[i];
  const struct gs_plan_rec *r = &p->rec[i];
  const char *c = gs__plan_mech_colour(r->mech);
  char name[40], tip[400];
  snprintf(name, sizeof(name), "%.26s%s", p->data.w[i]->name,
           strlen(p->data.w[i]->name) > 26 ? "…" : "");
  text(f, UX - 10, y + 10, "end", 10, r->idle ? MUTED : INK, name);
  double x50 = UX + UW * s->util_p50 / 100, x95 = UX + UW * s->util_p95 / 100;
  double xmax = UX + UW * s->util_max / 100;
  fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\"/>", x95, y + 6,
          xmax, y + 6, c);
  fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\"/>", xmax, y + 2,
          xmax, y + 10, c);
  snprintf(tip, sizeof(tip), "%s: p50 %.1f%%, p95 %.1f%%, max %.1f%%, idle %.0f%% — %s: %s",
           p->data.w[i]->name, s->util_p50, s->util_p95, s->util_max, s->idle_fraction * 100,
           gs_plan_mechanism_name(r->mech), r->reason);
  bar(f, x50, y + 2, fmax(x95 - x50, 2), 9, c, tip);
  fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"/>", x50, y + 6.5, INK);
  double mem = fmin(s->mem_p95 / (double) p->gpu.mem_bytes, 1);
  double need = fmin((double) r->vram_bytes / (double) p->gpu.mem_bytes, 1);
  bar(f, MX, y + 2, MW * need, 9, c, NULL);
  fprintf(f,
          "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"9\" rx=\"3\" fill=\"#fff\" "
          "opacity=\"0.45\"/>",
          MX + MW * mem, y + 2, fmax(MW * (need - mem), 0));
  if (r->idle)
    text(f, MX + MW + 8, y + 10, "start", 10, "#c0392b", "idle");
}

void gs__plan_svg_util(FILE *f, const struct gs_plan_run *p)
{
  size_t n = p->data.n;
  size_t *order = xcalloc(n ? n : 1, sizeof(*order));
  for (size_t i = 0; i < n; i++)
    order[i] = i;
  sort_run = p;
  qsort(order, n, sizeof(*order), by_mech_then_p95);
  double height = 44 + (double) n * ROW;
  fprintf(f,
          "<svg id=\"util-distribution\" viewBox=\"0 0 1110 %.0f\" "
          "role=\"img\" aria-label=\"Utilization per workload\">",
          height);
  util_axes(f, height);
  for (size_t k = 0; k < n; k++)
    util_row(f, p, order[k], 38 + (double) k * ROW);
  fputs("</svg>\n", f);
  free(order);
}

/* ---- MIG layout: one strip of 8 memory positions per GPU ---- */

void gs__plan_svg_mig(FILE *f, const struct gs_plan_run *p)
{
  const struct gs_mig_layout *l = &p->fleet.mig;
  const double x0 = 70, slot = 60;
  fprintf(f,
          "<svg id=\"mig-layout\" viewBox=\"0 0 560 %d\" "
          "role=\"img\" aria-label=\"MIG layout\">",
          20 + l->ngpus * 34);
  char s[64];
  for (int g = 0; g < l->ngpus; g++) {
    double y = 10 + g * 34;
    snprintf(s, sizeof(s), "GPU %d", g);
    text(f, 10, y + 18, "start", 12, INK, s);
    bar(f, x0, y, slot * GS_MIG_POSITIONS, 26, GRID, NULL);
    for (int i = 0; i < l->n; i++) {
      const struct gs_mig_instance *in = &l->inst[i];
      if (in->gpu != g)
        continue;
      snprintf(s, sizeof(s), "%s@%d", in->p->name, in->start);
      bar(f, x0 + slot * in->start + 1, y + 1, slot * in->p->mem_slices - 2, 24,
          gs__plan_mech_colour(GS_PLAN_MIG), p->data.w[p->fleet.mig_workload[in->demand]]->name);
      text(f, x0 + slot * (in->start + in->p->mem_slices / 2.0), y + 17, "middle", 11, "#fff", s);
    }
  }
  fputs("</svg>\n", f);
}
