/*
 * test_names.c: names and generated C headers. A header prefix makes
 * names no other prefix and no C library header makes; a header gets C
 * constants or nothing; a name cut to fit a buffer is cut between
 * characters, so that it stays UTF-8 and every JSON document holding it
 * is written.
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
#include <unistd.h>

#include "testio.h"
#include "testutil.h"
#include "xstage.h"

/* well-formed UTF-8, by jansson, which refuses anything else */
static int is_utf8(const char *s) {
  json_t *v = json_string(s);
  json_decref(v);
  return v != NULL;
}


/* Prefixes refused, each with a word of why, and accepted ones; the
 * accepted ones' capitals are all different, so two headers never share a
 * guard. */
static void test_header_prefix(void **s) {
  (void)s;
  static const struct {
    const char *prefix, *why;
  } bad[] = {{"", "not a C identifier"},
             {"9x", "not a C identifier"},
             {"a-b", "not a C identifier"},
             {"_stdio", "underscore"},
             {"_STDIO", "underscore"},
             {"__x", "underscore"},
             {"MOE", "capitals"},
             {"Moe", "capitals"},
             {"xstage_MOE", "capitals"},
             {"eabc", "errno.h"},
             {"e2", "errno.h"},
             {"sigterm", "signal.h"},
             {"sig_x", "signal.h"},
             {"lc_x", "locale.h"},
             {"fe_x", "fenv.h"},
             {"atomic_x", "stdatomic.h"},
             {"time_x", "time.h"},
             {"prix", "inttypes.h"},
             {"isdigitx", "ctype.h"},
             {"tox", "ctype.h"},
             {"strx", "string.h"},
             {"memx", "string.h"},
             {"wcsx", "wchar.h"},
             {"mtx_x", "threads.h"},
             {"thrd_x", "threads.h"}};
  xs_error e;
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    if (xs_c_header_prefix(bad[i].prefix, &e) != XS_INVALID || !strstr(e.message, bad[i].why))
      fail_msg("prefix \"%s\": %s (want \"%s\")", bad[i].prefix, e.message, bad[i].why);
  }
  const char *good[] = {"xstage_moe", "xstage_ring", "moe", "e_x", "is_x", "mem_x",
                        "sig", "s1", "knobs64", "lcx", "timex"};
  for (size_t i = 0; i < sizeof good / sizeof *good; i++)
    if (xs_c_header_prefix(good[i], &e))
      fail_msg("prefix \"%s\": %s", good[i], e.message);
  /* a 64-character prefix is the longest */
  char longest[70];
  memset(longest, 'a', 65);
  longest[64] = 0;
  assert_int_equal(xs_c_header_prefix(longest, &e), XS_OK);
  longest[64] = 'a';
  longest[65] = 0;
  assert_int_equal(xs_c_header_prefix(longest, &e), XS_INVALID);
  /* the header writers refuse what the check refuses */
  xs_profile *prof = xs_test_profile("h800-nvlink");
  xs_moe_config c;
  xs_moe_preset("glm", &c);
  double grid[1] = {64};
  xs_moe_table_options o = {grid, 1, 0, 0, 0.01, 0};
  xs_moe_table *t;
  assert_int_equal(xs_moe_plan_table(&c, prof, &o, &t, &e), XS_OK);
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
    assert_null(xs_moe_table_header(t, NULL, NULL, bad[i].prefix, NULL));
  char *h = xs_moe_table_header(t, NULL, NULL, "e_x", NULL);
  assert_non_null(h);
  assert_non_null(strstr(h, "#ifndef E_X_H"));
  free(h);
  xs_moe_table_free(t);
  xs_profile_free(prof);
}

/* A ring table's rows come from the caller: a header gets C constants
 * (no inf, nan, negative or huge whole numbers) or is refused. */
static void test_header_values(void **s) {
  (void)s;
  xs_profile *prof = xs_test_profile("h100-nvlink");
  xs_fa_config c;
  xs_fa_preset("llama3-8b", &c);
  double seq[2] = {4096, 8192};
  xs_fa_table_row rows[2];
  xs_error e;
  assert_int_equal(xs_fa_table(&c, prof, seq, 2, 0.01, rows, NULL, &e), XS_OK);
  char *h = xs_fa_table_header(&c, prof, rows, 2, 0.01, "ring");
  assert_non_null(h);
  assert_null(strstr(h, "inf"));
  free(h);
  const double times[] = {INFINITY, -INFINITY, NAN};
  for (size_t i = 0; i < 3; i++) {
    xs_fa_table_row bad[2] = {rows[0], rows[1]};
    bad[1].chosen.time_s = times[i];
    assert_null(xs_fa_table_header(&c, prof, bad, 2, 0.01, "ring"));
  }
  const double seqs[] = {-1, 1.5, 1e20, INFINITY, NAN};
  for (size_t i = 0; i < 5; i++) {
    xs_fa_table_row bad[2] = {rows[0], rows[1]};
    bad[1].seq = seqs[i];
    assert_null(xs_fa_table_header(&c, prof, bad, 2, 0.01, "ring"));
  }
  xs_fa_table_row bad[2] = {rows[0], rows[1]};
  bad[0].chosen.path = (xs_fa_path)99;
  assert_null(xs_fa_table_header(&c, prof, bad, 2, 0.01, "ring"));
  /* a kernel name cannot end the header's comment: one that is no
   * kernel is refused, and the header names the kernel the GPU runs */
  xs_fa_config k = c;
  snprintf(k.kernel, sizeof k.kernel, "*/x");
  assert_null(xs_fa_table_header(&k, prof, rows, 2, 0.01, "ring"));
  h = xs_fa_table_header(&c, prof, rows, 2, 0.01, "ring");
  assert_non_null(h);
  assert_non_null(strstr(h, "fa3 forward"));
  free(h);
  xs_profile_free(prof);
}

