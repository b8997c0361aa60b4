/*
 * test_parse.c: every class of bad program and profile input is refused
 * with the right status and a message naming file, line, column and path.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xstage.h"

typedef struct {
  const char *text;
  xs_status status;
  const char *want; /* substring of the message */
} bad_case;

static void expect(xs_status got, const xs_error *e, const bad_case *c,
                   size_t i) {
  if (got != c->status || !strstr(e->message, c->want)) {
    fprintf(stderr, "case %zu: %s\n  status %d (want %d)\n  message: %s\n  want: %s\n",
            i, c->text, got, c->status, got ? e->message : "(none)", c->want);
    fail();
  }
}

#define W(ops) "{\"workers\":[{\"name\":\"w\",\"ops\":[" ops "]}]}"

static const bad_case bad_programs[] = {
    {"{\"workers\": [", XS_PARSE, "t.json:1:"},
    {"{\"workers\": [}", XS_PARSE, "t.json:1:14"},
    {"", XS_PARSE, "t.json:"},
    {"[]", XS_INVALID, "a program is an object"},
    {"{\"workers\": 5}", XS_INVALID, "t.json:1:13: workers: expected an array"},
    {"{\"workers\": []}", XS_INVALID, "no workers"},
    {"{\"workers\":[{\"name\":\"a\",\"ops\":[]}]}", XS_INVALID, "program is empty"},
    {"{\"workers\": [], \"workers\": []}", XS_PARSE, "duplicate"},
    {"{\"workers\":[], \"colour\": 1}", XS_INVALID, "unknown key \"colour\""},
    {W("{\"compute\": \"abc\"}"), XS_INVALID, "workers[0].ops[0].compute: expected a time in seconds, got a string"},
    {W("{\"send\": -5}"), XS_INVALID, "t.json:1:41: workers[0].ops[0].send: expected a size in bytes, got -5"},
    {W("{\"send\": 1e999}"), XS_PARSE, "overflow"},
    {W("{\"compute\": -1e-6}"), XS_INVALID, "must be >= 0"},
    {W("{\"sned\": 5}"), XS_INVALID, "unknown key \"sned\""},
    {W("{\"send\": 1, \"compute\": 2}"), XS_INVALID, "an op has one kind"},
    {W("{}"), XS_INVALID, "an op needs one of"},
    {W("3"), XS_INVALID, "an op is an object"},
    {W("{\"compute\": 1, \"id\": \"x\"}"), XS_INVALID, "\"id\" belongs to a send"},
    {W("{\"fence\": false}"), XS_INVALID, "expected true"},
    {W("{\"wait\": 7}"), XS_INVALID, "expected a string"},
    {W("{\"send\": 1, \"id\": \"a\"}, {\"send\": 2, \"id\": \"a\"}"), XS_INVALID, "workers[0].ops[1].id: duplicate send id \"a\""},
    {W("{\"wait\": \"nope\"}"), XS_INVALID, "wait on unknown send id \"nope\""},
    {W("{\"wait\": \"later\"}, {\"send\": 1, \"id\": \"later\"}"), XS_CYCLE, "w op 1 (send \"later\") -> w op 0 (wait \"later\")"},
    {"{\"workers\":[{\"name\":\"a\",\"ops\":[{\"wait\":\"y\"},{\"send\":1,\"id\":\"x\"}]},"
     "{\"name\":\"b\",\"ops\":[{\"wait\":\"x\"},{\"send\":1,\"id\":\"y\"}]}]}",
     XS_CYCLE, "waits form a cycle"},
    {"{\"workers\":[{\"name\":\"a\",\"ops\":[{\"send\":1}]},{\"name\":\"a\",\"ops\":[{\"send\":1}]}]}",
     XS_INVALID, "two workers are named \"a\""},
    {"{\"workers\":[{\"name\":\"a\",\"ops\":[{\"send\":1},{\"send\":1,\"id\":\"a#0\"}]}]}",
     XS_INVALID, "automatic id"},
    {"{\"name\": 3, \"workers\": []}", XS_INVALID, "expected a string"},
    {"{\"workers\":[{\"name\":\"a\"}]}", XS_INVALID, "missing \"ops\""},
};

