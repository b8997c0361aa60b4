/*
 * moe.h: what the files of the MegaMoE kernel model share. The model
 * follows the kernels' own decomposition (docs/plan-megamoe.md): the
 * workload (routing, experts' rows, token blocks: workload.c), the cost of
 * one GEMM tile of a tile configuration (gemm.c), the per-SM program that
 * a persistent kernel's SMs run (emit.c), one file per kernel that orders
 * its work (kernel_*.c), the kernels' default knobs (heuristics.c), and
 * the search over knobs (plan.c).
 */
#ifndef XSTAGE_PLAN_MOE_H
#define XSTAGE_PLAN_MOE_H

#include "internal.h"

/* The sequential arm's all-to-all when the config names none: DeepEP V2's
 * high-throughput kernels, as DeepGEMM's harness runs its baseline */
#define XS__MOE_EP_LIBRARY "deepep-v2"
#define XS__MOE_EP_KERNEL "normal"

/* ---- the workload of one rank (workload.c) ---- */

typedef struct {
  double rows;   /* token rows this rank computes for the expert      */
  int local;     /* a shared expert: its tokens are the rank's own     */
} xs__moe_expert;

/* A token block: up to block_m rows of one expert, in pool order. */
typedef struct {
  uint32_t expert;
  double rows;        /* rows computed (with an all-to-all's padding)   */
  double valid;       /* of which tokens                                */
  double row_end;     /* valid rows of every block up to and with it    */
  int first;          /* the expert's first block                       */
} xs__moe_block;

typedef struct {
  const xs_moe_config *c;
  double S;            /* SMs the kernel runs on                        */
  double T, H, I, E, K, P, El; /* tokens, hidden, intermediate, experts,
                                  top-k, ranks, experts per rank        */
  double mean_pairs;   /* token-expert pairs of a rank, on average      */
  double pairs;        /* of the busiest rank, which the timings see    */
  double touched;      /* expected local experts with a token           */
  double offrank;      /* (P-1)/P: rows that cross the link             */
  double a2a_dest;     /* an all-to-all sends a token to this many other
                          ranks (one copy each)                         */
  xs__moe_expert *experts; /* shared experts first, then routed, largest
                              first                                    */
  size_t nexperts, nshared;
} xs__moe_wl;

xs_status xs__moe_wl_build(const xs_moe_config *c, double sms,
                           xs__moe_wl *wl, xs_error *err);
void xs__moe_wl_free(xs__moe_wl *wl);

/* Token blocks of block_m rows (align: each expert's rows padded up to a
 * multiple of it first, as an all-to-all library's receive layout does;
 * 0 for none). *out is malloc'd. */
xs_status xs__moe_blocks(const xs__moe_wl *wl, double block_m, double align,
                         xs__moe_block **out, size_t *n, xs_error *err);

/* ---- GEMM tiles (gemm.c) ---- */

/* A kernel's tile configuration: the tile, how its math warpgroups split
 * it (each issues WGMMAs of wg_n columns), the cluster and what it
 * multicasts, and how often the FP32 accumulators are promoted (every
 * scale_k of K, on CUDA cores; 0: the MMA applies the scales itself, as
 * Blackwell's block-scaled MMA does). */
typedef struct {
  double bm, bn;      /* tile rows (tokens) and columns                  */
  double wgs;         /* math warpgroups                                 */
  double wg_n;        /* WGMMA N of each warpgroup                       */
  double cluster;     /* CTAs sharing operands by multicast: 1 or 2      */
  int mc_a, mc_b;     /* multicast of A (tokens) or B (weights)          */
  double scale_k1, scale_k2; /* K per promotion in L1 and L2; 0: none    */
  int swap_ab;        /* small M: tokens on WGMMA's N, padded to 8       */
  double stages;      /* TMA pipeline stages (0: as many as fit)         */
  double promo_passes;/* FP32 multiplies of each accumulator register
                         per promotion (0: one, a fused FFMA into a
                         second accumulator)                             */
} xs__tile_cfg;

/* How a call's time is taken (xs_moe_config.timing): kernels launched
 * from the host, a CUDA graph's replay, or the kernels' own time. */
enum { XS__TIMING_STREAM = 0, XS__TIMING_GRAPH = 1, XS__TIMING_DEVICE = 2 };
/* the config's timing, or -1 for a name that is none of them */
int xs__moe_timing(const xs_moe_config *c);

