/*
 * test_cli.c: the xstage command as a user runs it: exit codes (0, 1, 2),
 * messages on bad flags and files, --help everywhere, and the JSON report of
 * predict checked against the library's own evaluation.
 */
#define _XOPEN_SOURCE 700 /* POSIX.1-2008 with mknod */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include "testio.h"
#include "xstage_measure.h"

static char out_buf[1 << 22], err_buf[1 << 16], saved[1 << 22];

/* Run "xstage ARGS" through the shell; stdout (its first 4 MiB) and stderr
 * captured. */
static int run(const char *args) {
  return xs_test_cli_buf(args, out_buf, sizeof out_buf, err_buf, sizeof err_buf);
}

static void expect_rc(const char *args, int rc, const char *in_stderr) {
  int got = run(args);
  if (got != rc || (in_stderr && !strstr(err_buf, in_stderr))) {
    fprintf(stderr, "xstage %s: exit %d (want %d)\nstderr: %s\nwant: %s\n",
            args, got, rc, err_buf, in_stderr ? in_stderr : "");
    fail();
  }
}

/* a command with one path in it, which must succeed */
static void expect_ok_with(const char *fmt, const char *path) {
  char args[512];
  snprintf(args, sizeof args, fmt, path);
  expect_rc(args, 0, NULL);
}

/* whether the output holds a text with one path in it */
static int output_has(const char *fmt, const char *path) {
  char want[512];
  snprintf(want, sizeof want, fmt, path);
  return strstr(out_buf, want) != NULL;
}

/* ---- --csv ---- */

/* the next CSV record of *p split into cells (RFC 4180: quoted cells,
 * doubled quotes), in place; the count, 0 at the end */
static size_t csv_record(char **p, char **cells, size_t max) {
  char *s = *p, *w;
  size_t n = 0;
  if (!*s)
    return 0;
  for (;;) {
    char *cell = w = s;
    if (*s == '"') {
      for (s++; *s && !(*s == '"' && s[1] != '"'); s++) {
        if (*s == '"')
          s++; /* a doubled quote */
        *w++ = *s;
      }
      if (*s == '"')
        s++;
    } else {
      while (*s && *s != ',' && *s != '\n')
        *w++ = *s++;
    }
    char end = *s;
    *w = '\0';
    if (n < max)
      cells[n++] = cell;
    if (end == ',') {
      s++;
      continue;
    }
    *p = end ? s + 1 : s;
    return n;
  }
}

/* the column of a header, or -1 */
static int csv_col(char **head, size_t n, const char *name) {
  for (size_t i = 0; i < n; i++)
    if (!strcmp(head[i], name))
      return (int)i;
  return -1;
}

/* --csv against --json, the second way to read the same document: every
 * row of it, every number read back exactly (the fewest digits that do),
 * the recommended schedule marked once, a call's Python whole, a cell with
 * commas quoted; --json and --csv together refused */
static void test_csv(void **st) {
  (void)st;
  static char *head[128], *cells[128];
  json_error_t je;
  /* plan megamoe: a line a schedule */
  expect_rc("plan megamoe --preset deepseek-v3 --profile h200-nvlink --tokens 64 --json", 0,
            NULL);
  json_t *doc = json_loads(out_buf, 0, &je);
  assert_non_null(doc);
  expect_rc("plan megamoe --preset deepseek-v3 --profile h200-nvlink --tokens 64 --csv", 0,
            NULL);
  char *p = out_buf;
  size_t nh = csv_record(&p, head, 128), n, rows = 0, marked = 0;
  int c_s = csv_col(head, nh, "schedule"), c_t = csv_col(head, nh, "burstgap_s");
  int c_r = csv_col(head, nh, "recommended"), c_c = csv_col(head, nh, "kernel.calls");
  int c_n = csv_col(head, nh, "kernel.name"), c_l = csv_col(head, nh, "knobs.lag");
  assert_true(c_s == 0 && c_r == 1 && c_t > 0 && c_c > 0 && c_n > 0 && c_l > 0);
  const char *chosen = json_string_value(
      json_object_get(json_object_get(json_object_get(doc, "recommended"), "chosen"),
                      "schedule"));
  while ((n = csv_record(&p, cells, 128))) {
    assert_int_equal(n, nh);
    json_t *sc = json_object_get(json_object_get(doc, "schedules"), cells[c_s]);
    assert_non_null(sc);
    double t = json_real_value(json_object_get(sc, "burstgap_s"));
    if (strtod(cells[c_t], NULL) != t)
      fprintf(stderr, "%s: csv %s, json %.17g\n", cells[c_s], cells[c_t], t);
    assert_true(strtod(cells[c_t], NULL) == t);
    assert_string_equal(cells[c_n], json_string_value(json_object_get(
                                        json_object_get(sc, "kernel"), "name")));
    json_t *calls = json_object_get(json_object_get(sc, "kernel"), "calls");
    assert_non_null(strstr(cells[c_c], json_string_value(json_object_get(
                                           json_array_get(calls, 0), "python"))));
    /* a knob the kernel lacks is an empty cell, never a sentinel */
    json_t *lag = json_object_get(json_object_get(sc, "knobs"), "lag");
    if (lag)
      assert_int_equal(atoi(cells[c_l]), json_integer_value(lag));
    else
      assert_string_equal(cells[c_l], "");
    int rec = !strcmp(cells[c_r], "true");
    assert_int_equal(rec, !strcmp(cells[c_s], chosen));
    marked += (size_t)rec;
    rows++;
  }
  assert_int_equal(rows, json_object_size(json_object_get(doc, "schedules")));
  assert_int_equal(marked, 1);
  json_decref(doc);
  /* validate megamoe: a line a row */
  expect_rc("validate megamoe --data data/published/megamoe.csv --json", 0, NULL);
  doc = json_loads(out_buf, 0, &je);
  assert_non_null(doc);
  expect_rc("validate megamoe --data data/published/megamoe.csv --csv", 0, NULL);
  p = out_buf;
  nh = csv_record(&p, head, 128);
  int v_s = csv_col(head, nh, "source"), v_p = csv_col(head, nh, "predicted_us");
  assert_true(v_s >= 0 && v_p >= 0);
  json_t *jrows = json_object_get(doc, "rows");
  for (rows = 0; (n = csv_record(&p, cells, 128)); rows++) {
    json_t *r = json_array_get(jrows, rows);
    assert_non_null(r);
    assert_string_equal(cells[v_s], json_string_value(json_object_get(r, "source")));
    assert_true(strtod(cells[v_p], NULL) ==
                json_real_value(json_object_get(r, "predicted_us")));
  }
  assert_int_equal(rows, json_array_size(jrows));
  json_decref(doc);
  /* validate ep: its source cells hold commas, so they are quoted */
  expect_rc("validate ep --data data/published/ep.csv --csv", 0, NULL);
  assert_non_null(strstr(out_buf, "\n\"deepseek-ai/DeepEP README.md@ebfe47e (2025-02-24, "));
  p = out_buf;
  csv_record(&p, head, 128);
  for (rows = 0; csv_record(&p, cells, 128); rows++)
    ;
  assert_int_equal(rows, 325);
  expect_rc("plan megamoe --preset glm --profile h200-nvlink --json --csv", 2, "exclude");
  expect_rc("validate ep --data data/published/ep.csv --json --csv", 2, "exclude");
  expect_rc("plan megamoe --preset glm --profile h200-nvlink --csv --sensitivity", 2,
            "--sensitivity");
}

/* Counts with suffixes, geometric grids, whole numbers as JSON integers,
 * a negative imbalance refused, residues printed as the 0 they are: each
 * against a second way to write the same thing. */
static void same_output(const char *a, const char *b) {
  expect_rc(a, 0, NULL);
  snprintf(saved, sizeof saved, "%s", out_buf);
  expect_rc(b, 0, NULL);
  if (strcmp(saved, out_buf)) {
    fprintf(stderr, "xstage %s\nand xstage %s\ndiffer\n", a, b);
    fail();
  }
}

