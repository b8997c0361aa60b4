/*
 * interval.c: how sure a prediction is. The residuals of the model on the
 * project's published data (log of measured over predicted, each row
 * predicted without its own source where constants are fitted) give, for
 * a family of kernels (megamoe, ep, flashattn), an arm and a size band,
 * the spread of the errors a new kernel should expect: an 80% interval
 * around the prediction. The residuals are a table that `xstage validate
 * residuals` writes and the library carries (data/residuals.csv, built
 * in); nothing here calls validation. docs/validate.md "Intervals".
 *
 * The model of a cell's residuals, where its other sources have at least
 * MIN_ROWS rows: each source s has its own offset c_s (a harness, a
 * machine), rows scatter around it with a within-source spread sw; the
 * offsets scatter around the cell's mean mu with a between-source spread
 * tau. A new source's row is then mu + offset + scatter:
 *
 *   s^2 = sw^2 + tau^2 (1 + 1/m)       (m: the cell's sources)
 *
 * and its centre the cell's mean, shrunk toward the family's median by
 * m / (m + 1) (a cell's offset is known from m sources only),
 * with sw^2 and tau^2 shrunk toward the family's pooled values by K
 * pseudo-rows (a cell of a few rows of one source does not claim a tight
 * interval), and the interval mu -/+ 1.2816 s (80% of a normal). A cell
 * without enough rows takes the family's pooled model: its median
 * residual and the spread of all its rows about it.
 */
#include "internal.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MIN_ROWS 3
#define K_PSEUDO 4.0
#define Z80 1.2815515655446004

/* the size bands (tokens per rank, or sequence per rank for attention) */
int xs__interval_band(const char *family, double size) {
  if (!strcmp(family, "ep"))
    return size <= 128 ? 0 : size <= 1024 ? 1 : 2;
  if (!strcmp(family, "flashattn"))
    return size <= 4096 ? 0 : size <= 16384 ? 1 : 2;
  return size <= 64 ? 0 : size <= 512 ? 1 : 2;
}

const char *xs__interval_band_name(const char *family, int band) {
  static const char *const moe[] = {"<=64", "65-512", ">512"};
  static const char *const ep[] = {"<=128", "129-1024", ">1024"};
  static const char *const fa[] = {"<=4k", "4k-16k", ">16k"};
  if (band < 0 || band > 2)
    return "?";
  return !strcmp(family, "ep") ? ep[band] : !strcmp(family, "flashattn") ? fa[band] : moe[band];
}

/* the residual of row i, log(measured / predicted) */
static double resid(const xs__resid *r) { return log(r->measured / r->predicted); }

/* Per-source medians and within-source squared deviations of the rows
 * kept by keep(); returns the rows kept. srcs/cs: room for n sources. */
typedef struct {
  size_t n, m;       /* rows, sources                                   */
  double mu;         /* mean of the sources' medians                    */
  double sw2;        /* within-source variance (n - m degrees), or -1   */
  double tau2;       /* variance of the sources' medians (m - 1), or -1  */
  double all_mu;     /* median of all rows                              */
  double all_s2;     /* mean squared deviation of all rows about it     */
} cell_stats;

static void stats_of(const xs__resid *rows, size_t nrows, const char *family,
                     const char *arm, int band, const char *exclude, cell_stats *o,
                     double *scratch, const char **srcs, double *cs) {
  memset(o, 0, sizeof *o);
  o->sw2 = o->tau2 = -1;
  size_t n = 0, m = 0;
  for (size_t i = 0; i < nrows; i++) {
    const xs__resid *r = &rows[i];
    if (strcmp(r->family, family) || (exclude && !strcmp(r->source, exclude)) ||
        (arm && (strcmp(r->arm, arm) || xs__interval_band(family, r->size) != band)))
      continue;
    scratch[n++] = resid(r);
    size_t j = 0;
    while (j < m && strcmp(srcs[j], r->source))
      j++;
    if (j == m)
      srcs[m++] = r->source;
  }
  o->n = n;
  o->m = m;
  if (!n)
    return;
  /* the sources' medians */
  double ss = 0;
  size_t within = 0;
  for (size_t j = 0; j < m; j++) {
    size_t k = 0;
    double *v = scratch + n;
    for (size_t i = 0; i < nrows; i++) {
      const xs__resid *r = &rows[i];
      if (strcmp(r->family, family) || strcmp(r->source, srcs[j]) ||
          (arm && (strcmp(r->arm, arm) || xs__interval_band(family, r->size) != band)))
        continue;
      v[k++] = resid(r);
    }
    cs[j] = xs__median_of(v, k);
    for (size_t i = 0; i < k; i++)
      ss += (v[i] - cs[j]) * (v[i] - cs[j]);
    within += k;
  }
  if (within > m)
    o->sw2 = ss / (double)(within - m);
  double mean = 0;
  for (size_t j = 0; j < m; j++)
    mean += cs[j];
  mean /= (double)m;
  o->mu = mean;
  if (m >= 2) {
    double v = 0;
    for (size_t j = 0; j < m; j++)
      v += (cs[j] - mean) * (cs[j] - mean);
    o->tau2 = v / (double)(m - 1);
  }
  o->all_mu = xs__median_of(scratch, n);
  double s2 = 0;
  for (size_t i = 0; i < n; i++)
    s2 += (scratch[i] - o->all_mu) * (scratch[i] - o->all_mu);
  o->all_s2 = s2 / (double)n;
}