static void test_bad_programs(void **s) {
  (void)s;
  for (size_t i = 0; i < sizeof bad_programs / sizeof *bad_programs; i++) {
    xs_program *p = NULL;
    xs_error e = {0};
    const bad_case *c = &bad_programs[i];
    xs_status st = xs_program_parse(c->text, strlen(c->text), "t.json", &p, &e);
    expect(st, &e, c, i);
    assert_null(p);
  }
}

static void test_position_multiline(void **s) {
  (void)s;
  const char *text = "{\n  \"workers\": [\n    {\"name\": \"w\", \"ops\": [\n"
                     "      {\"compute\": 1e-6},\n      {\"send\": -4}\n    ]}\n  ]\n}\n";
  xs_program *p;
  xs_error e;
  assert_int_equal(xs_program_parse(text, strlen(text), "m.json", &p, &e),
                   XS_INVALID);
  assert_non_null(strstr(e.message, "m.json:5:16: workers[0].ops[1].send"));
}

static void test_deep_nesting(void **s) {
  (void)s;
  size_t n = 100000;
  char *t = malloc(2 * n + 1);
  memset(t, '[', n);
  memset(t + n, ']', n);
  t[2 * n] = '\0';
  xs_program *p;
  xs_error e;
  assert_int_equal(xs_program_parse(t, 2 * n, "deep.json", &p, &e), XS_PARSE);
  assert_non_null(strstr(e.message, "deep.json:1:"));
  free(t);
}

static void test_unknown_channel(void **s) {
  (void)s;
  const char *text = W("{\"send\": 1, \"channel\": \"nvlnk\"}");
  xs_program *p;
  xs_profile *prof;
  xs_result *r;
  xs_error e;
  assert_int_equal(xs_program_parse(text, strlen(text), "c.json", &p, &e), XS_OK);
  assert_int_equal(xs_profile_load("h200-nvlink", &prof, &e), XS_OK);
  assert_int_equal(xs_evaluate(p, prof, XS_MODEL_BURSTGAP, NULL, &r, &e), XS_INVALID);
  assert_non_null(strstr(e.message, "c.json:1:55: workers[0].ops[0].channel: unknown channel \"nvlnk\""));
  assert_non_null(strstr(e.message, "has: hbm, nvlink"));
  xs_program_free(p);
  xs_profile_free(prof);
}

#define CH(body) "{\"name\":\"x\",\"channels\":{\"l\":{" body "}}}"
static const bad_case bad_profiles[] = {
    {"{\"name\": \"x\"", XS_PARSE, "p.json:1:"},
    {CH("\"inject_Bps\": 1e9, \"drain_Bps\": 0"), XS_INVALID, "channels.l.drain_Bps: expected a drain rate in bytes/s, got 0 (must be > 0)"},
    {CH("\"drain_Bps\": 1e9"), XS_INVALID, "missing \"inject_Bps\""},
    {CH("\"inject_Bps\": 1e9, \"drain_Bps\": 1e9, \"capacity_B\": -1"), XS_INVALID, "capacity_B"},
    {CH("\"inject_Bps\": 1e9, \"drain_Bps\": 1e9, \"latency_s\": \"2us\""), XS_INVALID, "latency_s: expected a latency in seconds, got a string"},
    {CH("\"inject_Bps\": 1e9, \"drain_Bps\": 1e9, \"capacity\": 5"), XS_INVALID, "unknown key \"capacity\""},
    {"{\"name\":\"x\",\"channels\":{}}", XS_INVALID, "non-empty object"},
    {"{\"name\":\"x\"}", XS_INVALID, "missing \"channels\""},
    {"{\"channels\":{\"l\":{\"inject_Bps\":1,\"drain_Bps\":1}}}", XS_INVALID, "missing \"name\""},
    {"{\"name\":\"x\",\"channels\":{\"l\":{\"inject_Bps\":1,\"drain_Bps\":1}},\"compute\":{\"efficiency\":2}}", XS_INVALID, "compute.efficiency"},
    {"{\"name\":\"x\",\"channels\":{\"l\":{\"inject_Bps\":1,\"drain_Bps\":1}},\"compute\":{\"sms\":1.5}}", XS_INVALID, "whole number"},
    {"{\"name\":\"x\",\"channels\":{\"l\":5}}", XS_INVALID, "channels.l: a channel is an object"},
};

