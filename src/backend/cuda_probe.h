/*
 * cuda_probe.h: between the CUDA probes' host logic (cuda_host.c, plain C,
 * always built and tested) and their kernels (cuda.cu, built with nvcc).
 */
#ifndef XSTAGE_CUDA_PROBE_H
#define XSTAGE_CUDA_PROBE_H

#include <stddef.h>

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

/* Number of CUDA devices, or 0 with the reason in why. */
int xs__cuda_device_count(char *why, size_t size);
/* Run the bursts of plan; 0, or -1 with the reason in why. */
int xs__cuda_probe_run(const char *mode, const xs__cuda_plan *plan,
                       xs__cuda_stamps *out, char *why, size_t size);

#endif
