/*
 * fit.c: `xstage fit megamoe`, the MegaMoE kernel model fitted to a
 * user's own kernel timings (docs/tune.md "Fitting"). Each row is
 * predicted as `xstage validate megamoe` predicts it (its kernel, its
 * knobs); the terms of terms.c are moved, each by a factor, to minimise
 * the sum of squared log errors. Only terms the rows determine are moved:
 * a row must be sensitive to the term, its effect must not be a
 * combination of the others', and there must be two rows for each term.
 * The uncertainty comes from bootstrap resamples of the rows. The rows
 * of one prediction are spread over the machine's cores (each row's time
 * is its own: the same answer on any number of threads).
 */
#define _POSIX_C_SOURCE 200809L /* sysconf */
#include "validate/validate.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <threads.h>
#include <unistd.h>

/* threads of one prediction: the cores online, at most this many, and
 * at least ROWS_PER_THREAD rows each */
#define MAX_THREADS 8
#define ROWS_PER_THREAD 32

/* a term is moved within x1/4 to x4 of the base */
#define BOUND 1.3862943611198906 /* log 4 */
/* a term no row's log time moves by this much per unit of its log is one
 * the rows do not see */
#define MIN_SENSITIVITY 0.05
/* a term whose column of sensitivities keeps less than this share of its
 * length once the other terms' columns are taken out cannot be told from
 * them (an angle under about 14 degrees) */
#define MIN_INDEPENDENCE 0.25
/* the step of the central differences that decide which terms the rows
 * determine (wide, to see past the kinks of maxima and waves), and of the
 * forward differences of the least squares */
#define PROBE_STEP 0.22314355131420976 /* log 1.25 */
#define FIT_STEP 0.05
/* Each term's log scale costs PRIOR^2 theta^2 beside the rows' squared
 * log errors: a log-normal prior on the base profile's figures. PRIOR is
 * the ratio of two spreads chosen beforehand, not fitted: a row's model
 * error, about 7% (the validation's median over its rows), over a
 * figure's error, about 25% (a microbenchmark's or a datasheet's figure
 * against the kernel's own). Moving a term x1.65 (theta 0.5) costs as
 * much as one row 15% off. */
#define PRIOR 0.3

typedef struct {
  const xs_validate_row *row;
  xs_moe_schedule sched;
  double y; /* log of the measured seconds */
} fit_row;

typedef struct {
  const xs_profile *base;
  fit_row *rows;
  size_t n;
  unsigned evaluations;
  unsigned threads; /* of a prediction */
} fit_ctx;

/* one thread's rows [lo, hi) of a prediction */
typedef struct {
  const fit_ctx *f;
  const xs_profile *p;
  size_t lo, hi;
  double *out;
  unsigned evaluations;
  xs_status st;
  xs_error err;
} predict_part;

static int predict_rows(void *arg) {
  predict_part *w = arg;
  for (size_t i = w->lo; i < w->hi && !w->st; i++) {
    const xs_validate_row *r = w->f->rows[i].row;
    xs_moe_pattern kn = r->knobs;
    double t;
    w->st = xs__moe_time(&r->config, w->p, w->f->rows[i].sched, &kn, &t, &w->err);
    w->evaluations++;
    w->out[i] = log(t);
  }
  return 0;
}

/* log predicted seconds of every row with term[j] scaled by
 * exp(theta[j]), j < k */
static xs_status predict(fit_ctx *f, const int *term, const double *theta,
                         size_t k, double *out, xs_error *err) {
  xs_profile *p;
  xs_status st = xs__profile_copy(f->base, &p, err);
  for (size_t j = 0; !st && j < k; j++)
    if (theta[j] != 0)
      st = xs_moe_term_scale(p, (xs_moe_term)term[j], exp(theta[j]), err);
  size_t nt = f->n / ROWS_PER_THREAD;
  nt = nt < 1 ? 1 : nt > f->threads ? f->threads : nt;
  predict_part part[MAX_THREADS];
  thrd_t th[MAX_THREADS];
  int started[MAX_THREADS] = {0};
  for (size_t w = 0; !st && w < nt; w++) {
    part[w] = (predict_part){f, p, f->n * w / nt, f->n * (w + 1) / nt, out, 0, XS_OK, {0}};
    /* the first part on this thread; a thread that cannot start runs its
     * part here too */
    if (w > 0)
      started[w] = thrd_create(&th[w], predict_rows, &part[w]) == thrd_success;
  }
  if (!st)
    predict_rows(&part[0]);
  for (size_t w = 1; !st && w < nt; w++) {
    if (started[w])
      thrd_join(th[w], NULL);
    else
      predict_rows(&part[w]);
  }
  /* the first row's error, as one thread would have stopped at it */
  for (size_t w = 0; !st && w < nt; w++) {
    f->evaluations += part[w].evaluations;
    if (part[w].st) {
      st = part[w].st;
      if (err)
        *err = part[w].err;
    }
  }
  xs_profile_free(p);
  return st;
}

