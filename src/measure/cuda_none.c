/*
 * cuda_none.c: the kernels' side of a build without CUDA: it says how to
 * rebuild (a CPU-only build asked for a CUDA probe).
 */
#include "cuda_probe.h"

#include <stdio.h>

static const char rebuild[] =
    "this xstage was built without CUDA: install the CUDA toolkit (nvcc) and "
    "rebuild with cmake -DXSTAGE_WITH_CUDA=ON";

int xs__cuda_device_count(char *why, size_t size) {
  snprintf(why, size, "%s", rebuild);
  return 0;
}

int xs__cuda_probe_run(const char *mode, const xs__cuda_plan *plan,
                       xs__cuda_stamps *out, char *why, size_t size) {
  (void)mode, (void)plan, (void)out;
  snprintf(why, size, "%s", rebuild);
  return -1;
}

int xs__cuda_replay_run(const char *channel, const xs__gplan *plan,
                        xs__gstamps *out, char *why, size_t size) {
  (void)channel, (void)plan, (void)out;
  snprintf(why, size, "%s", rebuild);
  return -1;
}
