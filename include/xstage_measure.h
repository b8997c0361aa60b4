/*
 * xstage_measure.h: the public contract of libxstage-measure, the part of
 * xstage that touches real channels: probes (pipe, tcp, MPI, CUDA), replay
 * of a program on a real channel, and the table of backends. It is the
 * only part that may need MPI or the CUDA runtime; link it with
 * libxstage (pkg-config xstage-measure, or CMake's xstage::measure).
 * Conventions as in xstage.h.
 */
#ifndef XSTAGE_MEASURE_H
#define XSTAGE_MEASURE_H

#include "xstage.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Probes and replay (docs/probe.md) ---- */

typedef struct xs_probe_options {
  double capacity_B;  /* pipe size / socket buffers (0: 1 MiB / 256 KiB) */
  double drain_Bps;   /* reader rate, 0 = as fast as it can             */
  double max_bytes;   /* largest burst (0: 4 x capacity)                */
  double min_bytes;   /* smallest burst (0: capacity / 16)              */
  unsigned sizes;     /* log-spaced burst sizes (0: 14)                 */
  unsigned repeats;   /* timed repetitions of each size (0: 5)          */
  unsigned warmup;    /* untimed bursts first (0: 2)                    */
  double timeout_s;   /* the whole probe at most (0: 30 s)              */
  /* called between bursts with the share done; return nonzero to stop */
  int (*progress)(void *ctx, double done);
  void *progress_ctx;
  volatile int *cancel; /* set (e.g. by SIGINT) to stop soon, or NULL   */
  /* replay on a CUDA channel (docs/cuda.md): CTAs per program worker, as
   * "NAME:N" items separated by spaces or commas ("sms:132 dispatch:8";
   * a worker not named runs as one CTA), and issuing threads per CTA
   * (a multiple of 32; 0: 256). A worker of N CTAs splits each of its
   * sends into N parts and runs its computes and waits on every CTA. */
  const char *cuda_widths;
  unsigned cuda_threads;
  /* replay on a CUDA channel: what was measured besides the times, or NULL */
  struct xs_replay_info *info;
  /* the MPI probe's mode, "isend" (NULL) or "put" */
  const char *mpi_mode;
} xs_probe_options;

/* What a replay on a CUDA channel measured besides the program's times. */
typedef struct xs_replay_info {
  unsigned ctas, threads;      /* the persistent kernel's grid           */
  double timer_tick_s;         /* smallest nonzero %globaltimer step seen */
  double fma_per_ns;           /* calibrated compute loop, per CTA        */
  double one_way_s;            /* host <-> device flag, half a round trip */
  double start_skew_s;         /* last CTA to see the start flag - first  */
  /* delivery as the host saw each send's flag, less the GPU's own stamp
   * after its system-scope fence: median and largest, seconds */
  double host_minus_fence_median_s, host_minus_fence_max_s;
  /* the last 16 bytes of every part, read by the host when it saw the
   * send's flag: checked, and found not yet written (the flag overtook
   * the data) */
  size_t tags_checked, tags_missing;
} xs_replay_info;

/* Every backend xstage knows, one table whatever the build: "pipe", "tcp",
 * "mpi", "cuda-host", "cuda-tma", "cuda-ce", "cuda-p2p", "cuda-p2p-tma".
 * i < xs_backend_count(); NULL past the end. */
XS_API size_t xs_backend_count(void);
XS_API const char *xs_backend_name(size_t i);
XS_API const char *xs_backend_description(size_t i);
/* 1 when the named backend replays programs (xs_replay), 0 when it only
 * probes or is unknown. */
XS_API int xs_backend_replays(const char *name);
/* 1 when usable here; otherwise 0 and why in buf: unknown, not built in
 * (and how to rebuild), no device, not under mpirun, or the channel would
 * not open. */
XS_API int xs_backend_available(const char *name, char *why, size_t size);

/* Bursts of log-spaced sizes from an empty channel; a trial in which the
 * reader found the channel empty mid-burst (it starved, so the drain lost
 * time) is repeated, not kept. Bounded by timeout_s; every thread and file
 * descriptor is gone when it returns, whatever happened. */
