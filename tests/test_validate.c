/*
 * test_validate.c: what `xstage validate` reads and what it makes of the
 * rows. Every row read is a row out (text and JSON) or the file is refused
 * naming its line and column: times that are not a time, text that is not
 * UTF-8, stray quotes, a column named twice, a row measured twice. The
 * per-arm and per-source medians and the pairs of arms, grouped in
 * n log n, against a search over every row and every pair.
 */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testio.h"
#include "testutil.h"
#include "xstage.h"

#define HDR "source,gpu,ep,hidden,intermediate,experts,topk,shared_experts,act_dtype," \
            "weight_dtype,tokens,arm,time_us\n"
/* a row with its time_us field last: TIME_COL is its column */
#define ROW_HEAD "s,h100-nvlink,8,7168,2048,256,8,0,fp8,fp8,64,sequential,"
#define TIME_COL (sizeof ROW_HEAD)

/* Validate text (length n) as "d.csv": XS_OK, or the status with the
 * message in msg. */
static xs_status run(const char *text, size_t n, xs_validate_set *set, char *msg,
                     size_t size) {
  xs_error e;
  xs_status st = xs_validate_megamoe(text, n, "d.csv", set, NULL, NULL, &e);
  snprintf(msg, size, "%.*s", (int)(size - 1), st ? e.message : "");
  return st;
}

/* text must be refused with a message that starts with want */
static void refused(const char *text, size_t n, const char *want) {
  xs_validate_set set;
  char msg[2048];
  xs_status st = run(text, n, &set, msg, sizeof msg);
  if (st != XS_INVALID || strncmp(msg, want, strlen(want))) {
    fprintf(stderr, "status %d, message: %s\nwant: %s...\n", (int)st, msg, want);
    if (!st)
      xs_validate_free(&set);
    fail();
  }
}

static void test_times(void **s) {
  (void)s;
  /* nothing but a time from a nanosecond to 1e12 us is a time */
  const char *bad[] = {"1e-320", "0", "-5", "inf", "nan", "-inf", "1e13", "", "0x",
                       "1e-4", "4.9e-324", "1e400", "100us"};
  char text[512], want[160];
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    snprintf(text, sizeof text, HDR ROW_HEAD "%s\n", bad[i]);
    snprintf(want, sizeof want, "d.csv:2:%zu: time_us: expected microseconds from "
             "0.001 to 1e+12, got \"%s\"", TIME_COL, bad[i]);
    refused(text, strlen(text), want);
  }
  /* a NUL byte after a number, where strtod would stop */
  static const char nul[] = HDR ROW_HEAD "100\0junk\n";
  snprintf(want, sizeof want, "d.csv:2:%zu: a NUL byte", TIME_COL + 3);
  refused(nul, sizeof nul - 1, want);
  /* the good ones, at both ends of the range: one row each */
  const char *good[] = {"0.001", "1e12", " 100 "};
  for (size_t i = 0; i < 3; i++) {
    snprintf(text, sizeof text, HDR ROW_HEAD "%s\n", good[i]);
    xs_validate_set set;
    char msg[1100];
    if (run(text, strlen(text), &set, msg, sizeof msg))
      fail_msg("time_us \"%s\": %s", good[i], msg);
    assert_int_equal(set.nrows, 1);
    assert_true(isfinite(set.rows[0].error));
    xs_validate_free(&set);
  }
}

