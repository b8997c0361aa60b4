/*
 * backends.c: the one table of probe and replay backends. Each entry has a
 * name, a description, whether it is usable here, and its probe and replay
 * functions (NULL where the backend does not replay). xs_probe, xs_replay,
 * xs_replay_check and the listing in `xstage probe --help` and
 * `xstage --version` all go through it. Docs: docs/probe.md.
 */
#include "backend.h"
#include "cuda_probe.h"

#include <stdlib.h>
#include <string.h>

static int cuda_available(const char *name, char *why, size_t size) {
  (void)name;
  return xs_cuda_available(why, size);
}

static int mpi_available(const char *name, char *why, size_t size) {
  (void)name;
  if (!xs_mpi_built()) {
    snprintf(why, size, "this xstage was built without MPI: install libopenmpi-dev "
                        "and rebuild with cmake -DXSTAGE_WITH_MPI=ON");
    return 0;
  }
  if (!xs_mpi_launched()) {
    snprintf(why, size, "mpi probes between ranks: run it as mpirun -n 2 xstage probe mpi");
    return 0;
  }
  return 1;
}

static xs_status mpi_probe(const char *name, const xs_probe_options *o,
                           xs_samples **out, xs_error *err) {
  (void)name;
  return xs_mpi_probe(o->mpi_mode ? o->mpi_mode : "isend", o, out, err);
}

static xs_status cuda_replay_check(const xs_program *p, const char *name,
                                   const xs_probe_options *o, xs_error *err) {
  xs__gplan g; /* everything the launch needs but a device */
  xs_status st = xs__cuda_replay_plan(p, name, o, &g, err);
  if (!st)
    xs__gplan_free(&g);
  return st;
}

#define CHAN xs__chan_available, xs__chan_probe, xs__chan_replay_check, xs__chan_replay
#define CUDA_PROBE cuda_available, xs_cuda_probe, NULL, NULL
#define CUDA_REPLAY cuda_available, xs_cuda_probe, cuda_replay_check, xs__cuda_replay

static const xs__backend table[] = {
    {"pipe", "a pipe of a set size (F_SETPIPE_SZ), drained by a reader thread at a set "
             "rate or as fast as it can; probe and replay", CHAN},
    {"tcp", "a loopback TCP connection with set send and receive buffers, drained by a "
            "reader thread at a set rate or as fast as it can; probe and replay", CHAN},
    {"mpi", "rank 0 bursts to rank 1 with MPI_Isend or MPI_Put (--mode isend or put), "
            "delivery timed by round trips; run under mpirun -n 2; probe only",
     mpi_available, mpi_probe, NULL, NULL},
    {"cuda-host", "CTAs store 16-byte vectors into pinned, mapped host memory; probe "
                  "and replay", CUDA_REPLAY},
    {"cuda-tma", "cp.async.bulk stores from shared to pinned host memory (sm_90); probe "
                 "only", CUDA_PROBE},
    {"cuda-ce", "cudaMemcpyAsync from device to pinned host memory (the copy engine); "
                "probe only", CUDA_PROBE},
    {"cuda-p2p", "CTAs on GPU 0 store 16-byte vectors into GPU 1's memory (NVLink or "
                 "PCIe peer access, two GPUs); probe and replay", CUDA_REPLAY},
    {"cuda-p2p-tma", "cp.async.bulk stores from GPU 0's shared memory into GPU 1's memory "
                     "(two GPUs); probe only", CUDA_PROBE},
};
#define NBACKENDS (sizeof table / sizeof table[0])

size_t xs_backend_count(void) { return NBACKENDS; }
const char *xs_backend_name(size_t i) { return i < NBACKENDS ? table[i].name : NULL; }
const char *xs_backend_description(size_t i) {
  return i < NBACKENDS ? table[i].description : NULL;
}

static const xs__backend *find(const char *name) {
  for (size_t i = 0; name && i < NBACKENDS; i++)
    if (strcmp(name, table[i].name) == 0)
      return &table[i];
  return NULL;
}

/* The table's names, or only those that replay, ", " between them */
static void list_names(char *buf, size_t size, int replaying) {
  size_t at = 0;
  buf[0] = '\0';
  for (size_t i = 0; i < NBACKENDS && at < size; i++)
    if (!replaying || table[i].replay)
      at += (size_t)snprintf(buf + at, size - at, "%s%s", at ? ", " : "", table[i].name);
}

static void unknown(const char *name, char *why, size_t size) {
  char names[256];
  list_names(names, sizeof names, 0);
  snprintf(why, size, "no backend \"%s\" (%s)", name ? name : "(null)", names);
}

int xs_backend_replays(const char *name) {
  const xs__backend *b = find(name);
  return b && b->replay;
}

int xs_backend_available(const char *name, char *why, size_t size) {
  const xs__backend *b = find(name);
  if (!b) {
    unknown(name, why, size);
    return 0;
  }
  return b->available(name, why, size);
}

xs_status xs_probe(const char *backend, const xs_probe_options *opt,
                   xs_samples **out, xs_error *err) {
  *out = NULL;
  const xs__backend *b = find(backend);
  if (!b) {
    char why[512];
    unknown(backend, why, sizeof why);
    return xs__fail(err, XS_NOTBUILT, "%s", why);
  }
  return b->probe(backend, opt, out, err);
}

static xs_status replayer(const char *backend, const xs__backend **b, xs_error *err) {
  char why[512];
  if (!(*b = find(backend))) {
    unknown(backend, why, sizeof why);
    return xs__fail(err, XS_NOTBUILT, "%s", why);
  }
  if (!(*b)->replay) {
    list_names(why, sizeof why, 1);
    return xs__fail(err, XS_INVALID, "replay runs on %s (\"%s\" is a probe only)", why, backend);
  }
  return XS_OK;
}

/* The replay backends run compute, send, wait and fence ops, one worker
 * to a thread or CTA group; counters and copies are the evaluators'. */
static xs_status replayable(const xs_program *p, const char *backend,
                            xs_error *err) {
  if (!p->finished)
    return xs__fail(err, XS_INVALID, "the program is not finished");
  size_t copies = 0;
  for (size_t w = 0; w < p->nworkers; w++)
    if (p->workers[w].copies > 1)
      copies++;
  if (p->nsignals || p->nawaits || copies)
    return xs__fail(err, XS_INVALID,
                    "replay on %s runs compute, send, wait and fence ops; "
                    "program \"%s\" has %zu signal and %zu await ops and %zu "
                    "workers with copies, which only the models run "
                    "(xstage predict, xstage simulate)",
                    backend, p->name, p->nsignals, p->nawaits, copies);
  return XS_OK;
}

xs_status xs_replay_check(const xs_program *p, const char *backend,
                          const xs_probe_options *opt, xs_error *err) {
  const xs__backend *b;
  xs_status st = replayable(p, backend, err);
  if (st)
    return st;
  st = replayer(backend, &b, err);
  return st ? st : b->replay_check(p, backend, opt, err);
}

xs_status xs_replay(const xs_program *p, const char *backend,
                    const xs_probe_options *opt, xs_result **out, xs_error *err) {
  const xs__backend *b;
  *out = NULL;
  xs_status st = replayable(p, backend, err);
  if (st)
    return st;
  st = replayer(backend, &b, err);
  return st ? st : b->replay(p, backend, opt, out, err);
}
