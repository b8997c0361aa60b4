/*
 * validate_ep.c: `xstage validate ep` puts the EP kernel programs'
 * predictions beside published dispatch and combine timings, each in the
 * row's own metric, with summaries per library and mode, library, phase
 * and source, every model, and the figures with the fitted constants
 * refitted leaving each source out.
 */
#define _POSIX_C_SOURCE 200809L
#include "common.h"

#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void help(FILE *f) {
  fprintf(f,
          "usage: xstage validate ep [--data FILE] [--models LIST|all] [--by-source]\n"
          "                          [--json] [--svg FILE] [--fail-above FRACTION]\n"
          "\n"
          "Predicts every row of a CSV of published expert-parallel dispatch and\n"
          "combine timings (ep.csv's columns: source, gpu, fabric, library, kernel,\n"
          "phase, scope, ep, nodes, tokens, hidden, topk, experts, dtype, metric,\n"
          "value, timing; an optional knobs column) by building the library's\n"
          "kernel as a program (docs/ep.md) on the gpu's built-in profile with the\n"
          "row's fabric, and prints predicted beside published in the row's own\n"
          "metric (time_us, or GB/s as the library's benchmark computes it), with\n"
          "error = predicted / published - 1; then the median and largest |error|\n"
          "per library and kernel mode, library, phase and source. A prediction\n"
          "never reads the value column.\n"
          "\n"
          "  --data FILE          the CSV; by default the published one installed with\n"
          "                       xstage (share/xstage/published/ep.csv;\n"
          "                       data/published/ in the source tree)\n"
          "  --models LIST|all    also the blocking, serial and ideal models'\n"
          "                       errors (comma-separated; all: every model)\n"
          "  --by-source          leave one source out: the model's fitted constants\n"
          "                       refitted without each source and its rows predicted\n"
          "                       with them (about 15 s for the published data; on a\n"
          "                       linear model past 4,000 sources x rows, up to 2,000\n"
          "                       rows: docs/validate.md); lists every constant\n"
          "  --json               {\"rows\": [...], \"summary\": {...}} (docs/validate.md)\n"
          "  --svg FILE           predicted against published time, log axes\n"
          "  --fail-above F       exit 1 when the median |error| of any library and\n"
          "                       kernel mode (with --by-source: also left out)\n"
          "                       exceeds F (a fraction, e.g. 0.15), after printing\n");
}

static const char *field_of(const xs_validate_row *r, int field) {
  return field == 0 ? r->arm : field == 1 ? r->ep.library
                             : field == 2 ? r->ep.phase : r->source;
}

