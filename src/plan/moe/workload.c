/*
 * workload.c: one rank's share of an expert-parallel MoE layer: the model
 * shapes (presets), configs and their checks, and what uniform routing
 * gives the busiest rank (its token-expert pairs, its experts' rows, the
 * token blocks a kernel tiles them into). The planner models the busiest
 * rank because the timings it is checked against are the slowest rank's
 * (max over ranks) or wait for it at a barrier.
 */
#include "plan/moe/moe.h"
#include "plan/ep/ep.h"

#include "formats/jsonutil.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  const char *name;
  double hidden, intermediate, experts, topk;
} preset;

/* shapes and their sources: docs/plan-megamoe.md "Presets" */
static const preset presets[] = {
    {"deepseek-v3", 7168, 2048, 256, 8},
    {"deepseek-v4-flash", 4096, 2048, 256, 6},
    {"deepseek-v4-pro", 7168, 3072, 384, 6},
    {"qwen3.5", 4096, 1024, 512, 10},
    {"glm", 4096, 2048, 288, 8},
    {"qwen3-235b", 4096, 1536, 128, 8},
    {"mixtral-8x7b", 4096, 14336, 8, 2},
};
#define NPRESETS (sizeof presets / sizeof presets[0])

size_t xs_moe_preset_count(void) { return NPRESETS; }
const char *xs_moe_preset_name(size_t i) {
  return i < NPRESETS ? presets[i].name : NULL;
}

int xs_moe_preset(const char *name, xs_moe_config *c) {
  for (size_t i = 0; i < NPRESETS; i++) {
    if (strcmp(presets[i].name, name) != 0)
      continue;
    memset(c, 0, sizeof *c);
    snprintf(c->name, sizeof c->name, "%s", name);
    c->tokens = 4096;
    c->hidden = presets[i].hidden;
    c->intermediate = presets[i].intermediate;
    c->experts = presets[i].experts;
    c->topk = presets[i].topk;
    c->ep = 8;
    c->act_bytes = 1;
    c->combine_bytes = 2;
    c->weight_bytes = 1;
    c->imbalance = 1;
    snprintf(c->dtype, sizeof c->dtype, "fp8");
    return 0;
  }
  return -1;
}

static int whole(double x) { return isfinite(x) && x == floor(x); }

xs_status xs_moe_config_check(const xs_moe_config *c, xs_error *err) {
  const struct {
    const char *key;
    double v;
    double lo, hi;
    int integer;
  } f[] = {{"tokens", c->tokens, 1, 1e7, 1},
           {"hidden", c->hidden, 1, 1e6, 1},
           {"intermediate", c->intermediate, 1, 1e6, 1},
           {"experts", c->experts, 1, 1e5, 1},
           {"topk", c->topk, 1, 1e4, 1},
           {"ep", c->ep, 1, 1e5, 1},
           {"act_bytes", c->act_bytes, 0.125, 16, 0},
           {"combine_bytes", c->combine_bytes, 0.125, 16, 0},
           {"weight_bytes", c->weight_bytes, 0.125, 16, 0},
           {"shared_experts", c->shared_experts, 0, 64, 1},
           {"block_m", c->block_m, 0, 4096, 1},
           {"block_n", c->block_n, 0, 4096, 1},
           {"sms", c->sms, 0, 1e5, 1},
           {"imbalance", c->imbalance, 1, 1e3, 0},
           {"capacity", c->capacity, 0, 1e7, 1},
           {"sm_groups", c->sm_groups, 0, 4096, 1},
           {"cold_l2", c->cold_l2, 0, 1, 1}};
  for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) {
    if (!(f[i].v >= f[i].lo && f[i].v <= f[i].hi) ||
        (f[i].integer && !whole(f[i].v)))
      return xs__fail(err, XS_INVALID,
                      "%s must be a%s number in [%g, %g], got %g", f[i].key,
                      f[i].integer ? " whole" : "", f[i].lo, f[i].hi, f[i].v);
  }
  if (fmod(c->experts, c->ep) != 0)
    return xs__fail(err, XS_INVALID,
                    "experts (%g) must be a multiple of ep (%g): each rank "
                    "holds experts/ep of them",
                    c->experts, c->ep);
  if (c->topk > c->experts)
    return xs__fail(err, XS_INVALID, "topk (%g) exceeds experts (%g)",
                    c->topk, c->experts);
  if (c->capacity > 0 && c->capacity < c->tokens)
    return xs__fail(err, XS_INVALID,
                    "capacity (%g tokens per rank the buffers hold) is below "
                    "tokens (%g)",
                    c->capacity, c->tokens);
  if (!c->dtype[0])
    return xs__fail(err, XS_INVALID, "dtype must name a compute dtype");
  if (xs__moe_timing(c) < 0)
    return xs__fail(err, XS_INVALID,
                    "timing \"%s\": expected stream (kernels launched from the "
                    "host, the default), graph (a CUDA graph's replay) or device "
                    "(the kernels' own time on the GPU)", c->timing);
  if ((c->ep_library[0] || c->ep_kernel[0]) &&
      !xs__ep_known(c->ep_library[0] ? c->ep_library : XS__MOE_EP_LIBRARY,
                    c->ep_kernel[0] ? c->ep_kernel : XS__MOE_EP_KERNEL))
    return xs__fail(err, XS_INVALID,
                    "ep_library \"%s\"%s and ep_kernel \"%s\"%s: no such all-to-all "
                    "kernel (deepep-v1 normal or low-latency, deepep-v2 normal, "
                    "deepep-hybrid normal, pplx-kernels low-latency, uccl-ep "
                    "normal or low-latency)",
                    c->ep_library[0] ? c->ep_library : XS__MOE_EP_LIBRARY,
                    c->ep_library[0] ? "" : " (the default)",
                    c->ep_kernel[0] ? c->ep_kernel : XS__MOE_EP_KERNEL,
                    c->ep_kernel[0] ? "" : " (the default)");
  return XS_OK;
}

