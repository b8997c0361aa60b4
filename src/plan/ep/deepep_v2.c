/*
 * deepep_v2.c: DeepEP V2's kernels (ElasticBuffer, deepseek-ai/DeepEP at
 * dd758ca; docs/ep.md "DeepEP V2"). Worst-case receive buffers, so no ring
 * holds a sender back. Inside one NVLink domain ("direct") every warp
 * takes tokens and writes each once per destination rank with a TMA bulk
 * store; across domains ("hybrid") a scale-out warp puts each token once
 * per remote node on the rail (the same-index GPU there), tail flags every
 * 6 tokens, and a forward warp copies what arrives to the node's ranks. The
 * kernel ends with a barrier that the data has landed; the copy epilogue
 * into the caller's tensors is a kernel of its own, launched once the host
 * has seen the counts (cpu_sync), or at once with PDL in a graph's replay.
 */
#include "plan/ep/ep.h"

#include <math.h>

/* The scale-out warp's puts go out aggregated (ncclGinOptFlagsAggregateRequests)
 * and are handed to the NIC with each tail update, every 6 tokens
 * (kScaleoutUpdateInterval, impls/hybrid_dispatch.cuh): one post each. */
#define V2_TAIL_TOKENS 6

/* get_theoretical_num_sms (deep_ep/buffers/elastic.py): the SMs that keep
 * the bottleneck link busy at 200 GB/s of reads and 50 GB/s of writes an
 * SM, x1.25, even, at least 4. Bandwidths as the library reads them:
 * RDMA the NIC's rate, NVLink the GPU's (its own reading sums the links'
 * rates x 0.9; the profile's drain stands for it). */
static double v2_sms(const xs__ep_ctx *c) {
  const xs__ep_route *r = &c->rt;
  double so = r->N > 1 ? r->Nn : 0, topk = r->R;
  double rd = 1 / topk, wr = 0, rdma = 0, nvl = 0;
  double nvl_gbs =
      xs_profile_channel(c->prof, xs_profile_default_channel(c->prof))->drain_Bps;
  if (r->N > 1) {
    wr += 1 / topk;
    wr += (1 / topk) * (so / r->N);
    rdma += (1 / topk) * (so * (1 - 1 / r->N));
    rd += so / topk;
    wr += 1;
    nvl += 1 - 1 / r->G;
  } else {
    wr += 1;
    nvl += 1 - 1 / r->P;
  }
  double bt = nvl, bg = nvl_gbs;
  if (r->N > 1 && rdma / c->nic_Bps > nvl / nvl_gbs) {
    bt = rdma;
    bg = c->nic_Bps;
  }
  double sms = c->gpu_sms;
  if (bt > 0)
    sms = fmax(bg / bt * rd / 200e9, bg / bt * wr / 50e9);
  sms = fmax(4, ceil(sms * 1.25));
  sms = ceil(sms / 2) * 2;
  return fmin(sms, c->gpu_sms);
}

/* Bytes a received token carries: the payload, its top-k indexes (int64)
 * and weights (float) in the dispatch; the result and its weights in the
 * combine (tests/elastic/test_ep.py counts the same). */
static double token_B(const xs__ep_ctx *c) {
  return xs__ep_payload_B(c->s) +
         (c->phase == XS__EP_DISPATCH ? c->rt.K * 12 : c->rt.K * 4);
}

/* The host: the Python call and the launch where the harness times
 * them; with cpu_sync the epilogue is launched once the host has the
 * counts, which the notify warps write while the kernel runs, so the wait
 * overlaps it. A graph's replay has no host in the loop: the kernel
 * starts kernel_gap_s behind the one before it. */
static xs_status v2_host(xs__ep_ctx *c) {
  if (c->s->graph)
    return xs__ep_host(c, c->gap_s);
  return xs__ep_host(c, xs__ep_call_s(c));
}

/* One cross-rank barrier of the kernel (comm::gpu_barrier: a grid sync
 * and a round of flags with the peers). */
