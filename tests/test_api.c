/*
 * test_api.c: the JSON documents the library makes for the command and
 * the bindings (xstage.h, "Results as JSON text") are the bytes `xstage
 * ... --json` prints, less the final newline; and their errors say what
 * was wrong.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testio.h"
#include "xstage.h"

/* "xstage ARGS" run from the source tree; its standard output, malloc'd */
static char *run(const char *args) {
  char *out;
  assert_int_equal(xs_test_cli(args, &out, NULL, 0), 0);
  assert_non_null(out);
  return out;
}

/* the command's output is the document and a newline */
static void same_document(const char *args, char *doc) {
  assert_non_null(doc);
  char *cli = run(args);
  size_t n = strlen(doc);
  if (strlen(cli) != n + 1 || memcmp(cli, doc, n) != 0 || cli[n] != '\n') {
    fprintf(stderr, "xstage %s: the output differs from the library's document\n", args);
    fail();
  }
  free(cli);
  xs_free(doc);
}

static char *read_text(const char *rel, size_t *len) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", XSTAGE_SRC, rel);
  char *text = xs_test_read_file(path, len);
  assert_non_null(text);
  return text;
}

static void test_plan_megamoe(void **s) {
  (void)s;
  xs_profile *prof;
  xs_error err;
  assert_int_equal(xs_profile_load("h200-nvlink", &prof, &err), XS_OK);
  xs_moe_config c;
  assert_int_equal(xs_moe_preset("glm", &c), 0);
  c.tokens = 512;
  char *doc;
  xs_moe_result r;
  assert_int_equal(xs_moe_plan_json(&c, prof, 0.01, 0, 0, &r, &doc, &err), XS_OK);
  assert_true(r.time_s[XS_MOE_INTERLEAVED][0] > 0);
  same_document("plan megamoe --preset glm --tokens 512 --profile h200-nvlink --json", doc);
  /* with the sensitivity, and choosing among two schedules */
  unsigned mask = 1u << XS_MOE_FUSED_WAVE | 1u << XS_MOE_FUSED_LAG;
  assert_int_equal(xs_moe_plan_json(&c, prof, 0.05, mask, 1, NULL, &doc, &err), XS_OK);
  same_document("plan megamoe --preset glm --tokens 512 --profile h200-nvlink --json "
                "--sensitivity --tolerance 5% --schedules fused-wave,fused-lag", doc);
  /* a knob table */
  double grid[] = {64, 128, 256};
  xs_moe_table_options to = {grid, 3, 0, 0, 0.01, 0};
  xs_moe_table *t;
  assert_int_equal(xs_moe_plan_table(&c, prof, &to, &t, &err), XS_OK);
  assert_int_equal(xs_moe_table_json(t, &c, prof, 0.01, &doc, &err), XS_OK);
  xs_moe_table_free(t);
  same_document("plan megamoe --preset glm --profile h200-nvlink --json "
                "--tokens-grid 64,128,256", doc);
  /* a profile without a compute section: the planner's message */
  xs_profile *bare = xs_profile_new("bare", "test");
  xs_channel ch;
  xs_channel_init(&ch, 1e9, 1e9);
  assert_int_equal(xs_profile_add_channel(bare, "link", &ch, &err), XS_OK);
  doc = (char *)1;
  assert_int_not_equal(xs_moe_plan_json(&c, bare, 0.01, 0, 0, NULL, &doc, &err), XS_OK);
  assert_null(doc);
  assert_true(strlen(err.message) > 0);
  xs_profile_free(bare);
  xs_profile_free(prof);
}

