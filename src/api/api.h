/*
 * api.h: what the results-as-JSON files of src/api share; never seen by
 * users of the library.
 */
#ifndef XSTAGE_API_H
#define XSTAGE_API_H

#include "xstage.h"

#include <jansson.h>

/* Dump doc (consumed; NULL counts as out of memory) with 2-space indent
 * and the given real precision into *out. */
xs_status xs__api_dump(json_t *doc, size_t precision, char **out, xs_error *err);
/* Each schedule's times, 80% interval at its tokens per rank, knobs,
 * call and breakdown of a MegaMoE plan. */
json_t *xs__api_moe_schedules(const xs_moe_config *c, const xs_profile *prof,
                              const xs_moe_result *r);
/* A schedule's 80% interval in microseconds for a time in seconds (null
 * where there is none). */
json_t *xs__api_moe_interval_us(int schedule, double tokens, double time_s);
json_t *xs__api_moe_knobs(xs_moe_schedule s, const xs_moe_pattern *k);
/* A call (docs/plan-megamoe.md "The calls"), and the call of schedule s
 * with knobs k in the calls x of a config on a profile (null when there
 * is none). */
json_t *xs__api_moe_call(const xs_moe_call *k);
json_t *xs__api_moe_call_in(xs__moe_calls *x, xs_moe_schedule s, const xs_moe_pattern *k);
json_t *xs__api_moe_breakdown(const xs_moe_breakdown *b);
/* An attention plan's rows as an array, each with its call for config c
 * on prof (NULL: null). */
json_t *xs__api_rings(const xs_fa_ring *r, size_t n, const xs_fa_config *c,
                      const xs_profile *prof);
/* What to call for one way of a ring (xs_fa_call). */
json_t *xs__api_fa_call(const xs_fa_call *k);
/* An attention plan's piggyback over sequential, over the faster
 * dedicated way, and the first under blocking. */
void xs__api_fa_speedups(const xs_fa_result *r, double *speedup, double *vs_dedicated,
                         double *blocking);

/* The 80% intervals of a validation set's rows (xs_validate_intervals
 * filled them): coverage per arm and band, and overall. NULL on failure. */
json_t *xs__api_intervals_json(const xs_validate_set *set);

#endif
