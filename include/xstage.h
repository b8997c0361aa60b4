/*
 * xstage.h: the public contract of libxstage.
 *
 * libxstage models posted sends from fused GPU kernels with the Burst-Gap
 * model (docs/model.md): a channel injects at R_inj while fewer than C bytes
 * are in flight and drains at R_drain; past C the sender is held to the drain
 * rate. Programs (workers, each a list of compute/send/wait/fence ops) are
 * evaluated exactly under that model and under the blocking, serial and
 * ideal baselines.
 *
 * Conventions:
 *  - Every unit is SI and appears in the name: bytes (_B), seconds (_s),
 *    bytes per second (_Bps).
 *  - Functions that can fail return an xs_status and, when err is not NULL,
 *    fill it with a message that says what was wrong and where.
 *  - Whoever receives a pointer from an xs_*_new / xs_*_load / xs_*_parse /
 *    xs_evaluate call owns it and frees it with the matching xs_*_free; every
 *    xs_*_free accepts NULL. Strings returned as char * are freed with free().
 *  - The library keeps no global mutable state; objects may be used from
 *    several threads as long as each object is used by one at a time.
 */
#ifndef XSTAGE_H
#define XSTAGE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The version, kept here only: CMake reads these three lines. */
#define XSTAGE_VERSION_MAJOR 0
#define XSTAGE_VERSION_MINOR 2
#define XSTAGE_VERSION_PATCH 0
#define XSTAGE_VERSION_STR2(x) #x
#define XSTAGE_VERSION_STR(a, b, c)                                           \
  XSTAGE_VERSION_STR2(a) "." XSTAGE_VERSION_STR2(b) "." XSTAGE_VERSION_STR2(c)
#define XSTAGE_VERSION                                                        \
  XSTAGE_VERSION_STR(XSTAGE_VERSION_MAJOR, XSTAGE_VERSION_MINOR,              \
                     XSTAGE_VERSION_PATCH)
/* One number that grows with every release: 10000*major + 100*minor + patch */
#define XSTAGE_VERSION_NUMBER                                                 \
  (XSTAGE_VERSION_MAJOR * 10000 + XSTAGE_VERSION_MINOR * 100 + XSTAGE_VERSION_PATCH)

/* XS_API marks what the shared libraries export; everything else is
 * compiled with hidden visibility. Static linking needs nothing extra. */
#if defined(__GNUC__)
#define XS_API __attribute__((visibility("default")))
#else
#define XS_API
#endif

/* The version of the library linked at run time ("0.2.0"), which may differ
 * from XSTAGE_VERSION, the header's. */
XS_API const char *xs_version(void);
/* XSTAGE_VERSION_NUMBER of the library linked at run time. */
XS_API int xs_version_number(void);

/* ---- Status codes: one table; numbers never change once used. ---- */
#define XS_STATUS_MAP(X)                                                     \
  X(OK, 0, "success")                                                        \
  X(INVALID, 1, "invalid input")                                             \
  X(PARSE, 2, "malformed input")                                             \
  X(NOMEM, 3, "out of memory")                                               \
  X(IO, 4, "input/output error")                                             \
  X(CYCLE, 5, "waits form a cycle")                                          \
  X(NOTFOUND, 6, "not found")                                                \
  X(NOTBUILT, 7, "not built in")                                             \
  X(NODEV, 8, "no device found")                                             \
  X(TIMEOUT, 9, "timed out")                                                 \
  X(INTERNAL, 10, "internal error")

typedef enum {
#define XS_STATUS_ENUM(name, num, text) XS_##name = num,
  XS_STATUS_MAP(XS_STATUS_ENUM)
#undef XS_STATUS_ENUM
} xs_status;

/* A fixed string for the status ("invalid input"); never NULL. */
XS_API const char *xs_strerror(xs_status status);

/* Detail travels with the error: "prog.json:4:17: workers[0].ops[2].send:
 * expected a number of bytes >= 0, got -5". Caller-allocated. */
typedef struct xs_error {
  xs_status status;
  char message[1024];
} xs_error;

/* ---- Units: flags take suffixes, JSON stays SI. ---- */

/* "64KiB", "1.5MB", "4096" (bytes). Decimal (kB, MB, GB, TB) and binary
 * (KiB, MiB, GiB, TiB) prefixes; "B" optional. Result >= 0 and finite. */
XS_API xs_status xs_parse_size(const char *text, double *bytes, xs_error *err);
/* "4096", "4Ki" (4096), "32k" (32000), "1Mi": a whole number >= 0 with an
 * optional decimal (k, M, G, T) or binary (Ki, Mi, Gi, Ti) multiplier, for
 * token counts, SMs and other counts. At most 2^53. */
XS_API xs_status xs_parse_count(const char *text, double *count, xs_error *err);
/* "2us", "1.5ms", "3e-6" (seconds); s, ms, us, ns, ps. >= 0 and finite. */
XS_API xs_status xs_parse_time(const char *text, double *seconds, xs_error *err);
/* "300MB/s", "1.6Gbit/s", "2e9" (bytes/s); byte or bit units with decimal or
 * binary prefixes, "/s" or "ps" suffix. > 0 and finite. */
XS_API xs_status xs_parse_rate(const char *text, double *bytes_per_s,
                        xs_error *err);
/* Token counts as `plan --tokens-grid` takes them: values and ranges
 * FIRST:LAST[:STEP], comma-separated ("64,128", "64:4096:64"), whole
 * numbers from 1 to 1e9 (decimal), ascending, at most max of them. *out is
 * malloc'd (free()); messages name the character at fault. */
XS_API xs_status xs_parse_token_grid(const char *text, size_t max, double **out,
                                     size_t *n, xs_error *err);
/* "0.01" or "1%": a fraction from 0 to 1 (plan's --tolerance). */
XS_API xs_status xs_parse_fraction(const char *text, double *out, xs_error *err);
/* Human formatting into buf (at least 32 bytes): "12.3 us", "4.00 MiB",
 * "370 GB/s". Returns buf. */
XS_API char *xs_format_time(double seconds, char *buf, size_t size);
XS_API char *xs_format_size(double bytes, char *buf, size_t size);
XS_API char *xs_format_rate(double bytes_per_s, char *buf, size_t size);

/* ---- Channels and profiles ---- */

/* One direction of one link (docs/formats.md "Profile"). */
typedef struct xs_channel {
  double inject_Bps;        /* R_inj: all issuers together, while room    */
  double worker_inject_Bps; /* r_w: one worker; defaults to inject_Bps    */
  double drain_Bps;         /* R_drain: delivery rate                     */
  double capacity_B;        /* C: bytes in flight before backpressure;
                               INFINITY when unbounded                    */
  double latency_s;         /* L: added to every delivery                 */
  double issue_overhead_s;  /* o: worker time per send before its bytes   */
  double packet_B;          /* simulator packet size; 0 = its default     */
  double worker_inflight_B; /* simulator per-worker in-flight limit;
                               INFINITY = none                            */
} xs_channel;

/* Fill with defaults for the given rates (unbounded capacity, no latency). */
XS_API void xs_channel_init(xs_channel *channel, double inject_Bps,
                     double drain_Bps);
/* Checks the rules of docs/formats.md "Profile" (rates positive and
 * finite, ...). */
XS_API xs_status xs_channel_check(const xs_channel *channel, const char *name,
                           xs_error *err);

typedef struct xs_profile xs_profile;

/* An empty profile to fill with xs_profile_add_channel. */
XS_API xs_profile *xs_profile_new(const char *name, const char *source);
XS_API void xs_profile_free(xs_profile *profile);
/* Copies *channel; channels are kept in name order. */
XS_API xs_status xs_profile_add_channel(xs_profile *profile, const char *name,
                                 const xs_channel *channel, xs_error *err);
/* Compute section (for planners). flops_per_s keyed by dtype ("bf16"). */
XS_API xs_status xs_profile_set_compute(xs_profile *profile, unsigned sms,
                                 double efficiency, double hbm_Bps,
                                 xs_error *err);
XS_API xs_status xs_profile_set_flops(xs_profile *profile, const char *dtype,
                               double flops_per_s, xs_error *err);

/* The kernel model's costs (docs/plan-megamoe.md "Kernel model"), part of
 * the compute section; every field 0 when the profile does not give it. */
typedef struct xs_kernel_costs {
  double launch_s;       /* one kernel launch, back to back in a stream    */
  double barrier_s;      /* one barrier across the EP ranks over the link  */
  double a2a_fixed_s;    /* fixed cost of one dispatch or one combine
                            kernel of an all-to-all library, beyond its
                            launch and its bytes                          */
  double tile_overhead_s;/* per 128x128 of a GEMM tile's output: prologue
                            and epilogue time not spent in the MMA loop   */
  /* the MegaMoE kernel model's GEMM tiles (docs/plan-megamoe.md "GEMM
   * tiles"), with flops_per_s as the MMA peak and the "hbm" channel */
  double mma_clock_hz;   /* the clock of that peak                          */
  double wgmma_cycles;   /* issue cycles one WGMMA (or MMA) instruction
                            costs beyond its math                         */
  double l2_Bps;         /* L2 to SMs, every SM streaming                   */
  double promotion;      /* 1: FP8 accumulators promoted on CUDA cores at
                            each scale block (sm_90); 0: by the MMA       */
  double setup_s;        /* a fused kernel's routing counts and grid sync
                            before its dispatch                           */
  double host_sync_s;    /* a round trip through the host between two
                            kernels (an all-to-all library that copies
                            its counts to the CPU)                        */
  /* the attention planner's (docs/plan-flashattn.md "Costs") */
  double copy_efficiency;/* fraction of hbm_Bps elementwise kernels reach
                            (merging partial outputs; 0: 1)               */
  double ring_step_s;    /* host-side cost of one ring step: posting the
                            send and receive, waiting on them             */
  double comm_sms;       /* SMs a communication kernel on its own stream
                            (NCCL's send and receive) holds while it runs */
  double comm_cta_Bps;   /* bytes/s one CTA of that kernel sends (0: the
                            channel's per-worker rate)                    */
  double forward_sm_Bps; /* bytes/s one SM sends with bulk stores from
                            inside a kernel (0: the channel's per-worker
                            rate)                                         */
  double host_op_s;      /* host time to issue one eager PyTorch op from
                            Python (argument parsing, dispatch, kernel
                            launch): a ring written in Python pays it for
                            every op of every step (0: none)              */
  double kernel_gap_s;   /* GPU time between two dependent kernels
                            already queued in a stream (0: launch_s)      */
  double nccl_p2p_s;     /* fixed time of one NCCL send and receive
                            beyond its bytes (0: none)                    */
  /* the EP kernels' (docs/ep.md) */
  double ep_sm_streams;  /* a whole number: the NVLink channel's workers
                            (each at its worker_inject_Bps) one SM of an
                            EP library's copy kernel stands for, all its
                            warps or its TMA unit storing; 0: one       */
  /* the latency floor (docs/plan-megamoe.md "The latency floor"): each
   * from a microbenchmark or a kernel's source, 0 where unknown */
  double grid_sync_s;    /* a grid-wide barrier inside one GPU: every CTA's
                            atomic arrival on one counter, then its poll   */
  double signal_s;       /* one flag from an SM to a peer GPU until the
                            peer's poll sees it (half a signal ping-pong)  */
  double pdl_saving_s;   /* what programmatic dependent launch takes off a
                            dependent kernel's start                       */
  double atomic_s;       /* the time one global atomic holds its address:
                            same-address atomics from many SMs queue       */
  double flag_s;         /* a release store on one SM until another SM's
                            acquire poll on the same GPU sees it           */
  double l2_B;           /* the L2 cache's capacity, bytes                */
} xs_kernel_costs;

XS_API xs_status xs_profile_set_kernel_costs(xs_profile *profile,
                                      const xs_kernel_costs *costs,
                                      xs_error *err);
XS_API void xs_profile_kernel_costs(const xs_profile *profile, xs_kernel_costs *out);
/* The channel a send without one goes on (docs/formats.md "Profile"):
 * name NULL for the first in name order. */
XS_API xs_status xs_profile_set_default_channel(xs_profile *profile,
                                                const char *name,
                                                xs_error *err);
XS_API size_t xs_profile_default_channel(const xs_profile *profile);
/* The attention kernel's numbers (docs/plan-flashattn.md "Attention
 * kernel"), keyed by kernel and pass: "fa2" (forward), "fa2_fwd_bwd"
 * (forward and backward), "fa3", "fa4". */
typedef enum {
  XS_ATTN_FLOPS = 0,  /* attn_flops_per_s: throughput at long sequences,
                         head dim 128, full mask (forward FLOPs; forward and
                         backward counted as 3.5 forwards)               */
  XS_ATTN_CTA_S = 1,  /* attn_cta_s: per CTA (Q tile): load Q, write O and
                         the log-sum-exp                                 */
  XS_ATTN_CAUSAL_EFFICIENCY = 2, /* attn_causal_efficiency: a causal
                         kernel's throughput over the full one's, beyond
                         the work it skips (masking the diagonal tiles)  */
  XS_ATTN_TABLES = 3
} xs_attn_table;
XS_API xs_status xs_profile_set_attn(xs_profile *profile, xs_attn_table table,
                              const char *kernel, double value,
                              xs_error *err);
/* 0 when the profile does not give it */
XS_API double xs_profile_attn(const xs_profile *profile, xs_attn_table table,
                       const char *kernel);
/* Where a number of the profile comes from: "sources" maps a key path
 * ("compute.hbm_Bps", "channels.nvlink.drain_Bps") to a text that starts
 * with its kind (measurement, derived, datasheet or lead). NULL if none. */
XS_API const char *xs_profile_number_source(const xs_profile *profile,
                                     const char *key);
XS_API size_t xs_profile_source_count(const xs_profile *profile);
XS_API const char *xs_profile_source_key(const xs_profile *profile, size_t i);

/* Give `to` the compute section of `from` (sms, efficiency, hbm_Bps,
 * every dtype's flops and GEMM throughput, the kernel costs), replacing its
 * own: a measured channel with a published machine's compute, for the
 * planners. */
XS_API xs_status xs_profile_copy_compute(xs_profile *to, const xs_profile *from,
                                  xs_error *err);

/* Parse profile JSON; filename is used in messages only (may be NULL). */
XS_API xs_status xs_profile_parse(const char *text, size_t length,
                           const char *filename, xs_profile **out,
                           xs_error *err);
/* A built-in profile name (see xs_builtin_profile_*) or a path to JSON. */
XS_API xs_status xs_profile_load(const char *name_or_path, xs_profile **out,
                          xs_error *err);
