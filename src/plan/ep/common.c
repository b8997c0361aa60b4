/*
 * common.c: what every EP library's program shares: the routing
 * expectations of one rank, the machine's numbers read from the profile
 * (and its fabric), and the frame of a kernel (the host that launches it,
 * classes of SMs as workers with copies, the NIC as its own worker).
 */
#include "plan/ep/ep.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Fitted to the published timings of data/published/ep.csv (all sources;
 * docs/ep.md "Fitted constants" gives the fit and the leave-one-source-out
 * refits). */
#define EP_PAIR_S 7.735e-08
#define EP_API_S 4.795e-05
#define EP_MAX_RANKS 65536
#define EP_MAX_EXPERTS 1048576
#define EP_MAX_TOPK 1024
#define EP_NVL_EFF 0.8218
/* One cooperative-groups grid.sync() inside a kernel: 1.26 us per
 * iteration of a persistent kernel of 128 CTAs (tiny step, then the sync)
 * on H200 (te42kyfo/gpu-benches gpu-small-kernels/h200_gsync.txt at
 * c35574e, the 64 kB row: 65536 B / 52 GB/s; derived) */
#define EP_GRID_SYNC_S 1.26e-06

void xs__ep_params_default(xs__ep_params *par) {
  par->pair_s = EP_PAIR_S;
  par->api_s = EP_API_S;
  par->nvl_eff = EP_NVL_EFF;
}

/* The chance that a token's k distinct experts, drawn uniformly from e,
 * all avoid a given set of m of them: C(e-m, k) / C(e, k). */
static double miss(double e, double k, double m) {
  if (e - m < k)
    return 0;
  double q = 1;
  for (double i = 0; i < k; i++)
    q *= (e - m - i) / (e - i);
  return q;
}

xs_status xs__ep_routing(const xs__ep_shape *s, double node_gpus,
                       xs__ep_route *r, xs_error *err) {
  memset(r, 0, sizeof *r);
  double P = s->ep, E = s->experts, K = s->topk;
  /* bounds far past any deployment, so that no shape runs loops or
   * programs without end (docs/ep.md, "The kernels as programs") */
  if (!(P <= EP_MAX_RANKS && E <= EP_MAX_EXPERTS && K <= EP_MAX_TOPK))
    return xs__fail(err, XS_INVALID,
                    "EP %g, %g experts, top-%g: at most %d ranks, %d experts "
                    "and a top-%d", P, E, K, EP_MAX_RANKS, EP_MAX_EXPERTS,
                    EP_MAX_TOPK);
  if (!(P >= 1) || P != floor(P) || !(E >= 1) || E != floor(E) ||
      fmod(E, P) != 0)
    return xs__fail(err, XS_INVALID,
                    "experts (%g) must be a whole multiple of the EP ranks (%g)",
                    E, P);
  if (!(K >= 1) || K != floor(K) || K > E)
    return xs__fail(err, XS_INVALID,
                    "top-k must be a whole number from 1 to the experts (%g), "
                    "got %g", E, K);
  double G = fmin(P, node_gpus > 0 ? node_gpus : P);
  if (fmod(P, G) != 0)
    return xs__fail(err, XS_INVALID,
                    "%g ranks do not fill whole nodes of %g GPUs", P, G);
  double N = P / G;
  r->P = P;
  r->G = G;
  r->N = N;
  r->T = s->tokens;
  r->H = s->hidden;
  r->K = K;
  r->E = E;
  double g = s->topk_groups;
  if (g > 0 && g < N) {
    /* the token's g nodes first, then its experts among theirs */
    double Eg = g * E / N;
    if (K > Eg)
      return xs__fail(err, XS_INVALID,
                      "top-k %g is more than the %g experts of %g nodes", K,
                      Eg, g);
    double hit_node = 1 - miss(Eg, K, E / N);
    double hit_rank = 1 - miss(Eg, K, E / P);
    r->Nn = g * hit_node;
    r->own = g / N * hit_node;
    r->R = g * G * hit_rank;
    r->pself = g / N * hit_rank;
  } else {
    r->Nn = N * (1 - miss(E, K, E / N));
    r->own = 1 - miss(E, K, E / N);
    r->R = P * (1 - miss(E, K, E / P));
    r->pself = 1 - miss(E, K, E / P);
  }
  /* a selection is uniform over the experts of the chosen nodes, so over
   * ranks alike whether or not the routing is grouped */
  r->sel_remote = (P - G) / P;
  r->sel_node = (G - 1) / P;
  return XS_OK;
}

