/*
 * deepep_v1.c: DeepEP's normal (high-throughput) kernels, V1
 * (deepseek-ai/DeepEP at 567632d, csrc/kernels/intranode.cu and
 * internode.cu; docs/ep.md "DeepEP V1 normal"). Inside one NVLink domain a
 * channel is a pair of SMs: the sender copies each token to every peer
 * rank it goes to, the receiver moves what arrives from the peer's ring
 * into the output. Across nodes a token crosses the network once per
 * destination node, to the GPU of the same local index there, whose
 * forwarder SMs copy it over NVLink to the ranks of that node that want
 * it; the combine runs the other way and adds up a node's copies before
 * they cross. Rings with credits bound what is in flight on each hop.
 * UCCL-EP runs these kernels with host proxies in front of the NIC.
 */
#include "plan/ep/ep.h"

#include <math.h>
#include <stdio.h>

/* Tests and tables use 24 SMs (tests/test_intranode.py,
 * test_internode.py; README tables); channels are SM pairs. */
#define V1_SMS 24
/* The recommended configs by ranks (deep_ep/buffer.py
 * get_dispatch_config / get_combine_config): NVLink chunk and ring, RDMA
 * chunk and ring, in tokens. */
typedef struct {
  double ranks, nvl_chunk, nvl_ring, rdma_chunk, rdma_ring;
} v1_config;
static const v1_config dispatch_cfg[] = {
    {2, 24, 256, 6, 128},   {4, 6, 256, 6, 128},     {8, 6, 256, 6, 128},
    {16, 36, 288, 20, 128}, {24, 32, 288, 8, 128},   {32, 32, 288, 8, 128},
    {48, 32, 288, 8, 128},  {64, 32, 288, 8, 128},   {96, 20, 480, 12, 128},
    {128, 20, 560, 12, 128}, {144, 32, 720, 12, 128}, {160, 28, 720, 12, 128}};
static const v1_config combine_cfg[] = {
    {2, 10, 256, 6, 128},  {4, 9, 256, 6, 128},    {8, 4, 256, 6, 128},
    {16, 4, 288, 12, 128}, {24, 1, 288, 8, 128},   {32, 1, 288, 8, 128},
    {48, 1, 288, 8, 128},  {64, 1, 288, 8, 128},   {96, 1, 480, 8, 128},
    {128, 1, 560, 8, 128}, {144, 2, 720, 8, 128},  {160, 2, 720, 8, 128}};

/* the config of the nearest rank count at or above P (the last past it) */
static v1_config config_for(const v1_config *t, size_t n, double P) {
  for (size_t i = 0; i < n; i++)
    if (t[i].ranks >= P)
      return t[i];
  return t[n - 1];
}

/* A token's record in the internode buffers: payload, 8 B of source
 * metadata, top-k indexes (int32) and weights (float), 16-aligned
 * (internode.cu, get_num_bytes_per_token). The intranode kernels copy
 * the same fields. */
static double record_B(const xs__ep_ctx *c) {
  double b = xs__ep_payload_B(c->s);
  if (c->phase == XS__EP_DISPATCH)
    b += 8 + c->rt.K * 8;
  return ceil(b / 16) * 16;
}

/* The host before the kernel: with api_time the Python call and the
 * launch; with cpu_sync the notify kernel (counts to every rank, a
 * barrier over NVLink and, across nodes, a round trip over the NIC) and
 * the host's wait for the counts, and for a cached handle under api_time
 * the cached notify. */
static xs_status host_before(xs__ep_ctx *c) {
  double t = xs__ep_call_s(c);
  double barrier = c->barrier_s + c->nvl_latency_s +
                   (c->rt.N > 1 ? 2 * c->nic_latency_s : 0);
  if (c->phase == XS__EP_DISPATCH && c->s->cpu_sync)
    t += c->launch_s + barrier + c->host_sync_s;
  else if (c->s->api_time)
    t += c->launch_s + barrier; /* the cached notify */
  return xs__ep_host(c, t);
}

