/*
 * test_roundtrip.c: every serialiser writes what its parser reads back as
 * the same thing (profile JSON, program JSON, samples CSV, the report's
 * JSON against the results it came from), and refuses, rather than writes
 * something the parser refuses, what JSON cannot hold.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "xstage.h"

/* serialise, parse, serialise: the same text, and the profile's numbers */
static void profile_roundtrip(const xs_profile *p) {
  char *t = xs_profile_to_json(p);
  assert_non_null(t);
  xs_profile *q;
  xs_error e;
  xs_status st = xs_profile_parse(t, strlen(t), "rt.json", &q, &e);
  if (st)
    fprintf(stderr, "%s\n%s\n", e.message, t);
  assert_int_equal(st, XS_OK);
  char *u = xs_profile_to_json(q);
  assert_non_null(u);
  assert_string_equal(t, u);
  assert_string_equal(xs_profile_name(p), xs_profile_name(q));
  assert_int_equal(xs_profile_channel_count(p), xs_profile_channel_count(q));
  for (size_t c = 0; c < xs_profile_channel_count(p); c++) {
    const xs_channel *a = xs_profile_channel(p, c), *b = xs_profile_channel(q, c);
    assert_string_equal(xs_profile_channel_name(p, c), xs_profile_channel_name(q, c));
    assert_true(a->inject_Bps == b->inject_Bps && a->worker_inject_Bps == b->worker_inject_Bps &&
                a->drain_Bps == b->drain_Bps && a->capacity_B == b->capacity_B &&
                a->latency_s == b->latency_s && a->issue_overhead_s == b->issue_overhead_s);
  }
  assert_true(xs_profile_efficiency(p) == xs_profile_efficiency(q));
  assert_int_equal(xs_profile_sms(p), xs_profile_sms(q));
  free(t);
  free(u);
  xs_profile_free(q);
}

static void test_profile(void **s) {
  (void)s;
  for (size_t i = 0; i < xs_builtin_profile_count(); i++) {
    xs_profile *p;
    xs_error e;
    assert_int_equal(xs_profile_load(xs_builtin_profile_name(i), &p, &e), XS_OK);
    profile_roundtrip(p);
    xs_profile_free(p);
  }
  /* built through the API: channels only, then numbers that 15 digits
   * do not hold, then a compute rate without xs_profile_set_compute */
  rng g = {42};
  xs_profile *p = xs_profile_new("api", "built by a test");
  xs_channel c;
  xs_error e;
  xs_channel_init(&c, 1e12 * (1 + rng_unit(&g)), 1e11 * (1 + rng_unit(&g)));
  c.latency_s = 1e-6 * rng_unit(&g);
  assert_int_equal(xs_profile_add_channel(p, "link", &c, &e), XS_OK);
  profile_roundtrip(p);
  c.capacity_B = INFINITY;
  c.issue_overhead_s = 1.0 / 3;
  assert_int_equal(xs_profile_add_channel(p, "d\xc3\xa9j\xc3\xa0", &c, &e), XS_OK);
  profile_roundtrip(p);
  assert_int_equal(xs_profile_set_flops(p, "bf16", 1e15 / 3, &e), XS_OK);
  assert_true(xs_profile_efficiency(p) == 1);
  profile_roundtrip(p);
  assert_int_equal(xs_profile_set_default_channel(p, "link", &e), XS_OK);
  profile_roundtrip(p);
  /* what JSON cannot hold is refused where it comes in, or not written */
  assert_int_equal(xs_profile_add_channel(p, "bad\xe2\x82", &c, &e), XS_INVALID);
  assert_non_null(strstr(e.message, "UTF-8"));
  assert_int_equal(xs_profile_set_flops(p, "\xff", 1, &e), XS_INVALID);
  xs_profile_free(p);
  p = xs_profile_new("cut\xe2\x82", "");
  assert_null(xs_profile_to_json(p));
  xs_profile_free(p);
}

/* serialise, parse, serialise: the same text, and the same ops */
static void program_roundtrip(const xs_program *p) {
  char *t = xs_program_to_json(p);
  assert_non_null(t);
  xs_program *q;
  xs_error e;
  xs_status st = xs_program_parse(t, strlen(t), "rt.json", &q, &e);
  if (st)
    fprintf(stderr, "%s\n%.2000s\n", e.message, t);
  assert_int_equal(st, XS_OK);
  char *u = xs_program_to_json(q);
  assert_non_null(u);
  assert_string_equal(t, u);
  assert_int_equal(xs_program_worker_count(p), xs_program_worker_count(q));
  for (size_t w = 0; w < xs_program_worker_count(p); w++) {
    assert_string_equal(xs_program_worker_name(p, w), xs_program_worker_name(q, w));
    assert_int_equal(xs_program_op_count(p, w), xs_program_op_count(q, w));
    for (size_t i = 0; i < xs_program_op_count(p, w); i++) {
      xs_op_info a, b;
      xs_program_op(p, w, i, &a);
      xs_program_op(q, w, i, &b);
      assert_int_equal(a.kind, b.kind);
      assert_true(a.value == b.value);
      /* a parsed program numbers its sends worker by worker, a built one
       * as they came: the same send has the same id */
      if (a.kind == XS_OP_SEND || a.kind == XS_OP_WAIT) {
        char ia[512], ib[512];
        assert_string_equal(xs_program_send_id(p, a.send, ia, sizeof ia),
                            xs_program_send_id(q, b.send, ib, sizeof ib));
      }
    }
  }
  free(t);
  free(u);
  xs_program_free(q);
}

