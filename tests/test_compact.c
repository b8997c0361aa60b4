/*
 * test_compact.c: counted workers ("count") and repeats ({"repeat": K,
 * "ops": [...]}) in program JSON: they expand to the same program as the
 * long form written out by hand (the same JSON back, the same results
 * under every model), ids inside them get their indexes and waits find
 * them, the example persistent kernel parses and predicts, and every bad
 * use is refused with a message naming file, line, column and path, by the
 * library and by the command (exit 2).
 */
#define _XOPEN_SOURCE 700
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testio.h"
#include "xstage.h"

/* A producer, two counted SMs that each post two tiles (a nested repeat of
 * pieces waiting on the tile of their own pass), and a sink that collects
 * each SM's "done" with a repeat of waits. */
static const char *const compact =
    "{\"name\":\"c\",\"workers\":[\n"
    " {\"name\":\"prod\",\"ops\":[{\"send\":100,\"id\":\"ready\"}]},\n"
    " {\"name\":\"sm\",\"count\":2,\"ops\":[\n"
    "  {\"wait\":\"ready\"},\n"
    "  {\"repeat\":2,\"ops\":[\n"
    "   {\"compute\":1e-6},\n"
    "   {\"send\":4096,\"channel\":\"nvlink\",\"id\":\"t\"},\n"
    "   {\"repeat\":2,\"ops\":[{\"send\":512,\"id\":\"p\"},{\"wait\":\"t\"}]},\n"
    "   {\"wait\":\"t\"}]},\n"
    "  {\"send\":8,\"id\":\"done\"},\n"
    "  {\"send\":64},\n"
    "  {\"fence\":true}]},\n"
    " {\"name\":\"sink\",\"ops\":[{\"repeat\":2,\"ops\":[{\"wait\":\"done\"}]},"
    "{\"wait\":\"sm[1]#16\"}]}\n"
    "]}\n";

/* the same, written out */
#define SM(i)                                                                  \
  "{\"name\":\"sm[" #i "]\",\"ops\":["                                         \
  "{\"wait\":\"ready\"},"                                                      \
  "{\"compute\":1e-6},"                                                        \
  "{\"send\":4096,\"channel\":\"nvlink\",\"id\":\"t[" #i "][0]\"},"            \
  "{\"send\":512,\"id\":\"p[" #i "][0][0]\"},{\"wait\":\"t[" #i "][0]\"},"      \
  "{\"send\":512,\"id\":\"p[" #i "][0][1]\"},{\"wait\":\"t[" #i "][0]\"},"      \
  "{\"wait\":\"t[" #i "][0]\"},"                                               \
  "{\"compute\":1e-6},"                                                        \
  "{\"send\":4096,\"channel\":\"nvlink\",\"id\":\"t[" #i "][1]\"},"            \
  "{\"send\":512,\"id\":\"p[" #i "][1][0]\"},{\"wait\":\"t[" #i "][1]\"},"      \
  "{\"send\":512,\"id\":\"p[" #i "][1][1]\"},{\"wait\":\"t[" #i "][1]\"},"      \
  "{\"wait\":\"t[" #i "][1]\"},"                                               \
  "{\"send\":8,\"id\":\"done[" #i "]\"},"                                      \
  "{\"send\":64},"                                                             \
  "{\"fence\":true}]}"
static const char *const longform =
    "{\"name\":\"c\",\"workers\":["
    "{\"name\":\"prod\",\"ops\":[{\"send\":100,\"id\":\"ready\"}]}," SM(0) "," SM(1) ","
    "{\"name\":\"sink\",\"ops\":[{\"wait\":\"done[0]\"},{\"wait\":\"done[1]\"},"
    "{\"wait\":\"sm[1]#16\"}]}]}";

static xs_program *parse_ok(const char *text, const char *file) {
  xs_program *p = NULL;
  xs_error e;
  xs_status st = xs_program_parse(text, strlen(text), file, &p, &e);
  if (st)
    fprintf(stderr, "%s\n", e.message);
  assert_int_equal(st, XS_OK);
  return p;
}