static int by_value(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* The rows grouped by one field's value, the groups in order of first
 * appearance: group k is rows idx[first[k]] .. idx[first[k + 1] - 1], in
 * row order, named name[k]. Sorting, not a scan of every row per group:
 * a set of 100,000 one-row sources is as quick as one of eight. */
typedef struct {
  size_t n;
  const char **name;
  size_t *first, *idx;
} groups;

static const xs_validate_set *sort_set; /* for the comparisons below */
static int sort_field;

static int by_field_then_row(const void *a, const void *b) {
  size_t i = *(const size_t *)a, j = *(const size_t *)b;
  int c = strcmp(field_of(&sort_set->rows[i], sort_field),
                 field_of(&sort_set->rows[j], sort_field));
  return c ? c : (i > j) - (i < j);
}

/* a run of one value in the sorted rows: its first row, and where it
 * starts and ends in the sorted order */
typedef struct {
  size_t row, start, end;
} run;

static int by_first_row(const void *a, const void *b) {
  const run *x = a, *y = b;
  return (x->row > y->row) - (x->row < y->row);
}

static void groups_free(groups *g) {
  free(g->name);
  free(g->first);
  free(g->idx);
  memset(g, 0, sizeof *g);
}

/* 0, or -1 out of memory */
static int group_rows(const xs_validate_set *set, int field, groups *g) {
  size_t n = set->nrows, nr = 0;
  memset(g, 0, sizeof *g);
  size_t *sorted = malloc((n + 1) * sizeof *sorted);
  run *runs = malloc((n + 1) * sizeof *runs);
  g->idx = malloc((n + 1) * sizeof *g->idx);
  g->first = malloc((n + 2) * sizeof *g->first);
  g->name = malloc((n + 1) * sizeof *g->name);
  if (!sorted || !runs || !g->idx || !g->first || !g->name) {
    free(sorted);
    free(runs);
    groups_free(g);
    return -1;
  }
  for (size_t i = 0; i < n; i++)
    sorted[i] = i;
  sort_set = set;
  sort_field = field;
  qsort(sorted, n, sizeof *sorted, by_field_then_row);
  for (size_t i = 0; i < n; i++) {
    if (i && !strcmp(field_of(&set->rows[sorted[i]], field),
                     field_of(&set->rows[sorted[i - 1]], field)))
      continue;
    if (nr)
      runs[nr - 1].end = i;
    runs[nr++] = (run){sorted[i], i, n};
  }
  qsort(runs, nr, sizeof *runs, by_first_row);
  size_t at = 0;
  for (size_t k = 0; k < nr; k++) {
    g->first[k] = at;
    g->name[k] = field_of(&set->rows[runs[k].row], field);
    for (size_t i = runs[k].start; i < runs[k].end; i++)
      g->idx[at++] = sorted[i];
  }
  g->first[nr] = at;
  g->n = nr;
  free(sorted);
  free(runs);
  return 0;
}

/* median and largest |error| of one model (-1: leave-one-source-out)
 * over rows idx[0..n) (idx NULL: every row) */
static double median_of(const xs_validate_set *set, const size_t *idx, size_t n,
                        int model, size_t *count, double *mx) {
  if (!idx)
    n = set->nrows;
  double *v = malloc((n + 1) * sizeof *v);
  size_t k = 0;
  double m = 0;
  for (size_t i = 0; v && i < n; i++) {
    const xs_validate_row *r = &set->rows[idx ? idx[i] : i];
    double e = model < 0 ? r->ep.loso_error
                         : r->ep.model[model] / r->ep.measured - 1;
    if (isnan(e))
      continue;
    v[k++] = fabs(e);
    m = fmax(m, fabs(e));
  }
  double med = NAN;
  if (k) {
    qsort(v, k, sizeof *v, by_value);
    med = k % 2 ? v[k / 2] : (v[k / 2 - 1] + v[k / 2]) / 2;
  }
  free(v);
  if (count)
    *count = k;
  if (mx)
    *mx = k ? m : NAN;
  return med;
}

/* the rows of group k, for median_of */
#define GROUP(g, k) (g).idx + (g).first[k], (g).first[(k) + 1] - (g).first[k]

/* the summary of rows idx[0..n) (idx NULL: all) */
static json_t *summary_json(const xs_validate_set *set, const size_t *idx, size_t n,
                            int loso) {
  size_t k;
  double mx, med = median_of(set, idx, n, 0, &k, &mx);
  json_t *o = json_pack("{s:I,s:f,s:f}", "rows", (json_int_t)k,
                        "median_abs_error", med, "max_abs_error", mx);
  if (o && loso)
    json_object_set_new(o, "loso_median_abs_error",
                        json_real(median_of(set, idx, n, -1, NULL, NULL)));
  return o;
}

/* the signed median per library and mode and token band (the time's,
 * whatever the row's metric); 0, or the exit code */
static int print_bias(const xs_validate_set *set) {
  groups g;
  if (group_rows(set, 0, &g))
    return cli_out_of_memory("validate");
  printf("\n  signed median error of the time per library and kernel mode and "
         "tokens per rank\n  (predicted over published - 1; bands of 3 rows or "
         "more):\n    %-26s", "library/kernel");
  for (int b = 0; b < XS_VALIDATE_EP_BANDS; b++) {
    const char *label;
    xs_validate_ep_band_bias(set, NULL, b, &label, NULL);
    printf(" %14s", label);
  }
  printf("\n");
  for (size_t k = 0; k < g.n; k++) {
    char name[32];
    printf("    %-26s", cli_text_cut(g.name[k], 26, name, sizeof name));
    for (int b = 0; b < XS_VALIDATE_EP_BANDS; b++) {
      size_t n;
      double v = xs_validate_ep_band_bias(set, g.name[k], b, NULL, &n);
      if (isnan(v))
        printf(" %14s", "-");
      else
        printf(" %+8.1f%% (%3zu)", 100 * v, n);
    }
    printf("\n");
  }
  groups_free(&g);
  return 0;
}

/* the same as a list of {arm, band, rows, signed_median_error}; NULL out
 * of memory */
static json_t *bias_json(const xs_validate_set *set) {
  groups g;
  if (group_rows(set, 0, &g))
    return NULL;
  json_t *list = json_array();
  for (size_t k = 0; list && k < g.n; k++)
    for (int b = 0; b < XS_VALIDATE_EP_BANDS; b++) {
      const char *label;
      size_t n;
      double v = xs_validate_ep_band_bias(set, g.name[k], b, &label, &n);
      if (!isnan(v))
        json_array_append_new(list, json_pack("{s:s,s:s,s:I,s:f}", "arm", g.name[k],
                                              "band", label, "rows", (json_int_t)n,
                                              "signed_median_error", v));
    }
  groups_free(&g);
  return list;
}

static int write_json(const xs_validate_set *set, const int *models, int loso,
                      const double *values, const char **sources, size_t nsrc) {
  static const char *const fields[] = {"by_library_kernel", "by_library",
                                       "by_phase", "by_source"};
  json_t *root = json_object(), *rows = json_array(), *sum = json_object();
  for (size_t i = 0; i < set->nrows; i++) {
    const xs_validate_row *r = &set->rows[i];
    const xs_validate_ep_row *e = &r->ep;
    json_t *o = json_pack(
        "{s:s,s:s,s:s,s:s,s:s,s:s,s:f,s:f,s:f,s:f,s:f,s:f,s:s,s:f,s:f,s:f,"
        "s:f,s:f}",
        "source", r->source, "gpu", r->gpu, "fabric", e->fabric, "library",
        e->library, "kernel", e->mode, "phase", e->phase, "ep", e->ep, "tokens",
        r->tokens, "hidden", e->hidden, "topk", e->topk, "experts", e->experts,
        "sms", e->sms, "metric", e->metric, "measured", e->measured, "predicted",
        e->predicted, "error", r->error, "measured_us", r->measured_us,
        "predicted_us", r->predicted_us);
    if (o && models[1] + models[2] + models[3]) {
      json_t *bm = json_object();
      for (int m = 0; m < XS_MODEL_COUNT; m++)
        if (models[m])
          json_object_set_new(bm, xs_model_name((xs_model)m),
                              json_real(e->model[m]));
      json_object_set_new(o, "by_model", bm);
    }
    if (o && loso)
      json_object_set_new(o, "loso", json_pack("{s:f,s:f}", "predicted",
                                               e->loso, "error", e->loso_error));
    if (o)
      json_object_set_new(o, "interval_us",
                          isfinite(r->interval_us[0])
                              ? json_pack("[f,f]", r->interval_us[0], r->interval_us[1])
                              : json_null());
    json_array_append_new(rows, o);
  }
  json_object_set_new(sum, "rows", json_integer((json_int_t)set->nrows));
  json_object_update_new(sum, summary_json(set, NULL, 0, loso));
  for (int f = 0; f < 5; f++) {
    /* fields 0-3 by their value; then by_model: median and largest |error|
     * of each model per library and kernel mode (last, as before) */
    if (f == 4 && !(models[1] + models[2] + models[3]))
      break;
    groups g;
    if (group_rows(set, f % 4, &g)) {
      json_decref(root);
      json_decref(rows);
      json_decref(sum);
      return cli_out_of_memory("validate");
    }
    json_t *by = json_object();
    for (int m = 0; f == 4 && m < XS_MODEL_COUNT; m++) {
      if (!models[m])
        continue;
      json_t *mo = json_object();
      for (size_t k = 0; k < g.n; k++) {
        size_t n;
        double mx, med = median_of(set, GROUP(g, k), m, &n, &mx);
        json_object_set_new(mo, g.name[k], json_pack("{s:I,s:f,s:f}", "rows",
                                                     (json_int_t)n, "median_abs_error",
                                                     med, "max_abs_error", mx));
      }
      json_object_set_new(by, xs_model_name((xs_model)m), mo);
    }
    for (size_t k = 0; f < 4 && k < g.n; k++)
      json_object_set_new(by, g.name[k], summary_json(set, GROUP(g, k), loso));
    json_object_set_new(sum, f < 4 ? fields[f] : "by_model", by);
    groups_free(&g);
    if (f == 3)
      json_object_set_new(sum, "bias", bias_json(set));
  }
  json_t *consts = json_array();
  for (size_t i = 0; i < XS_EP_CONSTANTS; i++) {
    json_t *c = json_pack("{s:s,s:s,s:f}", "name", xs_ep_constant_name(i),
                          "about", xs_ep_constant_about(i), "value",
                          xs_ep_constant_value(i));
    if (c && loso) {
      json_t *lo = json_object();
      for (size_t k = 0; k < nsrc; k++)
        json_object_set_new(lo, sources[k],
                            json_real(values[k * XS_EP_CONSTANTS + i]));
      json_object_set_new(c, "without_source", lo);
    }
    json_array_append_new(consts, c);
  }
  json_object_set_new(sum, "fitted_constants", consts);
  char *iv = NULL;
  xs_error ierr;
  json_t *ivj = xs_validate_intervals_json(set, &iv, &ierr) ? NULL : json_loads(iv, 0, NULL);
  free(iv);
  json_object_set_new(sum, "intervals", ivj ? ivj : json_null());
  json_object_set_new(root, "rows", rows);
  json_object_set_new(root, "summary", sum);
  char *s = json_dumps(root, JSON_INDENT(1) | JSON_REAL_PRECISION(6));
  json_decref(root);
  if (!s)
    return cli_out_of_memory("validate");
  int rc = cli_write_output("validate", "-", s);
  free(s);
  return rc;
}

/* 0, or the exit code */
static int print_group(const xs_validate_set *set, int field, const char *title,
                       const int *models, int loso) {
  groups g;
  if (group_rows(set, field, &g))
    return cli_out_of_memory("validate");
  printf("\n  by %s:\n", title);
  for (size_t k = 0; k < g.n; k++) {
    size_t n;
    double mx, med = median_of(set, GROUP(g, k), 0, &n, &mx);
    char name[48];
    printf("    %-40s %3zu rows  median %5.1f%%  largest %6.1f%%",
           cli_text_cut(g.name[k], 40, name, sizeof name), n, 100 * med, 100 * mx);
    if (loso)
      printf("  left out %5.1f%%", 100 * median_of(set, GROUP(g, k), -1, NULL, NULL));
    for (int m = 1; m < XS_MODEL_COUNT; m++)
      if (models[m])
        printf("  %s %5.1f%%", xs_model_name((xs_model)m),
               100 * median_of(set, GROUP(g, k), m, NULL, NULL));
    printf("\n");
  }
  groups_free(&g);
  return 0;
}

int cli_validate_ep(int argc, char **argv) {
  static const struct option opts[] = {
      {"data", required_argument, 0, 'd'},  {"json", no_argument, 0, 'j'},
      {"svg", required_argument, 0, 'S'},   {"fail-above", required_argument, 0, 'f'},
      {"models", required_argument, 0, 'm'}, {"by-source", no_argument, 0, 'b'},
      {"help", no_argument, 0, 'h'},        {0, 0, 0, 0}};
  const char *data = NULL, *svg = NULL;
  double fail_above = INFINITY;
  int json = 0, loso = 0, c, models[XS_MODEL_COUNT] = {1, 0, 0, 0};
  opterr = 0;
  optind = 2;
  while ((c = getopt_long(argc, argv, ":d:jS:f:m:bh", opts, NULL)) != -1) {
    switch (c) {
    case 'd': data = optarg; break;
    case 'j': json = 1; break;
    case 'S': svg = optarg; break;
    case 'b': loso = 1; break;
    case 'm': {
      char buf[256];
      snprintf(buf, sizeof buf, "%s", optarg);
      if (!strtok(buf, ", "))
        return cli_usage_error("validate", "--models: an empty list (burstgap, blocking, "
                               "serial, ideal, all)");
      snprintf(buf, sizeof buf, "%s", optarg);
      for (char *t = strtok(buf, ","); t; t = strtok(NULL, ",")) {
        xs_model m;
        if (!strcmp(t, "all"))
          models[1] = models[2] = models[3] = 1;
        else if (!xs_model_from_name(t, &m) && m < XS_MODEL_COUNT)
          models[m] = 1;
        else
          return cli_usage_error("validate", "--models: unknown model \"%s\" "
                                 "(burstgap, blocking, serial, ideal, all)", t);
      }
      break;
    }
    case 'f':
      if (cli_validate_fraction(optarg, &fail_above))
        return EXIT_INPUT;
      break;
    case 'h': help(stdout); return EXIT_OK;
    default: return cli_bad_flag("validate", argc, argv);
    }
  }
  if (optind < argc)
    return cli_usage_error("validate", "unexpected argument \"%s\"", argv[optind]);
  xs_validate_set set;
  xs_error err;
  char found[8192];
  int lrc = cli_validate_load(&data, "published/ep.csv", found, sizeof found, svg,
                              xs_validate_ep, &set);
  if (lrc)
    return lrc;
  int tty = isatty(2);
  xs_status st;
  size_t nsrc = xs_validate_distinct(&set, 1, NULL, 0);
  const char **sources = malloc((nsrc + 1) * sizeof *sources);
  double *values = malloc((nsrc + 1) * XS_EP_CONSTANTS * sizeof *values);
  if (!sources || !values) {
    free(sources);
    free(values);
    xs_validate_free(&set);
    return cli_out_of_memory("validate");
  }
  xs_validate_distinct(&set, 1, sources, nsrc);
  int rc = EXIT_OK;
  if (loso) {
    if (tty)
      fprintf(stderr, "  refitting without each of %zu sources...", nsrc);
    st = xs_validate_ep_by_source(&set, values, &err);
    if (tty)
      fprintf(stderr, "\r%60s\r", "");
    if (st) {
      rc = cli_error("validate", &err);
      goto done;
    }
  }
  /* each row's 80% interval from the other sources' residuals (each with
   * its constants refitted without its source where --by-source ran) */
  if ((st = xs_validate_intervals(&set, &err))) {
    rc = cli_error("validate", &err);
    goto done;
  }
  if (json) {
    rc = write_json(&set, models, loso, values, sources, nsrc);
  } else {
    printf("EP dispatch and combine: %zu rows of %s, each predicted under "
           "burstgap on its gpu's built-in profile and fabric, in its own "
           "metric\n\n", set.nrows, cli_name_text(data));
    printf("  %-24s %-12s %-8s %-18s %-9s %4s %5s %-10s %10s %10s %8s%s\n",
           "source", "gpu", "fabric", "library/kernel", "phase", "ep", "tokens",
           "metric", "published", "predicted", "error",
           loso ? "  left out" : "");
    for (size_t i = 0; i < set.nrows; i++) {
      const xs_validate_row *r = &set.rows[i];
      const xs_validate_ep_row *e = &r->ep;
      char src[32];
      printf("  %-24.24s %-12s %-8s %-18.18s %-9.9s %4g %5g %-10s %10.1f %10.1f "
             "%+7.1f%%", cli_text(r->source, src, sizeof src), r->gpu, e->fabric,
             r->arm, e->phase, e->ep, r->tokens, e->metric, e->measured,
             e->predicted, 100 * r->error);
      if (loso)
        printf("  %+7.1f%%", 100 * e->loso_error);
      printf("\n");
    }
    size_t n;
    double mx, med = median_of(&set, NULL, 0, 0, &n, &mx);
    printf("\n  |error|: median %.1f%%, largest %.1f%% over %zu rows", 100 * med,
           100 * mx, n);
    if (loso)
      printf("; with each source left out of the fit: median %.1f%%",
             100 * median_of(&set, NULL, 0, -1, NULL, NULL));
    printf("\n");
    static const char *const titles[] = {"library and kernel mode", "library", "phase",
                                         "source"};
    for (int f = 0; f < 4 && !rc; f++)
      if (!(rc = print_group(&set, f, titles[f], models, loso)) && f == 0)
        rc = print_bias(&set);
    if (!rc)
      cli_validate_intervals_print(&set);
    printf("\n  fitted constants (the only numbers fitted to these timings; "
           "docs/ep.md):\n");
    for (size_t i = 0; i < XS_EP_CONSTANTS; i++) {
      printf("    %-18s %11.4g  %s\n", xs_ep_constant_name(i),
             xs_ep_constant_value(i), xs_ep_constant_about(i));
      for (size_t k = 0; loso && k < nsrc; k++) {
        char src[48];
        printf("      without %-44.44s %11.4g\n",
               cli_text(sources[k], src, sizeof src),
               values[k * XS_EP_CONSTANTS + i]);
      }
    }
    cli_flush_stdout();
  }
  if (!rc && svg) {
    char title[200];
    snprintf(title, sizeof title, "xstage validate ep: %zu rows, median |error| "
             "%.1f%%", set.nrows, 100 * median_of(&set, NULL, 0, 0, NULL, NULL));
    char *s = xs_validate_svg(&set, title);
    if (!s) {
      rc = cli_out_of_memory("validate");
    } else {
      rc = cli_write_output("validate", svg, s);
      free(s);
    }
  }
  if (!rc && isfinite(fail_above)) {
    groups g;
    if (group_rows(&set, 0, &g))
      rc = cli_out_of_memory("validate");
    for (size_t k = 0; k < g.n; k++) {
      double m = median_of(&set, GROUP(g, k), 0, NULL, NULL);
      double l = loso ? median_of(&set, GROUP(g, k), -1, NULL, NULL) : 0;
      if (m > fail_above || l > fail_above) {
        fprintf(stderr, "xstage validate: %s: median |error| %.1f%%%s is above "
                        "--fail-above %.1f%%\n", g.name[k], 100 * fmax(m, l),
                m > fail_above ? "" : " (left out)", 100 * fail_above);
        rc = EXIT_MACHINE;
      }
    }
    groups_free(&g);
  }
done:
  free(sources);
  free(values);
  xs_validate_free(&set);
  return rc;
}