static void test_counts_and_grids(void **s) {
  (void)s;
  const char *p = "plan megamoe --preset glm --profile h800-nvlink ";
  char a[512], b[512];
  snprintf(a, sizeof a, "%s--tokens 4Ki --json", p);
  snprintf(b, sizeof b, "%s--tokens 4096 --json", p);
  same_output(a, b);
  assert_non_null(strstr(out_buf, "\"tokens\": 4096,"));
  assert_non_null(strstr(out_buf, "\"ep\": 8,"));
  snprintf(a, sizeof a, "%s--tokens 2k --ep 8", p);
  snprintf(b, sizeof b, "%s--tokens 2000 --ep 8", p);
  same_output(a, b);
  snprintf(a, sizeof a, "%s--tokens-grid 16:8Ki:x2 --json", p);
  snprintf(b, sizeof b, "%s--tokens-grid 16,32,64,128,256,512,1024,2048,4096,8192 --json", p);
  same_output(a, b);
  /* rounded to whole tokens, a repeat kept once */
  snprintf(a, sizeof a, "%s--tokens-grid 16:100:x1.5,1000:1200:x1.01 --json", p);
  snprintf(b, sizeof b, "%s--tokens-grid 16,24,36,54,81,1000,1010,1020,1030,1041,1051,"
                        "1062,1072,1083,1094,1105,1116,1127,1138,1149,1161,1173,1184,1196 "
                        "--json", p);
  same_output(a, b);
  snprintf(a, sizeof a, "%s--tokens-range 64:1Ki --json", p);
  snprintf(b, sizeof b, "%s--tokens-range 64:1024 --json", p);
  same_output(a, b);
  same_output("plan flashattn --preset llama3-8b --profile h100-nvlink --seq 8Ki --cp 8",
              "plan flashattn --preset llama3-8b --profile h100-nvlink --seq 8192 --cp 8");
  same_output("demo --sms 1Ki --waves 2", "demo --sms 1024 --waves 2");
  /* refusals: the flag, what it takes, where the text went wrong */
  static const char *const refused[][2] = {
      {"--tokens 1.5", "--tokens: expected a whole number from 1 to 10000000, with an "
                       "optional k"},
      {"--tokens 4kB", "got \"4kB\""},
      {"--tokens -4k", "--tokens:"},
      {"--tokens-grid 16:8192:x1", "at character 10 of \"16:8192:x1\": expected a factor"},
      {"--tokens-grid 16:8192:x", "expected a factor"},
      {"--tokens-grid 16:2.5:x2", "at character 4 of"},
      {"--tokens-grid 1:512Mi:x1.0001", "more than 4096 grid points"},
      {"--tokens-range 4Ki:64", "runs backwards"}};
  for (size_t i = 0; i < sizeof refused / sizeof *refused; i++) {
    snprintf(a, sizeof a, "%s%s", p, refused[i][0]);
    expect_rc(a, 2, refused[i][1]);
  }
  expect_rc("plan flashattn --preset llama3-8b --profile h100-nvlink --seq 8192.5", 2,
            "--seq: expected a whole number");
  expect_rc("demo --sms 0", 2, "--sms: expected a whole number from 1 to 100000");
  expect_rc("probe pipe --sizes 2.5", 2, "--sizes: expected a whole number from 1 to 1000");
  /* a negative imbalance is refused where the config names it */
  char cfg[64];
  snprintf(cfg, sizeof cfg, "/tmp/xstage-imbalance-%d.json", (int)getpid());
  FILE *f = fopen(cfg, "w");
  assert_non_null(f);
  fputs("{\"preset\": \"glm\",\n \"imbalance\": -1}\n", f);
  fclose(f);
  char cmd[256];
  snprintf(cmd, sizeof cmd, "plan megamoe --config %s --profile h800-nvlink", cfg);
  snprintf(a, sizeof a, "%s:2:15: imbalance:", cfg);
  expect_rc(cmd, 2, a);
  unlink(cfg);
  /* residues of subtractions print as 0, never as "1.22e-08 ns" */
  const char *reports[] = {
      "plan flashattn --preset llama3-8b --profile h100-nvlink",
      "plan flashattn --preset llama3-8b --profile h100-nvlink --full",
      "plan flashattn --preset mha --profile h200-nvlink --seq 4096",
      "predict --program examples/hol.json --profile h200-nvlink"};
  for (size_t i = 0; i < sizeof reports / sizeof *reports; i++) {
    expect_rc(reports[i], 0, NULL);
    const char *e = strstr(out_buf, "e-");
    for (; e; e = strstr(e + 1, "e-"))
      if (e > out_buf && e[-1] >= '0' && e[-1] <= '9') {
        fprintf(stderr, "xstage %s prints a residue: ...%.40s\n", reports[i], e - 8);
        fail();
      }
  }
}

static void test_help(void **s) {
  (void)s;
  const char *cmds[] = {"--help", "predict --help", "profiles --help",
                        "demo --help", "help predict", "simulate --help",
                        "plan --help", "sweep --help", "plan megamoe --help",
                        "probe --help", "fit --help", "calibrate --help", "replay --help",
                        "profiles show --help", "plan flashattn --help", "sweep megamoe --help", "validate --help", "validate megamoe --help", "validate flashattn --help",
                        "sweep flashattn --help"};
  for (size_t i = 0; i < sizeof cmds / sizeof *cmds; i++) {
    expect_rc(cmds[i], 0, NULL);
    assert_non_null(strstr(out_buf, "usage:"));
  }
  expect_rc("--version", 0, NULL);
  assert_non_null(strstr(out_buf, XSTAGE_VERSION));
  assert_non_null(strstr(out_buf, "backends"));
}

static void test_bad_flags(void **s) {
  (void)s;
  expect_rc("", 2, "usage");
  expect_rc("frobnicate", 2, "unknown command \"frobnicate\"");
  expect_rc("predict --profile h200-nvlink --program examples/two-bursts.json --colour",
            2, "--colour");
  expect_rc("predict --program examples/two-bursts.json", 2, "--profile is required");
  expect_rc("predict --profile h200-nvlink", 2, "--program is required");
  expect_rc("predict --profile h200-nvlink --program examples/two-bursts.json --model fast",
            2, "unknown model \"fast\"");
  expect_rc("predict --profile nope --program examples/two-bursts.json", 2,
            "unknown profile \"nope\"");
  expect_rc("predict --profile h200-nvlink --program /no/such/file.json", 2,
            "/no/such/file.json: cannot open");
  expect_rc("predict --profile h200-nvlink --program /tmp", 2, "/tmp");
  expect_rc("predict --profile h200-nvlink --program examples/two-bursts.json extra",
            2, "unexpected argument");
  expect_rc("demo --sms 0", 2, "--sms");
  expect_rc("demo --compute 5parsecs", 2, "bad time");
  expect_rc("demo --tile-bytes -3", 2, "bad size");
  expect_rc("profiles show", 2, "show takes one");
  expect_rc("simulate --profile h200-nvlink --program examples/hol.json --arbitration lottery",
            2, "expected rr or fifo");
  expect_rc("simulate --profile h200-nvlink --program examples/hol.json --packet-bytes 0",
            2, "at least 1 byte");
  expect_rc("simulate --profile h200-nvlink --program examples/hol.json --packet-bytes 12XB",
            2, "bad size");
  expect_rc("simulate --program examples/hol.json", 2, "--profile is required");
  expect_rc("simulate --profile h200-nvlink --program examples/hol.json --svg /no/such/dir/x.svg",
            2, "/no/such/dir/x.svg: cannot create");
  expect_rc("profiles fly", 2, "unknown subcommand");
  expect_rc("profiles show tests/data/sms-too-large.json", 2,
            "compute.sms: expected a number of SMs, got 4294967296 (too large");
  expect_rc("demo --emit-program ''", 2, "an output path is empty");
  expect_rc("predict --profile h200-nvlink --program examples/hol.json --svg ''", 2,
            "an output path is empty");
  expect_rc("sweep megamoe --profile h200-nvlink --grid tests/data/array-grid.json", 2,
            "a grid is an object of presets, tokens and ep, not an array");
  /* "a#00" is an id of its own, not the automatic "a#0" */
  expect_rc("predict --profile h200-nvlink --program tests/data/leading-zero-id.json --json",
            0, NULL);
  assert_non_null(strstr(out_buf, "\"id\": \"a#0\""));
  assert_non_null(strstr(out_buf, "\"id\": \"a#00\""));
  /* names are printed with their control characters escaped */
  expect_rc("predict --profile h200-nvlink --program tests/data/escape-names.json", 0, NULL);
  assert_non_null(strstr(out_buf, "evil\\x1b[31mred\\x07"));
  assert_null(strchr(out_buf, '\x1b'));
  expect_rc("simulate --profile h200-nvlink --program tests/data/escape-names.json", 0, NULL);
  assert_null(strchr(out_buf, '\x1b'));
  expect_rc("plan megamoe --preset glm --tokens 64 --profile tests/data/escape-profile.json "
            "--compute h200-nvlink", 0, NULL);
  assert_non_null(strstr(out_buf, "on the profile file tests/data/escape-profile.json "
                                  "(named link\\x1b]0;title\\x07)"));
  assert_null(strchr(out_buf, '\x1b'));
  expect_rc("predict --profile h200-nvlink --program tests/data/bad-negative.json", 2,
            "tests/data/bad-negative.json:4:26: workers[0].ops[1].send");
  expect_rc("predict --profile h200-nvlink --program tests/data/bad-cycle.json", 2,
            "waits form a cycle");
  /* inputs without end are read up to their limit, outputs never replace
   * an input */
  expect_rc("predict --profile h200-nvlink --program /dev/zero", 2,
            "/dev/zero: larger than the limit of 256 MiB");
  expect_rc("predict --profile /dev/zero --program examples/hol.json", 2,
            "/dev/zero: larger than the limit of 256 MiB");
  expect_rc("sweep megamoe --profile h200-nvlink --grid /dev/zero", 2,
            "/dev/zero: larger than the limit of 64 MiB");
  expect_rc("validate megamoe --data /dev/zero", 2, "/dev/zero: larger than the limit of 64 MiB");
  expect_rc("predict --profile h200-nvlink --program examples/hol.json --svg examples/hol.json",
            2, "examples/hol.json would overwrite the input examples/hol.json");
  expect_rc("predict --profile h200-nvlink --program examples/hol.json --trace ./examples/hol.json",
            2, "would overwrite the input");
  expect_rc("simulate --profile tests/data/link-only.json --program examples/hol.json "
            "--svg tests/data/link-only.json", 2, "would overwrite the input");
  expect_rc("plan megamoe --preset glm --profile h200-nvlink --compute tests/data/link-only.json "
            "--emit-program tests/data/link-only.json", 2, "would overwrite the input");
  expect_rc("fit tests/data/bad-samples.csv -o tests/data/bad-samples.csv", 2,
            "would overwrite the input");
  expect_rc("predict --profile h200-nvlink --program tests/data/overflow.json --json", 2,
            "program \"overflow\" (tests/data/overflow.json) is too large to evaluate");
}

