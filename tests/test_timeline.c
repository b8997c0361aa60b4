/*
 * test_timeline.c: the Chrome trace is valid JSON with the events Perfetto
 * needs (track names, slices per worker, a backlog counter per channel, one
 * X-stage span per send), the timeline agrees with the result it came with,
 * and the SVG is written for 2 and for 132 workers (tests/svg_wellformed.sh
 * checks those with xmllint).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <float.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xstage.h"

static xs_program *load(const char *rel) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", XSTAGE_SRC, rel);
  xs_program *p;
  xs_error e;
  xs_status st = xs_program_load(path, &p, &e);
  if (st)
    fprintf(stderr, "%s\n", e.message);
  assert_int_equal(st, XS_OK);
  return p;
}

static void check_trace(const xs_program *p, const xs_profile *prof,
                        const xs_result *r, const xs_timeline *tl) {
  char *t = xs_timeline_trace_json(p, prof, r, tl);
  assert_non_null(t);
  json_error_t je;
  json_t *root = json_loads(t, 0, &je);
  if (!root)
    fprintf(stderr, "trace: %d:%d: %s\n", je.line, je.column, je.text);
  assert_non_null(root);
  json_t *ev = json_object_get(root, "traceEvents");
  assert_true(json_is_array(ev));
  size_t names = 0, slices = 0, counters = 0, begins = 0, ends = 0, i;
  int kinds[5] = {0};
  json_t *e;
  json_array_foreach(ev, i, e) {
    const char *ph = json_string_value(json_object_get(e, "ph"));
    assert_non_null(ph);
    assert_non_null(json_object_get(e, "pid"));
    if (strcmp(ph, "M") == 0) {
      names++;
      continue;
    }
    double ts = json_number_value(json_object_get(e, "ts"));
    assert_true(ts >= -1e-9);
    const char *name = json_string_value(json_object_get(e, "name"));
    assert_non_null(name);
    if (strcmp(ph, "X") == 0) {
      slices++;
      assert_true(json_number_value(json_object_get(e, "dur")) >= 0);
      const char *k[] = {"compute", "overhead", "issue", "stall", "blocked"};
      for (int j = 0; j < 5; j++)
        kinds[j] += strcmp(name, k[j]) == 0;
      assert_non_null(json_object_get(json_object_get(e, "args"), "duration_s"));
    } else if (strcmp(ph, "C") == 0) {
      counters++;
      assert_non_null(strstr(name, "backlog"));
      assert_non_null(json_object_get(json_object_get(e, "args"), "backlog_B"));
    } else if (strcmp(ph, "b") == 0) {
      begins++;
      assert_non_null(strstr(name, "X-stage"));
    } else if (strcmp(ph, "e") == 0) {
      ends++;
    } else {
      fail_msg("unexpected phase %s", ph);
    }
  }
  /* two process names, a thread name per worker and per channel */
  assert_int_equal(names, 2 + xs_program_worker_count(p) + r->nchannels);
  assert_true(slices > 0 && counters > 0);
  assert_int_equal(begins, xs_program_send_count(p));
  assert_int_equal(ends, begins);
  assert_true(kinds[0] > 0 && kinds[2] > 0);
  json_decref(root);
  free(t);
}

static void test_predict_timeline(void **s) {
  (void)s;
  xs_program *p = load("examples/hol.json");
  xs_profile *prof;
  xs_error e;
  assert_int_equal(xs_profile_load("h200-nvlink", &prof, &e), XS_OK);
  xs_timeline *tl = xs_timeline_new();
  xs_eval_options o = {0, 0, NULL, tl};
  xs_result *r;
  assert_int_equal(xs_evaluate(p, prof, XS_MODEL_BURSTGAP, &o, &r, &e), XS_OK);
  /* per worker the slices add up to its finish: nothing is lost */
  for (size_t w = 0; w < r->nworkers; w++) {
    double sum = 0;
    for (size_t i = 0; i < tl->nsegments; i++)
      if (tl->segments[i].worker == w)
        sum += tl->segments[i].end_s - tl->segments[i].start_s;
    assert_true(fabs(sum - r->workers[w].finish_s) <= 1e-9 * r->makespan_s);
  }
  /* the backlog's largest point is the reported peak */
  double peak = 0;
  for (size_t i = 0; i < tl->npoints; i++)
    peak = fmax(peak, tl->points[i].backlog_B);
  assert_true(fabs(peak - r->channels[0].peak_backlog_B) <= 1e-6 * peak);
  check_trace(p, prof, r, tl);
  char *svg = xs_timeline_svg(p, prof, r, tl);
  assert_non_null(svg);
  assert_non_null(strstr(svg, "<svg"));
  assert_non_null(strstr(svg, "capacity C"));
  assert_non_null(strstr(svg, ">big</text>"));
  free(svg);
  xs_result_free(r);
  xs_timeline_free(tl);
  xs_program_free(p);
  xs_profile_free(prof);
}

