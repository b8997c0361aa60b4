/*
 * tuner.c: the online tuner a kernel's host code calls between launches
 * (docs/tune.md "The tuner"). Built once from the planner: at each grid
 * point (a token count) every option's log time a and its gradient g in
 * the log of each term learned. Then, per grid point, a belief about the
 * terms' log factors theta and each option's own log error b, jointly
 * Gaussian (mean x = [theta; b], covariance P), predicts an option's log
 * time as
 *
 *   mu = a + g . theta + b,
 *
 * and a measured time updates the belief by one Kalman step, the
 * measurement's log spread being its noise, weighted down (Huber) when
 * the time is far off the belief, so that one timing moves a term by at
 * most HUBER standard deviations of the belief in it. The joint
 * covariance is what lets two options' difference become certain once
 * both were timed, even while the terms alone are not. Choosing reads the
 * belief without a lock under a sequence counter (a seqlock); observing
 * takes the counter from even to odd by compare-and-swap, so observers
 * take turns.
 */
#define _POSIX_C_SOURCE 200809L /* sched_yield */
#include "internal.h"

#include <math.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define MAXK XS_MOE_TERMS
/* central differences for the gradients: x1.25 and x0.8 */
#define GRAD_STEP 0.22314355131420976
/* "could win": at this many standard deviations */
#define KAPPA 2.0
/* A timing's weight in the update is min(1, HUBER / |z|), z its log
 * error over its predicted standard deviation (Huber's M-estimator, its
 * usual constant): a time within HUBER sd counts in full; one further
 * off moves the belief as one HUBER sd off would, and takes away that
 * share of the uncertainty only. So one timing moves a term's log factor
 * by at most HUBER times its standard deviation before the timing. */
#define HUBER 1.345
/* SURPRISE_RUN timings in a row at one grid point, each more than
 * SURPRISE standard deviations off the belief on the same side, mean the
 * machine changed (one such timing is an outlier): the point's
 * covariance goes back to its prior */
#define SURPRISE 4.0
#define SURPRISE_RUN 3
/* a measured time outside what the CSV readers take as a time (0.001 us
 * to 1e12 us) is no launch's */
#define MEASURED_MIN_S 1e-9
#define MEASURED_MAX_S 1e6
/* A reader retries while an observation is being written (a few
 * microseconds); past SPIN retries it yields the processor, and past
 * YIELDS yields (about 0.1 s: only an observer stopped inside
 * xs_tuner_observe takes that long) it gives up with XS_TIMEOUT. An
 * observer waits for another the same way. */
#define SPIN 256
#define YIELDS 100000
/* terms whose gradient is below this at every option are not learned */
#define MIN_GRADIENT 1e-3

typedef struct {
  xs_moe_option opt;
  double a; /* log seconds at the profile */
} topt;

struct xs_tuner {
  size_t npoints, K, nopts;
  int term[MAXK];
  double tokens[XS_TUNER_MAX_POINTS];
  double mid[XS_TUNER_MAX_POINTS]; /* log tokens halfway to the next point */
  size_t first[XS_TUNER_MAX_POINTS + 1]; /* the options of point p:
                                            first[p] .. first[p + 1] - 1 */
  size_t xoff[XS_TUNER_MAX_POINTS], poff[XS_TUNER_MAX_POINTS]; /* point p's
                                            belief in x and P */
  topt *opt;      /* nopts */
  double *g;      /* nopts x K */
  double r;       /* a measurement's log variance */
  double c0, v0;  /* prior variances of a term, of an option's error */
  double forget;  /* what remains of a launch's information after the next */
  double log_threshold, log_margin;
  size_t bytes;
  /* per point, timings in a row more than SURPRISE sd off: + above the
   * belief, - below (written under the counter, by one observer) */
  int surprised[XS_TUNER_MAX_POINTS];
  /* the belief, under the sequence counter (odd while being written) */
  _Atomic unsigned seq;
  _Atomic double n;   /* observations */
  _Atomic double *x;  /* per point: K + options means                    */
  _Atomic double *P;  /* per point: (K + options)^2 covariance, row-major */
  _Atomic double *var; /* per option: h' P h, its log time's variance
                          (kept by observe, so that choosing is O(m K)) */
};

static inline double ld(const _Atomic double *x) {
  return atomic_load_explicit(x, memory_order_relaxed);
}
static inline void st(_Atomic double *x, double v) {
  atomic_store_explicit(x, v, memory_order_relaxed);
}