/* Serialise as profile JSON, numbers exactly (xs_profile_parse gives the
 * same profile back); free() the result. NULL when out of memory or when
 * the profile's name or source is not UTF-8 (JSON holds only UTF-8). */
XS_API char *xs_profile_to_json(const xs_profile *profile);

XS_API const char *xs_profile_name(const xs_profile *profile);
XS_API const char *xs_profile_source(const xs_profile *profile);
XS_API size_t xs_profile_channel_count(const xs_profile *profile);
XS_API const char *xs_profile_channel_name(const xs_profile *profile, size_t i);
XS_API const xs_channel *xs_profile_channel(const xs_profile *profile, size_t i);
/* Index of the named channel, or -1. */
XS_API long xs_profile_find_channel(const xs_profile *profile, const char *name);
/* 0 SMs when the profile has no compute section. */
XS_API unsigned xs_profile_sms(const xs_profile *profile);
XS_API double xs_profile_efficiency(const xs_profile *profile);
XS_API double xs_profile_hbm_Bps(const xs_profile *profile);
/* 0 when the dtype is not listed. */
XS_API double xs_profile_flops_per_s(const xs_profile *profile, const char *dtype);
/* The GPU's architecture as its compute capability times 10 (80: sm80,
 * Ampere; 90: Hopper; 100, 103: Blackwell), from "compute": {"arch":
 * "sm90"}; 0 when the profile does not say. The planners name and refuse
 * kernels by it (docs/formats.md "Profiles"). */
XS_API unsigned xs_profile_arch(const xs_profile *profile);
XS_API xs_status xs_profile_set_arch(xs_profile *profile, unsigned arch,
                                     xs_error *err);

/* Nodes and fabrics (docs/formats.md "Fabrics"). A GPU profile names how
 * many GPUs share one NVLink domain ("node_gpus"; 8 when it does not say),
 * so that expert-parallel ranks beyond it go over a scale-out NIC. A
 * fabric is a profile whose channel "nic" is one GPU's NIC (ib-400,
 * roce-200, efa-400 are built in); xs_profile_add_fabric copies its
 * channels and their sources into a GPU profile, which is then named
 * "GPU+FABRIC". xs_profile_load reads "GPU+FABRIC" the same way, and
 * xs_profile_load_fabric(gpu, fabric) (fabric NULL: none) loads both. */
XS_API unsigned xs_profile_node_gpus(const xs_profile *profile);
XS_API xs_status xs_profile_set_node_gpus(xs_profile *profile, unsigned gpus,
                                          xs_error *err);
XS_API xs_status xs_profile_add_fabric(xs_profile *profile,
                                       const xs_profile *fabric, xs_error *err);
/* The fabric's name, NULL when none was added. */
XS_API const char *xs_profile_fabric(const xs_profile *profile);
XS_API xs_status xs_profile_load_fabric(const char *gpu, const char *fabric,
                                        xs_profile **out, xs_error *err);

/* Built-in profiles (profiles/ in the source tree), in name order. */
XS_API size_t xs_builtin_profile_count(void);
XS_API const char *xs_builtin_profile_name(size_t i);
/* The profile's JSON text, as shipped. */
XS_API const char *xs_builtin_profile_text(size_t i);

/* ---- Programs: the schedule of a fused kernel ---- */

typedef enum {
  XS_OP_COMPUTE = 0, /* value: seconds                               */
  XS_OP_SEND = 1,    /* value: bytes                                 */
  XS_OP_WAIT = 2,    /* target: index of the send waited on          */
  XS_OP_FENCE = 3,   /* all of this worker's earlier sends delivered */
  XS_OP_SIGNAL = 4,  /* value: added to a counter (per copy)         */
  XS_OP_AWAIT = 5    /* value: the counter value waited for          */
} xs_op_kind;

typedef struct xs_op_info {
  xs_op_kind kind;
  double value;        /* seconds for compute, bytes for send, the amount
                          for signal and await; else 0                  */
  size_t send;         /* send: its index; wait: the send waited on     */
  const char *channel; /* send: channel name, NULL = profile's first    */
  const char *counter; /* signal and await: the counter's name          */
} xs_op_info;

typedef struct xs_program xs_program;

XS_API xs_program *xs_program_new(const char *name);
XS_API void xs_program_free(xs_program *program);

/* Builder. Ops are appended to worker w. Ids and waits are checked by
 * xs_program_finish, which must succeed before the program is evaluated. */
XS_API xs_status xs_program_add_worker(xs_program *program, const char *name,
                                size_t *index, xs_error *err);
/* A worker that stands for `copies` identical workers running its ops in
 * lockstep (docs/formats.md "Copies"): each copy computes, sends its own
 * bytes and signals; on a channel the copies count as that many senders.
 * The evaluations run it as one worker, so a kernel of 132 SMs that do the
 * same thing costs what one does. copies = 1 is xs_program_add_worker. */
XS_API xs_status xs_program_add_workers(xs_program *program, const char *name,
                                        size_t copies, size_t *index,
                                        xs_error *err);
XS_API size_t xs_program_worker_copies(const xs_program *program, size_t w);
XS_API xs_status xs_program_compute(xs_program *program, size_t w, double seconds,
                             xs_error *err);
/* channel NULL: the profile's first channel in name order. id NULL: the
 * send is named "<worker>#<op index>". *send_index (if not NULL) receives
 * the send's index, usable with xs_program_wait_send. */
XS_API xs_status xs_program_send(xs_program *program, size_t w, double bytes,
                          const char *channel, const char *id,
                          size_t *send_index, xs_error *err);
XS_API xs_status xs_program_wait(xs_program *program, size_t w, const char *id,
                          xs_error *err);
XS_API xs_status xs_program_wait_send(xs_program *program, size_t w,
                               size_t send_index, xs_error *err);
XS_API xs_status xs_program_fence(xs_program *program, size_t w, xs_error *err);
/* Counters (docs/formats.md "Counters"): named whole numbers of the
 * program, 0 at the start. A signal adds `add` (a whole number >= 1) per
 * copy of its worker, at once; an await blocks its worker until the
 * counter reaches `value` (a whole number >= 1). They are how a kernel's
 * flags and barriers look: a tile published, a ring slot freed, every SM
 * arrived. xs_program_counter names (and makes) a counter and gives its
 * index for the _index builders, which skip the name lookup. */
XS_API xs_status xs_program_counter(xs_program *program, const char *name,
                                    size_t *index, xs_error *err);
XS_API xs_status xs_program_signal(xs_program *program, size_t w,
                                   const char *counter, double add,
                                   xs_error *err);
XS_API xs_status xs_program_await(xs_program *program, size_t w,
                                  const char *counter, double value,
                                  xs_error *err);
XS_API xs_status xs_program_signal_index(xs_program *program, size_t w,
                                         size_t counter, double add,
                                         xs_error *err);
XS_API xs_status xs_program_await_index(xs_program *program, size_t w,
                                        size_t counter, double value,
                                        xs_error *err);
XS_API size_t xs_program_counter_count(const xs_program *program);
XS_API const char *xs_program_counter_name(const xs_program *program,
                                           size_t counter);
/* Resolves waits, rejects duplicate ids, empty programs, waits that form
 * a cycle (the message names the ops in it) and awaits that can never be
 * met (a counter that cannot reach the value, or only after the await
 * itself: the message names the await and how far the counter gets).
 * Idempotent. */
XS_API xs_status xs_program_finish(xs_program *program, xs_error *err);

/* Parse program JSON (docs/formats.md "Program"), finished on success. */
XS_API xs_status xs_program_parse(const char *text, size_t length,
                           const char *filename, xs_program **out,
                           xs_error *err);
XS_API xs_status xs_program_load(const char *path, xs_program **out, xs_error *err);
/* The largest file xs_program_load, xs_profile_load and
 * xs_samples_load_csv read (XS_INVALID, naming the file and the limit,
 * past it): 256 MiB. */
#define XS_INPUT_LIMIT_BYTES ((size_t)256 << 20)
/* Serialise as program JSON (xs_program_parse gives the same program
 * back); free() the result. NULL when out of memory or when the program's
 * name is not UTF-8 (the builders refuse other names, ids and channels
 * that are not). */
XS_API char *xs_program_to_json(const xs_program *program);

XS_API const char *xs_program_name(const xs_program *program);
XS_API size_t xs_program_worker_count(const xs_program *program);
XS_API const char *xs_program_worker_name(const xs_program *program, size_t w);
XS_API size_t xs_program_op_count(const xs_program *program, size_t w);
XS_API void xs_program_op(const xs_program *program, size_t w, size_t i,
                   xs_op_info *out);
XS_API size_t xs_program_send_count(const xs_program *program);
XS_API size_t xs_program_send_worker(const xs_program *program, size_t s);
XS_API double xs_program_send_bytes(const xs_program *program, size_t s);
/* The send's channel name as written, NULL for the default channel. */
XS_API const char *xs_program_send_channel(const xs_program *program, size_t s);
/* The send's id: its own, or "<worker>#<op index>" written into buf (cut
 * between characters when buf is short: strlen of the worker's name + 12
 * bytes always hold it). */
XS_API const char *xs_program_send_id(const xs_program *program, size_t s,
                               char *buf, size_t size);

/* ---- Evaluation ---- */

typedef enum {
  XS_MODEL_BURSTGAP = 0, /* the fluid Burst-Gap model, exact             */
  XS_MODEL_BLOCKING = 1, /* C = 0 and a fence after every send           */
  XS_MODEL_SERIAL = 2,   /* compute kernel, then communication kernel    */
  XS_MODEL_IDEAL = 3,    /* perfect overlap: a lower bound               */
  XS_MODEL_COUNT = 4,    /* the models xs_evaluate computes               */
  XS_MODEL_SIM = 4       /* the packet simulator's results (xs_simulate)  */
} xs_model;

XS_API const char *xs_model_name(xs_model model);
/* Returns 0 and sets *model when name is known, -1 otherwise. */
XS_API int xs_model_from_name(const char *name, xs_model *model);

typedef struct xs_send_result {
  double issue_start_s; /* the worker reached the send (before overhead) */
  double issue_end_s;   /* its last byte was admitted                    */
  double deliver_s;     /* its last byte arrived                         */
  double xstage_s;      /* deliver_s - issue_end_s                       */
  double stall_s;       /* issue time lost to backpressure               */
} xs_send_result;

typedef struct xs_worker_result {
  double finish_s;   /* its last op ended                                */
  double stall_s;    /* backpressure stall plus time blocked in waits    */
  double compute_s;  /* time in compute ops                              */
  double issue_s;    /* time issuing sends, overhead and stall included  */
  double overhead_s; /* the per-send overheads                           */
  double blocked_s;  /* time blocked in waits and fences                 */
} xs_worker_result;

typedef struct xs_channel_result {
  double bytes;          /* bytes sent on the channel                      */
  double peak_backlog_B; /* largest backlog q(t)                           */
  size_t sends;          /* number of sends on the channel                 */
} xs_channel_result;

typedef struct xs_result {
  xs_model model;
  double makespan_s;   /* last worker finish or last delivery, later one  */
  double issue_done_s; /* last worker finish                              */
  /* serial and ideal terms: max over workers of compute + overheads, and
   * max over channels with sends of bytes/min(R_inj, R_drain) + L */
  double compute_term_s, comm_term_s;
  size_t nworkers, nsends, nchannels; /* channels: the profile's, in order */
  xs_worker_result *workers;          /* NULL for serial and ideal        */
  xs_send_result *sends;              /* NULL for serial, ideal, summary  */
  xs_channel_result *channels;
  uint64_t events; /* rate-change events of the exact evaluation          */
  int fast_path;   /* 1 when the one-worker closed forms were used        */
  /* allocated lengths of the arrays above, for xs_eval_options.reuse */
  size_t workers_cap, sends_cap, channels_cap;
} xs_result;

/* ---- Timelines: what each worker did when, and each channel's backlog,
 * recorded by the evaluators on request, for traces and plots ---- */

typedef enum {
  XS_SEG_COMPUTE = 0,  /* a compute op                                  */
  XS_SEG_OVERHEAD = 1, /* a send's issue overhead                       */
  XS_SEG_ISSUE = 2,    /* issuing at the unthrottled rate               */
  XS_SEG_STALL = 3,    /* issue time lost to backpressure (drawn at the
                          end of the send's issue)                      */
  XS_SEG_BLOCKED = 4   /* waiting in a wait or a fence                  */
} xs_segment_kind;

typedef struct xs_segment {
  double start_s, end_s;
  uint32_t worker;
  uint32_t send; /* the send it belongs to (blocked: the send a wait or
                    fence waits for), UINT32_MAX for none               */
  xs_segment_kind kind;
  uint32_t counter; /* blocked in an await: its counter; else UINT32_MAX */
} xs_segment;

typedef struct xs_backlog_point {
  double t_s;       /* from here the backlog ...                      */
  double backlog_B; /* ... is this; linear to the next point (fluid)  */
  uint32_t channel; /* profile channel index                          */
} xs_backlog_point;

typedef struct xs_timeline {
  xs_segment *segments;
  size_t nsegments, segments_cap;
  xs_backlog_point *points;
  size_t npoints, points_cap;
  /* past 4 million points, every other one is dropped and only every
   * point_stride-th later one is kept, so memory stays bounded */
  size_t point_stride, point_count;
} xs_timeline;

/* An empty timeline to pass in options; freed with xs_timeline_free. */
XS_API xs_timeline *xs_timeline_new(void);
XS_API void xs_timeline_free(xs_timeline *timeline);

typedef struct xs_eval_options {
  int event_driven; /* 1: never take the one-worker closed-form path      */
  int summary_only; /* 1: no per-send results (sends stays NULL)          */
  /* A result of an earlier call to recycle, or NULL. Its arrays are reused
   * when they are large enough, which saves allocating and faulting in
   * fresh memory when a planner evaluates many programs in a row. The
   * result is consumed either way: it becomes *out, or is freed. */
  xs_result *reuse;
  /* When not NULL, the evaluation appends what happened to it (burstgap
   * and blocking; it takes the event-driven path). */
  xs_timeline *timeline;
} xs_eval_options;

/* Evaluate a finished program on a profile under one model. options may be
 * NULL. Unknown channel names are reported here. *out is freed with
 * xs_result_free. */
XS_API xs_status xs_evaluate(const xs_program *program, const xs_profile *profile,
                      xs_model model, const xs_eval_options *options,
                      xs_result **out, xs_error *err);
XS_API void xs_result_free(xs_result *result);

