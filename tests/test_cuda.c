/*
 * test_cuda.c: the CUDA probes' host logic against a fake timing source:
 * stamps made from known parameters become samples that fit back to them;
 * the plan of bursts; and, where a GPU is present, a real cuda-host probe
 * (skipped with the reason otherwise: "no CUDA device found").
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static void test_plan(void **st) {
  (void)st;
  xs_probe_options o;
  memset(&o, 0, sizeof o);
  o.sizes = 6;
  o.repeats = 3;
  double *bytes;
  size_t n;
  unsigned warm;
  xs_error e;
  assert_int_equal(xs__cuda_plan_for_test(&o, &bytes, &n, &warm, &e), XS_OK);
  assert_int_equal(n, warm + 18);
  for (size_t k = 0; k < n; k++) {
    assert_true(fmod(bytes[k], 16) == 0); /* TMA needs multiples of 16 */
    assert_true(bytes[k] >= 65536 && bytes[k] <= 64.0 * 1048576);
  }
  assert_true(bytes[warm] < bytes[warm + 5] && bytes[warm] == bytes[warm + 6]);
  free(bytes);
  o.min_bytes = 8;
  assert_int_equal(xs__cuda_plan_for_test(&o, &bytes, &n, &warm, &e), XS_INVALID);
}

/* GPU stores into host memory as the model has them: R_inj 400 GB/s,
 * R_drain 52.8 GB/s, C 1 MiB, L 1 us (h100-pcie5-host's leads). */
static void test_fake_timing(void **st) {
  (void)st;
  xs_probe_options o;
  memset(&o, 0, sizeof o);
  double *bytes;
  size_t n;
  unsigned warm;
  xs_error e;
  assert_int_equal(xs__cuda_plan_for_test(&o, &bytes, &n, &warm, &e), XS_OK);
  double ri = 4e11, rd = 5.28e10, cap = 1048576, lat = 1e-6, bf = cap * ri / (ri - rd);
  double *issue = malloc(n * sizeof *issue), *del = malloc(n * sizeof *del);
  for (size_t k = 0; k < n; k++) {
    double b = bytes[k];
    issue[k] = b <= bf ? b / ri : bf / ri + (b - bf) / rd;
    del[k] = b / rd + lat;
    /* a timer that ticks in 32 ns steps, as %globaltimer may */
    issue[k] = 32e-9 * floor(issue[k] / 32e-9);
  }
  xs_samples *s;
  assert_int_equal(xs__cuda_samples("cuda-host", bytes, n, warm, issue, del, 14, &s, &e),
                   XS_OK);
  assert_int_equal(s->n, n - warm);
  xs_fit f;
  assert_int_equal(xs_fit_samples(s, &f, &e), XS_OK);
  printf("fake cuda-host: drain %.4g B/s, capacity %.4g B, inject %.4g B/s\n", f.drain_Bps,
         f.capacity_B, f.inject_Bps);
  assert_true(f.knee_reached);
  assert_true(fabs(f.drain_Bps / rd - 1) < 0.01);
  assert_true(fabs(f.capacity_B / cap - 1) < 0.05);
  assert_true(fabs(f.latency_s / lat - 1) < 0.05);
  xs_samples_free(s);
  /* a burst the kernel never finished is refused, not kept */
  del[warm + 2] = NAN;
  assert_int_equal(xs__cuda_samples("cuda-host", bytes, n, warm, issue, del, 14, &s, &e),
                   XS_INTERNAL);
  free(issue);
  free(del);
  free(bytes);
}

static void test_device(void **st) {
  (void)st;
  char why[512];
  xs_probe_options o;
  memset(&o, 0, sizeof o);
  xs_samples *s = NULL;
  xs_error e;
  if (!xs_cuda_available(why, sizeof why)) {
    /* the reason differs: not built, or built with no device */
    xs_status r = xs_cuda_probe("cuda-host", &o, &s, &e);
    assert_int_equal(r, xs_cuda_built() ? XS_NODEV : XS_NOTBUILT);
    assert_non_null(strstr(e.message, xs_cuda_built() ? "no CUDA device" : "rebuild"));
    printf("skip: %s\n", why);
    skip();
  }
  o.sizes = 8;
  o.repeats = 3;
  o.timeout_s = 20;
  assert_int_equal(xs_cuda_probe("cuda-host", &o, &s, &e), XS_OK);
  xs_fit f;
  assert_int_equal(xs_fit_samples(s, &f, &e), XS_OK);
  printf("cuda-host: drain %.4g B/s, capacity %.4g B\n", f.drain_Bps, f.capacity_B);
  xs_samples_free(s);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_plan),
                                     cmocka_unit_test(test_fake_timing),
                                     cmocka_unit_test(test_device)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
