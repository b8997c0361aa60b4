/*
 * way_sms.c: SMs set aside (docs/plan-flashattn.md "Ways"), as
 * ThunderKittens' ring attention and mKernel's run it
 * (HazyResearch/ThunderKittens kernels/parallel/ring_attn/ring_attn_h100.cu,
 * uccl-project/mKernel dynamic_sm/dynamic_sm_allocation/ring_attn): one
 * kernel a step whose first k CTAs load the block from HBM and store it
 * into the next device while the others compute the attention; then a
 * reduction kernel (the fused merge) and a barrier kernel across the
 * devices: three launches a step. k is searched. The attention runs on
 * the SMs left, and the transfer's HBM traffic slows it (the
 * interference term).
 */
#include "plan/attention/attention.h"

xs_status xs__fa_way_sms(xs__fa_prog *g, unsigned k, xs_error *err) {
  const xs__fa_ring *r = g->r;
  const xs__fa_costs *t = g->t;
  size_t cw = 0, sid = 0;
  xs_status st = XS_OK;
  int comm = !g->comm_free && k > 0;
  /* k SMs' bulk stores, as copies of a worker at the channel's rate */
  double n = xs__fa_streams(g, k, t->forward_sm_Bps);
  if (comm)
    st = xs__fa_add_worker(g, "forward", n, &cw, err);
  /* the host: one Python call a ring, then each step's three kernels
   * launched from C++ */
  if (!st)
    st = xs__fa_host_busy(g, t->host_op_s, err);
  for (size_t s = 0; s < r->n && !st; s++) {
    const xs__fa_step *sp = &r->step[s];
    int fwd = comm && sp->send_B > 0;
    if ((st = xs__fa_host_issue(g, t->native_kernels_sms * t->launch_s, err)) ||
        (st = xs__fa_await_issue(g, SIZE_MAX, err)))
      break;
    double interf = fwd ? xs__fa_interference(g, t->link_hbm_B * sp->send_B) : 0;
    char id[32];
    snprintf(id, sizeof id, "kv%zu", s);
    if (fwd)
      st = xs_program_send(g->p, cw, sp->send_B / n, g->channel, id, &sid, err);
    if (!st)
      st = xs__fa_kernel_on_classes(g, s, 1, interf, err);
    /* the reduction kernel and the barrier kernel: the next block is
     * there once every device has passed it */
    if (!st)
      st = xs__fa_merge(g, s, t->native_kernels_sms, t->barrier_s, err);
    if (!st && fwd)
      st = xs__fa_all_wait(g, sid, err);
  }
  return st ? st : xs__fa_prog_end(g, 0, err);
}