/* ---- The packet-level simulator (docs/simulate.md) ---- */

typedef enum {
  XS_ARB_RR = 0,  /* waiting workers get one packet each in turn          */
  XS_ARB_FIFO = 1 /* the send that came first gets every packet first     */
} xs_arbitration;

typedef struct xs_sim_options {
  double packet_B;             /* 0: each channel's packet_B, else 256    */
  xs_arbitration arbitration;  /* among workers waiting to inject         */
  int summary_only;            /* as in xs_eval_options                   */
  xs_timeline *timeline;       /* record into it, or NULL                 */
  double max_packets;          /* refuse programs of more packets than
                                  this (0: 1e8, about 10 s here), so that
                                  a huge send cannot run for hours        */
} xs_sim_options;

/* Simulate a finished program at packet level: per channel a pool of
 * capacity_B bytes of credit that a packet takes when it is admitted and
 * gives back when it drains (FIFO at drain_Bps), injection paced by
 * inject_Bps per channel and worker_inject_Bps and worker_inflight_B per
 * worker, latency_s added at delivery. Deterministic. The result has model
 * XS_MODEL_SIM and events = packet events; free it with xs_result_free. */
XS_API xs_status xs_simulate(const xs_program *program, const xs_profile *profile,
                      const xs_sim_options *options, xs_result **out,
                      xs_error *err);

/* ---- The MegaMoE planner (docs/plan-megamoe.md) ----
 * A fused expert-parallel MoE kernel on one rank: dispatch, grouped GEMM
 * Linear-1 (gate and up), SwiGLU, grouped GEMM Linear-2 (down) whose
 * epilogue stores each output tile to the token's home rank (combine). */

typedef struct xs_moe_config {
  char name[64];
  double tokens;       /* T: tokens per rank                               */
  double hidden;       /* H                                                */
  double intermediate; /* I: per expert                                    */
  double experts;      /* E: routed experts                                */
  double topk;         /* K                                                */
  double ep;           /* P: expert-parallel ranks; E % P == 0             */
  double act_bytes;    /* dispatch dtype, bytes per element (FP8: 1)       */
  double combine_bytes;/* combine dtype (BF16: 2)                          */
  double weight_bytes; /* weights, bytes per element with their scales
                          (FP8: 1; FP4 with one scale byte per 32: 0.53125) */
  double shared_experts; /* experts every token also takes, on its own rank
                          (same I); 0: none                               */
  double block_m;      /* tile rows; 0: each kernel's default for the shape */
  double block_n;      /* tile columns; 0: each kernel's default            */
  double sms;          /* 0: the profile's                                 */
  double imbalance;    /* the busiest rank's pairs over what routing gives
                          it (>= 1; 1: uniform routing's busiest rank)     */
  double capacity;     /* tokens per rank the kernel's buffers are sized
                          for (0: tokens): the lag kernel's default lag
                          follows it                                       */
  double sm_groups;    /* classes of SMs the per-SM programs have (0: the
                          planner's default, 12; the SM count: one worker
                          per SM)                                          */
  char dtype[16];      /* GEMM dtype in the profile: "fp8" (FP8 x FP8),
                          "fp8xfp4" (FP8 activations x FP4 weights)       */
  /* the sequential arm's all-to-all library and mode, as ep.csv spells
   * them (docs/ep.md); empty: "deepep-v2" "normal" */
  char ep_library[24];
  char ep_kernel[16];
  /* how the time is taken (docs/plan-megamoe.md "The latency floor"):
   * "stream" (empty: the kernels launched back to back by the host, as
   * CUDA events around a call see them), "graph" (replayed from a CUDA
   * graph) or "device" (the kernels' own durations on the GPU, as Kineto
   * or Nsight report them: no launches) */
  char timing[16];
  /* 1: the call ran right after the L2 was flushed by writing a large
   * buffer (a cold-L2 harness): the flush's dirty lines are written back
   * to HBM as the kernel's first reads evict them */
  double cold_l2;
} xs_moe_config;

/* Presets: deepseek-v3, deepseek-v4-flash, deepseek-v4-pro, qwen3.5, glm,
 * qwen3-235b, mixtral-8x7b; EP 8, 4096 tokens, FP8 dispatch, BF16
 * combine, FP8 weights. Returns 0, or -1 for an unknown name. */
XS_API int xs_moe_preset(const char *name, xs_moe_config *out);
XS_API size_t xs_moe_preset_count(void);
XS_API const char *xs_moe_preset_name(size_t i);
/* A config from JSON (keys as the fields; unset ones from "preset" when
 * given, else deepseek-v3's), checked; messages name file:line:column. */
XS_API xs_status xs_moe_config_parse(const char *text, size_t length,
                              const char *filename, xs_moe_config *out,
                              xs_error *err);
XS_API xs_status xs_moe_config_check(const xs_moe_config *config, xs_error *err);
/* The GEMM tiles a plan of the config builds (an upper bound; 0 for an
 * invalid config): a plan refuses more than XS_MOE_MAX_TILES, about 4 s
 * of planning on one core of the development machine. */
#define XS_MOE_MAX_TILES 1e7
XS_API double xs_moe_tiles(const xs_moe_config *config);

/* The schedules (docs/plan-megamoe.md "Schedules"). */
typedef enum {
  XS_MOE_SEQUENTIAL = 0,  /* dispatch kernel, GEMM L1, SwiGLU, GEMM L2,
                             combine kernel: an all-to-all library and
                             grouped GEMMs, each its own launch           */
  XS_MOE_L1_THEN_L2 = 1,  /* "l1-then-l2": the lag kernel (DeepGEMM PR
                             440) run as one wave: all L1 tiles, then all
                             L2                                            */
  XS_MOE_INTERLEAVED = 2, /* "searched": the lag kernel with xstage's own
                             lags and groups, searched                    */
  XS_MOE_FUSED_SPLIT = 3, /* two launches: L1 with dispatch, L2 with
                             combine, each wave-scheduled                 */
  XS_MOE_FUSED_WAVE = 4,  /* one launch, experts in waves: a wave's L1
                             tiles, then its L2 tiles                     */
  XS_MOE_FUSED_DYNAMIC = 5, /* "fused-interleaved": warm-up L1 waves, then
                             L2 and L1 tasks alternate                    */
  XS_MOE_FUSED_LAG = 6,   /* a token unit's L2 trails its L1 by `lag`
                             units, issued `group` units at a time         */
  XS_MOE_SCHEDULES = 7
} xs_moe_schedule;
/* the name of l1-then-l2 before it had its own ("baseline") */
#define XS_MOE_BASELINE XS_MOE_L1_THEN_L2

/* "sequential", "l1-then-l2", "searched", "fused-split", "fused-wave",
 * "fused-interleaved", "fused-lag"; NULL past the last. */
XS_API const char *xs_moe_schedule_name(xs_moe_schedule schedule);
/* The schedule of a name (also "interleaved" for searched), or -1. */
XS_API int xs_moe_schedule_from_name(const char *name);
/* 1 for the schedules that start L2 tiles while L1 tiles remain (searched,
 * fused-interleaved, fused-lag), 0 for those that finish a phase or a wave's
 * L1 first (sequential, l1-then-l2, fused-split, fused-wave). */
XS_API int xs_moe_schedule_interleaves(xs_moe_schedule schedule);

/* A schedule's knobs; 0 means the kernel's own default for the shape
 * (docs/plan-megamoe.md "Schedules"). */
typedef struct xs_moe_pattern {
  unsigned experts_per_wave; /* fused-wave: experts per wave              */
  unsigned warmup;           /* fused-interleaved: L1 waves before L2      */
  unsigned lag, group;       /* fused-lag, searched: L2 units trail L1 by
                                lag units, group at a time (units of up
                                to 8 token blocks of one expert)          */
  unsigned block_m, block_n; /* the tile                                   */
} xs_moe_pattern;
/* lag: every L1 unit before any L2 (l1-then-l2's order, the searched
 * schedule's all-l1-first rule); outputs say "all L1 first", never the
 * number */
#define XS_MOE_LAG_ALL 0xffffffu

/* The workload of the rank a plan models: the busiest under uniform
 * routing, whose time the published timings see (max over ranks, or a
 * barrier that waits for it). */
typedef struct xs_moe_workload {
  double pairs;            /* token-expert pairs it computes             */
  double mean_pairs;       /* a rank's on average (tokens x top-k)       */
  double tokens_per_expert;/* rows per touched expert                    */
  double experts_touched;  /* its experts with at least one token        */
  double sms;
  double flops;            /* L1 + L2 over its pairs                     */
  double weights_B;        /* weights of the touched and shared experts  */
  double mma_flops_per_s;  /* the MMA peak (flops_per_s of the dtype)    */
  double l2_Bps;           /* L2 to the SMs                              */
  double dispatch_B, combine_B; /* fused kernels: bytes over the link    */
  double offrank;          /* (P-1)/P                                    */
  double a2a_dispatch_B, a2a_combine_B; /* the sequential arm's: one copy
                              per destination rank, not per expert       */
} xs_moe_workload;

/* Where one schedule's time goes under burstgap, seconds, on the SMs that
 * finish last (docs/plan-megamoe.md "Output"). The first six add up to
 * the makespan. */
typedef struct xs_moe_breakdown {
  double compute_s;  /* GEMM tiles                                       */
  double hbm_s;      /* waiting for HBM: loads the math outran, and the
                        kernels that stream (SwiGLU, the reduction)      */
  double fixed_s;    /* launches, grid syncs, routing, host round trips  */
  double dispatch_s; /* waiting for dispatched tokens                    */
  double sync_s;     /* waiting for other SMs: tile dependencies, ring
                        slots, barriers, kernel ends                     */
  double link_s;     /* issuing on the link, backpressure, flags to other
                        ranks, the X-stage tail                          */
  double stall_s;    /* of link: backpressure stall                      */
  double xstage_tail_s; /* of link: after the last SM is done            */
  const char *bound; /* the largest of the six                           */
} xs_moe_breakdown;

typedef struct xs_moe_result {
  xs_moe_workload work;
  /* [schedule][xs_model: burstgap, blocking, serial, ideal] makespans */
  double time_s[XS_MOE_SCHEDULES][XS_MODEL_COUNT];
  xs_moe_pattern knobs[XS_MOE_SCHEDULES]; /* each schedule's chosen knobs */
  xs_moe_breakdown breakdown[XS_MOE_SCHEDULES];
  xs_moe_schedule best_fused; /* the fastest fused schedule (burstgap)    */
  xs_moe_schedule best_interleaved; /* the fastest that runs L2 tiles while
                            L1 tiles remain (xs_moe_schedule_interleaves)  */
  xs_moe_schedule best_plain; /* the fastest of the others                */
  xs_moe_pattern chosen; /* = knobs[XS_MOE_INTERLEAVED]                   */
  unsigned searched;     /* programs evaluated                            */
  /* where the searched schedule's time goes under burstgap, seconds:
   * compute, waiting for dispatched tokens, backpressure stall, and the
   * X-stage tail after the last wave */
  double compute_s, dispatch_wait_s, stall_s, xstage_tail_s;
} xs_moe_result;

/* Plan: build every schedule, search each one's knobs for the smallest
 * burstgap makespan (l1-then-l2 is among the searched schedule's
 * candidates, so searched is never slower than it), evaluate each chosen
 * program under burstgap, blocking and ideal. The profile needs a compute
 * section. */
XS_API xs_status xs_moe_plan(const xs_moe_config *config, const xs_profile *profile,
                      xs_moe_result *out, xs_error *err);
/* One schedule only, its knobs searched: burstgap makespan, knobs and
 * breakdown (any may be NULL). */
XS_API xs_status xs_moe_predict(const xs_moe_config *config,
                         const xs_profile *profile, xs_moe_schedule schedule,
                         double *time_s, xs_moe_pattern *knobs,
                         xs_moe_breakdown *breakdown, xs_error *err);
/* One schedule with the given knobs (NULL or zeros: the kernel's own
 * defaults for the shape, as its heuristic picks them; the knobs used
 * are written back), no search: its time under every model
 * (time_s[xs_model]) and where the burstgap time goes. What `xstage
 * validate megamoe` predicts a published row with. Any output may be
 * NULL. */
XS_API xs_status xs_moe_evaluate(const xs_moe_config *config,
                                 const xs_profile *profile,
                                 xs_moe_schedule schedule,
                                 xs_moe_pattern *knobs,
                                 double time_s[XS_MODEL_COUNT],
                                 xs_moe_breakdown *breakdown, xs_error *err);
/* The program of one schedule with the given knobs (NULL: the schedule's
 * defaults), finished; free it with xs_program_free. */
XS_API xs_status xs_moe_program(const xs_moe_config *config,
                         const xs_profile *profile, xs_moe_schedule schedule,
                         const xs_moe_pattern *pattern, xs_program **out,
                         xs_error *err);

/* ---- The call an option is (docs/plan-megamoe.md "The calls") ----
 * What a user calls to run a schedule with given knobs: the kernel and
 * the version of it that the model follows, the calls with their
 * arguments under the kernel's own names and values (tensors left out),
 * what the kernel then picks for the shape by itself, and the row of
 * `xstage validate megamoe` that predicts it. An order that no shipping
 * kernel runs as given (xstage's own lags, a knob the kernel picks by
 * itself, a kernel the GPU cannot run) is a proposal, with the change it
 * needs. The strings are static or in the struct. */
