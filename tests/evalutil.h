/* evalutil.h: what the model tests share: a one-channel profile, an
 * evaluation that must succeed, and a comparison that prints the seed and
 * both values. Include after cmocka.h. */
#ifndef XSTAGE_EVALUTIL_H
#define XSTAGE_EVALUTIL_H

#include "xstage.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>

/* |a - b| within tol_rel of the larger of scale, |a| and |b| */
static inline void check_close_rel(double a, double b, double tol_rel,
                                   double scale, const char *what,
                                   uint64_t seed) {
  double tol = tol_rel * fmax(scale, fmax(fabs(a), fabs(b)));
  if (!(fabs(a - b) <= tol)) {
    fprintf(stderr, "seed %llu: %s: %.17g vs %.17g (diff %.3g, tol %.3g)\n",
            (unsigned long long)seed, what, a, b, fabs(a - b), tol);
    fail();
  }
}

/* One channel "link" with these parameters. */
static inline xs_profile *one_channel(double inj, double rw, double rd,
                                      double cap, double lat, double ovh) {
  xs_profile *p = xs_profile_new("test", "test");
  xs_channel c;
  xs_channel_init(&c, inj, rd);
  c.worker_inject_Bps = rw;
  c.capacity_B = cap;
  c.latency_s = lat;
  c.issue_overhead_s = ovh;
  xs_error e;
  assert_int_equal(xs_profile_add_channel(p, "link", &c, &e), XS_OK);
  return p;
}

/* Finish a program a test built, or say why and fail. */
static inline void finish_ok(xs_program *p) {
  xs_error e;
  xs_status st = xs_program_finish(p, &e);
  if (st)
    fprintf(stderr, "finish: %s\n", e.message);
  assert_int_equal(st, XS_OK);
}

static inline xs_result *eval(const xs_program *p, const xs_profile *prof,
                              xs_model m, int event_driven) {
  xs_result *r;
  xs_error e;
  xs_eval_options o = {event_driven, 0, NULL, NULL};
  xs_status st = xs_evaluate(p, prof, m, &o, &r, &e);
  if (st)
    fprintf(stderr, "evaluate: %s\n", e.message);
  assert_int_equal(st, XS_OK);
  return r;
}

#endif
