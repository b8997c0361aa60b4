/*
 * attention.h: what the files of the ring attention planner share. The
 * planner follows how ring (context-parallel) attention runs
 * (docs/plan-flashattn.md): the config and its names (config.c), the
 * attention kernel's tiles and throughput and the SMs it keeps busy
 * (kernel.c), the ring's steps under each causal layout (ring.c), the
 * named cost terms with their sources (costs.c), the per-SM programs
 * every way of moving KV shares (emit.c), one file per way of moving KV
 * (way_sequential.c, way_stream.c, way_sms.c, way_piggyback.c), and the
 * evaluation and search (plan.c).
 */
#ifndef XSTAGE_PLAN_ATTENTION_H
#define XSTAGE_PLAN_ATTENTION_H

#include "internal.h"

/* ---- the attention kernel (kernel.c) ---- */

/* One kernel and pass: its measured throughput and shape. */
typedef struct {
  double F;      /* forward-equivalent FLOP/s on all SMs               */
  double gpu_sms;/* the SMs F is measured on (the profile's)           */
  double cta_s;  /* per CTA (Q tile), outside its KV loop              */
  double ceff;   /* causal efficiency                                  */
  double bm, bn; /* Q and KV tile rows                                 */
  double per_sm; /* CTAs resident on an SM, sharing it                 */
  double stages; /* KV stages in the kernel's shared-memory pipeline   */
  int measured;  /* 0: F from the profile's FLOP/s x efficiency (a lead) */
  char key[64];  /* measured: the attn_* entries F, cta_s and ceff come
                    from ("fa3", "fa3_d64", "fa2_fwd_bwd")              */
} xs__fa_kfig;

/* One kernel call on the SMs: the SMs sorted by when they finish, in
 * XS__FA_CLASSES groups of equal size (fewer with fewer SMs), each
 * group's time its latest SM's. */
#define XS__FA_CLASSES 4
typedef struct {
  size_t n;
  double sms[XS__FA_CLASSES];  /* SMs in the class                      */
  double time[XS__FA_CLASSES]; /* busy time of each of them             */
  double end;                  /* the kernel's time: the latest class   */
  double iter_s;               /* one KV iteration of one CTA on an SM  */
} xs__fa_kcall;

/* The figures of c's kernel, pass backward (0: forward), from the
 * profile; without attn_flops_per_s for it, the profile's FLOP/s for the
 * dtype times its efficiency (measured = 0). */
xs_status xs__fa_kernel_figures(const xs_fa_config *c, const xs_profile *prof,
                                int backward, xs__fa_kfig *k, xs_error *err);
/* One kernel call of lq queries against lk keys (the diagonal square
 * when causal) on sms SMs. */
xs_status xs__fa_kernel_call(const xs_fa_config *c, const xs__fa_kfig *k,
                             double sms, double lq, double lk, int causal,
                             xs__fa_kcall *out, xs_error *err);

/* Kernel calls a plan has timed, so that its layouts and candidates do
 * not time the same call again (the causal one is simulated CTA by CTA) */
#define XS__FA_KCACHE 64
typedef struct {
  size_t n;
  struct {
    int backward, causal;
    double sms, lq, lk;
    xs__fa_kcall call;
  } e[XS__FA_KCACHE];
} xs__fa_kcache;

/* ---- the ring's steps (ring.c) ---- */

/* The kernel shapes a ring runs (each timed once) */
enum { XS__FA_FULL, XS__FA_CAUSAL, XS__FA_HALF_KV, XS__FA_HALF_Q, XS__FA_SHAPES };

typedef struct {
  int shape;        /* XS__FA_* on the busiest rank                      */
  int backward;     /* a step of the backward ring                       */
  double mean_s;    /* the ranks' mean kernel time (imbalance)           */
  double out_share; /* of the output the step's merge updates            */
  double send_B;    /* bytes forwarded at this step (0: none)            */
  double loaded;    /* of send_B, the share the kernel loads anyway
                       (piggyback rides those; the rest is loaded to
                       be sent)                                         */
} xs__fa_step;