/* One NVLink domain: channels of a sender and a receiver SM. */
static xs_status intranode(xs__ep_ctx *c, double sms) {
  const xs__ep_route *r = &c->rt;
  int disp = c->phase == XS__EP_DISPATCH;
  v1_config cfg = disp ? config_for(dispatch_cfg, 12, r->P)
                       : config_for(combine_cfg, 12, r->P);
  double C = fmax(1, floor(sms / 2)), b = record_B(c);
  double tok = r->T / C; /* tokens a channel carries */
  /* a channel's pairs (token, rank): sent to peers, and to itself; the
   * combine sends back what the dispatch brought, the same pairs */
  double pairs = tok * r->R, self = tok * r->pself, remote = pairs - self;
  size_t n = xs__ep_steps(c, tok / cfg.nvl_chunk);
  /* the ring holds nvl_ring tokens of each peer: steps in flight */
  double window = fmax(1, floor(n * cfg.nvl_ring / fmax(tok, 1)));
  double k = c->streams;
  size_t snd, rcv, freed;
  xs_status st;
  if ((st = host_before(c)) || (st = xs__ep_start(c)) ||
      (st = xs__ep_workers(c, "sender", C * k, &snd)) ||
      (st = xs__ep_workers(c, "receiver", C, &rcv)) ||
      (st = xs__ep_counter(c, "ring_free", &freed)))
    return st;
  for (size_t j = 0; j < n && !st; j++) {
    size_t sid, hid;
    if (j >= window)
      st = xs__ep_await(c, snd, freed, C * (double)(j + 1 - window));
    if (!st)
      st = xs__ep_copy(c, snd, pairs / n, remote * b / n, "nvlink", &sid);
    if (!st)
      st = xs__ep_send(c, snd, self * b / n / k, "hbm", &hid);
    /* the receiver: what the peers' senders wrote into its ring (by
     * symmetry, delivered when this rank's own is), then into the output
     * (dispatch) or added up per token (combine: every copy read, one
     * written) */
    if (!st)
      st = xs__ep_wait(c, rcv, sid);
    if (!st)
      st = xs__ep_wait(c, rcv, hid);
    if (!st)
      st = xs__ep_compute(c, rcv, c->par.pair_s * pairs / n);
    if (!st)
      st = xs__ep_send(c, rcv,
                       disp ? 2 * pairs * b / n : (pairs + tok) * b / n, "hbm",
                       NULL);
    if (!st)
      st = xs__ep_signal(c, rcv, freed, 1);
  }
  return st;
}

/* How a step's RDMA messages reach the wire: the NIC engine (one worker)
 * takes them in order once every channel has posted its step. (Host
 * proxies, UCCL-EP's, are not modelled here: the RDMA ring bounds what
 * is in flight.) */
typedef struct {
  size_t nic, posted;
  double msgs;         /* chunks a step stands for                        */
  double posts;        /* requests the NIC takes a step: per chunk a put
                          and the atomic on its ring's tail, two GPU posts
                          (internode.cu, nvshmemi_ibgda_put_nbi_warp<true>
                          then nvshmemi_ibgda_amo_nonfetch_add); UCCL-EP's
                          proxies carry the atomic in the put's command,
                          one (ep/src/internode.cu, uccl_ibgda.cuh)       */
} rdma_path;

static xs_status rdma_path_new(xs__ep_ctx *c, rdma_path *x) {
  xs_status st = xs__ep_workers(c, "nic", 1, &x->nic);
  if (!st)
    st = xs__ep_counter(c, "posted", &x->posted);
  return st;
}

/* Credits travel back over the network: a worker that lets the sender's
 * step j + window go one network latency after the forwarder's step j. */
static xs_status credit_step(xs__ep_ctx *c, size_t cred, size_t done,
                             size_t credit, double need) {
  xs_status st = xs__ep_await(c, cred, done, need);
  if (!st)
    st = xs__ep_compute(c, cred, c->nic_latency_s);
  if (!st)
    st = xs__ep_signal(c, cred, credit, 1);
  return st;
}

/* What both internode kernels share: the config, C channels, record
 * bytes, a channel's tokens; per channel the (token, node) pairs, those
 * that cross the network, the (token, rank) pairs over NVLink out of the
 * node's forwarders and all of them; the steps, and the steps in flight
 * that the RDMA ring (half of it: lazy credits) and the NVLink ring hold;
 * the workers and counters of the five roles. */
typedef struct {
  v1_config cfg;
  double C, b, k, tok, node_pairs, wire, nvl, all, rwin, nwin;
  size_t n;
  rdma_path x;
  size_t nvl_side, fw, rdma_side, cred, done, credit, nfree;
} inter;

