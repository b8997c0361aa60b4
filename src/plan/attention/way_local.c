/*
 * way_local.c: one rank's attention over its own block, no ring: the
 * kernel call (forward, and backward after it) that a ring's timings are
 * set beside (P times it is the ring's ideal).
 */
#include "plan/attention/attention.h"

xs_status xs__fa_way_local(xs__fa_prog *g, unsigned k_unused, xs_error *err) {
  (void)k_unused;
  xs_status st = XS_OK;
  for (size_t s = 0; s < g->r->n && !st; s++)
    st = xs__fa_kernel_on_classes(g, s, 1, 0, err);
  return st ? st : xs_program_finish(g->p, err);
}