/* Solve A x = b (k x k, row-major) by Gaussian elimination with partial
 * pivoting; A and b are destroyed. -1 when A is singular. */
static int solve(double *A, double *b, double *x, size_t k) {
  double scale = 0;
  for (size_t i = 0; i < k * k; i++)
    scale = fmax(scale, fabs(A[i]));
  for (size_t c = 0; c < k; c++) {
    size_t piv = c;
    for (size_t r = c + 1; r < k; r++)
      if (fabs(A[r * k + c]) > fabs(A[piv * k + c]))
        piv = r;
    if (!(fabs(A[piv * k + c]) > 1e-12 * scale))
      return -1;
    if (piv != c) {
      for (size_t j = 0; j < k; j++) {
        double t = A[c * k + j];
        A[c * k + j] = A[piv * k + j];
        A[piv * k + j] = t;
      }
      double t = b[c];
      b[c] = b[piv];
      b[piv] = t;
    }
    for (size_t r = c + 1; r < k; r++) {
      double m = A[r * k + c] / A[c * k + c];
      for (size_t j = c; j < k; j++)
        A[r * k + j] -= m * A[c * k + j];
      b[r] -= m * b[c];
    }
  }
  for (size_t c = k; c-- > 0;) {
    double s = b[c];
    for (size_t j = c + 1; j < k; j++)
      s -= A[c * k + j] * x[j];
    x[c] = s / A[c * k + c];
  }
  return 0;
}

/* The step x of the terms cols[0..m) (now at theta, NULL: 0) that
 * minimises |r + J x|^2 + prior^2 |theta + x|^2, the columns of J (n x
 * XS_MOE_TERMS) linearising the log predictions; damp > 0 damps it
 * (Levenberg-Marquardt). *sse (may be NULL) receives the objective
 * after the step. -1 when singular. */
static int lsq(const double *J, const double *r, size_t n, const int *cols,
               size_t m, const double *theta, double prior, double damp,
               double *x, double *sse) {
  double A[XS_MOE_TERMS * XS_MOE_TERMS], b[XS_MOE_TERMS], diag = 0;
  for (size_t a = 0; a < m; a++) {
    b[a] = -prior * prior * (theta ? theta[a] : 0);
    for (size_t i = 0; i < n; i++)
      b[a] -= J[i * XS_MOE_TERMS + cols[a]] * r[i];
    for (size_t c = 0; c < m; c++) {
      double s = 0;
      for (size_t i = 0; i < n; i++)
        s += J[i * XS_MOE_TERMS + cols[a]] * J[i * XS_MOE_TERMS + cols[c]];
      A[a * m + c] = s;
    }
    diag = fmax(diag, A[a * m + a]);
  }
  for (size_t a = 0; a < m; a++)
    A[a * m + a] += prior * prior + damp * (A[a * m + a] + 1e-3 * diag);
  if (solve(A, b, x, m))
    return -1;
  if (sse) {
    *sse = 0;
    for (size_t i = 0; i < n; i++) {
      double e = r[i];
      for (size_t a = 0; a < m; a++)
        e += J[i * XS_MOE_TERMS + cols[a]] * x[a];
      *sse += e * e;
    }
    for (size_t a = 0; a < m; a++) {
      double t = (theta ? theta[a] : 0) + x[a];
      *sse += prior * prior * t * t;
    }
  }
  return 0;
}

/* the share of column j's length left once columns cols[0..m) are
 * projected out (1: independent of them, 0: a combination of them) */
static double independence(const double *J, size_t n, const int *cols,
                           size_t m, int j) {
  double norm = 0, left = 0, x[XS_MOE_TERMS], col[64];
  double *c = n <= 64 ? col : malloc(n * sizeof *c);
  if (!c)
    return 0;
  for (size_t i = 0; i < n; i++) {
    c[i] = -J[i * XS_MOE_TERMS + j]; /* lsq fits J x to -r */
    norm += c[i] * c[i];
  }
  if (m == 0 || lsq(J, c, n, cols, m, NULL, 0, 0, x, &left))
    left = norm;
  if (c != col)
    free(c);
  return norm > 0 ? sqrt(left / norm) : 0;
}

/* the objective: squared log errors and the prior on the k terms */
static double objective(const double *lp, const fit_row *rows, size_t n,
                        const double *theta, size_t k) {
  double s = 0;
  for (size_t i = 0; i < n; i++)
    s += (lp[i] - rows[i].y) * (lp[i] - rows[i].y);
  for (size_t j = 0; j < k; j++)
    s += PRIOR * PRIOR * theta[j] * theta[j];
  return s;
}

