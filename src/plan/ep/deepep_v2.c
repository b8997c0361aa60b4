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
 * has seen the counts (cpu_sync).
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
 * overlaps it. */
static xs_status v2_host(xs__ep_ctx *c) {
  return xs__ep_host(c, xs__ep_call_s(c));
}

/* The kernel's end: its barrier that every rank's data has arrived; with
 * cpu_sync, the epilogue (a launch after the host's wait, every received
 * token copied out). */
static xs_status v2_end(xs__ep_ctx *c, size_t w, double recv_B) {
  double t = c->barrier_s + c->nvl_latency_s;
  xs_status st = xs__ep_compute(c, w, t);
  if (!st && c->s->cpu_sync) {
    st = xs__ep_compute(c, w, c->host_sync_s);
    if (!st)
      st = xs__ep_send(c, w, 2 * recv_B, "hbm", NULL);
  }
  return st;
}

static xs_status direct(xs__ep_ctx *c, double S) {
  const xs__ep_route *r = &c->rt;
  double b = token_B(c), k = c->streams;
  double pairs = r->T * r->R, self = r->T * r->pself, remote = pairs - self;
  size_t n = xs__ep_steps(c, r->T / S / 6);
  size_t w, done, last = SIZE_MAX;
  xs_status st;
  if ((st = v2_host(c)) || (st = xs__ep_start(c)) ||
      (st = xs__ep_workers(c, "sm", S * k, &w)) ||
      (st = xs__ep_workers(c, "end", 1, &done)))
    return st;
  for (size_t j = 0; j < n && !st; j++) {
    /* per token: a TMA load, then one bulk store per destination rank */
    st = xs__ep_copy(c, w, pairs / S / n, remote * b / S / n, "nvlink", &last);
    if (!st)
      st = xs__ep_send(c, w, self * b / S / n / k, "hbm", NULL);
  }
  if (!st)
    st = xs__ep_wait(c, done, last);
  if (!st) /* the combine reads every copy and writes each token once */
    st = c->phase == XS__EP_DISPATCH ? v2_end(c, done, pairs * b)
                                     : xs__ep_send(c, done, (pairs + r->T) * b,
                                                   "hbm", NULL);
  if (!st && c->phase == XS__EP_COMBINE)
    st = v2_end(c, done, 0);
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
      (st = xs__ep_counter(c, "posted", &posted)))
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
    st = v2_end(c, done, disp ? recv * b : 0);
  return st;
}

xs_status xs__ep_deepep_v2(xs__ep_ctx *c) {
  double S = c->s->sms > 0 ? c->s->sms : v2_sms(c);
  return c->rt.N > 1 ? hybrid(c, S) : direct(c, S);
}
