/* `gpuslice plan --format html`: one self-contained page (inline CSS and SVG, no script,
 * no external URL) that shows the plan at a glance: headline figures, GPUs before and
 * after, the cost waterfall, the utilization of every workload, the MIG layout, and the
 * full table with each recommendation's reason. Elements a test or a reader may look for
 * carry ids: summary, gpus-before-after, cost-waterfall, util-distribution, mig-layout,
 * workload-table. The charts are report-svg.c. */
#include "plan-internal.h"

#include <math.h>
#include <string.h>

#define GIB (1024.0 * 1024.0 * 1024.0)

static const char css[] =
  "*{box-sizing:border-box}"
  "body{margin:0;background:#f5f7fa;color:#1f2933;font:14px/1.45 'DejaVu Sans',system-ui,"
  "sans-serif}"
  "main{max-width:1180px;margin:0 auto;padding:28px 24px 48px}"
  "h1{font-size:26px;margin:0 0 4px}h2{font-size:17px;margin:0 0 12px}"
  ".sub{color:#616e7c;margin:0 0 22px}"
  ".cards{display:grid;grid-template-columns:repeat(5,1fr);gap:14px;margin-bottom:18px}"
  ".card{background:#fff;border-radius:12px;padding:14px 16px;box-shadow:0 1px 3px "
  "rgba(15,23,42,.08)}"
  ".card .k{color:#616e7c;font-size:12px;text-transform:uppercase;letter-spacing:.04em}"
  ".card .v{font-size:26px;font-weight:700;margin-top:2px}.card .v small{display:block;"
  "font-size:13px;color:#616e7c;font-weight:400}"
  "svg{display:block;width:100%;height:auto}"
  ".good{color:#1f9d6f}"
  ".panel{background:#fff;border-radius:12px;padding:18px 20px;margin-bottom:18px;"
  "box-shadow:0 1px 3px rgba(15,23,42,.08);overflow-x:auto}"
  ".row{display:grid;grid-template-columns:1fr 1fr;gap:18px}"
  ".mix{display:flex;height:16px;border-radius:8px;overflow:hidden;margin:6px 0 8px}"
  ".legend span{display:inline-block;margin-right:16px;font-size:13px}"
  ".dot{display:inline-block;width:10px;height:10px;border-radius:3px;margin-right:6px;"
  "vertical-align:-1px}"
  "table{border-collapse:collapse;width:100%;font-size:12px}"
  "th{text-align:left;color:#616e7c;font-weight:600;border-bottom:2px solid #e4e7eb;"
  "padding:6px 8px;white-space:nowrap}"
  "td{border-bottom:1px solid #eef1f4;padding:5px 8px;vertical-align:top}"
  "td.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}"
  ".pill{display:inline-block;color:#fff;border-radius:10px;padding:1px 8px;font-size:11px;"
  "white-space:nowrap}"
  ".idle{color:#c0392b;font-weight:600}"
  ".why{color:#52606d}"
  "footer{color:#7b8794;font-size:12px}";

static const char *const mech_title[5] = { "Dedicated", "MIG", "MPS", "Time-slice", "Fraction" };

static void card(FILE *f, const char *k, const char *v, const char *small, const char *cls)
{
  fprintf(f, "<div class=\"card\"><div class=\"k\">%s</div><div class=\"v%s%s\">%s", k,
          cls ? " " : "", cls ? cls : "", v);
  if (small)
    fprintf(f, " <small>%s</small>", small);
  fputs("</div></div>\n", f);
}

static void cards(FILE *f, const struct gs_plan_run *p)
{
  const struct gs_plan_fleet *fl = &p->fleet;
  int by[5], idle;
  gs__plan_count(p, by, &idle);
  char a[64], b[64];
  fputs("<section id=\"summary\" class=\"cards\">\n", f);
  snprintf(a, sizeof(a), "%zu", p->data.n);
  card(f, "Workloads", a, NULL, NULL);
  snprintf(a, sizeof(a), "%d", idle);
  snprintf(b, sizeof(b), "≥%.0f%% of samples idle", p->rules.idle_flag * 100);
  card(f, "Idle", a, b, NULL);
  snprintf(a, sizeof(a), "%d → %d", fl->gpus_today, fl->gpus_after);
  card(f, "GPUs", a, NULL, NULL);
  gs__plan_money(a, sizeof(a), fl->monthly_after, false);
  char m[48];
  gs__plan_money(m, sizeof(m), fl->monthly_before, false);
  snprintf(b, sizeof(b), "from %s", m);
  card(f, "Monthly cost", a, b, NULL);
  double saving = fl->monthly_before > 0 ? 100 * (1 - fl->monthly_after / fl->monthly_before) : 0;
  snprintf(a, sizeof(a), "%.0f%%", saving);
  gs__plan_money(m, sizeof(m), fl->monthly_before - fl->monthly_after, false);
  snprintf(b, sizeof(b), "%s a month", m);
  card(f, "Saving", a, b, "good");
  fputs("</section>\n", f);
}