static const unsigned default_terms =
    (1u << XS_MOE_TERM_GEMM) | (1u << XS_MOE_TERM_HBM) | (1u << XS_MOE_TERM_LINK) |
    (1u << XS_MOE_TERM_LINK_ISSUE) | (1u << XS_MOE_TERM_CAPACITY) |
    (1u << XS_MOE_TERM_LAUNCH) | (1u << XS_MOE_TERM_BARRIER);

void xs_tuner_free(xs_tuner *t) {
  if (!t)
    return;
  free(t->opt);
  free(t->g);
  free((void *)t->x);
  free((void *)t->P);
  free((void *)t->var);
  free(t);
}

size_t xs_tuner_state_size(const xs_tuner *t) { return t ? t->bytes : 0; }

uint64_t xs_tuner_observations(const xs_tuner *t) {
  return t ? (uint64_t)atomic_load_explicit(&t->n, memory_order_relaxed) : 0;
}

/* A reader's start: the counter, even (no observation in progress), or
 * 1 (odd: never a valid start) after YIELDS yields. */
static unsigned read_begin(const xs_tuner *t) {
  for (unsigned tries = 0;; tries++) {
    unsigned s = atomic_load_explicit(&t->seq, memory_order_acquire);
    if (!(s & 1))
      return s;
    if (tries >= SPIN + YIELDS)
      return 1;
    if (tries >= SPIN)
      sched_yield();
  }
}

/* whether what was read since read_begin returned s is whole */
static int read_end(const xs_tuner *t, unsigned s) {
  atomic_thread_fence(memory_order_acquire);
  return atomic_load_explicit(&t->seq, memory_order_relaxed) == s;
}

/* An observer's turn: the counter from even to odd, or XS_TIMEOUT */
static xs_status write_begin(xs_tuner *t, unsigned *s0, xs_error *err) {
  for (unsigned tries = 0;; tries++) {
    unsigned s = atomic_load_explicit(&t->seq, memory_order_relaxed);
    if (!(s & 1) && atomic_compare_exchange_weak_explicit(
                        &t->seq, &s, s + 1, memory_order_acquire, memory_order_relaxed)) {
      atomic_thread_fence(memory_order_release);
      *s0 = s;
      return XS_OK;
    }
    if (tries >= SPIN + YIELDS)
      return xs__fail(err, XS_TIMEOUT,
                      "tuner: another observation has been in progress for over 0.1 s "
                      "(a thread stopped inside xs_tuner_observe?)");
    if (tries >= SPIN)
      sched_yield();
  }
}

/* the grid point nearest tokens in log tokens */
static size_t point_of(const xs_tuner *t, double tokens) {
  double l = log(tokens);
  size_t lo = 0, hi = t->npoints - 1;
  while (lo < hi) {
    size_t m = (lo + hi) / 2;
    if (l > t->mid[m])
      lo = m + 1;
    else
      hi = m;
  }
  return lo;
}

/* an option's log time's variance under the prior: c0 |g|^2 + v0 */
static double prior_var(const xs_tuner *t, const double *g) {
  double s = 0;
  for (size_t k = 0; k < t->K; k++)
    s += g[k] * g[k];
  return t->c0 * s + t->v0;
}

static xs_status check_options(const xs_tuner_options *o, xs_error *err) {
  const struct {
    const char *name;
    double v, hi;
  } f[] = {{"noise", o->noise, 1},          {"prior", o->prior, 10},
           {"option_prior", o->option_prior, 10}, {"half_life", o->half_life, 1e12},
           {"threshold", o->threshold, 1},  {"margin", o->margin, 10}};
  for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
    if (!(f[i].v >= 0 && f[i].v <= f[i].hi))
      return xs__fail(err, XS_INVALID, "tuner %s: expected 0 (the default) to %g, got %g",
                      f[i].name, f[i].hi, f[i].v);
  if (o->terms >> XS_MOE_TERMS)
    return xs__fail(err, XS_INVALID, "tuner terms: bit %d is no term (bits 0 to %d)",
                    xs__lowest_bit(o->terms >> XS_MOE_TERMS) + XS_MOE_TERMS,
                    XS_MOE_TERMS - 1);
  if (o->tokens && !o->ntokens)
    return xs__fail(err, XS_INVALID, "tuner tokens: an empty grid");
  if (o->tokens && o->ntokens > XS_TUNER_MAX_POINTS)
    return xs__fail(err, XS_INVALID, "tuner tokens: %zu grid points, more than %d",
                    o->ntokens, XS_TUNER_MAX_POINTS);
  for (size_t i = 0; o->tokens && i < o->ntokens; i++)
    if (!(o->tokens[i] >= 1 && o->tokens[i] <= 1e7) ||
        (i && !(o->tokens[i] > o->tokens[i - 1])))
      return xs__fail(err, XS_INVALID,
                      "tuner tokens[%zu]: %g; expected ascending token counts from 1 to "
                      "1e7", i, o->tokens[i]);
  return XS_OK;
}

