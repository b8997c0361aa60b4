/*
 * sensitivity.h: the numbers of a profile a planner reads, each moved over
 * the range its kind of source gives it (docs/tune.md "Sensitivity"). One
 * design for every planner: the MegaMoE planner (moe_table.c) and the
 * attention planner (attention/sensitivity.c) say which numbers they read
 * and redo their plans; the numbers, their ranges and the moved copies of
 * the profile are made here.
 */
#ifndef XS_PLAN_SENSITIVITY_H
#define XS_PLAN_SENSITIVITY_H

#include "internal.h"

enum {
  XS__SENS_CHANNEL, /* a channel's field                                */
  XS__SENS_FLOPS,   /* compute.flops_per_s.<dtype>                      */
  XS__SENS_COST,    /* a field of xs_kernel_costs                       */
  XS__SENS_HBM,     /* compute.hbm_Bps                                  */
  XS__SENS_EFFICIENCY, /* compute.efficiency                            */
  XS__SENS_ATTN     /* compute.attn_*.<kernel>                          */
};

typedef struct {
  char key[96];   /* the profile's key path, as its "sources" name it    */
  int kind;
  size_t chan;    /* CHANNEL: the channel                                */
  size_t field;   /* CHANNEL: offset in xs_channel; COST: in
                     xs_kernel_costs                                     */
  int table;      /* ATTN: the xs_attn_table                             */
  char name[32];  /* FLOPS: the dtype; ATTN: the table's kernel key      */
  double value;
} xs__sens_param;

/* A list of numbers: the first cap land in p, n counts all of them (a
 * run refuses a profile with more than it has room for). */
typedef struct {
  xs__sens_param *p;
  size_t n, cap;
} xs__sens_list;

/* Each adds the numbers that are set (nonzero, finite): */
/* every field of channel i (a per-worker rate equal to the channel's
 * moves with it, and is not a number of its own) */
void xs__sens_channel(xs__sens_list *l, const xs_profile *prof, size_t i);
/* the MMA peak of dtype */
void xs__sens_flops(xs__sens_list *l, const xs_profile *prof, const char *dtype);
/* the kernel costs named (xs_kernel_costs' field names) */
void xs__sens_costs(xs__sens_list *l, const xs_profile *prof,
                    const char *const *names, size_t n);
/* compute.hbm_Bps */
void xs__sens_hbm(xs__sens_list *l, const xs_profile *prof);
/* compute.efficiency: the fraction of the FLOP/s a kernel without its own
 * figures reaches */
void xs__sens_efficiency(xs__sens_list *l, const xs_profile *prof);
/* the attention table's entry for a kernel key ("fa3", "fa2_fwd_bwd") */
void xs__sens_attn(xs__sens_list *l, const xs_profile *prof, xs_attn_table t,
                   const char *kernel);

/* A typed copy of prof with p's number times f; *out NULL (XS_OK) when
 * that moves it out of its valid range, where a run leaves the factor
 * out. */
xs_status xs__sens_moved(const xs_profile *prof, const xs__sens_param *p,
                         double f, xs_profile **out, xs_error *err);

/* The range p is moved over, from the kind of its source (the source's
 * first word into kind, "" for none): lo and hi as factors of its value,
 * and XS_MOE_SENS_FACTORS factors from lo to hi, geometric. */
void xs__sens_range(const xs_profile *prof, const xs__sens_param *p,
                    char kind[16], double *lo, double *hi,
                    double factor[XS_MOE_SENS_FACTORS]);

/* What would measure p: a probe for a link's numbers, a device-memory
 * benchmark for HBM, else `compute` (the planner's own answer for its
 * kernel terms). */
const char *xs__sens_settle(const xs__sens_param *p, const char *compute);

/* A row's head: the number's key and value, its kind, range and factors
 * (xs__sens_range) and what would measure it (xs__sens_settle). */
void xs__sens_head(const xs_profile *prof, const xs__sens_param *p, const char *compute,
                   char param[96], double *value, char kind[16], double *lo, double *hi,
                   char settle[128], double factor[XS_MOE_SENS_FACTORS]);

#endif
