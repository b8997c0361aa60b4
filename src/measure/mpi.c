/*
 * mpi.c: the MPI backend. A probe between two ranks (nonblocking sends or
 * one-sided puts) timed from rank 0 alone, and the collective that gathers
 * a sweep's results on rank 0. The only file with MPI in it.
 *
 * Delivery without synchronised clocks: for Isend, rank 1 answers each
 * burst with one byte as soon as it holds it, and rank 0 takes half the
 * median of 31 one-byte ping-pongs off the answer's arrival. For Put,
 * MPI_Win_flush returns once the put is complete at the target, which rank
 * 0 times itself.
 */
#include "backend.h"

#include <math.h>
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

/* MPI is process-wide state of its own; so is whether we started it. */
static int started;

int xs_mpi_built(void) { return 1; }

int xs_mpi_launched(void) {
  return getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMI_SIZE") ||
         getenv("PMIX_RANK");
}

xs_status xs_mpi_init(int *argc, char ***argv, int *rank, int *size,
                      xs_error *err) {
  int flag = 0;
  MPI_Initialized(&flag);
  if (!flag) {
    if (MPI_Init(argc, argv) != MPI_SUCCESS)
      return xs__fail(err, XS_IO, "MPI_Init failed");
    started = 1;
  }
  MPI_Comm_rank(MPI_COMM_WORLD, rank);
  MPI_Comm_size(MPI_COMM_WORLD, size);
  return XS_OK;
}

void xs_mpi_finalize(void) {
  int fin = 0;
  MPI_Finalized(&fin);
  if (started && !fin)
    MPI_Finalize();
  started = 0;
}

xs_status xs_mpi_or_to_root(void *buf, size_t bytes, xs_error *err) {
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  unsigned char *p = buf;
  for (size_t off = 0; off < bytes;) {
    int n = bytes - off > (1u << 30) ? 1 << 30 : (int)(bytes - off);
    int rc = rank == 0 ? MPI_Reduce(MPI_IN_PLACE, p + off, n, MPI_BYTE, MPI_BOR, 0,
                                    MPI_COMM_WORLD)
                       : MPI_Reduce(p + off, NULL, n, MPI_BYTE, MPI_BOR, 0, MPI_COMM_WORLD);
    if (rc != MPI_SUCCESS)
      return xs__fail(err, XS_IO, "MPI_Reduce failed");
    off += (size_t)n;
  }
  return XS_OK;
}

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

