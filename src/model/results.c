/*
 * results.c: model names and the results every evaluator fills.
 */
#include "internal.h"

#include <stdlib.h>
#include <string.h>
static const char *const model_names[XS_MODEL_COUNT + 1] = {
    "burstgap", "blocking", "serial", "ideal", "sim"};

const char *xs_model_name(xs_model m) {
  return (unsigned)m <= XS_MODEL_SIM ? model_names[m] : "unknown";
}

int xs_model_from_name(const char *name, xs_model *m) {
  for (int i = 0; i < XS_MODEL_COUNT; i++)
    if (strcmp(name, model_names[i]) == 0) {
      *m = (xs_model)i;
      return 0;
    }
  return -1;
}

void xs_result_free(xs_result *r) {
  if (!r)
    return;
  free(r->workers);
  free(r->sends);
  free(r->channels);
  free(r);
}