static void same_results(const xs_result *a, const xs_result *b) {
  assert_true(a->makespan_s == b->makespan_s);
  assert_true(a->issue_done_s == b->issue_done_s);
  assert_true(a->compute_term_s == b->compute_term_s);
  assert_true(a->comm_term_s == b->comm_term_s);
  assert_int_equal(a->nworkers, b->nworkers);
  assert_int_equal(a->nsends, b->nsends);
  assert_int_equal(a->nchannels, b->nchannels);
  assert_int_equal(a->events, b->events);
  assert_int_equal(a->fast_path, b->fast_path);
  assert_int_equal(a->workers == NULL, b->workers == NULL);
  for (size_t w = 0; a->workers && w < a->nworkers; w++) {
    const xs_worker_result *x = &a->workers[w], *y = &b->workers[w];
    assert_true(x->finish_s == y->finish_s && x->stall_s == y->stall_s &&
                x->compute_s == y->compute_s && x->issue_s == y->issue_s &&
                x->overhead_s == y->overhead_s && x->blocked_s == y->blocked_s);
  }
  assert_int_equal(a->sends == NULL, b->sends == NULL);
  for (size_t s = 0; a->sends && s < a->nsends; s++) {
    const xs_send_result *x = &a->sends[s], *y = &b->sends[s];
    assert_true(x->issue_start_s == y->issue_start_s &&
                x->issue_end_s == y->issue_end_s &&
                x->deliver_s == y->deliver_s && x->xstage_s == y->xstage_s &&
                x->stall_s == y->stall_s);
  }
  for (size_t c = 0; c < a->nchannels; c++)
    assert_true(a->channels[c].bytes == b->channels[c].bytes &&
                a->channels[c].peak_backlog_B == b->channels[c].peak_backlog_B &&
                a->channels[c].sends == b->channels[c].sends);
}

/* count and repeat make exactly the program written out: the same JSON,
 * the same results under every model and the same report */
static void test_expands_to_long_form(void **s) {
  (void)s;
  xs_program *c = parse_ok(compact, "c.json"), *l = parse_ok(longform, "l.json");
  char *tc = xs_program_to_json(c), *tl = xs_program_to_json(l);
  assert_non_null(tc);
  assert_non_null(tl);
  assert_string_equal(tc, tl);
  assert_int_equal(xs_program_worker_count(c), 4);
  assert_int_equal(xs_program_op_count(c, 1), 18);
  assert_int_equal(xs_program_send_count(c), 1 + 2 * 8 + 0);
  xs_profile *prof;
  xs_error e;
  assert_int_equal(xs_profile_load("h200-nvlink", &prof, &e), XS_OK);
  xs_result *rc[XS_MODEL_COUNT], *rl[XS_MODEL_COUNT];
  for (int m = 0; m < XS_MODEL_COUNT; m++) {
    assert_int_equal(xs_evaluate(c, prof, (xs_model)m, NULL, &rc[m], &e), XS_OK);
    assert_int_equal(xs_evaluate(l, prof, (xs_model)m, NULL, &rl[m], &e), XS_OK);
    same_results(rc[m], rl[m]);
  }
  char *jc = xs_report_json(c, prof, rc, XS_MODEL_COUNT);
  char *jl = xs_report_json(l, prof, rl, XS_MODEL_COUNT);
  assert_non_null(jc);
  assert_non_null(jl);
  assert_string_equal(jc, jl);
  for (int m = 0; m < XS_MODEL_COUNT; m++) {
    xs_result_free(rc[m]);
    xs_result_free(rl[m]);
  }
  free(jc), free(jl), free(tc), free(tl);
  xs_profile_free(prof);
  xs_program_free(c);
  xs_program_free(l);
}

/* the send a wait op waits on, by id */
static const char *wait_target(const xs_program *p, size_t w, size_t i,
                               char *buf, size_t n) {
  xs_op_info op;
  xs_program_op(p, w, i, &op);
  assert_int_equal(op.kind, XS_OP_WAIT);
  return xs_program_send_id(p, op.send, buf, n);
}