static void test_bad_profiles(void **s) {
  (void)s;
  for (size_t i = 0; i < sizeof bad_profiles / sizeof *bad_profiles; i++) {
    xs_profile *p = NULL;
    xs_error e = {0};
    const bad_case *c = &bad_profiles[i];
    expect(xs_profile_parse(c->text, strlen(c->text), "p.json", &p, &e), &e, c, i);
    assert_null(p);
  }
}

static void test_good_profile_roundtrip(void **s) {
  (void)s;
  for (size_t i = 0; i < xs_builtin_profile_count(); i++) {
    xs_profile *p, *q;
    xs_error e;
    assert_int_equal(xs_profile_load(xs_builtin_profile_name(i), &p, &e), XS_OK);
    assert_non_null(strstr(xs_profile_source(p), "ead")); /* says "leads" */
    char *t = xs_profile_to_json(p);
    assert_int_equal(xs_profile_parse(t, strlen(t), "rt", &q, &e), XS_OK);
    assert_int_equal(xs_profile_channel_count(p), xs_profile_channel_count(q));
    const xs_channel *a = xs_profile_channel(p, 0), *b = xs_profile_channel(q, 0);
    assert_true(a->drain_Bps == b->drain_Bps && a->capacity_B == b->capacity_B);
    assert_true(xs_profile_flops_per_s(p, "bf16") == xs_profile_flops_per_s(q, "bf16"));
    free(t);
    xs_profile_free(p);
    xs_profile_free(q);
  }
  xs_profile *p;
  xs_error e;
  assert_int_equal(xs_profile_load("no-such-profile", &p, &e), XS_NOTFOUND);
  assert_non_null(strstr(e.message, "h200-nvlink"));
  const char *unb = "{\"name\":\"u\",\"channels\":{\"b\":{\"inject_Bps\":2,\"drain_Bps\":1,\"capacity_B\":null},\"a\":{\"inject_Bps\":2,\"drain_Bps\":1}}}";
  assert_int_equal(xs_profile_parse(unb, strlen(unb), "u", &p, &e), XS_OK);
  assert_string_equal(xs_profile_channel_name(p, 0), "a"); /* name order */
  assert_true(xs_profile_channel(p, 1)->capacity_B > 1e308);
  xs_profile_free(p);
}

/* Profiles of many entries: 20,000 channels given out of name order come
 * back in name order, 20,000 dtypes each with its own rate; a name given
 * twice is refused with its position; through the builder a dtype set
 * again is updated and a channel added again is refused. */
