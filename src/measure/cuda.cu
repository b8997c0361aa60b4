/*
 * cuda.cu: the CUDA probes (docs/cuda.md), for Hopper (sm_90) and later.
 * The only file with CUDA in it. The GPU timing facts it relies on, with
 * their published sources, are docs/cuda.md "Timing on the GPU"; it
 * compiles here, but this machine has no GPU, so none of it has run yet.
 *
 *  cuda-host  CTAs store 16-byte vectors into pinned, mapped host memory
 *  cuda-tma   one CTA's cp.async.bulk stores from shared to global memory
 *  cuda-ce    cudaMemcpyAsync device -> pinned host, beside nothing
 *
 * Timing (docs/cuda.md "Timers", "Ordering and delivery"): the issue time is the issuing CTA's own
 * %globaltimer before and after its stores (differences only, so the GPU
 * clock never meets the host's). Delivery is what the host observes: the
 * host raises a start flag at host time T0, the kernel starts when it sees
 * it, and after its stores and __threadfence_system() (fence.sc.sys: the
 * writes are performed for the host) it raises a done flag that the host
 * sees at T1; the host takes off half of a measured flag round trip.
 */
#include <cuda_runtime.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <algorithm>
#include <vector>

extern "C" {
#include "cuda_probe.h"
}

static __device__ __forceinline__ unsigned long long gtimer(void) {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

/* Wait for the host's start flag, store n16 16-byte vectors with every
 * thread of every CTA, stamp, fence at system scope, raise done. */
__global__ void host_store_kernel(uint4 *dst, size_t n16, volatile unsigned *start,
                                  volatile unsigned *done,
                                  unsigned long long *stamps) {
  __shared__ unsigned long long t0;
  if (threadIdx.x == 0) {
    while (*start == 0)
      ;
    t0 = gtimer();
  }
  __syncthreads();
  uint4 v = make_uint4(blockIdx.x, threadIdx.x, 0x78737467u, 0x65737461u);
  size_t stride = (size_t)gridDim.x * blockDim.x;
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n16; i += stride)
    dst[i] = v; /* st.global.v4: 16 bytes per thread */
  __syncthreads();
  if (threadIdx.x == 0) {
    unsigned long long t1 = gtimer();
    stamps[2 * blockIdx.x] = t0;
    stamps[2 * blockIdx.x + 1] = t1;
    __threadfence_system();
    atomicAdd((unsigned *)done, 1u);
  }
}

/* One CTA: fill shared memory, then cp.async.bulk it to dst in chunks;
 * stamp after the last issue, after the source reads (wait_group.read) and
 * after completion (wait_group 0). size: a multiple of 16. */
__global__ void tma_store_kernel(char *dst, size_t bytes, unsigned chunk,
                                 volatile unsigned *start, volatile unsigned *done,
                                 unsigned long long *stamps) {
  extern __shared__ __align__(128) char smem[];
  for (unsigned i = threadIdx.x; i < chunk / 16; i += blockDim.x)
    reinterpret_cast<uint4 *>(smem)[i] = make_uint4(i, 1, 2, 3);
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  __syncthreads();
  if (threadIdx.x != 0)
    return;
  while (*start == 0)
    ;
  unsigned long long t0 = gtimer();
  unsigned src = (unsigned)__cvta_generic_to_shared(smem);
  for (size_t off = 0; off < bytes; off += chunk) {
    unsigned n = bytes - off < chunk ? (unsigned)(bytes - off) : chunk;
    asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;"
                 :: "l"(dst + off), "r"(src), "r"(n) : "memory");
  }
  asm volatile("cp.async.bulk.commit_group;" ::: "memory");
  unsigned long long t1 = gtimer();
  asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
  unsigned long long t2 = gtimer();
  asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
  unsigned long long t3 = gtimer();
  stamps[0] = t0, stamps[1] = t1, stamps[2] = t2, stamps[3] = t3;
  __threadfence_system();
  atomicAdd((unsigned *)done, 1u);
}

/* A round trip of flags between host and device, for the one-way time. */
__global__ void echo_kernel(volatile unsigned *ping, volatile unsigned *pong, int n) {
  for (int k = 1; k <= n; k++) {
    while (*ping < (unsigned)k)
      ;
    __threadfence_system();
    *pong = (unsigned)k;
  }
}

static double host_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int fail(char *why, size_t size, const char *what, cudaError_t e) {
  snprintf(why, size, "%s: %s", what, cudaGetErrorString(e));
  return -1;
}