static const char *send_id(const xs_program *p, size_t w, size_t i, char *buf,
                           size_t n) {
  xs_op_info op;
  xs_program_op(p, w, i, &op);
  assert_int_equal(op.kind, XS_OP_SEND);
  return xs_program_send_id(p, op.send, buf, n);
}

/* ids get the indexes of the count and repeats around them, outermost
 * first; a wait takes the most of its indexes that name a send */
static void test_ids_and_waits(void **s) {
  (void)s;
  char b[64];
  xs_program *p = parse_ok(compact, "c.json");
  assert_string_equal(xs_program_worker_name(p, 1), "sm[0]");
  assert_string_equal(xs_program_worker_name(p, 2), "sm[1]");
  assert_string_equal(send_id(p, 2, 2, b, sizeof b), "t[1][0]");
  assert_string_equal(send_id(p, 2, 12, b, sizeof b), "p[1][1][1]");
  assert_string_equal(send_id(p, 1, 15, b, sizeof b), "done[0]");
  assert_string_equal(send_id(p, 2, 16, b, sizeof b), "sm[1]#16");
  /* no "ready[i]": the name as written */
  assert_string_equal(wait_target(p, 1, 0, b, sizeof b), "ready");
  /* inside the inner repeat: t of the same outer pass */
  assert_string_equal(wait_target(p, 2, 11, b, sizeof b), "t[1][1]");
  assert_string_equal(wait_target(p, 1, 7, b, sizeof b), "t[0][0]");
  /* a repeat of waits outside the count collects what each copy sent */
  assert_string_equal(wait_target(p, 3, 0, b, sizeof b), "done[0]");
  assert_string_equal(wait_target(p, 3, 1, b, sizeof b), "done[1]");
  assert_string_equal(wait_target(p, 3, 2, b, sizeof b), "sm[1]#16");
  xs_program_free(p);

  /* an indexed id named from outside, and from inside a count */
  const char *t =
      "{\"workers\":[{\"name\":\"a\",\"count\":3,\"ops\":[{\"repeat\":2,\"ops\":"
      "[{\"send\":1,\"id\":\"x\"}]},{\"wait\":\"x[2][1]\"},{\"send\":2}]},"
      "{\"name\":\"b\",\"ops\":[{\"wait\":\"x[1][0]\"},{\"wait\":\"a[2]#3\"}]}]}";
  p = parse_ok(t, "t.json");
  assert_int_equal(xs_program_worker_count(p), 4);
  assert_string_equal(wait_target(p, 0, 2, b, sizeof b), "x[2][1]");
  assert_string_equal(wait_target(p, 1, 2, b, sizeof b), "x[2][1]");
  assert_string_equal(wait_target(p, 3, 0, b, sizeof b), "x[1][0]");
  assert_string_equal(wait_target(p, 3, 1, b, sizeof b), "a[2]#3");
  xs_program_free(p);

  /* an unnamed counted worker is w<index>[i]; count 1 still indexes */
  t = "{\"workers\":[{\"ops\":[{\"fence\":true}]},{\"count\":1,\"ops\":"
      "[{\"send\":1,\"id\":\"s\"}]}]}";
  p = parse_ok(t, "t.json");
  assert_string_equal(xs_program_worker_name(p, 1), "w1[0]");
  assert_string_equal(send_id(p, 1, 0, b, sizeof b), "s[0]");
  xs_program_free(p);
}

