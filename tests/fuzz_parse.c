/*
 * fuzz_parse.c: libFuzzer target for everything the library parses. The
 * first byte picks what the rest is (its value mod 16, so that the
 * corpus's '0' programs, '1' profiles ... '7' units keep their meaning):
 *   0 a program (one that expands to at most 1e5 ops): evaluated under
 *     every model on a built-in profile, and written back, which must read
 *     back and write the same text again
 *   1 a profile: written back, read back, the same text again
 *   2 calibration samples (CSV): written back, read back as the same rows,
 *     then fitted
 *   3 a MegaMoE config (JSON), checked
 *   4 a ring attention config (JSON), checked
 *   5, 7 a size, a time, a rate and a count (xs_parse_size/time/rate/
 *     count), and what the formatters make of them: a number and a unit;
 *     a count is whole
 *   6 bytes that drive the program builder (workers, computes, sends with
 *     channels and ids, waits, fences): what it builds is written, read
 *     back and written again, the same text both times
 *   8, 9 a validate CSV (megamoe, or ep where the header names "library";
 *     flashattn; at most 4 data lines): read, every row is a row of the
 *     JSON, every error finite
 *   10 plan's table flags, a line each: --tokens-grid, --tolerance,
 *     --schedules, --header-prefix; what they accept keeps their rules, and
 *     an accepted prefix makes a header
 *   11 bytes that write a compact program (counts, nested repeats, ids and
 *     waits on them): it reads to the ops the bytes say, or is refused
 *   12 an EP row's gpu and fabric (two lines) in a row of validate ep's
 *     CSV: read exactly when both are built-in names of their kind (no
 *     path is ever opened), else refused naming the line; no message
 *     holds a control character
 *   13 a validate CSV for fit megamoe (at most 3 data lines) on h100-nvlink:
 *     fitted, every factor within x1/4 to x4 and its interval ordered, or
 *     refused with a message free of control characters
 *   14 bytes that drive a tuner (choices, timings from any 8 bytes,
 *     timings of other options, other token counts): a timing is taken in
 *     only when it is 1e-9 to 1e6 s, and one moves no term's log factor
 *     by more than 1.345 times the larger of its sd and the prior's
 * Inputs that once crashed it live in tests/fuzz-corpus/ and run in every
 * build through fuzz_main.c.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xstage.h"

#include <jansson.h>
#include <math.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* what was written must read back and write the same text again */
static void program_roundtrip(const xs_program *prog) {
  xs_error err;
  char *s = xs_program_to_json(prog);
  xs_program *q = NULL;
  if (s) {
    if (xs_program_parse(s, strlen(s), "roundtrip", &q, &err) != XS_OK)
      __builtin_trap();
    char *t = xs_program_to_json(q);
    if (!t || strcmp(s, t) != 0)
      __builtin_trap();
    free(t);
  }
  xs_program_free(q);
  free(s);
}

/* The ops an op list expands to, counting "repeat" K times its inner list
 * (capped; 0 for anything that is not a list) */
static double ops_of(const json_t *ops, int depth) {
  double n = 0;
  size_t i;
  const json_t *op;
  if (!json_is_array(ops) || depth > 8)
    return 0;
  json_array_foreach(ops, i, op) {
    const json_t *k = json_object_get(op, "repeat");
    n += json_is_number(k) ? json_number_value(k) * ops_of(json_object_get(op, "ops"), depth + 1)
                           : 1;
  }
  return n < 1e12 ? n : 1e12;
}

/* A few bytes of "count" and "repeat" expand to millions of ops (up to the
 * parser's bound of 2^24, seconds each under the sanitizers): the fuzzer
 * parses programs that expand to at most 1e5 ops and leaves the bound and
 * larger programs to the tests (test_compact). */