extern "C" int xs__cuda_device_count(char *why, size_t size) {
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess || n == 0) {
    snprintf(why, size, "no CUDA device found (%s)",
             e == cudaSuccess ? "the driver sees none" : cudaGetErrorString(e));
    return 0;
  }
  return n;
}

/* Half the median of 15 host<->device flag round trips, seconds; -1 when
 * the device did not answer within 2 s (the kernel is then let run to its
 * end, so nothing is left spinning). */
static double one_way(volatile unsigned *ping, volatile unsigned *pong,
                      unsigned *dping, unsigned *dpong) {
  const int n = 15;
  double rtt[n];
  *ping = 0;
  *pong = 0;
  echo_kernel<<<1, 1>>>(dping, dpong, n);
  double deadline = host_now() + 2;
  for (int k = 1; k <= n; k++) {
    double t = host_now();
    *ping = (unsigned)k;
    while (*pong < (unsigned)k && host_now() < deadline)
      ;
    if (*pong < (unsigned)k) {
      *ping = (unsigned)n;
      cudaDeviceSynchronize();
      return -1;
    }
    rtt[k - 1] = host_now() - t;
  }
  cudaDeviceSynchronize();
  std::sort(rtt, rtt + n);
  return rtt[n / 2] / 2;
}

/* Mapped host memory: the flag before the context exists (a later call
 * finds it set), and a device that can map at all (docs/cuda.md "Pitfalls"). */
static cudaError_t map_host(char *why, size_t size) {
  cudaError_t e = cudaSetDeviceFlags(cudaDeviceMapHost);
  if (e != cudaSuccess && e != cudaErrorSetOnActiveProcess) {
    fail(why, size, "cudaSetDeviceFlags", e);
    return e;
  }
  cudaGetLastError();
  int can = 0;
  if ((e = cudaDeviceGetAttribute(&can, cudaDevAttrCanMapHostMemory, 0))) {
    fail(why, size, "cudaDeviceGetAttribute", e);
    return e;
  }
  if (!can) {
    snprintf(why, size, "this GPU cannot map host memory, which the CUDA probes need");
    return cudaErrorNotSupported;
  }
  return cudaSuccess;
}

/* cuda-p2p: device 0 stores into device 1's memory over NVLink (or
 * whatever joins them); peer access enabled both ways (docs/cuda.md "Pitfalls").
 * Leaves device 0 current. */
static int open_peer(char **buf, size_t bytes, char *why, size_t size) {
  int n = 0, ok01 = 0, ok10 = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess || n < 2) {
    snprintf(why, size, "cuda-p2p needs two GPUs with peer access; this machine has %d", n);
    return XS__CUDA_NODEV;
  }
  cudaDeviceCanAccessPeer(&ok01, 0, 1);
  cudaDeviceCanAccessPeer(&ok10, 1, 0);
  if (!ok01 || !ok10) {
    snprintf(why, size, "cuda-p2p: GPUs 0 and 1 cannot access each other's memory");
    return -1;
  }
  e = cudaSetDevice(1);
  if (!e && (e = cudaDeviceEnablePeerAccess(0, 0)) == cudaErrorPeerAccessAlreadyEnabled)
    e = cudaSuccess;
  if (!e)
    e = cudaMalloc((void **)buf, bytes);
  cudaSetDevice(0);
  if (!e && (e = cudaDeviceEnablePeerAccess(1, 0)) == cudaErrorPeerAccessAlreadyEnabled)
    e = cudaSuccess;
  cudaGetLastError(); /* clear an "already enabled" */
  if (e) {
    if (*buf) {
      cudaSetDevice(1);
      cudaFree(*buf);
      cudaSetDevice(0);
      *buf = NULL;
    }
    return fail(why, size, "cuda-p2p: enabling peer access between GPUs 0 and 1", e);
  }
  return 0;
}

static void close_peer(char *buf) {
  if (!buf)
    return;
  cudaSetDevice(1);
  cudaFree(buf);
  cudaSetDevice(0);
}