/* nested repeats multiply; a worker's ops as written stay the same */
static void test_nested_and_empty(void **s) {
  (void)s;
  const char *t =
      "{\"workers\":[{\"name\":\"w\",\"count\":3,\"ops\":[{\"compute\":1},"
      "{\"repeat\":4,\"ops\":[{\"repeat\":5,\"ops\":[{\"compute\":1},"
      "{\"repeat\":1,\"ops\":[]}]},{\"fence\":true}]},{\"repeat\":2,\"ops\":[]}]}]}";
  xs_program *p = parse_ok(t, "t.json");
  assert_int_equal(xs_program_worker_count(p), 3);
  for (size_t w = 0; w < 3; w++)
    assert_int_equal(xs_program_op_count(p, w), 1 + 4 * (5 + 1));
  xs_op_info op;
  xs_program_op(p, 2, 6, &op);
  assert_int_equal(op.kind, XS_OP_FENCE);
  xs_program_free(p);
}

/* parse, write, parse: the same program, written the same */
static void test_roundtrip(void **s) {
  (void)s;
  xs_program *p = parse_ok(compact, "c.json");
  char *t = xs_program_to_json(p);
  assert_non_null(t);
  xs_program *q = parse_ok(t, "rt.json");
  char *u = xs_program_to_json(q);
  assert_string_equal(t, u);
  assert_int_equal(xs_program_worker_count(q), 4);
  assert_int_equal(xs_program_send_count(q), xs_program_send_count(p));
  for (size_t w = 0; w < 4; w++)
    for (size_t i = 0; i < xs_program_op_count(p, w); i++) {
      xs_op_info a, b;
      xs_program_op(p, w, i, &a);
      xs_program_op(q, w, i, &b);
      assert_true(a.kind == b.kind && a.value == b.value && a.send == b.send);
    }
  free(t), free(u);
  xs_program_free(p);
  xs_program_free(q);
}

/* the example: 132 SM workers of 8 ops from a few lines */
static void test_example(void **s) {
  (void)s;
  xs_program *p;
  xs_error e;
  assert_int_equal(
      xs_program_load(XSTAGE_SRC "/examples/persistent-132x8.json", &p, &e),
      XS_OK);
  assert_int_equal(xs_program_worker_count(p), 132);
  size_t ops = 0;
  for (size_t w = 0; w < 132; w++) {
    assert_int_equal(xs_program_op_count(p, w), 8);
    ops += xs_program_op_count(p, w);
  }
  assert_int_equal(ops, 1056);
  assert_int_equal(xs_program_send_count(p), 264);
  assert_string_equal(xs_program_worker_name(p, 131), "sm[131]");
  char b[64];
  assert_string_equal(wait_target(p, 131, 7, b, sizeof b), "tile[131][1]");
  xs_program_free(p);
}

static char out_buf[1 << 20], err_buf[1 << 16];

/* "xstage ARGS" from the source folder; stdout and stderr captured */
static int run(const char *args) {
  return xs_test_cli_buf(args, out_buf, sizeof out_buf, err_buf, sizeof err_buf);
}

static void test_example_predict(void **s) {
  (void)s;
  int rc = run("predict --profile h200-nvlink --program "
               "examples/persistent-132x8.json --json");
  if (rc)
    fprintf(stderr, "%s", err_buf);
  assert_int_equal(rc, 0);
  json_error_t je;
  json_t *r = json_loads(out_buf, 0, &je);
  assert_non_null(r);
  json_t *m = json_object_get(json_object_get(r, "models"), "burstgap");
  assert_int_equal(json_array_size(json_object_get(m, "workers")), 132);
  assert_int_equal(json_array_size(json_object_get(m, "sends")), 264);
  assert_true(json_number_value(json_object_get(m, "makespan_s")) > 0);
  json_decref(r);
  rc = run("predict --profile h200-nvlink --program examples/persistent-132x8.json");
  assert_int_equal(rc, 0);
  assert_non_null(strstr(out_buf, "132 workers, 264 sends"));
}

typedef struct {
  const char *text;
  xs_status status;
  const char *want; /* in the message, after "FILE:" */
} bad_case;

#define W(ops) "{\"workers\":[{\"name\":\"w\",\"ops\":[" ops "]}]}"
#define C(count) "{\"workers\":[{\"name\":\"w\",\"count\":" count ",\"ops\":[{\"fence\":true}]}]}"
#define R(times, ops) "{\"repeat\":" times ",\"ops\":[" ops "]}"

