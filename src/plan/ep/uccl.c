/*
 * uccl.c: UCCL-EP (uccl-project/uccl at da914a20, ep/; docs/ep.md
 * "UCCL-EP"): DeepEP's kernels with the GPU's network calls replaced by
 * commands that lane 0 of a warp pushes into a FIFO to host proxy threads,
 * which post the verbs (over AWS EFA, ConnectX, ...). Each proxy admits a
 * bounded number of writes in flight per FIFO. NVLink traffic stays the
 * GPU's. Its tests give the internode kernels an RDMA ring of 512 tokens.
 */
#include "plan/ep/ep.h"

/* ep/include/common.hpp: kNumProxyThs, kChannelPerProxy,
 * kMaxInflightNormal, kMaxInflightLowLatency */
#define UCCL_THREADS 4
#define UCCL_FIFOS_PER_THREAD 8
#define UCCL_INFLIGHT_NORMAL 8
#define UCCL_INFLIGHT_LL 32

/* The normal kernels' model reads the RDMA ring alone
 * (xs__ep_deepep_normal): the 8 writes a FIFO admits are not modelled */
xs_status xs__ep_uccl_normal(xs__ep_ctx *c) {
  xs__ep_rdma rd = {1, UCCL_THREADS * UCCL_FIFOS_PER_THREAD,
                    UCCL_INFLIGHT_NORMAL, 512};
  return xs__ep_deepep_normal(c, &rd);
}

xs_status xs__ep_uccl_ll(xs__ep_ctx *c) {
  xs__ep_rdma rd = {1, UCCL_THREADS * UCCL_FIFOS_PER_THREAD,
                    UCCL_INFLIGHT_LL, 0};
  return xs__ep_deepep_ll(c, &rd);
}
