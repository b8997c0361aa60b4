/*
 * program.h: what the three files of programs share: the builder
 * (program.c), the check that finishes a program (program_check.c) and
 * the JSON form (program_json.c).
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

#endif
