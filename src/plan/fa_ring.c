/*
 * fa_ring.c: the ring attention kernel model (docs/plan-flashattn.md
 * "Kernel model"). The attention kernel's time from its tiles and waves at
 * the profile's measured throughput for that kernel; per step, the busiest
 * rank's kernel under the causal layout, the merge of partial outputs by
 * log-sum-exp, the ring's own fixed cost; the KV forward through the
 * profile's channel under burstgap, by the chosen path.
 *
 * The merge's bytes follow ring-flash-attention's update_out_and_lse
 * (zhuzilin/ring-flash-attention, utils.py): the block output converted
 * to FP32 (2 B read, 4 B written), out - block_out (8, 4), times the
 * sigmoid of the LSE difference (4, 4), subtracted from out (8, 4): 38
 * bytes an output element, each an unfused elementwise kernel; 6 bytes at
 * the first step (the conversion) and at the end (back to BF16).
 */
#include "formats/jsonutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const layout_names[XS_FA_LAYOUTS] = {"contiguous", "zigzag",
                                                        "stripe"};
static const char *const path_names[XS_FA_PATHS] = {
    "local", "sequential", "dedicated-stream", "dedicated-sms", "piggyback"};

const char *xs_fa_layout_name(xs_fa_layout l) {
  return (unsigned)l < XS_FA_LAYOUTS ? layout_names[l] : NULL;
}
int xs_fa_layout_from_name(const char *n) {
  return xs__name_index(layout_names, XS_FA_LAYOUTS, n);
}
const char *xs_fa_path_name(xs_fa_path p) {
  return (unsigned)p < XS_FA_PATHS ? path_names[p] : NULL;
}
int xs_fa_path_from_name(const char *n) {
  return xs__name_index(path_names, XS_FA_PATHS, n);
}

#define MERGE_B 38.0  /* bytes an output element, one merge           */
#define CONVERT_B 6.0 /* a conversion between BF16 and FP32             */
#define GRAD_B 10.0   /* backward: accumulating a BF16 block gradient
                         into FP32 (read 2 + 4, write 4)                */
#define BWD_FLOPS 3.5 /* forward and backward: 3.5 forwards of FLOPs    */

typedef struct {
  double F, cta_s, ceff; /* forward-equivalent FLOP/s, per CTA, causal  */
  double sms, bm, bn, d, heads, batch;
  double per_sm;         /* CTAs resident on an SM, sharing it          */
} kmodel;

/* Tiles and residency of the kernels, from their sources (head dim 128):
 * FlashAttention-2's forward kernel on SM80 and SM90 takes 128 x 64 tiles
 * with 4 warps, and two CTAs fit an SM (Dao-AILab/flash-attention,
 * flash_fwd_launch_template.h, run_mha_fwd_hdim128); FlashAttention-3 and
 * -4 are persistent, one CTA an SM, 128 x 128 tiles here. */
static void kernel_shape(const char *kernel, kmodel *k) {
  int fa2 = !strcmp(kernel, "fa2");
  k->bm = 128;
  k->bn = fa2 ? 64 : 128;
  k->per_sm = fa2 ? 2 : 1;
}

static xs_status kernel_model(const xs_fa_config *c, const xs_profile *prof,
                              double sms, kmodel *k, xs_error *err) {
  char key[24];
  snprintf(key, sizeof key, "%s%s", c->kernel, c->backward ? "_fwd_bwd" : "");
  double F = xs_profile_attn(prof, XS_ATTN_FLOPS, key);
  if (!(F > 0))
    return xs__fail(err, XS_INVALID,
                    "profile \"%s\" has no attn_flops_per_s.%s: the ring "
                    "model needs the kernel's measured throughput (see docs/"
                    "profiles.md)", xs_profile_name(prof), key);
  memset(k, 0, sizeof *k);
  k->F = F / (c->backward ? BWD_FLOPS : 1);
  k->cta_s = xs_profile_attn(prof, XS_ATTN_CTA_S, key);
  k->ceff = xs_profile_attn(prof, XS_ATTN_CAUSAL_EFFICIENCY, key);
  if (!(k->ceff > 0))
    k->ceff = 1;
  k->sms = sms;
  kernel_shape(c->kernel, k);
  k->d = c->head_dim;
  k->heads = c->heads_q;
  k->batch = c->batch;
  return XS_OK;
}

