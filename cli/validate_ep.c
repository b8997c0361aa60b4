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
          "                          [--json | --csv] [--svg FILE] [--fail-above FRACTION]\n"
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
          "                       errors (comma-separated; all: every model);\n"
          "                       --model LIST is the same flag, as validate\n"
          "                       megamoe spells it\n"
          "  --by-source          leave one source out: the model's fitted constants\n"
          "                       refitted without each source and its rows predicted\n"
          "                       with them (about 20 s); lists every constant\n"
          "  --json               {\"rows\": [...], \"summary\": {...}} (docs/validate.md)\n"
          "  --csv                one header line, one line a row: --json's row keys,\n"
          "                       nested ones joined with \".\"\n"
          "  --svg FILE           predicted against published time, log axes\n"
          "  --fail-above F       exit 1 when the median |error| of any library and\n"
          "                       kernel mode (with --by-source: also left out)\n"
          "                       exceeds F (a fraction, e.g. 0.15), after printing\n");
}

typedef struct {
  int field; /* 0 arm (library/mode), 1 library, 2 phase, 3 source */
  const char *value;
} group;

static const char *field_of(const xs_validate_row *r, int field) {
  return field == 0 ? r->arm : field == 1 ? r->ep.library
                             : field == 2 ? r->ep.phase : r->source;
}

static int same(const xs_validate_row *r, void *g) {
  const group *k = g;
  return !strcmp(field_of(r, k->field), k->value);
}

