/*
 * mpi_none.c: the MPI entry points of a build without MPI. They say how to
 * rebuild rather than failing silently.
 */
#include "../internal.h"
#include "xstage_measure.h"

#include <stdlib.h>

#define REBUILD                                                              \
  "this xstage was built without MPI: install libopenmpi-dev and rebuild "   \
  "with cmake -DXSTAGE_WITH_MPI=ON"

int xs_mpi_built(void) { return 0; }

int xs_mpi_launched(void) {
  return getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMI_SIZE") ||
         getenv("PMIX_RANK");
}

xs_status xs_mpi_init(int *argc, char ***argv, int *rank, int *size,
                      xs_error *err) {
  (void)argc, (void)argv;
  *rank = 0;
  *size = 1;
  return xs__fail(err, XS_NOTBUILT, REBUILD);
}

void xs_mpi_finalize(void) {}

xs_status xs_mpi_or_to_root(void *buf, size_t bytes, xs_error *err) {
  (void)buf, (void)bytes;
  return xs__fail(err, XS_NOTBUILT, REBUILD);
}

xs_status xs_mpi_probe(const char *mode, const xs_probe_options *options,
                       xs_samples **out, xs_error *err) {
  (void)mode, (void)options;
  *out = NULL;
  return xs__fail(err, XS_NOTBUILT, REBUILD);
}
