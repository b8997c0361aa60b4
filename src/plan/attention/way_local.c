/*
 * way_local.c: one rank's attention over its own block, no ring: the
 * kernel call (forward, and backward after it) that a ring's timings are
 * set beside (P times it is the ring's ideal).
 */
#include "plan/attention/attention.h"

xs_status xs__fa_way_local(xs__fa_prog *g, unsigned k_unused, xs_error *err) {
  (void)k_unused;
  xs_status st = XS_OK;
  /* the host calls the kernel from Python (a backward call launches its
   * other kernels from C++) */
  for (size_t s = 0; s < g->r->n && !st; s++)
    if (!(st = xs__fa_host_issue(g, xs__fa_call_host(g, s), err)) &&
        !(st = xs__fa_await_issue(g, SIZE_MAX, err)))
      st = xs__fa_kernel_on_classes(g, s, 1, 0, err);
  return st ? st : xs_program_finish(g->p, err);
}
