/*
 * ep.h: expert-parallel dispatch and combine kernels as programs, one file
 * per library (docs/ep.md). A kernel is built for one rank of a symmetric
 * all-to-all: every rank sends what this one sends, so what arrives at
 * this rank from a peer is what this rank sends to its peer, and a
 * receiver here waits on the delivery of the matching send of its own.
 * Differences between libraries come from their programs (who moves the
 * bytes, hops, chunks, windows, where the host sits), read from their
 * source; the machine's numbers come from the profile and its fabric.
 */
#ifndef XSTAGE_PLAN_EP_H
#define XSTAGE_PLAN_EP_H

#include "internal.h"

typedef enum { XS__EP_DISPATCH = 0, XS__EP_COMBINE = 1 } xs__ep_phase;

/* What one call moves (ep.csv's columns, docs/ep.md "Shape"). */
typedef struct xs__ep_shape {
  double tokens;      /* per rank                                        */
  double hidden;
  double topk;
  double experts;
  double ep;          /* ranks                                           */
  double elem_bytes;  /* the payload's dtype: 1 FP8 (the library adds its
                         scales), 2 BF16                                  */
  double align;       /* rows each local expert's received block is padded
                         to (the layout a grouped GEMM reads; 0: none)   */
  int cpu_sync;       /* counts reach the host before the data moves (the
                         notify kernel and a host wait; V2's do_cpu_sync),
                         where the library has it                         */
  double sms;         /* SMs the kernel runs on; 0: the library's default */
  double topk_groups; /* 0: uniform routing; g: each token picks g nodes
                         first (DeepSeek's group-limited routing, DeepEP's
                         internode test)                                  */
  int api_time;       /* time the library's Python call (launches, host
                         work, copies in and out), not the kernel alone   */
  int ll_nic_only;    /* low-latency kernels: same-node peers through the
                         NIC too, as DeepEP's before June 2025 (0: over
                         NVLink, as since)                                */
  int graph;          /* the whole call timed as a CUDA graph's replay
                         (DeepGEMM's baseline): every kernel of the call
                         with its own fixed chain, each queued behind the
                         last (kernel_gap_s, no host launch); DeepEP V2
                         only, without cpu_sync and api_time             */
  int expanded;       /* one received row per (token, local expert), and
                         the combine returns each on its own, the home
                         rank adding the top-k copies (V2's do_expand with
                         allow_multiple_reduction off); DeepEP V2 within
                         one NVLink domain                                */
} xs__ep_shape;

/* The model's constants that no microbenchmark gives; each is fitted to
 * published EP timings and named in docs/ep.md. The validator refits them
 * leaving a source out (xs_validate_ep, --by-source). */
typedef struct xs__ep_params {
  double pair_s; /* an SM's time per (token, destination) it copies:
                    reading the routing, the slot, the flag            */
  double api_s;  /* the host's time in one Python API call of an EP
                    library beyond its kernels                         */
  double nvl_eff; /* the share of the NVLink channel's drain an
                    all-to-all of SM stores gets as payload (128-byte
                    packets with their headers, many flows through the
                    switch); the programs send bytes / nvl_eff          */
} xs__ep_params;

void xs__ep_params_default(xs__ep_params *par);

/* Routing expectations of one rank (uniform or group-limited). */
typedef struct {
  double P, G, N;  /* ranks, ranks per NVLink domain, domains (nodes)   */
  double T, H, K, E;
  double R;        /* distinct ranks a token goes to                    */
  double pself;    /* that one of them is its own rank                  */
  double Nn;       /* distinct nodes it goes to                         */
  double own;      /* that one of them is its own node                  */
  double sel_remote; /* of its top-k selections, the share on other nodes */
  double sel_node;   /* on other ranks of its own node                  */
} xs__ep_route;

/* Expected counts under the shape's routing; checked against a Monte
 * Carlo routing in tests/test_ep.c. */
xs_status xs__ep_routing(const xs__ep_shape *s, double node_gpus,
                       xs__ep_route *r, xs_error *err);