xs_status xs_mpi_probe(const char *mode, const xs_probe_options *opt,
                       xs_samples **out, xs_error *err) {
  *out = NULL;
  int put = strcmp(mode, "put") == 0;
  if (!put && strcmp(mode, "isend") != 0)
    return xs__fail(err, XS_INVALID, "--mode: expected isend or put, got \"%s\"", mode);
  int rank, size, inited = 0, ended = 0;
  MPI_Initialized(&inited);
  MPI_Finalized(&ended);
  if (!inited || ended)
    return xs__fail(err, XS_INVALID,
                    "the MPI probe runs between ranks after xs_mpi_init: "
                    "mpirun -n 2 xstage probe mpi");
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size < 2)
    return xs__fail(err, XS_INVALID,
                    "the MPI probe needs 2 ranks: mpirun -n 2 xstage probe mpi");
  double maxb = opt->max_bytes > 0 ? opt->max_bytes : 16777216;
  double minb = opt->min_bytes > 0 ? opt->min_bytes : 1024;
  unsigned nsz = opt->sizes ? opt->sizes : 16, reps = opt->repeats ? opt->repeats : 5;
  double timeout = opt->timeout_s > 0 ? opt->timeout_s : 30;
  if (!(minb >= 1 && maxb >= minb && maxb <= 1 << 30))
    return xs__fail(err, XS_INVALID, "burst sizes %g to %g: expected 1 <= min <= max <= 1GiB",
                    minb, maxb);
  char *buf = calloc(1, (size_t)maxb);
  if (!buf)
    return xs__fail(err, XS_NOMEM, "out of memory");
  xs_samples *s = rank == 0 ? calloc(1, sizeof *s) : NULL;
  if (rank == 0 && !s) {
    free(buf);
    return xs__fail(err, XS_NOMEM, "out of memory");
  }
  if (s)
    snprintf(s->backend, sizeof s->backend, "mpi-%s", mode);
  MPI_Win win = MPI_WIN_NULL;
  if (put) {
    MPI_Win_create(buf, rank == 1 ? (MPI_Aint)maxb : 0, 1, MPI_INFO_NULL, MPI_COMM_WORLD,
                   &win);
    MPI_Win_lock_all(0, win);
  }
  /* one-byte ping-pongs: the one-way time to take off answers */
  double one_way = 0, rtt[31];
  char b1 = 0;
  for (int k = 0; k < 31; k++) {
    if (rank == 0) {
      double t = MPI_Wtime();
      MPI_Send(&b1, 1, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
      MPI_Recv(&b1, 1, MPI_BYTE, 1, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      rtt[k] = MPI_Wtime() - t;
    } else if (rank == 1) {
      MPI_Recv(&b1, 1, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      MPI_Send(&b1, 1, MPI_BYTE, 0, 2, MPI_COMM_WORLD);
    }
  }
  if (rank == 0) {
    qsort(rtt, 31, sizeof *rtt, cmp_d);
    one_way = rtt[15] / 2;
  }
  xs_status st = XS_OK;
  double deadline = MPI_Wtime() + timeout;
  unsigned total = 2 + nsz * reps;
  for (unsigned k = 0; k <= total; k++) {
    /* rank 0 tells rank 1 the next size, 0 to stop */
    double b = 0;
    if (rank == 0 && k < total && MPI_Wtime() < deadline &&
        !(opt->cancel && *opt->cancel))
      b = k < 2 ? maxb : round(nsz == 1 ? maxb : minb * pow(maxb / minb, (double)((k - 2) % nsz) / (nsz - 1)));
    if (rank <= 1 && !put) {
      if (rank == 0)
        MPI_Send(&b, 1, MPI_DOUBLE, 1, 3, MPI_COMM_WORLD);
      else
        MPI_Recv(&b, 1, MPI_DOUBLE, 0, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    if (rank == 0 && b == 0) {
      if (k < total)
        st = xs__fail(err, XS_TIMEOUT, "MPI probe: %s", opt->cancel && *opt->cancel
                                                             ? "interrupted"
                                                             : "not done within --timeout");
      break;
    }
    if (rank == 1 && !put && b == 0)
      break;
    if (rank == 0) {
      double t0 = MPI_Wtime(), issue, deliver;
      if (put) {
        MPI_Put(buf, (int)b, MPI_BYTE, 1, 0, (int)b, MPI_BYTE, win);
        issue = MPI_Wtime() - t0;
        MPI_Win_flush(1, win);
        deliver = MPI_Wtime() - t0;
      } else {
        MPI_Request req;
        MPI_Isend(buf, (int)b, MPI_BYTE, 1, 4, MPI_COMM_WORLD, &req);
        issue = MPI_Wtime() - t0;
        MPI_Recv(&b1, 1, MPI_BYTE, 1, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        deliver = fmax(issue, MPI_Wtime() - t0 - one_way);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
      }
      if (k >= 2) {
        if (xs__grow(&s->rows, &s->cap, s->n + 1, sizeof *s->rows)) {
          st = xs__fail(err, XS_NOMEM, "out of memory");
          break;
        }
        s->rows[s->n++] = (xs_sample){b, 0, issue, deliver, (k - 2) / nsz};
      }
      if (opt->progress)
        opt->progress(opt->progress_ctx, (double)(k + 1) / total);
    } else if (rank == 1 && !put) {
      MPI_Recv(buf, (int)b, MPI_BYTE, 0, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      MPI_Send(&b1, 1, MPI_BYTE, 0, 5, MPI_COMM_WORLD);
    }
  }
  if (put) {
    MPI_Win_unlock_all(win);
    MPI_Win_free(&win);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  free(buf);
  if (st) {
    xs_samples_free(s);
    return st;
  }
  *out = s;
  return XS_OK;
}
