/*
 * cuda_probe.h: between the CUDA probes' host logic (cuda_host.c, plain C,
 * always built and tested) and their kernels (cuda.cu, built with nvcc).
 */
#ifndef XSTAGE_CUDA_PROBE_H
#define XSTAGE_CUDA_PROBE_H

#include <stddef.h>
#include <stdint.h>

#include "xstage_measure.h"

typedef struct xs__cuda_plan {
  double *bytes;     /* one burst per entry, in order */
  size_t n;
  double max_bytes;
  unsigned ctas, threads, tma_chunk;
  double timeout_s;
} xs__cuda_plan;

typedef struct xs__cuda_stamps {
  double *issue_s, *deliver_s; /* per burst, as measured */
  double one_way_s;            /* host <-> device flag, half a round trip */
} xs__cuda_stamps;

/* What the run functions below return when they fail, the reason in why:
 * a device they need is missing, the kernel ran past the timeout, or any
 * other failure. */
#define XS__CUDA_FAILED (-1)
#define XS__CUDA_NODEV (-2)
#define XS__CUDA_TIMEOUT (-3)

/* Number of CUDA devices, or 0 with the reason in why. */
int xs__cuda_device_count(char *why, size_t size);
/* Run the bursts of plan; 0, or an XS__CUDA_ code. */
int xs__cuda_probe_run(const char *mode, const xs__cuda_plan *plan,
                       xs__cuda_stamps *out, char *why, size_t size);

/* ---- replay: a persistent kernel runs a program (docs/cuda.md) ---- */

/* One op of one CTA; kind as xs_op_kind. compute: n = nanoseconds (the
 * kernel turns them into calibrated loop iterations); send: n = 16-byte
 * vectors of this CTA's part, stored at dst[off .. off + n); wait: send =
 * the send waited on; fence: all of the CTA's earlier sends. */
typedef struct xs__gop {
  uint32_t kind, send;
  uint64_t n, off;
} xs__gop;

typedef struct xs__gplan {
  xs__gop *ops;        /* every CTA's ops, CTA after CTA                 */
  size_t nops;
  uint32_t *first;     /* [cta] its first op in ops                      */
  uint32_t *count;     /* [cta] its number of ops (its worker's)         */
  uint32_t *worker;    /* [cta] the program worker it runs               */
  unsigned nctas, threads; /* issuing threads per CTA (+ one tracker warp) */
  uint32_t *parts;     /* [send] CTAs that share it (its worker's width)  */
  size_t nsends;
  uint64_t ring_vectors; /* destination size, 16-byte vectors            */
  int wrapped;         /* parts reuse the ring, so tags cannot be checked */
  double timeout_s;
} xs__gplan;

typedef struct xs__gstamps {
  uint64_t *op_ns;        /* [op][2]: GPU ns at the op's start and end    */
  uint64_t *start_ns;     /* [cta]: GPU ns when it saw the start flag     */
  uint64_t *fence_ns;     /* [send]: GPU ns after the last part's fence   */
  double *host_s;         /* [send]: host-observed delivery from the start,
                             half a flag round trip taken off; < 0: none  */
  double one_way_s, tick_s, fma_per_ns;
  size_t tags_checked, tags_missing;
} xs__gstamps;

/* Build the plan of a finished program: widths as
 * xs_probe_options.cuda_widths. Free with xs__gplan_free. */
xs_status xs__gplan_build(const xs_program *p, const char *widths,
                          unsigned threads, double timeout_s, xs__gplan *out,
                          xs_error *err);
void xs__gplan_free(xs__gplan *plan);
/* xs_replay_check's rules for a CUDA channel (it replays: cuda-host or
 * cuda-p2p), and the plan they pass with, to launch or free. */
xs_status xs__cuda_replay_plan(const xs_program *p, const char *channel,
                               const xs_probe_options *o, xs__gplan *out,
                               xs_error *err);
/* The measured result of a run's stamps, and what else it measured. */
xs_status xs__gplan_result(const xs_program *p, const xs__gplan *plan,
                           const xs__gstamps *stamps, xs_result **out,
                           xs_error *err);
void xs__gplan_info(const xs__gplan *plan, const xs__gstamps *stamps,
                    xs_replay_info *info);
/* xs_replay on "cuda-host" or "cuda-p2p". */
xs_status xs__cuda_replay(const xs_program *p, const char *channel,
                          const xs_probe_options *o, xs_result **out,
                          xs_error *err);
/* Run the plan on "cuda-host" or "cuda-p2p"; stamps allocated by the
 * caller to the plan's sizes. 0, or an XS__CUDA_ code. */
int xs__cuda_replay_run(const char *channel, const xs__gplan *plan,
                        xs__gstamps *out, char *why, size_t size);

/* CUDA probes' host logic, for tests: the bursts a probe would make, and
 * samples from measured stamps (below). */
xs_status xs__cuda_plan_for_test(const xs_probe_options *o, double **bytes,
                                 size_t *n, unsigned *warm, xs_error *err);
xs_status xs__cuda_samples(const char *mode, const double *bytes, size_t n,
                           unsigned warm, const double *issue_s,
                           const double *deliver_s, unsigned nsz,
                           xs_samples **out, xs_error *err);

#endif
