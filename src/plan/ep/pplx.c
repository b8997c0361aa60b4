/*
 * pplx.c: Perplexity's pplx-kernels (ppl-ai/pplx-kernels at 12cecfd,
 * csrc/all_to_all/internode_dispatch.cu and internode_combine.cu;
 * docs/ep.md "pplx-kernels"). NVSHMEM moves every (token, expert) on its
 * own: a put with a signal (a write and an atomic on the wire) to other
 * nodes through GPU-posted RDMA (IBGDA), a store over NVLink to peers of
 * the node; each expert's count goes with a signal of its own. Receive
 * buffers are sized for the worst case. Send and receive run in one
 * kernel, timed around the Python call.
 */
#include "plan/ep/ep.h"

#include <math.h>
#include <stdlib.h>

#define PPLX_WARPS 10 /* NUM_WARPS: a block's warps */

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
  double sel = r->T * r->K;
  double to_nic = sel * r->sel_remote, to_nvl = sel * r->sel_node;
  double to_self = sel / r->P;
  int disp = c->phase == XS__EP_DISPATCH;
  size_t n = xs__ep_steps(c, sel / B);
  size_t sm, nic = 0, rcv, posted, last_nvl = SIZE_MAX, last_nic = SIZE_MAX;
  size_t counter = 0, counted = 0;
  xs_status st = xs__ep_host(c, c->launch_s +
                                    (c->s->api_time ? c->par.api_s : 0));
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
  /* the dispatch's counts: the last warp of each block sends its share of
   * the experts' counts, one nvshmemx_signal_op each, which returns once
   * the signal is done: a round trip to the expert's rank, one after the
   * other (internode_dispatch.cu) */
  if (!st && disp) {
    /* over NVLink the signal is a store that returns at once */
    double m = ceil(r->E / B);
    double rtt = r->sel_remote * 2 * c->nic_latency_s;
    st = xs__ep_workers(c, "count", B, &counter);
    if (!st)
      st = xs__ep_counter(c, "counted", &counted);
    if (!st)
      st = xs__ep_compute(c, counter, m * rtt);
    if (!st)
      st = xs__ep_signal(c, counter, counted, 1);
  }
  for (size_t j = 0; j < n && !st; j++) {
    st = xs__ep_copy(c, sm, sel / B / n, to_nvl * msg / B / n, "nvlink",
                     &last_nvl);
    if (!st)
      st = xs__ep_send(c, sm, to_self * msg / B / n / k, "hbm", NULL);
    if (!st)
      st = xs__ep_signal(c, sm, posted, 1);
    if (!st && to_nic > 0) {
      /* each remote selection: the write, then its signal */
      st = xs__ep_nic(c, nic, posted, B * k * (double)(j + 1), 2 * to_nic / n,
                      to_nic * msg / n, &last_nic);
    }
  }
  /* receive, after a grid barrier: every count and token in (by
   * symmetry, when this rank's last are delivered), then out into the
   * caller's layout, or added up */
  if (!st && disp)
    st = xs__ep_await(c, rcv, counted, B);
  if (!st)
    st = xs__ep_compute(c, rcv, c->barrier_s);
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