#define XS_MOE_CALL_STEPS 6
#define XS_MOE_CALL_ARGS 8
typedef enum {
  XS_MOE_ARG_INT = 0,  /* a whole number: value[0]                       */
  XS_MOE_ARG_BOOL = 1, /* value[0]: 0 False, 1 True                      */
  XS_MOE_ARG_TUPLE = 2 /* count whole numbers: value[0 .. count-1]       */
} xs_moe_arg_kind;
typedef struct xs_moe_call_arg {
  const char *name;    /* as the call spells it: "num_max_tokens_per_rank" */
  xs_moe_arg_kind kind;
  long long value[3];
  unsigned count;
} xs_moe_call_arg;
typedef struct xs_moe_call_step {
  const char *assign;   /* what its result is called ("sym_buffer"), or "" */
  const char *function; /* "deep_gemm.fp8_mega_moe", "buffer.dispatch"   */
  const char *tensors;  /* its leading tensor arguments, as names
                           ("y, l1_weights, l2_weights, sym_buffer")     */
  const char *does;     /* "L1, SwiGLU, L2 and combine, one launch"      */
  size_t nargs;
  xs_moe_call_arg args[XS_MOE_CALL_ARGS];
} xs_moe_call_step;
typedef struct xs_moe_call {
  const char *label;    /* short, for tables: "DeepGEMM PR 440"          */
  const char *kernel;   /* "DeepGEMM's fused SM90 MegaMoE"               */
  const char *version;  /* "deepseek-ai/DeepGEMM PR 440"                 */
  const char *source;   /* the files and commits its model was read from */
  size_t nsteps;
  xs_moe_call_step steps[XS_MOE_CALL_STEPS];
  /* what the kernel picks for the shape by itself (no argument sets it):
   * the knobs of xs_moe_pattern flagged in picks_mask (XS_MOE_KNOB_...)
   * and the order, in words ("lag 14 units, group 4", "one wave: every
   * L1 tile, then every L2") */
  xs_moe_pattern picks;
  unsigned picks_mask;
  char order[96];
  int proposal;         /* 1: no shipping kernel runs it as given          */
  char change[320];     /* a proposal's: the change it needs               */
  /* the row that predicts it: `arm` and `knobs` columns of
   * xstage validate megamoe (docs/validate.md); arm "" when no row can
   * (the sequential arm with another all-to-all than DeepEP V2's normal
   * kernels, which validate's rows run) */
  char arm[24];
  char knobs[96];
} xs_moe_call;
#define XS_MOE_KNOB_BLOCK_M 1u
#define XS_MOE_KNOB_BLOCK_N 2u
#define XS_MOE_KNOB_EXPERTS_PER_WAVE 4u
#define XS_MOE_KNOB_WARMUP 8u
#define XS_MOE_KNOB_LAG 16u
#define XS_MOE_KNOB_GROUP 32u
/* The call of schedule s with knobs (as a plan or an option reports them:
 * the values used) for the config on the profile; the GPU's architecture
 * is the profile's (xs_profile_arch; without one, Hopper when it has the
 * promotion term). */
XS_API xs_status xs_moe_call_of(const xs_moe_config *config,
                                const xs_profile *profile,
                                xs_moe_schedule schedule,
                                const xs_moe_pattern *knobs, xs_moe_call *out,
                                xs_error *err);
/* One step of a call as Python: "deep_gemm.fp8_mega_moe(y, l1_weights,
 * l2_weights, sym_buffer, recipe=(128, 128, 128))" into buf (cut to
 * size); returns buf. */
XS_API const char *xs_moe_call_step_text(const xs_moe_call_step *step,
                                         char *buf, size_t size);

/* ---- Knob tables: plans a kernel can follow batch by batch
 * (docs/plan-megamoe.md "Knob tables") ----
 * An option is a schedule with one rule for its knobs: rule 0 is the
 * kernel's default (DeepGEMM's own choice where it has one), the others
 * fixed variations of it ("half", "lag*2", "split-2/8"; xs_moe_rule_name).
 * A rule keeps its index at every token count; its knob values may follow
 * the token count, as the kernel's own default does. */
#define XS_MOE_MAX_OPTIONS 32
typedef struct xs_moe_option {
  xs_moe_schedule schedule;
  unsigned rule;        /* the schedule's knob rule; 0: the default       */
  unsigned away;        /* knobs whose value differs from the default's   */
  xs_moe_pattern knobs; /* the rule's values at this token count          */
  double time_s;        /* burstgap makespan                              */
} xs_moe_option;

/* The rule's name ("default", "half", ...), or NULL for no such rule. */
XS_API const char *xs_moe_rule_name(xs_moe_schedule schedule, unsigned rule);
/* Every option of the schedules in the mask (bit 1u << schedule; 0: all)
 * evaluated under burstgap, in schedule and rule order; out has room for
 * XS_MOE_MAX_OPTIONS. work (may be NULL) receives the workload. */
XS_API xs_status xs_moe_options(const xs_moe_config *config,
                         const xs_profile *profile, unsigned schedules,
                         xs_moe_option *out, size_t *n, xs_moe_workload *work,
                         xs_error *err);

/* The fastest option (xs_moe_options, the schedules in the mask; 0: all)
 * that an existing kernel runs as given: not a proposal; time_s NAN when
 * none is. */
XS_API xs_status xs_moe_fastest_shipping(const xs_moe_config *config,
                                         const xs_profile *profile,
                                         unsigned schedules, xs_moe_option *out,
                                         xs_error *err);

/* The stable choice at one token count. Of the options within tolerance
 * of the fastest (time <= best x (1 + tolerance)), keep the previous
 * choice (prev; NULL at the first point) when it is among them; otherwise
 * take the fewest knobs away from their default, then the previous
 * choice's schedule, then the fastest. So a table's choice changes only
 * where staying would cost more than the tolerance. */
typedef struct xs_moe_pick {
  double tokens;         /* the grid point                                 */
  double lo;             /* lookups from lo up to the next pick's lo get it */
  xs_moe_option chosen;
  xs_moe_option best;      /* the fastest                                  */
  xs_moe_option runner_up; /* the fastest of another schedule than chosen's;
                              time_s NAN when none                        */
  size_t near;             /* options within the tolerance of the best   */
  xs_moe_option near_set[XS_MOE_MAX_OPTIONS]; /* fastest first            */
} xs_moe_pick;

/* Pick among n options (from xs_moe_options) as above. */
XS_API void xs_moe_pick_options(const xs_moe_option *options, size_t n,
                         double tolerance, const xs_moe_option *prev,
                         xs_moe_pick *out);
/* The pick at the config's token count with no previous choice: the
 * recommended option of `xstage plan megamoe`. */
XS_API xs_status xs_moe_recommend(const xs_moe_config *config,
                           const xs_profile *profile, double tolerance,
                           unsigned schedules, xs_moe_pick *out,
                           xs_error *err);
/* How sure a recommendation is: the runner-up (the fastest option of
 * another schedule than the chosen one's) and its margin over the chosen,
 * and the chosen schedule's knobs on a finer grid than its rules, the tile
 * kept (searched and fused-lag: lag 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48,
 * 64 by group 1, 2, 4, 8; fused-wave: 1 to 64 experts per wave; fused-
 * interleaved: 1 to 8 warm-up waves; the others have no knob): the fastest
 * setting found and whether the choice holds (nothing on the finer grid is
 * faster by more than the tolerance). `xstage plan megamoe` prints it. */
typedef struct xs_moe_certainty {
  double runner_up_margin; /* runner-up's time over the chosen's, minus 1;
                              NAN when there is none                     */
  xs_moe_option finer;     /* the fastest setting on the finer grid (the
                              chosen option when it has no knobs)        */
  size_t settings;         /* finer settings evaluated                    */
  int holds;
} xs_moe_certainty;
XS_API xs_status xs_moe_certainty_of(const xs_moe_config *config,
                                     const xs_profile *profile,
                                     const xs_moe_pick *pick, double tolerance,
                                     xs_moe_certainty *out, xs_error *err);
/* Whether two options are the same choice: one schedule, and the same
 * rule or the same knob values. */
XS_API int xs_moe_same_choice(const xs_moe_option *a, const xs_moe_option *b);

typedef struct xs_moe_table_options {
  const double *tokens; /* grid points, whole and ascending; NULL: from
                           min_tokens to max_tokens, 32 points per octave,
                           more where the count halfway between two
                           points would lose (at most twice as many)      */
  size_t ntokens;       /* at most XS_MOE_TABLE_MAX                       */
  double min_tokens, max_tokens;
  double tolerance;     /* relative, 0 to 1 (xstage plan's default: 0.01) */
  unsigned schedules;   /* as xs_moe_options' mask; 0: all               */
} xs_moe_table_options;
#define XS_MOE_TABLE_MAX 4096
/* The most planning a knob table or a sensitivity run may take, in GEMM
 * tiles (xs_moe_tiles) planned: each evaluation of every option at one
 * token count counts its tiles plus 32768 for its fixed part. 2e8 is
 * about 6 s on one core of the development machine (the 64:4096 table of
 * DeepSeek-V3 on h800-nvlink plans 1.2e8 of it). Estimated before the first
 * plan (a table's points, twice for a range; a sensitivity run's 4 x
 * numbers + 1 plans) and counted as they go, since a table's bisections
 * and added points are not known beforehand; past it, XS_INVALID. */
#define XS_MOE_WORK_MAX 2e8
typedef struct xs_moe_table xs_moe_table;

/* Plans every grid point with the stable choice (each point's previous is
 * the point below it). Where two neighbours' choices differ, the token
 * count where the lower one stops being within tolerance is found by
 * bisection and becomes the upper one's lo, so a lookup between grid
 * points takes the choice that is still good there. The config's tokens
 * are replaced by each point's. */
XS_API xs_status xs_moe_plan_table(const xs_moe_config *config,
                            const xs_profile *profile,
                            const xs_moe_table_options *options,
                            xs_moe_table **out, xs_error *err);
XS_API void xs_moe_table_free(xs_moe_table *table);
XS_API size_t xs_moe_table_size(const xs_moe_table *table);
XS_API const xs_moe_pick *xs_moe_table_pick(const xs_moe_table *table, size_t i);
/* The pick for any token count: the last whose lo <= tokens (the first
 * below the first lo). A binary search; no allocation. */
XS_API const xs_moe_pick *xs_moe_plan_lookup(const xs_moe_table *table,
                                      double tokens);
/* A C header with the table as constant arrays and a lookup function,
 * for host code with no dependency on xstage; names start with prefix
 * (xs_c_header_prefix). Each row names the kernel to call and the call
 * (xs_moe_call_of) for the config the table was planned for on the
 * profile (both NULL: "" for them). free() the result; NULL for another
 * prefix, a time that is not finite, or when out of memory. */
XS_API char *xs_moe_table_header(const xs_moe_table *table,
                                 const xs_moe_config *config,
                                 const xs_profile *profile, const char *prefix,
                                 const char *comment);
/* A copy of text safe inside a C block comment: a comment's ends ("*" "/"
 * and "/" "*") and control characters rewritten; free() it. NULL when out
 * of memory. */
XS_API char *xs_c_comment_text(const char *text);
/* Schedule names, comma-separated ("fused-wave,fused-lag"), as the mask
 * xs_moe_options takes (bit k: schedule k); plan's --schedules. */
XS_API xs_status xs_moe_parse_schedules(const char *text, unsigned *mask,
                                        xs_error *err);
/* 1 when name is a C identifier of 1 to 64 characters */
XS_API int xs_c_identifier(const char *name);
/* XS_OK when prefix may name a generated header's names: a C identifier
 * of 1 to 64 characters, lowercase (its capitals make the guard PREFIX_H
 * and the constants, which two prefixes differing only in case would
 * share), not beginning with an underscore (reserved, where the C
 * library's guards such as _STDIO_H are), and not making names the C
 * library reserves (errno.h's E..., string.h's str..., ...); else
 * XS_INVALID saying why. The header writers refuse any other prefix. */
XS_API xs_status xs_c_header_prefix(const char *prefix, xs_error *err);

/* Sensitivity of a plan to each number of the profile it uses: each
 * channel's injection and drain rates, capacity, latency (and issue
 * overhead and per-worker rate when set), the GEMM throughput and the
 * kernel model's terms (docs/tune.md "Sensitivity"). Each is moved over
 * the range its kind of source gives it (lo to hi: a measurement its
 * stated spread, else 10%; a derived figure 20%; a datasheet bandwidth or
 * throughput its typical achieved fraction, x0.7 to x1; a lead its whole
 * plausible range, a capacity from 64 KiB to 64 KiB per SM, another a
 * factor of 3 either way; a fitted number its 68% interval; a number
 * without a source x0.5 to x1.5), at four factors from lo to hi, and
 * the plan redone on a typed copy of the profile: how the chosen
 * option's time changes, and whether the choice does. */
#define XS_MOE_SENS_FACTORS 4
typedef struct xs_moe_sensitivity {
  char param[96];        /* a profile key path: "channels.nvlink.drain_Bps",
                            "compute.gemm_flops_per_s.fp8", ...           */
  double value;          /* the profile's                                 */
  char kind[16];         /* its source's kind: "measurement", "derived",
                            "datasheet", "lead", "fitted"; "" for none   */
  double lo, hi;         /* the range, factors of value                   */
  char settle[128];      /* what would measure it ("xstage probe
                            cuda-p2p", "xstage fit megamoe", ...)         */
  double factor[XS_MOE_SENS_FACTORS];
  double time_change[XS_MOE_SENS_FACTORS];  /* the chosen option's time,
                                               relative to its base time */
  double replan_change[XS_MOE_SENS_FACTORS];/* the new choice's time,
                                               relative to the base time */
  xs_moe_option choice[XS_MOE_SENS_FACTORS];/* the new choice            */
  int changed[XS_MOE_SENS_FACTORS];         /* 1: another choice         */
  /* time_change and replan_change are NAN at a factor that moves the
   * number out of its valid range */
  double score;          /* the largest |time_change|: the sort key       */
} xs_moe_sensitivity;
#define XS_MOE_SENS_MAX 64
/* Fills out (room for XS_MOE_SENS_MAX) sorted by score, largest first;
 * *base receives the unmoved pick. */
XS_API xs_status xs_moe_sensitivity_run(const xs_moe_config *config,
                                 const xs_profile *profile, double tolerance,
                                 unsigned schedules, xs_moe_pick *base,
                                 xs_moe_sensitivity *out, size_t *n,
                                 xs_error *err);

/* ---- The context-parallel attention planner (docs/plan-flashattn.md) ----
 * Ring attention: each of P ranks holds S tokens of the sequence; at each
 * of P steps it attends its queries to the KV block it holds and forwards
 * that block to the next rank (P - 1 forwards). One planner: each way of
 * moving KV writes a program of the ring (SMs as workers) that the
 * evaluator runs; the time it reports is that program's. */

typedef struct xs_fa_config {
  char name[64];
  double seq;      /* S: tokens per rank                                  */
  double heads_q;  /* query heads                                         */
  double heads_kv; /* KV heads (GQA); divides heads_q                     */
  double head_dim; /* d                                                   */
  double cp;       /* P: context-parallel ranks                           */
  int causal;      /* causal mask, sharded by layout                      */
  double bytes;    /* KV element bytes (BF16: 2)                          */
  double block_m, block_n; /* Q and KV tile rows; 0: the kernel's own     */
  double sms;      /* 0: the profile's                                    */
  char dtype[16];  /* compute dtype in the profile ("bf16"), for a profile
                      without the kernel's measured throughput            */
  double batch;    /* sequences per rank (1)                              */
  int layout;      /* xs_fa_layout: how the causal sequence is sharded     */
  int backward;    /* 1: forward and backward (dK, dV ride the ring too)   */
  char kernel[8];  /* "fa2", "fa3", "fa4": the profile's attn_* entries;
                      "" (the presets'): the best the GPU runs
                      (xs_fa_kernel_resolve)                              */
  int timing;      /* xs_fa_timing: what a time of the ring stands for     */
} xs_fa_config;