/* slot finish times as a binary min-heap */
static void sift_down(double *h, size_t n, size_t i) {
  for (;;) {
    size_t l = 2 * i + 1, m = i;
    if (l < n && h[l] < h[m])
      m = l;
    if (l + 1 < n && h[l + 1] < h[m])
      m = l + 1;
    if (m == i)
      return;
    double t = h[i];
    h[i] = h[m];
    h[m] = t;
    i = m;
  }
}

#define SIM_CTAS 200000 /* causal schedules simulated CTA by CTA up to */

/* One kernel call: lq queries against lk keys, causal (the diagonal
 * square) or full. A CTA takes one Q tile of one head and loops over its
 * KV tiles; an SM holds per_sm CTAs, each progressing at 1/per_sm of the
 * SM's rate. Full: every CTA alike, in waves of per_sm x SMs. Causal: Q
 * tile i loops over min(n_kv, i + 1) tiles; the CTAs are dispatched head
 * by head, the longest first within a head (as FlashAttention-2 orders
 * its grid), each to the slot that frees first; the time is the last
 * slot's, over the causal efficiency. */
static double kernel_s(const kmodel *k, double lq, double lk, int causal) {
  if (lq <= 0 || lk <= 0)
    return 0;
  double qt = ceil(lq / k->bm), nk = ceil(lk / k->bn);
  double tile = 4 * k->bm * k->bn * k->d / (k->F / k->sms);
  double ctas = k->batch * k->heads * qt, slots = k->per_sm * k->sms;
  if (!causal)
    return ceil(ctas / slots) * k->per_sm * (nk * tile + k->cta_s);
  double *h = ctas <= SIM_CTAS ? calloc((size_t)slots, sizeof *h) : NULL;
  if (!h) { /* many waves: the work over the slots, or the longest CTA */
    double its = 0;
    for (double i = 0; i < qt; i++)
      its += fmin(nk, ceil((i + 1) * k->bm / k->bn));
    double total = k->batch * k->heads * (its * tile + qt * k->cta_s);
    return fmax(total / k->sms, k->per_sm * (nk * tile + k->cta_s)) / k->ceff;
  }
  size_t n = (size_t)slots;
  for (double g = 0; g < k->batch * k->heads; g++)
    for (double i = qt - 1; i >= 0; i--) {
      double it = fmin(nk, ceil((i + 1) * k->bm / k->bn));
      h[0] += k->per_sm * (it * tile + k->cta_s);
      sift_down(h, n, 0);
    }
  double end = 0;
  for (size_t i = 0; i < n; i++)
    end = fmax(end, h[i]);
  free(h);
  return end / k->ceff;
}

/* The steps of a ring on its busiest rank */
typedef struct {
  size_t n;
  double *c, *mean, *merge, *bytes; /* kernel, ranks' mean, merge, sent */
  double *stream; /* dedicated-stream: the kernel's time lost to the SMs
                     the communication kernel holds while it runs      */
  double fixed, last_merge;
} ring;

static void ring_free(ring *r) {
  free(r->c);
  free(r->mean);
  free(r->merge);
  free(r->bytes);
  free(r->stream);
}

