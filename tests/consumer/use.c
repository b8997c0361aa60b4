/* A program that only predicts: it links libxstage alone. */
#include <stdio.h>
#include <string.h>

#include <xstage.h>

int main(void) {
  const char *text = "{\"name\": \"one\", \"workers\": [{\"name\": \"w\", \"ops\": ["
                     "{\"compute\": 1e-6}, {\"send\": 1048576, \"channel\": \"nvlink\"}, "
                     "{\"fence\": true}]}]}";
  xs_error e;
  xs_program *p = NULL;
  xs_profile *prof = NULL;
  xs_result *r = NULL;
  if (strcmp(xs_version(), XSTAGE_VERSION) != 0 || xs_version_number() != XSTAGE_VERSION_NUMBER) {
    fprintf(stderr, "header %s, library %s\n", XSTAGE_VERSION, xs_version());
    return 1;
  }
  if (xs_program_parse(text, strlen(text), "inline", &p, &e) ||
      xs_profile_load("h100-nvlink", &prof, &e) ||
      xs_evaluate(p, prof, XS_MODEL_BURSTGAP, NULL, &r, &e)) {
    fprintf(stderr, "%s\n", e.message);
    return 1;
  }
  printf("xstage %s: makespan %.3g s\n", xs_version(), r->makespan_s);
  int ok = r->makespan_s > 1e-6;
  xs_result_free(r);
  xs_profile_free(prof);
  xs_program_free(p);
  return ok ? 0 : 1;
}
