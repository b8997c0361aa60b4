/*
 * flashattn.c: how `xstage validate flashattn` predicts a ring row and
 * what it makes of the rows: each row under every model and with
 * communication free; which rows show communication by measurement (the
 * ring measured more than 10% above P times the local arm of the same
 * shape, the ring's ideal); the error on those rows, on the overhead
 * itself (ring over ideal), and what the same rows score if communication
 * were free (docs/validate.md "flashattn").
 */
#include "plan/attention/attention.h"
#include "validate/validate.h"

#include <stdlib.h>
#include <string.h>

xs_status xs__validate_fa_predict(xs_validate_row *row, const xs_profile *prof,
                                  xs_fa_path path, xs_error *err) {
  double t[XS_MODEL_COUNT];
  xs_status st = xs__fa_predict_models(&row->fa, prof, path, t, &row->fa_breakdown, err);
  if (st)
    return st;
  for (int m = 0; m < XS_MODEL_COUNT; m++)
    row->model_us[m] = t[m] * 1e6;
  row->predicted_us = row->model_us[XS_MODEL_BURSTGAP];
  return XS_OK;
}

size_t xs_validate_fa_local(const xs_validate_set *set, size_t i) {
  const xs_validate_row *a = &set->rows[i];
  if (a->kind != 1 || !strcmp(a->arm, "local"))
    return SIZE_MAX;
  for (size_t j = 0; j < set->nrows; j++) {
    const xs_validate_row *b = &set->rows[j];
    const xs_fa_config *x = &a->fa, *y = &b->fa;
    if (b->kind == 1 && !strcmp(b->arm, "local") && !strcmp(a->source, b->source) &&
        !strcmp(a->gpu, b->gpu) && x->seq == y->seq && x->heads_q == y->heads_q &&
        x->heads_kv == y->heads_kv && x->head_dim == y->head_dim &&
        x->causal == y->causal && x->backward == y->backward &&
        !strcmp(x->kernel, y->kernel) && x->batch == y->batch)
      return j;
  }
  return SIZE_MAX;
}

xs_status xs_validate_fa_summary(const xs_validate_set *set, double threshold,
                                 xs_validate_fa_stats *out, xs_error *err) {
  memset(out, 0, sizeof *out);
  size_t n = set->nrows;
  double *v = malloc(6 * (n + 1) * sizeof *v);
  if (!v)
    return xs__fail(err, XS_NOMEM, "out of memory");
  double *all = v, *fall = v + n + 1, *sh = v + 2 * (n + 1), *fsh = v + 3 * (n + 1);
  double *ra = v + 4 * (n + 1), *fra = v + 5 * (n + 1);
  size_t na = 0, ns = 0, nr = 0;
  const char *srcs[64];
  size_t nsrc = 0;
  for (size_t i = 0; i < n; i++) {
    const xs_validate_row *r = &set->rows[i];
    if (r->kind != 1)
      continue;
    double free_us = r->fa_breakdown.free_s * 1e6;
    all[na] = fabs(r->error);
    fall[na++] = fabs(free_us / r->measured_us - 1);
    size_t l = xs_validate_fa_local(set, i);
    if (l == SIZE_MAX)
      continue;
    out->rings++;
    const xs_validate_row *lr = &set->rows[l];
    double P = r->fa.cp, over = r->measured_us / (P * lr->measured_us);
    if (!(over > 1 + threshold))
      continue;
    sh[ns] = fabs(r->error);
    fsh[ns++] = fabs(free_us / r->measured_us - 1);
    /* the overhead itself: the ring over its ideal, predicted against
     * measured */
    double pover = r->predicted_us / (P * lr->predicted_us);
    double fover = free_us / (P * lr->predicted_us);
    ra[nr] = fabs(pover / over - 1);
    fra[nr++] = fabs(fover / over - 1);
    size_t k = 0;
    while (k < nsrc && strcmp(srcs[k], r->source))
      k++;
    if (k == nsrc && nsrc < 64)
      srcs[nsrc++] = r->source;
  }
  out->rows = na;
  out->shows = ns;
  out->shows_sources = nsrc;
  out->max_shows = 0;
  for (size_t i = 0; i < ns; i++)
    out->max_shows = fmax(out->max_shows, sh[i]);
  out->median_all = xs__median_of(all, na);
  out->free_median_all = xs__median_of(fall, na);
  out->median_shows = xs__median_of(sh, ns);
  out->free_median_shows = xs__median_of(fsh, ns);
  out->median_ratio_shows = xs__median_of(ra, nr);
  out->free_median_ratio_shows = xs__median_of(fra, nr);
  free(v);
  return XS_OK;
}

double xs_validate_fa_band_bias(const xs_validate_set *set, const char *arm, int i,
                                const char **label, size_t *n) {
  static const double b[XS_VALIDATE_FA_BANDS][2] = {
      {0, 4096}, {4097, 16384}, {16385, INFINITY}};
  static const char *const names[XS_VALIDATE_FA_BANDS] = {"<=4k", "4-16k", ">16k"};
  return xs__validate_band_bias(set, arm, i, b, names, XS_VALIDATE_FA_BANDS, 1, label, n);
}