typedef struct {
  const xs_fa_config *c;
  double sms;
  xs__fa_kfig kf, kb;                  /* forward and backward figures  */
  xs__fa_kcall call[2][XS__FA_SHAPES]; /* [backward][shape], all SMs    */
  int have[2][XS__FA_SHAPES];
  size_t n;                            /* steps: P, or 2P with backward */
  xs__fa_step *step;
  xs__fa_kcache *cache; /* may be NULL                                  */
  double kv_B;      /* the KV block of one rank                         */
  double out_el;    /* output elements of one rank                      */
  int fused;        /* the merge the ring's way runs (1: fused into one
                       kernel, 6 B an element; 0: ring-flash-attention's
                       unfused one): under zigzag it decides which of a
                       step's two kinds of rank is the busier           */
} xs__fa_ring;

/* The steps on the busiest rank of c's ring, forward and, with
 * c->backward, backward, for a way whose merge is fused (1) or not (0);
 * the local arm (no ring) with local = 1. */
xs_status xs__fa_ring_build(const xs_fa_config *c, const xs_profile *prof,
                            int local, int fused, xs__fa_kcache *cache,
                            xs__fa_ring *r, xs_error *err);
void xs__fa_ring_free(xs__fa_ring *r);
/* The ring's kernel calls on `sms` SMs (the ring's own when sms is its). */
xs_status xs__fa_ring_calls(const xs__fa_ring *r, double sms,
                            xs__fa_kcall out[2][XS__FA_SHAPES], xs_error *err);

/* ---- the cost terms (costs.c) ---- */

/* Every cost the planner charges beyond kernels and the channel, each a
 * named term with its source (costs.c); a sensitivity run scales them. */
typedef struct {
  double launch_s;      /* the host's launch of a kernel from C++ (profile) */
  double gap_s;         /* the GPU's gap between two dependent kernels
                           already queued (profile kernel_gap_s; 0 there:
                           launch_s)                                      */
  double host_op_s;     /* the host's issue of one eager PyTorch op from
                           Python (profile)                               */
  double nccl_s;        /* an NCCL send and receive's fixed time beyond
                           its bytes (profile nccl_p2p_s)                 */
  double sync_s;        /* the host's wait on a step's send and receive
                           (profile ring_step_s)                          */
  double barrier_s;     /* a device-side barrier across the ranks         */
  double merge_Bps;     /* HBM bandwidth elementwise kernels reach        */
  double unfused_B;     /* merge bytes an output element, unfused         */
  double fused_B;       /* the same, fused into one kernel                */
  double convert_B;     /* a conversion between BF16 and FP32             */
  double grad_B;        /* backward: accumulating one gradient element    */
  double unfused_kernels; /* launches of an unfused merge                 */
  double comm_sms;      /* SMs the communication kernel holds (profile)   */
  double comm_cta_Bps;  /* what one of its CTAs sends (profile; 0: r_w)   */
  double forward_sm_Bps;/* what one SM's bulk stores send (profile; 0: r_w) */
  double hbm_Bps;       /* HBM bandwidth (profile)                        */
  double interference;  /* kernel time lost per second of HBM traffic a
                           concurrent transfer moves                      */
  double link_hbm_B;    /* HBM bytes a transfer moves per byte sent and
                           received: the sender's read, the receiver's
                           write                                          */
  double phase_groups;  /* piggyback: groups of SMs whose forwards are
                           staggered over the kernel                      */
  /* what a ring written in Python issues, as ring-flash-attention orders
   * it (costs.c says where each count comes from) */
  double post_ops;      /* posting a step's send and receive: eager ops   */
  double merge_first_ops; /* the first step's merge (a conversion): ops   */
  double merge_ops;     /* a later step's merge: eager ops from Python,
                           launching unfused_kernels kernels              */
  double slice_ops;     /* zigzag's half-output steps: more ops...        */
  double slice_kernels; /* ...and the copies they launch                  */
  double end_ops;       /* after the last step: the output's conversion   */
  double bwd_kernels;   /* kernels one backward attention call launches   */
  double bwd_acc_ops;   /* a backward step's gradient accumulation: ops   */
  double bwd_posts;     /* sends a backward step posts (K, V; dK, dV)     */
  double bwd_end_ops;   /* after the backward: the gradients' conversion  */
  double native_kernels_sms; /* dedicated-sms: kernels a step launches
                           from C++ (the ring, its reduction, a barrier)  */
  double native_kernels_piggyback; /* piggyback: the same (ring, merge)   */
} xs__fa_costs;