static double num(json_t *o, const char *k) {
  json_t *v = json_object_get(o, k);
  assert_non_null(v);
  assert_true(json_is_number(v));
  return json_number_value(v);
}

static void test_predict_json(void **s) {
  (void)s;
  expect_rc("predict --profile h200-nvlink --program examples/two-bursts.json --json", 0, NULL);
  json_error_t je;
  json_t *root = json_loads(out_buf, 0, &je);
  assert_non_null(root);
  assert_string_equal(json_string_value(json_object_get(root, "program")), "two bursts");
  assert_string_equal(json_string_value(json_object_get(root, "profile")), "h200-nvlink");
  json_t *models = json_object_get(root, "models");
  assert_int_equal(json_object_size(models), 4);
  xs_program *p;
  xs_profile *prof;
  xs_error e;
  assert_int_equal(xs_program_load(XSTAGE_SRC "/examples/two-bursts.json", &p, &e), XS_OK);
  assert_int_equal(xs_profile_load("h200-nvlink", &prof, &e), XS_OK);
  const char *names[] = {"burstgap", "blocking", "serial", "ideal"};
  for (int m = 0; m < 4; m++) {
    json_t *mo = json_object_get(models, names[m]);
    assert_non_null(mo);
    xs_result *r;
    assert_int_equal(xs_evaluate(p, prof, (xs_model)m, NULL, &r, &e), XS_OK);
    assert_true(fabs(num(mo, "makespan_s") - r->makespan_s) <= 1e-12 * r->makespan_s);
    if (m >= 2) {
      assert_int_equal(json_object_size(mo), 1);
      xs_result_free(r);
      continue;
    }
    assert_int_equal(json_object_size(mo), 5);
    num(mo, "issue_done_s");
    json_t *ws = json_object_get(mo, "workers"), *ss = json_object_get(mo, "sends"),
           *cs = json_object_get(mo, "channels");
    assert_int_equal(json_array_size(ws), 1);
    json_t *w0 = json_array_get(ws, 0);
    assert_string_equal(json_string_value(json_object_get(w0, "name")), "sm0");
    num(w0, "finish_s");
    num(w0, "stall_s");
    assert_int_equal(json_array_size(ss), 2);
    for (size_t i = 0; i < 2; i++) {
      json_t *so = json_array_get(ss, i);
      assert_int_equal(json_object_size(so), 9);
      assert_string_equal(json_string_value(json_object_get(so, "worker")), "sm0");
      assert_string_equal(json_string_value(json_object_get(so, "channel")), "nvlink");
      assert_true(fabs(num(so, "deliver_s") - r->sends[i].deliver_s) <= 1e-12 * r->makespan_s);
      assert_true(fabs(num(so, "xstage_s") - (num(so, "deliver_s") - num(so, "issue_end_s"))) <= 1e-12);
      num(so, "issue_start_s");
      num(so, "stall_s");
      num(so, "bytes");
    }
    assert_string_equal(json_string_value(json_object_get(json_array_get(ss, 0), "id")), "a");
    assert_int_equal(json_array_size(cs), 1);
    num(json_array_get(cs, 0), "peak_backlog_B");
    xs_result_free(r);
  }
  json_decref(root);
  expect_rc("predict --profile h200-nvlink --program examples/two-bursts.json --json --model blocking", 0, NULL);
  root = json_loads(out_buf, 0, &je);
  assert_non_null(root);
  models = json_object_get(root, "models");
  assert_int_equal(json_object_size(models), 1);
  assert_non_null(json_object_get(models, "blocking"));
  json_decref(root);
  xs_program_free(p);
  xs_profile_free(prof);
}

static void test_auto_ids_and_text(void **s) {
  (void)s;
  expect_rc("predict --profile h100-pcie5-host --program examples/hol.json --json", 0, NULL);
  assert_non_null(strstr(out_buf, "\"id\": \"small#1\""));
  expect_rc("predict --profile h100-pcie5-host --program examples/hol.json", 0, NULL);
  assert_non_null(strstr(out_buf, "head-of-line"));
  /* the models' ratios are said to be no speedup */
  assert_non_null(strstr(out_buf, "not a speedup"));
  assert_null(strstr(out_buf, "speedup:"));
}

static void test_simulate(void **s) {
  (void)s;
  expect_rc("simulate --profile h200-nvlink --program examples/two-bursts.json --json", 0, NULL);
  json_error_t je;
  json_t *root = json_loads(out_buf, 0, &je);
  assert_non_null(root);
  json_t *models = json_object_get(root, "models");
  assert_int_equal(json_object_size(models), 1);
  json_t *sim = json_object_get(models, "sim");
  assert_non_null(sim);
  assert_int_equal(json_object_size(sim), 5);
  assert_int_equal(json_array_size(json_object_get(sim, "sends")), 2);
  json_decref(root);
  expect_rc("simulate --profile h200-nvlink --program examples/hol.json --arbitration fifo --packet-bytes 4KiB", 0, NULL);
  assert_non_null(strstr(out_buf, "FIFO arbitration"));
  assert_non_null(strstr(out_buf, "sim / burstgap makespan"));
}

