/*
 * kernel.c: the one entry to the EP kernel programs for the rest of the
 * library (the MegaMoE planner's sequential arm, `xstage validate ep`):
 * a library and mode by the names ep.csv uses, and the figures each
 * library's benchmark prints, converted by that library's own formula.
 */
#include "plan/ep/ep.h"

#include <math.h>
#include <string.h>

typedef xs_status (*builder)(xs__ep_ctx *c);

static xs_status deepep_normal(xs__ep_ctx *c) {
  return xs__ep_deepep_normal(c, NULL);
}
static xs_status deepep_ll(xs__ep_ctx *c) { return xs__ep_deepep_ll(c, NULL); }

/* the bandwidth figures a library's benchmark prints (time_us always) */
enum { NVL = 1, RDMA = 2, ALGBW = 4 };

static const struct {
  const char *library, *mode;
  builder build;
  int v2_bytes; /* its benchmark counts the top-k indexes and weights */
  int metrics;
} libs[] = {
    /* DeepEP's tests print NVL and RDMA GB/s; HybridEP's test prints
     * DeepEP's normal kernels' as algorithm bandwidth beside its own */
    {"deepep-v1", "normal", deepep_normal, 0, NVL | RDMA | ALGBW},
    {"deepep-v1", "low-latency", deepep_ll, 0, RDMA},
    {"deepep-v2", "normal", xs__ep_deepep_v2, 1, NVL | RDMA},
    {"deepep-hybrid", "normal", xs__ep_hybrid, 0, ALGBW},
    {"pplx-kernels", "low-latency", xs__ep_pplx, 0, 0},
    {"uccl-ep", "normal", xs__ep_uccl_normal, 0, NVL | RDMA},
    {"uccl-ep", "low-latency", xs__ep_uccl_ll, 0, RDMA},
};
#define NLIBS (sizeof libs / sizeof libs[0])

static int find(const char *library, const char *mode) {
  for (size_t i = 0; i < NLIBS; i++)
    if (!strcmp(libs[i].library, library) && !strcmp(libs[i].mode, mode))
      return (int)i;
  return -1;
}

int xs__ep_known(const char *library, const char *mode) {
  return library && mode && find(library, mode) >= 0;
}

size_t xs__ep_library_count(void) { return NLIBS; }
const char *xs__ep_library_name(size_t i, const char **mode) {
  if (i >= NLIBS)
    return NULL;
  if (mode)
    *mode = libs[i].mode;
  return libs[i].library;
}

xs_status xs__ep_kernel(const char *library, const char *mode,
                        xs__ep_phase phase, const xs__ep_shape *shape,
                        const xs_profile *prof, const xs__ep_params *par,
                        xs_program **out, double *time_s, xs_error *err) {
  if (out)
    *out = NULL;
  int i = find(library ? library : "", mode ? mode : "");
  if (i < 0) {
    char list[512];
    size_t n = 0;
    list[0] = '\0';
    for (size_t j = 0; j < NLIBS && n < sizeof list; j++) {
      int w = snprintf(list + n, sizeof list - n, "%s%s %s", j ? ", " : "",
                       libs[j].library, libs[j].mode);
      if (w < 0)
        break;
      n += (size_t)w;
    }
    return xs__fail(err, XS_NOTFOUND,
                    "no EP kernel \"%s\" \"%s\" (known: %s)",
                    library ? library : "", mode ? mode : "", list);
  }
  char name[96];
  snprintf(name, sizeof name, "%s %s %s", library, mode,
           phase == XS__EP_DISPATCH ? "dispatch" : "combine");
  xs__ep_ctx c;
  xs_status st = xs__ep_begin(&c, shape, phase, prof, par, name, err);
  if (st)
    return st;
  if ((st = libs[i].build(&c))) {
    xs__ep_abort(&c);
    return st;
  }
  return xs__ep_finish(&c, out, time_s);
}

double xs__ep_metric_bytes(const char *library, const char *mode,
                           xs__ep_phase phase, const char *metric,
                           const xs__ep_shape *s, const xs__ep_route *r) {
  int i = find(library, mode);
  int m = !strcmp(metric, "nvl_GBps")    ? NVL
          : !strcmp(metric, "rdma_GBps") ? RDMA
          : !strcmp(metric, "algbw_GBps") ? ALGBW
                                          : 0;
  if (i < 0 || !(libs[i].metrics & m))
    return 0;
  /* a token as the benchmarks count it: the payload (FP8 with its
   * scales: hidden x 2 x (1 + 4/128) / 2), V2 adds the top-k indexes
   * (int64) and weights (float) to the dispatch's, weights to the
   * combine's */
  double b = xs__ep_payload_B(s);
  if (libs[i].v2_bytes)
    b += phase == XS__EP_DISPATCH ? r->K * 12 : r->K * 4;
  int ll = !strcmp(mode, "low-latency");
  if (!strcmp(metric, "nvl_GBps") ||
      (!strcmp(metric, "algbw_GBps") && r->N == 1))
    /* tokens received, the rank's own included */
    return r->T * r->R * b;
  if (!strcmp(metric, "rdma_GBps") || !strcmp(metric, "algbw_GBps")) {
    if (ll) /* every selection, wherever it goes; the dispatch's header */
      return r->T * r->K * (b + (phase == XS__EP_DISPATCH ? 16 : 0));
    /* (token, node) pairs, the own node included */
    return r->T * r->Nn * b;
  }
  return 0;
}