static void mix(FILE *f, const struct gs_plan_run *p)
{
  int by[5], idle;
  gs__plan_count(p, by, &idle);
  fputs("<section class=\"panel\"><h2>What each workload gets</h2><div class=\"mix\">", f);
  for (int m = 0; m < 5; m++)
    if (by[m])
      fprintf(f, "<div style=\"flex:%d;background:%s\" title=\"%s: %d\"></div>", by[m],
              gs__plan_mech_colour((enum gs_plan_mechanism) m), mech_title[m], by[m]);
  fputs("</div><div class=\"legend\">", f);
  for (int m = 0; m < 5; m++)
    fprintf(f, "<span><i class=\"dot\" style=\"background:%s\"></i>%s <b>%d</b></span>",
            gs__plan_mech_colour((enum gs_plan_mechanism) m), mech_title[m], by[m]);
  fputs("</div></section>\n", f);
}

static void charts(FILE *f, const struct gs_plan_run *p)
{
  fputs("<div class=\"row\"><section class=\"panel\"><h2>GPUs before and after</h2>\n", f);
  gs__plan_svg_gpus(f, p);
  fputs("</section><section class=\"panel\"><h2>Monthly cost, step by step</h2>\n", f);
  gs__plan_svg_waterfall(f, p);
  fputs("</section></div>\n<section class=\"panel\"><h2>Utilization and memory per "
        "workload</h2>\n",
        f);
  gs__plan_svg_util(f, p);
  fputs("</section>\n", f);
  if (p->fleet.mig.ngpus > 0) {
    fputs("<section class=\"panel\"><h2>MIG layout (profile@start)</h2>\n", f);
    gs__plan_svg_mig(f, p);
    fputs("</section>\n", f);
  }
}

static void table_row(FILE *f, const struct gs_plan_run *p, size_t i)
{
  const struct gs_plan_stats *s = &p->st[i];
  const struct gs_plan_rec *r = &p->rec[i];
  fputs("<tr><td>", f);
  gs__plan_html_escape(f, p->data.w[i]->name);
  fprintf(f,
          "</td><td class=\"n\">%zu</td><td class=\"n\">%.1f / %.1f / %.1f</td>"
          "<td class=\"n\">%.1f / %.1f / %.1f</td><td class=\"n%s\">%.0f%%</td>",
          s->samples, s->util_p50, s->util_p95, s->util_max, s->mem_p50 / GIB, s->mem_p95 / GIB,
          s->mem_max / GIB, r->idle ? " idle" : "", s->idle_fraction * 100);
  fprintf(f,
          "<td><span class=\"pill\" style=\"background:%s\">%s%s%s</span></td>"
          "<td class=\"why\">",
          gs__plan_mech_colour(r->mech), gs_plan_mechanism_name(r->mech), r->profile ? " " : "",
          r->profile ? r->profile->name : "");
  gs__plan_html_escape(f, r->reason);
  fputs("</td></tr>\n", f);
}

static void table(FILE *f, const struct gs_plan_run *p)
{
  fputs("<section class=\"panel\"><h2>Every workload</h2>\n<table id=\"workload-table\">"
        "<thead><tr><th>Workload</th><th>Samples</th><th>Util % p50 / p95 / max</th>"
        "<th>Memory GiB p50 / p95 / max</th><th>Idle</th><th>Plan</th><th>Why</th></tr>"
        "</thead><tbody>\n",
        f);
  for (size_t i = 0; i < p->data.n; i++)
    table_row(f, p, i);
  fputs("</tbody></table></section>\n", f);
}

static void footer(FILE *f, const struct gs_plan_run *p)
{
  fputs("<footer><p>Inputs: ", f);
  for (int i = 0; i < p->ninputs; i++) {
    fputs(i ? ", " : "", f);
    gs__plan_html_escape(f, p->inputs[i].path);
    fprintf(f, " (%s)", gs_plan_input_format_name(p->inputs[i].format));
  }
  fprintf(f, ". Prices: %s, $%.4f per GPU-hour on demand, ", p->gpu.model, p->price->on_demand);
  gs__plan_html_escape(f, p->price_table);
  fputs(" — ", f);
  gs__plan_html_escape(f, p->price->source);
  fputs(p->price->as_of[0] ? ", " : "", f);
  gs__plan_html_escape(f, p->price->as_of);
  fprintf(f,
          ". A month is %.0f hours. Percentiles are nearest-rank; a sample under %.0f%% "
          "utilization is idle; memory headroom %.0f%%. Rules: docs/planner.md.</p></footer>\n",
          GS_HOURS_PER_MONTH, GS_PLAN_IDLE_PCT, p->rules.headroom * 100);
}

void gs_plan_write_html(FILE *f, const struct gs_plan_run *p)
{
  fprintf(f,
          "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
          "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
          "<title>gpuslice plan: %zu workloads on %s</title><style>%s</style></head>\n"
          "<body><main>\n<h1>GPU sharing plan</h1>\n<p class=\"sub\">%zu workloads measured, "
          "planned for %s (%.0f GiB) with %.0f%% memory headroom.</p>\n",
          p->data.n, p->gpu.model, css, p->data.n, p->gpu.model, (double) p->gpu.mem_bytes / GIB,
          p->rules.headroom * 100);
  cards(f, p);
  mix(f, p);
  charts(f, p);
  table(f, p);
  footer(f, p);
  fputs("</main></body></html>\n", f);
}