static int small_text(const char *text, size_t n) {
  json_t *root = json_loadb(text, n, 0, NULL);
  const json_t *ws = json_object_get(root, "workers"), *w;
  double total = 0;
  size_t i;
  json_array_foreach(ws, i, w) {
    const json_t *c = json_object_get(w, "count");
    const json_t *k = json_object_get(w, "copies"); /* the simulator writes them out */
    total += (json_is_number(c) ? json_number_value(c) : 1) *
             (json_is_number(k) ? json_number_value(k) : 1) *
             (ops_of(json_object_get(w, "ops"), 0) + 1);
  }
  json_decref(root);
  return total <= 1e5;
}

/* what parsed must be as small as small_text said */
static int small_program(const xs_program *prog) {
  size_t ops = 0;
  for (size_t w = 0; w < xs_program_worker_count(prog); w++)
    ops += xs_program_op_count(prog, w);
  return ops <= 100000;
}

static void fuzz_program(const char *text, size_t n) {
  xs_error err;
  xs_program *prog = NULL;
  if (!small_text(text, n))
    return;
  if (xs_program_parse(text, n, "fuzz", &prog, &err) == XS_OK) {
    if (!small_program(prog))
      __builtin_trap();
    xs_profile *prof = NULL;
    if (xs_profile_load("h200-nvlink", &prof, &err) == XS_OK) {
      for (int m = 0; m < XS_MODEL_COUNT; m++) {
        xs_result *r = NULL;
        xs_evaluate(prog, prof, (xs_model)m, NULL, &r, &err);
        xs_result_free(r);
      }
      xs_result *r = NULL;
      xs_eval_options o = {1, 0, NULL, NULL};
      xs_evaluate(prog, prof, XS_MODEL_BURSTGAP, &o, &r, &err);
      xs_result_free(r);
      r = NULL;
      xs_sim_options so = {0, XS_ARB_RR, 0, NULL, 1e5};
      xs_simulate(prog, prof, &so, &r, &err);
      xs_result_free(r);
    }
    program_roundtrip(prog);
    xs_profile_free(prof);
  }
  xs_program_free(prog);
}

static void fuzz_profile(const char *text, size_t n) {
  xs_error err;
  xs_profile *p = NULL;
  if (xs_profile_parse(text, n, "fuzz", &p, &err) == XS_OK) {
    char *s = xs_profile_to_json(p);
    xs_profile *q = NULL;
    if (s) {
      if (xs_profile_parse(s, strlen(s), "roundtrip", &q, &err) != XS_OK)
        __builtin_trap(); /* what we print must read back */
      char *t = xs_profile_to_json(q);
      if (!t || strcmp(s, t) != 0)
        __builtin_trap();
      free(t);
    }
    xs_profile_free(q);
    free(s);
  }
  xs_profile_free(p);
}

static void fuzz_samples(const char *text, size_t n) {
  xs_error err;
  xs_samples *s = NULL;
  if (xs_samples_parse_csv(text, n, "fuzz", &s, &err) != XS_OK)
    return;
  char *csv = xs_samples_to_csv(s, "fuzz\nheader");
  xs_samples *q = NULL;
  if (csv) {
    if (xs_samples_parse_csv(csv, strlen(csv), "roundtrip", &q, &err) != XS_OK ||
        q->n != s->n || strcmp(q->backend, s->backend) != 0)
      __builtin_trap();
    for (size_t i = 0; i < s->n; i++)
      if (q->rows[i].bytes != s->rows[i].bytes || q->rows[i].gap_s != s->rows[i].gap_s ||
          q->rows[i].issue_s != s->rows[i].issue_s ||
          q->rows[i].deliver_s != s->rows[i].deliver_s || q->rows[i].repeat != s->rows[i].repeat)
        __builtin_trap();
  }
  if (s->n <= 256) { /* the fit bootstraps: keep each run short */
    xs_fit f;
    if (xs_fit_samples(s, &f, &err) == XS_OK) {
      xs_profile *p = xs_fit_profile(&f, "fuzz", "fuzz", "fuzz");
      xs_profile_free(p);
    }
  }
  xs_samples_free(q);
  free(csv);
  xs_samples_free(s);
}

