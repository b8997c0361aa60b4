/*
 * megamoe.c: how `xstage validate megamoe` predicts a row and what it
 * makes of the rows. A row is predicted with the knobs its kernel ran
 * with: the kernel's own defaults for the shape (heuristics.c), or those
 * its optional knobs column states ("lag=8;capacity=8192"), never the
 * planner's search, under every model. The lag kernel's default lag
 * follows a token bound that a harness may pass or not; such rows are
 * predicted both ways and the other way reported beside. Then: each
 * model's median error, the pairs of arms measured apart, the signed
 * error per arm and token band.
 */
#include "validate/validate.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* "key=value;key=value" into knobs and the config (c's shape already
 * read); 0, or -1 with what was wrong in bad: an unknown or repeated key,
 * a value that is not a decimal whole number from 1 to 1e7, a tile no
 * kernel runs (block_m and block_n multiples of 16 from 16 to 256), or
 * more experts a wave than a rank holds */
int xs__validate_moe_knobs(const char *text, xs_moe_config *c,
                           xs_moe_pattern *k, char *bad, size_t badn) {
  static const char *const keys[] = {"block_m", "block_n", "lag", "group",
                                     "experts_per_wave", "warmup",
                                     "capacity", NULL};
  unsigned seen = 0;
  const char *p = text;
  while (*p) {
    while (*p == ' ' || *p == ';')
      p++;
    if (!*p)
      break;
    const char *eq = strchr(p, '='), *end = strchr(p, ';');
    if (!end)
      end = p + strlen(p);
    if (!eq || eq > end) {
      snprintf(bad, badn, "\"%.*s\" is not key=value", (int)(end - p), p);
      return -1;
    }
    size_t kl = (size_t)(eq - p);
    int which = -1;
    for (int i = 0; keys[i]; i++)
      if (strlen(keys[i]) == kl && !strncmp(keys[i], p, kl))
        which = i;
    if (which < 0) {
      snprintf(bad, badn,
               "unknown knob \"%.*s\" (block_m, block_n, lag, group, "
               "experts_per_wave, warmup, capacity)",
               (int)kl, p);
      return -1;
    }
    if (seen & (1u << which)) {
      snprintf(bad, badn, "%s is given twice", keys[which]);
      return -1;
    }
    seen |= 1u << which;
    const char *num_end = eq + 1;
    double v = 0;
    int not_num = xs__decimal(eq + 1, &v, &num_end);
    while (*num_end == ' ')
      num_end++;
    if (not_num || num_end != end || !(v >= 1 && v <= 1e7) || v != floor(v)) {
      snprintf(bad, badn, "%s: expected a whole number from 1 to 1e7, got \"%.*s\"",
               keys[which], (int)(end - eq - 1), eq + 1);
      return -1;
    }
    if (which <= 1 && (v > 256 || fmod(v, 16) != 0)) {
      snprintf(bad, badn, "%s: expected a multiple of 16 from 16 to 256 (a GEMM tile), "
               "got %g", keys[which], v);
      return -1;
    }
    if (which == 4 && v > c->experts / c->ep) {
      snprintf(bad, badn, "experts_per_wave: %g, more than the %g experts a rank holds "
               "(experts / ep)", v, c->experts / c->ep);
      return -1;
    }
    unsigned u = (unsigned)v;
    switch (which) {
    case 0: k->block_m = u; break;
    case 1: k->block_n = u; break;
    case 2: k->lag = u; break;
    case 3: k->group = u; break;
    case 4: k->experts_per_wave = u; break;
    case 5: k->warmup = u; break;
    default: c->capacity = v; break;
    }
    p = end;
  }
  return 0;
}

/* When the lag kernel's dispatch pull delivered its last row: the finish
 * of the dispatch workers of its program under burstgap. */
static xs_status pull_end(const xs_moe_config *c, const xs_profile *prof,
                          xs_moe_schedule s, const xs_moe_pattern *k,
                          double *out, xs_error *err) {
  xs_program *p = NULL;
  xs_result *r = NULL;
  xs_status st = xs_moe_program(c, prof, s, k, &p, err);
  xs_eval_options o = {0, 1, NULL, NULL};
  if (!st)
    st = xs_evaluate(p, prof, XS_MODEL_BURSTGAP, &o, &r, err);
  if (!st) {
    double t = NAN;
    for (size_t w = 0; w < r->nworkers; w++)
      if (!strncmp(xs_program_worker_name(p, w), "dispatch", 8))
        t = isnan(t) ? r->workers[w].finish_s : fmax(t, r->workers[w].finish_s);
    if (isnan(t))
      st = xs__fail(err, XS_INVALID,
                    "schedule %s has no dispatch pull to time (metric "
                    "pull_end)",
                    xs_moe_schedule_name(s));
    *out = t;
  }
  xs_result_free(r);
  xs_program_free(p);
  return st;
}