static double v2_barrier_s(const xs__ep_ctx *c) {
  return c->barrier_s + c->nvl_latency_s;
}

/* The kernel's end: its barrier that every rank's data has arrived; then
 * the copy epilogue, a kernel of its own that moves epi_B through HBM
 * (every received token out of the buffer into the caller's tensors):
 * with cpu_sync launched after the host's wait; in a graph's replay
 * launched at once with programmatic dependent launch, its CTAs waiting
 * on the SMs the dispatch leaves free until the dispatch's barrier is
 * passed (deep_ep/include/deep_ep/impls/dispatch_copy_epilogue.cuh:59,
 * dispatch.cuh:397, csrc/kernels/elastic/dispatch.hpp:408 at b306af0), so
 * no launch in between. The kernel alone (neither) has no epilogue. */
static xs_status v2_end(xs__ep_ctx *c, size_t w, double epi_B) {
  xs_status st = xs__ep_compute(c, w, v2_barrier_s(c));
  if (!st && c->s->cpu_sync) {
    st = xs__ep_compute(c, w, c->host_sync_s);
    if (!st)
      st = xs__ep_send(c, w, epi_B, "hbm", NULL);
  } else if (!st && c->s->graph && epi_B > 0) {
    st = xs__ep_send(c, w, epi_B, "hbm", NULL);
  }
  return st;
}

/* A graph's replay times the kernel's whole fixed chain, which the fitted
 * per-call constant stands for where the Python call is timed: the
 * opening barrier of every V2 kernel (dispatch.cuh:73, combine.cuh:78 at
 * b306af0) on every SM before it moves a token; in the dispatch the
 * notify beside the copies (dispatch.cuh:78-252): every SM adds its counts
 * into global counters that SM 0 polls (a grid-wide reduction, grid_sync_s),
 * then puts each peer its counts and waits for theirs (signal_s), which the
 * closing barrier waits for. */
static xs_status v2_open(xs__ep_ctx *c, size_t sms, size_t done) {
  if (!c->s->graph)
    return XS_OK;
  double notify = c->phase == XS__EP_DISPATCH ? c->grid_sync_s + c->signal_s : 0;
  xs_status st = xs__ep_compute(c, sms, v2_barrier_s(c));
  if (!st)
    st = xs__ep_compute(c, done, v2_barrier_s(c) + notify);
  return st;
}

static xs_status direct(xs__ep_ctx *c, double S) {
  const xs__ep_route *r = &c->rt;
  double b = token_B(c), k = c->streams;
  int disp = c->phase == XS__EP_DISPATCH;
  /* the dispatch writes each token once per destination rank; the combine
   * returns one row per (token, rank), or with the expanded layout and no
   * local reduction one per (token, local expert) that it was sent to
   * (combine.cuh:42 and 177-212 at b306af0: kDoExpandedSend) */
  int x = c->s->expanded && !disp;
  double pairs = x ? r->T * r->K : r->T * r->R;
  double self = x ? r->T * r->K / r->P : r->T * r->pself;
  double remote = pairs - self;
  size_t n = xs__ep_steps(c, r->T / S / 6);
  size_t w, done, last = SIZE_MAX;
  xs_status st;
  if ((st = v2_host(c)) || (st = xs__ep_start(c)) ||
      (st = xs__ep_workers(c, "sm", S * k, &w)) ||
      (st = xs__ep_workers(c, "end", 1, &done)) || (st = v2_open(c, w, done)))
    return st;
  for (size_t j = 0; j < n && !st; j++) {
    /* per token: a TMA load, then one bulk store per destination rank */
    st = xs__ep_copy(c, w, pairs / S / n, remote * b / S / n, "nvlink", &last);
    if (!st)
      st = xs__ep_send(c, w, self * b / S / n / k, "hbm", NULL);
  }
  if (!st)
    st = xs__ep_wait(c, done, last);
  if (!st && !disp) /* the combine reads every copy and writes each token
                     * once (combine_reduce_epilogue.cuh:62-124) */
    st = xs__ep_send(c, done, (pairs + r->T) * b, "hbm", NULL);
  if (!st) {
    /* the dispatch's copy epilogue reads each received token and writes
     * it once, or with the expanded layout once per local expert it
     * chose (dispatch_copy_epilogue.cuh:69-137) */
    double epi_B = !disp ? 0
                   : c->s->expanded ? (pairs + r->T * r->K) * b
                                    : 2 * pairs * b;
    st = v2_end(c, done, epi_B);
  }
  return st;
}

