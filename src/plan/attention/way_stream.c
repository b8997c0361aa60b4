/*
 * way_stream.c: a dedicated stream (docs/plan-flashattn.md "Ways"), as
 * ring-flash-attention and TransformerEngine run a ring: at the start of
 * each step the send and receive are posted on their own stream (NCCL's
 * batch_isend_irecv; zhuzilin/ring-flash-attention, utils.py RingComm),
 * so NCCL's kernel (comm_sms CTAs, one an SM) runs beside the attention
 * kernel; then the merge (unfused, utils.py update_out_and_lse); then the
 * wait for the next block.
 *
 * Two costs come with the overlap. NCCL's CTAs hold their SMs while they
 * send: the attention kernel's tiles go to the other SMs meanwhile, so
 * each SM takes comm_sms / SMs of that time more, and the communication
 * SMs take the rest of their share once they are done (estimated at the
 * channel's rate when the program is written; if the channel is slower,
 * they finish late and the step with them). And the transfer reads the
 * block from HBM and writes the one it receives there, which slows the
 * kernel (the interference term).
 *
 * The ring is Python: the host issues every step's ops (posting the send
 * and receive, the attention call, the merge's ops, the wait) as
 * ring-flash-attention orders them (costs.c counts them); where it issues
 * them slower than the GPU runs them, the host sets the pace.
 */
#include "plan/attention/attention.h"


xs_status xs__fa_way_stream(xs__fa_prog *g, unsigned k_unused, xs_error *err) {
  (void)k_unused;
  const xs__fa_ring *r = g->r;
  const xs__fa_costs *t = g->t;
  double k = t->comm_sms >= 1 ? floor(t->comm_sms) : 1;
  size_t cw = 0, sid = 0;
  xs_status st = XS_OK;
  int comm = !g->comm_free && k < r->sms;
  /* NCCL's k CTAs, each at comm_cta_Bps: copies of a worker at the
   * channel's per-worker rate */
  double n = xs__fa_streams(g, k, t->comm_cta_Bps);
  if (comm)
    st = xs__fa_add_worker(g, "nccl", n, &cw, err);
  const xs_channel *ch = g->ch;
  double rate = fmin(fmin(n * g->r_w, ch->inject_Bps), ch->drain_Bps);
  /* NCCL's kernel: its launch gap and its fixed time before the bytes */
  double nccl_fixed = t->gap_s + t->nccl_s;
  for (size_t s = 0; s < r->n && !st; s++) {
    const xs__fa_step *sp = &r->step[s];
    const xs__fa_kcall *call = xs__fa_call(g, s);
    int fwd = comm && sp->send_B > 0;
    double interf = fwd ? xs__fa_interference(g, t->link_hbm_B * sp->send_B) : 0;
    double t_est = fwd ? nccl_fixed + sp->send_B / rate + ch->latency_s : 0;
    double held = fwd ? fmin(t_est, call->end) * k / r->sms : 0;
    char id[32];
    snprintf(id, sizeof id, "kv%zu", s);
    /* the host posts the send and receive (NCCL's kernel starts when
     * posted), then calls the attention */
    if (fwd && !(st = xs__fa_host_issue(g, xs__fa_post_host(g, s), err)) &&
        !(st = xs__fa_await_issue(g, cw, err)) &&
        !(st = xs_program_compute(g->p, cw, nccl_fixed, err)))
      st = xs_program_send(g->p, cw, sp->send_B / n, g->channel, id, &sid, err);
    if (!st && !(st = xs__fa_host_issue(g, xs__fa_call_host(g, s), err)))
      for (size_t i = 0; i < g->nw && !st; i++)
        if (g->wclass[i] != SIZE_MAX)
          st = xs__fa_await_issue(g, g->w[i], err);
    for (size_t i = 0; i < g->nw && !st; i++) {
      double v;
      if (g->wclass[i] != SIZE_MAX)
        v = call->time[g->wclass[i]] + held + interf;
      else /* the communication SMs: their share once they are free */
        v = fwd ? fmax(0, call->end + held + interf - t_est) : call->end;
      st = xs_program_compute(g->p, g->w[i], v, err);
    }
    xs__fa_kernel_terms(g, s, 1, interf);
    if (!st)
      st = xs__fa_barrier(g, err);
    /* the merge, ring-flash-attention's, after the host has issued it; the
     * kernels on the critical stream: the attention's and the merge's */
    if (!st && !(st = xs__fa_host_issue(g, xs__fa_merge_host(g, s, 0), err)) &&
        !(st = xs__fa_await_issue(g, SIZE_MAX, err)))
      st = xs__fa_merge(g, s, (sp->backward ? t->bwd_kernels : 1) +
                                  xs__fa_merge_kernels(g, s, 0), 0, err);
    /* the host waits on the send and receive (a stream wait: the GPU's
     * wait is the block's arrival) */
    if (!st && fwd &&
        !(st = xs__fa_host_busy(g, (sp->backward ? t->bwd_posts : 1) * t->sync_s, err)))
      st = xs__fa_all_wait(g, sid, err);
  }
  double end = t->end_ops + (r->c->backward ? t->bwd_end_ops : 0);
  return st ? st : xs__fa_prog_end(g, end, err);
}
