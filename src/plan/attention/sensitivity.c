/*
 * sensitivity.c: which numbers of the profile an attention plan hangs on
 * (xs_fa_sensitivity_run; docs/plan-flashattn.md "Sensitivity"). The
 * numbers the ring planner reads are moved one at a time over the range
 * their kind of source gives them (plan/sensitivity.c, shared with the
 * MegaMoE planner) and every ring is planned again.
 */
#include "plan/attention/attention.h"
#include "plan/sensitivity.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The numbers xs_fa_plan reads for config c: the channel the KV blocks
 * go on (emit.c), HBM (merges, interference), the cost terms (costs.c)
 * and the attn_* entries the kernel's figures come from (kernel.c says
 * which), or the FLOP/s and efficiency a kernel without any takes. */
static void params_of(const xs_fa_config *c, const xs_profile *prof, xs__sens_list *l) {
  static const char *const costs[] = {"launch_s",   "kernel_gap_s", "host_op_s",
                                      "ring_step_s", "nccl_p2p_s",  "barrier_s",
                                      "copy_efficiency", "comm_sms", "comm_cta_Bps",
                                      "forward_sm_Bps"};
  size_t ch = xs_profile_default_channel(prof);
  if (ch < xs_profile_channel_count(prof))
    xs__sens_channel(l, prof, ch);
  xs__sens_hbm(l, prof);
  xs__sens_costs(l, prof, costs, sizeof costs / sizeof costs[0]);
  xs__fa_kfig k[2];
  xs_error e;
  if (xs__fa_kernel_figures(c, prof, 0, &k[0], &e) || !k[0].measured) {
    xs__sens_flops(l, prof, c->dtype);
    xs__sens_efficiency(l, prof);
    return;
  }
  for (int pass = 0; pass < 1 + !!c->backward; pass++) {
    if (pass && (xs__fa_kernel_figures(c, prof, 1, &k[1], &e) || !k[1].measured))
      break; /* the backward at the forward's rate: nothing of its own */
    xs__sens_attn(l, prof, XS_ATTN_FLOPS, k[pass].key);
    xs__sens_attn(l, prof, XS_ATTN_CTA_S, k[pass].key);
    if (c->causal)
      xs__sens_attn(l, prof, XS_ATTN_CAUSAL_EFFICIENCY, k[pass].key);
  }
}

/* what would measure a kernel or cost term */
static const char *settle_of(const xs__sens_param *p) {
  if (p->kind == XS__SENS_ATTN || p->kind == XS__SENS_FLOPS ||
      p->kind == XS__SENS_EFFICIENCY)
    return "the kernel's own microbenchmark (flash-attention's benchmarks), fitted as "
           "docs/plan-flashattn.md \"Attention kernel\" says";
  if (strstr(p->key, "comm_") || strstr(p->key, "forward_sm"))
    return "the transfer alone on the two GPUs: NCCL's sendrecv_perf, or one CTA's "
           "stores to a peer";
  if (strstr(p->key, "copy_efficiency"))
    return "the merge kernels' time in a timeline of the ring (nsys)";
  if (strstr(p->key, "host_op_s"))
    return "the host's time per eager op: a timeline of the ring's Python loop "
           "(nsys, the CUDA API row), or ops issued back to back with one sync";
  if (strstr(p->key, "nccl_p2p"))
    return "NCCL's sendrecv_perf at small sizes on the two GPUs";
  return "the gaps between the ring's kernels in a timeline (nsys)";
}

static int by_score(const void *x, const void *y) {
  const xs_fa_sensitivity *a = x, *b = y;
  if (a->score != b->score)
    return a->score > b->score ? -1 : 1;
  return strcmp(a->param, b->param);
}

xs_status xs_fa_sensitivity_run(const xs_fa_config *config, const xs_profile *prof,
                                double tol, xs_fa_ring *base, xs_fa_sensitivity *out,
                                size_t *n, xs_error *err) {
  *n = 0;
  if (!(tol >= 0 && tol <= 1))
    return xs__fail(err, XS_INVALID, "sensitivity: tolerance must be in [0, 1], got %g",
                    tol);
  /* the kernel the GPU runs: the figures moved are that kernel's */
  xs_fa_config c[1];
  xs_status st = xs_fa_kernel_resolve(config, prof, c, err);
  if (st)
    return st;
  xs__sens_param ps[XS_FA_SENS_MAX];
  xs__sens_list l = {ps, 0, XS_FA_SENS_MAX};
  params_of(c, prof, &l);
  if (l.n > XS_FA_SENS_MAX)
    return xs__fail(err, XS_INVALID,
                    "sensitivity: profile \"%s\" has %zu numbers the plan reads, more "
                    "than the %d rows a run gives (XS_FA_SENS_MAX)",
                    xs_profile_name(prof), l.n, XS_FA_SENS_MAX);
  xs_fa_ring *rows = malloc(XS_FA_RINGS * sizeof *rows);
  if (!rows)
    return xs__fail(err, XS_NOMEM, "out of memory");
  size_t nr = 0;
  const xs_fa_ring *b = NULL;
  if (!(st = xs_fa_rings(c, prof, rows, &nr, err)) && !(b = xs_fa_ring_best(rows, nr)))
    st = xs__fail(err, XS_INVALID, "sensitivity: the plan has no ring");
  if (!st)
    *base = *b;
  for (size_t i = 0; i < l.n && !st; i++) {
    xs_fa_sensitivity *s = &out[i];
    memset(s, 0, sizeof *s);
    xs__sens_head(prof, &ps[i], settle_of(&ps[i]), s->param, &s->value, s->kind, &s->lo,
                  &s->hi, s->settle, s->factor);
    for (int f = 0; f < XS_MOE_SENS_FACTORS && !st; f++) {
      xs_profile *q;
      s->time_change[f] = s->replan_change[f] = NAN;
      if ((st = xs__sens_moved(prof, &ps[i], s->factor[f], &q, err)))
        break;
      if (!q) /* moved out of its valid range: left out at that factor */
        continue;
      st = xs_fa_rings(c, q, rows, &nr, err);
      xs_profile_free(q);
      if (st)
        break;
      const xs_fa_ring *mine = NULL, *pick = xs__fa_ring_keep(rows, nr, base, tol);
      for (size_t j = 0; j < nr; j++)
        if (xs_fa_same_ring(&rows[j], base))
          mine = &rows[j];
      if (!pick) {
        st = xs__fail(err, XS_INVALID, "sensitivity: the plan has no ring");
        break;
      }
      if (mine)
        s->time_change[f] = mine->time_s / base->time_s - 1;
      s->replan_change[f] = pick->time_s / base->time_s - 1;
      s->choice[f] = *pick;
      s->changed[f] = !xs_fa_same_ring(pick, base);
      if (fabs(s->time_change[f]) > s->score)
        s->score = fabs(s->time_change[f]);
    }
    if (!st)
      (*n)++;
  }
  free(rows);
  if (st) {
    *n = 0;
    return st;
  }
  qsort(out, *n, sizeof *out, by_score);
  return XS_OK;
}