static void test_program(void **s) {
  (void)s;
  rng g = {7};
  char longname[400];
  memset(longname, 'w', sizeof longname - 1);
  longname[sizeof longname - 1] = '\0';
  const char *names[] = {"a", "b\xc3\xa9", longname};
  xs_program *p = xs_program_new("round trip \xe2\x9c\x93");
  xs_error e;
  for (int w = 0; w < 3; w++)
    assert_int_equal(xs_program_add_worker(p, names[w], NULL, &e), XS_OK);
  size_t sends = 0;
  for (int k = 0; k < 60; k++) {
    size_t w = (size_t)rng_int(&g, 3);
    int kind = rng_int(&g, 5);
    if (kind == 0) {
      assert_int_equal(xs_program_compute(p, w, rng_unit(&g) * 1e-3, &e), XS_OK);
    } else if (kind <= 2) {
      char id[32];
      snprintf(id, sizeof id, "s\xc3\xb8%d", k);
      assert_int_equal(xs_program_send(p, w, floor(rng_unit(&g) * 1e6) / 3,
                                       rng_int(&g, 2) ? "l\xc3\xafnk" : NULL,
                                       rng_int(&g, 2) ? id : NULL, NULL, &e), XS_OK);
      sends++;
    } else if (kind == 3 && sends) {
      /* waits on earlier sends only: no cycles */
      assert_int_equal(xs_program_wait_send(p, w, (size_t)rng_int(&g, (int)sends), &e),
                       XS_OK);
    } else {
      assert_int_equal(xs_program_fence(p, w, &e), XS_OK);
    }
  }
  assert_int_equal(xs_program_send(p, 2, 5, NULL, NULL, NULL, &e), XS_OK);
  assert_int_equal(xs_program_wait_send(p, 0, sends, &e), XS_OK); /* longname#N */
  assert_int_equal(xs_program_finish(p, &e), XS_OK);
  program_roundtrip(p);
  /* what JSON cannot hold is refused where it comes in, or not written */
  assert_int_equal(xs_program_send(p, 0, 1, NULL, "id\xc3", NULL, &e), XS_INVALID);
  assert_non_null(strstr(e.message, "UTF-8"));
  assert_int_equal(xs_program_send(p, 0, 1, "ch\xff", NULL, NULL, &e), XS_INVALID);
  assert_int_equal(xs_program_wait(p, 0, "\xed\xa0\x80", &e), XS_INVALID); /* a surrogate */
  assert_int_equal(xs_program_add_worker(p, "\xc0\xaf", NULL, &e), XS_INVALID); /* overlong */
  xs_program_free(p);
  p = xs_program_new("\xff");
  assert_int_equal(xs_program_add_worker(p, "w", NULL, &e), XS_OK);
  assert_int_equal(xs_program_compute(p, 0, 1, &e), XS_OK);
  assert_int_equal(xs_program_finish(p, &e), XS_OK);
  assert_null(xs_program_to_json(p));
  xs_program_free(p);
}

static void test_samples(void **s) {
  (void)s;
  rng g = {11};
  xs_samples sm;
  memset(&sm, 0, sizeof sm);
  snprintf(sm.backend, sizeof sm.backend, "pipe \xc3\xa9");
  xs_sample rows[50];
  for (int k = 0; k < 50; k++)
    rows[k] = (xs_sample){floor(rng_unit(&g) * 1e7) + 1, rng_unit(&g) / 7, rng_unit(&g) / 3,
                          rng_unit(&g) / 1.5, (unsigned)rng_int(&g, 1000)};
  sm.rows = rows;
  sm.n = 50;
  char *t = xs_samples_to_csv(&sm, "a header\nof two lines");
  assert_non_null(t);
  xs_samples *q;
  xs_error e;
  assert_int_equal(xs_samples_parse_csv(t, strlen(t), "rt.csv", &q, &e), XS_OK);
  assert_string_equal(q->backend, sm.backend);
  assert_int_equal(q->n, sm.n);
  for (size_t k = 0; k < sm.n; k++)
    assert_true(q->rows[k].bytes == rows[k].bytes && q->rows[k].gap_s == rows[k].gap_s &&
                q->rows[k].issue_s == rows[k].issue_s &&
                q->rows[k].deliver_s == rows[k].deliver_s && q->rows[k].repeat == rows[k].repeat);
  xs_samples_free(q);
  free(t);
  /* a backend the reader would split or skip is not written */
  const char *bad[] = {"a,b", "a\nb", "#x", " x", "\xff"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    snprintf(sm.backend, sizeof sm.backend, "%s", bad[i]);
    assert_null(xs_samples_to_csv(&sm, NULL));
  }
  /* a backend longer than the field is cut at a character, not inside */
  char csv[4096];
  size_t n = (size_t)snprintf(csv, sizeof csv, "backend,bytes,gap_s,issue_s,deliver_s,repeat\n");
  for (int k = 1; k <= 4; k++)
    n += (size_t)snprintf(csv + n, sizeof csv - n,
                          "%s\xc3\xa9xyz,%d,0,%g,%g,0\n",
                          "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", k * 1000, k * 1e-6, k * 2e-6);
  assert_int_equal(xs_samples_parse_csv(csv, n, "cut.csv", &q, &e), XS_OK);
  assert_string_equal(q->backend, "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx");
  xs_samples_free(q);
  n = (size_t)snprintf(csv, sizeof csv, "backend,bytes,gap_s,issue_s,deliver_s,repeat\n"
                                         "p\xff,1,0,1,1,0\n");
  assert_int_equal(xs_samples_parse_csv(csv, n, "bad.csv", &q, &e), XS_PARSE);
  assert_non_null(strstr(e.message, "bad.csv:2: backend: the name is not UTF-8"));
  n = (size_t)snprintf(csv, sizeof csv, "backend,bytes,gap_s,issue_s,deliver_s,repeat\n"
                                         "p,1,0,1,1,1e12\n");
  assert_int_equal(xs_samples_parse_csv(csv, n, "bad.csv", &q, &e), XS_INVALID);
  assert_non_null(strstr(e.message, "bad.csv:2: repeat"));
}