xs_status xs_moe_config_parse(const char *text, size_t length,
                              const char *filename, xs_moe_config *out,
                              xs_error *err) {
  static const char *const keys[] = {
      "name",         "preset",         "tokens",    "hidden",
      "intermediate", "experts",        "topk",      "ep",
      "act_bytes",    "combine_bytes",  "block_m",   "block_n",
      "sms",          "imbalance",      "dtype",     "weight_bytes",
      "shared_experts", "capacity",     "sm_groups", "ep_library",
      "ep_kernel",    "timing",         "cold_l2",   NULL};
  xs__jdoc d = {filename, text, length, {0}, err};
  json_t *root;
  xs_status st = xs__jparse(&d, &root);
  if (st)
    return st;
  xs_moe_config c;
  if (!json_is_object(root)) {
    st = xs__jfail(&d, "an MoE config is an object, got %s", xs__jtype(root));
    goto done;
  }
  if ((st = xs__jkeys(&d, root, keys)))
    goto done;
  const char *pre = "deepseek-v3", *s;
  int have;
  if ((st = xs__jstring(&d, root, "preset", &s, &have)))
    goto done;
  if (have)
    pre = s;
  if (xs_moe_preset(pre, &c) != 0) {
    xs__jpath_key(&d.path, "preset");
    st = xs__jfail(&d, "unknown preset \"%s\" (see xstage plan megamoe --help)",
                   pre);
    goto done;
  }
  if ((st = xs__jstrcpy(&d, root, "name", c.name, sizeof c.name)) ||
      (st = xs__jstrcpy(&d, root, "dtype", c.dtype, sizeof c.dtype)) ||
      (st = xs__jstrcpy(&d, root, "ep_library", c.ep_library,
                        sizeof c.ep_library)) ||
      (st = xs__jstrcpy(&d, root, "ep_kernel", c.ep_kernel, sizeof c.ep_kernel)) ||
      (st = xs__jstrcpy(&d, root, "timing", c.timing, sizeof c.timing)))
    goto done;
  const xs__jfield nums[] = {{"tokens", &c.tokens},
                             {"hidden", &c.hidden},
                             {"intermediate", &c.intermediate},
                             {"experts", &c.experts},
                             {"topk", &c.topk},
                             {"ep", &c.ep},
                             {"act_bytes", &c.act_bytes},
                             {"combine_bytes", &c.combine_bytes},
                             {"weight_bytes", &c.weight_bytes},
                             {"shared_experts", &c.shared_experts},
                             {"block_m", &c.block_m},
                             {"block_n", &c.block_n},
                             {"sms", &c.sms},
                             {"imbalance", &c.imbalance},
                             {"capacity", &c.capacity},
                             {"sm_groups", &c.sm_groups},
                             {"cold_l2", &c.cold_l2}};
  if ((st = xs__jnumbers(&d, root, nums, sizeof nums / sizeof nums[0])))
    goto done;
  xs_error e2;
  if (xs_moe_config_check(&c, &e2)) {
    st = xs__jfail_checked(&d, root, &e2);
    goto done;
  }
  *out = c;
done:
  json_decref(root);
  return st;
}