void xs__fa_costs_of(const xs_profile *prof, xs__fa_costs *t);

/* ---- programs (emit.c and the ways) ---- */

/* A program under construction: the kernel's SM classes as workers
 * (copies: the SMs of a class), the step counter that ends each kernel,
 * and what the breakdown needs. */
#define XS__FA_WORKERS 64
typedef struct {
  xs_program *p;
  const xs__fa_ring *r;
  const xs__fa_costs *t;
  int comm_free;       /* every forward free: no bytes, no SMs, no HBM   */
  /* the kernel calls the compute workers run (the ring's, or on fewer
   * SMs) */
  const xs__fa_kcall (*call)[XS__FA_SHAPES];
  size_t w[XS__FA_WORKERS]; /* compute workers, one per SM class        */
  size_t wclass[XS__FA_WORKERS]; /* its class in the kernel call (SIZE_MAX:
                                    not a kernel worker)                */
  size_t wgroup[XS__FA_WORKERS]; /* piggyback: its phase group          */
  double wsms[XS__FA_WORKERS];
  size_t nw;
  size_t barrier;      /* counter: SMs done with the step's kernel       */
  double barrier_n;    /* its value so far                               */
  /* the host that issues the ring's work (one worker): pipelined, it
   * runs beside the GPU (calls back to back); synced, it signals each
   * piece of work it has issued and the GPU waits for the signal */
  size_t host, issued; /* the host worker, its counter                   */
  double issued_n;     /* pieces of work issued so far                   */
  int synced;
  char channel[64];    /* the channel forwards go on                     */
  const xs_channel *ch;
  double r_w;          /* its per-worker rate                             */
  /* the breakdown's static terms, summed over steps */
  double compute_s, merge_s, fixed_s, interference_s, imbalance_s;
  double host_total_s; /* the host's busy time                           */
} xs__fa_prog;

/* A way of moving KV (way_*.c): the rest of the program started by
 * xs__fa_prog_start, for its knob (dedicated-sms: the SMs set aside; the
 * program's kernel calls are then on the others). */
typedef xs_status (*xs__fa_way)(xs__fa_prog *g, unsigned forward_sms,
                                xs_error *err);
xs_status xs__fa_way_sequential(xs__fa_prog *g, unsigned k, xs_error *err);
xs_status xs__fa_way_stream(xs__fa_prog *g, unsigned k, xs_error *err);
xs_status xs__fa_way_sms(xs__fa_prog *g, unsigned k, xs_error *err);
xs_status xs__fa_way_piggyback(xs__fa_prog *g, unsigned k, xs_error *err);
/* the local arm: the rank's own kernel call, no ring */
xs_status xs__fa_way_local(xs__fa_prog *g, unsigned k, xs_error *err);

/* emit.c: helpers the ways share */
/* Start a program for ring r: one worker per group of SMs of the kernel
 * calls `call` (each split `groups` ways, for piggyback's staggered
 * forwards; 1 otherwise), and the barrier's counter. */
xs_status xs__fa_prog_start(xs__fa_prog *g, const xs__fa_ring *r,
                            const xs__fa_costs *t, const xs_profile *prof,
                            const xs__fa_kcall (*call)[XS__FA_SHAPES],
                            size_t groups, int comm_free, const char *name,
                            xs_error *err);
