/*
 * way_sequential.c: compute, then forward (docs/plan-flashattn.md
 * "Ways"). Each step runs the attention kernel on every SM; when it ends,
 * a communication kernel (NCCL's send and receive, on the profile's
 * comm_sms SMs) forwards the block and every SM waits for the next block
 * to arrive; then the merge. Nothing overlaps: the baseline the others
 * are measured against.
 */
#include "plan/attention/attention.h"

xs_status xs__fa_way_sequential(xs__fa_prog *g, unsigned k_unused, xs_error *err) {
  (void)k_unused;
  const xs__fa_ring *r = g->r;
  const xs__fa_costs *t = g->t;
  double k = t->comm_sms >= 1 ? floor(t->comm_sms) : 1;
  /* NCCL's k CTAs, as copies of a worker at the channel's rate */
  double n = xs__fa_streams(g, k, t->comm_cta_Bps);
  size_t cw = 0, sid;
  xs_status st = XS_OK;
  if (!g->comm_free)
    st = xs__fa_add_worker(g, "nccl", n, &cw, err);
  for (size_t s = 0; s < r->n && !st; s++) {
    const xs__fa_step *sp = &r->step[s];
    int fwd = !g->comm_free && sp->send_B > 0;
    /* the host calls the attention (from Python, as a NCCL ring is) */
    if ((st = xs__fa_host_issue(g, xs__fa_call_host(g, s), err)) ||
        (st = xs__fa_await_issue(g, SIZE_MAX, err)) ||
        (st = xs__fa_kernel_on_classes(g, s, 1, 0, err)))
      break;
    if (fwd) {
      /* the host posts the send and receive; the communication kernel's
       * launch gap and fixed time, then its bytes; every SM waits for
       * the block (by symmetry, this rank's own forward arrives when the
       * next block does); the host waits on the send and receive */
      char id[32];
      snprintf(id, sizeof id, "kv%zu", s);
      double f = t->gap_s + t->nccl_s;
      g->fixed_s += f;
      if (!(st = xs__fa_host_issue(g, xs__fa_post_host(g, s), err)) &&
          !(st = xs__fa_await_issue(g, cw, err)) &&
          !(st = xs_program_compute(g->p, cw, f, err)) &&
          !(st = xs_program_send(g->p, cw, sp->send_B / n, g->channel, id, &sid, err)) &&
          !(st = xs__fa_all_wait(g, sid, err)))
        st = xs__fa_host_busy(g, (sp->backward ? t->bwd_posts : 1) * t->sync_s, err);
    }
    /* the merge, fused, once issued; the kernels: attention and merge */
    if (!st && !(st = xs__fa_host_issue(g, xs__fa_merge_host(g, s, 1), err)) &&
        !(st = xs__fa_await_issue(g, SIZE_MAX, err)))
      st = xs__fa_merge(g, s, (sp->backward ? t->bwd_kernels : 1) +
                                  xs__fa_merge_kernels(g, s, 1), 0, err);
  }
  return st ? st : xs__fa_prog_end(g, r->c->backward ? t->bwd_end_ops : 0, err);
}