static void test_text(void **s) {
  (void)s;
  /* not UTF-8: a byte that starts nothing, a character cut short, an
   * overlong form; the column is where the bad character starts */
  char text[1024];
  snprintf(text, sizeof text, HDR "s\xff%s100\n", &ROW_HEAD[1]);
  refused(text, strlen(text), "d.csv:2:2: not UTF-8 (byte 0xff)");
  snprintf(text, sizeof text, HDR "ab\xe2\x82%s100\n", &ROW_HEAD[1]);
  refused(text, strlen(text), "d.csv:2:3: not UTF-8 (byte 0xe2)");
  snprintf(text, sizeof text, HDR "\xc0\xaf%s100\n", &ROW_HEAD[1]);
  refused(text, strlen(text), "d.csv:2:1: not UTF-8 (byte 0xc0)");
  /* sources of any length are kept whole: two 200-byte sources that
   * differ in their last byte are two rows, not one measured twice */
  {
    char big[4096], a[201], b[201];
    memset(a, 'x', 200);
    a[200] = 0;
    memcpy(b, a, sizeof a);
    a[199] = '1';
    b[199] = '2';
    snprintf(big, sizeof big, HDR "%s%s100\n%s%s120\n", a, &ROW_HEAD[1], b, &ROW_HEAD[1]);
    xs_validate_set two;
    char m[1100];
    if (run(big, strlen(big), &two, m, sizeof m))
      fail_msg("two long sources: %s", m);
    assert_int_equal(two.nrows, 2);
    assert_string_equal(two.rows[0].source, a);
    assert_string_equal(two.rows[1].source, b);
    /* and JSON carries them whole */
    char *js;
    xs_error e;
    assert_int_equal(xs_validate_json(&two, &js, &e), XS_OK);
    assert_non_null(strstr(js, a));
    assert_non_null(strstr(js, b));
    xs_free(js);
    xs_validate_free(&two);
    /* the same 200 bytes twice: one measurement twice, refused */
    snprintf(big, sizeof big, HDR "%s%s100\n%s%s120\n", a, &ROW_HEAD[1], a, &ROW_HEAD[1]);
    refused(big, strlen(big), "d.csv:3:1: measures what line 2 does");
  }
  /* stray quotes: after a quoted field's end, inside an unquoted field */
  snprintf(text, sizeof text, HDR "\"s\"x%s100\n", &ROW_HEAD[1]);
  refused(text, strlen(text), "d.csv:2:4: a stray quote");
  snprintf(text, sizeof text, HDR "s\"x%s100\n", &ROW_HEAD[1]);
  refused(text, strlen(text), "d.csv:2:2: a stray quote");
  /* quotes done right: "" inside a quoted field */
  snprintf(text, sizeof text, HDR "\"a \"\"b\"\", c\"%s100\n", &ROW_HEAD[1]);
  xs_validate_set set;
  char msg[1100];
  if (run(text, strlen(text), &set, msg, sizeof msg))
    fail_msg("%s", msg);
  assert_string_equal(set.rows[0].source, "a \"b\", c");
  xs_validate_free(&set);
  /* a column named twice */
  snprintf(text, sizeof text, "source,gpu,ep,hidden,intermediate,experts,topk,"
           "shared_experts,act_dtype,weight_dtype,tokens,arm,time_us,arm\n" ROW_HEAD
           "100,x\n");
  refused(text, strlen(text), "d.csv:1:105: column \"arm\" is named twice (columns 12 "
          "and 14)");
  /* a row measured twice, even written another way */
  snprintf(text, sizeof text, HDR ROW_HEAD "100\n" "s,h100-nvlink,8,7168.0,2048,256,8,0,"
           "fp8,fp8,64e0,sequential,120\n");
  refused(text, strlen(text), "d.csv:3:1: measures what line 2 does");
  /* a byte order mark before the header, as spreadsheets write */
  snprintf(text, sizeof text, "\xEF\xBB\xBF" HDR ROW_HEAD "100\n");
  if (run(text, strlen(text), &set, msg, sizeof msg))
    fail_msg("with a byte order mark: %s", msg);
  assert_int_equal(set.nrows, 1);
  xs_validate_free(&set);
}

/* A file of more rows than XS_VALIDATE_MAX_ROWS is refused at the first
 * row past it, before any row is predicted; comments and blank lines do
 * not count. */
static void test_row_limit(void **s) {
  (void)s;
  size_t rows = XS_VALIDATE_MAX_ROWS + 1, n = 0;
  char *text = malloc(strlen(HDR) + rows * (strlen(ROW_HEAD) + 16) + 64);
  assert_non_null(text);
  n += (size_t)sprintf(text, "# a comment\n\n" HDR);
  for (size_t i = 0; i < rows; i++)
    n += (size_t)sprintf(text + n, "%s%zu\n", ROW_HEAD, 100 + i);
  char want[128];
  snprintf(want, sizeof want, "d.csv:%zu:1: more than %d rows", rows + 3,
           XS_VALIDATE_MAX_ROWS);
  refused(text, n, want);
  free(text);
}

/* Every row in is a row out: UTF-8 names, an arm with no kernel time
 * (its median null, not a dropped summary). Checked against the rows the
 * library read, one by one. */
