/*
 * ring.c: the steps of a ring on its busiest rank (docs/plan-flashattn.md
 * "Layouts"). Rank r of P holds S tokens; at step s it attends its
 * queries to the KV block that started on rank r - s and forwards that
 * block on (P - 1 forwards). Under a causal mask the layout decides what
 * each step computes: contiguous blocks give ranks after the block's
 * owner a full S x S kernel and skip the others; zigzag (chunks r and
 * 2P-1-r: ring-flash-attention's zigzag, TransformerEngine's
 * DualChunkSwap) gives every later step either all queries against the
 * first half of the keys or the second half of the queries against all
 * keys; stripe gives every step a causal S x S kernel. The step's time
 * follows its busiest rank.
 *
 * The backward (ring-flash-attention's zigzag backward) runs a second
 * ring after the forward: the same kernels' backward, K and V forwarded
 * again, and the dK, dV accumulators travelling with them in FP32, P
 * times, so they arrive home.
 */
#include "plan/attention/attention.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

xs_status xs__fa_ring_calls(const xs__fa_ring *r, double sms,
                            xs__fa_kcall out[2][XS__FA_SHAPES], xs_error *err) {
  const xs_fa_config *c = r->c;
  double S = c->seq, h = S / 2;
  const double lq[XS__FA_SHAPES] = {S, S, S, h}, lk[XS__FA_SHAPES] = {S, S, h, S};
  for (int b = 0; b < 2; b++)
    for (int sh = 0; sh < XS__FA_SHAPES; sh++) {
      memset(&out[b][sh], 0, sizeof out[b][sh]);
      if (!r->have[b][sh])
        continue;
      int causal = sh == XS__FA_CAUSAL;
      xs__fa_kcache *k = r->cache;
      size_t i = 0;
      while (k && i < k->n &&
             !(k->e[i].backward == b && k->e[i].causal == causal && k->e[i].sms == sms &&
               k->e[i].lq == lq[sh] && k->e[i].lk == lk[sh]))
        i++;
      if (k && i < k->n) {
        out[b][sh] = k->e[i].call;
        continue;
      }
      xs_status st = xs__fa_kernel_call(c, b ? &r->kb : &r->kf, sms, lq[sh], lk[sh], causal,
                                        &out[b][sh], err);
      if (st)
        return st;
      if (k && k->n < XS__FA_KCACHE) {
        k->e[k->n].backward = b;
        k->e[k->n].causal = causal;
        k->e[k->n].sms = sms;
        k->e[k->n].lq = lq[sh];
        k->e[k->n].lk = lk[sh];
        k->e[k->n++].call = out[b][sh];
      }
    }
  return XS_OK;
}

void xs__fa_ring_free(xs__fa_ring *r) {
  free(r->step);
  r->step = NULL;
  r->n = 0;
}

xs_status xs__fa_ring_build(const xs_fa_config *c, const xs_profile *prof,
                            int local, int fused, xs__fa_kcache *cache,
                            xs__fa_ring *r, xs_error *err) {
  memset(r, 0, sizeof *r);
  r->c = c;
  r->fused = fused;
  r->cache = cache;
  xs_status st = xs_fa_config_check(c, err);
  if (st)
    return st;
  r->sms = c->sms > 0 ? c->sms : xs_profile_sms(prof);
  if ((st = xs__fa_kernel_figures(c, prof, 0, &r->kf, err)))
    return st;
  if (c->backward && (st = xs__fa_kernel_figures(c, prof, 1, &r->kb, err)))
    return st;
  size_t P = local ? 1 : (size_t)c->cp, passes = c->backward ? 2 : 1;
  r->n = P * passes;
  if (!(r->step = calloc(r->n, sizeof *r->step)))
    return xs__fail(err, XS_NOMEM, "out of memory");
  double kv_el = c->batch * c->seq * c->heads_kv * c->head_dim;
  r->kv_B = 2 * kv_el * c->bytes;
  r->out_el = c->batch * c->seq * c->heads_q * c->head_dim;
  /* the way's merge of the whole output: where zigzag's two kinds of
   * rank are close, the one that merges all of it is the busier */
  xs__fa_costs t;
  xs__fa_costs_of(prof, &t);
  double merge_full = (fused ? t.fused_B : t.unfused_B) * r->out_el / t.merge_Bps;
  /* the unfused merge of half the output also copies it back: more kernels */
  double slice_s = fused ? 0 : t.slice_kernels * (t.gap_s > 0 ? t.gap_s : 0);
  /* which kernels the steps run */
  for (int b = 0; b < (int)passes; b++) {
    if (!c->causal) {
      r->have[b][XS__FA_FULL] = 1;
      continue;
    }
    r->have[b][XS__FA_CAUSAL] = 1;
    if (!local && c->layout == XS_FA_CONTIGUOUS)
      r->have[b][XS__FA_FULL] = 1;
    if (!local && c->layout == XS_FA_ZIGZAG)
      r->have[b][XS__FA_HALF_KV] = r->have[b][XS__FA_HALF_Q] = 1;
  }
  if ((st = xs__fa_ring_calls(r, r->sms, r->call, err))) {
    xs__fa_ring_free(r);
    return st;
  }
  for (size_t i = 0; i < r->n; i++) {
    xs__fa_step *s = &r->step[i];
    size_t k = i % P;
    int b = (int)(i / P);
    const xs__fa_kcall *call = r->call[b];
    s->backward = b;
    s->out_share = 1;
    s->loaded = 1;
    if (!c->causal) {
      s->shape = XS__FA_FULL;
      s->mean_s = call[XS__FA_FULL].end;
    } else if (k == 0 || c->layout == XS_FA_STRIPE) {
      /* its own block (and, striped, every block): a causal square */
      s->shape = XS__FA_CAUSAL;
      s->mean_s = call[XS__FA_CAUSAL].end;
    } else if (c->layout == XS_FA_CONTIGUOUS) {
      /* ranks after the block's owner attend to all of it, the others
       * skip it */
      s->shape = XS__FA_FULL;
      s->mean_s = call[XS__FA_FULL].end * (double)(P - k) / (double)P;
    } else {
      /* zigzag: an earlier rank's block: all queries against its first
       * half (the whole output merged, half the block loaded); a later
       * one's: the second half of the queries against all of it (half
       * the output merged). The busier of the two, kernel and merge,
       * bounds the step. A backward step accumulates the same gradients
       * on both (emit.c, merge_B): its kernel alone decides. */
      const xs__fa_kcall *a = &call[XS__FA_HALF_KV], *q = &call[XS__FA_HALF_Q];
      double early = (double)(P - k) / (double)P, m = b ? 0 : merge_full;
      int first = a->end + m >= q->end + m / 2 + (b ? 0 : slice_s);
      s->shape = first ? XS__FA_HALF_KV : XS__FA_HALF_Q;
      s->out_share = first ? 1 : 0.5;
      s->loaded = first ? 0.5 : 1;
      s->mean_s = early * a->end + (1 - early) * q->end;
    }
    if (local)
      continue;
    if (!b) {
      /* the forward: the block goes on after every step but the last */
      s->send_B = k + 1 < P ? r->kv_B : 0;
    } else {
      /* the backward: K and V as in the forward, and the dK, dV
       * accumulators in FP32 at every step (home after P) */
      double dkv = 2 * kv_el * 4, kv = k + 1 < P ? r->kv_B : 0;
      s->send_B = kv + dkv;
      /* the accumulators are the kernel's own output: they ride along */
      s->loaded = (kv * s->loaded + dkv) / s->send_B;
    }
  }
  return XS_OK;
}