/* log time of every option of point p (already in t->opt), the planner
 * on the profile of the times wanted */
static xs_status times_on(const xs_tuner *t, size_t p, xs__moe_planner *pl, double *out,
                          xs_error *err) {
  for (size_t i = t->first[p]; i < t->first[p + 1]; i++) {
    double s;
    xs_status st = xs__moe_planner_time(pl, t->opt[i].opt.schedule, &t->opt[i].opt.knobs,
                                        &s, err);
    if (st)
      return st;
    out[i - t->first[p]] = log(s);
  }
  return XS_OK;
}

xs_status xs_tuner_create(const xs_moe_config *config, const xs_profile *prof,
                          const xs_tuner_options *options, xs_tuner **out,
                          xs_error *err) {
  static const xs_tuner_options dflt = {0};
  const xs_tuner_options *o = options ? options : &dflt;
  if (!out)
    return xs__fail(err, XS_INVALID, "xs_tuner_create: out is NULL");
  *out = NULL;
  if (!config || !prof)
    return xs__fail(err, XS_INVALID, "xs_tuner_create: the %s is NULL",
                    config ? "profile" : "config");
  xs_status st = check_options(o, err);
  if (st || (st = xs_moe_config_check(config, err)))
    return st;
  xs_tuner *t = calloc(1, sizeof *t);
  if (!t)
    return xs__fail(err, XS_NOMEM, "out of memory");
  /* the grid */
  if (o->tokens) {
    t->npoints = o->ntokens;
    memcpy(t->tokens, o->tokens, o->ntokens * sizeof *o->tokens);
  } else if (o->table) {
    size_t n = xs_moe_table_size(o->table);
    for (size_t i = 0; i < n; i++) {
      /* a range table has more points than the tuner keeps: every k-th */
      size_t k = (n + XS_TUNER_MAX_POINTS - 1) / XS_TUNER_MAX_POINTS;
      if (i % k == 0 || i == n - 1)
        t->tokens[t->npoints++] = xs_moe_table_pick(o->table, i)->tokens;
      if (t->npoints == XS_TUNER_MAX_POINTS)
        break;
    }
  } else {
    t->npoints = 1;
    t->tokens[0] = config->tokens;
  }
  if (!t->npoints) {
    xs_tuner_free(t);
    return xs__fail(err, XS_INVALID, "tuner: the knob table has no rows");
  }
  /* each point is planned 1 + 2K times (its options, then each term
   * moved up and down): the work is known before the first plan */
  unsigned want = o->terms ? o->terms : default_terms;
  double work = 0, plans = 1;
  for (int k = 0; k < XS_MOE_TERMS; k++)
    plans += 2 * ((want >> k) & 1);
  for (size_t p = 0; p < t->npoints; p++)
    work += plans * xs__moe_plan_work(config, t->tokens[p]);
  if (work > XS_MOE_WORK_MAX) {
    xs_status st2 = xs__fail(err, XS_INVALID,
                             "tuner: %zu grid points up to %g tokens, each planned %g times: "
                             "about %.3g GEMM tiles of planning, more than the limit of %g "
                             "(XS_MOE_WORK_MAX, about 6 s here): fewer or smaller token "
                             "counts, or fewer terms", t->npoints,
                             t->tokens[t->npoints - 1], plans, work, XS_MOE_WORK_MAX);
    xs_tuner_free(t); /* after the message, which reads it */
    return st2;
  }
  for (size_t i = 0; i + 1 < t->npoints; i++)
    t->mid[i] = 0.5 * (log(t->tokens[i]) + log(t->tokens[i + 1]));
  t->mid[t->npoints - 1] = INFINITY;
  t->r = pow(log1p(o->noise > 0 ? o->noise : 0.02), 2);
  t->c0 = pow(log1p(o->prior > 0 ? o->prior : 0.25), 2);
  t->v0 = pow(log1p(o->option_prior > 0 ? o->option_prior : 0.1), 2);
  t->forget = exp(-log(2) / (o->half_life > 0 ? o->half_life : 200));
  /* by default, differences under a timing's spread are not worth a
   * launch to explore */
  t->log_threshold = log1p(o->threshold > 0 ? o->threshold : o->noise > 0 ? o->noise : 0.02);
  t->log_margin = log1p(o->margin > 0 ? o->margin : 0.2);
  /* every option of every point, at the profile */
  xs_moe_config c = *config;
  size_t cap = t->npoints * XS_MOE_MAX_OPTIONS;
  t->opt = calloc(cap, sizeof *t->opt);
  if (!t->opt) {
    xs_tuner_free(t);
    return xs__fail(err, XS_NOMEM, "out of memory");
  }
  /* the profile with each term asked for moved up and down (NULL: a
   * term without a number to scale, left out) */
  xs_profile *moved[XS_MOE_TERMS][2] = {{NULL}};
  for (int k = 0; k < XS_MOE_TERMS && !st; k++) {
    if (!(want & (1u << k)))
      continue;
    double v = xs_moe_term_value(prof, (xs_moe_term)k);
    if (!(v > 0 && isfinite(v))) {
      if (o->terms)
        st = xs__fail(err, XS_INVALID,
                      "tuner term %s: profile \"%s\" gives %s, nothing to scale",
                      xs_moe_term_name((xs_moe_term)k), xs_profile_name(prof),
                      v > 0 ? "no bound" : "0 or no such number");
      continue;
    }
    if ((st = xs__profile_copy(prof, &moved[k][0], err)) ||
        (st = xs__profile_copy(prof, &moved[k][1], err)) ||
        (st = xs_moe_term_scale(moved[k][0], (xs_moe_term)k, exp(GRAD_STEP), err)) ||
        (st = xs_moe_term_scale(moved[k][1], (xs_moe_term)k, exp(-GRAD_STEP), err)))
      break;
  }
  /* every option of every point at the profile, then each term's gradient
   * at every option by central differences of the planner on the moved
   * profiles: one planner a point, which keeps the programs a move leaves
   * as they were (a channel's rates) */
  double *gall = st ? NULL : malloc((cap * MAXK + 1) * sizeof *gall);
  double *up = st ? NULL : malloc(2 * (XS_MOE_MAX_OPTIONS + 1) * sizeof *up);
  double most[XS_MOE_TERMS] = {0};
  if (!st && (!gall || !up))
    st = xs__fail(err, XS_NOMEM, "out of memory");
  for (size_t p = 0; p < t->npoints && !st; p++) {
    xs_moe_option os[XS_MOE_MAX_OPTIONS];
    size_t n;
    c.tokens = t->tokens[p];
    t->first[p] = t->nopts;
    xs__moe_planner *pl;
    if ((st = xs__moe_planner_new(&c, prof, &pl, err)))
      break;
    if (!(st = xs__moe_planner_options(pl, o->schedules, os, &n, NULL, err))) {
      for (size_t i = 0; i < n; i++)
        t->opt[t->nopts++] = (topt){os[i], log(os[i].time_s)};
      t->first[p + 1] = t->nopts;
    }
    /* the channels' terms first: their moves keep the programs built at
     * the profile, the others' are built again */
    for (int j = 0; j < 2 * XS_MOE_TERMS && !st; j++) {
      int k = j % XS_MOE_TERMS;
      char keys[256];
      int chan = strncmp(xs_moe_term_keys(prof, (xs_moe_term)k, keys, sizeof keys),
                         "channels.", 9) == 0;
      if (!moved[k][0] || chan != (j < XS_MOE_TERMS))
        continue;
      double *dn = up + XS_MOE_MAX_OPTIONS + 1;
      if ((st = xs__moe_planner_on(pl, moved[k][0], err)) ||
          (st = times_on(t, p, pl, up, err)) ||
          (st = xs__moe_planner_on(pl, moved[k][1], err)) ||
          (st = times_on(t, p, pl, dn, err)))
        break;
      for (size_t i = t->first[p]; i < t->first[p + 1]; i++) {
        double gi = (up[i - t->first[p]] - dn[i - t->first[p]]) / (2 * GRAD_STEP);
        gall[i * MAXK + (size_t)k] = gi;
        most[k] = fmax(most[k], fabs(gi));
      }
    }
    xs__moe_planner_free(pl);
  }
  t->first[t->npoints] = t->nopts;
  /* the terms learned: those some option's time depends on, their
   * gradients packed to the front */
  for (int k = 0; k < XS_MOE_TERMS && !st; k++) {
    if (!moved[k][0] || most[k] < MIN_GRADIENT)
      continue;
    for (size_t i = 0; i < t->nopts; i++)
      gall[i * MAXK + t->K] = gall[i * MAXK + (size_t)k];
    t->term[t->K++] = k;
  }
  for (int k = 0; k < XS_MOE_TERMS; k++) {
    xs_profile_free(moved[k][0]);
    xs_profile_free(moved[k][1]);
  }
  free(up);
  if (!st && !t->K)
    st = xs__fail(err, XS_INVALID,
                  "tuner: no option's time depends on the terms asked for on profile \"%s\"",
                  xs_profile_name(prof));
  size_t K = t->K, N = t->nopts, nx = 0, nP = 0;
  for (size_t p = 0; p < t->npoints; p++) {
    size_t d = K + t->first[p + 1] - t->first[p];
    t->xoff[p] = nx;
    t->poff[p] = nP;
    nx += d;
    nP += d * d;
  }
  if (!st) {
    t->g = malloc((N * K + 1) * sizeof *t->g);
    t->x = calloc(nx + 1, sizeof *t->x);
    t->P = calloc(nP + 1, sizeof *t->P);
    t->var = calloc(N + 1, sizeof *t->var);
    if (!t->g || !t->x || !t->P || !t->var)
      st = xs__fail(err, XS_NOMEM, "out of memory");
  }
  if (!st) {
    /* the gradients of the terms kept (a term dropped left its column to
     * the next), packed K to an option */
    for (size_t i = 0; i < N; i++)
      for (size_t k = 0; k < K; k++)
        t->g[i * K + k] = gall[i * MAXK + k];
    for (size_t p = 0; p < t->npoints; p++) {
      size_t d = K + t->first[p + 1] - t->first[p];
      for (size_t a = 0; a < d; a++)
        atomic_init(&t->P[t->poff[p] + a * d + a], a < K ? t->c0 : t->v0);
    }
    for (size_t i = 0; i < N; i++)
      atomic_init(&t->var[i], prior_var(t, &t->g[i * K]));
    t->bytes = sizeof *t + N * (sizeof *t->opt + (K + 1) * sizeof *t->g) +
               (nx + nP) * sizeof(double);
  }
  free(gall);
  if (st) {
    xs_tuner_free(t);
    return st;
  }
  *out = t;
  return XS_OK;
}