xs_status xs__validate_moe_predict(xs_validate_row *row,
                                   const xs_profile *prof, xs_error *err) {
  xs_moe_config *c = &row->config;
  xs_moe_schedule s = (xs_moe_schedule)xs_moe_schedule_from_name(row->arm);
  int pull = !strcmp(row->metric, "pull_end");
  xs_moe_pattern k = row->knobs;
  xs_status st;
  row->alt_us = NAN;
  if (pull) {
    double t;
    /* the knobs the kernel takes (written back), then its pull's end */
    if ((st = xs_moe_evaluate(c, prof, s, &k, NULL, NULL, err)) ||
        (st = pull_end(c, prof, s, &k, &t, err)))
      return st;
    row->knobs = k;
    row->predicted_us = t * 1e6;
    for (int m = 0; m < XS_MODEL_COUNT; m++)
      row->model_us[m] = m == XS_MODEL_BURSTGAP ? row->predicted_us : NAN;
    return XS_OK;
  }
  double t[XS_MODEL_COUNT];
  if ((st = xs_moe_evaluate(c, prof, s, &k, t, &row->breakdown, err)))
    return st;
  for (int m = 0; m < XS_MODEL_COUNT; m++)
    row->model_us[m] = t[m] * 1e6;
  row->predicted_us = row->model_us[XS_MODEL_BURSTGAP];
  /* the lag's other token bound, when the row does not fix the lag */
  if (s == XS_MOE_FUSED_LAG && !row->knobs.lag) {
    xs_moe_config alt = *c;
    alt.capacity = c->capacity > 0 ? 0 : fmax(8192, c->tokens);
    xs_moe_pattern ak = row->knobs;
    double ta[XS_MODEL_COUNT];
    if ((st = xs_moe_evaluate(&alt, prof, s, &ak, ta, NULL, err)))
      return st;
    row->alt_us = ta[XS_MODEL_BURSTGAP] * 1e6;
    row->alt_knobs = ak;
  }
  row->knobs = k;
  return XS_OK;
}

static int is_time(const xs_validate_row *r) {
  return !r->metric[0] || !strcmp(r->metric, "time");
}

double xs_validate_median_model(const xs_validate_set *set, xs_model model,
                                int (*keep)(const xs_validate_row *, void *),
                                void *ctx, size_t *n, double *max_abs) {
  double *v = malloc((set->nrows + 1) * sizeof *v), mx = 0;
  size_t k = 0;
  for (size_t i = 0; v && i < set->nrows; i++) {
    const xs_validate_row *r = &set->rows[i];
    if (!is_time(r) || (keep && !keep(r, ctx)) || (unsigned)model >= XS_MODEL_COUNT)
      continue;
    double e = fabs(r->model_us[model] / r->measured_us - 1);
    if (isnan(e))
      continue;
    v[k++] = e;
    mx = fmax(mx, e);
  }
  if (n)
    *n = k;
  if (max_abs)
    *max_abs = k ? mx : NAN;
  double m = xs__median_of(v, k);
  free(v);
  return m;
}

double xs_validate_bias(const xs_validate_set *set, const char *arm, double lo,
                        double hi, size_t *n) {
  double *v = malloc((set->nrows + 1) * sizeof *v);
  size_t k = 0;
  for (size_t i = 0; v && i < set->nrows; i++) {
    const xs_validate_row *r = &set->rows[i];
    if (is_time(r) && (!arm || !strcmp(r->arm, arm)) && r->tokens >= lo &&
        r->tokens <= hi)
      v[k++] = r->error;
  }
  if (n)
    *n = k;
  double m = xs__median_of(v, k);
  free(v);
  return m;
}

/* the config key of a MegaMoE row: rows of one config, different arms,
 * pair up */
static int cmp_config(const xs_validate_row *a, const xs_validate_row *b) {
  int c = strcmp(a->source, b->source);
  if (!c) c = strcmp(a->gpu, b->gpu);
  if (!c) c = strcmp(a->metric, b->metric);
  const xs_moe_config *x = &a->config, *y = &b->config;
  const double u[] = {x->tokens, x->hidden, x->intermediate, x->experts,
                      x->topk, x->ep, x->weight_bytes, x->act_bytes,
                      x->shared_experts};
  const double w[] = {y->tokens, y->hidden, y->intermediate, y->experts,
                      y->topk, y->ep, y->weight_bytes, y->act_bytes,
                      y->shared_experts};
  for (size_t i = 0; !c && i < sizeof u / sizeof u[0]; i++)
    c = (u[i] > w[i]) - (u[i] < w[i]);
  return c;
}