/* a formatted value holds a number and a unit, uncut */
static void check_format(const char *f) {
  size_t n = strlen(f);
  if (n == 0 || n >= 31 || (!strchr(f, ' ') && strcmp(f, "unbounded") && strcmp(f, "n/a")))
    __builtin_trap();
}

static void fuzz_units(const char *text, size_t n) {
  char buf[128], out[32];
  if (n >= sizeof buf)
    n = sizeof buf - 1;
  memcpy(buf, text, n);
  buf[n] = '\0';
  xs_error err;
  double v;
  if (xs_parse_size(buf, &v, &err) == XS_OK)
    check_format(xs_format_size(v, out, sizeof out));
  if (xs_parse_time(buf, &v, &err) == XS_OK)
    check_format(xs_format_time(v, out, sizeof out));
  if (xs_parse_rate(buf, &v, &err) == XS_OK)
    check_format(xs_format_rate(v, out, sizeof out));
  if (xs_parse_count(buf, &v, &err) == XS_OK && (v != (double)(uint64_t)v || v > 0x1p53))
    __builtin_trap();
}

/* the bytes as calls to the builder; the names come from small tables so
 * that ids, auto ids and channels meet */
static void fuzz_builder(const uint8_t *d, size_t n) {
  static const char *const names[] = {"a", "b", "w\xc3\xa9", "a#0", "x\x01y"};
  static const char *const ids[] = {"a#0", "a#00", "b#1", "i", "j#", "w\xc3\xa9#2", "\xff"};
  static const char *const chans[] = {"nvlink", "pcie", "c\xe2\x82", NULL};
  xs_program *p = xs_program_new(n && d[0] & 1 ? "fuzz" : "fuzz \xe2\x9c\x93");
  xs_error err;
  size_t nw = 0, i = 1;
  while (i + 1 < n && i < 512) {
    uint8_t op = d[i], arg = d[i + 1];
    i += 2;
    size_t w = nw ? arg % nw : 0;
    switch (op % 9) {
    case 0:
      if (xs_program_add_worker(p, names[arg % 5], NULL, &err) == XS_OK)
        nw++;
      break;
    case 6:
      xs_program_signal(p, w, names[(op >> 4) % 5], (double)(arg % 4), &err);
      break;
    case 7:
      xs_program_await(p, w, names[(op >> 4) % 5], (double)(arg % 6), &err);
      break;
    case 8:
      if (xs_program_add_workers(p, names[arg % 5], (size_t)(op >> 4),
                                 NULL, &err) == XS_OK)
        nw++;
      break;
    case 1:
      xs_program_compute(p, w, (double)arg * 1e-6, &err);
      break;
    case 2:
      xs_program_send(p, w, (double)arg * 512 / 3, chans[(op >> 3) % 4],
                      op & 0x40 ? ids[(op >> 3) % 7] : NULL, NULL, &err);
      break;
    case 3:
      xs_program_wait(p, w, ids[(op >> 3) % 7], &err);
      break;
    case 4:
      if (xs_program_send_count(p))
        xs_program_wait_send(p, w, (op >> 3) % xs_program_send_count(p), &err);
      break;
    default:
      xs_program_fence(p, w, &err);
      break;
    }
  }
  if (xs_program_finish(p, &err) == XS_OK)
    program_roundtrip(p);
  xs_program_free(p);
}

/* a validate CSV of at most 4 data lines (each is predicted: 4 ms and
 * more): if read, the JSON holds every row, with finite numbers */