/* ---- routing statistics ---- */

/* E[max of n independent standard normals], by integrating
 * 1 - Phi(x)^n over x > 0 less Phi(x)^n over x < 0 (the trapezoid rule on
 * [-8, 8] is exact to 1e-6 here). */
static double expected_max_normal(double n) {
  if (n <= 1)
    return 0;
  /* 16,000 erfc and pow calls (about 10^7 instructions), for one of a
   * few rank counts: the last ones this thread asked for are kept (a
   * table, a sensitivity run, a fit or a tuner builds the same workloads
   * thousands of times) */
  enum { MEMO = 8 };
  static _Thread_local double memo_n[MEMO], memo_v[MEMO];
  static _Thread_local unsigned memo_next;
  for (unsigned i = 0; i < MEMO; i++)
    if (memo_n[i] == n)
      return memo_v[i];
  double s = 0, h = 1e-3;
  for (double x = -8; x < 8; x += h) {
    double a = 0.5 * erfc(-x / sqrt(2)), b = 0.5 * erfc(-(x + h) / sqrt(2));
    double fa = x < 0 ? -pow(a, n) : 1 - pow(a, n);
    double fb = x + h < 0 ? -pow(b, n) : 1 - pow(b, n);
    s += 0.5 * h * (fa + fb);
  }
  memo_n[memo_next % MEMO] = n;
  memo_v[memo_next++ % MEMO] = s;
  return s;
}

/* E[the largest of P ranks' pairs] where each is the sum over n tokens of
 * the picks a token's K distinct experts of E make among a rank's El: the
 * hypergeometric pmf convolved n times; the largest of P independent
 * such loads, its excess over the mean scaled by sqrt(P/(P-1)) for the
 * ranks' fixed sum, as in the normal case (the Monte Carlo test in
 * tests/test_moe.c bounds the difference). Mean at most SMALL_MEAN. */
#define SMALL_MEAN 64
static double expected_max_small(double n, double K, double E, double El,
                                 double P) {
  enum { SUP = 1024 };
  double h[65] = {0}, d[SUP + 1] = {0}, t[SUP + 1];
  int kmax = (int)fmin(fmin(K, El), 64);
  double lc = lgamma(E + 1) - lgamma(K + 1) - lgamma(E - K + 1);
  for (int j = 0; j <= kmax; j++)
    if (K - j <= E - El)
      h[j] = exp(lgamma(El + 1) - lgamma(j + 1) - lgamma(El - j + 1) +
                 lgamma(E - El + 1) - lgamma(K - j + 1) -
                 lgamma(E - El - K + j + 1) - lc);
  d[0] = 1;
  int top = 0;
  for (double i = 0; i < n; i++) {
    int nt = top + kmax > SUP ? SUP : top + kmax;
    for (int x = 0; x <= nt; x++) {
      double v = 0;
      for (int j = 0; j <= kmax && j <= x; j++)
        if (x - j <= top)
          v += d[x - j] * h[j];
      t[x] = v;
    }
    /* drop the far tail */
    while (nt > 0 && t[nt] < 1e-18)
      nt--;
    memcpy(d, t, (size_t)(nt + 1) * sizeof *d);
    top = nt;
  }
  double cdf = 0, emax = 0, mean = n * K * El / E;
  for (int x = 0; x <= top; x++) {
    cdf += d[x];
    emax += 1 - pow(fmin(1, cdf), P);
  }
  return mean + (emax - mean) * sqrt(P / (P - 1));
}

/* The q-quantile of Binomial(n, p): exact for small means (the pmf summed
 * in logs), normal with continuity correction beyond. */