/* Another worker (a communication kernel's SMs) that takes part in the
 * barriers, merges and waits but runs no attention tiles. */
xs_status xs__fa_add_worker(xs__fa_prog *g, const char *name, double copies,
                            size_t *w, xs_error *err);
/* The kernel call step s runs on the program's SMs */
const xs__fa_kcall *xs__fa_call(const xs__fa_prog *g, size_t s);
/* Every worker signals the kernel's end and awaits all of them. */
xs_status xs__fa_barrier(xs__fa_prog *g, xs_error *err);
/* Step s's kernel on the kernel workers: each class computes its time
 * times `slow` plus `extra` (the interference term, every SM alike),
 * recorded as terms; then the barrier. */
xs_status xs__fa_kernel_on_classes(xs__fa_prog *g, size_t s, double slow,
                                   double extra, xs_error *err);
/* the terms alone, for a way that writes its own kernel ops */
void xs__fa_kernel_terms(xs__fa_prog *g, size_t s, double slow, double extra);
/* Every worker computes `seconds`: a kernel that takes the whole GPU (the
 * merge) or a cost on the critical path between kernels. */
xs_status xs__fa_all_compute(xs__fa_prog *g, double seconds, xs_error *err);
/* Every worker waits for the send (the next block's arrival). */
xs_status xs__fa_all_wait(xs__fa_prog *g, size_t send, xs_error *err);
/* Step s's merge (the ring's kind: fused, one kernel, 6 B an element;
 * else ring-flash-attention's) and the fixed costs after it: `launches`
 * kernels' gaps on the GPU and `fixed` seconds more, recorded as terms. */
xs_status xs__fa_merge(xs__fa_prog *g, size_t s, double launches, double fixed,
                       xs_error *err);
/* The final conversion of the output (and, backward, the gradients), and
 * the program finished; end_ops: what the host issues for it (eager ops). */
xs_status xs__fa_prog_end(xs__fa_prog *g, double end_ops, xs_error *err);
/* The host issues a piece of work: it is busy `seconds`, then (synced)
 * signals it; xs__fa_await_issue makes worker w (SIZE_MAX: every kernel
 * and communication worker) wait for the latest such signal. */
xs_status xs__fa_host_issue(xs__fa_prog *g, double seconds, xs_error *err);
xs_status xs__fa_await_issue(xs__fa_prog *g, size_t w, xs_error *err);
/* The host busy `seconds` with work the GPU does not wait for (a wait on
 * a send, Python between calls). */
xs_status xs__fa_host_busy(xs__fa_prog *g, double seconds, xs_error *err);
/* Host time of a Python ring's step s, in its parts (way_stream.c's
 * order, ring-flash-attention's): posting the send and receive, the
 * attention call, the merge (or, backward, the accumulation); and the
 * GPU kernels the merge launches. */
double xs__fa_post_host(const xs__fa_prog *g, size_t s);
double xs__fa_call_host(const xs__fa_prog *g, size_t s);
double xs__fa_merge_host(const xs__fa_prog *g, size_t s, int fused);
double xs__fa_merge_kernels(const xs__fa_prog *g, size_t s, int fused);
/* A sender of `units` CTAs or SMs each sending at unit_Bps (0: the
 * channel's per-worker rate r_w), as copies of a worker at r_w: the
 * copies' count (at least 1). */
double xs__fa_streams(const xs__fa_prog *g, double units, double unit_Bps);
/* Seconds the kernel loses to a concurrent transfer's HBM traffic of
 * hbm_bytes: the interference term (0 when communication is free). */
double xs__fa_interference(const xs__fa_prog *g, double hbm_bytes);

/* ---- the planner (plan.c) ---- */

/* xs_fa_predict under every model (time_s[xs_model]), for validation */
xs_status xs__fa_predict_models(const xs_fa_config *c, const xs_profile *prof,
                                xs_fa_path path, double time_s[XS_MODEL_COUNT],
                                xs_fa_breakdown *bd, xs_error *err);

#endif
