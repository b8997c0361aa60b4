/*
 * validate_interval.c: the residuals of the validation sets, as the table
 * the prediction intervals rest on (data/residuals.csv, `xstage validate
 * residuals`), and each validated row's own interval, taken from the rows
 * of the other sources (leave one source out), so that the coverage the
 * report gives is what a kernel never seen would get. docs/validate.md
 * "Intervals"; the interval model is interval.c's.
 */
#include "validate/validate.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *family_of(const xs_validate_row *r) {
  return r->kind == 2 ? "ep" : r->kind == 1 ? "flashattn" : "megamoe";
}

static double size_of(const xs_validate_row *r) {
  return r->kind == 1 ? r->fa.seq : r->tokens;
}

/* a row the intervals are about: a kernel's time (not another metric) */
static int kernel_time(const xs_validate_row *r) {
  return !r->metric[0] || !strcmp(r->metric, "time") || r->kind == 2;
}

/* what the row's residual compares: its time, and the prediction made
 * without its own source (EP's refit constants, where they were refitted;
 * the other families fit nothing to their rows) */
static double predicted_loso_us(const xs_validate_row *r) {
  if (r->kind == 2 && isfinite(r->ep.loso) && r->ep.loso > 0 && r->ep.predicted > 0)
    return strcmp(r->ep.metric, "time_us") ? r->predicted_us * r->ep.predicted / r->ep.loso
                                           : r->ep.loso;
  return r->predicted_us;
}

/* the set's kernel-time rows and its pairs of arms as residuals (strings
 * point into the set) */
static xs_status residuals_of(const xs_validate_set *set, xs__resid **rows, size_t *n,
                              size_t *cap, int pairs, xs_error *err) {
  for (size_t i = 0; i < set->nrows; i++) {
    const xs_validate_row *r = &set->rows[i];
    double p = predicted_loso_us(r);
    if (!kernel_time(r) || !(r->measured_us > 0) || !(p > 0))
      continue;
    if (xs__grow(rows, cap, *n + 1, sizeof **rows))
      return xs__fail(err, XS_NOMEM, "out of memory");
    (*rows)[(*n)++] = (xs__resid){family_of(r), r->source, r->arm, 0, size_of(r),
                                  r->measured_us, p};
  }
  if (!pairs || !set->nrows || set->rows[0].kind == 2)
    return XS_OK;
  xs_validate_pair *pl = NULL;
  size_t np = 0;
  xs_status st = xs_validate_pair_list(set, 0, &pl, &np, err);
  for (size_t k = 0; k < np && !st; k++) {
    const xs_validate_row *a = &set->rows[pl[k].a];
    if (!kernel_time(a) || !kernel_time(&set->rows[pl[k].b]))
      continue;
    if (xs__grow(rows, cap, *n + 1, sizeof **rows)) {
      st = xs__fail(err, XS_NOMEM, "out of memory");
      break;
    }
    /* oriented as a plan asks: the arm predicted slower over the one
     * predicted faster, so the residual says how far a predicted margin
     * moves in the measurement */
    double m = pl[k].measured_ratio, p = pl[k].predicted_ratio;
    if (p < 1) {
      m = 1 / m;
      p = 1 / p;
    }
    (*rows)[(*n)++] = (xs__resid){family_of(a), a->source, "pair", 1, size_of(a), m, p};
  }
  free(pl);
  return st;
}

xs_status xs_validate_intervals(xs_validate_set *set, xs_error *err) {
  xs__resid *rows = NULL;
  size_t n = 0, cap = 0;
  xs_status st = residuals_of(set, &rows, &n, &cap, 0, err);
  for (size_t i = 0; i < set->nrows && !st; i++) {
    xs_validate_row *r = &set->rows[i];
    r->interval_us[0] = r->interval_us[1] = NAN;
    r->interval_pooled = 0;
    if (!kernel_time(r))
      continue;
    xs_interval iv;
    st = xs__interval_of(rows, n, family_of(r), r->arm, size_of(r), r->source, &iv, err);
    if (!st) {
      r->interval_us[0] = r->predicted_us * iv.low;
      r->interval_us[1] = r->predicted_us * iv.high;
      r->interval_pooled = iv.pooled;
    }
  }
  free(rows);
  return st;
}