/* A config name longer than a config holds is cut between characters:
 * each prefix of a name of two-byte characters (and one of a four-byte
 * one) stays UTF-8 in the config, the plan's JSON and its program. */
static void test_config_names(void **s) {
  (void)s;
  xs_profile *prof = xs_test_profile("h800-nvlink");
  const char *chars[] = {"\xc3\xa9", "\xf0\x9f\x98\x80"};
  for (size_t k = 0; k < 2; k++)
    for (size_t n = 28; n <= 36; n++) {
      char name[256] = "", text[512];
      for (size_t i = 0; i < n; i++)
        strcat(name, i % 5 == 4 ? "a" : chars[k]);
      snprintf(text, sizeof text, "{\"preset\": \"glm\", \"tokens\": 64, \"name\": \"%s\"}", name);
      xs_moe_config c;
      xs_error e;
      assert_int_equal(xs_moe_config_parse(text, strlen(text), "c.json", &c, &e), XS_OK);
      if (!is_utf8(c.name) || strncmp(c.name, name, strlen(c.name)) ||
          strlen(name) - strlen(c.name) > (strlen(name) > 63 ? strlen(name) - 60 : 0))
        fail_msg("name of %zu characters: config holds \"%s\"", n, c.name);
      char *js;
      if (xs_moe_plan_json(&c, prof, 0.01, 0, 0, NULL, &js, &e))
        fail_msg("name of %zu characters: %s", n, e.message);
      free(js);
      xs_program *p;
      if (xs_moe_program(&c, prof, XS_MOE_FUSED_SPLIT, NULL, &p, &e))
        fail_msg("%s", e.message);
      assert_true(is_utf8(xs_program_name(p)));
      char *pj = xs_program_to_json(p);
      assert_non_null(pj);
      free(pj);
      xs_program_free(p);
    }
  xs_profile_free(prof);
}

/* Long names whole where they are written out (a trace's events, its
 * X-stage spans and backlog counters: they were cut at 300 and 512 bytes
 * and, cut inside a character, left out), and cut between characters
 * where a buffer is given. */
static void test_long_ids(void **s) {
  (void)s;
  char wname[700] = "", id[500] = "", chan[400] = "";
  for (int i = 0; i < 300; i++)
    strcat(wname, "\xc3\xa9");
  for (int i = 0; i < 100; i++)
    strcat(id, "\xe2\x82\xac"); /* 3-byte characters */
  for (int i = 0; i < 90; i++)
    strcat(chan, "c\xc3\xa9");
  xs_error e;
  xs_channel ch;
  xs_channel_init(&ch, 2e11, 1e11);
  ch.capacity_B = 1 << 16;
  xs_profile *prof = xs_profile_new("long", "test");
  assert_int_equal(xs_profile_add_channel(prof, chan, &ch, &e), XS_OK);
  xs_program *p = xs_program_new("long names");
  size_t w;
  assert_int_equal(xs_program_add_worker(p, wname, &w, &e), XS_OK);
  assert_int_equal(xs_program_send(p, w, 1e6, NULL, NULL, NULL, &e), XS_OK);
  assert_int_equal(xs_program_send(p, w, 1e6, NULL, id, NULL, &e), XS_OK);
  assert_int_equal(xs_program_finish(p, &e), XS_OK);
  /* into a short buffer: a prefix, whole characters */
  char small[64];
  const char *cut = xs_program_send_id(p, 0, small, sizeof small);
  assert_true(is_utf8(cut) && strlen(cut) >= 61 && !strncmp(cut, wname, strlen(cut)));
  xs_timeline *tl = xs_timeline_new();
  xs_eval_options o = {0, 0, NULL, tl};
  xs_result *r;
  assert_int_equal(xs_evaluate(p, prof, XS_MODEL_BURSTGAP, &o, &r, &e), XS_OK);
  char *trace = xs_timeline_trace_json(p, prof, r, tl);
  assert_non_null(trace);
  json_error_t je;
  json_t *doc = json_loads(trace, 0, &je), *ev = json_object_get(doc, "traceEvents");
  char want[2][1100], backlog[600];
  snprintf(want[0], sizeof want[0], "X-stage %s#0", wname);
  snprintf(want[1], sizeof want[1], "X-stage %s", id);
  snprintf(backlog, sizeof backlog, "backlog %s (bytes)", chan);
  size_t spans[2] = {0, 0}, counters = 0, slices = 0;
  for (size_t i = 0; i < json_array_size(ev); i++) {
    json_t *x = json_array_get(ev, i);
    const char *name = json_string_value(json_object_get(x, "name"));
    for (int k = 0; k < 2; k++)
      spans[k] += !strcmp(name, want[k]);
    counters += !strcmp(name, backlog);
    json_t *send = json_object_get(json_object_get(x, "args"), "send");
    slices += send && !strcmp(json_string_value(send), want[0] + 8);
  }
  if (spans[0] != 2 || spans[1] != 2 || !counters || !slices)
    fail_msg("X-stage begin and end events %zu and %zu (want 2 each), backlog "
             "counters %zu, slices of the first send %zu", spans[0], spans[1], counters,
             slices);
  json_decref(doc);
  free(trace);
  xs_result_free(r);
  xs_timeline_free(tl);
  xs_program_free(p);
  xs_profile_free(prof);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_header_prefix),
                                     cmocka_unit_test(test_header_values),
                                     cmocka_unit_test(test_config_names),
                                     cmocka_unit_test(test_long_ids)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