static const bad_case bad[] = {
    {C("0"), XS_INVALID, "1:33: workers[0].count: expected a number of workers, a whole number from 1 to 1048576, got 0 (must be > 0)"},
    {C("-2"), XS_INVALID, "1:33: workers[0].count: expected a number of workers, a whole number from 1 to 1048576, got -2 (must be > 0)"},
    {C("2.5"), XS_INVALID, "1:33: workers[0].count: expected a number of workers, a whole number from 1 to 1048576, got 2.5 (must be a whole number)"},
    {C("\"4\""), XS_INVALID, "1:33: workers[0].count: expected a number of workers, a whole number from 1 to 1048576, got a string"},
    {C("1048577"), XS_INVALID, "1:33: workers[0].count: expected a number of workers, a whole number from 1 to 1048576, got 1048577 (too large: at most 1048576)"},
    {C("1e300"), XS_INVALID, "1:33: workers[0].count: expected a number of workers, a whole number from 1 to 1048576, got 1.0000000000000001e+300 (too large: at most 1048576)"},
    {"{\"workers\":[{\"name\":\"w[1]\",\"ops\":[]},{\"name\":\"w\",\"count\":2,\"ops\":[]}]}",
     XS_INVALID, "1:46: workers[1].name: two workers are named \"w[1]\""},
    {"{\"workers\":[{\"name\":\"w\",\"count\":2,\"ops\":[],\"repeat\":2}]}",
     XS_INVALID, "1:53: workers[0].repeat: unknown key \"repeat\" (known: name, ops, count, copies)"},
    {W(R("0", "{\"fence\":true}")), XS_INVALID, "1:42: workers[0].ops[0].repeat: expected a number of passes, a whole number from 1 to 16777216, got 0 (must be > 0)"},
    {W(R("-1", "{\"fence\":true}")), XS_INVALID, "1:42: workers[0].ops[0].repeat: expected a number of passes, a whole number from 1 to 16777216, got -1 (must be > 0)"},
    {W(R("1.5", "{\"fence\":true}")), XS_INVALID, "1:42: workers[0].ops[0].repeat: expected a number of passes, a whole number from 1 to 16777216, got 1.5 (must be a whole number)"},
    {W(R("null", "{\"fence\":true}")), XS_INVALID, "1:42: workers[0].ops[0].repeat: expected a number of passes, a whole number from 1 to 16777216, got null"},
    {W(R("16777217", "")), XS_INVALID, "1:42: workers[0].ops[0].repeat: expected a number of passes, a whole number from 1 to 16777216, got 16777217 (too large: at most 16777216)"},
    {W("{\"fence\":true},{\"repeat\":3}"), XS_INVALID, "1:47: workers[0].ops[1]: missing \"ops\" (the array of ops to repeat)"},
    {W("{\"repeat\":3,\"ops\":{}}"), XS_INVALID, "1:50: workers[0].ops[0].ops: expected an array of ops, got an object"},
    {W("{\"ops\":[{\"fence\":true}]}"), XS_INVALID, "1:32: workers[0].ops[0]: missing \"repeat\""},
    {W("{\"repeat\":2,\"ops\":[],\"times\":3}"), XS_INVALID, "1:61: workers[0].ops[0].times: unknown key \"times\" (known: repeat, ops)"},
    {W("{\"repeat\":2,\"send\":4,\"ops\":[]}"), XS_INVALID, "1:51: workers[0].ops[0].send: unknown key \"send\" (known: repeat, ops)"},
    {W(R("2", "{\"compute\":1},{\"count\":2}")), XS_INVALID, "1:74: workers[0].ops[0].ops[1].count: unknown key \"count\""},
    /* errors inside repeats point at the op as written */
    {W("{\"fence\":true}," R("2", "{\"compute\":1}," R("3", "{\"send\":-4}"))),
     XS_INVALID, "1:107: workers[0].ops[1].ops[1].ops[0].send: expected a size in bytes, got -4"},
    {W(R("2", "{\"send\":1,\"id\":\"x\"}") ",{\"send\":1,\"id\":\"x[1]\"}"),
     XS_INVALID, "1:88: workers[0].ops[1].id: duplicate send id \"x[1]\" (also worker \"w\", op 1)"},
    {W(R("2", "{\"wait\":\"y\"}")), XS_INVALID, "1:59: workers[0].ops[0].ops[0].wait: wait on unknown send id \"y\" (no send has the id \"y[0]\", \"y\")"},
    {W(R("2", "{\"wait\":\"x\"},{\"send\":1,\"id\":\"x\"}")), XS_CYCLE, "1:59: workers[0].ops[0].ops[0].wait: waits form a cycle"},
    /* the second copy of a counted worker: "x[0]" is there for the first */
    {"{\"workers\":[{\"name\":\"p\",\"ops\":[{\"send\":1,\"id\":\"x[0]\"}]},\n"
     "{\"name\":\"sm\",\"count\":2,\"ops\":[{\"compute\":1},{\"repeat\":2,\"ops\":[{\"compute\":1},{\"wait\":\"x\"}]}]}]}",
     XS_INVALID, "2:86: workers[1].ops[1].ops[1].wait: wait on unknown send id \"x\" (no send has the id \"x[1][0]\", \"x[1]\", \"x\")"},
    /* bounds on the expansion */
    {W(R("4096", R("4097", "{\"fence\":true}"))), XS_INVALID, "1:42: workers[0].ops[0].repeat: repeat 4096 x 4097 ops takes the program past 16777216 ops"},
    {W("{\"fence\":true}," R("16777216", "{\"fence\":true}")), XS_INVALID, "1:57: workers[0].ops[1].repeat: repeat 16777216 x 1 ops takes the program past 16777216 ops"},
    {W(R("2", R("16777216", "{\"fence\":true}"))), XS_INVALID, "1:42: workers[0].ops[0].repeat: repeat 2 x 16777216 ops takes the program past 16777216 ops"},
    {"{\"workers\":[{\"name\":\"w\",\"count\":1024,\"ops\":[" R("16385", "{\"fence\":true}") "]}]}",
     XS_INVALID, "1:33: workers[0].count: count 1024 x 16385 ops takes the program past 16777216 ops"},
    /* empty after expansion: where the first op list is */
    {W(R("3", "")), XS_INVALID, "1:31: workers[0].ops: the program is empty: no worker has an op"},
    {"{\"workers\":[{\"name\":\"a\",\"count\":3,\"ops\":[]}]}", XS_INVALID,
     "1:41: workers[0].ops: the program is empty: no worker has an op"},
    {W(R("1", R("1", R("1", R("1", R("1", R("1", "{\"fence\":true}"))))))), XS_INVALID,
     "1:137: workers[0].ops[0].ops[0].ops[0].ops[0].ops[0].ops[0].repeat: repeats nest at most 5 deep, this one is inside 5 others"},
};