static xs_status inter_setup(xs__ep_ctx *c, double sms, const xs__ep_rdma *rd,
                             inter *g) {
  const xs__ep_route *r = &c->rt;
  int disp = c->phase == XS__EP_DISPATCH;
  g->cfg = disp ? config_for(dispatch_cfg, 12, r->P)
                : config_for(combine_cfg, 12, r->P);
  if (rd && rd->rdma_ring > 0)
    g->cfg.rdma_ring = rd->rdma_ring;
  g->C = fmax(1, floor(sms / 2));
  g->b = record_B(c);
  g->k = c->streams;
  g->tok = r->T / g->C;
  g->node_pairs = g->tok * r->Nn;
  g->wire = g->tok * (r->Nn - r->own);
  g->nvl = g->tok * r->R * (r->G - 1) / r->G;
  g->all = g->tok * r->R;
  double per_node = g->tok * r->Nn / r->N; /* a (channel, node) ring's */
  g->n = xs__ep_steps(c, per_node / g->cfg.rdma_chunk);
  g->rwin = fmax(1, floor(g->n * g->cfg.rdma_ring / fmax(per_node, 1) / 2));
  g->nwin = fmax(1, floor(g->n * g->cfg.nvl_ring / fmax(g->all / r->G, 1)));
  g->x.msgs = g->C * (r->N - 1) * fmax(1, per_node / g->cfg.rdma_chunk / g->n);
  g->x.posts = g->x.msgs * (rd && rd->proxy ? 1 : 2);
  double Ck = g->C * g->k;
  xs_status st;
  if ((st = host_before(c)) || (st = xs__ep_start(c)) ||
      (st = xs__ep_workers(c, disp ? "rdma_sender" : "nvl_sender", Ck,
                           disp ? &g->rdma_side : &g->nvl_side)) ||
      (st = xs__ep_workers(c, "forwarder", Ck, &g->fw)) ||
      (st = rdma_path_new(c, &g->x)) ||
      (st = xs__ep_workers(c, disp ? "nvl_receiver" : "rdma_receiver", g->C,
                           disp ? &g->nvl_side : &g->rdma_side)) ||
      (st = xs__ep_workers(c, "credits", 1, &g->cred)) ||
      (st = xs__ep_counter(c, disp ? "forwarded" : "reduced", &g->done)) ||
      (st = xs__ep_counter(c, "rdma_credit", &g->credit)))
    return st;
  return xs__ep_counter(c, "nvl_free", &g->nfree);
}

static xs_status internode_dispatch(xs__ep_ctx *c, double sms,
                                    const xs__ep_rdma *rd) {
  /* per channel: (token, node) copies into the send buffers (the own
   * node's slot is the local receive buffer), of which remote ones cross
   * the network; the forwarder's NVLink copies to the other ranks of its
   * node of what arrives (by symmetry, what this rank sends), and of its
   * own node's tokens */
  inter g;
  xs_status st = inter_setup(c, sms, rd, &g);
  if (st)
    return st;
  size_t n = g.n, snd = g.rdma_side, fw = g.fw, rcv = g.nvl_side, cred = g.cred;
  size_t fdone = g.done, credit = g.credit, nfree = g.nfree;
  double C = g.C, b = g.b, k = g.k, rwin = g.rwin, nwin = g.nwin;
  double node_pairs = g.node_pairs, wire = g.wire, fwd = g.nvl, recv = g.all;
  rdma_path x = g.x;
  for (size_t j = 0; j < n && !st; j++) {
    size_t nid, fid;
    /* the sender: room in the destination rings (credits lag the remote
     * forwarders by a network latency), then its tokens into the send
     * buffers */
    if (j >= rwin)
      st = xs__ep_await(c, snd, credit, (double)(j + 1 - rwin));
    if (!st)
      st = xs__ep_copy(c, snd, node_pairs / n, node_pairs * b / n, "hbm", NULL);
    /* the coordinators' writes: every channel's chunk of the step, one
     * send standing for x.msgs messages */
    if (!st)
      st = xs__ep_post(c, snd, x.nic, x.posted, C * k * (double)(j + 1),
                       x.posts, C * wire * b / n, &nid);
    /* the forwarders: the step's arrivals, over NVLink to the node's
     * ranks, as the NVLink rings allow */
    if (!st)
      st = xs__ep_wait(c, fw, nid);
    if (!st && j >= nwin)
      st = xs__ep_await(c, fw, nfree, C * (double)(j + 1 - nwin));
    if (!st)
      st = xs__ep_copy(c, fw, fwd / n, fwd * b / n, "nvlink", &fid);
    if (!st)
      st = xs__ep_signal(c, fw, fdone, 1);
    if (!st)
      st = credit_step(c, cred, fdone, credit, C * k * (double)(j + 1));
    /* the NVLink receivers: into the output */
    if (!st)
      st = xs__ep_wait(c, rcv, fid);
    if (!st)
      st = xs__ep_compute(c, rcv, c->par.pair_s * recv / n);
    if (!st)
      st = xs__ep_send(c, rcv, 2 * recv * b / n, "hbm", NULL);
    if (!st)
      st = xs__ep_signal(c, rcv, nfree, 1);
  }
  return st;
}