static xs_status build_ring(const xs_fa_config *c, const xs_profile *prof,
                            const kmodel *k, ring *r, xs_error *err) {
  memset(r, 0, sizeof *r);
  size_t P = (size_t)c->cp;
  r->n = P;
  r->c = calloc(P, sizeof *r->c);
  r->mean = calloc(P, sizeof *r->mean);
  r->merge = calloc(P, sizeof *r->merge);
  r->bytes = calloc(P, sizeof *r->bytes);
  r->stream = calloc(P, sizeof *r->stream);
  if (!r->c || !r->mean || !r->merge || !r->bytes || !r->stream) {
    ring_free(r);
    return xs__fail(err, XS_NOMEM, "out of memory");
  }
  double S = c->seq, h = S / 2;
  xs_kernel_costs kc;
  xs_profile_kernel_costs(prof, &kc);
  double bw = xs_profile_hbm_Bps(prof) * (kc.copy_efficiency > 0 ? kc.copy_efficiency : 1);
  double out_el = c->batch * S * c->heads_q * c->head_dim;
  double kv_el = c->batch * S * c->heads_kv * c->head_dim;
  double kv_B = 2 * kv_el * c->bytes;
  double drain = xs_profile_channel(prof, xs_profile_default_channel(prof))->drain_Bps;
  /* the kernels a step can run, each timed once */
  double k_full = kernel_s(k, S, S, 0), k_causal = c->causal ? kernel_s(k, S, S, 1) : 0;
  double k_a = c->causal && c->layout == XS_FA_ZIGZAG ? kernel_s(k, S, h, 0) : 0;
  double k_b = c->causal && c->layout == XS_FA_ZIGZAG ? kernel_s(k, h, S, 0) : 0;
  for (size_t s = 0; s < P; s++) {
    double mq = 1; /* share of the output this step merges */
    if (!c->causal) {
      r->c[s] = r->mean[s] = k_full;
    } else if (s == 0 || c->layout == XS_FA_STRIPE) {
      /* own block (and, striped, every block): a causal square */
      r->c[s] = r->mean[s] = k_causal;
    } else if (c->layout == XS_FA_CONTIGUOUS) {
      /* step s: ranks r >= s hold an earlier block (full), the others a
       * later one (masked, skipped) */
      r->c[s] = k_full;
      r->mean[s] = r->c[s] * (double)(P - s) / (double)P;
    } else {
      /* zigzag: an earlier rank's block: all queries against its first
       * half; a later one's: the second half of the queries against all */
      double a = k_a, b = k_b;
      double early = (double)(P - s) / (double)P; /* ranks with j < r */
      /* the busier of the two kinds of rank: an early block merges the
       * whole output, a late one half of it */
      int first = a + MERGE_B * out_el / bw >= b + MERGE_B * out_el / 2 / bw;
      r->c[s] = first ? a : b;
      r->mean[s] = early * a + (1 - early) * b;
      mq = first ? 1 : 0.5;
    }
    /* the first step only converts its output; a backward step also
     * accumulates dQ and the dK, dV it carries */
    double m = s == 0 ? CONVERT_B * out_el : MERGE_B * out_el * mq;
    if (c->backward)
      m += GRAD_B * (out_el + 2 * kv_el);
    r->merge[s] = m / bw;
    /* the next block; forward and backward send it in both passes, and
     * the backward pass dK and dV in FP32 too */
    r->bytes[s] = s + 1 < P ? (c->backward ? 2 * kv_B + 2 * kv_el * 4 : kv_B) : 0;
    /* a communication kernel on its own stream holds comm_sms SMs while
     * its bytes drain: the kernel beside it loses their share */
    if (kc.comm_sms > 0 && kc.comm_sms < k->sms && r->c[s] > 0) {
      double comm = r->bytes[s] / drain;
      r->stream[s] = r->c[s] * kc.comm_sms / (k->sms - kc.comm_sms) *
                     fmin(1, comm / r->c[s]);
    }
  }
  r->last_merge = CONVERT_B * out_el * (c->backward ? 2 : 1) / bw;
  r->fixed = kc.ring_step_s;
  return XS_OK;
}