static void test_plan_flashattn(void **s) {
  (void)s;
  xs_profile *prof;
  xs_error err;
  assert_int_equal(xs_profile_load("h100-nvlink", &prof, &err), XS_OK);
  xs_fa_config c;
  assert_int_equal(xs_fa_preset("llama3-8b", &c), 0);
  char *doc;
  assert_int_equal(xs_fa_plan_json(&c, prof, NULL, &doc, &err), XS_OK);
  same_document("plan flashattn --preset llama3-8b --profile h100-nvlink --json", doc);
  /* with the sensitivity: the same document, and the choice and its rows */
  c.seq = 2048;
  assert_int_equal(xs_fa_plan_sensitivity_json(&c, prof, 0.02, NULL, &doc, &err), XS_OK);
  assert_non_null(strstr(doc, "\"sensitivity\""));
  same_document("plan flashattn --preset llama3-8b --profile h100-nvlink --seq 2048 --json "
                "--sensitivity --tolerance 2%", doc);
  c.seq = 16384;
  double seq[] = {4096, 8192, 16384};
  xs_fa_table_row rows[3];
  size_t changes;
  assert_int_equal(xs_fa_table(&c, prof, seq, 3, 0.01, rows, &changes, &err), XS_OK);
  assert_int_equal(xs_fa_table_json(&c, prof, rows, 3, 0.01, &doc, &err), XS_OK);
  same_document("plan flashattn --preset llama3-8b --profile h100-nvlink --json "
                "--seq-grid 4096,8192,16384", doc);
  xs_profile_free(prof);
}

static void test_sweeps(void **s) {
  (void)s;
  xs_profile *prof;
  xs_error err;
  assert_int_equal(xs_profile_load("h200-nvlink", &prof, &err), XS_OK);
  const char *grid = "{\"presets\": [\"glm\"], \"tokens\": [64, 1024], \"ep\": [8]}";
  char path[64], args[160];
  snprintf(path, sizeof path, "/tmp/xstage-api-grid-%d.json", (int)getpid());
  snprintf(args, sizeof args, "sweep megamoe --profile h200-nvlink --json --grid %s", path);
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(grid, f);
  fclose(f);
  xs_moe_config *mc;
  size_t n;
  assert_int_equal(xs_moe_sweep_grid(grid, strlen(grid), "g.json", &mc, &n, &err), XS_OK);
  assert_int_equal(n, 2);
  char *doc;
  assert_int_equal(xs_moe_sweep_json(prof, mc, n, NULL, &doc, &err), XS_OK);
  xs_free(mc);
  same_document(args, doc);
  remove(path);
  /* the default attention grid */
  xs_fa_config *fc;
  assert_int_equal(xs_fa_sweep_grid(NULL, 0, NULL, &fc, &n, &err), XS_OK);
  assert_int_equal(n, 90);
  assert_int_equal(xs_fa_sweep_json(prof, fc, n, NULL, &doc, &err), XS_OK);
  xs_free(fc);
  same_document("sweep flashattn --profile h200-nvlink --json", doc);
  /* a grid's errors name the file, the line and column, and the entry */
  const char *bad = "{\"presets\": [\"glm\", \"nope\"]}";
  assert_int_equal(xs_moe_sweep_grid(bad, strlen(bad), "g.json", &mc, &n, &err),
                   XS_INVALID);
  assert_null(mc);
  assert_string_equal(err.message, "g.json:1:21: presets[1]: not a preset name");
  const char *badfa = "{\"cp\": [8],\n \"causal\": [true, 1]}";
  assert_int_equal(xs_fa_sweep_grid(badfa, strlen(badfa), "f.json", &fc, &n, &err),
                   XS_INVALID);
  assert_string_equal(err.message, "f.json:2:19: causal[1]: expected true or false");
  const char *broken = "{\"seq\": [4096,]}";
  assert_int_equal(xs_fa_sweep_grid(broken, strlen(broken), "g.json", &fc, &n, &err),
                   XS_PARSE);
  assert_non_null(strstr(err.message, "g.json:1:"));
  xs_profile_free(prof);
}

static void test_validate(void **s) {
  (void)s;
  const char *files[] = {"data/published/megamoe.csv", "data/published/ring-attention.csv"};
  for (int k = 0; k < 2; k++) {
    size_t len;
    char *text = read_text(files[k], &len);
    xs_validate_set set;
    xs_error err;
    assert_int_equal((k ? xs_validate_flashattn : xs_validate_megamoe)(
                         text, len, files[k], &set, NULL, NULL, &err),
                     XS_OK);
    free(text);
    char *doc, args[256];
    assert_int_equal(xs_validate_json(&set, &doc, &err), XS_OK);
    xs_validate_free(&set);
    snprintf(args, sizeof args, "validate %s --data %s --json",
             k ? "flashattn" : "megamoe", files[k]);
    same_document(args, doc);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_plan_megamoe), cmocka_unit_test(test_plan_flashattn),
      cmocka_unit_test(test_sweeps), cmocka_unit_test(test_validate)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