static void test_plan_sweep(void **s) {
  (void)s;
  expect_rc("plan megamoe --preset deepseek-v3 --profile h800-nvlink --tokens 256", 0, NULL);
  for (int k = 0; k < XS_MOE_SCHEDULES; k++)
    assert_non_null(strstr(out_buf, xs_moe_schedule_name((xs_moe_schedule)k)));
  assert_non_null(strstr(out_buf, "fastest fused schedule"));
  expect_rc("plan megamoe --preset deepseek-v4-flash --profile h200-nvlink --tokens 8 "
            "--schedule fused-lag --emit-program -", 0, NULL);
  assert_non_null(strstr(out_buf, "fused-lag"));
  expect_rc("plan megamoe --preset nope --profile h800-nvlink", 2, "unknown \"nope\"");
  expect_rc("plan megamoe --profile h800-nvlink", 2, "--preset NAME or --config FILE");
  expect_rc("plan megamoe --preset glm", 2, "--profile is required");
  expect_rc("plan megamoe --preset glm --profile h800-nvlink --ep 7", 2, "multiple of ep");
  expect_rc("plan megamoe --preset glm --profile h800-nvlink --tokens 0", 2, "--tokens");
  expect_rc("plan megamoe --preset glm --profile h800-nvlink --config x.json", 2, "one of");
  expect_rc("plan gemm", 2, "megamoe");
  /* names that would break a generated header, an HBM issue rate that
   * x1.5 moves past the largest double (out of range) */
  char pcmd[2048];
  int pid = (int)getpid();
  snprintf(pcmd, sizeof pcmd,
           "'%s' profiles show h800-nvlink | sed 's|\"name\": \"h800-nvlink\"|\"name\": "
           "\"evil*/ int injected; /* x\"|; s|\"inject_Bps\": 1e16|"
           "\"inject_Bps\": 1.5e308|' "
           "> /tmp/xstage-evil-%d.json", XSTAGE_BIN, pid);
  assert_int_equal(system(pcmd), 0);
  snprintf(pcmd, sizeof pcmd, "plan megamoe --preset deepseek-v3 --profile "
           "/tmp/xstage-evil-%d.json --tokens 4096 --sensitivity", pid);
  expect_rc(pcmd, 0, NULL);
  assert_non_null(strstr(out_buf, "n/a"));
  snprintf(pcmd, sizeof pcmd, "plan megamoe --preset deepseek-v3 --profile "
           "/tmp/xstage-evil-%d.json --tokens-grid 64,128 --emit-header /tmp/xstage-evil-%d.h",
           pid, pid);
  expect_rc(pcmd, 0, NULL);
  snprintf(pcmd, sizeof pcmd, "plan flashattn --preset llama3-8b --profile "
           "/tmp/xstage-evil-%d.json --seq-grid 4096,8192 --emit-header /tmp/xstage-evil-%d-r.h",
           pid, pid);
  expect_rc(pcmd, 0, NULL);
  snprintf(pcmd, sizeof pcmd,
           "cd /tmp && printf '#include \"xstage-evil-%d.h\"\\n#include \"xstage-evil-%d-r.h\"\\n"
           "int main(void) { return xstage_moe_lookup(64)->lo + xstage_ring_lookup(1)->lo > 0 "
           "? 0 : 1; }\\n' > xstage-evil-%d.c && cc -std=c11 -Wall -Wextra -Werror -pedantic "
           "-o xstage-evil-%d xstage-evil-%d.c && ./xstage-evil-%d && ! grep -q '^ *int injected' "
           "xstage-evil-%d.h xstage-evil-%d-r.h; r=$?; rm -f /tmp/xstage-evil-%d*; exit $r",
           pid, pid, pid, pid, pid, pid, pid, pid, pid);
  assert_int_equal(system(pcmd), 0);
  expect_rc("plan megamoe --preset deepseek-v3 --profile h800-nvlink --tokens-range "
            "1:1000000000", 2, "the table's largest");
  expect_rc("plan flashattn --preset mha --profile h100-nvlink --seq-grid 4096 "
            "--emit-header - --header-prefix ''", 2, "--header-prefix: empty");
  /* work bounds: refused at once, with the limit */
  expect_rc("plan megamoe --preset deepseek-v3 --profile h800-nvlink --tokens 10000000 "
            "--trace /tmp/never.json --svg /tmp/never.svg", 2, "planner's limit of 1e+07");
  expect_rc("plan flashattn --preset mha --profile h100-nvlink --cp 100000", 2,
            "--cp: expected a whole number from 1 to 4096");
  expect_rc("demo --sms 100000 --waves 100000", 2, "demo's limit of 1e6");
  expect_rc("sweep megamoe --profile h800-nvlink --grid tests/data/huge-grid.json", 2,
            "more than the limit of 1e+08");
  /* knob tables and sensitivity */
  expect_rc("plan megamoe --preset glm --profile h800-nvlink --tokens-grid 64:32", 2,
            "runs backwards");
  expect_rc("plan megamoe --preset glm --profile h800-nvlink --tokens-grid 64,x", 2,
            "at character 4 of \"64,x\"");
  expect_rc("plan megamoe --preset glm --profile h800-nvlink --tokens-grid 64,32", 2,
            "ascending");
  expect_rc("plan megamoe --preset glm --profile h800-nvlink --tokens-grid 1:5000", 2,
            "more than 4096 grid points");
  expect_rc("plan megamoe --preset glm --profile h800-nvlink --tokens-range 64", 2,
            "--tokens-range: expected MIN:MAX");
  expect_rc("plan megamoe --preset glm --profile h800-nvlink --tokens-grid 64 --tokens 8",
            2, "does not take --tokens");
  expect_rc("plan megamoe --preset glm --profile h800-nvlink --tolerance 2", 2,
            "--tolerance: expected a fraction");
  expect_rc("plan megamoe --preset glm --profile h800-nvlink --schedules fused-wave,x", 2,
            "\"x\" is not a schedule");
  expect_rc("plan megamoe --preset glm --profile h800-nvlink --emit-header h.h", 2,
            "--emit-header needs");
  expect_rc("plan megamoe --preset glm --profile h800-nvlink --tokens-grid 64 "
            "--emit-header - --header-prefix 9x", 2, "not a C identifier");
  expect_rc("plan megamoe --preset glm --profile h800-nvlink --tokens-grid 64,128,256 "
            "--tolerance 0.5% --schedules fused-wave,fused-lag", 0, NULL);
  assert_non_null(strstr(out_buf, "tolerance 0.5%"));
  assert_null(strstr(out_buf, "searched"));
  expect_rc("plan megamoe --preset glm --profile h800-nvlink --tokens 256 --sensitivity",
            0, NULL);
  assert_non_null(strstr(out_buf, "  to measure first: "));
  assert_non_null(strstr(out_buf, "channels.hbm.drain_Bps"));
  assert_non_null(strstr(out_buf, "recommended:"));
  assert_non_null(strstr(out_buf, "how sure: the runner-up"));
  /* the attention planner's sensitivity */
  expect_rc("plan flashattn --preset llama3-8b --profile h100-nvlink --seq 2048 --kernel fa3 "
            "--sensitivity", 0, NULL);
  assert_non_null(strstr(out_buf, "  sensitivity of piggyback, zigzag"));
  assert_non_null(strstr(out_buf, "compute.attn_flops_per_s.fa3"));
  assert_non_null(strstr(out_buf, "  to measure first: "));
  expect_rc("plan flashattn --preset llama3-8b --profile h100-nvlink --tolerance 2%", 2,
            "--tolerance chooses among rings for --seq-grid or --sensitivity");
  expect_rc("plan flashattn --preset llama3-8b --profile h100-nvlink --seq-grid 1024,2048 "
            "--sensitivity", 2, "does not take --seq, --emit-program, --trace, --svg or "
            "--sensitivity");
  /* the attention planner: one table of every way under every layout */
  expect_rc("plan flashattn --preset llama3-8b --profile h800-nvlink --seq 8192", 0, NULL);
  assert_non_null(strstr(out_buf, "dedicated-stream  zigzag"));
  assert_non_null(strstr(out_buf, "fastest under layout zigzag"));
  assert_non_null(strstr(out_buf, "kernel throughput measured"));
  assert_null(strstr(out_buf, "e-0")); /* no 1.22e-08 ns where the answer is 0 */
  expect_rc("plan flashattn --preset llama3-8b --profile h20-nvlink --backward", 0, NULL);
  assert_non_null(strstr(out_buf, "kernel throughput a lead"));
  expect_rc("plan flashattn --preset mha --profile a100-nvlink --backward --seq-grid "
            "2048,4096,8192 --json", 0, NULL);
  assert_non_null(strstr(out_buf, "\"changes\""));
  expect_rc("plan flashattn --preset mha --profile tests/data/link-only.json --seq-grid 2048",
            2, "has neither attn_flops_per_s.fa2 nor FLOP/s");
  expect_rc("plan flashattn --preset mha --profile h100-nvlink --path fast --emit-program -",
            2, "--path: expected local");
  expect_rc("plan flashattn --preset mha --profile h100-nvlink --path piggyback", 2,
            "give one of them");
  /* its header compiles with warnings as errors and looks up */
  char hcmd[1024];
  snprintf(hcmd, sizeof hcmd, "plan flashattn --preset llama3-8b --profile h100-nvlink "
           "--seq-grid 1024,4096,16384 --emit-header /tmp/xstage-ring-%d.h", (int)getpid());
  expect_rc(hcmd, 0, NULL);
  snprintf(hcmd, sizeof hcmd,
           "printf '#include \"/tmp/xstage-ring-%d.h\"\\nint main(void) { return "
           "xstage_ring_lookup(5000)->seq == 4096 ? 0 : 1; }\\n' > /tmp/xstage-ring-%d.c && "
           "cc -std=c11 -Wall -Wextra -Werror -pedantic -o /tmp/xstage-ring-%d "
           "/tmp/xstage-ring-%d.c && /tmp/xstage-ring-%d; r=$?; rm -f /tmp/xstage-ring-%d*; "
           "exit $r", (int)getpid(), (int)getpid(), (int)getpid(), (int)getpid(),
           (int)getpid(), (int)getpid());
  assert_int_equal(system(hcmd), 0);
  expect_rc("plan flashattn --preset mha --profile h100-nvlink --kernel fa9", 2, "--kernel");
  FILE *cf = fopen("/tmp/xstage-test-fa.json", "w");
  assert_non_null(cf);
  fprintf(cf, "{\"seq\": 4096,%70000s\"cp\": 4}\n", ""); /* over 64 KiB */
  fclose(cf);
  expect_rc("plan flashattn --config /tmp/xstage-test-fa.json --profile h100-nvlink", 0, NULL);
  expect_rc("plan flashattn --config /tmp/xstage-test-fa.json --profile h100-nvlink "
            "--emit-program /tmp/xstage-test-fa.json", 2, NULL);
  remove("/tmp/xstage-test-fa.json");
  cf = fopen("/tmp/xstage-test-grid.json", "w");
  assert_non_null(cf);
  fprintf(cf, "{\"seq\": [\"x\"]}\n");
  fclose(cf);
  expect_rc("sweep flashattn --profile h100-nvlink --grid /tmp/xstage-test-grid.json", 2,
            "seq[0]: expected a number");
  cf = fopen("/tmp/xstage-test-grid.json", "w");
  assert_non_null(cf);
  fprintf(cf, "[1, 2]\n");
  fclose(cf);
  expect_rc("sweep flashattn --profile h100-nvlink --grid /tmp/xstage-test-grid.json", 2,
            "not an array");
  cf = fopen("/tmp/xstage-test-grid.json", "w");
  assert_non_null(cf);
  fprintf(cf, "{\"kernel\": [\"fa3\", \"fa5\"]}\n");
  fclose(cf);
  expect_rc("sweep flashattn --profile h100-nvlink --grid /tmp/xstage-test-grid.json", 2,
            "1:20: kernel[1]: expected fa2, fa3 or fa4");
  cf = fopen("/tmp/xstage-test-grid.json", "w");
  assert_non_null(cf);
  fprintf(cf, "{\"presets\": [\"mha\"], \"seq\": [2048], \"cp\": [4], \"causal\": [true],"
              " \"kernel\": [\"fa3\", \"fa2\"]}\n");
  fclose(cf);
  expect_rc("sweep flashattn --profile h100-nvlink --grid /tmp/xstage-test-grid.json --csv",
            0, NULL);
  assert_non_null(strstr(out_buf, "mha,2048,4,1,fa3,"));
  assert_non_null(strstr(out_buf, "mha,2048,4,1,fa2,"));
  cf = fopen("/tmp/xstage-test-grid.json", "w");
  assert_non_null(cf);
  fprintf(cf, "{\"cp\": [4096], \"seq\": [4096, 8192, 16384]}\n");
  fclose(cf);
  expect_rc("sweep flashattn --profile h100-nvlink --grid /tmp/xstage-test-grid.json", 2,
            "more than the limit of 32768");
  remove("/tmp/xstage-test-grid.json");
  cf = fopen("/tmp/xstage-test-fa.json", "w");
  assert_non_null(cf);
  fprintf(cf, "{\"sms\": 1}\n");
  fclose(cf);
  expect_rc("plan flashattn --config /tmp/xstage-test-fa.json --profile h100-nvlink", 2,
            "sms must be 0 (the profile's) or at least 2");
  remove("/tmp/xstage-test-fa.json");
  expect_rc("plan flashattn --preset mha --profile h100-nvlink --layout ring", 2, "--layout");
  expect_rc("plan flashattn --preset mha --profile h100-nvlink --seq-grid 8:4", 2,
            "runs backwards");
  expect_rc("sweep megamoe", 2, "--profile is required");
  expect_rc("sweep megamoe --profile h200-nvlink --json --csv", 2, "exclude");
  expect_rc("sweep megamoe --profile h200-nvlink --grid /no/such-grid.json", 2,
            "/no/such-grid.json: cannot open: No such file");
  expect_rc("sweep flashattn --profile h200-nvlink --grid /no/such-grid.json", 2,
            "/no/such-grid.json: cannot open: No such file");
  expect_rc("sweep megamoe --profile h200-nvlink --grid tests/data/bad-grid.json", 2,
            "presets[1]");
  expect_rc("sweep megamoe --profile h200-nvlink --grid tests/data/bad-ep-grid.json", 2,
            "multiple of ep (7)");
  expect_rc("plan megamoe --preset qwen3.5 --profile h200-nvlink --json", 0, NULL);
  json_error_t je;
  json_t *root = json_loads(out_buf, 0, &je);
  assert_non_null(root);
  for (int k = 0; k < XS_MOE_SCHEDULES; k++) {
    json_t *o = json_object_get(json_object_get(root, "schedules"),
                                xs_moe_schedule_name((xs_moe_schedule)k));
    assert_non_null(o);
    assert_non_null(json_object_get(json_object_get(o, "breakdown"), "bound"));
    assert_true(num(o, "burstgap_s") > 0);
  }
  assert_true(num(root, "speedup") >= 1);
  json_decref(root);
  expect_rc("sweep megamoe --profile h800-nvlink --json", 0, NULL);
  root = json_loads(out_buf, 0, &je);
  assert_non_null(root);
  json_t *cs = json_object_get(root, "configs");
  assert_int_equal(json_array_size(cs), 84);
  const char *keys[] = {"preset", "tokens", "ep", "best_interleaved", "best_plain", "speedup",
                        "blocking_speedup", "order_gain", "ideal_ratio", "speedup_interval"};
  json_t *c0 = json_array_get(cs, 0);
  assert_int_equal(json_object_size(c0), 12);
  for (int i = 0; i < 10; i++)
    assert_non_null(json_object_get(c0, keys[i]));
  /* the speedup's interval holds it */
  json_t *si = json_object_get(c0, "speedup_interval");
  assert_true(num(c0, "speedup") > json_real_value(json_array_get(si, 0)));
  assert_true(num(c0, "speedup") < json_real_value(json_array_get(si, 1)));
  assert_int_equal(json_object_size(json_object_get(c0, "schedules")), XS_MOE_SCHEDULES);
  /* the first config, planned here: the same best schedules and ratio */
  {
    xs_moe_config c;
    xs_profile *prof;
    xs_error e;
    assert_int_equal(xs_moe_preset(json_string_value(json_object_get(c0, "preset")), &c), 0);
    c.tokens = num(c0, "tokens");
    c.ep = num(c0, "ep");
    assert_int_equal(xs_profile_load("h800-nvlink", &prof, &e), XS_OK);
    xs_moe_result r;
    assert_int_equal(xs_moe_plan(&c, prof, &r, &e), XS_OK);
    assert_string_equal(json_string_value(json_object_get(c0, "best_interleaved")),
                        xs_moe_schedule_name(r.best_interleaved));
    assert_string_equal(json_string_value(json_object_get(c0, "best_plain")),
                        xs_moe_schedule_name(r.best_plain));
    double want = r.time_s[r.best_plain][0] / r.time_s[r.best_interleaved][0];
    assert_true(fabs(num(c0, "speedup") / want - 1) < 1e-9);
    assert_true(num(c0, "order_gain") >= 1);
    xs_profile_free(prof);
  }
  json_t *sum = json_object_get(root, "summary");
  assert_int_equal(json_object_size(sum), 7);
  assert_true(num(sum, "configs") == 84);
  assert_true(num(sum, "max_speedup") >= num(sum, "geomean_speedup"));
  assert_true(num(sum, "geomean_order_gain") >= 1 &&
              num(sum, "max_order_gain") >= num(sum, "geomean_order_gain"));
  num(sum, "geomean_blocking_speedup");
  assert_true(num(sum, "geomean_ideal_ratio") >= 1);
  json_decref(root);
  expect_rc("sweep megamoe --profile h200-nvlink --csv --grid tests/data/small-grid.json", 0, NULL);
  int lines = 0;
  for (const char *q = out_buf; *q; q++)
    lines += *q == '\n';
  assert_int_equal(lines, 1 + 2 * 3);
}

