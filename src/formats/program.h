/*
 * program.h: what the three files of programs share, each using only
 * those before it: the builder, its lookups and accessors (program.c),
 * the JSON form read and written (program_json.c), and what finishes a
 * program, built, read or written out copy by copy (program_check.c).
 */
#ifndef XSTAGE_FORMATS_PROGRAM_H
#define XSTAGE_FORMATS_PROGRAM_H

#include "internal.h"

/* A worker's "count" is at most this, and a program with counted workers
 * has at most this many workers in all. */
#define COUNT_MAX ((size_t)1 << 20)
/* Counter values and amounts are whole numbers a double holds exactly. */
#define COUNTER_MAX 9007199254740992.0 /* 2^53 */

/* The send named "worker#k" (the k-th op of that worker, a send without an
 * explicit id): 1 and *send set, else 0. */
int xs__program_find_auto_id(const xs_program *p, const char *id,
                             uint32_t *send);
/* Append an op to worker w (checked: the worker, the op count), out: the
 * op when not NULL. */
xs_status xs__program_push(xs_program *p, size_t w, xs_op_kind kind, double value,
                           uint32_t aux, xs__op **out, xs_error *err);
/* The program of a JSON text, its waits resolved, not finished
 * (xs_program_parse finishes it). */
xs_status xs__program_read(const char *text, size_t length, const char *filename,
                           xs_program **out, xs_error *err);

#endif