extern "C" int xs__cuda_probe_run(const char *mode, const xs__cuda_plan *plan,
                                  xs__cuda_stamps *out, char *why, size_t size) {
  int p2p = strcmp(mode, "cuda-p2p") == 0, p2p_tma = strcmp(mode, "cuda-p2p-tma") == 0;
  int host = strcmp(mode, "cuda-host") == 0 || p2p;
  int tma = strcmp(mode, "cuda-tma") == 0 || p2p_tma;
  int ce = strcmp(mode, "cuda-ce") == 0;
  if (!host && !tma && !ce) {
    snprintf(why, size, "unknown CUDA probe \"%s\" (cuda-host, cuda-tma, cuda-ce, cuda-p2p, "
             "cuda-p2p-tma)", mode);
    return -1;
  }
  cudaError_t e = map_host(why, size);
  if (e)
    return -1;
  size_t maxb = (size_t)plan->max_bytes;
  char *peer_buf = NULL;
  int peer_rc = p2p || p2p_tma ? open_peer(&peer_buf, maxb, why, size) : 0;
  if (peer_rc)
    return peer_rc;
  unsigned *flags_h = NULL, *flags_d = NULL;
  char *host_buf = NULL, *host_d = NULL, *dev_buf = NULL;
  unsigned long long *stamps_h = NULL, *stamps_d = NULL;
  cudaEvent_t ev0 = NULL, ev1 = NULL;
  cudaStream_t stream = NULL;
  int rc = -1;
  if ((e = cudaHostAlloc((void **)&flags_h, 4 * sizeof(unsigned), cudaHostAllocMapped)) ||
      (e = cudaHostGetDevicePointer((void **)&flags_d, flags_h, 0)) ||
      (e = cudaHostAlloc((void **)&host_buf, maxb, cudaHostAllocMapped)) ||
      (e = cudaHostGetDevicePointer((void **)&host_d, host_buf, 0)) ||
      (e = cudaHostAlloc((void **)&stamps_h, 2 * 1024 * sizeof *stamps_h, cudaHostAllocMapped)) ||
      (e = cudaHostGetDevicePointer((void **)&stamps_d, stamps_h, 0)) ||
      (e = cudaMalloc((void **)&dev_buf, maxb)) || (e = cudaStreamCreate(&stream)) ||
      (e = cudaEventCreate(&ev0)) || (e = cudaEventCreate(&ev1))) {
    fail(why, size, "allocating the probe's buffers", e);
    goto done;
  }
  out->one_way_s = one_way(&flags_h[2], &flags_h[3], &flags_d[2], &flags_d[3]);
  if (out->one_way_s < 0) {
    snprintf(why, size, "%s: the GPU did not answer a host flag within 2 s", mode);
    goto done;
  }
  for (size_t k = 0; k < plan->n; k++) {
    size_t b = (size_t)plan->bytes[k] & ~(size_t)15;
    if (b < 16)
      b = 16;
    volatile unsigned *start = &flags_h[0], *done_f = &flags_h[1];
    *start = 0;
    *done_f = 0;
    double t0, t1;
    if (ce) {
      cudaEventRecord(ev0, stream);
      t0 = host_now();
      cudaMemcpyAsync(host_buf, dev_buf, b, cudaMemcpyDeviceToHost, stream);
      cudaEventRecord(ev1, stream);
      cudaEventSynchronize(ev1);
      t1 = host_now();
      float ms = 0;
      cudaEventElapsedTime(&ms, ev0, ev1);
      out->issue_s[k] = 0; /* the copy engine works; the SMs are free */
      out->deliver_s[k] = fmin(t1 - t0, ms * 1e-3 + 2e-6);
      continue;
    }
    unsigned ctas = tma ? 1 : plan->ctas;
    char *dst = peer_buf ? peer_buf : host_d;
    if (host)
      host_store_kernel<<<ctas, plan->threads, 0, stream>>>(
          (uint4 *)dst, b / 16, &flags_d[0], &flags_d[1], stamps_d);
    else
      tma_store_kernel<<<1, 128, plan->tma_chunk, stream>>>(
          dst, b, plan->tma_chunk, &flags_d[0], &flags_d[1], stamps_d);
    if ((e = cudaGetLastError())) {
      fail(why, size, "launching the probe kernel", e);
      goto done;
    }
    /* give the kernel time to be resident and spinning on the start flag */
    double wait_until = host_now() + 200e-6;
    while (host_now() < wait_until)
      ;
    t0 = host_now();
    *start = 1;
    double deadline = t0 + plan->timeout_s;
    while (*done_f < ctas && host_now() < deadline)
      ;
    t1 = host_now();
    if ((e = cudaStreamSynchronize(stream))) {
      fail(why, size, "running the probe kernel", e);
      goto done;
    }
    if (*done_f < ctas) {
      snprintf(why, size, "%s: the kernel did not finish within the timeout", mode);
      goto done;
    }
    double issue = 0;
    if (host) {
      /* the slowest CTA's own issue time */
      for (unsigned c = 0; c < ctas; c++)
        issue = fmax(issue, 1e-9 * (double)(stamps_h[2 * c + 1] - stamps_h[2 * c]));
    } else {
      issue = 1e-9 * (double)(stamps_h[1] - stamps_h[0]);
    }
    out->issue_s[k] = issue;
    out->deliver_s[k] = fmax(issue, t1 - t0 - out->one_way_s);
  }
  rc = 0;
done:
  if (ev0)
    cudaEventDestroy(ev0);
  if (ev1)
    cudaEventDestroy(ev1);
  if (stream)
    cudaStreamDestroy(stream);
  cudaFree(dev_buf);
  close_peer(peer_buf);
  cudaFreeHost(host_buf);
  cudaFreeHost(flags_h);
  cudaFreeHost(stamps_h);
  return rc;
}