/* A kernel under construction. */
typedef struct xs__ep_ctx {
  const xs__ep_shape *s;
  xs__ep_phase phase;
  const xs_profile *prof;
  xs__ep_params par;
  xs__ep_route rt;
  double gpu_sms;      /* the GPU's SMs                                   */
  double streams;      /* workers of the NVLink channel one copying SM
                          stands for (the profile's ep_sm_streams)       */
  double launch_s, barrier_s, host_sync_s;
  double gap_s;        /* a queued kernel's start behind the last (a CUDA
                          graph's replay): kernel_gap_s, else launch_s    */
  double grid_sync_s;  /* one grid-wide sync inside a kernel             */
  double signal_s;     /* one flag to a peer GPU until its poll sees it   */
  const char *link;    /* the channel to peers in the node: the profile's
                          default (NVLink)                                */
  double nvl_latency_s;
  double nic_latency_s, nic_overhead_s, nic_Bps;
  int has_nic;
  xs_program *p;
  size_t host;         /* the host: launches, waits on counts            */
  size_t go;           /* counter: the kernel has started                 */
  int nsteps_max;      /* a stream of chunks is written as at most this
                          many steps (each stands for several chunks)    */
  xs_error *err;
} xs__ep_ctx;

/* ---- common.c: the frame every kernel shares ---- */

/* Read the profile's numbers into c, build the program with the host
 * worker; fails when the ranks span more than one NVLink domain and the
 * profile has no "nic" channel (naming --fabric). */
xs_status xs__ep_begin(xs__ep_ctx *c, const xs__ep_shape *s, xs__ep_phase ph,
                       const xs_profile *prof, const xs__ep_params *par,
                       const char *name, xs_error *err);
/* Host time before the kernel starts (launches, the notify kernel, the
 * wait for counts), then the signal that lets the SMs go. */
xs_status xs__ep_host(xs__ep_ctx *c, double seconds);
xs_status xs__ep_start(xs__ep_ctx *c);
/* A worker standing for n identical SMs (or NIC engines, proxies),
 * waiting for the start. */
xs_status xs__ep_workers(xs__ep_ctx *c, const char *name, double n,
                         size_t *w);
/* A counter of the program. */
xs_status xs__ep_counter(xs__ep_ctx *c, const char *name, size_t *k);
/* Bytes from worker w on a channel ("nvlink", "nic", "hbm"); the send's
 * index into *sid when not NULL. */
xs_status xs__ep_send(xs__ep_ctx *c, size_t w, double bytes, const char *chan,
                      size_t *sid);
xs_status xs__ep_compute(xs__ep_ctx *c, size_t w, double seconds);
xs_status xs__ep_wait(xs__ep_ctx *c, size_t w, size_t sid);
xs_status xs__ep_signal(xs__ep_ctx *c, size_t w, size_t k, double add);
xs_status xs__ep_await(xs__ep_ctx *c, size_t w, size_t k, double value);
/* A step of a class of SMs that copy: their time per (token,
 * destination) for `pairs` of them, then `bytes` (each SM's, spread over
 * its streams) on a channel. */
xs_status xs__ep_copy(xs__ep_ctx *c, size_t w, double pairs, double bytes,
                      const char *chan, size_t *sid);
/* A step of the NIC's engine (worker nic): once `need` steps are counted
 * on counter `posted` (need < 1: at once), it takes `posts` requests (the
 * work requests a doorbell or a host proxy hands it), each at the
 * fabric's per-request cost (issue_overhead_s; all but the last, whose
 * send pays its own), then sends `bytes`. Steps reach the engine in the
 * order they are written. */
xs_status xs__ep_nic(xs__ep_ctx *c, size_t nic, size_t posted, double need,
                     double posts, double bytes, size_t *sid);
/* Worker w counts its step written (one more on counter `posted`), and
 * the NIC takes it as xs__ep_nic does once `need` steps are counted. */
xs_status xs__ep_post(xs__ep_ctx *c, size_t w, size_t nic, size_t posted, double need,
                      double posts, double bytes, size_t *sid);
/* Steps a stream of `chunks` chunks is written as (at most nsteps_max). */
size_t xs__ep_steps(const xs__ep_ctx *c, double chunks);
/* Finish the program and evaluate it under burstgap: the kernel's time. */
xs_status xs__ep_finish(xs__ep_ctx *c, xs_program **out, double *time_s);
void xs__ep_abort(xs__ep_ctx *c);