static void fuzz_validate(const char *text, size_t n, int fa) {
  size_t lines = 0;
  for (size_t i = 0; i < n; i++)
    lines += text[i] == '\n';
  if (lines > 5)
    return;
  xs_validate_set set;
  xs_error err;
  /* megamoe's inputs: an EP CSV (a header naming "library") is read as
   * validate ep reads it, each row's kernel built and evaluated */
  const char *nl = memchr(text, '\n', n);
  size_t hl = nl ? (size_t)(nl - text) : n;
  int ep = 0;
  for (size_t i = 0; !fa && !ep && i + 7 <= hl; i++)
    ep = !memcmp(text + i, "library", 7);
  if ((fa ? xs_validate_flashattn : ep ? xs_validate_ep : xs_validate_megamoe)(
          text, n, "fuzz", &set, NULL, NULL, &err) != XS_OK)
    return;
  char *js = NULL;
  if (xs_validate_json(&set, &js, &err) != XS_OK)
    __builtin_trap();
  json_t *doc = json_loads(js, 0, NULL);
  if (json_array_size(json_object_get(doc, "rows")) != set.nrows ||
      !json_object_get(doc, "summary"))
    __builtin_trap();
  for (size_t i = 0; i < set.nrows; i++)
    if (!isfinite(set.rows[i].error) || !(set.rows[i].measured_us > 0))
      __builtin_trap();
  xs_validate_group *g;
  size_t ng, total = 0;
  if (xs_validate_groups(&set, 1, &g, &ng, &err) == XS_OK) {
    for (size_t k = 0; k < ng; k++)
      total += g[k].rows;
    if (total > set.nrows)
      __builtin_trap();
    free(g);
  }
  xs_validate_pairs pr;
  xs_validate_compare_arms(&set, &pr, &err);
  free(xs_validate_svg(&set, "fuzz"));
  json_decref(doc);
  free(js);
  xs_validate_free(&set);
}

/* a table of one point to write headers from (planned once) */
static xs_moe_table *one_point_table(void) {
  static xs_moe_table *t;
  static int tried;
  if (!tried++) {
    xs_profile *prof;
    xs_error err;
    xs_moe_config c;
    xs_moe_preset("glm", &c);
    double grid[1] = {64};
    xs_moe_table_options o = {grid, 1, 0, 0, 0.01, 0};
    if (xs_profile_load("h800-nvlink", &prof, &err) == XS_OK) {
      xs_moe_plan_table(&c, prof, &o, &t, &err);
      xs_profile_free(prof);
    }
  }
  return t;
}

/* the table flags, one a line */
static void fuzz_flags(const char *text, size_t n) {
  char line[4][256];
  size_t k = 0, at = 0;
  memset(line, 0, sizeof line);
  for (size_t i = 0; i < n && k < 4; i++) {
    if (text[i] == '\n' || text[i] == '\0') {
      k++, at = 0;
      continue;
    }
    if (at < sizeof line[k] - 1)
      line[k][at++] = text[i];
  }
  xs_error err;
  double *g, v;
  size_t ng;
  if (xs_parse_token_grid(line[0], 64, &g, &ng, &err) == XS_OK) {
    if (!ng || ng > 64)
      __builtin_trap();
    for (size_t i = 0; i < ng; i++)
      if (!(g[i] >= 1 && g[i] <= 1e9) || g[i] != floor(g[i]) || (i && g[i] <= g[i - 1]))
        __builtin_trap();
    free(g);
  }
  if (xs_parse_fraction(line[1], &v, &err) == XS_OK && !(v >= 0 && v <= 1))
    __builtin_trap();
  unsigned mask;
  if (xs_moe_parse_schedules(line[2], &mask, &err) == XS_OK &&
      (!mask || mask >> XS_MOE_SCHEDULES))
    __builtin_trap();
  if (xs_c_header_prefix(line[3], &err) == XS_OK) {
    if (!xs_c_identifier(line[3]) || line[3][0] == '_')
      __builtin_trap();
    for (const char *c = line[3]; *c; c++)
      if (*c >= 'A' && *c <= 'Z')
        __builtin_trap();
    xs_moe_table *t = one_point_table();
    char *h = t ? xs_moe_table_header(t, NULL, NULL, line[3], line[0]) : NULL;
    if (t && !h)
      __builtin_trap();
    if (h) {
      /* the comment text cannot close the header's first comment early:
       * the first end of a comment is the one before the guard */
      const char *end = strstr(h, "*/");
      if (!end || strncmp(end, "*/\n#ifndef ", 11))
        __builtin_trap();
    }
    free(h);
  }
}