static double binomial_quantile(double n, double p, double q) {
  double mean = n * p;
  if (p <= 0)
    return 0;
  if (p >= 1)
    return n;
  if (mean > 200) {
    /* inverse normal by bisection on erfc; plan after plan asks for the
     * same quantiles: each thread keeps those it found (by q) */
    static _Thread_local struct {
      double q, z;
    } seen[256];
    uint64_t bits;
    memcpy(&bits, &q, sizeof bits);
    size_t h = (size_t)((bits * 0x9E3779B97F4A7C15ull) >> 56);
    if (!(seen[h].q == q && q > 0)) {
      double lo = -10, hi = 10;
      for (int i = 0; i < 80; i++) {
        double mid = 0.5 * (lo + hi);
        if (0.5 * erfc(-mid / sqrt(2)) < q)
          lo = mid;
        else
          hi = mid;
      }
      seen[h].z = 0.5 * (lo + hi);
      seen[h].q = q;
    }
    double x = floor(mean + seen[h].z * sqrt(mean * (1 - p)) + 0.5);
    return fmin(n, fmax(0, x));
  }
  double cdf = 0, lp = log(p), lq = log1p(-p);
  for (double k = 0; k <= n; k++) {
    double lpmf = lgamma(n + 1) - lgamma(k + 1) - lgamma(n - k + 1) +
                  k * lp + (n - k) * lq;
    cdf += exp(lpmf);
    if (cdf >= q)
      return k;
  }
  return n;
}

static int by_rows_desc(const void *a, const void *b) {
  double x = ((const xs__moe_expert *)a)->rows,
         y = ((const xs__moe_expert *)b)->rows;
  return (x < y) - (x > y);
}

/* The expected number of distinct off-rank destination ranks of one token:
 * it picks K distinct experts of E, E/P on each rank; a rank is missed
 * with probability C(E - E/P, K) / C(E, K). */
static double offrank_destinations(double E, double K, double P) {
  double miss = 1, el = E / P;
  for (double i = 0; i < K; i++)
    miss *= fmax(0, E - el - i) / (E - i);
  return (P - 1) * (1 - miss);
}