static xs_status hybrid(xs__ep_ctx *c, double S) {
  const xs__ep_route *r = &c->rt;
  double b = token_B(c), k = c->streams;
  /* a channel is a scale-out warp and a forward warp of an SM; an SM has
   * up to 8 (4 when not set to overlap with compute), the scale-out warps
   * of all SMs are the "so" workers, the forward warps the "fw" ones */
  double wire = r->T * (r->Nn - r->own), node = r->T * r->Nn;
  double fwd = r->T * r->R * (r->G - 1) / r->G, recv = r->T * r->R;
  int disp = c->phase == XS__EP_DISPATCH;
  size_t n = xs__ep_steps(c, r->T / S / 6);
  size_t so, nic, fw, done, posted;
  xs_status st;
  if ((st = v2_host(c)) || (st = xs__ep_start(c)) ||
      (st = xs__ep_workers(c, "scaleout", S * k, &so)) ||
      (st = xs__ep_workers(c, "nic", 1, &nic)) ||
      (st = xs__ep_workers(c, "forward", S * k, &fw)) ||
      (st = xs__ep_workers(c, "end", 1, &done)) ||
      (st = xs__ep_counter(c, "posted", &posted)) ||
      (st = v2_open(c, so, done)) ||
      (c->s->graph && (st = xs__ep_compute(c, fw, v2_barrier_s(c)))))
    return st;
  size_t fid = SIZE_MAX, nid = SIZE_MAX;
  for (size_t j = 0; j < n && !st; j++) {
    if (disp) {
      /* scale-out: the token into the send buffer (the own node's copy
       * straight into the local receive buffer), one put per remote node */
      st = xs__ep_copy(c, so, node / S / n, node * b / S / n, "hbm", NULL);
      if (!st)
        st = xs__ep_post(c, so, nic, posted, S * k * (double)(j + 1),
                         wire / V2_TAIL_TOKENS / n, wire * b / n, &nid);
      /* forward: what arrived, to the node's ranks over NVLink */
      if (!st)
        st = xs__ep_wait(c, fw, nid);
      if (!st)
        st = xs__ep_copy(c, fw, recv / S / n, fwd * b / S / n, "nvlink", &fid);
    } else {
      /* the combine: results to the rail GPU of their node over NVLink,
       * added up there per (token, node), one put per remote node */
      st = xs__ep_copy(c, fw, recv / S / n, fwd * b / S / n, "nvlink", &fid);
      if (!st)
        st = xs__ep_wait(c, so, fid);
      if (!st)
        st = xs__ep_copy(c, so, recv / S / n, (recv + node) * b / S / n, "hbm", NULL);
      if (!st)
        st = xs__ep_post(c, so, nic, posted, S * k * (double)(j + 1),
                         wire / V2_TAIL_TOKENS / n, wire * b / n, &nid);
    }
  }
  if (!st)
    st = xs__ep_wait(c, done, fid);
  if (!st)
    st = xs__ep_wait(c, done, nid);
  if (!st && !disp) /* the home rank adds up the nodes' copies */
    st = xs__ep_send(c, done, (node + r->T) * b, "hbm", NULL);
  if (!st)
    st = v2_end(c, done, disp ? 2 * recv * b : 0);
  return st;
}

xs_status xs__ep_deepep_v2(xs__ep_ctx *c) {
  double S = c->s->sms > 0 ? c->s->sms : v2_sms(c);
  return c->rt.N > 1 ? hybrid(c, S) : direct(c, S);
}