static void test_many_entries(void **s) {
  (void)s;
  enum { N = 20000 };
  size_t cap = 64 + (size_t)N * 160, n = 0;
  char *t = malloc(cap);
  assert_non_null(t);
  n += (size_t)snprintf(t + n, cap - n, "{\"name\":\"many\",\"channels\":{");
  for (int i = 0; i < N; i++) /* 7919 is prime: each index once, scrambled */
    n += (size_t)snprintf(t + n, cap - n,
                          "%s\"c%05d\":{\"inject_Bps\":%d,\"drain_Bps\":1}",
                          i ? "," : "", (int)((long)i * 7919 % N),
                          (int)((long)i * 7919 % N) + 1);
  n += (size_t)snprintf(t + n, cap - n, "},\"compute\":{\"sms\":1,\"flops_per_s\":{");
  for (int i = 0; i < N; i++)
    n += (size_t)snprintf(t + n, cap - n, "%s\"d%d\":%d", i ? "," : "", i, i + 1);
  n += (size_t)snprintf(t + n, cap - n, "}}}");
  assert_true(n < cap);
  xs_profile *p;
  xs_error e;
  assert_int_equal(xs_profile_parse(t, n, "many.json", &p, &e), XS_OK);
  assert_int_equal(xs_profile_channel_count(p), N);
  for (size_t i = 0; i < N; i++) {
    char want[16];
    snprintf(want, sizeof want, "c%05zu", i);
    assert_string_equal(xs_profile_channel_name(p, i), want);
    assert_true(xs_profile_channel(p, i)->inject_Bps == (double)i + 1);
  }
  assert_true(xs_profile_flops_per_s(p, "d0") == 1);
  assert_true(xs_profile_flops_per_s(p, "d12345") == 12346);
  assert_true(xs_profile_flops_per_s(p, "d20000") == 0);
  assert_int_equal(xs_profile_set_flops(p, "d7", 5, &e), XS_OK);
  assert_true(xs_profile_flops_per_s(p, "d7") == 5);
  xs_channel ch;
  xs_channel_init(&ch, 1, 1);
  assert_int_equal(xs_profile_add_channel(p, "c00042", &ch, &e), XS_INVALID);
  assert_non_null(strstr(e.message, "channel \"c00042\" is defined twice"));
  assert_int_equal(xs_profile_add_channel(p, "c", &ch, &e), XS_OK);
  assert_string_equal(xs_profile_channel_name(p, 0), "c");
  xs_profile_free(p);
  free(t);
  const char *dup_ch = "{\"name\":\"d\",\"channels\":{\"a\":{\"inject_Bps\":1,\"drain_Bps\":1},\n"
                       "\"a\":{\"inject_Bps\":1,\"drain_Bps\":1}}}";
  assert_int_equal(xs_profile_parse(dup_ch, strlen(dup_ch), "d.json", &p, &e), XS_PARSE);
  assert_non_null(strstr(e.message, "d.json:2:3: duplicate object key near '\"a\"'"));
  const char *dup_dt = "{\"name\":\"d\",\"channels\":{\"a\":{\"inject_Bps\":1,\"drain_Bps\":1}},"
                       "\"compute\":{\"sms\":1,\"flops_per_s\":{\"x\":1,\n\"x\":2}}}";
  assert_int_equal(xs_profile_parse(dup_dt, strlen(dup_dt), "d.json", &p, &e), XS_PARSE);
  assert_non_null(strstr(e.message, "d.json:2:3: duplicate object key near '\"x\"'"));
}

static void test_program_roundtrip(void **s) {
  (void)s;
  const char *text =
      "{\"name\":\"rt\",\"workers\":[{\"name\":\"a\",\"ops\":[{\"send\":10,\"id\":\"x\"},"
      "{\"compute\":1e-6},{\"send\":0,\"channel\":\"l\"},{\"fence\":true}]},"
      "{\"name\":\"b\",\"ops\":[{\"wait\":\"a#2\"},{\"wait\":\"x\"}]}]}";
  xs_program *p, *q;
  xs_error e;
  assert_int_equal(xs_program_parse(text, strlen(text), "rt", &p, &e), XS_OK);
  char *t = xs_program_to_json(p);
  assert_int_equal(xs_program_parse(t, strlen(t), "rt2", &q, &e), XS_OK);
  assert_int_equal(xs_program_send_count(q), 2);
  char buf[64];
  assert_string_equal(xs_program_send_id(q, 1, buf, sizeof buf), "a#2");
  xs_op_info op;
  xs_program_op(q, 1, 0, &op);
  assert_int_equal(op.kind, XS_OP_WAIT);
  assert_int_equal(op.send, 1);
  free(t);
  xs_program_free(p);
  xs_program_free(q);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_bad_programs),
      cmocka_unit_test(test_position_multiline),
      cmocka_unit_test(test_deep_nesting),
      cmocka_unit_test(test_unknown_channel),
      cmocka_unit_test(test_bad_profiles),
      cmocka_unit_test(test_good_profile_roundtrip),
      cmocka_unit_test(test_program_roundtrip),
      cmocka_unit_test(test_many_entries),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
