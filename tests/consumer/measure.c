/* A program that measures: it links libxstage-measure and libxstage. */
#include <stdio.h>
#include <string.h>

#include <xstage_measure.h>

int main(void) {
  size_t n = xs_backend_count();
  for (size_t i = 0; i < n; i++)
    printf("%s%s", i ? " " : "backends: ", xs_backend_name(i));
  printf("\n");
  return n >= 2 && strcmp(xs_backend_name(0), "pipe") == 0 ? 0 : 1;
}
