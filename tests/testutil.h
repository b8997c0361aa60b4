/* testutil.h: fixed-seed random numbers and small builders for tests. */
#ifndef XSTAGE_TESTUTIL_H
#define XSTAGE_TESTUTIL_H

#include "xstage.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A built-in profile or a profile file, or the test stops saying why. */
static inline xs_profile *xs_test_profile(const char *name) {
  xs_profile *p;
  xs_error e;
  if (xs_profile_load(name, &p, &e)) {
    fprintf(stderr, "%s: %s\n", name, e.message);
    abort();
  }
  return p;
}

typedef struct {
  uint64_t s;
} rng;

static inline uint64_t rng_next(rng *r) { /* splitmix64 */
  uint64_t z = (r->s += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}
static inline double rng_unit(rng *r) {
  return (double)(rng_next(r) >> 11) * (1.0 / 9007199254740992.0);
}
static inline double rng_range(rng *r, double lo, double hi) {
  return lo + (hi - lo) * rng_unit(r);
}
static inline int rng_int(rng *r, int n) { return (int)(rng_next(r) % (uint64_t)n); }

/* The index of the option with this schedule and these knobs in o[0..n),
 * or n. */
static inline size_t xs_test_option(const xs_moe_option *o, size_t n, xs_moe_schedule s,
                                    const xs_moe_pattern *k) {
  for (size_t i = 0; i < n; i++)
    if (o[i].schedule == s && !memcmp(&o[i].knobs, k, sizeof *k))
      return i;
  return n;
}

#endif
