/*
 * costs.c: every cost the ring attention planner charges beyond the
 * attention kernels and the channel, each a named term with where it comes
 * from (docs/plan-flashattn.md "Costs"). Machine figures come from the
 * profile (with their sources there); the rest are read off the kernels'
 * and libraries' source, here. Nothing is fitted to ring timings.
 */
#include "plan/attention/attention.h"

#include <string.h>

/* Merging a step's partial output into the running one by log-sum-exp,
 * as ring-flash-attention does it (zhuzilin/ring-flash-attention,
 * utils.py, update_out_and_lse): the block output converted to FP32 (2 B
 * read, 4 B written), out - block_out (8, 4), times the sigmoid of the
 * LSE difference (4, 4), subtracted from out (8, 4): 38 bytes an output
 * element, unfused elementwise kernels. */
#define UNFUSED_B 38.0
/* A fused merge (ThunderKittens' ring attention reduction kernel,
 * HazyResearch/ThunderKittens kernels/parallel/ring_attn and
 * uccl-project/mKernel ring_attn.cu, attn_reduction): reads the running
 * and the block output (BF16) and writes the running one: 6 bytes. */
#define FUSED_B 6.0
/* Converting the output between BF16 and FP32 at the first step and at
 * the end (unfused): 2 read and 4 written, or 4 and 2. */
#define CONVERT_B 6.0
/* The backward accumulates each step's dQ, dK and dV into FP32
 * accumulators: read 2 + 4, write 4 bytes an element. */
#define GRAD_B 10.0
/* The unfused merge's kernels on the critical stream each step: the
 * output update and the LSE update (TorchScript fuses each chain of
 * elementwise ops; whether into one kernel each is not verified). */
#define UNFUSED_KERNELS 2.0
/* Bytes of HBM traffic a transfer costs per byte forwarded: the sender's
 * kernel reads the block from HBM and the receiver writes it there (an
 * NCCL maintainer puts it at 2-3 bytes of HBM per NVLink byte,
 * NVIDIA/nccl issue 1428). */
#define LINK_HBM_B 2.0
/* How much longer a kernel runs per second of HBM traffic a concurrent
 * transfer moves (traffic / HBM bandwidth): in NVIDIA/nccl issue 1428 an
 * attention kernel on an A100 went from 0.18 to 0.33 ms beside an NCCL
 * all-gather, with SMs to spare (memory bandwidth, the maintainer said).
 * Taking the all-gather at 230 GB/s each way and 3 bytes of HBM per byte
 * on the link, it moved 690 GB/s x 0.33 ms = 228 MB, 0.112 ms of the
 * A100's 2.039 TB/s: 0.15 / 0.112 = 1.34. A lead: one published
 * observation, its rate assumed. */
#define INTERFERENCE 1.34
/* Piggyback: the SMs' forwards are staggered over the kernel in this many
 * groups (every CTA forwards the tiles it is given as its loop reaches
 * them, so the kernel's stores spread over its time); each group's stores
 * are issued together. */
#define PHASE_GROUPS 8.0

void xs__fa_costs_of(const xs_profile *prof, xs__fa_costs *t) {
  xs_kernel_costs kc;
  xs_profile_kernel_costs(prof, &kc);
  memset(t, 0, sizeof *t);
  t->launch_s = kc.launch_s;
  t->sync_s = kc.ring_step_s;
  t->barrier_s = kc.barrier_s;
  t->hbm_Bps = xs_profile_hbm_Bps(prof);
  t->merge_Bps = t->hbm_Bps * (kc.copy_efficiency > 0 ? kc.copy_efficiency : 1);
  t->unfused_B = UNFUSED_B;
  t->fused_B = FUSED_B;
  t->convert_B = CONVERT_B;
  t->grad_B = GRAD_B;
  t->unfused_kernels = UNFUSED_KERNELS;
  t->comm_sms = kc.comm_sms;
  t->comm_cta_Bps = kc.comm_cta_Bps;
  t->forward_sm_Bps = kc.forward_sm_Bps;
  t->interference = INTERFERENCE;
  t->link_hbm_B = LINK_HBM_B;
  t->phase_groups = PHASE_GROUPS;
  if (!(t->merge_Bps > 0)) /* a profile without HBM: merges are free */
    t->merge_Bps = INFINITY, t->hbm_Bps = INFINITY;
}
