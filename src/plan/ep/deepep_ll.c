/*
 * deepep_ll.c: DeepEP's low-latency kernels (V1, deepseek-ai/DeepEP at
 * 567632d, csrc/kernels/internode_ll.cu; docs/ep.md "DeepEP V1
 * low-latency"), which UCCL-EP also runs. Every (token, selected expert)
 * is one message straight into the expert's per-source receive block,
 * sized for the worst case, so nothing throttles the sender: over the
 * network by a GPU-posted RDMA write (IBGDA), to same-node peers by warp
 * copies over NVLink (since June 2025), to itself by a local copy. Then
 * one count per (rank, expert) tells the receivers how many came; after a
 * grid sync they copy each expert's tokens into its packed output
 * (dispatch) or add up each token's top-k results (combine).
 */
#include "plan/ep/ep.h"

#include <math.h>
#include <stdlib.h>

/* A queue pair's doorbell is rung every 4 of its messages unless forced
 * (ibgda_device.cuh, ibgda_submit_requests: kNumRequestInBatch); the
 * count's atomic always rings it. */
#define LL_DOORBELL_BATCH 4

/* Bytes of one message: the dispatch's 16-byte header (the token's
 * index) and its payload; the combine's BF16 result (internode_ll.cu). */
static double message_B(const xs__ep_ctx *c) {
  return c->phase == XS__EP_DISPATCH ? 16 + xs__ep_payload_B(c->s)
                                     : c->s->hidden * c->s->elem_bytes;
}

/* Blocks of the grid: ceil(E / groups) with groups = ceil(E / SMs) warp
 * groups a block (internode_ll.cu, the launch); no SM-count control. */
static double ll_blocks(const xs__ep_ctx *c) {
  double groups = ceil(c->rt.E / c->gpu_sms);
  return fmin(c->gpu_sms, ceil(c->rt.E / groups));
}

xs_status xs__ep_deepep_ll(xs__ep_ctx *c, const xs__ep_rdma *rdma) {
  const xs__ep_route *r = &c->rt;
  double B = c->s->sms > 0 ? c->s->sms : ll_blocks(c);
  double msg = message_B(c), k = c->streams;
  /* messages a rank sends and receives: the busiest rank's, which every
   * rank waits on (xs__ep_busiest) */
  double sel = r->T * r->K * xs__ep_busiest(r);
  /* where they go: the NIC takes other nodes' (and, without the NVLink
   * path, same-node peers'), warps copy the rest */
  int nvl = !c->s->ll_nic_only;
  double far = nvl ? r->sel_remote : (r->P - 1) / r->P;
  double to_nic = sel * far;
  double to_nvl = nvl ? sel * r->sel_node : 0;
  double to_self = sel / r->P;
  if (to_nic > 0 && !c->has_nic)
    return xs__fail(c->err, XS_INVALID,
                    "the low-latency kernels without their NVLink path send "
                    "through the NIC: profile \"%s\" needs a fabric",
                    xs_profile_name(c->prof));
  int proxy = rdma && rdma->proxy;
  /* what the posting path hands the NIC: behind host proxies every
   * message is a request of its own; posted by the GPU, a doorbell per 4
   * messages of a (rank, expert) queue pair, and one per count (below) */
  double queues = r->E * far; /* (rank, expert) pairs across the NIC */
  double data_posts =
      proxy ? to_nic
            : queues * xs__ep_batches(r->T, r->K / r->E, LL_DOORBELL_BATCH);
  size_t n = xs__ep_steps(c, sel / B); /* tokens' messages, in order */
  /* outstanding writes the path allows (UCCL-EP's proxies: per FIFO),
   * in steps; GPU-posted writes are not held back */
  double win = n;
  if (proxy && to_nic > 0)
    win = fmax(1, floor(rdma->fifos * rdma->inflight / (to_nic / n)));
  size_t sm, nic = 0, rcv, posted, nvl_sid = SIZE_MAX;
  xs_status st;
  if ((st = xs__ep_host(c, xs__ep_call_s(c))) || (st = xs__ep_start(c)) ||
      (st = xs__ep_workers(c, "sm", B * k, &sm)) ||
      (st = xs__ep_workers(c, "receiver", B, &rcv)) ||
      (st = xs__ep_counter(c, "posted", &posted)))
    return st;
  /* the NIC's engine takes the writes in order, GPU-posted or handed on
   * by host proxies */
  if (to_nic > 0 && (st = xs__ep_workers(c, "nic", 1, &nic)))
    return st;
  size_t *nic_sid = calloc(n, sizeof *nic_sid);
  if (!nic_sid)
    return xs__fail(c->err, XS_NOMEM, "out of memory");
  for (size_t j = 0; j < n && !st; j++) {
    /* the SMs: their tokens' messages (the FP8 cast, a work request for
     * each remote one, the copies) */
    st = xs__ep_copy(c, sm, sel / B / n, to_nvl * msg / B / n, "nvlink",
                     &nvl_sid);
    if (!st)
      st = xs__ep_send(c, sm, to_self * msg / B / n / k, "hbm", NULL);
    if (!st)
      st = xs__ep_signal(c, sm, posted, 1);
    if (!st && to_nic > 0) {
      /* the NIC takes the writes as they are posted */
      if (j >= win)
        st = xs__ep_wait(c, nic, nic_sid[j - (size_t)win]);
      if (!st)
        st = xs__ep_nic(c, nic, posted, B * k * (double)(j + 1), data_posts / n,
                        to_nic / n * msg, &nic_sid[j]);
    }
  }
  /* the counts: one atomic per (rank, expert) once that expert's
   * messages are posted, on the same queue pairs, behind the data */
  size_t cnt = SIZE_MAX;
  if (!st && to_nic > 0)
    st = xs__ep_nic(c, nic, posted, 0, queues, 0, &cnt);
  /* the receivers: after the grid sync, every count in (by symmetry, once
   * this rank's last count is delivered), then each expert's tokens into
   * its output, or each token's top-k results added up */
  if (!st)
    st = xs__ep_await(c, rcv, posted, B * k * (double)n);
  if (!st)
    st = xs__ep_compute(c, rcv, c->grid_sync_s);
  if (!st)
    st = xs__ep_wait(c, rcv, cnt);
  if (!st)
    st = xs__ep_wait(c, rcv, nvl_sid);
  if (!st)
    st = xs__ep_compute(c, rcv, c->par.pair_s * sel / B);
  if (!st) {
    double bytes = c->phase == XS__EP_DISPATCH ? 2 * sel * msg
                                                : (sel + r->T) * msg;
    st = xs__ep_send(c, rcv, bytes / B, "hbm", NULL);
  }
  free(nic_sid);
  return st;
}