double xs__ep_batches(double n, double p, double b) {
  /* E[floor(X / b)] = sum over m >= 1 of P(X >= m b): the binomial's
   * tail, its terms built one from the last; past 2^16 draws a normal
   * count's mean less the (b - 1) / 2 its remainder averages */
  if (!(n >= 1 && p > 0 && b >= 1))
    return 0;
  if (p >= 1)
    return floor(n / b);
  if (n > 65536)
    return fmax(0, (n * p - (b - 1) / 2) / b);
  double q = 1 - p, term = pow(q, n), tail = 1, sum = 0;
  for (double x = 0; x < n; x++) {
    tail -= term; /* P(X > x) */
    if (fmod(x + 1, b) == 0)
      sum += fmax(0, tail);
    if (tail < 1e-12)
      break;
    term *= (n - x) / (x + 1) * p / q;
  }
  return sum;
}

/* The standard normal's quantile (P. J. Acklam's rational approximation,
 * relative error below 1.2e-9 over (0, 1)). */
static double probit(double p) {
  static const double a[] = {-3.969683028665376e+01, 2.209460984245205e+02,
                             -2.759285104469687e+02, 1.383577518672690e+02,
                             -3.066479806614716e+01, 2.506628277459239e+00};
  static const double b[] = {-5.447609879822406e+01, 1.615858368580409e+02,
                             -1.556989798598866e+02, 6.680131188771972e+01,
                             -1.328068155288572e+01};
  static const double c[] = {-7.784894002430293e-03, -3.223964580411365e-01,
                             -2.400758277161838e+00, -2.549732539343734e+00,
                             4.374664141464968e+00, 2.938163982698783e+00};
  static const double d[] = {7.784695709041462e-03, 3.224671290700398e-01,
                             2.445134137142996e+00, 3.754408661907416e+00};
  if (p < 0.02425) {
    double q = sqrt(-2 * log(p));
    return (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
           ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
  }
  if (p > 1 - 0.02425)
    return -probit(1 - p);
  double q = p - 0.5, r = q * q;
  return (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
         (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1);
}

double xs__ep_max_normal(double n) {
  /* Blom's plotting position for the largest of n: E[max] ~
   * probit((n - 0.375) / (n + 0.25)) */
  return n > 1 ? probit((n - 0.375) / (n + 0.25)) : 0;
}

double xs__ep_busiest(const xs__ep_route *r) {
  /* what arrives at one rank: P T tokens, each sending its K distinct
   * experts, E / P of them this rank's (hypergeometric): mean T K,
   * variance T K (1 - 1/P) (E - K) / (E - 1); the busiest of P such
   * ranks, as a normal's largest */
  double mean = r->T * r->K;
  if (!(mean > 0) || r->P < 2 || r->E < 2)
    return 1;
  double var = mean * (1 - 1 / r->P) * (r->E - r->K) / (r->E - 1);
  return 1 + xs__ep_max_normal(r->P) * sqrt(var) / mean;
}

double xs__ep_call_s(const xs__ep_ctx *c) {
  return c->s->api_time ? c->par.api_s + c->launch_s : 0;
}

double xs__ep_payload_B(const xs__ep_shape *s) {
  double b = s->hidden * s->elem_bytes;
  if (s->elem_bytes < 2)
    b += ceil(s->hidden / 128) * 4; /* FP8: a float scale per 128 */
  return b;
}

static const xs_channel *channel(const xs_profile *prof, const char *name) {
  long i = xs_profile_find_channel(prof, name);
  return i < 0 ? NULL : xs_profile_channel(prof, (size_t)i);
}

xs_status xs__ep_begin(xs__ep_ctx *c, const xs__ep_shape *s, xs__ep_phase ph,
                       const xs_profile *prof, const xs__ep_params *par,
                       const char *name, xs_error *err) {
  memset(c, 0, sizeof *c);
  c->s = s;
  c->phase = ph;
  c->prof = prof;
  c->err = err;
  c->nsteps_max = 48;
  if (par)
    c->par = *par;
  else
    xs__ep_params_default(&c->par);
  if (!(s->tokens >= 1 && s->tokens <= 1e9) || !(s->hidden >= 1 && s->hidden <= 1e7))
    return xs__fail(err, XS_INVALID,
                    "tokens (%g) must be from 1 to 1e9 and hidden (%g) from 1 "
                    "to 1e7", s->tokens, s->hidden);
  if (!(s->sms >= 0 && s->sms <= 1e5) || !(s->topk_groups >= 0 && s->topk_groups <= 1e5))
    return xs__fail(err, XS_INVALID,
                    "SMs (%g) and routing groups (%g) must be from 0 to 1e5",
                    s->sms, s->topk_groups);
  if (s->elem_bytes != 1 && s->elem_bytes != 2)
    return xs__fail(err, XS_INVALID,
                    "bytes per element must be 1 (FP8) or 2 (BF16), got %g",
                    s->elem_bytes);
  double node = xs_profile_node_gpus(prof);
  xs_status st = xs__ep_routing(s, node, &c->rt, err);
  if (st)
    return st;
  const xs_channel *nic = channel(prof, "nic");
  if (c->rt.N > 1 && !nic)
    return xs__fail(err, XS_INVALID,
                    "%g ranks span %g nodes of %g GPUs on profile \"%s\", which "
                    "has no fabric between nodes: name one (--fabric ib-400, "
                    "roce-200 or efa-400, or the profile \"%s+ib-400\")",
                    c->rt.P, c->rt.N, node, xs_profile_name(prof),
                    xs_profile_name(prof));
  size_t dc = xs_profile_default_channel(prof);
  const xs_channel *link = xs_profile_channel(prof, dc);
  if (!link)
    return xs__fail(err, XS_INVALID, "profile \"%s\" has no channels",
                    xs_profile_name(prof));
  c->link = xs_profile_channel_name(prof, dc);
  xs_kernel_costs kc;
  xs_profile_kernel_costs(prof, &kc);
  c->gpu_sms = xs_profile_sms(prof) ? xs_profile_sms(prof) : 132;
  c->streams = kc.ep_sm_streams >= 1 ? kc.ep_sm_streams : 1;
  c->launch_s = kc.launch_s;
  c->barrier_s = kc.barrier_s;
  c->host_sync_s = kc.host_sync_s;
  c->gap_s = kc.kernel_gap_s > 0 ? kc.kernel_gap_s : kc.launch_s;
  /* a cooperative grid.sync() (the EP kernels'), not the atomic-counter
   * barrier of the profile's grid_sync_s */
  c->grid_sync_s = EP_GRID_SYNC_S;
  c->signal_s = kc.signal_s;
  c->nvl_latency_s = link->latency_s;
  if (nic) {
    c->has_nic = 1;
    c->nic_latency_s = nic->latency_s;
    c->nic_overhead_s = nic->issue_overhead_s;
    c->nic_Bps = nic->drain_Bps;
  }
  c->p = xs_program_new(name);
  if (!c->p)
    return xs__fail(err, XS_NOMEM, "out of memory");
  if ((st = xs_program_add_worker(c->p, "host", &c->host, err)) ||
      (st = xs_program_counter(c->p, "start", &c->go, err))) {
    xs__ep_abort(c);
    return st;
  }
  return XS_OK;
}

void xs__ep_abort(xs__ep_ctx *c) {
  xs_program_free(c->p);
  c->p = NULL;
}

xs_status xs__ep_host(xs__ep_ctx *c, double seconds) {
  return seconds > 0 ? xs_program_compute(c->p, c->host, seconds, c->err)
                     : XS_OK;
}

xs_status xs__ep_start(xs__ep_ctx *c) {
  return xs_program_signal_index(c->p, c->host, c->go, 1, c->err);
}

xs_status xs__ep_workers(xs__ep_ctx *c, const char *name, double n,
                         size_t *w) {
  size_t copies = (size_t)fmax(1, round(n));
  xs_status st = xs_program_add_workers(c->p, name, copies, w, c->err);
  if (!st)
    st = xs_program_await_index(c->p, *w, c->go, 1, c->err);
  return st;
}

xs_status xs__ep_counter(xs__ep_ctx *c, const char *name, size_t *k) {
  return xs_program_counter(c->p, name, k, c->err);
}

xs_status xs__ep_send(xs__ep_ctx *c, size_t w, double bytes, const char *chan,
                      size_t *sid) {
  if (!strcmp(chan, "hbm") && xs_profile_find_channel(c->prof, "hbm") < 0) {
    /* a profile without the GPU's memory as a channel: the copy takes its
     * time on the SM at hbm_Bps (or nothing where that is not given) */
    double hbm = xs_profile_hbm_Bps(c->prof);
    if (sid)
      *sid = SIZE_MAX;
    return hbm > 0 ? xs__ep_compute(c, w, bytes / hbm) : XS_OK;
  }
  if (!strcmp(chan, "nvlink")) { /* the peers' link, by any name */
    bytes /= c->par.nvl_eff;
    chan = c->link;
  }
  return xs_program_send(c->p, w, bytes, chan, NULL, sid, c->err);
}

xs_status xs__ep_compute(xs__ep_ctx *c, size_t w, double seconds) {
  return seconds > 0 ? xs_program_compute(c->p, w, seconds, c->err) : XS_OK;
}

xs_status xs__ep_wait(xs__ep_ctx *c, size_t w, size_t sid) {
  return sid == SIZE_MAX ? XS_OK : xs_program_wait_send(c->p, w, sid, c->err);
}

xs_status xs__ep_signal(xs__ep_ctx *c, size_t w, size_t k, double add) {
  return xs_program_signal_index(c->p, w, k, add, c->err);
}

xs_status xs__ep_await(xs__ep_ctx *c, size_t w, size_t k, double value) {
  return value >= 1 ? xs_program_await_index(c->p, w, k, value, c->err)
                    : XS_OK;
}

xs_status xs__ep_copy(xs__ep_ctx *c, size_t w, double pairs, double bytes,
                      const char *chan, size_t *sid) {
  xs_status st = xs__ep_compute(c, w, c->par.pair_s * pairs);
  if (!st)
    st = xs__ep_send(c, w, bytes / c->streams, chan, sid);
  return st;
}

xs_status xs__ep_nic(xs__ep_ctx *c, size_t nic, size_t posted, double need,
                     double posts, double bytes, size_t *sid) {
  xs_status st = xs__ep_await(c, nic, posted, need);
  if (!st)
    st = xs__ep_compute(c, nic, c->nic_overhead_s * fmax(0, posts - 1));
  if (!st)
    st = xs__ep_send(c, nic, bytes, "nic", sid);
  return st;
}

xs_status xs__ep_post(xs__ep_ctx *c, size_t w, size_t nic, size_t posted, double need,
                      double posts, double bytes, size_t *sid) {
  xs_status st = xs__ep_signal(c, w, posted, 1);
  return st ? st : xs__ep_nic(c, nic, posted, need, posts, bytes, sid);
}

size_t xs__ep_steps(const xs__ep_ctx *c, double chunks) {
  double n = ceil(chunks);
  if (n < 1)
    n = 1;
  return (size_t)fmin(n, c->nsteps_max);
}

xs_status xs__ep_finish(xs__ep_ctx *c, xs_program **out, double *time_s) {
  xs_status st = xs_program_finish(c->p, c->err);
  if (!st)
    st = xs__makespan(c->p, c->prof, XS_MODEL_BURSTGAP, NULL, time_s, c->err);
  if (st) {
    xs__ep_abort(c);
    return st;
  }
  if (out)
    *out = c->p;
  else
    xs_program_free(c->p);
  c->p = NULL;
  return XS_OK;
}
