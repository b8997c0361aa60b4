/*
 * fit.c: the fit that turns calibration samples (src/formats/samples.c,
 * docs/formats.md "Calibration samples") into a channel's parameters, for `xstage fit` and `xstage calibrate`.
 *
 * From an empty channel a burst of B bytes issues in B/R_inj up to the knee
 * b_f = C R_inj/(R_inj - R_drain), then in b_f/R_inj + (B - b_f)/R_drain,
 * and is delivered at B/R_drain + L whatever its size (docs/model.md). So
 * issue time against B is piecewise linear with one knee, scanned over the
 * sizes seen and then refined between them, and delivery time is a line.
 * Both are fitted to the median of each size's repetitions: one burst in
 * which the writer or the reader was descheduled moves a median little and
 * a mean a lot, and this machine is shared.
 */
#include "internal.h"

#include <ctype.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- the fit ---- */

/* Least squares y = X beta for 2 or 3 columns (normal equations). */
static int lsq(size_t n, int m, const double *x0, const double *x1,
               const double *x2, const double *y, const size_t *idx,
               double *beta, double *sse) {
  double A[3][3] = {{0}}, b[3] = {0};
  for (size_t k = 0; k < n; k++) {
    size_t i = idx ? idx[k] : k;
    double r[3] = {x0[i], x1[i], m > 2 ? x2[i] : 0};
    for (int a = 0; a < m; a++) {
      b[a] += r[a] * y[i];
      for (int c = 0; c < m; c++)
        A[a][c] += r[a] * r[c];
    }
  }
  /* Gaussian elimination with partial pivoting */
  for (int c = 0; c < m; c++) {
    int piv = c;
    for (int r = c + 1; r < m; r++)
      if (fabs(A[r][c]) > fabs(A[piv][c]))
        piv = r;
    if (fabs(A[piv][c]) < 1e-300)
      return -1;
    if (piv != c) {
      for (int k = 0; k < m; k++) {
        double t = A[c][k];
        A[c][k] = A[piv][k];
        A[piv][k] = t;
      }
      double t = b[c];
      b[c] = b[piv];
      b[piv] = t;
    }
    for (int r = c + 1; r < m; r++) {
      double f = A[r][c] / A[c][c];
      for (int k = c; k < m; k++)
        A[r][k] -= f * A[c][k];
      b[r] -= f * b[c];
    }
  }
  for (int c = m - 1; c >= 0; c--) {
    double v = b[c];
    for (int k = c + 1; k < m; k++)
      v -= A[c][k] * beta[k];
    beta[c] = v / A[c][c];
  }
  double e = 0;
  for (size_t k = 0; k < n; k++) {
    size_t i = idx ? idx[k] : k;
    double r = y[i] - beta[0] * x0[i] - beta[1] * x1[i] - (m > 2 ? beta[2] * x2[i] : 0);
    e += r * r;
  }
  *sse = e;
  return 0;
}

typedef struct {
  double o, a, b, knee; /* issue = o + a min(B, knee) + b max(0, B - knee) */
  double drain, lat;    /* delivery = B / drain + lat */
  double sse_issue, sse_del;
  int above;            /* sizes past the knee */
  size_t points;        /* sizes (medians) fitted */
} raw_fit;

/* SSE of the issue model with its knee at `knee`; beta gets (o, a, b). */
static int issue_fit_at(size_t n, const double *one, const double *by,
                        const double *iy, double knee, double *lo, double *hi,
                        double *beta, double *sse, int *above) {
  int a = 0, below = 0;
  for (size_t k = 0; k < n; k++) {
    lo[k] = fmin(by[k], knee);
    hi[k] = fmax(0, by[k] - knee);
    if (by[k] > knee)
      a++;
    else
      below++;
  }
  *above = a;
  int m = a >= 2 ? 3 : 2;
  if (below < 2)
    return -1;
  beta[2] = 0;
  if (lsq(n, m, one, lo, hi, iy, NULL, beta, sse) != 0)
    return -1;
  if (m == 3 && (beta[1] <= 0 || beta[2] <= beta[1]))
    return -1; /* the slope must steepen at the knee */
  if (beta[1] <= 1e-18) /* issue time does not grow: the sender never waits */
    beta[1] = 1e-18;
  return m;
}