/* What a ring's time stands for (docs/plan-flashattn.md "Timing"):
 * pipelined, the period of calls issued back to back with no sync between
 * them (CUDA events around many calls: the host issues a call while the
 * GPU runs the one before, so the slower of the two sets the pace);
 * synced, one call from an idle GPU, the host and the GPU starting
 * together (a sync or barrier around each call). */
typedef enum {
  XS_FA_PIPELINED = 0,
  XS_FA_SYNCED = 1,
  XS_FA_TIMINGS = 2
} xs_fa_timing;
XS_API const char *xs_fa_timing_name(xs_fa_timing timing);
XS_API int xs_fa_timing_from_name(const char *name); /* -1: none */

/* Causal layouts: contiguous (rank r holds chunk r: the last rank does
 * all the work), zigzag (chunks r and 2P-1-r), stripe (every P-th token) */
typedef enum {
  XS_FA_CONTIGUOUS = 0,
  XS_FA_ZIGZAG = 1,
  XS_FA_STRIPE = 2,
  XS_FA_LAYOUTS = 3
} xs_fa_layout;
XS_API const char *xs_fa_layout_name(xs_fa_layout layout);
XS_API int xs_fa_layout_from_name(const char *name); /* -1: none */

/* Presets llama3-8b (32 query heads, 8 KV heads, d 128), llama3-70b (64,
 * 8, 128), mha (32, 32, 128); 16384 tokens per rank, CP 8, causal
 * (zigzag), BF16, the best kernel the GPU runs (kernel ""). */
XS_API int xs_fa_preset(const char *name, xs_fa_config *out);
XS_API size_t xs_fa_preset_count(void);
XS_API const char *xs_fa_preset_name(size_t i);
XS_API xs_status xs_fa_config_parse(const char *text, size_t length,
                             const char *filename, xs_fa_config *out,
                             xs_error *err);
XS_API xs_status xs_fa_config_check(const xs_fa_config *config, xs_error *err);

/* How the KV blocks are forwarded (docs/plan-flashattn.md "Ways"). */
typedef enum {
  XS_FA_LOCAL = 0,      /* one rank's attention over its own block: no ring */
  XS_FA_PATH_SEQUENTIAL = 1, /* each step: attention, then forward, merge */
  XS_FA_PATH_STREAM = 2,/* a send/receive on its own stream (NCCL), posted at
                           the step's start, waited on at its end          */
  XS_FA_PATH_SMS = 3,   /* k SMs set aside forward; the kernel runs on the rest */
  XS_FA_PATH_PIGGYBACK = 4, /* the kernel stores the K/V stages it loads   */
  XS_FA_PATHS = 5
} xs_fa_path;
/* "local", "sequential", "dedicated-stream", "dedicated-sms", "piggyback" */
XS_API const char *xs_fa_path_name(xs_fa_path path);
XS_API int xs_fa_path_from_name(const char *name); /* -1: none */

/* A way's knob: dedicated-sms's SMs set aside (0: searched). */
typedef struct xs_fa_choice {
  unsigned forward_sms;
} xs_fa_choice;

/* Where one ring's time goes, seconds; compute, merge, fixed,
 * interference, host and exposed add up to the time under burstgap. */
typedef struct xs_fa_breakdown {
  double compute_s;   /* attention kernels (the busiest rank's, its SMs
                         that finish last)                               */
  double merge_s;     /* merging partial outputs by log-sum-exp, and the
                         conversions                                     */
  double fixed_s;     /* launches, host syncs, barriers                   */
  double interference_s; /* kernels slowed by a transfer's HBM traffic    */
  double exposed_s;   /* communication not hidden behind the above: SMs
                         waiting for blocks, for a stage's store, or held
                         by a communication kernel                       */
  double imbalance_s; /* of compute_s: the busiest rank over the mean,
                         where its kernel is the longer                  */
  double stall_s;     /* of exposed_s (piggyback): SMs waiting for a K/V
                         stage's store to read it                        */
  double free_s;      /* the same ring if communication were free         */
  unsigned forward_sms; /* dedicated-sms's SMs set aside                  */
  const char *bound;  /* the largest of compute, merge, fixed,
                         interference, host, exposed                     */
  double host_s;      /* the GPU waiting for the host to issue its work
                         (a ring whose host issues each step's ops slower
                         than the GPU runs them)                         */
} xs_fa_breakdown;

/* One path of a plan under one layout (-1: the local arm or a full
 * mask): its time under burstgap and where it goes. */
typedef struct xs_fa_ring {
  xs_fa_path path;
  int layout;
  double time_s;
  xs_fa_breakdown breakdown;
} xs_fa_ring;
#define XS_FA_RINGS (1 + (XS_FA_PATHS - 1) * XS_FA_LAYOUTS)

typedef struct xs_fa_workload {
  double step_flops, step_s;   /* one step's attention FLOPs; the mean
                                  step's kernel time on the busiest rank */
  double kv_B;                 /* the block forwarded each step          */
  double q_tiles, kv_tiles;    /* per step: CTAs (Q tile, head), KV tiles
                                  (KV tile, KV head)                     */
  double iterations;           /* KV tiles one CTA loops over            */
  double waves, sms;
  double stage_B, stages;      /* a K/V stage of the kernel's pipeline,
                                  and how many it has                    */
  int measured;                /* the kernel's throughput is measured (0:
                                  the profile's FLOP/s, a lead)          */
} xs_fa_workload;

typedef struct xs_fa_result {
  xs_fa_workload work;
  /* each path under the config's layout: [path][xs_model] makespans of
   * its program, and where its burstgap time goes */
  double time_s[XS_FA_PATHS][XS_MODEL_COUNT];
  xs_fa_breakdown breakdown[XS_FA_PATHS];
  xs_fa_path best;    /* the fastest ring (burstgap, config's layout)     */
  /* the local arm, then every ring path under every causal layout (one
   * layout for a full mask): the report's table */
  xs_fa_ring rings[XS_FA_RINGS];
  size_t nrings;
  unsigned searched;  /* programs evaluated                               */
} xs_fa_result;

XS_API xs_status xs_fa_plan(const xs_fa_config *config, const xs_profile *profile,
                     xs_fa_result *out, xs_error *err);
/* One path under the config's layout, under burstgap: its time and where
 * it goes (either may be NULL). */
XS_API xs_status xs_fa_predict(const xs_fa_config *config, const xs_profile *profile,
                        xs_fa_path path, double *time_s,
                        xs_fa_breakdown *breakdown, xs_error *err);
/* The program of a path under the config's layout (choice NULL or 0
 * SMs: the plan's), finished: evaluated under burstgap on the same
 * profile it takes the plan's time. Free it with xs_program_free. */
XS_API xs_status xs_fa_program(const xs_fa_config *config, const xs_profile *profile,
                        xs_fa_path path, const xs_fa_choice *choice,
                        xs_program **out, xs_error *err);
/* xs_fa_plan's rows (out has room for XS_FA_RINGS). */
XS_API xs_status xs_fa_rings(const xs_fa_config *config,
                             const xs_profile *profile, xs_fa_ring *out,
                             size_t *n, xs_error *err);
/* The fastest ring of rows[0..n) (not the local arm), or NULL. */
XS_API const xs_fa_ring *xs_fa_ring_best(const xs_fa_ring *rows, size_t n);
/* 1 when a and b are the same choice: the same way under the same layout
 * (dedicated-sms's SMs aside) */
XS_API int xs_fa_same_ring(const xs_fa_ring *a, const xs_fa_ring *b);

/* The kernel a GPU runs (docs/plan-flashattn.md "Kernels and calls"):
 * FlashAttention-2 on sm80 and later, FlashAttention-3 on sm90 only,
 * FlashAttention-4's forward on sm80 and later and its backward on sm90
 * and later (flash_attn/cute/interface.py at f82d0dc6). The config with
 * its kernel set: an empty kernel (the presets') becomes the best the
 * profile's GPU runs (xs_profile_arch: fa2 on Ampere, fa3 on Hopper, fa4
 * on Blackwell; without an arch, the best the profile has attn_* figures
 * for); a kernel or a pass the GPU cannot run is XS_INVALID, saying why and
 * the kernel to use instead. Every attention entry point resolves its
 * config so. out may be config. */
XS_API xs_status xs_fa_kernel_resolve(const xs_fa_config *config,
                                      const xs_profile *profile,
                                      xs_fa_config *out, xs_error *err);
/* What a user calls to run one way of the ring under a layout (-1: the
 * config's): the attention kernel (its function and package, the passes
 * the GPU runs it with), the ring's function where a library runs the way
 * (ring-flash-attention), or a proposal with the change it needs. The
 * strings are static or in the struct. */
typedef struct xs_fa_call {
  const char *label;    /* short: "ring-flash-attention", "FlashAttention-3" */
  const char *kernel;   /* "FlashAttention-3"                              */
  const char *function; /* "flash_attn_interface.flash_attn_func"         */
  const char *package;  /* "flash-attn", "flash-attn-4", ...              */
  const char *source;   /* the files and commit read                      */
  char passes[192];     /* "forward and backward: FlashAttentionForwardSm90,
                           FlashAttentionBackwardSm90"                    */
  const char *ring;     /* the ring's function ("ring_flash_attn.
                           zigzag_ring_flash_attn_func"), or ""          */
  const char *ring_source;
  const char *way;      /* the way in words                               */
  int proposal;
  char change[320];
} xs_fa_call;
XS_API xs_status xs_fa_call_of(const xs_fa_config *config, const xs_profile *profile,
                               xs_fa_path path, int layout, xs_fa_call *out,
                               xs_error *err);

/* Sensitivity of an attention plan to each number of the profile it
 * reads, with xs_moe_sensitivity's design (docs/tune.md "Sensitivity"):
 * the forwarding channel's rates, capacity and latency, compute.hbm_Bps,
 * the kernel's attn_* entries it uses (or the dtype's FLOP/s and
 * compute.efficiency where it has none), and the cost terms (launch_s,
 * ring_step_s, barrier_s, copy_efficiency, comm_sms, comm_cta_Bps,
 * forward_sm_Bps), each moved over the range its kind of source gives
 * it, at four factors (a fraction no higher than 1), and every
 * ring replanned on a typed copy of the profile. The choice is a ring:
 * a way and a causal layout (dedicated-sms's SMs searched again). The
 * base choice is the fastest ring; at a factor the choice stays while
 * within tolerance of the fastest, as xs_fa_table keeps it. */
typedef struct xs_fa_sensitivity {
  char param[96];        /* a profile key path ("compute.ring_step_s")    */
  double value;          /* the profile's                                 */
  char kind[16];         /* its source's kind; "" for none                */
  double lo, hi;         /* the range, factors of value                   */
  char settle[128];      /* what would measure it                         */
  double factor[XS_MOE_SENS_FACTORS];
  double time_change[XS_MOE_SENS_FACTORS];  /* the base ring's time,
                                               relative to its base time */
  double replan_change[XS_MOE_SENS_FACTORS];/* the choice's time,
                                               relative to the base time */
  xs_fa_ring choice[XS_MOE_SENS_FACTORS];   /* the choice at each factor */
  int changed[XS_MOE_SENS_FACTORS];         /* 1: another way or layout  */
  /* time_change and replan_change are NAN at a factor that moves the
   * number out of its valid range */
  double score;          /* the largest |time_change|: the sort key       */
} xs_fa_sensitivity;
#define XS_FA_SENS_MAX 32
/* Fills out (room for XS_FA_SENS_MAX) sorted by score, largest first;
 * *base receives the unmoved choice. (4 x numbers + 1) plans: 0.21 s at
 * 2k tokens per rank, 2.9 s at 128Ki on the development machine
 * (xstage-bench plan). */
XS_API xs_status xs_fa_sensitivity_run(const xs_fa_config *config,
                                       const xs_profile *profile, double tolerance,
                                       xs_fa_ring *base, xs_fa_sensitivity *out,
                                       size_t *n, xs_error *err);

/* ---- How sure a prediction is (docs/validate.md "Intervals") ----
 * An 80% interval from the model's residuals on the project's published
 * timings (each row predicted without its own source where constants are
 * fitted), by family ("megamoe", "ep", "flashattn"), arm (a MegaMoE
 * schedule's kernel, "LIBRARY/MODE", an attention way; "pair" for the
 * ratio of two arms of one config) and size band (tokens or sequence per
 * rank): [predicted x low, predicted x high]. The residual table is
 * data/residuals.csv as `xstage validate residuals` writes it, built into
 * the library. */
typedef struct xs_interval {
  double low, high;  /* the interval, as multiples of the prediction     */
  double center;     /* the residuals' typical measured / predicted      */
  double level;      /* 0.8                                              */
  size_t rows, sources; /* the residuals it rests on                     */
  int pooled;        /* 1: the family's pooled model (the arm and band had
                        too few rows)                                    */
} xs_interval;
XS_API xs_status xs_prediction_interval(const char *family, const char *arm, double size,
                                        xs_interval *out, xs_error *err);
/* A MegaMoE schedule's interval at tokens per rank (its kernel's cell:
 * xstage's own orders are the lag kernel's machinery's). */
XS_API xs_status xs_moe_interval(int schedule, double tokens, xs_interval *out, xs_error *err);
/* The interval of a predicted ratio of two arms of one config: from the
 * measured pairs of the family's data ("pair" cells). */
XS_API xs_status xs_ratio_interval(const char *family, double size, xs_interval *out,
                                   xs_error *err);
/* Whether a choice is a clear win: the predicted ratio of the runner-up's
 * time over the chosen's, and its 80% interval from the residuals of
 * measured pairs of arms (xs_ratio_interval at the pick's tokens). clear:
 * 1 when the interval's low end is above 1 (the runner-up is slower even
 * where the model errs most), 0 when it is too close to call (measure
 * both: `xstage fit megamoe` on the machine's own timings settles it), -1
 * when there is no runner-up of another schedule. */
typedef struct xs_moe_verdict {
  double ratio;          /* runner-up / chosen, predicted; NAN: none      */
  double low, high;      /* its 80% interval                              */
  xs_interval interval;  /* the ratio residuals' interval it rests on     */
  int clear;
} xs_moe_verdict;
XS_API xs_status xs_moe_verdict_of(const xs_moe_pick *pick, xs_moe_verdict *out,
                                   xs_error *err);

