/* test_units.c: flag values with unit suffixes, and their refusals. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "xstage.h"

static void ok_size(const char *t, double want) {
  double v = -1;
  xs_error e;
  assert_int_equal(xs_parse_size(t, &v, &e), XS_OK);
  assert_true(fabs(v - want) <= 1e-12 * want);
}
static void ok_time(const char *t, double want) {
  double v = -1;
  xs_error e;
  assert_int_equal(xs_parse_time(t, &v, &e), XS_OK);
  assert_true(fabs(v - want) <= 1e-12 * want);
}
static void ok_rate(const char *t, double want) {
  double v = -1;
  xs_error e;
  assert_int_equal(xs_parse_rate(t, &v, &e), XS_OK);
  assert_true(fabs(v - want) <= 1e-12 * want);
}

static void test_sizes(void **s) {
  (void)s;
  ok_size("64KiB", 65536);
  ok_size("1.5MB", 1.5e6);
  ok_size("4096", 4096);
  ok_size("4096B", 4096);
  ok_size("2 GiB", 2147483648.0);
  ok_size("1MiB", 1048576);
  ok_size("3kB", 3000);
  xs_error e;
  double v;
  const char *bad[] = {"", "abc", "12XB", "-1KiB", "1e999", "inf", "nan", "0x10", "5 s"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    assert_int_equal(xs_parse_size(bad[i], &v, &e), XS_INVALID);
    assert_non_null(strstr(e.message, "size"));
  }
}

static void test_times(void **s) {
  (void)s;
  ok_time("2us", 2e-6);
  ok_time("1.5ms", 1.5e-3);
  ok_time("3e-6", 3e-6);
  ok_time("10ns", 1e-8);
  ok_time("1s", 1);
  ok_time("7\xc2\xb5s", 7e-6);
  xs_error e;
  double v;
  const char *bad[] = {"", "2 parsecs", "-1us", "1MS", "us"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    assert_int_equal(xs_parse_time(bad[i], &v, &e), XS_INVALID);
    assert_non_null(strstr(e.message, "time"));
  }
}

static void test_rates(void **s) {
  (void)s;
  ok_rate("300MB/s", 3e8);
  ok_rate("1.6Gbit/s", 2e8);
  ok_rate("2e9", 2e9);
  ok_rate("1GiB/s", 1073741824.0);
  ok_rate("10Gbps", 1.25e9);
  ok_rate("5GBps", 5e9);
  ok_rate("100B/s", 100);
  xs_error e;
  double v;
  const char *bad[] = {"", "0", "0MB/s", "-3GB/s", "3GB", "3 furlongs/s", "1XB/s"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    assert_int_equal(xs_parse_rate(bad[i], &v, &e), XS_INVALID);
    assert_non_null(strstr(e.message, "rate"));
  }
}

static void test_format(void **s) {
  (void)s;
  char b[32];
  assert_string_equal(xs_format_time(1.234e-5, b, sizeof b), "12.3 us");
  assert_string_equal(xs_format_time(0.5, b, sizeof b), "500 ms");
  assert_string_equal(xs_format_size(4194304, b, sizeof b), "4.00 MiB");
  assert_string_equal(xs_format_size(INFINITY, b, sizeof b), "unbounded");
  assert_string_equal(xs_format_rate(3.7e11, b, sizeof b), "370 GB/s");
  /* any finite value keeps its unit, however large or small */
  assert_string_equal(xs_format_time(1e100, b, sizeof b), "1e+100 s");
  assert_string_equal(xs_format_time(-1e100, b, sizeof b), "-1e+100 s");
  assert_string_equal(xs_format_time(123456, b, sizeof b), "123456 s");
  /* below the last digit of the smallest unit: the 0 it rounds to, not a
   * residue like "1.22e-08 ns" */
  assert_string_equal(xs_format_time(1.22e-17, b, sizeof b), "0 ns");
  assert_string_equal(xs_format_time(-3e-15, b, sizeof b), "0 ns");
  assert_string_equal(xs_format_time(4.9e-12, b, sizeof b), "0 ns");
  assert_string_equal(xs_format_time(5.1e-12, b, sizeof b), "0.01 ns");
  assert_string_equal(xs_format_size(DBL_MAX, b, sizeof b), "1.67e+299 GiB");
  assert_string_equal(xs_format_rate(2.5e30, b, sizeof b), "2.5e+18 TB/s");
  assert_string_equal(xs_format_rate(1e-3, b, sizeof b), "0 B/s");
  assert_string_equal(xs_format_size(0.004, b, sizeof b), "0 B");
  assert_string_equal(xs_strerror(XS_CYCLE), "waits form a cycle");
}

static void ok_count(const char *t, double want) {
  double v = -1;
  xs_error e;
  assert_int_equal(xs_parse_count(t, &v, &e), XS_OK);
  assert_true(v == want);
}

static void test_counts(void **s) {
  (void)s;
  ok_count("4096", 4096);
  ok_count("4k", 4000);
  ok_count("4K", 4000);
  ok_count("4Ki", 4096);
  ok_count("1Mi", 1048576);
  ok_count("2.5k", 2500);
  ok_count("1e3", 1000);
  ok_count("0", 0);
  ok_count(" 32 Ki ", 32768);
  ok_count("9007199254740992", 9007199254740992.0);
  xs_error e;
  double v = 7;
  const char *bad[] = {"", "k", "1.5", "4kB", "4KiB", "-1", "-4k", "inf", "nan",
                       "0x10", "1e999", "1.0001k", "9007199254740994", "1e16", "4 s"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    assert_int_equal(xs_parse_count(bad[i], &v, &e), XS_INVALID);
    if (!strstr(e.message, "count"))
      fail_msg("\"%s\": %s", bad[i], e.message);
    assert_true(v == 7); /* untouched */
  }
}

/* The formatter against a second reading of its own output: what
 * xs_format_time prints, read back by xs_parse_time, is the value within
 * half a unit of the last digit printed (and 0 for anything below the
 * last digit of ns). Random values over 30 decades, fixed seed. */
static void test_format_reads_back(void **s) {
  (void)s;
  unsigned long long x = 20261204;
  for (int i = 0; i < 20000; i++) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    double u = (double)(x >> 11) / 9007199254740992.0;
    double v = pow(10, -20 + 26 * u) * (i % 7 == 0 ? -1 : 1);
    char b[32];
    xs_format_time(v, b, sizeof b);
    double back;
    xs_error e;
    const char *t = b[0] == '-' ? b + 1 : b;
    if (xs_parse_time(t, &back, &e))
      fail_msg("seed 20261204 i %d: %.17g printed as \"%s\", which does not read back", i,
               v, b);
    if (b[0] == '-')
      back = -back;
    /* the last digit printed, in seconds */
    const char *dot = strchr(b, '.'), *sp = strchr(b, ' ');
    double digits = dot && dot < sp ? (double)(sp - dot - 1) : 0;
    double scale = back == 0 ? 1e-9 : fabs(back) / fabs(strtod(b, NULL));
    double half = 0.5 * pow(10, -digits) * scale * (1 + 1e-9);
    if (strchr(b, 'e'))
      half = 0.0005 * fabs(back); /* %.3g */
    if (!(fabs(back - v) <= half))
      fail_msg("seed 20261204 i %d: %.17g printed as \"%s\", read back as %.17g", i, v, b,
               back);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_sizes), cmocka_unit_test(test_times),
      cmocka_unit_test(test_rates), cmocka_unit_test(test_format),
      cmocka_unit_test(test_counts), cmocka_unit_test(test_format_reads_back)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