static void test_validate(void **s) {
  (void)s;
  expect_rc("validate megamoe --data data/published/megamoe.csv --json", 0, NULL);
  json_error_t je;
  json_t *root = json_loads(out_buf, 0, &je);
  assert_non_null(root);
  json_t *rows = json_object_get(root, "rows"), *sum = json_object_get(root, "summary");
  assert_true(json_array_size(rows) >= 60);
  assert_int_equal(json_object_size(root), 2);
  const char *rk[] = {"source", "gpu", "tokens", "arm", "measured_us", "predicted_us", "error",
                      "ep", "hidden", "intermediate", "experts", "topk", "metric", "knobs",
                      "models", "breakdown", "interval_us"};
  json_t *r0 = json_array_get(rows, 0);
  assert_int_equal(json_object_size(r0), 17);
  for (int i = 0; i < 17; i++)
    assert_non_null(json_object_get(r0, rk[i]));
  assert_true(num(json_object_get(r0, "models"), "burstgap_us") == num(r0, "predicted_us"));
  const char *sk[] = {"rows", "median_abs_error", "max_abs_error", "by_arm", "by_model", "bias",
                      "pairs", "pull_end", "fitted_constants", "leave_one_out", "intervals"};
  assert_int_equal(json_object_size(sum), 11);
  for (int i = 0; i < 11; i++)
    assert_non_null(json_object_get(sum, sk[i]));
  assert_true(num(sum, "max_abs_error") >= num(sum, "median_abs_error"));
  json_t *seq = json_object_get(json_object_get(sum, "by_arm"), "sequential");
  assert_non_null(seq);
  assert_int_equal(json_object_size(seq), 2);
  /* every pair's ratios are the rows' own, found again from the rows; the
   * agreeing pairs are counted as the summary says */
  json_t *pairs = json_object_get(sum, "pairs"), *list = json_object_get(pairs, "list");
  assert_true(json_array_size(list) == (size_t)num(pairs, "pairs") && json_array_size(list) >= 30);
  size_t agree = 0;
  for (size_t i = 0; i < json_array_size(list); i++) {
    json_t *pr = json_array_get(list, i);
    double ma = 0, mb = 0, pa = 0, pb = 0;
    assert_true(num(pr, "line_a") > 0 && num(pr, "line_b") > 0);
    /* rows carry no line: match by source, arm and tokens */
    for (size_t k = 0; k < json_array_size(rows); k++) {
      json_t *r = json_array_get(rows, k);
      if (strcmp(json_string_value(json_object_get(r, "source")),
                 json_string_value(json_object_get(pr, "source"))) ||
          num(r, "tokens") != num(pr, "tokens") ||
          strcmp(json_string_value(json_object_get(r, "metric")), "time"))
        continue;
      const char *arm = json_string_value(json_object_get(r, "arm"));
      if (!strcmp(arm, json_string_value(json_object_get(pr, "arm_a"))) && !ma)
        ma = num(r, "measured_us"), pa = num(r, "predicted_us");
      else if (!strcmp(arm, json_string_value(json_object_get(pr, "arm_b"))) && !mb)
        mb = num(r, "measured_us"), pb = num(r, "predicted_us");
    }
    assert_true(ma > 0 && mb > 0);
    agree += json_is_true(json_object_get(pr, "agree"));
    /* a source with two shapes at one token count: the first shape's rows */
    if (fabs(num(pr, "measured_ratio") / (ma / mb) - 1) < 1e-9)
      assert_true(fabs(num(pr, "predicted_ratio") / (pa / pb) - 1) < 1e-9);
  }
  assert_true(agree == (size_t)num(pairs, "agree"));
  json_decref(root);
  expect_rc("validate megamoe --data data/published/megamoe.csv", 0, NULL);
  assert_non_null(strstr(out_buf, "pairs: two arms of one config"));
  /* the constants the sequential arm takes are named as fitted, and none
   * to these rows */
  assert_non_null(strstr(out_buf, "the sequential arm's all-to-all takes\n  the EP programs' five"));
  assert_non_null(strstr(out_buf, "None is fitted to these rows"));
  assert_non_null(strstr(out_buf, "pull_end of fused-lag"));
  expect_rc("validate megamoe --data data/published/megamoe.csv --model all --by-source", 0, NULL);
  assert_non_null(strstr(out_buf, " blocking  error"));
  assert_non_null(strstr(out_buf, "\n  DeepGEMM PR 383:\n"));
  /* and the sequential figures with the EP constants refitted without
   * DeepEP's own sources, beside the shipped ones */
  assert_non_null(strstr(out_buf, "refitted without DeepEP's sources (deepseek-ai/DeepEP*"));
  assert_non_null(strstr(out_buf, "without DeepEP's:"));
  /* validate ep's tables name a long source by the legend's number, as its
   * rows do, never by a cut of its name alone */
  expect_rc("validate ep --data data/published/ep.csv", 0, NULL);
  assert_non_null(strstr(out_buf, "\n    [6] deepseek-ai/DeepEP branch hybrid-ep  "));
  assert_null(strstr(out_buf, "\n    deepseek-ai/DeepEP branch hybrid-ep docs"));
  /* a profile file is named as the file */
  expect_rc("profiles show h200-nvlink", 0, NULL);
  char vprof[64];
  snprintf(vprof, sizeof vprof, "/tmp/xstage-vprof-%ld.json", (long)getpid());
  FILE *pf = fopen(vprof, "w");
  assert_non_null(pf);
  fputs(out_buf, pf);
  fclose(pf);
  expect_ok_with("validate megamoe --data data/published/megamoe.csv --profile %s", vprof);
  assert_true(output_has("on the profile file %s (named h200-nvlink)", vprof));
  assert_null(strstr(out_buf, "on its gpu's built-in profile"));
  /* and plan's: the header and the closing line name the file */
  expect_ok_with("plan megamoe --preset deepseek-v3 --tokens 64 --profile %s", vprof);
  assert_true(output_has("on the profile file %s (named h200-nvlink)\n", vprof));
  assert_true(output_has("`xstage profiles show %s`", vprof));
  assert_null(strstr(out_buf, "profiles show h200-nvlink"));
  expect_ok_with("plan flashattn --preset llama3-8b --seq 2048 --profile %s", vprof);
  assert_true(output_has("`xstage profiles show %s`", vprof));
  assert_null(strstr(out_buf, "profiles show h200-nvlink"));
  remove(vprof);
  expect_rc("validate megamoe --data data/published/megamoe.csv --model serial", 0, NULL);
  assert_non_null(strstr(out_buf, "under serial"));
  expect_rc("validate megamoe --data data/published/megamoe.csv --model sim", 2, "--model");
  expect_rc("validate flashattn --data data/published/ring-attention.csv --by-source", 2,
            "megamoe only");
  /* without --data, the published file, and the same rows as naming it */
  expect_rc("validate megamoe --data data/published/megamoe.csv --json", 0, NULL);
  snprintf(saved, sizeof saved, "%s", out_buf);
  expect_rc("validate megamoe --json", 0, NULL);
  assert_string_equal(saved, out_buf);
  expect_rc("validate flashattn", 0, "");
  assert_non_null(strstr(out_buf, "/data/published/ring-attention.csv, each predicted"));
  expect_rc("validate megamoe --data", 2, "--data is unknown or needs a value");
  expect_rc("validate megamoe --data /no/such.csv", 2, "/no/such.csv: cannot open");
  expect_rc("validate megamoe --data tests/data/bad-validate.csv", 2,
            "tests/data/bad-validate.csv:3:3: gpu: \"h300\"");
  expect_rc("validate megamoe --data data/published/megamoe.csv --fail-above x", 2,
            "--fail-above");
  expect_rc("validate megamoe --data data/published/megamoe.csv --fail-above 0.01", 1,
            "median |error|");
  expect_rc("validate gemm", 2, "megamoe");
}