static int fit_once(const xs_sample *rows, const size_t *idx, size_t nrows,
                    raw_fit *f) {
  double *one = malloc(nrows * sizeof *one), *lo = malloc(nrows * sizeof *lo),
         *hi = malloc(nrows * sizeof *hi), *by = malloc(nrows * sizeof *by),
         *iy = malloc(nrows * sizeof *iy), *dy = malloc(nrows * sizeof *dy),
         *tmp = malloc(nrows * sizeof *tmp), *tmp2 = malloc(nrows * sizeof *tmp2);
  int rc = -1;
  size_t n = 0;
  if (!one || !lo || !hi || !by || !iy || !dy || !tmp || !tmp2)
    goto out;
  /* one point per size: the medians of its repetitions (rows are sorted) */
  for (size_t k = 0; k < nrows;) {
    double b = rows[idx ? idx[k] : k].bytes;
    size_t m = 0;
    for (; k < nrows && rows[idx ? idx[k] : k].bytes == b; k++, m++) {
      tmp[m] = rows[idx ? idx[k] : k].issue_s;
      tmp2[m] = rows[idx ? idx[k] : k].deliver_s;
    }
    one[n] = 1;
    by[n] = b;
    iy[n] = xs__median_of(tmp, m);
    dy[n] = xs__median_of(tmp2, m);
    n++;
  }
  /* delivery: a line in B */
  double beta[3], sse;
  if (lsq(n, 2, one, by, NULL, dy, NULL, beta, &sse) == 0 && beta[1] > 0) {
    f->lat = fmax(0, beta[0]);
    f->drain = 1 / beta[1];
    f->sse_del = sse;
  } else {
    goto out;
  }
  /* issue: scan the knee over the sizes seen (no knee is a candidate),
   * then refine it between the neighbours of the best */
  double best = INFINITY;
  size_t best_c = 0;
  for (size_t c = 0; c <= n; c++) {
    double knee = c < n ? by[c] : INFINITY, bt[3];
    int above, m = issue_fit_at(n, one, by, iy, knee, lo, hi, bt, &sse, &above);
    if (m < 0 || sse >= best)
      continue;
    best = sse;
    best_c = c;
    f->o = fmax(0, bt[0]);
    f->a = bt[1];
    f->b = m == 3 ? bt[2] : 0;
    f->knee = m == 3 ? knee : INFINITY;
    f->sse_issue = sse;
    f->above = m == 3 ? above : 0;
  }
  /* a knee must explain the data much better than a straight line does,
   * or it is noise: keep it only if it cuts the squared error fourfold */
  {
    double bt[3];
    int above;
    double sse_line;
    if (isfinite(f->knee) &&
        issue_fit_at(n, one, by, iy, INFINITY, lo, hi, bt, &sse_line, &above) == 2 &&
        best > 0.25 * sse_line) {
      best = sse_line;
      f->o = fmax(0, bt[0]);
      f->a = bt[1];
      f->b = 0;
      f->knee = INFINITY;
      f->sse_issue = sse_line;
      f->above = 0;
    }
  }
  if (isfinite(f->knee) && best_c < n) {
    double from = best_c > 0 ? by[best_c - 1] : by[0];
    double to = best_c + 1 < n ? by[best_c + 1] : by[n - 1];
    for (int k = 0; k <= 64; k++) {
      double knee = from + (to - from) * k / 64.0, bt[3];
      int above, m = issue_fit_at(n, one, by, iy, knee, lo, hi, bt, &sse, &above);
      if (m == 3 && sse < best) {
        best = sse;
        f->o = fmax(0, bt[0]);
        f->a = bt[1];
        f->b = bt[2];
        f->knee = knee;
        f->sse_issue = sse;
        f->above = above;
      }
    }
  }
  rc = isfinite(best) ? 0 : -1;
  f->points = n;
out:
  free(one), free(lo), free(hi), free(by), free(iy), free(dy), free(tmp), free(tmp2);
  return rc;
}

static int by_bytes(const void *x, const void *y) {
  const xs_sample *a = x, *b = y;
  return a->bytes < b->bytes ? -1 : a->bytes > b->bytes;
}