/* out = P h for h = [g; e_i]: option i's covariance with every number
 * of the belief */
static void times_h(const _Atomic double *P, size_t d, size_t K, const double *g,
                    size_t i, double *out) {
  for (size_t a = 0; a < d; a++) {
    double s = ld(&P[a * d + K + i]);
    for (size_t k = 0; k < K; k++)
      s += ld(&P[a * d + k]) * g[k];
    out[a] = s;
  }
}

xs_status xs_tuner_choose(const xs_tuner *t, double tokens, xs_tuner_choice *out) {
  if (!t || !out || !(tokens > 0) || !isfinite(tokens))
    return XS_INVALID;
  size_t p = point_of(t, tokens), K = t->K, f = t->first[p];
  size_t m = t->first[p + 1] - f, d = K + m;
  const _Atomic double *x = &t->x[t->xoff[p]], *P = &t->P[t->poff[p]];
  size_t best, pick;
  double mu[XS_MOE_MAX_OPTIONS], v;
  for (;;) {
    unsigned s1 = read_begin(t);
    if (s1 & 1)
      return XS_TIMEOUT;
    best = 0;
    double th[MAXK];
    for (size_t k = 0; k < K; k++)
      th[k] = ld(&x[k]);
    for (size_t i = 0; i < m; i++) {
      const double *g = &t->g[(f + i) * K];
      double s = t->opt[f + i].a + ld(&x[K + i]);
      for (size_t k = 0; k < K; k++)
        s += g[k] * th[k];
      mu[i] = s;
      if (s < mu[best])
        best = i;
    }
    /* Could another option be faster than the best by more than the
     * threshold, at KAPPA standard deviations of the difference between
     * the two (never one predicted slower by more than the margin)? Then
     * the difference is what to learn about: time whichever of the two
     * (that option, or the best) tells more about it, the reduction of
     * its variance that one timing brings. */
    pick = best;
    double gain_best = t->log_threshold;
    size_t rival = m;
    const double *gb = &t->g[(f + best) * K];
    /* P h_best, so that each option's covariance with the best is O(K) */
    double Phb[MAXK + XS_MOE_MAX_OPTIONS];
    times_h(P, d, K, gb, best, Phb);
    double vb = ld(&t->var[f + best]), vr = 0, cr = 0;
    for (size_t i = 0; i < m; i++) {
      if (i == best || mu[i] - mu[best] > t->log_margin)
        continue;
      const double *g = &t->g[(f + i) * K];
      double vi = ld(&t->var[f + i]), ci = Phb[K + i];
      for (size_t k = 0; k < K; k++)
        ci += g[k] * Phb[k];
      double dv = vi + vb - 2 * ci;
      double gain = mu[best] - mu[i] + KAPPA * sqrt(dv > 0 ? dv : 0);
      if (gain > gain_best) {
        gain_best = gain;
        rival = i;
        vr = vi;
        cr = ci;
      }
    }
    if (rival < m) {
      double by_rival = (vr - cr) * (vr - cr) / (vr + t->r);
      double by_best = (cr - vb) * (cr - vb) / (vb + t->r);
      if (by_rival > by_best)
        pick = rival;
    }
    v = ld(&t->var[f + pick]);
    if (read_end(t, s1))
      break;
  }
  const topt *o = &t->opt[f + pick];
  out->schedule = o->opt.schedule;
  out->rule = o->opt.rule;
  out->knobs = o->opt.knobs;
  out->tokens = t->tokens[p];
  out->predicted_s = exp(mu[pick]);
  out->sd = sqrt(v > 0 ? v : 0);
  out->best_s = exp(mu[best]);
  out->explore = pick != best;
  return XS_OK;
}