XS_API xs_status xs_probe(const char *backend, const xs_probe_options *options,
                   xs_samples **out, xs_error *err);
/* Any backend of the table: pipe and tcp as above; "mpi" calls
 * xs_mpi_probe (after xs_mpi_init, under mpirun) and the CUDA ones
 * xs_cuda_probe. XS_NOTBUILT for a name not in the table or not built. */

/* Run a program on a real channel: compute ops as timed spin waits, sends
 * as real writes, waits and fences on real delivery. The result (model
 * XS_MODEL_BURSTGAP's shape) holds the measured times. "pipe" and "tcp"
 * run one-worker programs; "cuda-host" and "cuda-p2p" run any program in
 * a persistent kernel, each worker on options->cuda_widths' CTAs. */
XS_API xs_status xs_replay(const xs_program *program, const char *backend,
                    const xs_probe_options *options, xs_result **out,
                    xs_error *err);
/* Whether xs_replay would take this program and these options on this
 * backend, without touching a channel or a device: the backend replays
 * (cuda-tma and cuda-ce are probes only), pipe and tcp get one worker and
 * no width= or threads=, the CUDA widths name workers and fit the grid,
 * threads is a multiple of 32, no compute outlasts half the timeout. So a
 * caller can refuse bad options before a calibration that takes seconds. */
XS_API xs_status xs_replay_check(const xs_program *program, const char *backend,
                          const xs_probe_options *options, xs_error *err);

/* ---- MPI (docs/mpi.md): probes between ranks, sweeps spread over them.
 * In a build without MPI these return XS_NOTBUILT and say how to rebuild. */

/* 1 when libxstage was built with MPI. */
XS_API int xs_mpi_built(void);
/* 1 when this process was started by mpirun or srun (from the environment,
 * without touching MPI). */
XS_API int xs_mpi_launched(void);
/* MPI_Init, once; *rank and *size of MPI_COMM_WORLD. */
XS_API xs_status xs_mpi_init(int *argc, char ***argv, int *rank, int *size,
                      xs_error *err);
XS_API void xs_mpi_finalize(void);
/* OR the bytes of buf over the ranks into rank 0's: a sweep's ranks each
 * fill their own configs' results and leave the rest zero, so rank 0 gets
 * every result bit for bit. */
XS_API xs_status xs_mpi_or_to_root(void *buf, size_t bytes, xs_error *err);
/* `mpirun -n 2 xstage probe mpi`: rank 0 sends bursts to rank 1, with
 * MPI_Isend (mode "isend") or MPI_Put in a passive-target epoch ("put").
 * Delivery is timed from rank 0 by round trips (rank 1 answers each burst
 * with a byte; half the median ping-pong time is taken off), so no clocks
 * need to agree. Rank 0 gets the samples; other ranks get NULL. */
XS_API xs_status xs_mpi_probe(const char *mode, const xs_probe_options *options,
                       xs_samples **out, xs_error *err);

/* ---- CUDA probes (docs/cuda.md) ---- */

/* 1 when libxstage was built with CUDA. */
XS_API int xs_cuda_built(void);
/* 1 when a CUDA device is there; otherwise 0 and why ("no CUDA device
 * found", or how to rebuild in a build without CUDA). */
XS_API int xs_cuda_available(char *why, size_t size);
/* "cuda-host": 132 CTAs of 512 threads store 16-byte vectors into pinned,
 * mapped host memory; "cuda-tma": cp.async.bulk from shared to host
 * memory; "cuda-ce": cudaMemcpyAsync. Samples as xs_probe's. XS_NOTBUILT
 * in a build without CUDA, XS_NODEV without a device. */
XS_API xs_status xs_cuda_probe(const char *mode, const xs_probe_options *options,
                        xs_samples **out, xs_error *err);

#ifdef __cplusplus
}
#endif
#endif /* XSTAGE_MEASURE_H */