/* ---- replay: a persistent kernel runs a program (docs/cuda.md) ----
 *
 * One CTA per worker CTA of the plan, all resident at once (checked with
 * the occupancy API first: CTAs wait on each other's sends). A CTA has
 * `threads` issuing threads and one more warp, the tracker. The issuers
 * run the CTA's ops in order, meeting at a named barrier before each (so
 * that thread 0's stamp closes one op and opens the next): a compute op
 * is a calibrated loop of dependent FMAs; a send is every issuer storing
 * 16-byte vectors of its part; a wait or fence spins on device flags.
 * After a send each issuer warp adds one, with release at CTA scope, to a
 * shared counter and moves on; it does not wait for its stores. The
 * tracker reads the counter with acquire: when it shows all warps past
 * send k, it runs fence.sc.sys (__threadfence_system), after which every
 * store it has observed, the issuers' included (cumulativity, PTX memory
 * model), is performed for the host and peers; it stamps %globaltimer,
 * and the CTA that completes the last part of a send raises the send's
 * device flag (for waits) and its host flag (the host stamps it when it
 * sees it: that is the delivery time). One fence covers all the sends
 * that arrived while the previous one ran, so the tracker never holds the
 * issuers back. Whether the fence waits for other warps' stores on real
 * hardware is what the tag check tests: the host reads each part's last
 * vector when it sees the flag and counts the ones not yet written.
 */

#define REPLAY_MAGIC 0x78737270u

struct replay_args {
  const xs__gop *ops;
  const uint32_t *first, *count, *parts;
  uint4 *dst;
  unsigned long long *op_ns, *start_ns, *fence_ns;
  unsigned *parts_done, *dev_flag;   /* device memory, zeroed          */
  unsigned *host_flag;               /* mapped host memory, zeroed     */
  volatile unsigned *start, *abort;  /* mapped host memory             */
  double iters_per_ns;
  float *sink;
};