xs_status xs__moe_wl_build(const xs_moe_config *c, double sms,
                           xs__moe_wl *wl, xs_error *err) {
  xs_status st = xs_moe_config_check(c, err);
  if (st)
    return st;
  memset(wl, 0, sizeof *wl);
  wl->c = c;
  wl->S = sms;
  wl->T = c->tokens;
  wl->H = c->hidden;
  wl->I = c->intermediate;
  wl->E = c->experts;
  wl->K = c->topk;
  wl->P = c->ep;
  wl->El = c->experts / c->ep;
  wl->offrank = (c->ep - 1) / c->ep;
  wl->a2a_dest = offrank_destinations(c->experts, c->topk, c->ep);
  /* A token's K picks that land on one rank are hypergeometric (K draws of
   * E, E/P of them the rank's); the rank's pairs sum T*P tokens' of them.
   * The ranks' loads sum to T*P*K, so they are exchangeable normals of
   * correlation -1/(P-1): the busiest is mean + sigma sqrt(P/(P-1)) z_P,
   * z_P the expected largest of P standard normals. */
  double n = wl->T * wl->P, f = wl->El / wl->E;
  double var_tok = wl->K * f * (1 - f) * (wl->E - wl->K) / fmax(1, wl->E - 1);
  double sigma = sqrt(n * var_tok);
  wl->mean_pairs = wl->T * wl->K;
  double busiest = wl->mean_pairs +
                   (wl->P > 1 ? sigma * sqrt(wl->P / (wl->P - 1)) *
                                    expected_max_normal(wl->P)
                              : 0);
  /* a few pairs per rank: the normal misses the discrete tail; the
   * largest of P loads from the load's own distribution instead */
  if (wl->P > 1 && wl->mean_pairs <= SMALL_MEAN)
    busiest = expected_max_small(n, wl->K, wl->E, wl->El, wl->P);
  wl->pairs = round(fmin(busiest, n * fmin(wl->K, wl->El)) * c->imbalance);
  /* given the rank's pairs, each of its experts gets about
   * Binomial(pairs, 1/E_local) of them (a token's K picks are distinct,
   * so at most one each); the experts at evenly spaced quantiles of it,
   * scaled to the pairs */
  size_t ne = (size_t)wl->El, ns = (size_t)c->shared_experts;
  wl->experts = calloc(ne + ns + 1, sizeof *wl->experts);
  if (!wl->experts)
    return xs__fail(err, XS_NOMEM, "out of memory");
  wl->nshared = ns;
  wl->nexperts = ne + ns;
  for (size_t i = 0; i < ns; i++) {
    wl->experts[i].rows = wl->T;
    wl->experts[i].local = 1;
  }
  double sum = 0;
  for (size_t i = 0; i < ne; i++) {
    double q = ((double)(ne - i) - 0.5) / (double)ne; /* largest first */
    wl->experts[ns + i].rows = binomial_quantile(wl->pairs, 1 / wl->El, q);
    sum += wl->experts[ns + i].rows;
  }
  /* scale to the pairs, then hand out what rounding left, largest first */
  double scale = sum > 0 ? wl->pairs / sum : 0, given = 0;
  for (size_t i = 0; i < ne; i++) {
    double r = sum > 0 ? floor(wl->experts[ns + i].rows * scale)
                       : (i < (size_t)wl->pairs ? 1 : 0);
    wl->experts[ns + i].rows = r;
    given += r;
  }
  for (size_t i = 0; given < wl->pairs && ne; i = (i + 1) % ne) {
    wl->experts[ns + i].rows += 1;
    given += 1;
  }
  qsort(wl->experts + ns, ne, sizeof *wl->experts, by_rows_desc);
  double touched = 0;
  for (size_t i = 0; i < ne; i++)
    touched += wl->experts[ns + i].rows > 0;
  /* the quantiles' count of touched experts is coarse when they hold a
   * row or two: as many as expected, E_local (1 - (1 - 1/E_local)^pairs),
   * a row moved from the largest expert to each untouched one short */
  double want = fmin(round(wl->El * -expm1(wl->pairs * log1p(-1 / wl->El))),
                     wl->pairs);
  for (size_t i = (size_t)touched; touched < want && i < ne; i++) {
    size_t big = 0;
    for (size_t j = 1; j < ne; j++)
      if (wl->experts[ns + j].rows > wl->experts[ns + big].rows)
        big = j;
    if (wl->experts[ns + big].rows < 2)
      break;
    wl->experts[ns + big].rows -= 1;
    wl->experts[ns + i].rows = 1;
    touched += 1;
  }
  qsort(wl->experts + ns, ne, sizeof *wl->experts, by_rows_desc);
  wl->touched = touched;
  return XS_OK;
}

void xs__moe_wl_free(xs__moe_wl *wl) {
  free(wl->experts);
  wl->experts = NULL;
}

xs_status xs__moe_blocks(const xs__moe_wl *wl, double block_m, double align,
                         xs__moe_block **out, size_t *n, xs_error *err) {
  *out = NULL;
  *n = 0;
  double count = 0;
  for (size_t e = 0; e < wl->nexperts; e++) {
    double r = wl->experts[e].rows;
    if (align > 0)
      r = ceil(r / align) * align;
    count += ceil(r / block_m);
  }
  if (count * (ceil(2 * wl->I / 128) + ceil(wl->H / 128)) > XS_MOE_MAX_TILES)
    return xs__fail(err, XS_INVALID,
                    "%.3g token blocks of %g rows: more than the planner's "
                    "limit of %g GEMM tiles, about 4 s of planning (fewer "
                    "tokens or a larger block_m)",
                    count, block_m, XS_MOE_MAX_TILES);
  xs__moe_block *b = malloc(((size_t)count + 1) * sizeof *b);
  if (!b)
    return xs__fail(err, XS_NOMEM, "out of memory");
  size_t k = 0;
  double end = 0;
  for (size_t e = 0; e < wl->nexperts; e++) {
    double valid = wl->experts[e].rows;
    double r = align > 0 ? ceil(valid / align) * align : valid;
    for (double r0 = 0; r0 < r; r0 += block_m) {
      /* a padded block computes but carries no token */
      double v = fmax(0, fmin(block_m, valid - r0));
      end += v;
      b[k].expert = (uint32_t)e;
      b[k].rows = fmin(block_m, r - r0);
      b[k].valid = v;
      b[k].row_end = end;
      b[k].first = r0 == 0;
      k++;
    }
  }
  *out = b;
  *n = k;
  return XS_OK;
}
