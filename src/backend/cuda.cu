/*
 * cuda.cu: the CUDA probes (docs/cuda.md), for Hopper (sm_90) and later.
 * The only file with CUDA in it. Written from ../shared/GPU-NOTES.md; it
 * compiles here, but this machine has no GPU, so none of it has run yet.
 *
 *  cuda-host  CTAs store 16-byte vectors into pinned, mapped host memory
 *  cuda-tma   one CTA's cp.async.bulk stores from shared to global memory
 *  cuda-ce    cudaMemcpyAsync device -> pinned host, beside nothing
 *
 * Timing (GPU-NOTES.md 2, 3): the issue time is the issuing CTA's own
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

/* Half the median of 15 host<->device flag round trips, seconds. */
static double one_way(volatile unsigned *ping, volatile unsigned *pong,
                      unsigned *dping, unsigned *dpong) {
  const int n = 15;
  double rtt[n];
  *ping = 0;
  *pong = 0;
  echo_kernel<<<1, 1>>>(dping, dpong, n);
  for (int k = 1; k <= n; k++) {
    double t = host_now();
    *ping = (unsigned)k;
    while (*pong < (unsigned)k)
      ;
    rtt[k - 1] = host_now() - t;
  }
  cudaDeviceSynchronize();
  for (int i = 1; i < n; i++)
    for (int j = i; j > 0 && rtt[j - 1] > rtt[j]; j--) {
      double t = rtt[j];
      rtt[j] = rtt[j - 1];
      rtt[j - 1] = t;
    }
  return rtt[n / 2] / 2;
}

extern "C" int xs__cuda_probe_run(const char *mode, const xs__cuda_plan *plan,
                                  xs__cuda_stamps *out, char *why, size_t size) {
  int host = strcmp(mode, "cuda-host") == 0, tma = strcmp(mode, "cuda-tma") == 0;
  int ce = strcmp(mode, "cuda-ce") == 0;
  if (!host && !tma && !ce) {
    snprintf(why, size, "unknown CUDA probe \"%s\" (cuda-host, cuda-tma, cuda-ce)", mode);
    return -1;
  }
  cudaError_t e = cudaSetDeviceFlags(cudaDeviceMapHost);
  if (e != cudaSuccess && e != cudaErrorSetOnActiveProcess)
    return fail(why, size, "cudaSetDeviceFlags", e);
  size_t maxb = (size_t)plan->max_bytes;
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
    if (host)
      host_store_kernel<<<ctas, plan->threads, 0, stream>>>(
          (uint4 *)host_d, b / 16, &flags_d[0], &flags_d[1], stamps_d);
    else
      tma_store_kernel<<<1, 128, plan->tma_chunk, stream>>>(
          host_d, b, plan->tma_chunk, &flags_d[0], &flags_d[1], stamps_d);
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
  cudaFreeHost(host_buf);
  cudaFreeHost(flags_h);
  cudaFreeHost(stamps_h);
  return rc;
}