static int by_value(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median_abs(const double *lp, const fit_row *rows, size_t n,
                         double *max) {
  double *v = malloc((n + 1) * sizeof *v);
  if (!v)
    return NAN;
  *max = 0;
  for (size_t i = 0; i < n; i++) {
    v[i] = fabs(exp(lp[i] - rows[i].y) - 1);
    *max = fmax(*max, v[i]);
  }
  double m = xs__median_of(v, n);
  free(v);
  return m;
}

/* splitmix64: the bootstrap's resampling, fixed by the seed */
static uint64_t next_random(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

/* Jacobian of the log predictions in the terms term[0..k) at theta,
 * into the columns term[j] of J: central differences (a kink, where a
 * term stops binding, has a slope on one side only; one-sided at a
 * bound); tmp holds 2n */
static xs_status jacobian(fit_ctx *f, const int *term, const double *theta,
                          size_t k, const double *lp, double *J, double *tmp,
                          xs_error *err) {
  for (size_t j = 0; j < k; j++) {
    double hi[XS_MOE_TERMS], lo[XS_MOE_TERMS];
    memcpy(hi, theta, k * sizeof *hi);
    memcpy(lo, theta, k * sizeof *lo);
    hi[j] = fmin(BOUND, theta[j] + FIT_STEP);
    lo[j] = fmax(-BOUND, theta[j] - FIT_STEP);
    const double *up = lp, *dn = lp;
    xs_status st = XS_OK;
    if (hi[j] > theta[j] && !(st = predict(f, term, hi, k, tmp, err)))
      up = tmp;
    if (!st && lo[j] < theta[j] && !(st = predict(f, term, lo, k, tmp + f->n, err)))
      dn = tmp + f->n;
    if (st)
      return st;
    for (size_t i = 0; i < f->n; i++)
      J[i * XS_MOE_TERMS + term[j]] = (up[i] - dn[i]) / (hi[j] - lo[j]);
  }
  return XS_OK;
}

/* Levenberg-Marquardt over term[0..k), from theta = 0 (where lp holds
 * the log predictions already), within the bounds */
static xs_status least_squares(fit_ctx *f, const int *term, size_t k,
                               unsigned max_it, double *theta, double *lp,
                               double *J, unsigned *iterations, xs_error *err) {
  size_t n = f->n;
  double *r = malloc(4 * n * sizeof *r);
  if (!r)
    return xs__fail(err, XS_NOMEM, "out of memory");
  double *trial = r + n, *tmp = r + 2 * n;
  memset(theta, 0, k * sizeof *theta);
  xs_status st = XS_OK;
  double sse = objective(lp, f->rows, n, theta, k), mu = 1e-3;
  unsigned it = 0;
  int J_here = 0; /* J is the Jacobian at theta */
  for (; !st && it < max_it; it++) {
    if ((st = jacobian(f, term, theta, k, lp, J, tmp, err)))
      break;
    J_here = 1;
    for (size_t i = 0; i < n; i++)
      r[i] = lp[i] - f->rows[i].y;
    int moved = 0;
    double before = sse;
    for (int tries = 0; tries < 8 && !st && !moved; tries++) {
      double step[XS_MOE_TERMS], th[XS_MOE_TERMS];
      if (lsq(J, r, n, term, k, theta, PRIOR, mu, step, NULL)) {
        mu *= 4;
        continue;
      }
      for (size_t j = 0; j < k; j++)
        th[j] = fmin(BOUND, fmax(-BOUND, theta[j] + step[j]));
      if ((st = predict(f, term, th, k, trial, err)))
        break;
      double s = objective(trial, f->rows, n, th, k);
      if (s < sse) {
        memcpy(theta, th, k * sizeof *th);
        memcpy(lp, trial, n * sizeof *lp);
        sse = s;
        mu = fmax(mu / 3, 1e-7);
        moved = 1;
        J_here = 0;
      } else {
        mu *= 4;
      }
    }
    if (!moved || before - sse <= 1e-10 + 1e-6 * before) {
      it++;
      break;
    }
  }
  /* the Jacobian where the fit ended, for the bootstrap (the last one's,
   * when the last step moved nothing) */
  if (!st && !J_here)
    st = jacobian(f, term, theta, k, lp, J, tmp, err);
  *iterations = it;
  free(r);
  return st;
}

static void term_key_list(const xs_profile *p, const int *term, size_t k,
                          char *buf, size_t size) {
  size_t w = 0;
  buf[0] = '\0';
  for (size_t j = 0; j < k && w < size; j++)
    w += (size_t)snprintf(buf + w, size - w, "%s%s", j ? ", " : "",
                          xs_moe_term_name((xs_moe_term)term[j]));
  (void)p;
}

/* the tuned profile: base with the fitted scales, each key's source
 * saying so */
static xs_status tuned_profile(const fit_ctx *f, const char *file,
                               const xs_moe_fit_options *o,
                               const xs_moe_fit_result *res, const int *term,
                               size_t k, xs_profile **out, xs_error *err) {
  xs_profile *p;
  xs_status st = xs__profile_copy(f->base, &p, err);
  if (st)
    return st;
  xs__sbuf lines = {0};
  for (size_t i = 0; i < f->n; i++) {
    if (i == 24) {
      xs__sb_printf(&lines, ", ... (%zu in all)", f->n);
      break;
    }
    xs__sb_printf(&lines, "%s%zu", i ? ", " : "", f->rows[i].row->line);
  }
  char names[256];
  term_key_list(p, term, k, names, sizeof names);
  for (size_t j = 0; !st && j < k; j++) {
    const xs_moe_fit_term *t = &res->terms[term[j]];
    char keys[512];
    xs_moe_term_keys(f->base, t->term, keys, sizeof keys);
    if ((st = xs_moe_term_scale(p, t->term, t->scale, err)))
      break;
    /* one source entry per key the term moved ("a, b, c") */
    for (char *key = keys, *next; key && *key && !st; key = next) {
      next = strstr(key, ", ");
      if (next) {
        *next = '\0';
        next += 2;
      }
      const char *was = xs_profile_number_source(f->base, key);
      xs__sbuf s = {0};
      xs__sb_printf(&s,
                    "fitted: x%.4g (68%% bootstrap interval x%.4g to x%.4g) of the "
                    "base profile's number by xstage fit megamoe to %s, %zu rows of "
                    "gpu %s%s%s (lines %s), fitting %s: median |error| over them "
                    "%.1f%% before, %.1f%% after; the base's source: %s",
                    t->scale, t->lo, t->hi, file, f->n, xs_profile_name(f->base),
                    o->source ? ", source " : "", o->source ? o->source : "",
                    lines.s ? lines.s : "", names, 100 * res->median_before,
                    100 * res->median_after, was ? was : "none given");
      st = s.oom ? xs__fail(err, XS_NOMEM, "out of memory")
                 : xs__profile_put_source(p, key, s.s, err);
      free(s.s);
    }
  }
  if (!st) {
    xs__sbuf s = {0};
    xs__sb_printf(&s, "Fitted by xstage fit megamoe to %s (%zu rows; %s: docs/tune.md), "
                  "the rest as the base profile gives it. The base: %s",
                  file, f->n, names, xs_profile_source(f->base));
    st = s.oom ? xs__fail(err, XS_NOMEM, "out of memory")
               : xs__profile_set_text(p, NULL, s.s, err);
    free(s.s);
  }
  free(lines.s);
  if (!st && lines.oom)
    st = xs__fail(err, XS_NOMEM, "out of memory");
  if (st)
    xs_profile_free(p);
  else
    *out = p;
  return st;
}

void xs_moe_fit_free(xs_moe_fit_result *r) {
  if (!r)
    return;
  free(r->rows);
  r->rows = NULL;
  r->nrows = 0;
}

static int is_time(const xs_validate_row *r) {
  return !r->metric[0] || !strcmp(r->metric, "time");
}

/* Of the terms term[0..k) in order, how many (0 to k) to fit: the count
 * whose linearised leave-one-out squared error over the rows is least
 * (the fewest on a tie). Each row's prediction from a fit to the others
 * is, for this penalised least squares (ridge: the prior is no row's),
 * its residual in the fit to all over 1 - h_ii, h_ii = J_i A^-1 J_i' and
 * A = J'J + PRIOR^2 I: O(n m^2) for m terms, not n fits of n rows. */
static size_t loo_count(const double *J, const double *r0, size_t n,
                        const int *term, size_t k) {
  size_t best = 0;
  double best_e = INFINITY;
  for (size_t m = 0; m <= k; m++) {
    double e = 0, x[XS_MOE_TERMS] = {0}, Ainv[XS_MOE_TERMS * XS_MOE_TERMS];
    int ok = !m || !lsq(J, r0, n, term, m, NULL, PRIOR, 0, x, NULL);
    double A0[XS_MOE_TERMS * XS_MOE_TERMS];
    for (size_t a = 0; a < m; a++)
      for (size_t b = 0; b < m; b++) {
        double s = a == b ? PRIOR * PRIOR : 0;
        for (size_t i = 0; i < n; i++)
          s += J[i * XS_MOE_TERMS + term[a]] * J[i * XS_MOE_TERMS + term[b]];
        A0[a * m + b] = s;
      }
    for (size_t c = 0; ok && c < m; c++) {
      /* column c of A^-1 (solve destroys its copy of A) */
      double A[XS_MOE_TERMS * XS_MOE_TERMS], u[XS_MOE_TERMS] = {0}, col[XS_MOE_TERMS];
      memcpy(A, A0, m * m * sizeof *A);
      u[c] = 1;
      ok = !solve(A, u, col, m);
      for (size_t a = 0; ok && a < m; a++)
        Ainv[a * m + c] = col[a];
    }
    for (size_t i = 0; i < n; i++) {
      double pred = r0[i], h = 0;
      for (size_t a = 0; ok && a < m; a++) {
        double ga = J[i * XS_MOE_TERMS + term[a]];
        pred += ga * x[a];
        for (size_t b = 0; b < m; b++)
          h += ga * Ainv[a * m + b] * J[i * XS_MOE_TERMS + term[b]];
      }
      /* (a system too ill-conditioned to solve counts as no fit) */
      if (ok && m)
        pred /= 1 - h;
      e += pred * pred;
    }
    if (e < best_e * (1 - 1e-9)) {
      best_e = e;
      best = m;
    }
  }
  return best;
}

/* Which terms the rows determine: sensitivity at the base (central
 * differences), then, for the terms asked for (ask) or, when none were,
 * in the order that lowers the linearised squared error most, each one
 * whose effect is not a combination of those before it, up to one term
 * for two rows. term[] receives the terms to fit. */
static xs_status choose_terms(fit_ctx *f, const double *lp0, unsigned ask,
                              xs_moe_fit_result *res, int *term, size_t *k,
                              double *J, xs_error *err) {
  size_t n = f->n, cap = n / 2;
  double *up = malloc(2 * n * sizeof *up), *r0 = malloc(n * sizeof *r0);
  if (!up || !r0) {
    free(up);
    free(r0);
    return xs__fail(err, XS_NOMEM, "out of memory");
  }
  double *down = up + n;
  xs_status st = XS_OK;
  int cand[XS_MOE_TERMS];
  size_t nc = 0;
  for (size_t i = 0; i < n; i++)
    r0[i] = lp0[i] - f->rows[i].y;
  for (int t = 0; t < XS_MOE_TERMS && !st; t++) {
    xs_moe_fit_term *ft = &res->terms[t];
    ft->term = (xs_moe_term)t;
    ft->base = ft->value = xs_moe_term_value(f->base, (xs_moe_term)t);
    ft->scale = ft->lo = ft->hi = 1;
    if (ask && !(ask & (1u << t)))
      continue;
    if (!(ft->base > 0) || !isfinite(ft->base)) {
      snprintf(ft->why, sizeof ft->why, "the base profile gives %s: nothing to scale",
               ft->base > 0 ? "no bound" : "no such number, or 0");
      continue;
    }
    double th = PROBE_STEP;
    xs_error e2;
    if ((st = predict(f, &t, &th, 1, up, &e2)) == XS_INVALID ||
        (!st && (th = -PROBE_STEP, st = predict(f, &t, &th, 1, down, &e2)) == XS_INVALID)) {
      snprintf(ft->why, sizeof ft->why, "cannot be moved: %.150s", e2.message);
      st = XS_OK;
      continue;
    }
    if (st) {
      *err = e2;
      break;
    }
    for (size_t i = 0; i < n; i++) {
      double d = (up[i] - down[i]) / (2 * PROBE_STEP);
      J[i * XS_MOE_TERMS + t] = d;
      ft->sensitivity = fmax(ft->sensitivity, fabs(d));
    }
    if (ft->sensitivity < MIN_SENSITIVITY)
      snprintf(ft->why, sizeof ft->why,
               "no row is sensitive to it: x1.25 moves no row's time by more than "
               "%.2f%%", 100 * (exp(ft->sensitivity * PROBE_STEP) - 1));
    else
      cand[nc++] = t;
  }
  *k = 0;
  if (st) {
    free(up);
    free(r0);
    return st;
  }
  if (ask) {
    /* every term asked for must be determined, with the others */
    for (size_t c = 0; c < nc; c++) {
      int others[XS_MOE_TERMS];
      size_t m = 0;
      for (size_t d = 0; d < nc; d++)
        if (d != c)
          others[m++] = cand[d];
      double ind = independence(J, n, others, m, cand[c]);
      if (ind < MIN_INDEPENDENCE)
        snprintf(res->terms[cand[c]].why, sizeof res->terms[cand[c]].why,
                 "its effect on these rows is a combination of the other terms' "
                 "(%.0f%% of it is its own): the rows cannot tell it from them",
                 100 * ind);
      else
        term[(*k)++] = cand[c];
    }
    if (*k == nc && nc > cap)
      for (size_t c = 0; c < nc; c++)
        snprintf(res->terms[cand[c]].why, sizeof res->terms[cand[c]].why,
                 "%zu rows determine at most %zu terms (two rows a term), "
                 "%zu were asked for", n, cap, nc);
    int bad = *k < nc || nc > cap;
    for (int t = 0; t < XS_MOE_TERMS && !bad; t++)
      bad = (ask & (1u << t)) && res->terms[t].why[0];
    if (bad) {
      xs__sbuf s = {0};
      for (int t = 0; t < XS_MOE_TERMS; t++)
        if ((ask & (1u << t)) && res->terms[t].why[0])
          xs__sb_printf(&s, "%s%s: %s", s.s ? "; " : "", xs_moe_term_name((xs_moe_term)t),
                        res->terms[t].why);
      st = xs__fail(err, s.oom ? XS_NOMEM : XS_INVALID,
                    "the %zu rows of gpu %s do not determine %s", n,
                    xs_profile_name(f->base), s.s ? s.s : "these terms");
      free(s.s);
      *k = 0;
    }
    free(up);
    free(r0);
    return st;
  }
  /* forward selection: the term that lowers the linearised squared error
   * most, among those the chosen ones do not already explain */
  double sse = 0;
  for (size_t i = 0; i < n; i++)
    sse += r0[i] * r0[i];
  int used[XS_MOE_TERMS] = {0};
  while (*k < cap) {
    int best = -1;
    double best_sse = sse, x[XS_MOE_TERMS];
    for (size_t c = 0; c < nc; c++) {
      int t = cand[c];
      if (used[t] || independence(J, n, term, *k, t) < MIN_INDEPENDENCE)
        continue;
      term[*k] = t;
      double s;
      if (!lsq(J, r0, n, term, *k + 1, NULL, PRIOR, 0, x, &s) && s < best_sse) {
        best_sse = s;
        best = t;
      }
    }
    /* a term that explains under 1% of what is left is not needed */
    if (best < 0 || best_sse > sse * 0.99)
      break;
    term[(*k)++] = best;
    used[best] = 1;
    sse = best_sse;
  }
  /* how many of them, in that order: the fewest whose linearised
   * leave-one-out error (each row predicted from a fit to the others) is
   * least */
  size_t keep = loo_count(J, r0, n, term, *k);
  for (size_t j = keep; j < *k; j++) {
    used[term[j]] = 0;
    snprintf(res->terms[term[j]].why, sizeof res->terms[term[j]].why,
             "with it the rows predict each other worse: fitted on all rows but "
             "one, the one left out is further off (leave-one-out)");
  }
  *k = keep;
  for (size_t c = 0; c < nc; c++) {
    int t = cand[c];
    if (used[t] || res->terms[t].why[0])
      continue;
    double ind = independence(J, n, term, *k, t);
    if (ind < MIN_INDEPENDENCE)
      snprintf(res->terms[t].why, sizeof res->terms[t].why,
               "its effect on these rows is a combination of the fitted terms' "
               "(%.0f%% of it is its own): the rows cannot tell it from them",
               100 * ind);
    else if (*k >= cap)
      snprintf(res->terms[t].why, sizeof res->terms[t].why,
               "%zu rows determine at most %zu terms (two rows a term), taken by "
               "those that lower the error most", n, cap);
    else
      snprintf(res->terms[t].why, sizeof res->terms[t].why,
               "fitting it beside the others would lower the rows' squared log "
               "error by under 1%%");
  }
  free(up);
  free(r0);
  return XS_OK;
}

static xs_status moe_fit(const char *text, size_t length, const char *filename,
                         const xs_profile *base, const xs_moe_fit_options *opt,
                         xs_moe_fit_result *res, xs_profile **tuned, xs_error *err) {
  static const xs_moe_fit_options dflt = {0, NULL, 0, 0, 0};
  const xs_moe_fit_options *o = opt ? opt : &dflt;
  const char *file = filename ? filename : "<data>";
  memset(res, 0, sizeof *res);
  if (tuned)
    *tuned = NULL;
  if (o->terms >> XS_MOE_TERMS)
    return xs__fail(err, XS_INVALID, "terms: bit %d is no term (bits 0 to %d)",
                    xs__lowest_bit(o->terms >> XS_MOE_TERMS) + XS_MOE_TERMS,
                    XS_MOE_TERMS - 1);
  xs_validate_set set;
  xs_status st = xs__validate_megamoe_burstgap(text, length, file, base, &set, err);
  if (st)
    return st;
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  fit_ctx f = {base, NULL, 0, 0,
               cores < 1 ? 1u : cores > MAX_THREADS ? MAX_THREADS : (unsigned)cores};
  f.rows = malloc((set.nrows + 1) * sizeof *f.rows);
  res->rows = calloc(set.nrows + 1, sizeof *res->rows);
  double *J = NULL, *lp0 = NULL, *lp = NULL;
  if (!f.rows || !res->rows) {
    st = xs__fail(err, XS_NOMEM, "out of memory");
    goto done;
  }
  for (size_t i = 0; i < set.nrows; i++) {
    const xs_validate_row *r = &set.rows[i];
    if (r->kind || !is_time(r) || strcmp(r->gpu, xs_profile_name(base)) ||
        (o->source && strcmp(r->source, o->source))) {
      res->skipped++;
      continue;
    }
    f.rows[f.n++] = (fit_row){r, (xs_moe_schedule)xs_moe_schedule_from_name(r->arm),
                              log(r->measured_us * 1e-6)};
  }
  if (!f.n) {
    st = xs__fail(err, XS_INVALID,
                  "%s: no row of kernel time for gpu \"%s\"%s%s%s (the profile's name; "
                  "%zu rows of other GPUs, sources or metrics)",
                  file, xs_profile_name(base), o->source ? " and source \"" : "",
                  o->source ? o->source : "", o->source ? "\"" : "", res->skipped);
    goto done;
  }
  J = calloc(f.n * XS_MOE_TERMS, sizeof *J);
  lp0 = malloc(f.n * sizeof *lp0);
  lp = malloc(f.n * sizeof *lp);
  if (!J || !lp0 || !lp) {
    st = xs__fail(err, XS_NOMEM, "out of memory");
    goto done;
  }
  /* at the base: the validation's own predictions, recomputed */
  if ((st = predict(&f, NULL, NULL, 0, lp0, err)))
    goto done;
  int term[XS_MOE_TERMS];
  size_t k = 0;
  if ((st = choose_terms(&f, lp0, o->terms, res, term, &k, J, err)))
    goto done;
  if (!k) {
    xs__sbuf s = {0};
    for (int t = 0; t < XS_MOE_TERMS; t++)
      xs__sb_printf(&s, "%s%s: %s", t ? "; " : "", xs_moe_term_name((xs_moe_term)t),
                    res->terms[t].why);
    st = xs__fail(err, s.oom ? XS_NOMEM : XS_INVALID,
                  "the %zu rows of gpu %s determine no term of the kernel model: %s",
                  f.n, xs_profile_name(base), s.s ? s.s : "");
    free(s.s);
    goto done;
  }
  double theta[XS_MOE_TERMS] = {0};
  /* a term no row is sensitive to where the fit ended (another term took
   * over what it did: a slower GEMM hides a faster L2) is dropped, and
   * the rest fitted again */
  for (int again = 1; again && !st && k;) {
    memcpy(lp, lp0, f.n * sizeof *lp);
    st = least_squares(&f, term, k, o->max_iterations ? o->max_iterations : 30, theta,
                       lp, J, &res->iterations, err);
    again = 0;
    for (size_t j = 0; !st && j < k && !again; j++) {
      double most = 0;
      for (size_t i = 0; i < f.n; i++)
        most = fmax(most, fabs(J[i * XS_MOE_TERMS + term[j]]));
      if (most < MIN_SENSITIVITY && k > 1) {
        snprintf(res->terms[term[j]].why, sizeof res->terms[term[j]].why,
                 "no row is sensitive to it where the fit of the others ends (the "
                 "largest |d log time / d log term| there is %.3f)", most);
        memmove(&term[j], &term[j + 1], (k - j - 1) * sizeof *term);
        k--;
        again = 1;
      }
    }
  }
  if (st)
    goto done;
  /* bootstrap: each resample of the rows takes one Gauss-Newton step
   * from the fit, with the rows' Jacobian and residuals there */
  unsigned B = o->bootstrap ? o->bootstrap : 200;
  double *boot = k ? malloc((size_t)B * k * sizeof *boot) : NULL;
  double *Jb = malloc(f.n * XS_MOE_TERMS * sizeof *Jb), *rb = malloc(f.n * sizeof *rb);
  if ((k && !boot) || !Jb || !rb) {
    free(boot);
    free(Jb);
    free(rb);
    st = xs__fail(err, XS_NOMEM, "out of memory");
    goto done;
  }
  uint64_t seed = o->seed ? o->seed : 0x5eed2029;
  size_t good = 0;
  /* the step all the rows would take from the fit (0 at an exact
   * minimum; not quite 0 where a kink or a bound stopped the fit): each
   * resample's step is taken relative to it */
  double step0[XS_MOE_TERMS] = {0};
  for (size_t i = 0; i < f.n; i++)
    rb[i] = lp[i] - f.rows[i].y;
  if (k && lsq(J, rb, f.n, term, k, theta, PRIOR, 0, step0, NULL))
    memset(step0, 0, sizeof step0);
  for (unsigned b = 0; k && b < B; b++) {
    for (size_t i = 0; i < f.n; i++) {
      size_t s = (size_t)(next_random(&seed) % f.n);
      memcpy(&Jb[i * XS_MOE_TERMS], &J[s * XS_MOE_TERMS], XS_MOE_TERMS * sizeof *Jb);
      rb[i] = lp[s] - f.rows[s].y;
    }
    double step[XS_MOE_TERMS];
    if (lsq(Jb, rb, f.n, term, k, theta, PRIOR, 0, step, NULL))
      continue; /* a resample that does not determine every term */
    for (size_t j = 0; j < k; j++)
      boot[good * k + j] = fmin(BOUND, fmax(-BOUND, theta[j] + step[j] - step0[j]));
    good++;
  }
  double *col = malloc((good + 1) * sizeof *col);
  for (size_t j = 0; col && j < k; j++) {
    xs_moe_fit_term *t = &res->terms[term[j]];
    t->fitted = 1;
    t->scale = exp(theta[j]);
    t->value = t->base * t->scale;
    for (size_t b = 0; b < good; b++)
      col[b] = boot[b * k + j];
    qsort(col, good, sizeof *col, by_value);
    t->lo = good ? exp(col[(size_t)floor(0.16 * (double)(good - 1))]) : NAN;
    t->hi = good ? exp(col[(size_t)ceil(0.84 * (double)(good - 1))]) : NAN;
  }
  free(boot);
  free(Jb);
  free(rb);
  if (!col) {
    st = xs__fail(err, XS_NOMEM, "out of memory");
    goto done;
  }
  free(col);
  res->nfitted = k;
  res->nrows = f.n;
  for (size_t i = 0; i < f.n; i++)
    res->rows[i] = (xs_moe_fit_row){f.rows[i].row->line, exp(f.rows[i].y) * 1e6,
                                    exp(lp0[i]) * 1e6, exp(lp[i]) * 1e6};
  res->median_before = median_abs(lp0, f.rows, f.n, &res->max_before);
  res->median_after = median_abs(lp, f.rows, f.n, &res->max_after);
  res->evaluations = f.evaluations;
  /* every term pinned at x1/4 or x4, or left anywhere in them (its 68%
   * interval the whole range: with the others pinned, the rows no longer
   * depend on it): no profile the bounds allow gives these times (rows in
   * nanoseconds, or of another kernel) */
  size_t pinned = 0, at_bound = 0;
  for (size_t j = 0; j < k; j++) {
    const xs_moe_fit_term *t = &res->terms[term[j]];
    int at = fabs(theta[j]) >= BOUND * (1 - 1e-9);
    at_bound += at;
    pinned += at || (log(t->lo) <= -BOUND * (1 - 1e-9) && log(t->hi) >= BOUND * (1 - 1e-9));
  }
  if (k && at_bound && pinned == k) {
    xs__sbuf s = {0}, u = {0};
    for (size_t j = 0; j < k; j++) {
      int at = fabs(theta[j]) >= BOUND * (1 - 1e-9);
      xs__sb_printf(at ? &s : &u, "%s%s x%.3g", (at ? s.s : u.s) ? ", " : "",
                    xs_moe_term_name((xs_moe_term)term[j]), exp(theta[j]));
    }
    st = xs__fail(err, s.oom || u.oom ? XS_NOMEM : XS_INVALID,
                  "%s: every term fitted ended at its bound (x1/4 to x4 of the base: %s)%s%s%s "
                  "and the %zu rows are still off by a median %.1f%% (%.1f%% before): no "
                  "profile within the bounds gives these times (are they microseconds, "
                  "of this kernel?)", file, s.s ? s.s : "",
                  u.s ? " or, with those there, anywhere in it (the rows no longer tell: " : "",
                  u.s ? u.s : "", u.s ? ")" : "", f.n, 100 * res->median_after,
                  100 * res->median_before);
    free(s.s);
    free(u.s);
    goto done;
  }
  if (tuned && k)
    st = tuned_profile(&f, file, o, res, term, k, tuned, err);
  else if (tuned)
    st = xs__profile_copy(base, tuned, err);
done:
  free(J);
  free(lp0);
  free(lp);
  free(f.rows);
  xs_validate_free(&set);
  if (st)
    xs_moe_fit_free(res);
  return st;
}

/* the tuned profile's sources quote numbers with a point whatever the
 * host's locale */
xs_status xs_moe_fit(const char *text, size_t length, const char *filename,
                     const xs_profile *base, const xs_moe_fit_options *opt,
                     xs_moe_fit_result *res, xs_profile **tuned, xs_error *err) {
  void *loc = xs__numeric_c();
  xs_status st = moe_fit(text, length, filename, base, opt, res, tuned, err);
  xs__numeric_restore(loc);
  return st;
}