/* The family's pooled spreads: within-source and between-source variances
 * over every cell with rows, weighted by their degrees of freedom. */
static void pool_of(const xs__resid *rows, size_t nrows, const char *family,
                    const char *exclude, double *sw2, double *tau2, double *scratch,
                    const char **srcs, double *cs) {
  const char *arms[64];
  int bands[64];
  size_t na = 0;
  for (size_t i = 0; i < nrows && na < 64; i++) {
    const xs__resid *r = &rows[i];
    if (strcmp(r->family, family) || (exclude && !strcmp(r->source, exclude)))
      continue;
    int b = xs__interval_band(family, r->size);
    size_t j = 0;
    while (j < na && (strcmp(arms[j], r->arm) || bands[j] != b))
      j++;
    if (j == na) {
      arms[na] = r->arm;
      bands[na++] = b;
    }
  }
  double w = 0, wsum = 0, t = 0, tsum = 0;
  for (size_t j = 0; j < na; j++) {
    cell_stats c;
    stats_of(rows, nrows, family, arms[j], bands[j], exclude, &c, scratch, srcs, cs);
    if (c.sw2 >= 0) {
      w += c.sw2 * (double)(c.n - c.m);
      wsum += (double)(c.n - c.m);
    }
    if (c.tau2 >= 0) {
      t += c.tau2 * (double)(c.m - 1);
      tsum += (double)(c.m - 1);
    }
  }
  *sw2 = wsum > 0 ? w / wsum : 0;
  *tau2 = tsum > 0 ? t / tsum : 0;
}

xs_status xs__interval_of(const xs__resid *rows, size_t nrows, const char *family,
                          const char *arm, double size, const char *exclude,
                          xs_interval *out, xs_error *err) {
  memset(out, 0, sizeof *out);
  /* scratch: residuals, one source's rows; the sources and their medians */
  double *scratch = malloc((2 * nrows + 1) * sizeof *scratch);
  double *cs = malloc((nrows + 1) * sizeof *cs);
  const char **srcs = malloc((nrows + 1) * sizeof *srcs);
  if (!scratch || !cs || !srcs) {
    free(scratch);
    free(cs);
    free(srcs);
    return xs__fail(err, XS_NOMEM, "out of memory");
  }
  int band = xs__interval_band(family, size);
  cell_stats c, fam;
  stats_of(rows, nrows, family, arm, band, exclude, &c, scratch, srcs, cs);
  double sw2p, tau2p;
  pool_of(rows, nrows, family, exclude, &sw2p, &tau2p, scratch, srcs, cs);
  stats_of(rows, nrows, family, NULL, 0, exclude, &fam, scratch, srcs, cs);
  double mu, s2;
  if (c.n >= MIN_ROWS) {
    double dw = (double)(c.n - c.m), db = (double)(c.m - 1);
    double sw2 = (dw * (c.sw2 > 0 ? c.sw2 : 0) + K_PSEUDO * sw2p) / (dw + K_PSEUDO);
    double tau2 = (db * (c.tau2 > 0 ? c.tau2 : 0) + K_PSEUDO * tau2p) / (db + K_PSEUDO);
    /* the cell's offset from the family's centre, known from m sources
     * whose own offsets scatter by tau: shrunk by m / (m + 1), as a cell's
     * offset that scatters like a source's would be */
    double m = (double)c.m;
    mu = fam.all_mu + m / (m + 1) * (c.mu - fam.all_mu);
    s2 = sw2 + tau2 * (1 + 1.0 / m);
    out->rows = c.n;
    out->sources = c.m;
  } else {
    /* the family's pooled model: its median residual and the spread of
     * all its rows about it */
    mu = fam.all_mu;
    s2 = fam.all_s2;
    out->rows = fam.n;
    out->sources = fam.m;
    out->pooled = 1;
  }
  double s = sqrt(s2 > 0 ? s2 : 0);
  out->low = exp(mu - Z80 * s);
  out->high = exp(mu + Z80 * s);
  out->center = exp(mu);
  out->level = 0.8;
  free(scratch);
  free(cs);
  free(srcs);
  return XS_OK;
}

