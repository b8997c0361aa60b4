/*
 * hybrid_ep.c: NVIDIA's HybridEP (DeepEP branch hybrid-ep at 94a9f8f,
 * csrc/hybrid_ep/, docs/Hybrid-EP_Implementation.md; docs/ep.md
 * "HybridEP"). Persistent blocks take chunks of 64 tokens; in each, TMA
 * warps load tokens into shared memory and store each once per destination
 * rank of the node (up to 72 in an NVL72 rack); across nodes one warp per
 * block first writes each token to the same-index GPU of every remote node
 * it goes to (one RDMA write a token, one flag and doorbell a chunk, posted
 * by the GPU), and what arrives is distributed like the node's own tokens.
 * Buffers are sized for the worst case: nothing throttles a sender. The
 * Python call adds the routing metadata (an all-gather, a kernel, a stream
 * synchronisation) and copies into and out of the registered buffers.
 */
#include "plan/ep/ep.h"

#include <math.h>

#define HYBRID_CHUNK 64   /* NUM_OF_TOKENS_PER_CHUNK_*_API default    */
#define HYBRID_SMS_NODE 24 /* num_sms_* in one node (config.cuh)        */
#define HYBRID_SMS_MULTI 8 /* ... across nodes                          */

/* Bytes the kernels move per token: the payload; FP8's scales are their
 * own TMA transfer (counted in the payload), the routing probabilities a
 * small extra write the model leaves out. */
static double token_B(const xs__ep_ctx *c) { return xs__ep_payload_B(c->s); }

/* What the Python call adds before the kernel (torch API timing) beyond
 * the host's own time and the kernel's launch (xs__ep_call_s): the
 * metadata preprocessing (an all-gather of the routing map across the
 * ranks, its kernel, the stream synchronisation that sizes the output);
 * the copy of the input into the registered buffer is in the program. */
static double api_before(const xs__ep_ctx *c) {
  double gather = c->barrier_s + c->nvl_latency_s +
                  (c->rt.N > 1 ? 2 * c->nic_latency_s : 0);
  return 2 * c->launch_s + gather + c->host_sync_s;
}

xs_status xs__ep_hybrid(xs__ep_ctx *c) {
  const xs__ep_route *r = &c->rt;
  double S = c->s->sms > 0 ? c->s->sms
                           : (r->N > 1 ? HYBRID_SMS_MULTI : HYBRID_SMS_NODE);
  double b = token_B(c), k = c->streams;
  int disp = c->phase == XS__EP_DISPATCH, api = c->s->api_time;
  /* (token, rank) copies over NVLink from this rank: its own tokens to
   * the node's other ranks, and what arrives from the same-index GPUs of
   * other nodes, to its node's ranks (by symmetry as many as it sends) */
  double pairs = r->T * r->R, nvl = pairs * (r->G - 1) / r->G;
  double self = pairs / r->G;
  double wire = r->T * (r->Nn - r->own);
  size_t n = xs__ep_steps(c, r->T / HYBRID_CHUNK);
  size_t mv, nic = 0, done, posted = 0;
  xs_status st = xs__ep_host(c, api ? xs__ep_call_s(c) + api_before(c) : 0);
  if (!st)
    st = xs__ep_start(c);
  if (!st)
    st = xs__ep_workers(c, "tma", S * k, &mv);
  if (!st)
    st = xs__ep_workers(c, "end", 1, &done);
  if (!st && r->N > 1)
    st = xs__ep_workers(c, "rdma", 1, &nic);
  if (!st && r->N > 1)
    st = xs__ep_counter(c, "posted", &posted);
  /* the copy into the registered buffer (multi-node calls) */
  if (!st && api && disp && r->N > 1)
    st = xs__ep_send(c, mv, 2 * r->T * b / S / k, "hbm", NULL);
  size_t fid = SIZE_MAX, nid = SIZE_MAX;
  for (size_t j = 0; j < n && !st; j++) {
    if (r->N > 1 && disp) {
      /* the RDMA warps: a write per (token, remote node) straight from the
       * registered input, a flag and a doorbell per chunk; the NIC takes
       * them in order, and the chunk's arrivals are distributed */
      st = xs__ep_nic(c, nic, posted, 0, wire / HYBRID_CHUNK / n,
                      wire * b / n, &nid);
      if (!st)
        st = xs__ep_wait(c, mv, nid);
    }
    /* the chunk's tokens, each stored once per destination rank */
    if (!st)
      st = xs__ep_copy(c, mv, pairs / S / n, nvl * b / S / n, "nvlink", &fid);
    if (!st)
      st = xs__ep_send(c, mv, (disp ? self : pairs + r->T) * b / S / n / k,
                       "hbm", NULL);
    if (!st && r->N > 1 && !disp) {
      /* the combine: a node's results added up, then one write per
       * (token, remote node) home */
      st = xs__ep_post(c, mv, nic, posted, S * k * (double)(j + 1),
                       wire / HYBRID_CHUNK / n, wire * b / n, &nid);
    }
  }
  if (!st)
    st = xs__ep_wait(c, done, fid);
  if (!st)
    st = xs__ep_wait(c, done, nid);
  if (!st && !disp && r->N > 1) /* the home rank adds up the nodes' */
    st = xs__ep_send(c, done, (r->T * r->Nn + r->T) * b, "hbm", NULL);
  /* the copy out of the registered buffer into the caller's tensor */
  if (!st && api)
    st = xs__ep_send(c, done, 2 * (disp ? pairs : r->T) * b, "hbm", NULL);
  return st;
}