static void test_flashattn(void **s) {
  (void)s;
  expect_rc("plan flashattn --help", 0, NULL);
  expect_rc("sweep flashattn --help", 0, NULL);
  expect_rc("plan flashattn --preset llama3-70b --profile h200-nvlink --seq 8192 --cp 4 --full", 0, NULL);
  assert_non_null(strstr(out_buf, "full mask"));
  assert_non_null(strstr(out_buf, "piggyback over sequential"));
  expect_rc("plan flashattn --preset llama3-9b --profile h200-nvlink", 2, "unknown \"llama3-9b\"");
  /* kernels the GPU cannot run: refused, naming why and what to use */
  expect_rc("plan flashattn --preset llama3-8b --profile a100-nvlink --kernel fa3", 2,
            "FlashAttention-3 runs on Hopper (sm90) only");
  assert_non_null(strstr(err_buf, "use fa2 (--kernel fa2)"));
  expect_rc("plan flashattn --preset llama3-8b --profile b200-nvlink --kernel fa3", 2,
            "use fa4 (--kernel fa4)");
  expect_rc("plan flashattn --preset llama3-8b --profile a100-nvlink --kernel fa4 --backward",
            2, "FlashAttention-4's backward runs on sm90 and later");
  expect_rc("sweep flashattn --profile a100-nvlink --grid examples/attention-headline-fa3.json",
            2, "FlashAttention-3 runs on Hopper");
  /* FA4 on Hopper: both passes, named */
  expect_rc("plan flashattn --preset llama3-8b --profile h100-nvlink --kernel fa4 --backward "
            "--seq 2048", 0, NULL);
  assert_non_null(strstr(out_buf, "FlashAttentionForwardSm90, FlashAttentionBackwardSm90"));
  /* the default: the best kernel the GPU runs */
  expect_rc("plan flashattn --preset llama3-8b --profile a100-nvlink --seq 2048", 0, NULL);
  assert_non_null(strstr(out_buf, "fa2 forward"));
  expect_rc("plan flashattn --preset llama3-8b --profile h200-nvlink --seq 2048", 0, NULL);
  assert_non_null(strstr(out_buf, "fa3 forward"));
  expect_rc("plan flashattn --preset llama3-8b --profile b200-nvlink --seq 2048", 0, NULL);
  assert_non_null(strstr(out_buf, "fa4 forward"));
  /* the headline grid names its profile: the README's command as written */
  expect_rc("sweep flashattn --grid examples/attention-headline-fa3.json --csv", 0, NULL);
  assert_non_null(strstr(out_buf, "llama3-8b,1024,8,1,fa3,"));
  expect_rc("plan flashattn --preset mha --profile h200-nvlink --seq x", 2, "--seq");
  expect_rc("sweep flashattn --profile h200-nvlink --grid tests/data/bad-fa-grid.json", 2, "presets[0]");
  expect_rc("sweep flashattn --profile h100-nvlink --json", 0, NULL);
  json_error_t je;
  json_t *root = json_loads(out_buf, 0, &je);
  assert_non_null(root);
  json_t *cs = json_object_get(root, "configs");
  assert_int_equal(json_array_size(cs), 90);
  const char *keys[] = {"preset", "seq", "cp", "causal", "kernel", "local_s", "sequential_s",
                        "stream_s", "sms_s", "piggyback_s", "ideal_s", "speedup",
                        "speedup_vs_dedicated", "blocking_speedup", "best", "free_s",
                        "best_kernel"};
  json_t *c0 = json_array_get(cs, 0);
  assert_int_equal(json_object_size(c0), 17);
  for (int i = 0; i < 17; i++)
    assert_non_null(json_object_get(c0, keys[i]));
  /* the best kernel H100 runs, which the preset leaves to the GPU */
  assert_string_equal(json_string_value(json_object_get(c0, "kernel")), "fa3");
  json_t *sum = json_object_get(root, "summary");
  assert_int_equal(json_object_size(sum), 6);
  assert_true(num(sum, "geomean_speedup") > 0);
  num(sum, "geomean_speedup_vs_dedicated");
  num(sum, "geomean_blocking_speedup");
  assert_true(num(sum, "geomean_ideal_ratio") >= 1);
  assert_true(num(sum, "max_speedup") >= num(sum, "geomean_speedup"));
  json_decref(root);
  /* the emitted program is the plan: through predict --model burstgap it
   * takes the plan's time within 5%, every way, at 2k and 16k tokens */
  static const char *const ways[] = {"sequential", "dedicated-stream", "dedicated-sms",
                                     "piggyback"};
  for (int seq = 2048; seq <= 16384; seq *= 8)
    for (int w = 0; w < 4; w++) {
      char cmd[512], prog[64];
      snprintf(prog, sizeof prog, "/tmp/xstage-fa-%d-%d.json", (int)getpid(), w);
      snprintf(cmd, sizeof cmd, "plan flashattn --preset llama3-70b --profile h200-nvlink "
               "--kernel fa3 --seq %d --json --path %s --emit-program %s", seq, ways[w], prog);
      expect_rc(cmd, 0, NULL);
      root = json_loads(out_buf, 0, &je);
      assert_non_null(root);
      double plan = num(json_object_get(json_object_get(root, "paths"), ways[w]), "burstgap_s");
      json_decref(root);
      snprintf(cmd, sizeof cmd, "predict --profile h200-nvlink --program %s --model burstgap "
               "--json", prog);
      expect_rc(cmd, 0, NULL);
      remove(prog);
      root = json_loads(out_buf, 0, &je);
      assert_non_null(root);
      double got = num(json_object_get(json_object_get(root, "models"), "burstgap"),
                       "makespan_s");
      json_decref(root);
      if (!(fabs(got / plan - 1) <= 0.05))
        fail_msg("seq %d %s: predict %.9g s, plan %.9g s", seq, ways[w], got, plan);
    }
}