static void test_every_row_out(void **s) {
  (void)s;
  const char *text =
      "source,gpu,ep,hidden,intermediate,experts,topk,shared_experts,act_dtype,"
      "weight_dtype,tokens,arm,time_us,metric,knobs\n"
      "\"Ünïcödé ✓ 😀 a, b\",h100-nvlink,8,7168,2048,256,8,0,fp8,fp8,64,sequential,100,,\n"
      "\"Ünïcödé ✓ 😀 a, b\",h100-nvlink,8,7168,2048,256,8,0,fp8,fp8,64,fused-lag,90,,\n"
      "r,h100-nvlink,8,4096,2048,288,8,0,fp8,fp8,8192,fused-lag,900,pull_end,lag=8\n"
      "r,h100-nvlink,8,4096,2048,288,8,0,fp8,fp8,8192,fused-lag,950,pull_end,lag=40\n"
      "r,h100-nvlink,8,4096,2048,288,8,0,fp8,fp8,8192,fused-wave,950,pull_end,\n";
  xs_validate_set set;
  char msg[1100];
  if (run(text, strlen(text), &set, msg, sizeof msg))
    fail_msg("%s", msg);
  assert_int_equal(set.nrows, 5);
  char *js;
  xs_error e;
  assert_int_equal(xs_validate_json(&set, &js, &e), XS_OK);
  json_error_t je;
  json_t *doc = json_loads(js, 0, &je);
  assert_non_null(doc);
  json_t *rows = json_object_get(doc, "rows"), *sum = json_object_get(doc, "summary");
  assert_int_equal(json_array_size(rows), set.nrows);
  for (size_t i = 0; i < set.nrows; i++) {
    json_t *r = json_array_get(rows, i);
    assert_string_equal(json_string_value(json_object_get(r, "source")),
                        set.rows[i].source);
    assert_true(json_real_value(json_object_get(r, "measured_us")) ==
                set.rows[i].measured_us);
  }
  assert_int_equal(json_integer_value(json_object_get(sum, "rows")), 5);
  json_t *wave = json_object_get(json_object_get(sum, "by_arm"), "fused-wave");
  assert_int_equal(json_integer_value(json_object_get(wave, "rows")), 0);
  assert_true(json_is_null(json_object_get(wave, "median_abs_error")));
  json_decref(doc);
  free(js);
  xs_validate_free(&set);
}

/* ---- grouping and pairs against a search over everything ---- */

static rng seq = {20260412};
static unsigned next(unsigned n) { return (unsigned)rng_int(&seq, (int)n); }

/* n rows over a few sources, GPUs, arms, metrics and shapes, MegaMoE and
 * attention, with random times (no prediction: the grouping is under
 * test) */
static xs_validate_row *random_rows(size_t n) {
  static const char *src[] = {"a", "b", "ç", "d"}, *gpu[] = {"h100-nvlink", "h200-nvlink"},
                    *marm[] = {"sequential", "fused-split", "fused-wave", "fused-lag"},
                    *farm[] = {"local", "piggyback", "sequential"},
                    *lay[] = {"zigzag", "stripe", "-"};
  xs_validate_row *r = calloc(n, sizeof *r);
  for (size_t i = 0; i < n; i++) {
    r[i].kind = next(4) == 0;
    r[i].source = (char *)src[next(4)]; /* the test's, not a set's to free */
    snprintf(r[i].gpu, sizeof r[i].gpu, "%s", gpu[next(2)]);
    if (r[i].kind) {
      xs_fa_preset("llama3-8b", &r[i].fa);
      r[i].fa.seq = 1024.0 * (1 + next(3));
      snprintf(r[i].arm, sizeof r[i].arm, "%s", farm[next(3)]);
      snprintf(r[i].layout, sizeof r[i].layout, "%s", lay[next(3)]);
    } else {
      xs_moe_preset("deepseek-v3", &r[i].config);
      r[i].config.tokens = 64.0 * (1 + next(6));
      snprintf(r[i].arm, sizeof r[i].arm, "%s", marm[next(4)]);
      snprintf(r[i].metric, sizeof r[i].metric, "%s", next(5) ? "time" : "pull_end");
    }
    r[i].measured_us = 10 + next(1000);
    r[i].predicted_us = 10 + next(1000);
    r[i].error = r[i].predicted_us / r[i].measured_us - 1;
    r[i].line = i + 2;
  }
  return r;
}

/* the pair rule, written out: one config, two arms (attention: a ring and
 * the local arm, or two layouts of one ring arm) */
static int paired(const xs_validate_row *a, const xs_validate_row *b) {
  if (a->kind != b->kind || strcmp(a->source, b->source) || strcmp(a->gpu, b->gpu))
    return 0;
  if (a->kind) {
    int la = !strcmp(a->arm, "local"), lb = !strcmp(b->arm, "local");
    return a->fa.seq == b->fa.seq &&
           (la != lb || (!la && !strcmp(a->arm, b->arm) && strcmp(a->layout, b->layout)));
  }
  return !strcmp(a->metric, b->metric) && a->config.tokens == b->config.tokens &&
         strcmp(a->arm, b->arm) != 0;
}

static int by_double(const void *x, const void *y) {
  double a = *(const double *)x, b = *(const double *)y;
  return (a > b) - (a < b);
}

