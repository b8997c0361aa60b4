/*
 * jsonutil.h: reading JSON documents with messages that name file, line,
 * column and path. Used by the profile and program parsers.
 */
#ifndef XSTAGE_JSONUTIL_H
#define XSTAGE_JSONUTIL_H

#include "internal.h"

#include <jansson.h>

typedef struct xs__jdoc {
  const char *filename;
  const char *text;
  size_t length;
  xs__jpath path;
  xs_error *err;
} xs__jdoc;

/* Parse text; syntax errors become "file:line:col: message". */
xs_status xs__jparse(xs__jdoc *d, json_t **root);
/* Fail at the current path. */
xs_status xs__jfail(xs__jdoc *d, const char *fmt, ...) XS__PRINTF(2, 3);
/* Reject keys of obj that are not in the NULL-terminated list. */
xs_status xs__jkeys(xs__jdoc *d, json_t *obj, const char *const *allowed);
/* A number at obj[key] (path extended by key while checking). flags say
 * what is allowed; *present tells whether the key was there (may be NULL,
 * then the key is required). */
enum {
  XS__J_POSITIVE = 1, /* > 0 */
  XS__J_NONNEG = 2,   /* >= 0 */
  XS__J_NULLABLE = 4, /* null allowed: *value = INFINITY */
  XS__J_INTEGER = 8
};
xs_status xs__jnumber(xs__jdoc *d, json_t *obj, const char *key, int flags,
                      const char *what, double *value, int *present);
/* A string at obj[key]; *present as above. */
xs_status xs__jstring(xs__jdoc *d, json_t *obj, const char *key,
                      const char **value, int *present);
/* An optional string at obj[key] into buf (at most size - 1 bytes of it,
 * cut between characters), buf untouched when absent. */
xs_status xs__jstrcpy(xs__jdoc *d, json_t *obj, const char *key, char *buf,
                      size_t size);
/* An optional true or false at obj[key]: *value 1 or 0, untouched when
 * absent. */
xs_status xs__jbool(xs__jdoc *d, json_t *obj, const char *key, int *value);
const char *xs__jtype(const json_t *v);
/* Optional numbers >= 0 at obj[key] for each entry; absent keys keep their
 * values. */
typedef struct xs__jfield {
  const char *key;
  double *value;
} xs__jfield;
xs_status xs__jnumbers(xs__jdoc *d, json_t *obj, const xs__jfield *fields,
                       size_t n);
/* A check of the whole object failed with a message that starts with the
 * key at fault ("experts (250) must ..."): fail pointing at that key. */
xs_status xs__jfail_checked(xs__jdoc *d, json_t *obj, const xs_error *check);

/* Building JSON: set key to v in o, or append v to array a. Each takes v
 * whatever happens (NULL: nothing to take) and returns 0, or 1 when o, a
 * or v is NULL (jansson refused a string that is not UTF-8, or ran out of
 * memory) or jansson could not add it: or the results together, and write
 * nothing when any is 1. */
int xs__jput(json_t *o, const char *key, json_t *v);
int xs__jappend(json_t *a, json_t *v);
/* Send s's id as a JSON string: its own, or "WORKER#OP" however long the
 * worker's name (NULL: out of memory). */
json_t *xs__send_id_json(const xs_program *p, size_t s);
/* The fewest digits, 15 or 17, at which every real in v reads back as the
 * same double: JSON_REAL_PRECISION(xs__jdigits(v)) writes numbers typed
 * by hand as they were typed, and measured ones exactly. */
int xs__jdigits(json_t *v);

#endif