static __device__ __forceinline__ unsigned ld_acquire_gpu(const unsigned *p) {
  unsigned v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
static __device__ __forceinline__ void st_release_gpu(unsigned *p, unsigned v) {
  asm volatile("st.release.gpu.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
static __device__ __forceinline__ void st_release_sys(unsigned *p, unsigned v) {
  asm volatile("st.release.sys.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
static __device__ __forceinline__ void add_release_cta(unsigned *p, unsigned v) {
  unsigned a = (unsigned)__cvta_generic_to_shared(p);
  asm volatile("red.release.cta.shared::cta.add.u32 [%0], %1;" ::"r"(a), "r"(v) : "memory");
}
static __device__ __forceinline__ unsigned ld_acquire_cta(unsigned *p) {
  unsigned v, a = (unsigned)__cvta_generic_to_shared(p);
  asm volatile("ld.acquire.cta.shared::cta.u32 %0, [%1];" : "=r"(v) : "r"(a) : "memory");
  return v;
}
static __device__ __forceinline__ void bar_issuers(unsigned n) {
  asm volatile("bar.sync 1, %0;" ::"r"(n) : "memory");
}

/* Dependent FMAs in four chains: compute that keeps the SM's pipes busy
 * for a calibrated time, its result kept so it is not optimised away. */
static __device__ __noinline__ float spin_fma(float x, unsigned long long iters) {
  float a0 = x, a1 = x + 1.f, a2 = x + 2.f, a3 = x + 3.f;
  for (unsigned long long i = 0; i < iters; i++) {
    a0 = fmaf(a0, 0.9999999f, 1e-7f);
    a1 = fmaf(a1, 0.9999999f, 1e-7f);
    a2 = fmaf(a2, 0.9999999f, 1e-7f);
    a3 = fmaf(a3, 0.9999999f, 1e-7f);
  }
  return a0 + a1 + a2 + a3;
}

static __device__ void wait_flag(const replay_args &a, unsigned s) {
  for (unsigned spin = 1; ld_acquire_gpu(&a.dev_flag[s]) == 0; spin++)
    if ((spin & 255) == 0 && *a.abort)
      return;
}

static __device__ void track(const replay_args &a, const xs__gop *ops, unsigned nops,
                             unsigned *arrived, unsigned warps) {
  unsigned total = 0, covered = 0, next = 0;
  for (unsigned i = 0; i < nops; i++)
    total += ops[i].kind == 1;
  for (unsigned spin = 1; covered < total; spin++) {
    unsigned ready = ld_acquire_cta(arrived) / warps;
    if (ready <= covered) {
      if ((spin & 1023) == 0 && *a.abort)
        return;
      continue;
    }
    __threadfence_system();
    unsigned long long t = gtimer();
    for (; covered < ready; covered++) {
      while (ops[next].kind != 1)
        next++;
      unsigned s = ops[next++].send;
      atomicMax(&a.fence_ns[s], t);
      __threadfence();
      if (atomicAdd(&a.parts_done[s], 1u) + 1 == a.parts[s]) {
        st_release_gpu(&a.dev_flag[s], 1);
        st_release_sys(&a.host_flag[s], 1);
      }
    }
  }
}

__global__ void replay_kernel(replay_args a) {
  __shared__ unsigned arrived;
  const unsigned cta = blockIdx.x, tid = threadIdx.x, nis = blockDim.x - 32;
  const xs__gop *ops = a.ops + a.first[cta];
  const unsigned nops = a.count[cta];
  unsigned long long *stamp = a.op_ns + 2ull * a.first[cta];
  if (tid == 0) {
    arrived = 0;
    while (*a.start == 0 && *a.abort == 0)
      ;
    a.start_ns[cta] = gtimer();
  }
  __syncthreads();
  if (tid >= nis) {
    if (tid == nis)
      track(a, ops, nops, &arrived, nis / 32);
    return;
  }
  float acc = (float)tid;
  unsigned fenced = 0;
  for (unsigned i = 0; i < nops; i++) {
    const xs__gop op = ops[i];
    bar_issuers(nis);
    if (tid == 0) {
      unsigned long long now = gtimer();
      if (i)
        stamp[2 * i - 1] = now;
      stamp[2 * i] = now;
    }
    if (op.kind == 0) {
      acc = spin_fma(acc, (unsigned long long)((double)op.n * a.iters_per_ns));
    } else if (op.kind == 1) {
      uint4 *d = a.dst + op.off;
      for (unsigned long long q = tid; q < op.n; q += nis)
        d[q] = make_uint4(op.send, cta, REPLAY_MAGIC, (unsigned)q); /* st.global.v4 */
      __syncwarp();
      if ((tid & 31) == 0)
        add_release_cta(&arrived, 1);
    } else if (tid == 0 && op.kind == 2) {
      wait_flag(a, op.send);
    } else if (tid == 0 && op.kind == 3) {
      for (unsigned j = fenced; j < i; j++)
        if (ops[j].kind == 1)
          wait_flag(a, ops[j].send);
      fenced = i;
    }
  }
  bar_issuers(nis);
  if (tid == 0 && nops)
    stamp[2 * nops - 1] = gtimer();
  if (acc == 1.2345e-30f)
    *a.sink = acc;
}

/* The smallest nonzero step of %globaltimer over 4096 reads. */
__global__ void tick_kernel(unsigned long long *out) {
  unsigned long long best = ~0ull, prev = gtimer();
  for (int i = 0; i < 4096; i++) {
    unsigned long long t = gtimer();
    if (t != prev && t - prev < best)
      best = t - prev;
    prev = t;
  }
  *out = best;
}

struct replay_ctx {
  int p2p;
  unsigned *flags_h, *flags_d;   /* start, abort, ping, pong          */
  unsigned *hflag_h, *hflag_d;   /* per send, mapped                  */
  uint4 *ring_h, *ring_d;        /* cuda-host: mapped; cuda-p2p: peer */
  char *peer;
  xs__gop *ops;
  uint32_t *first, *count, *parts;
  unsigned long long *op_ns, *start_ns, *fence_ns;
  unsigned *parts_done, *dev_flag;
  float *sink;
  cudaStream_t stream;
};

static replay_args args_of(const replay_ctx *c, double iters_per_ns) {
  return replay_args{c->ops,      c->first,      c->count,      c->parts,
                     c->ring_d,   c->op_ns,      c->start_ns,   c->fence_ns,
                     c->parts_done, c->dev_flag, c->hflag_d,    c->flags_d,
                     c->flags_d + 1, iters_per_ns, c->sink};
}

/* Launch, hold the CTAs on the start flag while they all start spinning,
 * raise it; the host's start time in *t0. */
static cudaError_t launch(replay_ctx *c, replay_args *a, unsigned nctas, unsigned threads,
                          double *t0) {
  c->flags_h[0] = 0;
  c->flags_h[1] = 0;
  /* a cooperative launch: all CTAs resident at once, or an error (CTAs
   * wait on each other's sends, so one left out would hang the rest) */
  void *args[] = {a};
  cudaError_t e = cudaLaunchCooperativeKernel((const void *)replay_kernel, dim3(nctas),
                                              dim3(threads + 32), args, 0, c->stream);
  if (e)
    return e;
  double until = host_now() + 500e-6;
  while (host_now() < until)
    ;
  *t0 = host_now();
  ((volatile unsigned *)c->flags_h)[0] = 1;
  return cudaSuccess;
}

/* Wait for the kernel until deadline; past it, raise abort and wait. */
static int finish(replay_ctx *c, double deadline, char *why, size_t size) {
  cudaError_t e;
  while ((e = cudaStreamQuery(c->stream)) == cudaErrorNotReady && host_now() < deadline)
    ;
  if (e == cudaErrorNotReady) {
    ((volatile unsigned *)c->flags_h)[1] = 1;
    cudaStreamSynchronize(c->stream);
    snprintf(why, size, "the kernel did not finish within the timeout");
    return XS__CUDA_TIMEOUT;
  }
  if (e)
    return fail(why, size, "running the replay kernel", e);
  return 0;
}

/* Loop iterations per ns of one CTA, with every CTA computing at once. */
static int calibrate(replay_ctx *c, const xs__gplan *g, double *per_ns, char *why,
                     size_t size) {
  std::vector<xs__gop> ops(g->nctas);
  std::vector<uint32_t> first(g->nctas), count(g->nctas, 1);
  std::vector<unsigned long long> ns(2 * g->nctas);
  double rate = 0;
  unsigned long long iters = 20000;
  for (int round = 0; round < 2; round++) {
    for (unsigned k = 0; k < g->nctas; k++) {
      ops[k].kind = 0, ops[k].send = 0, ops[k].n = iters, ops[k].off = 0;
      first[k] = k;
    }
    cudaError_t e;
    if ((e = cudaMemcpy(c->ops, ops.data(), g->nctas * sizeof(xs__gop), cudaMemcpyHostToDevice)) ||
        (e = cudaMemcpy(c->first, first.data(), g->nctas * 4, cudaMemcpyHostToDevice)) ||
        (e = cudaMemcpy(c->count, count.data(), g->nctas * 4, cudaMemcpyHostToDevice)))
      return fail(why, size, "copying the calibration", e);
    replay_args a = args_of(c, 1.0);
    double t0;
    if ((e = launch(c, &a, g->nctas, g->threads, &t0)))
      return fail(why, size, "launching the calibration kernel", e);
    int f = finish(c, t0 + 10, why, size);
    if (f)
      return f;
    if ((e = cudaMemcpy(ns.data(), c->op_ns, 2 * g->nctas * 8, cudaMemcpyDeviceToHost)))
      return fail(why, size, "reading the calibration", e);
    std::vector<double> d(g->nctas);
    for (unsigned k = 0; k < g->nctas; k++)
      d[k] = (double)(ns[2 * k + 1] - ns[2 * k]);
    std::sort(d.begin(), d.end());
    double med = d[g->nctas / 2];
    if (!(med > 0)) {
      snprintf(why, size, "calibration: the compute loop took no measurable time");
      return -1;
    }
    rate = (double)iters / med;
    iters = (unsigned long long)(rate * 2e6) + 1; /* then about 2 ms */
  }
  *per_ns = rate;
  return 0;
}

extern "C" int xs__cuda_replay_run(const char *channel, const xs__gplan *g,
                                   xs__gstamps *out, char *why, size_t size) {
  replay_ctx c;
  memset(&c, 0, sizeof c);
  c.p2p = strcmp(channel, "cuda-p2p") == 0;
  cudaError_t e = map_host(why, size);
  if (e)
    return -1;
  int per_sm = 0, sms = 0, coop = 0, rc = XS__CUDA_FAILED;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  cudaDeviceGetAttribute(&coop, cudaDevAttrCooperativeLaunch, 0);
  if (!coop) {
    snprintf(why, size, "this GPU cannot launch cooperative kernels, which the replay needs");
    return -1;
  }
  if ((e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, replay_kernel,
                                                         (int)g->threads + 32, 0)))
    return fail(why, size, "the replay kernel's occupancy", e);
  if ((long)per_sm * sms < (long)g->nctas) {
    snprintf(why, size,
             "the program needs %u CTAs of %u threads resident at once (they wait on "
             "each other); this GPU holds %d (%d SMs x %d): give its workers fewer CTAs "
             "(width) or threads",
             g->nctas, g->threads + 32, per_sm * sms, sms, per_sm);
    return -1;
  }
  size_t ring_b = (size_t)g->ring_vectors * 16, ns = g->nsends ? g->nsends : 1;
  std::vector<std::vector<size_t>> parts_of(g->nsends); /* op indices of each send's parts */
  for (size_t k = 0; k < g->nops; k++)
    if (g->ops[k].kind == 1)
      parts_of[g->ops[k].send].push_back(k);
  std::vector<unsigned> cta_of(g->nops);
  for (unsigned k = 0; k < g->nctas; k++)
    for (uint32_t i = 0; i < g->count[k]; i++)
      cta_of[g->first[k] + i] = k;
  int peer_rc = c.p2p ? open_peer(&c.peer, ring_b, why, size) : 0;
  if (peer_rc)
    return peer_rc;
  if ((e = cudaStreamCreateWithFlags(&c.stream, cudaStreamNonBlocking)) ||
      (e = cudaHostAlloc((void **)&c.flags_h, 4 * sizeof(unsigned), cudaHostAllocMapped)) ||
      (e = cudaHostGetDevicePointer((void **)&c.flags_d, c.flags_h, 0)) ||
      (e = cudaHostAlloc((void **)&c.hflag_h, ns * sizeof(unsigned), cudaHostAllocMapped)) ||
      (e = cudaHostGetDevicePointer((void **)&c.hflag_d, c.hflag_h, 0)) ||
      (!c.p2p && (e = cudaHostAlloc((void **)&c.ring_h, ring_b, cudaHostAllocMapped))) ||
      (!c.p2p && (e = cudaHostGetDevicePointer((void **)&c.ring_d, c.ring_h, 0))) ||
      (e = cudaMalloc((void **)&c.ops, (g->nops > g->nctas ? g->nops : g->nctas) * sizeof(xs__gop))) ||
      (e = cudaMalloc((void **)&c.first, g->nctas * 4)) ||
      (e = cudaMalloc((void **)&c.count, g->nctas * 4)) ||
      (e = cudaMalloc((void **)&c.parts, ns * 4)) ||
      (e = cudaMalloc((void **)&c.op_ns, 2 * (g->nops > g->nctas ? g->nops : g->nctas) * 8)) ||
      (e = cudaMalloc((void **)&c.start_ns, g->nctas * 8)) ||
      (e = cudaMalloc((void **)&c.fence_ns, ns * 8)) ||
      (e = cudaMalloc((void **)&c.parts_done, ns * 4)) ||
      (e = cudaMalloc((void **)&c.dev_flag, ns * 4)) ||
      (e = cudaMalloc((void **)&c.sink, 4))) {
    fail(why, size, "allocating the replay's buffers", e);
    goto done;
  }
  if (c.p2p)
    c.ring_d = (uint4 *)c.peer;
  {
    unsigned long long *tick_d = c.fence_ns, tick = 0;
    tick_kernel<<<1, 1, 0, c.stream>>>(tick_d);
    if ((e = cudaStreamSynchronize(c.stream)) ||
        (e = cudaMemcpy(&tick, tick_d, 8, cudaMemcpyDeviceToHost))) {
      fail(why, size, "reading the GPU timer's step", e);
      goto done;
    }
    out->tick_s = tick == ~0ull ? 0 : 1e-9 * (double)tick;
  }
  out->one_way_s = one_way(&c.flags_h[2], &c.flags_h[3], &c.flags_d[2], &c.flags_d[3]);
  if (out->one_way_s < 0) {
    snprintf(why, size, "%s: the GPU did not answer a host flag within 2 s", channel);
    goto done;
  }
  if ((rc = calibrate(&c, g, &out->fma_per_ns, why, size)))
    goto done;
  rc = XS__CUDA_FAILED;
  if ((e = cudaMemcpy(c.ops, g->ops, g->nops * sizeof(xs__gop), cudaMemcpyHostToDevice)) ||
      (e = cudaMemcpy(c.first, g->first, g->nctas * 4, cudaMemcpyHostToDevice)) ||
      (e = cudaMemcpy(c.count, g->count, g->nctas * 4, cudaMemcpyHostToDevice)) ||
      (g->nsends && (e = cudaMemcpy(c.parts, g->parts, g->nsends * 4, cudaMemcpyHostToDevice))) ||
      (e = cudaMemset(c.op_ns, 0, 2 * g->nops * 8)) ||
      (e = cudaMemset(c.fence_ns, 0, ns * 8)) ||
      (e = cudaMemset(c.parts_done, 0, ns * 4)) ||
      (e = cudaMemset(c.dev_flag, 0, ns * 4))) {
    fail(why, size, "copying the program to the GPU", e);
    goto done;
  }
  memset(c.hflag_h, 0, ns * sizeof(unsigned));
  {
    replay_args a = args_of(&c, out->fma_per_ns);
    double t0;
    if ((e = launch(&c, &a, g->nctas, g->threads, &t0))) {
      fail(why, size, "launching the replay kernel", e);
      goto done;
    }
    double deadline = t0 + g->timeout_s;
    /* stamp each send's host flag when it is first seen; then read the
     * last vector of each of its parts (x86 keeps loads in order, so
     * what was written before the flag is there) */
    std::vector<size_t> pending(g->nsends);
    for (size_t s = 0; s < g->nsends; s++)
      pending[s] = s, out->host_s[s] = -1;
    volatile unsigned *hf = c.hflag_h;
    volatile unsigned *ring = (volatile unsigned *)c.ring_h;
    int check = !c.p2p && !g->wrapped;
    int ended = 0;
    for (unsigned long spin = 1; !pending.empty() && host_now() < deadline && ended < 2; spin++) {
      /* a kernel that ended (or failed) gets one more pass, not the timeout */
      if ((spin & 4095) == 0 && (ended || cudaStreamQuery(c.stream) != cudaErrorNotReady))
        ended++;
      size_t keep = 0;
      for (size_t k = 0; k < pending.size(); k++) {
        size_t s = pending[k];
        if (!hf[s]) {
          pending[keep++] = s;
          continue;
        }
        out->host_s[s] = host_now() - t0 - out->one_way_s;
        for (size_t j = 0; check && j < parts_of[s].size(); j++) {
          const xs__gop &op = g->ops[parts_of[s][j]];
          if (!op.n)
            continue;
          volatile unsigned *v = ring + 4 * (op.off + op.n - 1);
          out->tags_checked++;
          if (v[0] != (unsigned)s || v[1] != cta_of[parts_of[s][j]] || v[2] != REPLAY_MAGIC ||
              v[3] != (unsigned)(op.n - 1))
            out->tags_missing++;
        }
      }
      pending.resize(keep);
    }
    if ((rc = finish(&c, deadline, why, size)))
      goto done;
    if (!pending.empty()) {
      snprintf(why, size, "%zu sends were never seen delivered within the timeout",
               pending.size());
      rc = XS__CUDA_TIMEOUT;
      goto done;
    }
    rc = XS__CUDA_FAILED;
  }
  if ((e = cudaMemcpy(out->op_ns, c.op_ns, 2 * g->nops * 8, cudaMemcpyDeviceToHost)) ||
      (e = cudaMemcpy(out->start_ns, c.start_ns, g->nctas * 8, cudaMemcpyDeviceToHost)) ||
      (g->nsends && (e = cudaMemcpy(out->fence_ns, c.fence_ns, g->nsends * 8,
                                    cudaMemcpyDeviceToHost)))) {
    fail(why, size, "reading the replay's stamps", e);
    goto done;
  }
  rc = 0;
done:
  if (c.stream)
    cudaStreamDestroy(c.stream);
  cudaFreeHost(c.flags_h);
  cudaFreeHost(c.hflag_h);
  cudaFreeHost(c.ring_h);
  cudaFree(c.ops);
  cudaFree(c.first);
  cudaFree(c.count);
  cudaFree(c.parts);
  cudaFree(c.op_ns);
  cudaFree(c.start_ns);
  cudaFree(c.fence_ns);
  cudaFree(c.parts_done);
  cudaFree(c.dev_flag);
  cudaFree(c.sink);
  close_peer(c.peer);
  return rc;
}