/* the arm x band cells of a set, in first-row order */
xs_status xs_validate_coverage(const xs_validate_set *set, xs_validate_cover **out,
                               size_t *n, xs_error *err) {
  *out = NULL;
  *n = 0;
  size_t cap = 0;
  for (size_t i = 0; i < set->nrows; i++) {
    const xs_validate_row *r = &set->rows[i];
    if (!kernel_time(r) || !isfinite(r->interval_us[0]))
      continue;
    const char *fam = family_of(r);
    int band = xs__interval_band(fam, size_of(r));
    size_t j = 0;
    while (j < *n && (strcmp((*out)[j].arm, r->arm) || (*out)[j].band != band))
      j++;
    if (j == *n) {
      if (xs__grow(out, &cap, *n + 1, sizeof **out)) {
        free(*out);
        *out = NULL;
        *n = 0;
        return xs__fail(err, XS_NOMEM, "out of memory");
      }
      memset(&(*out)[j], 0, sizeof **out);
      snprintf((*out)[j].arm, sizeof (*out)[j].arm, "%s", r->arm);
      (*out)[j].band = band;
      snprintf((*out)[j].band_name, sizeof (*out)[j].band_name, "%s",
               xs__interval_band_name(fam, band));
      (*n)++;
    }
    xs_validate_cover *c = &(*out)[j];
    c->rows++;
    c->inside += r->measured_us >= r->interval_us[0] && r->measured_us <= r->interval_us[1];
    c->pooled += r->interval_pooled;
  }
  /* the median half-width of each cell, then of all rows */
  double *v = malloc((set->nrows + 1) * sizeof *v);
  if (!v) {
    free(*out);
    *out = NULL;
    *n = 0;
    return xs__fail(err, XS_NOMEM, "out of memory");
  }
  for (size_t j = 0; j < *n; j++) {
    size_t k = 0;
    for (size_t i = 0; i < set->nrows; i++) {
      const xs_validate_row *r = &set->rows[i];
      if (!kernel_time(r) || !isfinite(r->interval_us[0]) || strcmp(r->arm, (*out)[j].arm) ||
          xs__interval_band(family_of(r), size_of(r)) != (*out)[j].band)
        continue;
      v[k++] = (r->interval_us[1] - r->interval_us[0]) / (2 * r->predicted_us);
    }
    (*out)[j].median_half_width = xs__median_of(v, k);
  }
  free(v);
  return XS_OK;
}

/* a CSV field: quoted where it holds a comma, a quote or a line end */
static void field(xs__sbuf *b, const char *s) {
  if (!strpbrk(s, ",\"\r\n")) {
    xs__sb_printf(b, "%s", s);
    return;
  }
  xs__sb_printf(b, "\"");
  for (; *s; s++)
    xs__sb_printf(b, *s == '"' ? "\"\"" : "%c", *s);
  xs__sb_printf(b, "\"");
}

xs_status xs_validate_residuals_csv(const xs_validate_set *const *sets, size_t nsets,
                                    char **out, xs_error *err) {
  *out = NULL;
  xs__sbuf b = {0};
  xs__sb_printf(&b, "# The residuals of xstage's models on its published data: each kernel-time\n"
                    "# row (measured, and predicted without its own source where constants are\n"
                    "# fitted) and each ratio of two arms of one config (kind pair). Written by\n"
                    "# `xstage validate residuals`; the prediction intervals rest on it\n"
                    "# (docs/validate.md \"Intervals\"). Do not edit.\n"
                    "kind,family,source,gpu,arm,size,measured,predicted\n");
  xs_status st = XS_OK;
  for (size_t s = 0; s < nsets && !st; s++) {
    xs__resid *rows = NULL;
    size_t n = 0, cap = 0;
    const xs_validate_set *set = sets[s];
    st = residuals_of(set, &rows, &n, &cap, 1, err);
    for (size_t i = 0; i < n && !st; i++) {
      const xs__resid *r = &rows[i];
      /* the gpu: the row's, found by its source and family */
      const char *gpu = "";
      for (size_t k = 0; k < set->nrows; k++)
        if (set->rows[k].source == r->source || !strcmp(set->rows[k].source, r->source)) {
          gpu = set->rows[k].gpu;
          break;
        }
      xs__sb_printf(&b, "%s,%s,", r->pair ? "pair" : "row", r->family);
      field(&b, r->source);
      xs__sb_printf(&b, ",");
      field(&b, gpu);
      xs__sb_printf(&b, ",%s,%.12g,%.12g,%.12g\n", r->pair ? "pair" : r->arm, r->size,
                    r->measured, r->predicted);
    }
    free(rows);
  }
  if (!st && b.oom)
    st = xs__fail(err, XS_NOMEM, "out of memory");
  if (st) {
    free(b.s);
    return st;
  }
  *out = b.s;
  return XS_OK;
}

/* the two tables' rows agree: the same kinds, families, sources and arms,
 * in the same order, sizes and times within rel (relative) */
xs_status xs_validate_residuals_same(const char *a, size_t alen, const char *b,
                                     double rel, size_t *differ, xs_error *err) {
  *differ = 0;
  xs__resid_table x, y;
  xs_status st = xs__resid_table_parse(a, alen, &x, err);
  if (st)
    return st;
  if ((st = xs__resid_table_parse(b, strlen(b), &y, err))) {
    xs__resid_table_free(&x);
    return st;
  }
  size_t n = x.nrows < y.nrows ? x.nrows : y.nrows;
  for (size_t i = 0; i < n && !*differ; i++) {
    const xs__resid *p = &x.rows[i], *q = &y.rows[i];
    if (p->pair != q->pair || strcmp(p->family, q->family) || strcmp(p->source, q->source) ||
        strcmp(p->arm, q->arm) || fabs(p->size - q->size) > rel * fabs(q->size) ||
        fabs(p->measured / q->measured - 1) > rel || fabs(p->predicted / q->predicted - 1) > rel)
      *differ = i + 1;
  }
  if (!*differ && x.nrows != y.nrows)
    *differ = n + 1;
  xs__resid_table_free(&x);
  xs__resid_table_free(&y);
  return XS_OK;
}