typedef struct {
  const xs_validate_row *r;
  size_t i;
} idx_row;

static int cmp_idx(const void *x, const void *y) {
  const idx_row *a = x, *b = y;
  int c = cmp_config(a->r, b->r);
  if (!c)
    c = strcmp(a->r->arm, b->r->arm);
  return c ? c : (a->i > b->i) - (a->i < b->i);
}

xs_status xs_validate_pair_list(const xs_validate_set *set, double apart,
                                xs_validate_pair **out, size_t *n,
                                xs_error *err) {
  *out = NULL;
  *n = 0;
  /* sort by config (n log n), then pair within each run of one config */
  idx_row *ix = malloc((set->nrows + 1) * sizeof *ix);
  if (!ix)
    return xs__fail(err, XS_NOMEM, "out of memory");
  size_t m = 0;
  for (size_t i = 0; i < set->nrows; i++)
    if (set->rows[i].kind == 0)
      ix[m++] = (idx_row){&set->rows[i], i};
  qsort(ix, m, sizeof *ix, cmp_idx);
  xs_validate_pair *p = NULL;
  size_t cap = 0, k = 0;
  for (size_t s = 0; s < m;) {
    size_t e = s + 1;
    while (e < m && !cmp_config(ix[s].r, ix[e].r))
      e++;
    for (size_t a = s; a < e; a++)
      for (size_t b = a + 1; b < e; b++) {
        const xs_validate_row *x = ix[a].r, *y = ix[b].r;
        if (!strcmp(x->arm, y->arm))
          continue;
        double mr = x->measured_us / y->measured_us;
        if (!(fabs(mr - 1) > apart) && !(fabs(1 / mr - 1) > apart))
          continue;
        if (xs__grow(&p, &cap, k + 1, sizeof *p)) {
          free(p);
          free(ix);
          return xs__fail(err, XS_NOMEM, "out of memory");
        }
        double pr = x->predicted_us / y->predicted_us;
        p[k++] = (xs_validate_pair){ix[a].i, ix[b].i, mr, pr,
                                    (mr > 1) == (pr > 1)};
      }
    s = e;
  }
  free(ix);
  *out = p;
  *n = k;
  return XS_OK;
}

void xs_validate_pair_stats_of(const xs_validate_pair *p, size_t n,
                               xs_validate_pair_stats *out) {
  memset(out, 0, sizeof *out);
  double *v = malloc((n + 1) * sizeof *v), mx = 0;
  for (size_t i = 0; i < n; i++) {
    double e = fabs(p[i].predicted_ratio / p[i].measured_ratio - 1);
    if (v)
      v[i] = e;
    mx = fmax(mx, e);
    out->agree += (size_t)p[i].agree;
    double mr = p[i].measured_ratio, pr = p[i].predicted_ratio;
    if (mr >= 1.2 || mr <= 1 / 1.2) {
      out->wide++;
      out->wide_kept += (mr > 1 && pr >= 1.1) || (mr < 1 && pr <= 1 / 1.1);
    }
  }
  out->pairs = n;
  out->median_ratio_error = v ? xs__median_of(v, n) : NAN;
  out->max_ratio_error = n ? mx : NAN;
  free(v);
}

double xs__validate_band_bias(const xs_validate_set *set, const char *arm, int i,
                              const double (*bands)[2], const char *const *names, int nb,
                              size_t min_rows, const char **label, size_t *n) {
  i = i < 0 ? 0 : i >= nb ? nb - 1 : i;
  if (label)
    *label = names[i];
  size_t k;
  double v = xs_validate_bias(set, arm, bands[i][0], bands[i][1], &k);
  if (n)
    *n = k;
  return k >= min_rows ? v : NAN;
}

double xs_validate_band_bias(const xs_validate_set *set, const char *arm, int i,
                             const char **label, size_t *n) {
  static const double b[XS_VALIDATE_BANDS][2] = {{0, 64}, {128, 512}, {1024, INFINITY}};
  static const char *const names[XS_VALIDATE_BANDS] = {"<=64", "128-512", ">=1024"};
  return xs__validate_band_bias(set, arm, i, b, names, XS_VALIDATE_BANDS, 3, label, n);
}
