/*
 * fuzz_parse.c: libFuzzer target for the program and profile parsers. The
 * first byte picks the parser; a program that parses is also evaluated under
 * every model on a built-in profile, so the evaluators see odd programs too.
 * Inputs that once crashed it live in tests/fuzz-corpus/ and run in every
 * build through fuzz_main.c.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "xstage.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1)
    return 0;
  const char *text = (const char *)data + 1;
  size_t n = size - 1;
  xs_error err;
  if (data[0] & 1) {
    xs_profile *p = NULL;
    if (xs_profile_parse(text, n, "fuzz", &p, &err) == XS_OK) {
      char *s = xs_profile_to_json(p);
      xs_profile *q = NULL;
      if (s && xs_profile_parse(s, strlen(s), "roundtrip", &q, &err) != XS_OK)
        __builtin_trap(); /* what we print must read back */
      xs_profile_free(q);
      free(s);
    }
    xs_profile_free(p);
    return 0;
  }
  xs_program *prog = NULL;
  if (xs_program_parse(text, n, "fuzz", &prog, &err) == XS_OK) {
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
    char *s = xs_program_to_json(prog);
    xs_program *q = NULL;
    if (s && xs_program_parse(s, strlen(s), "roundtrip", &q, &err) != XS_OK)
      __builtin_trap();
    xs_program_free(q);
    free(s);
    xs_profile_free(prof);
  }
  xs_program_free(prog);
  return 0;
}
