/* naive_fluid.h: a second, deliberately simple evaluation of the fluid
 * Burst-Gap model (O(workers) per event, remaining bytes per sender instead
 * of processor-sharing marks), to check the library's exact evaluation. */
#ifndef XSTAGE_NAIVE_FLUID_H
#define XSTAGE_NAIVE_FLUID_H
#include "xstage.h"
/* blocking: C = 0 and a fence after every send. Arrays sized by the
 * program's sends and workers. Returns 0, or -1 if it got stuck. */
int naive_eval(const xs_program *p, const xs_profile *prof, int blocking,
               double *makespan, double *deliver, double *finish);
#endif