/* ---- the residual table (data/residuals.csv) ---- */

void xs__resid_table_free(xs__resid_table *t) {
  if (!t)
    return;
  free(t->rows);
  free(t->strings);
  memset(t, 0, sizeof *t);
}

/* a copy of s in the table's string pool (offsets until the pool stops
 * growing: stored as offsets, fixed up at the end) */
static int pool_add(xs__resid_table *t, size_t *cap, const char *s, size_t *off) {
  size_t l = strlen(s) + 1;
  if (xs__grow(&t->strings, cap, t->nstrings + l, 1))
    return -1;
  memcpy(t->strings + t->nstrings, s, l);
  *off = t->nstrings;
  t->nstrings += l;
  return 0;
}

/* a whole field as a decimal number, with a point whatever the locale of
 * the host (the built-in table is read at the first interval asked for,
 * under whatever locale the host program has set by then) */
static int whole_number(const char *s, double *v) {
  const char *end;
  return xs__decimal(s, v, &end) || *end ? -1 : 0;
}

xs_status xs__resid_table_parse(const char *text, size_t len, xs__resid_table *t,
                                xs_error *err) {
  memset(t, 0, sizeof *t);
  size_t cap = 0, scap = 0, lineno = 0;
  size_t (*offs)[3] = NULL; /* family, source, arm offsets per row */
  size_t ocap = 0;
  char *line = NULL; /* a copy of the line, split in place */
  size_t lcap = 0;
  const char *p = text, *end = text + len;
  int header = 0;
  xs_status st = XS_OK;
  while (p < end && !st) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    const char *le = nl ? nl : end;
    lineno++;
    const char *q = p;
    p = nl ? nl + 1 : end;
    if (q == le || *q == '#' || *q == '\r')
      continue;
    if (le > q && le[-1] == '\r')
      le--;
    if (!header) { /* kind,family,source,gpu,arm,size,measured,predicted */
      header = 1;
      continue;
    }
    size_t len_q = (size_t)(le - q);
    if (xs__grow(&line, &lcap, len_q + 1, 1)) {
      st = xs__fail(err, XS_NOMEM, "out of memory");
      break;
    }
    memcpy(line, q, len_q);
    line[len_q] = '\0';
    xs__csv_field f[8];
    size_t bad_col = 1;
    int nf = xs__csv_split(line, f, 8, &bad_col);
    if (nf == -1 || nf == -3) {
      st = xs__fail(err, XS_INVALID, "residuals:%zu:%zu: %s", lineno, nf == -3 ? bad_col : 1,
                    xs__csv_split_why(nf));
      break;
    }
    double size = 0, meas = 0, pred = 0;
    int ok = nf == 8 && !whole_number(f[5].s, &size) && !whole_number(f[6].s, &meas) &&
             !whole_number(f[7].s, &pred);
    if (!ok || !(meas > 0) || !(pred > 0) || !isfinite(meas) || !isfinite(pred)) {
      st = xs__fail(err, XS_INVALID, "residuals:%zu: expected kind,family,source,gpu,arm,"
                    "size,measured,predicted with positive numbers", lineno);
      break;
    }
    if (xs__grow(&t->rows, &cap, t->nrows + 1, sizeof *t->rows) ||
        xs__grow(&offs, &ocap, t->nrows + 1, sizeof *offs)) {
      st = xs__fail(err, XS_NOMEM, "out of memory");
      break;
    }
    xs__resid *r = &t->rows[t->nrows];
    memset(r, 0, sizeof *r);
    r->pair = !strcmp(f[0].s, "pair");
    r->size = size;
    r->measured = meas;
    r->predicted = pred;
    if (pool_add(t, &scap, f[1].s, &offs[t->nrows][0]) ||
        pool_add(t, &scap, f[2].s, &offs[t->nrows][1]) ||
        pool_add(t, &scap, r->pair ? "pair" : f[4].s, &offs[t->nrows][2])) {
      st = xs__fail(err, XS_NOMEM, "out of memory");
      break;
    }
    t->nrows++;
  }
  if (!st)
    for (size_t i = 0; i < t->nrows; i++) {
      t->rows[i].family = t->strings + offs[i][0];
      t->rows[i].source = t->strings + offs[i][1];
      t->rows[i].arm = t->strings + offs[i][2];
    }
  free(offs);
  free(line);
  if (st)
    xs__resid_table_free(t);
  return st;
}

extern const char xs__residuals_text[];

xs_status xs__resid_builtin(xs__resid_table *t, xs_error *err) {
  return xs__resid_table_parse(xs__residuals_text, strlen(xs__residuals_text), t, err);
}