static void test_groups_and_pairs(void **s) {
  (void)s;
  for (int round = 0; round < 20; round++) {
    uint64_t seed = seq.s;
    size_t n = 1 + next(400);
    xs_validate_row *rows = random_rows(n);
    xs_validate_set set = {.rows = rows, .nrows = n};
    xs_error e;
    for (int by = 0; by < 2; by++) {
      xs_validate_group *g;
      size_t ng;
      assert_int_equal(xs_validate_groups(&set, by, &g, &ng, &e), XS_OK);
      size_t nd = xs_validate_distinct(&set, by, NULL, 0);
      const char **names = malloc((nd + 1) * sizeof *names);
      xs_validate_distinct(&set, by, names, nd);
      assert_int_equal(ng, nd);
      for (size_t k = 0; k < ng; k++) {
        size_t cnt;
        double mx, med = xs_validate_median(
            &set, by ? xs_validate_same_source : xs_validate_same_arm, (void *)names[k],
            &cnt, &mx);
        if (strcmp(g[k].name, names[k]) || g[k].rows != cnt ||
            !(g[k].median_abs_error == med || (isnan(med) && isnan(g[k].median_abs_error))) ||
            !(g[k].max_abs_error == mx || (isnan(mx) && isnan(g[k].max_abs_error))))
          fail_msg("seed %#llx, %zu rows, by %s, group %zu: %s %zu %.17g %.17g, by "
                   "search %s %zu %.17g %.17g", (unsigned long long)seed, n,
                   by ? "source" : "arm", k, g[k].name, g[k].rows, g[k].median_abs_error,
                   g[k].max_abs_error, names[k], cnt, med, mx);
      }
      free(g);
      free(names);
    }
    /* every pair i < j */
    size_t np = 0, agree = 0;
    double *v = malloc((n * n / 2 + 1) * sizeof *v), mx = 0;
    for (size_t i = 0; i < n; i++)
      for (size_t j = i + 1; j < n; j++) {
        const xs_validate_row *a = &rows[i], *b = &rows[j];
        if (!paired(a, b))
          continue;
        agree += (a->measured_us < b->measured_us) == (a->predicted_us < b->predicted_us);
        v[np] = fabs((a->predicted_us / b->predicted_us) / (a->measured_us / b->measured_us) - 1);
        mx = fmax(mx, v[np++]);
      }
    qsort(v, np, sizeof *v, by_double);
    double med = !np ? NAN : np % 2 ? v[np / 2] : (v[np / 2 - 1] + v[np / 2]) / 2;
    xs_validate_pairs pr;
    assert_int_equal(xs_validate_compare_arms(&set, &pr, &e), XS_OK);
    if (pr.pairs != np || pr.agree != agree ||
        !(pr.median_ratio_error == med || (isnan(med) && isnan(pr.median_ratio_error))) ||
        !(pr.max_ratio_error == mx || (!np && isnan(pr.max_ratio_error))))
      fail_msg("seed %#llx, %zu rows: %zu pairs, %zu agree, median %.17g, largest %.17g; "
               "by search %zu, %zu, %.17g, %.17g", (unsigned long long)seed, n, pr.pairs,
               pr.agree, pr.median_ratio_error, pr.max_ratio_error, np, agree, med, mx);
    free(v);
    free(rows);
  }
}

/* The text report escapes control characters in a source; --fail-above
 * takes a fraction, nothing else. */
static void test_command(void **s) {
  (void)s;
  char path[96], args[256], err[1024];
  snprintf(path, sizeof path, "/tmp/xstage-validate-%d.csv", (int)getpid());
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fprintf(f, HDR "\"a\x1b[31mb\"%s100\n", &ROW_HEAD[1]);
  fclose(f);
  char *out;
  snprintf(args, sizeof args, "validate megamoe --data %s", path);
  assert_int_equal(xs_test_cli(args, &out, err, sizeof err), 0);
  assert_null(strchr(out, '\x1b'));
  assert_non_null(strstr(out, "a\\x1b[31mb"));
  free(out);
  const char *bad[] = {"''", "x", "0.1x", "-1", "inf", "nan"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    snprintf(args, sizeof args, "validate megamoe --data %s --fail-above %s", path, bad[i]);
    assert_int_equal(xs_test_cli(args, &out, err, sizeof err), 2);
    assert_non_null(strstr(err, "--fail-above: expected a fraction"));
    free(out);
  }
  remove(path);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_times), cmocka_unit_test(test_text),
      cmocka_unit_test(test_row_limit),
      cmocka_unit_test(test_every_row_out), cmocka_unit_test(test_groups_and_pairs),
      cmocka_unit_test(test_command)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