/* The profile's terms of the tile model, read once. */
typedef struct {
  double S, F_sm;     /* SMs, MMA FLOP/s of one SM (datasheet)           */
  double clock_hz;    /* the clock of that peak                           */
  double wgmma_cycles;/* issue cycles per WGMMA instruction beyond its MMA */
  double l2_sm_Bps;   /* L2 to one SM, all SMs streaming                 */
  double tile_s;      /* per 128x128 of a tile's output: prologue and
                         epilogue                                        */
  double launch_s, barrier_s, setup_s;
  double act_bytes, weight_bytes, combine_bytes;
  int hopper;         /* promotions on CUDA cores (sm_90)                */
  /* the latency floor (docs/plan-megamoe.md "The latency floor") */
  double launch_cost_s;  /* a kernel's start as the config's timing sees
                            it: a host launch, a graph node, or none      */
  double pdl_saving_s;   /* taken off launch_cost_s by PDL                */
  double grid_sync_s, signal_s, atomic_s, flag_s;
  double hbm_latency_s;  /* a TMA load's round trip from HBM             */
  double link_latency_s; /* one way over the link to a peer               */
  double dirty_B;        /* dirty L2 bytes a cold-L2 harness leaves, which
                            the first reads from HBM write back           */
} xs__gemm_terms;

xs_status xs__gemm_terms_read(const xs_profile *prof, const xs_moe_config *c,
                              double sms, xs__gemm_terms *g, xs_error *err);

/* Seconds one SM takes for one tile of `rows` valid rows (padded to the
 * tile, or to 8 with swap-AB), N = bn columns, reduction K, of layer
 * 1 or 2 (the promotion interval differs). */
double xs__tile_time(const xs__gemm_terms *g, const xs__tile_cfg *t,
                     double rows, double K, int layer);

/* ---- the per-SM program (emit.c) ---- */


/* One unit of an SM's work: `ntiles` tiles of one block and layer. */
typedef struct {
  uint32_t block;
  uint8_t layer;   /* 1 or 2 */
  uint16_t ntiles;
} xs__task;

typedef struct xs__emit xs__emit;

/* How the kernel moves its tokens and results. */
typedef struct {
  int pull;           /* dispatch warps pull token rows (fused kernels)   */
  double pull_warps;  /* per SM; each has one row in flight              */
  int pull_store_wait;/* the local store is waited for per row           */
  double pull_rows_per_publish; /* arrivals published per this many rows
                                  (1: per row)                           */
  int combine_push;   /* L2 tiles store their outputs to the home ranks  */
  double ring_blocks; /* L1 output ring (blocks); 0: a full pool         */
  double pull_request_s; /* a remote read's request on its way: the
                            link's latency                              */
  const char *link;   /* the channel to other ranks                      */
  double nic_share;   /* of the bytes to other ranks, the share to other
                         nodes, which go over the NIC (0: one domain)     */
  double l1_out_bytes;/* bytes per element of L1's output (FP8: 1; the
                         sequential kernels' BF16: 2)                    */
  double l2_in_bytes; /* what L2 reads of it per element                 */
  int publish_wait;   /* L1 epilogues wait for their store to land before
                         counting themselves done (fused kernels)         */
  double pull_chunk_B;/* a row pulled in chunks of this many bytes, each
                         stored before the next is read (0: whole rows)  */
} xs__emit_flow;

/* A new emitter for a kernel builder's context (moe.h below): the
 * program, the context's classes of SMs (each a worker with copies), the
 * blocks of the workload; with k->audit, what it emits is recorded there. */
typedef struct xs__moe_kctx xs__moe_kctx;
xs_status xs__emit_new(const xs__moe_kctx *k, const xs__tile_cfg *tile,
                       const xs__moe_block *blocks, size_t nblocks,
                       const xs__emit_flow *flow, xs__emit **out,
                       xs_error *err);
void xs__emit_free(xs__emit *e);
/* Split the SM classes where a phase of n tasks ends part way through
 * the SMs (call with every phase's size before the first op). */
xs_status xs__emit_split(xs__emit *e, const size_t *phase_sizes, size_t n);
/* The count hand-shake that opens the lag kernel in place of a barrier:
 * one flag to every other rank, over the link; the pull starts after. */
xs_status xs__emit_handshake(xs__emit *e, xs_error *err);
/* Every SM arrives; the rank's flag exchange goes on while they go on
 * (the lag kernel's early combine: the reduction overlaps the barrier);
 * xs__emit_await_barrier waits for it. */
xs_status xs__emit_barrier_start(xs__emit *e, xs_error *err);
xs_status xs__emit_await_barrier(xs__emit *e, xs_error *err);
/* Every class of SMs runs the next kernel: wait for all SMs to end the
 * last (and its stores to land), then a launch (none with PDL). */
xs_status xs__emit_kernel(xs__emit *e, int pdl, xs_error *err);
/* An all-rank barrier: every SM arrives, one SM signals the other ranks
 * over the link (behind whatever the egress holds), waits for theirs. */