static int by_value(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* median and largest |error| of one model (-1: leave-one-source-out) over
 * the rows of a group (NULL: all) */
static double median_of(const xs_validate_set *set, const group *g, int model,
                        size_t *n, double *mx) {
  double *v = malloc((set->nrows + 1) * sizeof *v);
  size_t k = 0;
  double m = 0;
  for (size_t i = 0; v && i < set->nrows; i++) {
    const xs_validate_row *r = &set->rows[i];
    if (g && !same(r, (void *)g))
      continue;
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
  if (n)
    *n = k;
  if (mx)
    *mx = k ? m : NAN;
  return med;
}

/* the distinct values of a field, in order of first appearance */
static size_t distinct(const xs_validate_set *set, int field, const char **out) {
  size_t n = 0;
  for (size_t i = 0; i < set->nrows; i++) {
    const char *v = field_of(&set->rows[i], field);
    size_t j = 0;
    while (j < n && strcmp(out[j], v))
      j++;
    if (j == n)
      out[n++] = v;
  }
  return n;
}

static json_t *summary_json(const xs_validate_set *set, const group *g,
                            int loso) {
  size_t n;
  double mx, med = median_of(set, g, 0, &n, &mx);
  json_t *o = json_pack("{s:I,s:f,s:f}", "rows", (json_int_t)n,
                        "median_abs_error", med, "max_abs_error", mx);
  if (o && loso)
    json_object_set_new(o, "loso_median_abs_error",
                        json_real(median_of(set, g, -1, NULL, NULL)));
  return o;
}

/* csv: the rows alone, as CSV (--csv) */
static int write_json(const xs_validate_set *set, const int *models, int loso,
                      const double *values, const char **sources, size_t nsrc, int csv) {
  static const char *const fields[] = {"by_library_kernel", "by_library",
                                       "by_phase", "by_source"};
  json_t *root = json_object(), *rows = json_array(), *sum = json_object();
  for (size_t i = 0; i < set->nrows; i++) {
    const xs_validate_row *r = &set->rows[i];
    const xs_validate_ep_row *e = &r->ep;
    json_t *o = json_pack(
        "{s:s,s:s,s:s,s:s,s:s,s:s,s:f,s:f,s:f,s:f,s:f,s:s,s:f,s:s,s:f,s:f,s:f,"
        "s:f,s:f}",
        "source", r->source, "gpu", r->gpu, "fabric", e->fabric, "library",
        e->library, "kernel", e->mode, "phase", e->phase, "ep", e->ep, "tokens",
        r->tokens, "hidden", e->hidden, "topk", e->topk, "experts", e->experts,
        /* the dtype column, as its element size stands for it */
        "dtype", e->elem_bytes == 1 ? "fp8" : "bf16", "sms", e->sms, "metric", e->metric, "measured", e->measured, "predicted",
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
    json_array_append_new(rows, o);
  }
  json_object_set_new(sum, "rows", json_integer((json_int_t)set->nrows));
  json_object_update_new(sum, summary_json(set, NULL, loso));
  const char **vals = malloc((set->nrows + 1) * sizeof *vals);
  if (!vals) {
    json_decref(root);
    json_decref(rows);
    json_decref(sum);
    return cli_out_of_memory("validate");
  }
  for (int f = 0; f < 4; f++) {
    json_t *by = json_object();
    size_t nv = distinct(set, f, vals);
    for (size_t k = 0; k < nv; k++) {
      group g = {f, vals[k]};
      json_object_set_new(by, vals[k], summary_json(set, &g, loso));
    }
    json_object_set_new(sum, fields[f], by);
  }
  if (models[1] + models[2] + models[3]) {
    /* by_model: median and largest |error| per library and kernel mode */
    json_t *bm = json_object();
    size_t nv = distinct(set, 0, vals);
    for (int m = 0; m < XS_MODEL_COUNT; m++) {
      if (!models[m])
        continue;
      json_t *mo = json_object();
      for (size_t k = 0; k < nv; k++) {
        group g = {0, vals[k]};
        size_t n;
        double mx, med = median_of(set, &g, m, &n, &mx);
        json_object_set_new(mo, vals[k], json_pack("{s:I,s:f,s:f}", "rows",
                                                   (json_int_t)n,
                                                   "median_abs_error", med,
                                                   "max_abs_error", mx));
      }
      json_object_set_new(bm, xs_model_name((xs_model)m), mo);
    }
    json_object_set_new(sum, "by_model", bm);
  }
  free(vals);
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
  json_object_set_new(root, "rows", rows);
  json_object_set_new(root, "summary", sum);
  if (csv) {
    int crc = cli_csv_rows("validate", rows);
    json_decref(root);
    return crc;
  }
  char *s = json_dumps(root, JSON_INDENT(1) | JSON_REAL_PRECISION(6));
  json_decref(root);
  if (!s)
    return cli_out_of_memory("validate");
  int rc = cli_write_output("validate", "-", s);
  free(s);
  return rc;
}

/* srcs: for the sources, their labels (by number after the legend, as
 * the rows name them) */
static void print_group(const xs_validate_set *set, int field, const char *title,
                        const int *models, int loso, const cli_sources *srcs) {
  const char **vals = malloc((set->nrows + 1) * sizeof *vals);
  if (!vals)
    return;
  size_t nv = distinct(set, field, vals);
  printf("\n  by %s:\n", title);
  for (size_t k = 0; k < nv; k++) {
    group g = {field, vals[k]};
    size_t n;
    double mx, med = median_of(set, &g, 0, &n, &mx);
    char lb[96];
    printf("    %-40s %3zu rows  median %5.1f%%  largest %6.1f%%",
           srcs ? cli_source_label(srcs, vals[k], lb, sizeof lb) : vals[k], n, 100 * med,
           100 * mx);
    if (loso)
      printf("  left out %5.1f%%", 100 * median_of(set, &g, -1, NULL, NULL));
    for (int m = 1; m < XS_MODEL_COUNT; m++)
      if (models[m])
        printf("  %s %5.1f%%", xs_model_name((xs_model)m),
               100 * median_of(set, &g, m, NULL, NULL));
    printf("\n");
  }
  free(vals);
}

int cli_validate_ep(int argc, char **argv) {
  static const struct option opts[] = {
      {"data", required_argument, 0, 'd'},  {"json", no_argument, 0, 'j'},
      {"svg", required_argument, 0, 'S'},   {"fail-above", required_argument, 0, 'f'},
      {"models", required_argument, 0, 'm'}, {"by-source", no_argument, 0, 'b'},
      {"model", required_argument, 0, 'm'}, /* validate megamoe's spelling */
      {"csv", no_argument, 0, 'c'},         {"help", no_argument, 0, 'h'},
      {0, 0, 0, 0}};
  const char *data = NULL, *svg = NULL;
  double fail_above = INFINITY;
  int json = 0, csv = 0, loso = 0, c, models[XS_MODEL_COUNT] = {1, 0, 0, 0};
  opterr = 0;
  optind = 2;
  while ((c = getopt_long(argc, argv, ":d:jS:f:m:bhc", opts, NULL)) != -1) {
    switch (c) {
    case 'd': data = optarg; break;
    case 'j': json = 1; break;
    case 'c': csv = 1; break;
    case 'S': svg = optarg; break;
    case 'b': loso = 1; break;
    case 'm': {
      char buf[256];
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
  if (json && csv)
    return cli_usage_error("validate", "--json and --csv exclude each other");
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
  if (json || csv) {
    rc = write_json(&set, models, loso, values, sources, nsrc, csv);
  } else {
    printf("EP dispatch and combine: %zu rows of %s, each predicted under "
           "burstgap on its gpu's built-in profile and fabric, in its own "
           "metric\n\n", set.nrows, data);
    cli_sources srcs;
    if (cli_sources_init(&srcs, &set, 2, 24)) {
      rc = cli_out_of_memory("validate");
      goto done;
    }
    cli_sources_print(&srcs);
    printf("  %-24s %-12s %-8s %-18s %-9s %4s %5s %-10s %10s %10s %8s%s\n",
           "source", "gpu", "fabric", "library/kernel", "phase", "ep", "tokens",
           "metric", "published", "predicted", "error",
           loso ? "  left out" : "");
    for (size_t i = 0; i < set.nrows; i++) {
      const xs_validate_row *r = &set.rows[i];
      const xs_validate_ep_row *e = &r->ep;
      char src[96];
      printf("  %-24s %-12s %-8s %-18.18s %-9.9s %4g %5g %-10s %10.1f %10.1f "
             "%+7.1f%%", cli_source_label(&srcs, r->source, src, sizeof src), r->gpu,
             e->fabric,
             r->arm, e->phase, e->ep, r->tokens, e->metric, e->measured,
             e->predicted, 100 * r->error);
      if (loso)
        printf("  %+7.1f%%", 100 * e->loso_error);
      printf("\n");
    }
    /* the tables below label a source in 40 columns, by the legend's
     * number where the rows do */
    cli_sources wide = srcs;
    wide.width = 40;
    size_t n;
    double mx, med = median_of(&set, NULL, 0, &n, &mx);
    printf("\n  |error|: median %.1f%%, largest %.1f%% over %zu rows", 100 * med,
           100 * mx, n);
    if (loso)
      printf("; with each source left out of the fit: median %.1f%%",
             100 * median_of(&set, NULL, -1, NULL, NULL));
    printf("\n");
    print_group(&set, 0, "library and kernel mode", models, loso, NULL);
    print_group(&set, 1, "library", models, loso, NULL);
    print_group(&set, 2, "phase", models, loso, NULL);
    print_group(&set, 3, "source", models, loso, &wide);
    printf("\n  fitted constants (the only numbers fitted to these timings; "
           "docs/ep.md):\n");
    for (size_t i = 0; i < XS_EP_CONSTANTS; i++) {
      printf("    %-18s %11.4g  %s\n", xs_ep_constant_name(i),
             xs_ep_constant_value(i), xs_ep_constant_about(i));
      for (size_t k = 0; loso && k < nsrc; k++) {
        char src[96];
        printf("      without %-40s %11.4g\n", cli_source_label(&wide, sources[k], src, sizeof src),
               values[k * XS_EP_CONSTANTS + i]);
      }
    }
    cli_sources_free(&srcs);
    cli_flush_stdout();
  }
  if (!rc && svg) {
    char title[200];
    snprintf(title, sizeof title, "xstage validate ep: %zu rows, median |error| "
             "%.1f%%", set.nrows, 100 * median_of(&set, NULL, 0, NULL, NULL));
    char *s = xs_validate_svg(&set, title);
    if (!s) {
      rc = cli_out_of_memory("validate");
    } else {
      rc = cli_write_output("validate", svg, s);
      free(s);
    }
  }
  if (!rc && isfinite(fail_above)) {
    const char **arms = malloc((set.nrows + 1) * sizeof *arms);
    size_t na = arms ? distinct(&set, 0, arms) : 0;
    for (size_t k = 0; k < na; k++) {
      group g = {0, arms[k]};
      double m = median_of(&set, &g, 0, NULL, NULL);
      double l = loso ? median_of(&set, &g, -1, NULL, NULL) : 0;
      if (m > fail_above || l > fail_above) {
        fprintf(stderr, "xstage validate: %s: median |error| %.1f%%%s is above "
                        "--fail-above %.1f%%\n", arms[k], 100 * fmax(m, l),
                m > fail_above ? "" : " (left out)", 100 * fail_above);
        rc = EXIT_MACHINE;
      }
    }
    free(arms);
  }
done:
  free(sources);
  free(values);
  xs_validate_free(&set);
  return rc;
}