/* the bounds over the whole program: the first worker takes all there is
 * (seconds to expand, so through the library only) */
static const bad_case bad_slow[] = {
    {"{\"workers\":[{\"name\":\"w\",\"count\":1048576,\"ops\":[]},{\"count\":1,\"ops\":[]}]}",
     XS_INVALID, "1:60: workers[1].count: count 1 takes the program past 1048576 workers"},
    /* a plain worker after the counted ones counts too */
    {"{\"workers\":[{\"name\":\"w\",\"count\":1048576,\"ops\":[]},{\"name\":\"p\",\"ops\":[]}]}",
     XS_INVALID, "1:51: workers[1]: this worker takes the program past 1048576 workers"},
    {"{\"workers\":[{\"name\":\"a\",\"ops\":[" R("16777216", "{\"fence\":true}") "]},"
     "{\"name\":\"b\",\"ops\":[" R("1", "{\"fence\":true}") "]}]}",
     XS_INVALID, "1:106: workers[1].ops[0].repeat: repeat 1 x 1 ops takes the program past 16777216 ops"},
};

static void check_bad(const bad_case *c, const char *dir, size_t i, int cli) {
  char want[1024], path[256];
  snprintf(path, sizeof path, "%s/bad%zu.json", dir, i);
  xs_program *p = NULL;
  xs_error e = {0};
  xs_status st = xs_program_parse(c->text, strlen(c->text), path, &p, &e);
  snprintf(want, sizeof want, "%s:%s", path, c->want);
  if (st != c->status || !strstr(e.message, want)) {
    fprintf(stderr, "case %zu: %s\n  status %d (want %d)\n  message: %s\n  want: %s\n",
            i, c->text, st, c->status, st ? e.message : "(none)", want);
    fail();
  }
  assert_null(p);
  if (!cli)
    return;
  /* the command: exit 2 and the same message */
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(c->text, f);
  fclose(f);
  char args[512];
  snprintf(args, sizeof args, "predict --profile h200-nvlink --program %s", path);
  int rc = run(args);
  if (rc != 2 || !strstr(err_buf, want)) {
    fprintf(stderr, "case %zu: xstage exit %d (want 2)\n  stderr: %s  want: %s\n",
            i, rc, err_buf, want);
    fail();
  }
  remove(path);
}