/* ---- Validation against published kernel timings (docs/validate.md) ----
 * A CSV with megamoe.csv's columns: source, gpu, gpu_note, ep, hidden,
 * intermediate, experts, topk, shared_experts, act_dtype, weight_dtype,
 * tokens, arm, time_us, timing. Each row is predicted on the built-in
 * profile named by gpu, for its arm, without reading time_us. */
/* What a row of `xstage validate ep` carries (kind 2; docs/validate.md
 * "ep"): the library's kernel, the shape, and the row's own metric. */
typedef struct xs_validate_ep_row {
  char library[24], mode[16], phase[24], fabric[24], metric[16];
  double ep, hidden, topk, experts, elem_bytes, sms;
  double topk_groups; /* 0: uniform routing; g: group-limited to g nodes  */
  int api_time;      /* timed around the Python call, not the kernel     */
  int ll_nvlink;     /* low-latency kernels: same-node peers over NVLink */
  double bytes;      /* what the library's figure divides its time by for
                        one rank (0: the metric is a time)             */
  double measured, predicted; /* in the metric: us or GB/s             */
  double model[4];   /* each model's prediction in the metric (burstgap,
                        blocking, serial, ideal: xs_model's order)     */
  double loso;       /* predicted with the fitted constants refitted
                        without the row's source (NAN until
                        xs_validate_ep_by_source)                      */
  double loso_error;
} xs_validate_ep_row;

typedef struct xs_validate_row {
  char *source;        /* the whole field, of any length the CSV's line
                          limit allows; the set's (xs_validate_free)    */
  char gpu[48], arm[32];
  double tokens;
  double measured_us, predicted_us, error; /* error = predicted/measured-1 */
  size_t line;                             /* in the CSV                   */
  xs_moe_config config;
  xs_moe_pattern knobs;
  xs_moe_breakdown breakdown;
  int kind;             /* 0: MegaMoE (config...), 1: attention (fa...)  */
  xs_fa_config fa;
  xs_fa_breakdown fa_breakdown;
  char layout[16], pass[8];
  /* MegaMoE: every model's prediction (burstgap's is predicted_us) */
  double model_us[XS_MODEL_COUNT];
  /* what the row measures: "time" (the kernel's), or "pull_end" (when
   * its dispatch pull's last row arrived) */
  char metric[16];
  /* the lag kernel, whose default lag follows a token bound the
   * harness may or may not pass: the prediction with the other bound
   * (the call's own when the row gives a capacity, else the buffer's
   * 8192), NAN for other arms */
  double alt_us;
  xs_moe_pattern alt_knobs;
  xs_validate_ep_row ep; /* kind 2 */
  /* the row's 80% interval from the other sources' residuals (NAN until
   * xs_validate_intervals; NAN for a row of another metric), and whether
   * its arm and band had too few of them (the family's pooled model) */
  double interval_us[2];
  int interval_pooled;
  /* a MegaMoE sequential row predicted again with the EP programs'
   * constants refitted without some sources (xs_validate_megamoe_refit);
   * 0 until then, NAN for other rows */
  double refit_us;
} xs_validate_row;

/* The EP programs' constants fitted to published EP timings (docs/ep.md
 * "Fitted constants"): pair_s, api_s, nvl_eff, ep_sm_streams.sm90,
 * ep_sm_streams.sm100 (xs_ep_constant_name). */
#define XS_EP_CONSTANTS 5

typedef struct xs_validate_set {
  xs_validate_row *rows;
  size_t nrows;
  /* after xs_validate_megamoe_refit: the EP constants refitted without the
   * sources it left out, how many EP rows those were, and the pattern */
  int refitted;
  double refit[XS_EP_CONSTANTS];
  size_t refit_left_out, refit_rows;
  char refit_without[64];
} xs_validate_set;

/* Every kernel-time row's 80% interval (docs/validate.md "Intervals"):
 * from the residuals of the set's rows of other sources in its arm and
 * size band (each EP row's taken as predicted without its own source:
 * call xs_validate_ep_by_source first), so that a row's interval is what a
 * kernel never seen would get. */
XS_API xs_status xs_validate_intervals(xs_validate_set *set, xs_error *err);
/* How the intervals cover their rows, by arm and size band. */
typedef struct xs_validate_cover {
  char arm[48];
  int band;
  char band_name[16];
  size_t rows, inside, pooled;
  double median_half_width; /* of the interval, over the prediction      */
} xs_validate_cover;
XS_API xs_status xs_validate_coverage(const xs_validate_set *set, xs_validate_cover **out,
                                      size_t *n, xs_error *err);
/* The residual table (data/residuals.csv) of sets: every kernel-time row
 * and every pair of arms of one config, as CSV text (*out malloc'd). */
XS_API xs_status xs_validate_residuals_csv(const xs_validate_set *const *sets, size_t nsets,
                                           char **out, xs_error *err);
/* Two residual tables agree (rows in order, numbers within rel): *differ
 * 0, else the first row (from 1) that does not. */
XS_API xs_status xs_validate_residuals_same(const char *a, size_t alen, const char *b,
                                            double rel, size_t *differ, xs_error *err);

/* Parse and predict every row (progress: called after each row, may be
 * NULL). Errors name file:line:column: besides a bad value, a line not
 * UTF-8, a stray quote, a column named twice, time_us outside 0.001 to
 * 1e12, a row measuring what an earlier one does (docs/validate.md), and
 * a row past XS_VALIDATE_MAX_ROWS. */
#define XS_VALIDATE_MAX_ROWS 100000
XS_API xs_status xs_validate_megamoe(const char *text, size_t length,
                              const char *filename, xs_validate_set *out,
                              void (*progress)(size_t done, void *ctx),
                              void *ctx, xs_error *err);
XS_API void xs_validate_free(xs_validate_set *set);
/* The same, with profiles of the caller's (a fitted one: xs_moe_fit):
 * a row whose gpu is the name of one of profiles[0..nprofiles) is
 * predicted on it, the others on the built-in profiles. */
XS_API xs_status xs_validate_megamoe_with(const char *text, size_t length,
                                          const char *filename,
                                          const xs_profile *const *profiles,
                                          size_t nprofiles,
                                          xs_validate_set *out,
                                          void (*progress)(size_t, void *),
                                          void *ctx, xs_error *err);
/* Ring attention (docs/validate.md): a CSV with the columns source, gpu,
 * cp, seq_per_rank, heads, kv_heads, head_dim, causal, layout, kernel,
 * pass, arm, time_us (and optionally batch); each row predicted by the
 * attention planner on the built-in profile named by gpu, under every
 * model (model_us) and with communication free (fa_breakdown.free_s),
 * without reading time_us. Pairs (compare_arms) are a ring and the local
 * arm, or two layouts, of one shape. */
XS_API xs_status xs_validate_flashattn(const char *text, size_t length,
                                const char *filename, xs_validate_set *out,
                                void (*progress)(size_t, void *), void *ctx,
                                xs_error *err);
/* The local arm's row for ring row i (the same source, GPU and shape),
 * or SIZE_MAX. P times it is the ring's ideal, by measurement. */
XS_API size_t xs_validate_fa_local(const xs_validate_set *set, size_t i);
/* Where communication shows: ring rows with a local arm (rings) whose
 * measured time exceeds P x the local arm's by more than threshold
 * (0.10) are `shows` rows, from shows_sources sources. Medians of
 * |error| over all rows and over those, of |predicted / measured - 1| of
 * the ring over its ideal (each over P x its own local arm) on those, and
 * the same three with every prediction replaced by the ring with
 * communication free (free_*): when they match, the rows do not test the
 * communication. NAN for none. */
typedef struct xs_validate_fa_stats {
  size_t rows, rings, shows, shows_sources;
  double median_all, median_shows, max_shows, median_ratio_shows;
  double free_median_all, free_median_shows, free_median_ratio_shows;
} xs_validate_fa_stats;
XS_API xs_status xs_validate_fa_summary(const xs_validate_set *set, double threshold,
                                        xs_validate_fa_stats *out, xs_error *err);
/* The signed median error of an arm's ring rows in sequence band i
 * (tokens per rank <= 4096, 4097 to 16384, > 16384; *label "<=4k",
 * "4-16k", ">16k"), NAN for a band without rows; *n its rows (label and n
 * may be NULL). */
#define XS_VALIDATE_FA_BANDS 3
XS_API double xs_validate_fa_band_bias(const xs_validate_set *set, const char *arm,
                                       int i, const char **label, size_t *n);
/* Expert-parallel dispatch and combine (docs/validate.md "ep"): a CSV
 * with ep.csv's columns (source, gpu, fabric, library, kernel, phase,
 * scope, ep, nodes, tokens, hidden, topk, experts, dtype, metric, value,
 * timing; an optional knobs column). Each row's kernel is built as a
 * program on the built-in GPU profile with its fabric and predicted before
 * its value is read; error is in the row's own metric (a time, or the
 * library's GB/s by its own formula). Rows are kind 2 with arm
 * "LIBRARY/MODE"; metric is left empty so that xs_validate_median and
 * xs_validate_same_arm / _source summarise them. */
XS_API xs_status xs_validate_ep(const char *text, size_t length,
                                const char *filename, xs_validate_set *out,
                                void (*progress)(size_t, void *), void *ctx,
                                xs_error *err);
/* The EP model's fitted constants (docs/ep.md "Fitted constants"): name,
 * what it is, and the value the library uses (fitted to every row of the
 * project's data/published/ep.csv). */
/* xs_validate_ep_by_source refits without each source from scratch while
 * sources x rows is at most XS_EP_EXACT_WORK; past it, each source's
 * refit is made on the rows' linear model about a fit to all rows, and
 * sets of more than XS_EP_BY_SOURCE_MAX_ROWS rows are refused. */
#define XS_EP_EXACT_WORK 4000
#define XS_EP_BY_SOURCE_MAX_ROWS 2000
XS_API const char *xs_ep_constant_name(size_t i);
XS_API const char *xs_ep_constant_about(size_t i);
XS_API double xs_ep_constant_value(size_t i);
/* Fit the constants to the set's rows, leaving out those of one source
 * (NULL: none; a pattern ending in '*': every source it begins, as
 * "deepseek-ai/DeepEP*"): XS_EP_CONSTANTS values into values. */
XS_API xs_status xs_validate_ep_fit(const xs_validate_set *set,
                                    const char *leave_out, double *values,
                                    xs_error *err);
/* Leave one source out: for every source, the constants refitted on the
 * others (values[k * XS_EP_CONSTANTS + i] for the set's k-th distinct
 * source, when values is not NULL; the caller sizes it) and its rows
 * predicted with them (each row's ep.loso and ep.loso_error). */
XS_API xs_status xs_validate_ep_by_source(xs_validate_set *set, double *values,
                                          xs_error *err);
/* The signed median, over the EP rows of one arm ("library/mode"; NULL:
 * all) in token band i (<= 128, 129 to 1024, > 1024 tokens per rank;
 * *label "<=128", "129-1024", ">1024"), of the predicted time over the
 * published time less 1 (a row in GB/s counts by the time its figure
 * stands for, so that the sign means the same in every metric); NAN for
 * a band of fewer than 3 rows; *n its rows (label and n may be NULL). */
#define XS_VALIDATE_EP_BANDS 3
XS_API double xs_validate_ep_band_bias(const xs_validate_set *set,
                                       const char *arm, int i,
                                       const char **label, size_t *n);
/* An EP set's rows grouped by field (0 library/mode, the row's arm; 1
 * library; 2 phase; 3 source), the groups in order of first appearance:
 * group k is named name[k] (a pointer into the rows) and holds rows
 * idx[first[k]] .. idx[first[k + 1] - 1], in row order. Made by sorting,
 * not by a scan of every row per group: 100,000 one-row sources take as
 * long as eight. Free with xs_validate_ep_groups_free. */
typedef struct xs_validate_ep_groups {
  size_t n;
  const char **name;
  size_t *first, *idx;
} xs_validate_ep_groups;
XS_API xs_status xs_validate_ep_group(const xs_validate_set *set, int field,
                                      xs_validate_ep_groups *out, xs_error *err);
XS_API void xs_validate_ep_groups_free(xs_validate_ep_groups *g);
/* Over the rows of group k of g (g NULL: every row of the set), the
 * median |error| of a model (xs_model; -1: predicted with the source left
 * out, after xs_validate_ep_by_source) in the row's metric, their count and
 * the largest (NAN when none). */
XS_API double xs_validate_ep_median(const xs_validate_set *set,
                                    const xs_validate_ep_groups *g, size_t k, int model,
                                    size_t *count, double *max_abs);
/* `xstage validate ep --json` of a set: its rows (each with its 80%
 * interval after xs_validate_intervals) and the summaries per library and
 * mode, library, phase and source, the signed bias per library, mode and
 * token band, by_model for the models of models_mask (bit m: xs_model m;
 * none past burstgap: no by_model), the intervals' coverage and the fitted
 * constants; with values (xs_validate_ep_by_source's, per distinct
 * source) the left-out figures and each constant without each source.
 * free() *out. */
XS_API xs_status xs_validate_ep_json(const xs_validate_set *set, unsigned models_mask,
                                     const double *values, char **out, xs_error *err);


/* The sequential arm of a MegaMoE validation set (megamoe) runs its
 * all-to-all on the EP programs, whose constants are fitted to EP timings
 * (ep, from xs_validate_ep): refit them leaving out the sources that
 * leave_out names (as xs_validate_ep_fit's) and predict every sequential
 * kernel-time row again with them (its refit_us; the set's refit, refitted,
 * refit_left_out and refit_without). What `xstage validate megamoe
 * --by-source` shows without DeepEP's own figures ("deepseek-ai/DeepEP*"). */
XS_API xs_status xs_validate_megamoe_refit(xs_validate_set *megamoe,
                                           const xs_validate_set *ep,
                                           const char *leave_out, xs_error *err);
/* Over the rows predicted again by xs_validate_megamoe_refit (those of
 * source; NULL: all), the median |error| with the refitted constants,
 * and (shipped, may be NULL) with the shipped ones; NAN when there is no
 * such row; *n (may be NULL) their count. */
XS_API double xs_validate_refit_median(const xs_validate_set *megamoe, const char *source,
                                       double *shipped, size_t *n);

/* The median of |error| over rows for which keep(row, ctx) is true (all
 * when keep is NULL); *n receives their count; NAN when none. */