static void test_measuring(void **s) {
  (void)s;
  expect_rc("probe cuda", 2, "no backend \"cuda\""); /* probe mpi: mpi_check.sh */
  expect_rc("probe", 2, "expected one backend");
  expect_rc("probe pipe --drain-rate fast", 2, "bad rate");
  expect_rc("probe pipe --capacity 1KiB", 2, "--capacity");
  expect_rc("probe pipe --capacity 64MiB --timeout 5s", 2, "pipe-max-size");
  expect_rc("fit /no/such.csv", 2, "cannot open");
  expect_rc("fit tests/data/bad-samples.csv", 2, "bad-samples.csv:4: deliver_s: \"x\" is not a number");
  expect_rc("replay --program examples/hol.json --channel pipe", 2, "one-worker");
  expect_rc("replay --program examples/two-bursts.json --channel pipe:speed=9", 2, "unknown option");
  expect_rc("replay --program examples/two-bursts.json --channel nope", 2, "no backend \"nope\"");
  expect_rc("replay --program examples/hol.json --channel cuda-tma", 2, "a probe only");
  /* the profiles' sources say to run this: it reaches the CUDA probe */
  char why[512];
  if (!xs_cuda_available(why, sizeof why))
    expect_rc("calibrate cuda-host", 2, xs_cuda_built() ? "no CUDA device" : "rebuild");
  expect_rc("replay --program examples/two-bursts.json --channel pipe:width=sm0:2", 2,
            "for the CUDA channels");
  expect_rc("replay --program examples/hol.json --channel cuda-host:threads=48", 2,
            "multiple of 32");
  expect_rc("replay --program examples/hol.json --channel cuda-host:width=nobody:2 "
            "--profile h100-pcie5-host", 2, "no worker \"nobody\"");
  /* refused before the calibration, which would need a device */
  expect_rc("replay --program examples/hol.json --channel cuda-host:width=nobody:2", 2,
            "no worker \"nobody\"");
  expect_rc("replay --program examples/hol.json --channel cuda-host:threads=2048", 2,
            "multiple of 32 up to 992");
  expect_rc("replay --program examples/two-bursts.json --channel tcp:threads=64", 2,
            "for the CUDA channels");
  expect_rc("probe pipe --timeout 0", 2, "must be more than 0");
  /* what the OS calls cannot take is refused, not wrapped around */
  expect_rc("probe pipe --capacity 2GiB", 2, "--capacity: at most 2147483647 bytes");
  expect_rc("calibrate tcp --capacity 3GiB", 2, "--capacity: at most 2147483647 bytes");
  expect_rc("probe pipe --svg x", 2, "--svg is not a probe flag");
  expect_rc("calibrate pipe --mode put", 2, "--mode is not a calibrate flag");
  char longchan[700];
  int ln = snprintf(longchan, sizeof longchan, "replay --program examples/two-bursts.json "
                                               "--channel pipe:timeout=3s");
  while (ln < 640)
    ln += snprintf(longchan + ln, sizeof longchan - (size_t)ln, ",sizes=2");
  expect_rc(longchan, 2, "--channel: the options are longer than 511 characters");
  expect_rc("probe pipe --capacity 1000", 2, "at least 4KiB");
  expect_rc("plan megamoe --preset glm --profile h200-nvlink --schedule fifo", 2, "--schedule");
  expect_rc("plan megamoe --preset glm --profile h100-pcie5-host --compute examples/hol.json", 2,
            "hol.json");
  expect_rc("plan megamoe --preset glm --profile tests/data/link-only.json", 2, "compute");
  expect_rc("plan megamoe --preset glm --profile h200-nvlink --compute tests/data/link-only.json",
            2, "no compute section");
  expect_rc("plan megamoe --preset glm --tokens 64 --profile tests/data/link-only.json "
            "--compute h200-nvlink", 0, NULL);
  assert_non_null(strstr(out_buf, "on the profile file tests/data/link-only.json (named link-only)"));
  char args[512], path[128];
  snprintf(path, sizeof path, "/tmp/xstage-samples-%d.csv", (int)getpid());
  snprintf(args, sizeof args, "probe pipe --capacity 256KiB --drain-rate 100MB/s --repeats 2 --sizes 8 -o %s", path);
  expect_rc(args, 0, NULL);
  snprintf(args, sizeof args, "fit %s", path);
  expect_rc(args, 0, NULL);
  assert_non_null(strstr(out_buf, "drain rate"));
  assert_non_null(strstr(out_buf, "in-flight capacity"));
  remove(path);
  /* a backend name longer than the samples keep, cut inside a character:
   * the profile still has its name and channel */
  snprintf(path, sizeof path, "/tmp/xstage-cut-%d.csv", (int)getpid());
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fprintf(f, "backend,bytes,gap_s,issue_s,deliver_s,repeat\n");
  for (int k = 1; k <= 8; k++)
    fprintf(f, "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\xc3\xa9yz,%d,0,%g,%g,0\n", k * 1000, k * 1e-6,
            k * 2e-6 + 1e-6);
  fclose(f);
  char prof[128];
  snprintf(prof, sizeof prof, "/tmp/xstage-cut-%d.json", (int)getpid());
  snprintf(args, sizeof args, "fit %s -o %s", path, prof);
  expect_rc(args, 0, NULL);
  snprintf(args, sizeof args, "profiles show %s", prof);
  expect_rc(args, 0, NULL);
  assert_non_null(strstr(out_buf, "\"name\": \"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx-measured\""));
  assert_non_null(strstr(out_buf, "\"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\": {"));
  remove(path);
  remove(prof);
  snprintf(path, sizeof path, "/tmp/xstage-profile-%d.json", (int)getpid());
  snprintf(args, sizeof args, "calibrate tcp --capacity 128KiB --drain-rate 100MB/s --repeats 2 --sizes 8 -o %s", path);
  expect_rc(args, 0, NULL);
  snprintf(args, sizeof args, "profiles show %s", path);
  expect_rc(args, 0, NULL);
  assert_non_null(strstr(out_buf, "measured by xstage"));
  remove(path);
}

/* Start "xstage ARGS", send it sig after delay seconds (none when 0) and
 * return its exit code (-1: killed), with how long it ran in *took. */
static int run_signalled(const char *args, int sig, double delay, double *took) {
  char cmd[4096];
  snprintf(cmd, sizeof cmd, "cd '%s' && exec '%s' %s >/tmp/xstage-test-sig.%d 2>&1",
           XSTAGE_SRC, XSTAGE_BIN, args, (int)getpid());
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
    _exit(127);
  }
  if (delay > 0) {
    struct timespec d = {(time_t)delay, (long)((delay - (double)(time_t)delay) * 1e9)};
    nanosleep(&d, NULL);
    kill(pid, sig);
  }
  int st;
  assert_int_equal(waitpid(pid, &st, 0), pid);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  *took = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
  snprintf(cmd, sizeof cmd, "/tmp/xstage-test-sig.%d", (int)getpid());
  remove(cmd);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* A replay's compute op, a calibration and a probe stop at --timeout
 * (exit 1) and on SIGINT or SIGTERM (exit 130, 143), writing nothing. */
static void test_timeouts_and_signals(void **s) {
  (void)s;
  char dir[64], prog[160], out[160], args[1024];
  snprintf(dir, sizeof dir, "/tmp/xstage-sig-%d", (int)getpid());
  assert_int_equal(mkdir(dir, 0700), 0);
  snprintf(prog, sizeof prog, "%s/spin.json", dir);
  FILE *f = fopen(prog, "w");
  assert_non_null(f);
  fputs("{\"workers\":[{\"ops\":[{\"compute\":1e9},{\"send\":4096}]}]}\n", f);
  fclose(f);
  double took;
  snprintf(args, sizeof args, "replay --program %s --channel pipe:timeout=1s --profile h200-nvlink",
           prog);
  assert_int_equal(run_signalled(args, 0, 0, &took), 1);
  assert_true(took < 5);
  snprintf(args, sizeof args, "replay --program %s --channel pipe:timeout=60s --profile h200-nvlink",
           prog);
  assert_int_equal(run_signalled(args, SIGINT, 0.5, &took), 130);
  assert_true(took < 5);
  assert_int_equal(run_signalled(args, SIGTERM, 0.5, &took), 143);
  assert_true(took < 5);
  snprintf(out, sizeof out, "%s/profile.json", dir);
  snprintf(args, sizeof args, "calibrate pipe --capacity 4KiB --min-bytes 1KiB --max-bytes 16KiB "
           "--sizes 100 --repeats 100 --timeout 60s -o %s", out);
  assert_int_equal(run_signalled(args, SIGINT, 0.5, &took), 130);
  assert_true(took < 5);
  assert_int_equal(access(out, F_OK), -1);
  snprintf(args, sizeof args, "calibrate pipe --capacity 4KiB --min-bytes 1KiB --max-bytes 16KiB "
           "--sizes 100 --repeats 100 --timeout 1s -o %s", out);
  assert_int_equal(run_signalled(args, 0, 0, &took), 1);
  assert_true(took < 5);
  assert_int_equal(access(out, F_OK), -1);
  snprintf(args, sizeof args, "probe pipe --capacity 4KiB --sizes 100 --repeats 100 -o %s", out);
  assert_int_equal(run_signalled(args, SIGTERM, 0.5, &took), 143);
  assert_int_equal(access(out, F_OK), -1);
  remove(prog);
  assert_int_equal(rmdir(dir), 0);
}