xs_status xs__emit_barrier(xs__emit *e, xs_error *err);
/* A kernel's start: its launch as the config's timing sees it (PDL
 * takes pdl_saving_s off). */
xs_status xs__emit_launch(xs__emit *e, int pdl, xs_error *err);
/* The fused kernels' routing: every SM adds its count of each expert's
 * rows to a per-expert counter (each counter takes one atomic from every
 * SM in turn), stores its rows' slots to their ranks, a grid sync; then
 * SM0 sends each rank its counts. handshake: the lag kernel's flags (one
 * to each rank, polled by every SM; no barrier); else an all-rank
 * barrier without its first grid sync (the routing's serves). */
xs_status xs__emit_routing(xs__emit *e, int handshake, xs_error *err);
/* The end of a kernel after its barrier before the combine: the
 * reduction (with its latency chain) on the SMs and, with cleanup, the
 * barrier after the workspace clean beside it. */
xs_status xs__emit_combine(xs__emit *e, double bytes, int cleanup,
                           xs_error *err);
/* Fixed time on every SM (the routing counts, a grid sync). */
xs_status xs__emit_fixed(xs__emit *e, double seconds, const char *why,
                         xs_error *err);
/* The dispatch pull of every routed block, in pool order, by the pull
 * workers (one per class), starting now. */
xs_status xs__emit_pull(xs__emit *e, xs_error *err);
/* A persistent phase: tasks in the order the kernel hands them out, task t
 * to SM t mod S (its class runs them in order). */
xs_status xs__emit_phase(xs__emit *e, const xs__task *tasks, size_t n,
                         xs_error *err);
/* Time that every SM spends streaming bytes through HBM (an elementwise
 * kernel, the combine reduction): each SM's share of the bytes. */
xs_status xs__emit_stream(xs__emit *e, double bytes, double fixed_s,
                          const char *why, xs_error *err);
/* An all-to-all library's kernel between two of the arm's kernels: every
 * SM waits `seconds` (its time, from the EP kernel programs of
 * src/plan/ep/), counted as waiting for the dispatch (dispatch) or as
 * link time (the combine). */
xs_status xs__emit_ep(xs__emit *e, double seconds, int dispatch,
                      xs_error *err);
/* A growable list of tasks. */
typedef struct {
  xs__task *t;
  size_t n, cap;
} xs__tasks;
/* inline: a kernel adds its tasks one by one, thousands a program */
static inline int xs__tasks_add(xs__tasks *l, size_t block, int layer, size_t ntiles) {
  if (l->n == l->cap && xs__grow(&l->t, &l->cap, l->n + 1, sizeof *l->t))
    return -1;
  l->t[l->n++] = (xs__task){(uint32_t)block, (uint8_t)layer, (uint16_t)ntiles};
  return 0;
}
/* Every tile of one layer of blocks [b0, b1), blocks outer, one task a
 * tile (n tiles a block). */
int xs__tasks_layer(xs__tasks *l, size_t b0, size_t b1, int layer, size_t n);

/* Finish: the program (owned by the caller), and the time shares of the
 * breakdown known from building it. */
xs_status xs__emit_finish(xs__emit *e, xs_program **out, xs_moe_breakdown *bd,
                          xs_error *err);

/* ---- the kernels (kernel_*.c) and their defaults (heuristics.c) ---- */

/* What a kernel builder gets: the workload, the tile terms, the knobs
 * (0: the kernel's default; the builder writes back what it used). It
 * reads the profile only through these typed fields, which the planner
 * resolves once (plan.c): a program is reused for a profile whose fields
 * here are the same. */
struct xs__ep_params;
struct xs__moe_kctx {
  const xs__moe_wl *wl;
  const xs__gemm_terms *g;
  const char *name;
  int ids;
  unsigned groups;
  const char *link;   /* the channel to other ranks */
  double link_latency_s;
  xs__moe_audit *audit; /* tests: record the tiles and runs, or NULL */
  double nic_share;   /* of the bytes to other ranks, the share that
                         crosses the NIC to other nodes (0: one domain) */
  double nic_latency_s;
  /* the sequential arm's all-to-all: its dispatch and combine kernels'
   * burstgap times (src/plan/ep/), set before the sequential kernel runs */
  double a2a_s[2];
  const struct xs__ep_params *ep_par; /* the EP programs' constants the
                         sequential arm's all-to-all takes (NULL: shipped) */
};

typedef xs_status (*xs__moe_kernel_fn)(const xs__moe_kctx *k,
                                       xs_moe_pattern *knobs,
                                       xs_program **out,
                                       xs_moe_breakdown *bd, xs_error *err);
/* The sequential arm's all-to-all: its dispatch and combine kernels'
 * burstgap times on prof (k->a2a_s, which the kernel reads) */