static double num(json_t *o, const char *k) {
  json_t *v = json_object_get(o, k);
  assert_true(json_is_number(v));
  return json_number_value(v);
}

/* the report's numbers are the results' exactly */
static void test_report(void **s) {
  (void)s;
  const char *text =
      "{\"name\":\"r\\u00e9port\",\"workers\":[{\"name\":\"a\",\"ops\":[{\"send\":12345,\"id\":\"x\"},"
      "{\"compute\":3.3e-6},{\"send\":777,\"channel\":\"nvlink\"},{\"fence\":true}]},"
      "{\"name\":\"b\",\"ops\":[{\"compute\":1e-6},{\"send\":99999},{\"wait\":\"a#2\"}]}]}";
  xs_program *p;
  xs_profile *prof;
  xs_error e;
  assert_int_equal(xs_program_parse(text, strlen(text), "r", &p, &e), XS_OK);
  assert_int_equal(xs_profile_load("h200-nvlink", &prof, &e), XS_OK);
  xs_result *res[XS_MODEL_COUNT];
  for (int m = 0; m < XS_MODEL_COUNT; m++)
    assert_int_equal(xs_evaluate(p, prof, (xs_model)m, NULL, &res[m], &e), XS_OK);
  char *t = xs_report_json(p, prof, res, XS_MODEL_COUNT);
  assert_non_null(t);
  json_error_t je;
  json_t *root = json_loads(t, 0, &je);
  assert_non_null(root);
  assert_string_equal(json_string_value(json_object_get(root, "program")), "r\xc3\xa9port");
  for (int m = 0; m < XS_MODEL_COUNT; m++) {
    json_t *mo = json_object_get(json_object_get(root, "models"), xs_model_name((xs_model)m));
    assert_non_null(mo);
    assert_true(num(mo, "makespan_s") == res[m]->makespan_s);
    if (m >= XS_MODEL_SERIAL)
      continue;
    assert_true(num(mo, "issue_done_s") == res[m]->issue_done_s);
    json_t *ss = json_object_get(mo, "sends");
    assert_int_equal(json_array_size(ss), res[m]->nsends);
    for (size_t k = 0; k < res[m]->nsends; k++) {
      json_t *so = json_array_get(ss, k);
      const xs_send_result *r = &res[m]->sends[k];
      char buf[64];
      assert_string_equal(json_string_value(json_object_get(so, "id")),
                          xs_program_send_id(p, k, buf, sizeof buf));
      assert_true(num(so, "issue_start_s") == r->issue_start_s &&
                  num(so, "issue_end_s") == r->issue_end_s &&
                  num(so, "deliver_s") == r->deliver_s && num(so, "xstage_s") == r->xstage_s &&
                  num(so, "stall_s") == r->stall_s &&
                  num(so, "bytes") == xs_program_send_bytes(p, k));
    }
    json_t *ws = json_object_get(mo, "workers");
    for (size_t w = 0; w < res[m]->nworkers; w++)
      assert_true(num(json_array_get(ws, w), "finish_s") == res[m]->workers[w].finish_s &&
                  num(json_array_get(ws, w), "stall_s") == res[m]->workers[w].stall_s);
  }
  json_decref(root);
  free(t);
  for (int m = 0; m < XS_MODEL_COUNT; m++)
    xs_result_free(res[m]);
  xs_program_free(p);
  xs_profile_free(prof);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_profile), cmocka_unit_test(test_program),
                                     cmocka_unit_test(test_samples), cmocka_unit_test(test_report)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