/* Bytes as a compact program: a worker's count, then nested repeats of
 * sends with ids, waits on them and computes. The ops it must expand to
 * are counted as it is written: it reads to exactly that many, or is
 * refused (past a bound, or a wait it cannot resolve). */
static void fuzz_compact(const uint8_t *d, size_t n) {
  char text[8192];
  size_t t = 0, i = 0;
  double ops = 0, mult[8] = {1};
  int depth = 0, items[8] = {0};
#define PUT(...) (t += (size_t)snprintf(text + t, t < sizeof text ? sizeof text - t : 0, __VA_ARGS__))
  size_t count = n ? 1 + d[i++] % 200 : 1;
  PUT("{\"workers\":[{\"name\":\"w\",\"count\":%zu,\"ops\":[", count);
  while (i < n && t < sizeof text - 256) {
    uint8_t b = d[i++];
    int kind = b % 6;
    if (kind == 1 && depth) { /* close a repeat */
      PUT("]}");
      depth--;
      continue;
    }
    if (items[depth]++)
      PUT(",");
    if (kind == 0 && depth < 5) { /* open one, at most 5 deep */
      double k = 1 + (b >> 3) % 8 + (b >> 6 ? 1000000.0 : 0);
      PUT("{\"repeat\":%g,\"ops\":[", k);
      depth++;
      mult[depth] = mult[depth - 1] * k;
      items[depth] = 0;
      continue;
    }
    switch (kind) {
    case 0:
    case 1:
    case 2:
      PUT("{\"compute\":1e-6}");
      ops += mult[depth];
      break;
    case 3:
      PUT("{\"send\":%d,\"id\":\"%c\"}", b, 'a' + (b >> 3) % 3);
      ops += mult[depth];
      break;
    case 4:
      PUT("{\"wait\":\"%c\"}", 'a' + (b >> 3) % 3);
      ops += mult[depth];
      break;
    default:
      PUT("{\"send\":1}");
      ops += mult[depth];
      break;
    }
  }
  while (depth--)
    PUT("]}");
  PUT("]}]}");
#undef PUT
  if (t >= sizeof text)
    return;
  ops *= (double)count;
  xs_program *p = NULL;
  xs_error err;
  if (ops > 1e5) { /* past what the fuzzer expands: only the bounds */
    if (ops > 16777216.0 &&
        xs_program_parse(text, t, "fuzz", &p, &err) != XS_INVALID)
      __builtin_trap();
    xs_program_free(p);
    return;
  }
  if (xs_program_parse(text, t, "fuzz", &p, &err) != XS_OK) {
    /* only a wait with nothing to wait on, a cycle, a duplicate id, or
     * an empty program is refused */
    if (!strstr(err.message, "wait") && !strstr(err.message, "cycle") &&
        !strstr(err.message, "duplicate") && !strstr(err.message, "empty"))
      __builtin_trap();
    return;
  }
  double got = 0;
  for (size_t w = 0; w < xs_program_worker_count(p); w++)
    got += (double)xs_program_op_count(p, w);
  if (got != ops || xs_program_worker_count(p) != count)
    __builtin_trap();
  program_roundtrip(p);
  xs_program_free(p);
}

/* 12: the gpu and fabric columns of an EP row */
static int builtin_kind(const char *name, int fabric) {
  for (size_t i = 0; i < xs_builtin_profile_count(); i++)
    if (!strcmp(xs_builtin_profile_name(i), name)) {
      xs_profile *p;
      xs_error e;
      if (xs_profile_load(name, &p, &e))
        return 0;
      int is_fabric = xs_profile_find_channel(p, "nic") >= 0;
      xs_profile_free(p);
      return is_fabric == fabric;
    }
  return 0;
}