xs_status xs_fit_samples(const xs_samples *s, xs_fit *out, xs_error *err) {
  memset(out, 0, sizeof *out);
  if (s->n < 4)
    return xs__fail(err, XS_INVALID, "%zu samples: a fit needs at least 4", s->n);
  xs_sample *rows = malloc(s->n * sizeof *rows);
  size_t *idx = malloc(s->n * sizeof *idx), *drawn = malloc(s->n * sizeof *drawn);
  if (!rows || !idx || !drawn) {
    free(rows);
    free(idx);
    free(drawn);
    return xs__fail(err, XS_NOMEM, "out of memory");
  }
  memcpy(rows, s->rows, s->n * sizeof *rows);
  qsort(rows, s->n, sizeof *rows, by_bytes);
  raw_fit f;
  memset(&f, 0, sizeof f);
  if (fit_once(rows, NULL, s->n, &f) != 0) {
    free(rows);
    free(idx);
    free(drawn);
    return xs__fail(err, XS_INVALID,
                    "the samples fit no line: delivery time must grow with the "
                    "burst size (are sizes and times in bytes and seconds?)");
  }
  out->rows = s->n;
  out->overhead_s = f.o;
  out->inject_Bps = 1 / f.a;
  out->drain_from_delivery_Bps = f.drain;
  out->latency_s = f.lat;
  out->knee_reached = isfinite(f.knee) && f.above >= 2;
  if (out->knee_reached) {
    out->knee_B = f.knee;
    out->drain_Bps = 1 / f.b;
    /* b_f = C R_inj / (R_inj - R_drain) */
    out->capacity_B = f.knee * (1 - out->drain_Bps / out->inject_Bps);
  } else {
    out->knee_B = INFINITY;
    out->drain_Bps = f.drain;
    out->capacity_B = INFINITY;
  }
  out->rms_issue_s = sqrt(f.sse_issue / (double)f.points);
  out->rms_deliver_s = sqrt(f.sse_del / (double)f.points);
  /* bootstrap over the rows, fixed seed */
  uint64_t seed = 0x9E3779B97F4A7C15ULL;
  double m1[4] = {0}, m2[4] = {0};
  int nb = 0;
  for (int b = 0; b < 200; b++) {
    /* draw n rows with replacement, then list them in row order (the fit
     * wants them sorted by size): count the draws of each row */
    memset(drawn, 0, s->n * sizeof *drawn);
    for (size_t k = 0; k < s->n; k++) {
      seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
      drawn[(seed >> 33) % s->n]++;
    }
    for (size_t i = 0, k = 0; i < s->n; i++)
      for (size_t c = drawn[i]; c > 0; c--)
        idx[k++] = i;
    raw_fit g;
    memset(&g, 0, sizeof g);
    if (fit_once(rows, idx, s->n, &g) != 0)
      continue;
    double ri = 1 / g.a, rd = isfinite(g.knee) && g.b > 0 ? 1 / g.b : g.drain;
    double v[4] = {ri, rd, isfinite(g.knee) ? g.knee * (1 - rd / ri) : 0, g.lat};
    for (int k = 0; k < 4; k++) {
      m1[k] += v[k];
      m2[k] += v[k] * v[k];
    }
    nb++;
  }
  double sd[4] = {0};
  for (int k = 0; k < 4 && nb > 1; k++)
    sd[k] = sqrt(fmax(0, m2[k] / nb - (m1[k] / nb) * (m1[k] / nb)));
  out->inject_sd = sd[0];
  out->drain_sd = sd[1];
  out->capacity_sd = sd[2];
  out->latency_sd = sd[3];
  double mean_issue = 0;
  for (size_t k = 0; k < s->n; k++)
    mean_issue += rows[k].issue_s / (double)s->n;
  out->noisy = out->rms_issue_s > 0.25 * mean_issue ||
               (out->knee_reached && out->capacity_sd > 0.25 * out->capacity_B);
  size_t w = 0;
  if (!out->knee_reached)
    w += (size_t)snprintf(out->warning + w, sizeof out->warning - w,
                          "the sweep never reached the knee (issue time never "
                          "steepened): the capacity is beyond %g bytes or the "
                          "channel is never throttled; probe larger bursts. ",
                          rows[s->n - 1].bytes);
  if (out->inject_Bps >= 1e17)
    w += (size_t)snprintf(out->warning + w, sizeof out->warning - w,
                          "issue time does not grow with the burst size: the "
                          "sender never waits for the channel (a nonblocking "
                          "send), so injection is unbounded here. ");
  if (out->noisy)
    w += (size_t)snprintf(out->warning + w, sizeof out->warning - w,
                          "the data are noisy (issue residuals %.2g s against a "
                          "mean of %.2g s): repeat the probe on a quieter machine "
                          "or with more repeats.",
                          out->rms_issue_s, mean_issue);
  if (out->knee_reached &&
      fabs(out->drain_from_delivery_Bps / out->drain_Bps - 1) > 0.15 && w < 400)
    snprintf(out->warning + w, sizeof out->warning - w,
             "the drain rate from the issue slope (%.3g B/s) and from the "
             "delivery slope (%.3g B/s) differ by more than 15%%.",
             out->drain_Bps, out->drain_from_delivery_Bps);
  free(rows);
  free(idx);
  free(drawn);
  return XS_OK;
}

xs_profile *xs_fit_profile(const xs_fit *f, const char *name,
                           const char *channel, const char *source) {
  xs_profile *p = xs_profile_new(name, source);
  if (!p)
    return NULL;
  xs_channel c;
  xs_channel_init(&c, f->inject_Bps, f->drain_Bps);
  c.capacity_B = f->capacity_B > 0 ? f->capacity_B : 0;
  c.latency_s = f->latency_s;
  c.issue_overhead_s = f->overhead_s;
  if (xs_profile_add_channel(p, channel, &c, NULL)) {
    xs_profile_free(p);
    return NULL;
  }
  return p;
}
