/*
 * kernel.c: the attention kernel of one ring step: its tiles, pipeline and
 * residency from the kernels' source, its throughput from published
 * microbenchmarks (the profile's attn_* figures), and the time each SM is
 * busy with one call (docs/plan-flashattn.md "Attention kernel").
 *
 * Tiles and residency (head dim 128): FlashAttention-2's forward kernel
 * takes 128 x 64 tiles with 4 warps, two CTAs an SM
 * (Dao-AILab/flash-attention, flash_fwd_launch_template.h,
 * run_mha_fwd_hdim128), and prefetches the next K tile while it computes
 * (two stages). FlashAttention-3 is persistent, one CTA an SM, 128 x 176
 * tiles for a full mask and 128 x 128 for a causal one (hopper/
 * tile_size.h), a two-stage K/V pipeline (kStages = 2,
 * hopper/flash_fwd_launch_template.h). FlashAttention-4 is persistent, one
 * CTA an SM, 128 x 128 tiles with two Q tiles a CTA (q_stage 2: 256 query
 * rows) and three K/V stages at head dim 128 ((224 KB - Q and O) / 32 KB,
 * flash_attn/cute/flash_fwd_sm100.py and interface.py).
 */
#include "plan/attention/attention.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>


#define BWD_FLOPS 3.5 /* forward and backward: 3.5 forwards of FLOPs     */
#define SIM_CTAS 200000 /* causal calls simulated CTA by CTA up to       */

static void shape(const char *kernel, double d, int causal, xs__fa_kfig *k) {
  if (!strcmp(kernel, "fa3")) {
    k->bm = d <= 64 ? 192 : 128;
    k->bn = d <= 64 ? (causal ? 128 : 192) : d <= 128 ? (causal ? 128 : 176) : 80;
    k->per_sm = 1;
    k->stages = 2;
  } else if (!strcmp(kernel, "fa4")) {
    k->bm = 256;
    k->bn = 128;
    k->per_sm = 1;
    k->stages = 3;
  } else {
    k->bm = 128;
    k->bn = d <= 64 ? 128 : 64;
    k->per_sm = d <= 128 ? 2 : 1;
    k->stages = 2;
  }
}

xs_status xs__fa_kernel_figures(const xs_fa_config *c, const xs_profile *prof,
                                int backward, xs__fa_kfig *k, xs_error *err) {
  char key[32], dkey[64];
  snprintf(key, sizeof key, "%s%s", c->kernel, backward ? "_fwd_bwd" : "");
  snprintf(dkey, sizeof dkey, "%s_d%g", key, c->head_dim);
  memset(k, 0, sizeof *k);
  if (backward) {
    /* the backward alone: what forward and backward take beyond the
     * forward, per forward FLOP (1/F_b = 3.5/F_fb - 1/F_f, the per-CTA
     * costs likewise); without the pair's figures, 2.5 forwards of FLOPs
     * at the forward's rate (a lead) */
    xs__fa_kfig f;
    xs_status st = xs__fa_kernel_figures(c, prof, 0, &f, err);
    if (st)
      return st;
    *k = f;
    double Ffb = xs_profile_attn(prof, XS_ATTN_FLOPS, key);
    if (f.measured && Ffb > 0 && BWD_FLOPS / Ffb > 1 / f.F * 1.0001) {
      k->F = 1 / (BWD_FLOPS / Ffb - 1 / f.F);
      snprintf(k->key, sizeof k->key, "%s", key);
      k->cta_s = fmax(0, xs_profile_attn(prof, XS_ATTN_CTA_S, key) - f.cta_s);
      double ce = xs_profile_attn(prof, XS_ATTN_CAUSAL_EFFICIENCY, key);
      k->ceff = ce > 0 ? ce : 1;
    } else {
      k->F = f.F / (BWD_FLOPS - 1);
      k->measured = 0;
      k->key[0] = 0;
    }
    return XS_OK;
  }
  /* a head dim's own figures when the profile has them */
  const char *use = xs_profile_attn(prof, XS_ATTN_FLOPS, dkey) > 0 ? dkey : key;
  double F = xs_profile_attn(prof, XS_ATTN_FLOPS, use);
  k->measured = F > 0;
  if (k->measured) {
    snprintf(k->key, sizeof k->key, "%s", use);
    k->cta_s = xs_profile_attn(prof, XS_ATTN_CTA_S, use);
    k->ceff = xs_profile_attn(prof, XS_ATTN_CAUSAL_EFFICIENCY, use);
  } else {
    F = xs_profile_flops_per_s(prof, c->dtype) * xs_profile_efficiency(prof);
    if (!(F > 0))
      return xs__fail(err, XS_INVALID,
                      "profile \"%s\" has neither attn_flops_per_s.%s nor FLOP/s "
                      "for dtype \"%s\" with an efficiency: the planner needs the "
                      "kernel's throughput (see docs/profiles.md)",
                      xs_profile_name(prof), key, c->dtype);
  }
  k->F = F;
  k->gpu_sms = xs_profile_sms(prof);
  if (!(k->gpu_sms > 0))
    return xs__fail(err, XS_INVALID, "profile \"%s\" has no compute section with "
                    "its SMs (see xstage profiles show)", xs_profile_name(prof));
  if (!(k->ceff > 0))
    k->ceff = 1;
  shape(c->kernel, c->head_dim, 0, k);
  if (c->block_m > 0)
    k->bm = c->block_m;
  if (c->block_n > 0)
    k->bn = c->block_n;
  return XS_OK;
}

