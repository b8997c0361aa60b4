/*
 * pplx.c: Perplexity's pplx-kernels (ppl-ai/pplx-kernels at 12cecfd,
 * csrc/all_to_all/internode_dispatch.cu and internode_combine.cu;
 * docs/ep.md "pplx-kernels"). NVSHMEM moves every (token, expert) on its
 * own: a put with a signal (a write and an atomic, one post to the NIC)
 * to other nodes through GPU-posted RDMA (IBGDA), a store over NVLink to
 * peers of the node. The dispatch's counts go one signal per expert, the
 * combine starts with a signal to every rank. Receive buffers are sized
 * for the worst case. Send and receive run in one kernel around grid
 * syncs, timed around the Python call.
 */
#include "plan/ep/ep.h"

#include <math.h>
#include <stdlib.h>

#define PPLX_WARPS 10 /* NUM_WARPS: a block's warps */
#define PPLX_POST_S 6.17e-06

/* round16(hidden + scales + a 4-byte index) per token (internode.cpp);
 * the combine's BF16 results */
static double message_B(const xs__ep_ctx *c) {
  if (c->phase == XS__EP_COMBINE)
    return c->s->hidden * c->s->elem_bytes;
  return ceil((xs__ep_payload_B(c->s) + 4) / 16) * 16;
}

xs_status xs__ep_pplx(xs__ep_ctx *c) {
  const xs__ep_route *r = &c->rt;
  /* grid: min(max(ceil(E / warps), tokens x topk), SMs) */
  double B = c->s->sms > 0 ? c->s->sms
                           : fmin(fmax(ceil(r->E / PPLX_WARPS), r->T * r->K),
                                  c->gpu_sms);
  double msg = message_B(c), k = c->streams;
  double sel = r->T * r->K * xs__ep_busiest(r); /* the busiest rank's */
  double to_nic = sel * r->sel_remote, to_nvl = sel * r->sel_node;
  double to_self = sel / r->P;
  int disp = c->phase == XS__EP_DISPATCH;
  size_t n = xs__ep_steps(c, sel / B);
  size_t sm, nic = 0, rcv, posted, last_nvl = SIZE_MAX, last_nic = SIZE_MAX;
  size_t first = SIZE_MAX;
  xs_status st = xs__ep_host(c, xs__ep_call_s(c));
  if (!st)
    st = xs__ep_start(c);
  if (!st)
    st = xs__ep_workers(c, "sm", B * k, &sm);
  if (!st)
    st = xs__ep_workers(c, "receiver", B, &rcv);
  if (!st)
    st = xs__ep_counter(c, "posted", &posted);
  if (!st && to_nic > 0)
    st = xs__ep_workers(c, "nic", 1, &nic);
  /* first, one signal per destination off the node: the dispatch's count
   * for each expert (the last warp of each block, nvshmemx_signal_op),
   * the combine's to every rank (combineSyncBuffer); over NVLink a store */
  size_t cw = 0, cposted = 0;
  if (!st && to_nic > 0 && disp) {
    st = xs__ep_workers(c, "count", B, &cw);
    if (!st) st = xs__ep_counter(c, "counted", &cposted);
    if (!st) st = xs__ep_compute(c, cw, PPLX_POST_S * ceil(r->E / B) * r->sel_remote);
    if (!st) st = xs__ep_signal(c, cw, cposted, 1);
  }
  if (!st && to_nic > 0)
    st = xs__ep_nic(c, nic, disp ? cposted : posted, disp ? B : 0,
                    disp ? r->E * r->sel_remote : r->P - r->G, 0, &first);
  for (size_t j = 0; j < n && !st; j++) {
    st = xs__ep_copy(c, sm, sel / B / n, to_nvl * msg / B / n, "nvlink",
                     &last_nvl);
    if (!st) st = xs__ep_compute(c, sm, PPLX_POST_S * (disp ? r->T / B : sel / B) * r->sel_remote / n);
    if (!st)
      st = xs__ep_send(c, sm, to_self * msg / B / n / k, "hbm", NULL);
    if (!st)
      st = xs__ep_signal(c, sm, posted, 1);
    if (!st && to_nic > 0) {
      /* each remote selection: its write and its signal, one post */
      st = xs__ep_nic(c, nic, posted, B * k * (double)(j + 1), to_nic / n,
                      to_nic * msg / n, &last_nic);
    }
  }
  /* receive, after the grid sync (the dispatch's second, after its
   * counts): every signal and token in (by symmetry, when this rank's last
   * are delivered), then out into the caller's layout, or added up */
  if (!st)
    st = xs__ep_await(c, rcv, posted, B * k * (double)n);
  if (!st)
    st = xs__ep_compute(c, rcv, (disp ? 2 : 1) * c->grid_sync_s);
  if (!st)
    st = xs__ep_wait(c, rcv, first);
  if (!st)
    st = xs__ep_wait(c, rcv, last_nic);
  if (!st)
    st = xs__ep_wait(c, rcv, last_nvl);
  if (!st)
    st = xs__ep_compute(c, rcv, c->par.pair_s * sel / B);
  if (!st)
    st = xs__ep_send(c, rcv,
                     (disp ? 2 * sel : sel + r->T) * msg / B,
                     "hbm", NULL);
  return st;
}