static void test_sim_timeline_many(void **s) {
  (void)s;
  xs_program *p = xs_program_new("wide <&> \"wave\"");
  xs_error e;
  for (int w = 0; w < 132; w++) {
    char n[16];
    size_t idx;
    snprintf(n, sizeof n, "sm%d", w);
    assert_int_equal(xs_program_add_worker(p, n, &idx, &e), XS_OK);
    for (int k = 0; k < 3; k++) {
      assert_int_equal(xs_program_compute(p, idx, 5e-6, &e), XS_OK);
      assert_int_equal(xs_program_send(p, idx, 32768, NULL, NULL, NULL, &e), XS_OK);
    }
  }
  assert_int_equal(xs_program_finish(p, &e), XS_OK);
  xs_profile *prof;
  assert_int_equal(xs_profile_load("h200-nvlink", &prof, &e), XS_OK);
  xs_timeline *tl = xs_timeline_new();
  xs_sim_options o = {1024, XS_ARB_RR, 0, tl, 0};
  xs_result *r;
  assert_int_equal(xs_simulate(p, prof, &o, &r, &e), XS_OK);
  check_trace(p, prof, r, tl);
  char *svg = xs_timeline_svg(p, prof, r, tl);
  assert_non_null(svg);
  assert_non_null(strstr(svg, "132 workers in"));  /* lanes grouped */
  assert_non_null(strstr(svg, "wide &lt;&amp;&gt; &quot;wave&quot;")); /* escaped */
  free(svg);
  xs_result_free(r);
  xs_timeline_free(tl);
  xs_program_free(p);
  xs_profile_free(prof);
}

/* The SVG of a program of one compute, for makespans from 0 through the
 * smallest doubles (whose tenths underflow to 0) to the largest. */
static void test_svg_extreme_makespans(void **s) {
  (void)s;
  const double spans[] = {0, 5e-324, 1e-323, 3.4e-323, 1e-320, 1e-300, 1e300,
                          DBL_MAX};
  xs_profile *prof;
  xs_error e;
  assert_int_equal(xs_profile_load("h200-nvlink", &prof, &e), XS_OK);
  for (size_t i = 0; i < sizeof spans / sizeof *spans; i++) {
    xs_program *p = xs_program_new("one compute");
    assert_int_equal(xs_program_add_worker(p, "w", NULL, &e), XS_OK);
    assert_int_equal(xs_program_compute(p, 0, spans[i], &e), XS_OK);
    assert_int_equal(xs_program_finish(p, &e), XS_OK);
    xs_timeline *tl = xs_timeline_new();
    xs_eval_options o = {0, 0, NULL, tl};
    xs_result *r;
    assert_int_equal(xs_evaluate(p, prof, XS_MODEL_BURSTGAP, &o, &r, &e), XS_OK);
    assert_true(r->makespan_s == spans[i]);
    char *svg = xs_timeline_svg(p, prof, r, tl);
    assert_non_null(svg);
    assert_non_null(strstr(svg, "</svg>"));
    free(svg);
    xs_result_free(r);
    xs_timeline_free(tl);
    xs_program_free(p);
  }
  xs_profile_free(prof);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_predict_timeline),
                                     cmocka_unit_test(test_sim_timeline_many),
                                     cmocka_unit_test(test_svg_extreme_makespans)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