/* slot finish times as a binary min-heap of (time, slot) */
typedef struct {
  double t;
  size_t slot;
} slot_t;

static void sift_down(slot_t *h, size_t n, size_t i) {
  for (;;) {
    size_t l = 2 * i + 1, m = i;
    if (l < n && h[l].t < h[m].t)
      m = l;
    if (l + 1 < n && h[l + 1].t < h[m].t)
      m = l + 1;
    if (m == i)
      return;
    slot_t t = h[i];
    h[i] = h[m];
    h[m] = t;
    i = m;
  }
}

static int by_time_desc(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x < y) - (x > y);
}

/* SM busy times (n of them, any order) into fixed groups of SMs: sorted
 * latest first, XS__FA_CLASSES groups of (nearly) equal size, each at
 * its latest SM's time. Every call on the same number of SMs has the same
 * groups, so a program's workers stand for the same SMs at every step. */
static void classes(double *t, size_t n, xs__fa_kcall *out) {
  qsort(t, n, sizeof *t, by_time_desc);
  out->end = t[0];
  out->n = 0;
  size_t G = n < XS__FA_CLASSES ? n : XS__FA_CLASSES;
  for (size_t g = 0; g < G; g++) {
    size_t lo = n * g / G, hi = n * (g + 1) / G;
    out->time[out->n] = t[lo];
    out->sms[out->n++] = (double)(hi - lo);
  }
}

/* One kernel call: a CTA takes one Q tile of one head and loops over its
 * KV tiles; an SM holds per_sm CTAs, each progressing at 1/per_sm of the
 * SM's rate. CTAs go head by head, the longest first within a head (as
 * FlashAttention-2 orders its grid and the persistent kernels' LPT
 * schedulers do), each to the slot that frees first; a causal call is
 * slowed by the causal efficiency. */
xs_status xs__fa_kernel_call(const xs_fa_config *c, const xs__fa_kfig *kin,
                             double sms, double lq, double lk, int causal,
                             xs__fa_kcall *out, xs_error *err) {
  memset(out, 0, sizeof *out);
  if (lq <= 0 || lk <= 0)
    return XS_OK;
  xs__fa_kfig k = *kin;
  shape(c->kernel, c->head_dim, causal, &k);
  if (c->block_m > 0)
    k.bm = c->block_m;
  if (c->block_n > 0)
    k.bn = c->block_n;
  double qt = ceil(lq / k.bm), nk = ceil(lk / k.bn);
  /* the profile's rate is for its whole GPU: one SM's share of it */
  double tile = 4 * k.bm * k.bn * c->head_dim / (k.F / k.gpu_sms);
  double ctas = c->batch * c->heads_q * qt, slots = k.per_sm * sms;
  double eff = causal ? k.ceff : 1;
  out->iter_s = k.per_sm * tile / eff;
  size_t n = (size_t)sms;
  double *t = calloc(n ? n : 1, sizeof *t);
  if (!t)
    return xs__fail(err, XS_NOMEM, "out of memory");
  if (!causal) {
    /* equal CTAs: the first r slots take one more */
    double q = floor(ctas / slots), r = ctas - q * slots;
    double one = k.per_sm * (nk * tile + k.cta_s);
    for (size_t s = 0; s < (size_t)slots; s++) {
      double v = (q + ((double)s < r)) * one;
      size_t sm = s % n;
      t[sm] = fmax(t[sm], v);
    }
  } else if (ctas > SIM_CTAS) {
    /* many waves: the work over the SMs, or the longest CTA */
    double its = 0;
    for (double i = 0; i < qt; i++)
      its += fmin(nk, ceil((i + 1) * k.bm / k.bn));
    double total = c->batch * c->heads_q * (its * tile + qt * k.cta_s);
    double v = fmax(total / sms, k.per_sm * (nk * tile + k.cta_s)) / eff;
    for (size_t s = 0; s < n; s++)
      t[s] = v;
  } else {
    size_t ns = (size_t)slots;
    slot_t *h = calloc(ns, sizeof *h);
    if (!h) {
      free(t);
      return xs__fail(err, XS_NOMEM, "out of memory");
    }
    for (size_t s = 0; s < ns; s++)
      h[s].slot = s;
    for (double g = 0; g < c->batch * c->heads_q; g++)
      for (double i = qt - 1; i >= 0; i--) {
        double it = fmin(nk, ceil((i + 1) * k.bm / k.bn));
        h[0].t += k.per_sm * (it * tile + k.cta_s);
        sift_down(h, ns, 0);
      }
    for (size_t s = 0; s < ns; s++) {
      size_t sm = h[s].slot % n;
      t[sm] = fmax(t[sm], h[s].t / eff);
    }
    free(h);
  }
  classes(t, n, out);
  free(t);
  return XS_OK;
}