/* the program of one path; k_sms and spread its choice */
static xs_status ring_program(const ring *r, xs_fa_path path, double slow,
                              unsigned spread, xs_program **out,
                              xs_error *err) {
  xs_program *p = xs_program_new("ring");
  if (!p)
    return xs__fail(err, XS_NOMEM, "out of memory");
  size_t w, cw = 0, prev = 0, start;
  xs_status st = xs_program_add_worker(p, "rank", &w, err);
  if (!st && (path == XS_FA_PATH_STREAM || path == XS_FA_PATH_SMS))
    st = xs_program_add_worker(p, "comm", &cw, err);
  for (size_t s = 0; s < r->n && !st; s++) {
    double step = r->c[s] * slow + r->merge[s] + r->fixed +
                  (path == XS_FA_PATH_STREAM ? r->stream[s] : 0);
    int fwd = r->bytes[s] > 0;
    switch (path) {
    case XS_FA_PATH_SEQUENTIAL:
      if (!(st = xs_program_compute(p, w, step, err)) && fwd &&
          !(st = xs_program_send(p, w, r->bytes[s], NULL, NULL, NULL, err)))
        st = xs_program_fence(p, w, err);
      break;
    case XS_FA_PATH_STREAM:
    case XS_FA_PATH_SMS:
      /* the send is posted at the step's start (a signal to the comm
       * worker), the receive waited on at its end */
      if (fwd && !(st = xs_program_send(p, w, 0, NULL, NULL, &start, err)) &&
          !(st = xs_program_wait_send(p, cw, start, err)))
        st = xs_program_send(p, cw, r->bytes[s], NULL, NULL, &prev, err);
      if (!st)
        st = xs_program_compute(p, w, step, err);
      if (!st && fwd)
        st = xs_program_wait_send(p, w, prev, err);
      break;
    case XS_FA_PATH_PIGGYBACK: {
      /* the kernel's CTAs store the block they loaded, in `spread` pieces
       * over the kernel; the merge waits for none of it */
      unsigned n = fwd ? (spread ? spread : 1) : 1;
      for (unsigned i = 0; i < n && !st; i++) {
        st = xs_program_compute(p, w, r->c[s] / n, err);
        if (!st && fwd)
          st = xs_program_send(p, w, r->bytes[s] / n, NULL, NULL, &prev, err);
      }
      if (!st)
        st = xs_program_compute(p, w, r->merge[s] + r->fixed, err);
      if (!st && fwd)
        st = xs_program_wait_send(p, w, prev, err);
      break;
    }
    default:
      st = xs__fail(err, XS_INVALID, "unknown path %d", (int)path);
    }
  }
  if (!st)
    st = xs_program_compute(p, w, r->last_merge, err);
  if (!st)
    st = xs_program_finish(p, err);
  if (st) {
    xs_program_free(p);
    return st;
  }
  *out = p;
  return XS_OK;
}

static xs_status evaluate(const xs_program *p, const xs_profile *prof,
                          double *t, xs_error *err) {
  xs_eval_options o = {0, 1, NULL, NULL};
  xs_result *r;
  xs_status st = xs_evaluate(p, prof, XS_MODEL_BURSTGAP, &o, &r, err);
  if (!st)
    *t = r->makespan_s;
  xs_result_free(r);
  return st;
}

/* the profile for k forwarding SMs: the comm worker issues at k SMs'
 * share of the injection rate, and at most k times one SM's own rate */
static xs_status with_sms(const xs_profile *prof, double sms, unsigned k,
                          xs_profile **out, xs_error *err) {
  *out = NULL;
  char *text = xs_profile_to_json(prof);
  if (!text)
    return xs__fail(err, XS_NOMEM, "out of memory");
  xs_status st = xs_profile_parse(text, strlen(text), NULL, out, err);
  free(text);
  if (st)
    return st;
  for (size_t i = 0; i < xs_profile_channel_count(*out); i++) {
    xs_channel *ch = xs__profile_channel_mut(*out, i);
    ch->worker_inject_Bps = fmin(ch->worker_inject_Bps * k, ch->inject_Bps * k / sms);
  }
  return XS_OK;
}

