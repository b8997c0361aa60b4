/*
 * fuzz_parse.c: libFuzzer target for everything the library parses. The
 * first byte picks what the rest is (its value mod 8, so that the corpus's
 * '0' programs and '1' profiles keep their meaning):
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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1)
    return 0;
  const char *text = (const char *)data + 1;
  size_t n = size - 1;
  xs_error err;
  switch (data[0] % 8) {
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
  default:
    fuzz_units(text, n);
    break;
  }
  return 0;
}