XS_API double xs_validate_median(const xs_validate_set *set,
                          int (*keep)(const xs_validate_row *, void *),
                          void *ctx, size_t *n, double *max_abs);
/* keep functions for xs_validate_median: the row's arm, or its source, is
 * the string ctx */
XS_API int xs_validate_same_arm(const xs_validate_row *row, void *arm);
XS_API int xs_validate_same_source(const xs_validate_row *row, void *source);
/* The distinct arms (source 0) or sources (source 1) of the rows, in the
 * order they first appear: the first max of them into names (pointers into
 * the rows); returns how many there are, which may be more than max. */
XS_API size_t xs_validate_distinct(const xs_validate_set *set, int source,
                                   const char **names, size_t max);
/* The rows by arm (by_source 0) or by source (1), in the order each
 * first appears: its name (into the rows), and over its rows that time a
 * kernel (as xs_validate_median) their count and the median and largest
 * |error| (NAN when none). *out is malloc'd (free()); O(n log n). */
typedef struct xs_validate_group {
  const char *name;
  size_t rows;
  double median_abs_error, max_abs_error;
} xs_validate_group;
XS_API xs_status xs_validate_groups(const xs_validate_set *set, int by_source,
                                    xs_validate_group **out, size_t *n,
                                    xs_error *err);
/* Over pairs of rows that measure two arms of one config (same source,
 * GPU, shape, dtypes and tokens): how often the faster is predicted
 * faster, and |predicted ratio / measured ratio - 1| of the two. Rows are
 * grouped by config first: O(n log n) and a step per pair. */
typedef struct xs_validate_pairs {
  size_t pairs, agree;
  double median_ratio_error, max_ratio_error; /* NAN when no pairs */
} xs_validate_pairs;
XS_API xs_status xs_validate_compare_arms(const xs_validate_set *set,
                                   xs_validate_pairs *out, xs_error *err);
/* Each pair of rows that measure two arms of one config (and one
 * metric) whose measured times differ by more than `apart` (0.05: 5%):
 * rows a and b, their measured and predicted ratios (a over b). *out is
 * malloc'd (free()); sorted by config, then arm. */
typedef struct xs_validate_pair {
  size_t a, b;
  double measured_ratio, predicted_ratio;
  int agree; /* the faster is predicted faster */
} xs_validate_pair;
XS_API xs_status xs_validate_pair_list(const xs_validate_set *set,
                                       double apart, xs_validate_pair **out,
                                       size_t *n, xs_error *err);
/* What n pairs add up to: how many, in how many the faster is predicted
 * faster, the median and largest |predicted ratio / measured ratio - 1|
 * (NAN for none), and of the pairs measured at least 1.2x apart (wide)
 * how many are predicted at least 1.1x apart the same way round. */
typedef struct xs_validate_pair_stats {
  size_t pairs, agree;
  double median_ratio_error, max_ratio_error;
  size_t wide, wide_kept;
} xs_validate_pair_stats;
XS_API void xs_validate_pair_stats_of(const xs_validate_pair *pairs, size_t n,
                                      xs_validate_pair_stats *out);
/* The signed median error of an arm's rows in token band i of the bias
 * table (<= 64, 128 to 512, >= 1024 tokens per rank; *label "<=64",
 * "128-512", ">=1024"), NAN for a band of fewer than 3 rows; *n its rows
 * (label and n may be NULL). */
#define XS_VALIDATE_BANDS 3
XS_API double xs_validate_band_bias(const xs_validate_set *set, const char *arm,
                                    int i, const char **label, size_t *n);
/* The median |error| of one model's predictions (XS_MODEL_BURSTGAP is
 * error) over the kept rows that measure kernel time; NAN when none. */
XS_API double xs_validate_median_model(const xs_validate_set *set,
                                       xs_model model,
                                       int (*keep)(const xs_validate_row *,
                                                   void *),
                                       void *ctx, size_t *n, double *max_abs);
/* The signed median error of the rows of one arm (NULL: all) with tokens
 * in [lo, hi] that measure kernel time; NAN when none. */
XS_API double xs_validate_bias(const xs_validate_set *set, const char *arm,
                               double lo, double hi, size_t *n);
/* Predicted against measured on log axes, one colour per arm, y = x and a
 * +-20% band; free() the result. */
XS_API char *xs_validate_svg(const xs_validate_set *set, const char *title);

/* ---- Tuning the MegaMoE kernel model to a machine (docs/tune.md) ----
 * The kernel model's terms that timings can inform, each one number (or
 * a set moved together) of a profile, scaled by a factor: xs_moe_fit
 * fits them to a user's kernel timings once, xs_tuner learns them from
 * the kernel's own launches as it runs. */
typedef enum {
  XS_MOE_TERM_GEMM = 0,     /* "gemm": the SM's MMA rate: every dtype's
                               compute.flops_per_s and compute.mma_clock_hz
                               together (achieved GEMM throughput)       */
  XS_MOE_TERM_TILE = 1,     /* "tile": compute.tile_overhead_s           */
  XS_MOE_TERM_L2 = 2,       /* "l2": compute.l2_Bps                      */
  XS_MOE_TERM_HBM = 3,      /* "hbm": channels.hbm.drain_Bps             */
  XS_MOE_TERM_LINK = 4,     /* "link": the default channel's drain_Bps   */
  XS_MOE_TERM_LINK_ISSUE = 5, /* "link-issue": its inject_Bps and
                               worker_inject_Bps together                */
  XS_MOE_TERM_CAPACITY = 6, /* "capacity": its capacity_B                */
  XS_MOE_TERM_LATENCY = 7,  /* "latency": its latency_s                  */
  XS_MOE_TERM_LAUNCH = 8,   /* "launch": compute.launch_s                */
  XS_MOE_TERM_BARRIER = 9,  /* "barrier": compute.barrier_s              */
  XS_MOE_TERM_SETUP = 10,   /* "setup": compute.setup_s                  */
  XS_MOE_TERM_HOST_SYNC = 11, /* "host-sync": compute.host_sync_s        */
  XS_MOE_TERM_A2A = 12,     /* "a2a": compute.a2a_fixed_s                */
  XS_MOE_TERMS = 13
} xs_moe_term;
/* "gemm", "tile", ...; NULL past the last */
XS_API const char *xs_moe_term_name(xs_moe_term term);
/* the term of a name, or -1 */
XS_API int xs_moe_term_from_name(const char *name);
/* The profile's key paths the term moves ("compute.mma_clock_hz",
 * "channels.nvlink.drain_Bps"; several separated by ", "), into buf. */
XS_API const char *xs_moe_term_keys(const xs_profile *profile, xs_moe_term term,
                                    char *buf, size_t size);
/* The term's number in the profile (the first of its keys): 0 when the
 * profile does not give it, INFINITY for an unbounded capacity. */
XS_API double xs_moe_term_value(const xs_profile *profile, xs_moe_term term);
/* Multiply the term's numbers in profile by factor (> 0, finite);
 * XS_INVALID when a number would leave its valid range or the profile
 * has no such number (an "hbm" channel, a default channel). */
XS_API xs_status xs_moe_term_scale(xs_profile *profile, xs_moe_term term,
                                   double factor, xs_error *err);

/* `xstage fit megamoe`: fit terms to kernel timings in the validate CSV
 * format (docs/validate.md), by least squares on log error. */
typedef struct xs_moe_fit_options {
  unsigned terms;        /* bit 1u << xs_moe_term of the terms to fit, each
                            of which the rows must determine (XS_INVALID
                            naming the others and why); 0: every term
                            the rows determine                          */
  const char *source;    /* only rows of this source (NULL: every row)   */
  unsigned max_iterations; /* of the least squares (0: 30)               */
  unsigned bootstrap;    /* resamples of the rows (0: 200)               */
  uint64_t seed;         /* of the resampling (0: a fixed one)           */
} xs_moe_fit_options;

typedef struct xs_moe_fit_term {
  xs_moe_term term;
  int fitted;            /* 1: fitted; 0: left as the base gives it      */
  double base, value;    /* the number before and after                  */
  double scale;          /* value / base                                 */
  double lo, hi;         /* scale's 68% bootstrap interval (16th and
                            84th percentiles)                           */
  double sensitivity;    /* the largest |d log time / d log term| over
                            the rows, at the base                        */
  char why[192];         /* not fitted: why                              */
} xs_moe_fit_term;

typedef struct xs_moe_fit_row {
  size_t line;           /* in the CSV                                   */
  double measured_us, before_us, after_us;
} xs_moe_fit_row;

typedef struct xs_moe_fit_result {
  size_t nrows;          /* rows fitted: the profile's gpu, kernel time  */
  size_t skipped;        /* rows of another gpu, source or metric        */
  xs_moe_fit_row *rows;  /* nrows of them; xs_moe_fit_free              */
  double median_before, median_after; /* |error| over the rows fitted    */
  double max_before, max_after;
  unsigned iterations, evaluations; /* of the least squares; programs  */
  size_t nfitted;        /* terms fitted                                */
  xs_moe_fit_term terms[XS_MOE_TERMS];
} xs_moe_fit_result;

/* Fit to the rows of text (a CSV in the validate format, named filename
 * in messages) whose gpu is base's name: each row predicted as `xstage
 * validate megamoe` predicts it, the terms moved to minimise the sum of
 * squared log errors (Levenberg-Marquardt, each term within x1/4 to x4 of
 * the base, at most max_iterations), uncertainty from bootstrap
 * resamples of the rows. *tuned (may be NULL) receives base with the
 * fitted numbers, each one's "sources" entry starting "fitted:" and
 * naming the file and rows; free it with xs_profile_free. Deterministic
 * for a seed. A text of more than XS_MOE_FIT_MAX_ROWS rows is refused
 * before any is predicted (each is predicted 60 to 120 times, spread over
 * the cores online: 50 s of CPU at 1,000 rows here); a fit whose every
 * term ends at its bound is refused (no profile within the bounds gives
 * those times). */
#define XS_MOE_FIT_MAX_ROWS 2000
XS_API xs_status xs_moe_fit(const char *text, size_t length,
                            const char *filename, const xs_profile *base,
                            const xs_moe_fit_options *options,
                            xs_moe_fit_result *out, xs_profile **tuned,
                            xs_error *err);
XS_API void xs_moe_fit_free(xs_moe_fit_result *result);

/* The online tuner (docs/tune.md "The tuner"): for a kernel's host code,
 * between launches. It holds, for each grid point (a token count) and
 * each option there (xs_moe_options), the model's log time and its
 * gradient in the log of each term it learns, built once by the planner;
 * then, per grid point, a belief about the terms and each option's own
 * error (jointly Gaussian: a mean and a covariance), updated from each
 * launch's measured time by a Kalman step. Memory is fixed at creation
 * (xs_tuner_state_size: per grid point of m options and K terms, about
 * 8 (K + m)^2 bytes); what a launch taught is forgotten with a half life
 * (the covariance relaxes toward the prior). A timing far off the belief
 * is weighted down (Huber's rule at 1.345 standard deviations): one
 * timing moves a term's log factor by at most 1.345 times its standard
 * deviation; three in a row more than 4 standard deviations off on the
 * same side reset the point's covariance (the machine changed). */
typedef struct xs_tuner xs_tuner;
#define XS_TUNER_MAX_POINTS 64
typedef struct xs_tuner_options {
  const double *tokens;  /* grid of token counts, ascending (at most
                            XS_TUNER_MAX_POINTS); NULL: table's, else the
                            config's tokens alone                        */
  size_t ntokens;
  const xs_moe_table *table; /* a knob table whose grid points to use when
                            tokens is NULL (may be NULL)                 */
  unsigned schedules;    /* as xs_moe_options' mask; 0: all              */
  unsigned terms;        /* bit 1u << xs_moe_term of the terms it learns;
                            0: gemm, hbm, link, link-issue, capacity,
                            launch and barrier (those the options' times
                            depend on are kept)                          */
  double noise;          /* relative spread of one measured time (0: 0.02) */
  double prior;          /* relative uncertainty of each term at the start
                            (0: 0.25)                                    */
  double option_prior;   /* relative uncertainty of each option's own
                            error at the start (0: 0.1)                  */
  double half_life;      /* launches after which a launch's information
                            is half forgotten (0: 200)                   */
  double threshold;      /* explore another option only where it could
                            be faster than the predicted best by more
                            than this, at two standard deviations
                            (0: the noise)                               */
  double margin;         /* never choose an option predicted slower than
                            the best by more than this (0: 0.2)          */
} xs_tuner_options;

typedef struct xs_tuner_choice {
  xs_moe_schedule schedule;
  unsigned rule;         /* the schedule's knob rule (xs_moe_rule_name)  */
  xs_moe_pattern knobs;  /* what to launch                               */
  double tokens;         /* the grid point the choice was made at        */
  double predicted_s;    /* the tuner's time for it now                  */
  double sd;             /* its relative uncertainty (log sd)            */
  double best_s;         /* the predicted best's time                    */
  int explore;           /* 1: not the predicted best; its uncertainty
                            says it could win by more than threshold     */
} xs_tuner_choice;

/* Plans every grid point on profile and builds the tuner: 1 + 2K plans
 * a point for K terms asked for (0.35 s for 5 points of DeepSeek-V3 up
 * to 1024 tokens; docs/limits.md gives more); refused past
 * XS_MOE_WORK_MAX GEMM tiles of planning, known before the first. The
 * tuner's own calls are cheap. XS_INVALID for a NULL config, profile or
 * out. Free with xs_tuner_free. */
XS_API xs_status xs_tuner_create(const xs_moe_config *config,
                                 const xs_profile *profile,
                                 const xs_tuner_options *options,
                                 xs_tuner **out, xs_error *err);
XS_API void xs_tuner_free(xs_tuner *tuner);
/* The option to launch for tokens (the nearest grid point in log
 * tokens): the predicted best, or another the uncertainty says could win
 * by more than the threshold, never one predicted to lose more than the
 * margin. No allocation, no lock; any number of threads may call it,
 * also while others observe (it retries a read that an observation
 * overlapped, and returns XS_TIMEOUT rather than retry past about 0.1 s).
 * Deterministic: the same state gives the same choice. XS_INVALID for
 * tokens not positive, a NULL tuner or out. */
XS_API xs_status xs_tuner_choose(const xs_tuner *tuner, double tokens,
                                 xs_tuner_choice *out);
/* A launch of schedule with knobs at tokens took measured_s: the terms
 * and the option's own error are updated (weighted down when far off the
 * belief; above). Threads observing at once take turns (each waits for
 * the one in progress; XS_TIMEOUT past about 0.1 s). XS_INVALID for a
 * time outside 1e-9 to 1e6 s (0.001 us to 1e12 us), NULL knobs or tuner;
 * XS_NOTFOUND when no option at that grid point has this schedule and
 * these knobs. */