static void test_bad_inputs(void **s) {
  (void)s;
  char dir[] = "/tmp/xstage-compact-XXXXXX";
  assert_non_null(mkdtemp(dir));
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
    check_bad(&bad[i], dir, i, 1);
  for (size_t i = 0; i < sizeof bad_slow / sizeof *bad_slow; i++)
    check_bad(&bad_slow[i], dir, i, 0);
  rmdir(dir);
}

/* plain programs read as before: an op with an unknown key, a wait on an
 * unknown id, positions as before */
static void test_plain_unchanged(void **s) {
  (void)s;
  const char *t = W("{\"compute\":1},{\"wait\":\"a[0]\"}");
  xs_program *p;
  xs_error e;
  assert_int_equal(xs_program_parse(t, strlen(t), "t.json", &p, &e), XS_INVALID);
  assert_non_null(strstr(e.message, "t.json:1:54: workers[0].ops[1].wait: wait on unknown send id \"a[0]\""));
  t = W("{\"send\":1,\"channel\":\"x\"},{\"send\":1,\"id\":\"a[0]\"},{\"wait\":\"a[0]\"}");
  p = parse_ok(t, "t.json");
  xs_profile *prof;
  xs_result *r;
  assert_int_equal(xs_profile_load("h200-nvlink", &prof, &e), XS_OK);
  assert_int_equal(xs_evaluate(p, prof, XS_MODEL_BURSTGAP, NULL, &r, &e), XS_INVALID);
  assert_non_null(strstr(e.message, "t.json:1:52: workers[0].ops[0].channel: unknown channel \"x\""));
  xs_program_free(p);
  /* and inside a repeat of a counted worker, the op as written */
  t = "{\"workers\":[{\"name\":\"w\",\"count\":2,\"ops\":[{\"fence\":true},"
      "{\"repeat\":2,\"ops\":[{\"compute\":1},{\"send\":1,\"channel\":\"x\"}]}]}]}";
  p = parse_ok(t, "t.json");
  assert_int_equal(xs_evaluate(p, prof, XS_MODEL_BURSTGAP, NULL, &r, &e), XS_INVALID);
  assert_non_null(strstr(e.message, "t.json:1:110: workers[0].ops[1].ops[1].channel: unknown channel \"x\""));
  xs_program_free(p);
  xs_profile_free(prof);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_expands_to_long_form),
      cmocka_unit_test(test_ids_and_waits),
      cmocka_unit_test(test_nested_and_empty),
      cmocka_unit_test(test_roundtrip),
      cmocka_unit_test(test_example),
      cmocka_unit_test(test_example_predict),
      cmocka_unit_test(test_bad_inputs),
      cmocka_unit_test(test_plain_unchanged),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
