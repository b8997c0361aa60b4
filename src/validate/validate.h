/*
 * validate.h: what the validators' files share: the CSV reader
 * (validate.c) and how a MegaMoE or ring attention row is predicted
 * (megamoe.c, flashattn.c). Validation reads published data and calls the
 * planners below it; nothing below calls it.
 */
#ifndef XSTAGE_VALIDATE_H
#define XSTAGE_VALIDATE_H

#include "internal.h"

/* `xstage validate megamoe` (megamoe.c): a row's knobs column
 * ("lag=8;capacity=8192") into knobs and config, 0 or -1 with why in bad;
 * and a row's predictions (every model, the lag's other bound). */
int xs__validate_moe_knobs(const char *text, xs_moe_config *c,
                           xs_moe_pattern *k, char *bad, size_t badn);
xs_status xs__validate_moe_predict(xs_validate_row *row,
                                   const xs_profile *prof, xs_error *err);
/* `xstage validate flashattn` (flashattn.c): a row's prediction under
 * every model, and if communication were free (its breakdown's free_s). */
xs_status xs__validate_fa_predict(xs_validate_row *row, const xs_profile *prof,
                                  xs_fa_path path, xs_error *err);

/* The validators' CSV reader (validate.c), for validators in other files:
 * comment and blank lines skipped, the header mapping the needed columns
 * (a missing one is an error naming need_list) and the optional ones;
 * row() gets each data row's fields in that order (optional ones NULL
 * when the header lacks them), each with its 1-based column, and fills
 * the row; the set grows by it and progress is called. */
typedef xs_status (*xs__csv_row_fn)(void *user, const xs__csv_field **f,
                                    size_t lineno, xs_validate_row *row,
                                    xs_error *err);
xs_status xs__validate_csv(const char *file, const char *const *need,
                           const char *const *maybe, const char *need_list,
                           const char *text, size_t length, xs_validate_set *out,
                           void (*progress)(size_t, void *), void *ctx,
                           xs__csv_row_fn row, void *user, xs_error *err);
/* A whole field as a finite decimal number (no hex, inf or nan, a point
 * whatever the locale): 0, else -1. */
int xs__csv_number(const char *s, double *out);
/* the times a validate CSV may hold, in microseconds (a nanosecond to
 * 1e12 us: no zero, subnormal, infinite or absurd figure) */
#define XS__TIME_US_MIN 1e-3
#define XS__TIME_US_MAX 1e12
/* XS_INVALID with "FILE:LINE:COLUMN: " and the message */
xs_status xs__csv_fail(xs_error *err, const char *file, size_t line, size_t col,
                       const char *fmt, ...) XS__PRINTF(5, 6);

/* The signed median error (xs_validate_bias) of an arm's rows in band i
 * of bands (clamped to 0 .. nb - 1; *label its name, when label is not
 * NULL; *n its rows), NAN for fewer than min_rows rows: the MegaMoE and
 * ring attention bias tables' bands. */
double xs__validate_band_bias(const xs_validate_set *set, const char *arm, int i,
                              const double (*bands)[2], const char *const *names, int nb,
                              size_t min_rows, const char **label, size_t *n);

/* xs_validate_megamoe_with one given profile, each row predicted under
 * burstgap alone, with its knobs as written (for the fit, which predicts
 * its rows again; the knobs left 0 are the kernel's defaults either way) */
xs_status xs__validate_megamoe_burstgap(const char *text, size_t length,
                                        const char *filename, const xs_profile *profile,
                                        xs_validate_set *out, xs_error *err);
/* xs_validate_ep_by_source with the bound of its exact refits (sources x
 * rows; XS_EP_EXACT_WORK for it) as a parameter: 0 refits every source on
 * the linear model, for tests of it against the exact refits */
xs_status xs__validate_ep_by_source_within(xs_validate_set *set, double *values,
                                           double exact_work, xs_error *err);

/* The rows grouped by a string of each row, key(row, which), the groups in
 * order of first appearance: group k is named name[k] (the string of its
 * first row) and holds rows idx[first[k]] .. idx[first[k + 1] - 1], in row
 * order. By sorting the rows by key, then index: O(n log n) whatever the
 * number of groups. Free with xs_validate_ep_groups_free. */
xs_status xs__validate_group_by(const xs_validate_set *set,
                                const char *(*key)(const xs_validate_row *, int), int which,
                                xs_validate_ep_groups *g, xs_error *err);

#endif