XS_API xs_status xs_tuner_observe(xs_tuner *tuner, double tokens,
                                  xs_moe_schedule schedule,
                                  const xs_moe_pattern *knobs,
                                  double measured_s, xs_error *err);
/* Bytes the tuner holds (fixed at creation). */
XS_API size_t xs_tuner_state_size(const xs_tuner *tuner);
/* The tuner's factor for a term at the grid point of tokens (1: the
 * profile's) and its relative uncertainty (log sd); XS_NOTFOUND for a
 * term it does not learn. */
XS_API xs_status xs_tuner_term(const xs_tuner *tuner, double tokens,
                               xs_moe_term term, double *scale, double *sd);
/* Observations so far. */
XS_API uint64_t xs_tuner_observations(const xs_tuner *tuner);

/* ---- Calibration samples and the fit (docs/probe.md); the probes that
 * take samples are libxstage-measure's (xstage_measure.h) ---- */

/* One burst: how long the issuer was busy issuing it (issue_s) and when
 * its last byte arrived (deliver_s), both from the burst's start. */
typedef struct xs_sample {
  double bytes, gap_s, issue_s, deliver_s;
  unsigned repeat;
} xs_sample;

typedef struct xs_samples {
  char backend[32];
  xs_sample *rows;
  size_t n, cap;
  double capacity_B;  /* the channel's buffer as set (0: unknown)      */
  double drain_Bps;   /* the reader's set rate (0: as fast as it can)  */
  unsigned retried;   /* trials repeated because the reader starved    */
} xs_samples;

XS_API void xs_samples_free(xs_samples *samples);
/* The samples CSV (docs/formats.md: backend,bytes,gap_s,issue_s,
 * deliver_s,repeat) after
 * "# " comment lines; bad rows are refused with their line number. */
XS_API xs_status xs_samples_parse_csv(const char *text, size_t length,
                               const char *filename, xs_samples **out,
                               xs_error *err);
XS_API xs_status xs_samples_load_csv(const char *path, xs_samples **out,
                              xs_error *err);
/* The CSV text, after the comment lines of header (may be NULL), numbers
 * exactly (xs_samples_parse_csv gives the same samples back). NULL when
 * out of memory or when the backend's name is not UTF-8, holds a comma or
 * a line break, or starts with '#' or a space. */
XS_API char *xs_samples_to_csv(const xs_samples *samples, const char *header);

typedef struct xs_fit {
  double inject_Bps, drain_Bps, capacity_B, latency_s, overhead_s;
  /* bootstrap standard deviations over the rows (200 resamples) */
  double inject_sd, drain_sd, capacity_sd, latency_sd;
  double drain_from_delivery_Bps; /* the slope of delivery past the knee */
  double knee_B;                  /* b_f = C R_inj / (R_inj - R_drain)    */
  double rms_issue_s, rms_deliver_s; /* residuals                        */
  size_t rows;
  int knee_reached;  /* the sweep went past the knee                     */
  int noisy;         /* residuals too large for the numbers to mean much */
  char warning[512];
} xs_fit;

/* Fit R_inj, R_drain, C, L and the per-send overhead from any samples:
 * issue time against burst size, piecewise linear with a scanned knee
 * (slope 1/R_inj below, 1/R_drain above); delivery past the knee gives
 * R_drain again and L. */
XS_API xs_status xs_fit_samples(const xs_samples *samples, xs_fit *out,
                         xs_error *err);
/* A profile of one channel named after the backend, from a fit. */
XS_API xs_profile *xs_fit_profile(const xs_fit *fit, const char *name,
                           const char *channel, const char *source);

/* The JSON report of `xstage predict --json` (docs/predict.md): results[i]
 * for i < count, each a different model. free() the result; NULL when out
 * of memory or when a name is not UTF-8 or a number not finite. */
XS_API char *xs_report_json(const xs_program *program, const xs_profile *profile,
                     xs_result *const *results, size_t count);

/* A Chrome trace (JSON, for ui.perfetto.dev and chrome://tracing) of a
 * result and the timeline recorded with it: a track per worker (compute,
 * overhead, issue, stall, blocked slices), a track per channel (a backlog
 * counter, each send's X-stage as a span). free() the result. */
XS_API char *xs_timeline_trace_json(const xs_program *program,
                             const xs_profile *profile, const xs_result *result,
                             const xs_timeline *timeline);
/* An SVG: worker lanes over time (grouped past 33 workers), under them each
 * channel's backlog with its capacity line and the X-stages shaded. */
XS_API char *xs_timeline_svg(const xs_program *program, const xs_profile *profile,
                      const xs_result *result, const xs_timeline *timeline);

/* Write data to path. A regular file (new, or replaced) is written
 * through a temporary file beside it and a rename, so that a reader never
 * sees half a file; a new file's mode is 0666 less the umask, a replaced
 * file keeps its mode (and owner and group, where this process may set
 * them). A symbolic link stays a link: its target is written so (a
 * dangling link's target is created through it). Written in place,
 * never replaced: a device or a FIFO (/dev/null), /dev/stdout,
 * /dev/stderr, /dev/fd/N and /proc/self/fd/N (through that descriptor,
 * from its offset, so `--svg /dev/stdout >> log` appends), and a file
 * that standard output or error is open on. A directory is refused, and
 * so is a read-only regular file (one this process may not write, or
 * that has no write permission for anyone: a rename would replace it).
 * On any error the temporary file is removed. */
XS_API xs_status xs_write_file_atomic(const char *path, const char *data,
                               size_t length, xs_error *err);
/* What xs_write_file_atomic would refuse, checked before the work that
 * makes the data: an empty path, a directory, a read-only file, a new
 * file in a folder that is not there or not writable. XS_OK otherwise
 * (a write can still fail: a full disk). */
XS_API xs_status xs_check_output(const char *path, xs_error *err);
/* Remove the temporary files of the xs_write_file_atomic calls in
 * progress. Async-signal-safe: for a handler of SIGINT or SIGTERM to call
 * before the process dies (the xstage command does), so that no
 * NAME.tmpPID-N is left beside a target. */
XS_API void xs_remove_temp_files(void);

/* ---- Results as JSON text, for the command and the bindings ----
 * The documents `xstage plan`, `sweep` and `validate` print with --json
 * (docs/plan-megamoe.md, docs/plan-flashattn.md, docs/validate.md), made
 * here so that the command and the language bindings share one producer.
 * Each function fills *out with a NUL-terminated JSON text (no final
 * newline), freed with xs_free (or free()); on failure *out is NULL and
 * err says why (XS_NOMEM also for a name that is not UTF-8). The planning
 * ones plan; the sweep and validate ones take what the caller computed
 * (a sweep may be spread over MPI ranks) or, for sweeps, plan it. */

/* free() of the C library that allocated a result: for callers (Python's
 * ctypes) that cannot be sure their free() is the library's. */
XS_API void xs_free(void *pointer);
/* sizeof the named public struct ("xs_moe_config", "xs_fa_config",
 * "xs_error", "xs_moe_table_options", "xs_sim_options", "xs_fa_ring",
 * "xs_fa_table_row", "xs_validate_group", "xs_validate_set",
 * "xs_moe_fit_options", "xs_moe_fit_result", "xs_tuner_options",
 * "xs_tuner_choice"), 0 for
 * another name: bindings that mirror a struct check their copy against
 * it when they load. */
XS_API size_t xs_struct_size(const char *name);

/* `plan megamoe --json`: xs_moe_plan of the config, the recommended option
 * (xs_moe_recommend with tolerance and schedules, or the base pick of
 * xs_moe_sensitivity_run and its rows under "sensitivity" when sensitivity
 * is nonzero). result (may be NULL) receives the plan. */
XS_API xs_status xs_moe_plan_json(const xs_moe_config *config,
                                  const xs_profile *profile, double tolerance,
                                  unsigned schedules, int sensitivity,
                                  xs_moe_result *result, char **out,
                                  xs_error *err);
/* `plan megamoe --tokens-grid ... --json`: a table of xs_moe_plan_table
 * planned for config with that tolerance. */
XS_API xs_status xs_moe_table_json(const xs_moe_table *table,
                                   const xs_moe_config *config,
                                   const xs_profile *profile, double tolerance,
                                   char **out, xs_error *err);

/* `plan flashattn --json`: xs_fa_plan of the config. result (may be
 * NULL) receives the plan. */
XS_API xs_status xs_fa_plan_json(const xs_fa_config *config,
                                 const xs_profile *profile,
                                 xs_fa_result *result, char **out,
                                 xs_error *err);
/* xs_fa_plan_json's document with the choice under "recommended" and
 * xs_fa_sensitivity_run's rows under "sensitivity" (xs_moe_plan_json's
 * shape): `xstage plan flashattn --sensitivity --json`. */
XS_API xs_status xs_fa_plan_sensitivity_json(const xs_fa_config *config,
                                             const xs_profile *profile,
                                             double tolerance, xs_fa_result *result,
                                             char **out, xs_error *err);

/* `plan flashattn --seq-grid`: per tokens per rank seq[i] (n of them),
 * the ring (path and layout, not the local arm) the model predicts
 * fastest, kept from the previous row while within tolerance of the
 * fastest. rows has room for n; *changes (may be NULL) counts the rows
 * whose choice differs from the one before. */
typedef struct xs_fa_table_row {
  double seq;
  xs_fa_ring chosen, fastest;
  size_t near; /* rings within the tolerance of the fastest */
} xs_fa_table_row;
XS_API xs_status xs_fa_table(const xs_fa_config *config,
                             const xs_profile *profile, const double *seq,
                             size_t n, double tolerance, xs_fa_table_row *rows,
                             size_t *changes, xs_error *err);
/* `plan flashattn --seq-grid ... --emit-header`: those rows as a C header
 * of {lo, seq, path, layout, forward_sms, predicted_us} rows and
 * PREFIX_lookup(seq), needing no xstage; prefix an xs_c_header_prefix. NULL
 * for another prefix, for a row with a number that is no C constant (not
 * finite; lo or seq not a whole number up to 2^32 - 1) or no path or
 * layout, or when out of memory; free() the result. */
XS_API char *xs_fa_table_header(const xs_fa_config *config, const xs_profile *profile,
                                const xs_fa_table_row *rows, size_t n,
                                double tolerance, const char *prefix);
/* `plan flashattn --seq-grid ... --json` of those rows. */
XS_API xs_status xs_fa_table_json(const xs_fa_config *config,
                                  const xs_profile *profile,
                                  const xs_fa_table_row *rows, size_t n,
                                  double tolerance, char **out, xs_error *err);

/* A sweep's grid (`xstage sweep ... --grid FILE`; text NULL: the default
 * grid): every config, checked for size but not planned; messages name
 * filename (and line and column for malformed JSON). *configs is freed
 * with xs_free. MegaMoE: {"presets", "tokens", "ep"}; attention:
 * {"presets", "seq", "cp", "causal", "kernel"}; either may name the
 * profile it is for, "profile" (xs_sweep_grid_profile reads it). */
/* The profile a grid names ("profile": "h100-nvlink") into buf, "" when
 * it names none; a grid that is not an object, or a name that is not a
 * string or longer than size, is XS_PARSE or XS_INVALID. */
XS_API xs_status xs_sweep_grid_profile(const char *text, size_t length,
                                       const char *filename, char *buf, size_t size,
                                       xs_error *err);
XS_API xs_status xs_moe_sweep_grid(const char *text, size_t length,
                                   const char *filename,
                                   xs_moe_config **configs, size_t *n,
                                   xs_error *err);
XS_API xs_status xs_fa_sweep_grid(const char *text, size_t length,
                                  const char *filename,
                                  xs_fa_config **configs, size_t *n,
                                  xs_error *err);
/* What a sweep's plans add up to (geometric means over the n configs).
 * MegaMoE: the best interleaved schedule over the best of the others
 * (best_plain / best_interleaved, burstgap; mean and largest), the same
 * ratio under blocking, the best interleaved over its ideal, and the
 * order alone (l1-then-l2 over searched: the same kernel and tiles, mean and
 * largest); geomean_speedup_vs_dedicated is NAN. Attention (the
 * config's layout): piggyback over sequential (mean and largest), the
 * same under blocking, piggyback over its ideal, and piggyback over the
 * faster dedicated way (stream or SMs); the order fields are NAN. */
typedef struct xs_sweep_summary {
  double geomean_speedup, max_speedup;
  double geomean_blocking_speedup, geomean_ideal_ratio;
  double geomean_speedup_vs_dedicated;
  double geomean_order_gain, max_order_gain;
} xs_sweep_summary;
XS_API void xs_moe_sweep_summary(const xs_moe_result *results, size_t n,
                                 xs_sweep_summary *out);
XS_API void xs_fa_sweep_summary(const xs_fa_result *results, size_t n,
                                xs_sweep_summary *out);
/* "deepseek-v3, 4096 tokens, EP 8" and "llama3-8b, seq 8192, CP 8": a
 * config named in a sweep's progress and messages. */
XS_API void xs_moe_config_describe(const xs_moe_config *config, char *buf,
                                   size_t size);
XS_API void xs_fa_config_describe(const xs_fa_config *config, char *buf,
                                  size_t size);
/* `sweep megamoe --json` and `sweep flashattn --json` of n configs and
 * their plans (results NULL: each is planned here, in order). */
XS_API xs_status xs_moe_sweep_json(const xs_profile *profile,
                                   const xs_moe_config *configs, size_t n,
                                   const xs_moe_result *results, char **out,
                                   xs_error *err);
XS_API xs_status xs_fa_sweep_json(const xs_profile *profile,
                                  const xs_fa_config *configs, size_t n,
                                  const xs_fa_result *results, char **out,
                                  xs_error *err);
/* `validate megamoe --json` and `validate flashattn --json`: rows and
 * summary of a set from xs_validate_megamoe or xs_validate_flashattn. */
/* The set's intervals as JSON (the "intervals" of validate's summary:
 * level, rows, inside, coverage, median_half_width, cells; docs/validate.md
 * "Intervals"), into *out (free()). */
XS_API xs_status xs_validate_intervals_json(const xs_validate_set *set, char **out,
                                            xs_error *err);
XS_API xs_status xs_validate_json(const xs_validate_set *set, char **out,
                                  xs_error *err);

#ifdef __cplusplus
}
#endif
#endif /* XSTAGE_H */