xs_status xs_tuner_observe(xs_tuner *t, double tokens, xs_moe_schedule schedule,
                           const xs_moe_pattern *knobs, double measured_s,
                           xs_error *err) {
  if (!t)
    return xs__fail(err, XS_INVALID, "xs_tuner_observe: the tuner is NULL");
  if (!knobs)
    return xs__fail(err, XS_INVALID, "tuner: knobs NULL: expected the knobs the launch "
                    "ran with (xs_tuner_choice.knobs)");
  if (!(tokens > 0) || !isfinite(tokens))
    return xs__fail(err, XS_INVALID, "tuner: tokens %g: expected a positive count", tokens);
  if (!(measured_s >= MEASURED_MIN_S && measured_s <= MEASURED_MAX_S))
    return xs__fail(err, XS_INVALID,
                    "tuner: measured time %g s: expected seconds from %g to %g (0.001 us "
                    "to 1e12 us)", measured_s, MEASURED_MIN_S, MEASURED_MAX_S);
  size_t p = point_of(t, tokens), K = t->K, f = t->first[p];
  size_t m = t->first[p + 1] - f, d = K + m, o = m;
  for (size_t i = 0; i < m && o == m; i++)
    if (t->opt[f + i].opt.schedule == schedule &&
        !memcmp(&t->opt[f + i].opt.knobs, knobs, sizeof *knobs))
      o = i;
  if (o == m) {
    const char *name = xs_moe_schedule_name(schedule);
    return xs__fail(err, XS_NOTFOUND,
                    "tuner: no option of %s with these knobs at the grid point of %g "
                    "tokens (%g)", name ? name : "this schedule", tokens, t->tokens[p]);
  }
  _Atomic double *x = &t->x[t->xoff[p]], *P = &t->P[t->poff[p]];
  const double *g = &t->g[(f + o) * K];
  unsigned s0 = 0;
  xs_status wst = write_begin(t, &s0, err);
  if (wst)
    return wst;
  /* what the belief forgets over one launch: it relaxes toward the prior
   * (and so does each option's variance, linear in P) */
  double rho = t->forget;
  for (size_t a = 0; a < d; a++)
    for (size_t b = 0; b < d; b++)
      st(&P[a * d + b], rho * ld(&P[a * d + b]) +
                            (a == b ? (1 - rho) * (a < K ? t->c0 : t->v0) : 0));
  for (size_t i = 0; i < m; i++)
    st(&t->var[f + i], rho * ld(&t->var[f + i]) +
                           (1 - rho) * prior_var(t, &t->g[(f + i) * K]));
  double mu = t->opt[f + o].a + ld(&x[K + o]);
  for (size_t k = 0; k < K; k++)
    mu += g[k] * ld(&x[k]);
  double e = log(measured_s) - mu;
  double S = ld(&t->var[f + o]) + t->r;
  int side = e > 0 ? 1 : -1;
  if (e * e > SURPRISE * SURPRISE * S)
    t->surprised[p] = t->surprised[p] * side > 0 ? t->surprised[p] + side : side;
  else
    t->surprised[p] = 0;
  if (t->surprised[p] * side >= SURPRISE_RUN) {
    /* the machine changed: the covariance back to the prior (the means
     * stay, as where to start from) */
    t->surprised[p] = 0;
    for (size_t a = 0; a < d; a++)
      for (size_t b = 0; b < d; b++)
        st(&P[a * d + b], a != b ? 0 : a < K ? t->c0 : t->v0);
    for (size_t i = 0; i < m; i++)
      st(&t->var[f + i], prior_var(t, &t->g[(f + i) * K]));
    S = ld(&t->var[f + o]) + t->r;
  }
  /* Huber's weight: the step of a timing HUBER sd off for one further
   * off, and that share of its information. A term k moves by w e
   * (P h)_k / S, at most HUBER sqrt(P_kk) (Cauchy-Schwarz, h'P h < S). */
  double z = fabs(e) / sqrt(S), w = z > HUBER ? HUBER / z : 1;
  double Ph[MAXK + XS_MOE_MAX_OPTIONS];
  times_h(P, d, K, g, o, Ph);
  for (size_t a = 0; a < d; a++) {
    st(&x[a], ld(&x[a]) + w * Ph[a] / S * e);
    for (size_t b = 0; b < d; b++)
      st(&P[a * d + b], ld(&P[a * d + b]) - w * Ph[a] * Ph[b] / S);
  }
  /* each option's variance less w (h_i' P h)^2 / S */
  for (size_t i = 0; i < m; i++) {
    const double *gi = &t->g[(f + i) * K];
    double c = Ph[K + i];
    for (size_t k = 0; k < K; k++)
      c += gi[k] * Ph[k];
    st(&t->var[f + i], ld(&t->var[f + i]) - w * c * c / S);
  }
  st(&t->n, ld(&t->n) + 1);
  atomic_store_explicit(&t->seq, s0 + 2, memory_order_release);
  return XS_OK;
}

