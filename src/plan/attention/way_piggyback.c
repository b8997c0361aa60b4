/*
 * way_piggyback.c: forwarding from inside the attention loop
 * (docs/plan-flashattn.md "Ways"). No public FlashAttention-3 or -4
 * kernel forwards the KV tiles it loads, so this follows the kernels'
 * pipeline: a CTA that holds a K/V stage in shared memory stores it to the
 * next device (one bulk store of the stage, from a warp the kernel leaves
 * idle), and the stage cannot be refilled until the store has read it.
 * The compute goes on with the kernel's other stages meanwhile; when the
 * store takes longer than they do (the link pushes back, its bytes in
 * flight at the channel's capacity), the SM stalls. Each KV tile leaves
 * once, from one of the CTAs that load it, so every SM forwards about the
 * same number of stages, spread over its share of the kernel and
 * staggered between groups of SMs.
 *
 * In the program each group of SMs is two workers: the kernel's compute
 * and the stores. The compute signals when it reaches a stage to forward,
 * computes on for the time the other stages last, and awaits the store's
 * signal that the stage is free; the store awaits the first signal, sends
 * the stage and signals. So the stall and the stores' X-stage come out of
 * the channel model. The sender never reads the block from HBM again
 * (the tiles are on chip already): only the receiver's write is HBM
 * traffic, except for the share of a step's block the kernel does not
 * load (zigzag's steps that attend to half of it), which is loaded to be
 * sent. Tile j goes from the CTA whose Q tile index is j modulo the Q
 * tiles, as many stores a CTA as KV tiles over Q tiles.
 */
#include "plan/attention/attention.h"

#include <string.h>

/* at most this many stores a group of SMs a step: more stages are sent
 * in groups of consecutive ones, each group waiting for as many stages
 * of compute as it holds */
#define MAX_STORES 32

xs_status xs__fa_way_piggyback(xs__fa_prog *g, unsigned k_unused, xs_error *err) {
  (void)k_unused;
  const xs__fa_ring *r = g->r;
  const xs_fa_config *c = r->c;
  size_t nk = g->nw, pw[XS__FA_WORKERS], reach[XS__FA_WORKERS], fr[XS__FA_WORKERS];
  size_t last[XS__FA_WORKERS];
  double cum[XS__FA_WORKERS], pcum[XS__FA_WORKERS], pn[XS__FA_WORKERS];
  xs_status st = XS_OK;
  /* one K/V stage: a tile of block_n rows of K and of V of one KV head */
  double stage_B = 2 * r->kf.bn * c->head_dim * c->bytes;
  double sms = 0, groups = 1;
  for (size_t i = 0; i < nk; i++) {
    sms += g->wsms[i];
    groups = fmax(groups, (double)g->wgroup[i] + 1);
  }
  for (size_t i = 0; i < nk && !st && !g->comm_free; i++) {
    char n[48];
    snprintf(n, sizeof n, "store%zu.%zu", g->wclass[i], g->wgroup[i]);
    /* the group's SMs' bulk stores, as copies of a worker at the
     * channel's rate */
    pn[i] = xs__fa_streams(g, g->wsms[i], g->t->forward_sm_Bps);
    pcum[i] = 0;
    if (!(st = xs_program_add_workers(g->p, n, (size_t)pn[i], &pw[i], err))) {
      snprintf(n, sizeof n, "reach%zu", i);
      st = xs_program_counter(g->p, n, &reach[i], err);
    }
    if (!st) {
      snprintf(n, sizeof n, "free%zu", i);
      st = xs_program_counter(g->p, n, &fr[i], err);
    }
    cum[i] = 0;
  }
  /* the host: one Python call a ring, then each step's kernels launched
   * from C++ (the kernel and its merge) */
  if (!st)
    st = xs__fa_host_busy(g, g->t->host_op_s, err);
  for (size_t s = 0; s < r->n && !st; s++) {
    const xs__fa_step *sp = &r->step[s];
    const xs__fa_kcall *call = xs__fa_call(g, s);
    int fwd = !g->comm_free && sp->send_B > 0;
    if ((st = xs__fa_host_issue(g, g->t->native_kernels_piggyback * g->t->launch_s, err)) ||
        (st = xs__fa_await_issue(g, SIZE_MAX, err)))
      break;
    /* the receiver writes every byte; what the kernel does not load is
     * read to be sent */
    double interf = fwd ? xs__fa_interference(g, sp->send_B * (2 - sp->loaded)) : 0;
    xs__fa_kernel_terms(g, s, 1, interf);
    if (!fwd) {
      for (size_t i = 0; i < nk && !st; i++)
        st = xs_program_compute(g->p, g->w[i], call->time[g->wclass[i]], err);
    }
    /* stores an SM a step, and their size */
    double per_sm = sp->send_B / sms;
    double m = fmax(1, fmin(MAX_STORES, round(per_sm / stage_B)));
    double store_B = per_sm / m, held = fmax(1, store_B / stage_B);
    double hide = held * (r->kf.stages - 1) * call->iter_s;
    for (size_t i = 0; i < nk && !st && fwd; i++) {
      double T = call->time[g->wclass[i]] + interf;
      double phase = ((double)g->wgroup[i] + 0.5) / groups, at = 0;
      char id[48];
      for (double j = 0; j < m && !st; j++) {
        double tj = (j + phase) * T / m;
        double next = j + 1 < m ? (j + 1 + phase) * T / m : T;
        double h = fmin(hide, next - tj);
        cum[i] += g->wsms[i];
        pcum[i] += pn[i];
        int lastj = j + 1 >= m;
        snprintf(id, sizeof id, "kv%zu.%zu", s, i);
        if (!(st = xs_program_compute(g->p, g->w[i], fmax(0, tj - at), err)) &&
            !(st = xs_program_signal_index(g->p, g->w[i], reach[i], 1, err)) &&
            !(st = xs_program_compute(g->p, g->w[i], h, err)) &&
            !(st = xs_program_await_index(g->p, g->w[i], fr[i], pcum[i], err)) &&
            !(st = xs_program_await_index(g->p, pw[i], reach[i], cum[i], err)) &&
            !(st = xs_program_send(g->p, pw[i], store_B * g->wsms[i] / pn[i], g->channel,
                                   lastj ? id : NULL,
                                   lastj ? &last[i] : NULL, err)))
          st = xs_program_signal_index(g->p, pw[i], fr[i], 1, err);
        at = tj + h;
      }
      if (!st)
        st = xs_program_compute(g->p, g->w[i], fmax(0, T - at), err);
    }
    if (!st)
      st = xs__fa_barrier(g, err);
    /* the merge (fused) and the launches: attention and merge; then the
     * next block must be here */
    if (!st)
      st = xs__fa_merge(g, s, g->t->native_kernels_piggyback, 0, err);
    for (size_t i = 0; i < nk && !st && fwd; i++)
      st = xs__fa_all_wait(g, last[i], err);
  }
  return st ? st : xs__fa_prog_end(g, 0, err);
}