xs_status xs_fa_predict(const xs_fa_config *c, const xs_profile *prof,
                        xs_fa_path path, double *time_s, xs_fa_breakdown *bd,
                        xs_error *err) {
  xs_fa_breakdown scratch;
  if (!bd)
    bd = &scratch;
  memset(bd, 0, sizeof *bd);
  xs_status st = xs_fa_config_check(c, err);
  if (st)
    return st;
  if ((unsigned)path >= XS_FA_PATHS)
    return xs__fail(err, XS_INVALID, "unknown path %d", (int)path);
  if (path != XS_FA_LOCAL && !xs_profile_channel_count(prof))
    return xs__fail(err, XS_INVALID, "profile \"%s\" has no channel to forward "
                    "the KV blocks on", xs_profile_name(prof));
  double sms = c->sms > 0 ? c->sms : xs_profile_sms(prof);
  if (!(sms > 0))
    return xs__fail(err, XS_INVALID, "profile \"%s\" has no compute section",
                    xs_profile_name(prof));
  kmodel k;
  if ((st = kernel_model(c, prof, sms, &k, err)))
    return st;
  if (path == XS_FA_LOCAL) {
    bd->compute_s = kernel_s(&k, c->seq, c->seq, c->causal);
    bd->bound = "compute";
    if (time_s)
      *time_s = bd->compute_s;
    return XS_OK;
  }
  ring r;
  if ((st = build_ring(c, prof, &k, &r, err)))
    return st;
  double best = INFINITY;
  static const unsigned ks[] = {1, 2, 4, 8, 16, 32};
  static const unsigned spreads[] = {1, 2, 4, 8, 16};
  size_t nchoice = path == XS_FA_PATH_SMS ? 6 : path == XS_FA_PATH_PIGGYBACK ? 5 : 1;
  for (size_t i = 0; i < nchoice && !st; i++) {
    unsigned kk = path == XS_FA_PATH_SMS ? ks[i] : 0;
    unsigned sp = path == XS_FA_PATH_PIGGYBACK ? spreads[i] : 0;
    if (kk >= sms)
      continue;
    double slow = kk ? sms / (sms - kk) : 1, t = 0;
    xs_program *p = NULL;
    xs_profile *q = NULL;
    /* the sending worker stands for kk SMs, or for the whole GPU */
    if ((st = with_sms(prof, sms, kk ? kk : (unsigned)sms, &q, err)))
      break;
    if (!(st = ring_program(&r, path, slow, sp, &p, err)))
      st = evaluate(p, q, &t, err);
    xs_program_free(p);
    xs_profile_free(q);
    if (!st && t < best) {
      best = t;
      bd->forward_sms = kk;
      bd->spread = sp;
      double slowed = kk ? sms / (sms - kk) : 1;
      bd->compute_s = bd->merge_s = bd->imbalance_s = 0;
      for (size_t s = 0; s < r.n; s++) {
        bd->compute_s += r.c[s] * slowed + (path == XS_FA_PATH_STREAM ? r.stream[s] : 0);
        bd->imbalance_s += (r.c[s] - r.mean[s]) * slowed;
        bd->merge_s += r.merge[s];
      }
      bd->merge_s += r.last_merge;
      bd->fixed_s = r.fixed * (double)r.n;
      bd->exposed_s = fmax(0, t - bd->compute_s - bd->merge_s - bd->fixed_s);
    }
  }
  ring_free(&r);
  if (st)
    return st;
  if (isinf(best))
    return xs__fail(err, XS_INVALID, "%g SMs: dedicated-sms needs one to forward and "
                    "one to compute", sms);
  const char *names[4] = {"compute", "merge", "fixed", "exposed"};
  double v[4] = {bd->compute_s, bd->merge_s, bd->fixed_s, bd->exposed_s};
  int b = 0;
  for (int i = 1; i < 4; i++)
    if (v[i] > v[b])
      b = i;
  bd->bound = names[b];
  if (time_s)
    *time_s = best;
  return XS_OK;
}