xs_status xs__moe_a2a_times(const xs__moe_kctx *k, const xs_profile *prof,
                            double out[2], xs_error *err);
xs_status xs__moe_kernel_sequential(const xs__moe_kctx *k, xs_moe_pattern *kn,
                                    xs_program **out, xs_moe_breakdown *bd,
                                    xs_error *err);
xs_status xs__moe_kernel_split(const xs__moe_kctx *k, xs_moe_pattern *kn,
                               xs_program **out, xs_moe_breakdown *bd,
                               xs_error *err);
xs_status xs__moe_kernel_wave(const xs__moe_kctx *k, xs_moe_pattern *kn,
                              xs_program **out, xs_moe_breakdown *bd,
                              xs_error *err);
xs_status xs__moe_kernel_interleaved(const xs__moe_kctx *k,
                                     xs_moe_pattern *kn, xs_program **out,
                                     xs_moe_breakdown *bd, xs_error *err);
/* the lag kernel; also the searched and l1-then-l2 schedules, which are its
 * machinery with xstage's own orders (lag = all units: all L1 first) */
xs_status xs__moe_kernel_lag(const xs__moe_kctx *k, xs_moe_pattern *kn,
                             xs_program **out, xs_moe_breakdown *bd,
                             xs_error *err);

/* A kernel's tile with the knobs' block_m and block_n over its default
 * (written back), its token blocks (align: as xs__moe_blocks) and the N
 * tiles of each layer. */
xs_status xs__moe_kernel_blocks(const xs__moe_wl *wl, xs__tile_cfg *tile,
                                xs_moe_pattern *kn, double align,
                                xs__moe_block **blocks, size_t *nb,
                                size_t *n1, size_t *n2, xs_error *err);
/* The flow of a fused kernel: its dispatch warps pull, its L2 tiles push
 * the combine, L1's output is FP8 in HBM; the kernel sets the rest. */
void xs__moe_fused_flow(const xs__moe_kctx *k, xs__emit_flow *flow);
/* A fused kernel of one persistent launch over one task stream (the wave,
 * interleaved and lag kernels): the launch (none with PDL), the routing,
 * a barrier (or the lag kernel's count hand-shake) before the pull, the
 * tasks, the barrier before the combine's reduction (which, with
 * early_combine, runs beside it). */
typedef struct {
  int pdl, handshake, early_combine;
} xs__fused_launch;
/* It takes blocks and the task list and frees both; oom: building the
 * task list ran out of memory (XS_NOMEM, nothing emitted). */
xs_status xs__moe_emit_fused(const xs__moe_kctx *k, const xs__tile_cfg *tile,
                             xs__moe_block *blocks, size_t nb,
                             const xs__emit_flow *flow, xs__tasks *tasks, int oom,
                             xs__fused_launch how, xs_program **out,
                             xs_moe_breakdown *bd, xs_error *err);
/* The reduction of every token's top-k results and its own copy. */
double xs__moe_reduce_bytes(const xs__moe_kctx *k);

void xs__moe_tile_split(const xs__moe_wl *wl, xs__tile_cfg *t);
void xs__moe_tile_wave(const xs__moe_wl *wl, xs__tile_cfg *t);
void xs__moe_tile_lag(const xs__moe_wl *wl, xs__tile_cfg *t);
void xs__moe_tile_sm100(const xs__moe_wl *wl, xs__tile_cfg *t);
/* the wave and interleaved kernels: the SM90 ports' tile, or SM100's */
void xs__moe_tile_wave_or_sm100(const xs__moe_wl *wl, const xs__gemm_terms *g,
                                xs__tile_cfg *t);
void xs__moe_tile_grouped(const xs__moe_wl *wl, const xs__gemm_terms *g,
                          xs__tile_cfg *t);
double xs__moe_default_lag(const xs__moe_wl *wl, double bound);
double xs__moe_default_epw(const xs__moe_wl *wl, const xs__tile_cfg *t);
/* The defaults the kernels take at a tile: the wave kernels' experts per
 * wave (kernel_wave.c: the SM90 port's rule or SM100's), the interleaved
 * kernel's warm-up waves (n1, n2: a block's L1 and L2 tiles), and the lag
 * kernel's buffer (1: L1's output goes to a ring, the lag order; 0: a full
 * pool, all L1 first) and its units of up to 8 blocks of one expert. */
double xs__moe_wave_epw(const xs__moe_wl *wl, const xs__gemm_terms *g,
                        const xs__tile_cfg *t);
double xs__moe_default_warmup(size_t n1, size_t n2);
int xs__moe_lag_ring(const xs__moe_wl *wl, const xs__tile_cfg *t);
size_t xs__moe_lag_units(const xs__moe_block *b, size_t nb);

#endif