/* The built-in table, parsed once, and the intervals asked of it, kept:
 * an interval depends on the family, the arm and the size's band only,
 * and a plan, a table or a sweep asks for the same few thousands of
 * times. At most MEMO of them are kept (then each is computed afresh). */
#define MEMO 256
static pthread_once_t builtin_once = PTHREAD_ONCE_INIT;
static xs__resid_table builtin;
static xs_status builtin_st;
static xs_error builtin_err;
static pthread_mutex_t memo_mu = PTHREAD_MUTEX_INITIALIZER;
static struct {
  char family[16], arm[48];
  int band;
  xs_interval iv;
} memo[MEMO];
static size_t nmemo;

static void builtin_load(void) {
  builtin_st = xs__resid_builtin(&builtin, &builtin_err);
}

xs_status xs_prediction_interval(const char *family, const char *arm, double size,
                                 xs_interval *out, xs_error *err) {
  if (!family || !arm || !out)
    return xs__fail(err, XS_INVALID, "xs_prediction_interval: family, arm and out are required");
  if (strcmp(family, "megamoe") && strcmp(family, "ep") && strcmp(family, "flashattn"))
    return xs__fail(err, XS_INVALID, "family \"%s\": expected megamoe, ep or flashattn", family);
  if (!(size >= 0))
    return xs__fail(err, XS_INVALID, "xs_prediction_interval: size %g: expected >= 0", size);
  pthread_once(&builtin_once, builtin_load);
  if (builtin_st)
    return xs__fail(err, builtin_st, "%s", builtin_err.message);
  int band = xs__interval_band(family, size);
  int keep = strlen(family) < sizeof memo[0].family && strlen(arm) < sizeof memo[0].arm;
  pthread_mutex_lock(&memo_mu);
  for (size_t i = 0; keep && i < nmemo; i++)
    if (memo[i].band == band && !strcmp(memo[i].family, family) && !strcmp(memo[i].arm, arm)) {
      *out = memo[i].iv;
      pthread_mutex_unlock(&memo_mu);
      return XS_OK;
    }
  pthread_mutex_unlock(&memo_mu);
  xs_status st = xs__interval_of(builtin.rows, builtin.nrows, family, arm, size, NULL, out, err);
  if (st || !keep)
    return st;
  pthread_mutex_lock(&memo_mu);
  if (nmemo < MEMO) {
    snprintf(memo[nmemo].family, sizeof memo[nmemo].family, "%s", family);
    snprintf(memo[nmemo].arm, sizeof memo[nmemo].arm, "%s", arm);
    memo[nmemo].band = band;
    memo[nmemo].iv = *out;
    nmemo++;
  }
  pthread_mutex_unlock(&memo_mu);
  return XS_OK;
}

/* ---- the planners' options ---- */

const char *xs__moe_schedule_arm(int schedule) {
  switch (schedule) {
  case XS_MOE_SEQUENTIAL: return "sequential";
  case XS_MOE_FUSED_SPLIT: return "fused-split";
  case XS_MOE_FUSED_WAVE: return "fused-wave";
  case XS_MOE_FUSED_DYNAMIC: return "fused-interleaved";
  /* xstage's own orders run on the lag kernel's machinery */
  default: return "fused-lag";
  }
}

xs_status xs_moe_interval(int schedule, double tokens, xs_interval *out, xs_error *err) {
  if (schedule < 0 || schedule >= XS_MOE_SCHEDULES)
    return xs__fail(err, XS_INVALID, "xs_moe_interval: no schedule %d", schedule);
  return xs_prediction_interval("megamoe", xs__moe_schedule_arm(schedule), tokens, out, err);
}

xs_status xs_ratio_interval(const char *family, double size, xs_interval *out, xs_error *err) {
  return xs_prediction_interval(family, "pair", size, out, err);
}

xs_status xs_moe_verdict_of(const xs_moe_pick *pick, xs_moe_verdict *out, xs_error *err) {
  memset(out, 0, sizeof *out);
  out->ratio = out->low = out->high = NAN;
  out->clear = -1;
  if (!pick)
    return xs__fail(err, XS_INVALID, "xs_moe_verdict_of: no pick");
  double a = pick->runner_up.time_s, b = pick->chosen.time_s;
  if (!(a > 0) || !(b > 0))
    return XS_OK;
  xs_status st = xs_ratio_interval("megamoe", pick->tokens, &out->interval, err);
  if (st)
    return st;
  out->ratio = a / b;
  out->low = out->ratio * out->interval.low;
  out->high = out->ratio * out->interval.high;
  out->clear = out->low > 1;
  return XS_OK;
}
