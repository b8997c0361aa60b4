/*
 * backend.h: what the probe and replay backends share: a real channel with
 * its reader thread, and the clock. Only src/measure/ includes this.
 */
#ifndef XSTAGE_BACKEND_H
#define XSTAGE_BACKEND_H

#include "../internal.h"
#include "xstage_measure.h"

#include <pthread.h>
#include <stdatomic.h>

#define XS__CHUNK_BUF 65536 /* bytes the writer's buffer holds */

typedef struct xs__rchan {
  int rfd, wfd;
  pthread_t reader;
  int reader_started;
  double rate;      /* reader's bytes/s, 0 = as fast as it can */
  size_t chunk;     /* bytes per read */
  double capacity_B;
  _Atomic uint64_t rx; /* bytes the reader holds */
  _Atomic int stop, failed;
  uint64_t tx;         /* bytes written (writer only) */
  pthread_mutex_t mu;  /* guards the marks */
  uint64_t *mark_off;  /* a send ends at this many bytes... */
  double *mark_t;      /* ...and arrived then (NAN: not yet) */
  size_t nmarks, next_mark, max_marks;
} xs__rchan;

double xs__now_s(void);
xs_status xs__rchan_open(xs__rchan *c, const char *backend, double capacity_B,
                         double drain_Bps, size_t max_marks, xs_error *err);
void xs__rchan_close(xs__rchan *c);
double xs__rchan_send(xs__rchan *c, const char *data, size_t bytes,
                      double deadline, volatile int *cancel, size_t *mark);
double xs__rchan_delivered(xs__rchan *c, size_t mark, double deadline,
                           volatile int *cancel);
int xs__rchan_drained(xs__rchan *c, double deadline, volatile int *cancel);

/* One backend of the table in backends.c. replay and replay_check are
 * NULL for a backend that only probes. */
typedef struct xs__backend {
  const char *name, *description;
  int (*available)(const char *name, char *why, size_t size);
  xs_status (*probe)(const char *name, const xs_probe_options *o,
                     xs_samples **out, xs_error *err);
  xs_status (*replay_check)(const xs_program *p, const char *name,
                            const xs_probe_options *o, xs_error *err);
  xs_status (*replay)(const xs_program *p, const char *name,
                      const xs_probe_options *o, xs_result **out, xs_error *err);
} xs__backend;

/* pipe and tcp (probe.c) */
int xs__chan_available(const char *name, char *why, size_t size);
xs_status xs__chan_probe(const char *name, const xs_probe_options *o,
                         xs_samples **out, xs_error *err);
xs_status xs__chan_replay_check(const xs_program *p, const char *name,
                                const xs_probe_options *o, xs_error *err);
xs_status xs__chan_replay(const xs_program *p, const char *name,
                          const xs_probe_options *o, xs_result **out, xs_error *err);

#endif