static int has_control(const char *s) {
  for (const unsigned char *u = (const unsigned char *)s; *u; u++)
    if (*u < 0x20 || *u == 0x7f || (u[0] == 0xc2 && u[1] >= 0x80 && u[1] <= 0x9f))
      return 1;
  return 0;
}

static void fuzz_ep_profiles(const char *text, size_t n) {
  char gpu[64], fabric[64];
  const char *nl = memchr(text, '\n', n);
  size_t gl = nl ? (size_t)(nl - text) : n, fl = nl ? n - gl - 1 : 0;
  if (gl >= sizeof gpu || fl >= sizeof fabric || memchr(text, 0, n) ||
      memchr(text, ',', n) || memchr(text, '"', n) || memchr(text, '\r', n) ||
      (nl && memchr(nl + 1, '\n', fl)))
    return; /* one field each, as a CSV row holds them */
  memcpy(gpu, text, gl);
  gpu[gl] = '\0';
  memcpy(fabric, nl ? nl + 1 : "", fl);
  fabric[fl] = '\0';
  char csv[1024];
  snprintf(csv, sizeof csv,
           "source,gpu,fabric,library,kernel,phase,scope,ep,nodes,tokens,hidden,topk,"
           "experts,dtype,metric,value,timing\ns,%s,%s,deepep-v1,normal,dispatch,intranode,"
           "8,1,4096,7168,8,256,fp8,nvl_GBps,153,t\n", gpu, fabric);
  xs_validate_set set;
  xs_error err;
  int ok = xs_validate_ep(csv, strlen(csv), "fuzz", &set, NULL, NULL, &err) == XS_OK;
  int want = builtin_kind(gpu, 0) && (!strcmp(fabric, "none") || builtin_kind(fabric, 1));
  if (ok != want || (!ok && (has_control(err.message) || !strstr(err.message, "fuzz:2:"))))
    __builtin_trap();
  if (ok)
    xs_validate_free(&set);
}

/* 13: a fit */
static void fuzz_fit(const char *text, size_t n) {
  size_t lines = 0;
  for (size_t i = 0; i < n; i++)
    lines += text[i] == '\n';
  if (lines > 4)
    return;
  static xs_profile *base;
  xs_error err;
  if (!base && xs_profile_load("h100-nvlink", &base, &err))
    return;
  xs_moe_fit_options o = {0, NULL, 20, 1, 0};
  xs_moe_fit_result r;
  xs_profile *tuned = NULL;
  if (xs_moe_fit(text, n, "fuzz", base, &o, &r, &tuned, &err) != XS_OK) {
    if (has_control(err.message))
      __builtin_trap();
    return;
  }
  for (int t = 0; t < XS_MOE_TERMS; t++) {
    const xs_moe_fit_term *ft = &r.terms[t];
    if (ft->fitted && !(ft->scale >= 0.25 * (1 - 1e-9) && ft->scale <= 4 * (1 + 1e-9) &&
                        !(ft->lo > ft->hi)))
      __builtin_trap();
  }
  if (!tuned || !(r.nrows >= 1 && r.nrows <= lines + 1) || !(r.median_after >= 0))
    __builtin_trap();
  xs_profile_free(tuned);
  xs_moe_fit_free(&r);
}

/* 14: a tuner driven by bytes, nine a step: what to do, then 8 bytes of a
 * double */