xs_status xs_tuner_term(const xs_tuner *t, double tokens, xs_moe_term term,
                        double *scale, double *sd) {
  if (!t || !(tokens > 0) || !isfinite(tokens))
    return XS_INVALID;
  size_t p = point_of(t, tokens), K = t->K, d = K + t->first[p + 1] - t->first[p];
  for (size_t k = 0; k < K; k++)
    if (t->term[k] == (int)term) {
      double th, v;
      for (;;) {
        unsigned s1 = read_begin(t);
        if (s1 & 1)
          return XS_TIMEOUT;
        th = ld(&t->x[t->xoff[p] + k]);
        v = ld(&t->P[t->poff[p] + k * d + k]);
        if (read_end(t, s1))
          break;
      }
      if (scale)
        *scale = exp(th);
      if (sd)
        *sd = sqrt(v > 0 ? v : 0);
      return XS_OK;
    }
  return XS_NOTFOUND;
}

void xs__tuner_point(const xs_tuner *t, double tokens, size_t *m, size_t *K,
                     double *a, double *g, double *mu, double *var) {
  size_t p = point_of(t, tokens), f = t->first[p];
  *m = t->first[p + 1] - f;
  *K = t->K;
  const _Atomic double *x = &t->x[t->xoff[p]];
  for (size_t i = 0; i < *m; i++) {
    a[i] = t->opt[f + i].a;
    memcpy(&g[i * t->K], &t->g[(f + i) * t->K], t->K * sizeof *g);
    mu[i] = a[i] + ld(&x[t->K + i]);
    for (size_t k = 0; k < t->K; k++)
      mu[i] += g[i * t->K + k] * ld(&x[k]);
    var[i] = ld(&t->var[f + i]);
  }
}
