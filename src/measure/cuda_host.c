/*
 * cuda_host.c: the CUDA probes' host logic, in plain C so that it is built
 * and tested everywhere: the sweep of burst sizes, repetitions and warm-up,
 * and the samples made of what the kernels measured. docs/cuda.md.
 */
#include "../internal.h"
#include "xstage_measure.h"
#include "cuda_probe.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#ifdef XSTAGE_HAVE_CUDA
int xs_cuda_built(void) { return 1; }
#else
int xs_cuda_built(void) { return 0; }
#endif

int xs_cuda_available(char *why, size_t size) {
  return xs__cuda_device_count(why, size) > 0;
}

/* The bursts: warm-up first (not kept), then repeats x log-spaced sizes,
 * sizes interleaved so that drift spreads over all of them. */
static xs_status make_plan(const xs_probe_options *o, xs__cuda_plan *p,
                           unsigned *warm, xs_error *err) {
  double maxb = o->max_bytes > 0 ? o->max_bytes : 64.0 * 1048576;
  double minb = o->min_bytes > 0 ? o->min_bytes : 65536;
  unsigned nsz = o->sizes ? o->sizes : 14, reps = o->repeats ? o->repeats : 5;
  *warm = o->warmup ? o->warmup : 2;
  if (!(minb >= 16 && maxb >= minb && maxb <= 4e9))
    return xs__fail(err, XS_INVALID, "burst sizes %g to %g: expected 16 <= min <= max <= 4e9",
                    minb, maxb);
  memset(p, 0, sizeof *p);
  p->n = *warm + (size_t)nsz * reps;
  p->bytes = malloc(p->n * sizeof *p->bytes);
  if (!p->bytes)
    return xs__fail(err, XS_NOMEM, "out of memory");
  for (size_t k = 0; k < p->n; k++) {
    size_t i = k < *warm ? nsz - 1 : (k - *warm) % nsz;
    double b = nsz == 1 ? maxb : minb * pow(maxb / minb, (double)i / (nsz - 1));
    p->bytes[k] = 16 * floor(b / 16);
  }
  p->max_bytes = maxb;
  p->ctas = 132;
  p->threads = 512;
  p->tma_chunk = 32768;
  p->timeout_s = o->timeout_s > 0 ? o->timeout_s : 30;
  return XS_OK;
}

xs_status xs__cuda_samples(const char *mode, const double *bytes, size_t n,
                           unsigned warm, const double *issue_s,
                           const double *deliver_s, unsigned nsz,
                           xs_samples **out, xs_error *err) {
  xs_samples *s = calloc(1, sizeof *s);
  if (!s)
    return xs__fail(err, XS_NOMEM, "out of memory");
  snprintf(s->backend, sizeof s->backend, "%s", mode);
  for (size_t k = warm; k < n; k++) {
    if (!(issue_s[k] >= 0) || !(deliver_s[k] >= 0) || !isfinite(deliver_s[k]) ||
        !isfinite(issue_s[k])) {
      xs_samples_free(s);
      return xs__fail(err, XS_INTERNAL, "%s: burst %zu has no valid times", mode, k);
    }
    if (xs__grow(&s->rows, &s->cap, s->n + 1, sizeof *s->rows)) {
      xs_samples_free(s);
      return xs__fail(err, XS_NOMEM, "out of memory");
    }
    s->rows[s->n++] = (xs_sample){bytes[k], 0, issue_s[k], deliver_s[k],
                                  (unsigned)((k - warm) / (nsz ? nsz : 1))};
  }
  *out = s;
  return XS_OK;
}

xs_status xs_cuda_probe(const char *mode, const xs_probe_options *o,
                        xs_samples **out, xs_error *err) {
  *out = NULL;
  char why[512];
  if (strcmp(mode, "cuda-host") && strcmp(mode, "cuda-tma") && strcmp(mode, "cuda-ce") &&
      strcmp(mode, "cuda-p2p") && strcmp(mode, "cuda-p2p-tma"))
    return xs__fail(err, XS_NOTBUILT,
                    "no CUDA probe \"%s\" (cuda-host, cuda-tma, cuda-ce, cuda-p2p, "
                    "cuda-p2p-tma)",
                    mode);
  if (!xs_cuda_built()) {
    xs__cuda_device_count(why, sizeof why);
    return xs__fail(err, XS_NOTBUILT, "%s", why);
  }
  if (xs__cuda_device_count(why, sizeof why) <= 0)
    return xs__fail(err, XS_NODEV, "%s", why);
  xs__cuda_plan p;
  unsigned warm;
  xs_status st = make_plan(o, &p, &warm, err);
  if (st)
    return st;
  xs__cuda_stamps s = {malloc(p.n * sizeof(double)), malloc(p.n * sizeof(double)), 0};
  int rc;
  if (!s.issue_s || !s.deliver_s) {
    st = xs__fail(err, XS_NOMEM, "out of memory");
  } else if ((rc = xs__cuda_probe_run(mode, &p, &s, why, sizeof why)) != 0) {
    /* one GPU where two are needed is a missing device, not a failure */
    st = xs__fail(err, rc == XS__CUDA_NODEV ? XS_NODEV : XS_IO, "%s", why);
  } else {
    st = xs__cuda_samples(mode, p.bytes, p.n, warm, s.issue_s, s.deliver_s,
                          o->sizes ? o->sizes : 14, out, err);
  }
  free(s.issue_s);
  free(s.deliver_s);
  free(p.bytes);
  return st;
}

xs_status xs__cuda_plan_for_test(const xs_probe_options *o, double **bytes,
                                 size_t *n, unsigned *warm, xs_error *err) {
  xs__cuda_plan p;
  xs_status st = make_plan(o, &p, warm, err);
  if (st)
    return st;
  *bytes = p.bytes;
  *n = p.n;
  return XS_OK;
}