static void test_demo(void **s) {
  (void)s;
  char path[128], args[512];
  snprintf(path, sizeof path, "/tmp/xstage-demo-%d.json", (int)getpid());
  snprintf(args, sizeof args, "demo --json --emit-program %s", path);
  expect_rc(args, 0, NULL);
  json_error_t je;
  json_t *a = json_loads(out_buf, 0, &je);
  assert_non_null(a);
  snprintf(args, sizeof args, "predict --profile h200-nvlink --program %s --json", path);
  expect_rc(args, 0, NULL);
  json_t *b = json_loads(out_buf, 0, &je);
  assert_non_null(b);
  double ma = num(json_object_get(json_object_get(a, "models"), "burstgap"), "makespan_s");
  double mb = num(json_object_get(json_object_get(b, "models"), "burstgap"), "makespan_s");
  assert_true(ma == mb && ma > 0);
  json_decref(a);
  json_decref(b);
  remove(path);
  expect_rc("demo", 0, NULL);
  assert_non_null(strstr(out_buf, "where the time goes"));
  expect_rc("profiles", 0, NULL);
  assert_non_null(strstr(out_buf, "h800-nvlink"));
  assert_non_null(strstr(out_buf, "leads"));
  expect_rc("profiles show h100-pcie5-host", 0, NULL);
  json_t *p = json_loads(out_buf, 0, &je);
  assert_non_null(p);
  json_decref(p);
}

/* Run "xstage ARGS" with standard output on /dev/full: exit 1 and the
 * reason on stderr, whatever the command. */
static void expect_full(const char *args) {
  char cmd[4096], ep[64];
  snprintf(ep, sizeof ep, "/tmp/xstage-test-full.%d", (int)getpid());
  snprintf(cmd, sizeof cmd, "cd '%s' && '%s' %s >/dev/full 2>%s", XSTAGE_SRC,
           XSTAGE_BIN, args, ep);
  int st = system(cmd);
  FILE *e = fopen(ep, "r");
  size_t n = e ? fread(err_buf, 1, sizeof err_buf - 1, e) : 0;
  err_buf[n] = '\0';
  if (e)
    fclose(e);
  remove(ep);
  char want[128];
  snprintf(want, sizeof want, "xstage %.*s: writing standard output: %s",
           (int)strcspn(args, " "), args, strerror(ENOSPC));
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 1 || !strstr(err_buf, want)) {
    fprintf(stderr, "xstage %s >/dev/full: status %d\nstderr: %s\nwant: %s\n", args,
            WIFEXITED(st) ? WEXITSTATUS(st) : -1, err_buf, want);
    fail();
  }
}

static void test_stdout_errors(void **s) {
  (void)s;
  if (access("/dev/full", W_OK) != 0)
    skip();
  char path[128], args[512];
  snprintf(path, sizeof path, "/tmp/xstage-full-%d.csv", (int)getpid());
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fprintf(f, "backend,bytes,gap_s,issue_s,deliver_s,repeat\n");
  for (int k = 1; k <= 8; k++)
    fprintf(f, "pipe,%d,0,%g,%g,0\n", k * 1000, k * 1e-6, k * 2e-6 + 1e-6);
  fclose(f);
  const char *cmds[] = {
      "sweep megamoe --profile h800-nvlink --csv",
      "sweep flashattn --profile h100-nvlink --json",
      "plan megamoe --preset glm --profile h800-nvlink",
      "plan megamoe --preset glm --profile h800-nvlink --tokens 8 --emit-program -",
      "plan flashattn --preset mha --profile h200-nvlink",
      "profiles", "profiles show h200-nvlink",
      "predict --profile h200-nvlink --program examples/hol.json",
      "predict --profile h200-nvlink --program examples/hol.json --json",
      "simulate --profile h200-nvlink --program examples/hol.json",
      "demo", "validate megamoe --data data/published/megamoe.csv",
      "predict --help"};
  for (size_t i = 0; i < sizeof cmds / sizeof *cmds; i++)
    expect_full(cmds[i]);
  snprintf(args, sizeof args, "fit %s", path);
  expect_full(args);
  remove(path);
}

/* Output files: a new one gets the mode the umask leaves; a symbolic link
 * stays a link and its target gets the text; a device stays a device. As
 * root, a device made for the test stands in for /dev/null, which a
 * regression would replace. */
static void test_output_paths(void **s) {
  (void)s;
  char dir[64], path[160], args[1024];
  snprintf(dir, sizeof dir, "/tmp/xstage-out-%d", (int)getpid());
  assert_int_equal(mkdir(dir, 0700), 0);
  const char *pred = "predict --profile h200-nvlink --program examples/hol.json";
  mode_t old = umask(027);
  snprintf(path, sizeof path, "%s/new.svg", dir);
  snprintf(args, sizeof args, "%s --svg %s", pred, path);
  expect_rc(args, 0, NULL);
  umask(old);
  struct stat sb;
  assert_int_equal(stat(path, &sb), 0);
  assert_int_equal(sb.st_mode & 0777, 0640);
  /* a link to a file, and a link to nothing yet */
  char target[160], link[160];
  snprintf(target, sizeof target, "%s/target.svg", dir);
  snprintf(link, sizeof link, "%s/link.svg", dir);
  FILE *f = fopen(target, "w");
  assert_non_null(f);
  fputs("old\n", f);
  fclose(f);
  assert_int_equal(symlink("target.svg", link), 0);
  char dangling[160], made[160];
  snprintf(dangling, sizeof dangling, "%s/dangling.json", dir);
  snprintf(made, sizeof made, "%s/made.json", dir);
  assert_int_equal(symlink("made.json", dangling), 0);
  snprintf(args, sizeof args, "%s --svg %s --trace %s", pred, link, dangling);
  expect_rc(args, 0, NULL);
  assert_int_equal(lstat(link, &sb), 0);
  assert_true(S_ISLNK(sb.st_mode));
  assert_int_equal(lstat(dangling, &sb), 0);
  assert_true(S_ISLNK(sb.st_mode));
  assert_int_equal(stat(target, &sb), 0);
  assert_true(S_ISREG(sb.st_mode) && sb.st_size > 100);
  assert_int_equal(stat(made, &sb), 0);
  assert_true(S_ISREG(sb.st_mode) && sb.st_size > 100);
  /* a character device */
  char dev[160];
  struct stat null_sb;
  assert_int_equal(stat("/dev/null", &null_sb), 0);
  snprintf(dev, sizeof dev, "%s/null", dir);
  int have_dev = 1;
  if (geteuid() != 0)
    snprintf(dev, sizeof dev, "/dev/null");
  else if (mknod(dev, S_IFCHR | 0666, null_sb.st_rdev) != 0)
    have_dev = 0; /* no device nodes here: nothing safe to write to */
  if (have_dev) {
    snprintf(args, sizeof args, "%s --trace %s --svg %s", pred, dev, dev);
    expect_rc(args, 0, NULL);
    assert_int_equal(lstat(dev, &sb), 0);
    assert_true(S_ISCHR(sb.st_mode) && sb.st_rdev == null_sb.st_rdev);
  }
  const char *names[] = {"new.svg", "target.svg", "link.svg", "dangling.json",
                         "made.json", "null"};
  for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
    snprintf(path, sizeof path, "%s/%s", dir, names[i]);
    remove(path);
  }
  assert_int_equal(rmdir(dir), 0); /* no temporary file left behind */
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_help), cmocka_unit_test(test_bad_flags),
      cmocka_unit_test(test_predict_json), cmocka_unit_test(test_auto_ids_and_text),
      cmocka_unit_test(test_simulate), cmocka_unit_test(test_plan_sweep), cmocka_unit_test(test_validate),
      cmocka_unit_test(test_flashattn), cmocka_unit_test(test_measuring),
      cmocka_unit_test(test_timeouts_and_signals),
      cmocka_unit_test(test_demo), cmocka_unit_test(test_stdout_errors),
      cmocka_unit_test(test_output_paths), cmocka_unit_test(test_counts_and_grids),
      cmocka_unit_test(test_csv)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