static void fuzz_tuner(const uint8_t *d, size_t n) {
  static const xs_moe_term terms[2] = {XS_MOE_TERM_GEMM, XS_MOE_TERM_HBM};
  xs_moe_config c;
  xs_moe_preset("qwen3-235b", &c);
  xs_profile *prof;
  xs_error err;
  if (xs_profile_load("h200-nvlink", &prof, &err))
    return;
  double grid[2] = {64, 512};
  xs_tuner_options o;
  memset(&o, 0, sizeof o);
  o.tokens = grid;
  o.ntokens = 2;
  o.schedules = (1u << XS_MOE_FUSED_LAG) | (1u << XS_MOE_BASELINE);
  o.terms = (1u << XS_MOE_TERM_GEMM) | (1u << XS_MOE_TERM_HBM);
  xs_tuner *t;
  if (xs_tuner_create(&c, prof, &o, &t, &err) != XS_OK) {
    xs_profile_free(prof);
    return;
  }
  const double prior_sd = log1p(0.25);
  for (size_t at = 0; at + 9 <= n && at < 9 * 64; at += 9) {
    double x;
    memcpy(&x, d + at + 1, sizeof x);
    double tokens = d[at] & 0x10 ? 512 : 64, secs;
    xs_tuner_choice ch;
    if (xs_tuner_choose(t, tokens, &ch) != XS_OK || !(ch.predicted_s > 0) ||
        !isfinite(ch.predicted_s) || !isfinite(ch.sd))
      __builtin_trap();
    switch (d[at] % 4) {
    case 0: /* the choice, off by a factor of at most e^20 either way */
      secs = ch.predicted_s * exp(fmax(-20, fmin(20, isfinite(x) ? x : 0)));
      break;
    case 1: /* any time at all: subnormal, huge, negative, NaN */
      secs = x;
      break;
    case 2: /* a token count of any value */
      if (xs_tuner_choose(t, x, &ch) != (x > 0 && isfinite(x) ? XS_OK : XS_INVALID))
        __builtin_trap();
      continue;
    default: /* knobs the grid point may not have */
      ch.knobs.lag = (unsigned)d[at] >> 2;
      secs = ch.predicted_s;
      break;
    }
    double before[2], sd[2], after[2], sd2[2];
    for (int k = 0; k < 2; k++)
      if (xs_tuner_term(t, tokens, terms[k], &before[k], &sd[k]))
        before[k] = sd[k] = 0; /* a term this point does not learn */
    xs_status st = xs_tuner_observe(t, tokens, ch.schedule, &ch.knobs, secs, &err);
    int in_range = secs >= 1e-9 && secs <= 1e6;
    if ((st == XS_OK && !in_range) || (!in_range && st != XS_INVALID) ||
        (st && has_control(err.message)))
      __builtin_trap();
    for (int k = 0; k < 2; k++) {
      if (!before[k] || xs_tuner_term(t, tokens, terms[k], &after[k], &sd2[k]))
        continue;
      double moved = fabs(log(after[k] / before[k]));
      if (!isfinite(moved) || moved > 1.345 * fmax(sd[k], prior_sd) * (1 + 1e-6) + 1e-12)
        __builtin_trap();
    }
  }
  xs_tuner_free(t);
  xs_profile_free(prof);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1)
    return 0;
  const char *text = (const char *)data + 1;
  size_t n = size - 1;
  xs_error err;
  switch (data[0] % 16) {
  case 0:
    fuzz_program(text, n);
    break;
  case 1:
    fuzz_profile(text, n);
    break;
  case 2:
    fuzz_samples(text, n);
    break;
  case 3: {
    xs_moe_config c;
    if (xs_moe_config_parse(text, n, "fuzz", &c, &err) == XS_OK)
      xs_moe_config_check(&c, &err);
    break;
  }
  case 4: {
    xs_fa_config c;
    if (xs_fa_config_parse(text, n, "fuzz", &c, &err) == XS_OK)
      xs_fa_config_check(&c, &err);
    break;
  }
  case 6:
    fuzz_builder(data + 1, n);
    break;
  case 8:
  case 9:
    fuzz_validate(text, n, data[0] % 16 == 9);
    break;
  case 12:
    fuzz_ep_profiles(text, n);
    break;
  case 13:
    fuzz_fit(text, n);
    break;
  case 14:
    fuzz_tuner(data + 1, n);
    break;
  case 10:
    fuzz_flags(text, n);
    break;
  case 11:
    fuzz_compact(data + 1, n);
    break;
  default:
    fuzz_units(text, n);
    break;
  }
  return 0;
}