/* The expected number of whole batches of b among n draws that each hit
 * with chance p: E[floor(X / b)], X ~ Binomial(n, p) (a queue pair that
 * rings its doorbell every b messages). */
double xs__ep_batches(double n, double p, double b);
/* The expected largest of n independent standard normal draws (Blom's
 * approximation; tests/test_ep.c checks it by Monte Carlo). */
double xs__ep_max_normal(double n);
/* The busiest rank's received selections over the mean under random
 * routing (the largest of P, as a normal's): a kernel with nothing
 * throttling its senders ends when the busiest receiver has its data,
 * and kernels back to back wait on it. */
double xs__ep_busiest(const xs__ep_route *r);
/* What the harness's clock adds to a kernel: with api_time, the Python
 * call and the launch; a kernel timed on the GPU alone (kineto, events
 * around the kernel) adds nothing. */
double xs__ep_call_s(const xs__ep_ctx *c);

/* Bytes of one token's payload: hidden x elem_bytes, and FP8's scales
 * (one float per 128 elements). */
double xs__ep_payload_B(const xs__ep_shape *s);

/* ---- the libraries (one file each) ---- */

/* How an RDMA message reaches the NIC: posted by the GPU (IBGDA, DOCA
 * GPUNetIO, NCCL Gin), or handed to host proxy threads that post it
 * (UCCL-EP) with at most `inflight` writes outstanding per FIFO. */
typedef struct {
  int proxy;         /* 0: GPU-initiated; 1: host proxies              */
  double fifos;      /* FIFOs (GPU-to-host command queues) per GPU     */
  double inflight;   /* writes outstanding per FIFO                    */
  double rdma_ring;  /* tokens of a (channel, node) RDMA ring; 0: the
                        library's recommended config                   */
} xs__ep_rdma;

/* DeepEP V1 normal kernels: intranode (NVLink) and internode (RDMA to
 * the same-index GPU, NVLink forwarding), the notify step. UCCL-EP runs
 * the same kernels with its proxies (rdma). */
xs_status xs__ep_deepep_normal(xs__ep_ctx *c, const xs__ep_rdma *rdma);
/* DeepEP V1 low-latency kernels (and UCCL-EP's). */
xs_status xs__ep_deepep_ll(xs__ep_ctx *c, const xs__ep_rdma *rdma);
xs_status xs__ep_deepep_v2(xs__ep_ctx *c);
xs_status xs__ep_hybrid(xs__ep_ctx *c);
xs_status xs__ep_pplx(xs__ep_ctx *c);
xs_status xs__ep_uccl_normal(xs__ep_ctx *c);
xs_status xs__ep_uccl_ll(xs__ep_ctx *c);

/* ---- kernel.c: the one entry for the rest of the library ---- */

/* One dispatch or one combine kernel of a named library ("deepep-v1",
 * "deepep-v2", "deepep-hybrid", "pplx-kernels", "uccl-ep") and mode
 * ("normal", "low-latency"), as ep.csv spells them, for a shape on a
 * profile (with its fabric when the ranks span nodes): the program
 * (*out, may be NULL; free with xs_program_free) and its burstgap time.
 * par NULL: the fitted defaults. The MegaMoE planner's sequential arm
 * and `xstage validate ep` both call this. */
xs_status xs__ep_kernel(const char *library, const char *mode,
                        xs__ep_phase phase, const xs__ep_shape *shape,
                        const xs_profile *prof, const xs__ep_params *par,
                        xs_program **out, double *time_s, xs_error *err);
/* 1 when the library has that mode */
int xs__ep_known(const char *library, const char *mode);
/* The libraries and modes, in order (NULL past the last). */
size_t xs__ep_library_count(void);
const char *xs__ep_library_name(size_t i, const char **mode);
/* The bytes a library's benchmark divides its time by to print `metric`
 * ("nvl_GBps", "rdma_GBps", "algbw_GBps") for one rank, by that library's
 * own formula (docs/ep.md "What the figures count"); 0 for "time_us" or
 * a metric the library does not print. */
double xs__ep_metric_bytes(const char *library, const char *mode,
                           xs__ep_phase phase, const char *metric,
                           const xs__ep_shape *s, const xs__ep_route *r);

#endif