static xs_status internode_combine(xs__ep_ctx *c, double sms,
                                   const xs__ep_rdma *rd) {
  /* the mirror of the dispatch: every (token, rank) result goes over
   * NVLink to the forwarder of the token's local index, which adds up a
   * node's copies into one per (token, node); those cross the network and
   * the home rank adds up the nodes' */
  inter g;
  xs_status st = inter_setup(c, sms, rd, &g);
  if (st)
    return st;
  size_t n = g.n, snd = g.nvl_side, fw = g.fw, rcv = g.rdma_side, cred = g.cred;
  size_t rdone = g.done, credit = g.credit, nfree = g.nfree;
  double C = g.C, b = g.b, k = g.k, rwin = g.rwin, nwin = g.nwin;
  double nvl = g.nvl, got = g.all, wire = g.wire, node_pairs = g.node_pairs;
  rdma_path x = g.x;
  for (size_t j = 0; j < n && !st; j++) {
    size_t sid, nid;
    if (j >= nwin)
      st = xs__ep_await(c, snd, nfree, C * k * (double)(j + 1 - nwin));
    if (!st)
      st = xs__ep_copy(c, snd, got / n, nvl * b / n, "nvlink", &sid);
    /* the forwarder: the node's copies of the step, added up (read every
     * copy, write one per node) into the RDMA send buffer */
    if (!st)
      st = xs__ep_wait(c, fw, sid);
    if (!st && j >= rwin)
      st = xs__ep_await(c, fw, credit, (double)(j + 1 - rwin));
    if (!st)
      st = xs__ep_copy(c, fw, got / n, (got + node_pairs) * b / n, "hbm", NULL);
    if (!st)
      st = xs__ep_signal(c, fw, nfree, 1);
    if (!st)
      st = xs__ep_post(c, fw, x.nic, x.posted, C * k * (double)(j + 1),
                       x.posts, C * wire * b / n, &nid);
    /* the home rank's receivers add up the nodes' copies */
    if (!st)
      st = xs__ep_wait(c, rcv, nid);
    if (!st)
      st = xs__ep_compute(c, rcv, c->par.pair_s * node_pairs / n);
    if (!st)
      st = xs__ep_send(c, rcv, (node_pairs + g.tok) * b / n, "hbm", NULL);
    if (!st)
      st = xs__ep_signal(c, rcv, rdone, 1);
    if (!st)
      st = credit_step(c, cred, rdone, credit, C * (double)(j + 1));
  }
  return st;
}

xs_status xs__ep_deepep_normal(xs__ep_ctx *c, const xs__ep_rdma *rdma) {
  double sms = c->s->sms > 0 ? c->s->sms : V1_SMS;
  if (sms < 2)
    return xs__fail(c->err, XS_INVALID,
                    "DeepEP's normal kernels run on pairs of SMs: at least 2, "
                    "got %g", sms);
  if (c->rt.N == 1)
    return intranode(c, sms);
  if (c->rt.G > 8)
    return xs__fail(c->err, XS_INVALID,
                    "DeepEP V1's internode kernels reach at most 8 NVLink peers "
                    "(NUM_MAX_NVL_PEERS), the node has %g GPUs",
                    c->rt.G);
  return c->phase == XS__EP_DISPATCH ? internode_dispatch(c, sms, rdma)
                                     : internode_combine(c, sms, rdma);
}
