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
/* The unfused merge's kernels each step after the first
 * (zhuzilin/ring-flash-attention utils.py at 556ddaa, _update_out_and_lse):
 * block_out.to(float32), block_lse - lse, sigmoid, out - block_out, the
 * product, out minus it; lse - block_lse, logsigmoid, lse minus it: nine
 * elementwise ops, each its own kernel (its 38 bytes an element are those
 * of separate kernels; ring-flash-attention PR 87 and vllm-omni PR 5187
 * describe the merge as several elementwise kernels). */
#define UNFUSED_KERNELS 9.0

/* What a ring written in Python issues from the host, counted in
 * ring-flash-attention's source at 556ddaa (ring_flash_attn.py,
 * zigzag_ring_flash_attn.py, utils.py); each eager op from Python costs
 * the profile's host_op_s, each kernel launched from C++ (TorchScript's
 * ops, an extension's own kernels) its launch_s.
 * Posting a step's send and receive: two receive buffers (torch.empty_like
 * in RingComm.send_recv), four isend/irecv inside batch_isend_irecv, and
 * the group's end, which launches NCCL's kernel: 7 ops. */
#define POST_OPS 7.0
/* The first step's merge: out = block_out.to(float32), then the LSE's
 * transpose and unsqueeze: 3 ops. A later step's: the call into the
 * TorchScript function (1 op), whose nine kernels are launched from C++.
 * Zigzag's steps that attend the second half of the queries read that
 * half of out and lse (2 ops) and write it back (2 ops, 2 copy kernels). */
#define MERGE_FIRST_OPS 3.0
#define MERGE_OPS 1.0
#define SLICE_OPS 4.0
#define SLICE_KERNELS 2.0
/* After the last step: out.to(q.dtype), the LSE's squeeze and transpose. */
#define END_OPS 3.0
/* The backward (ring_flash_attn_backward): FlashAttention-2's backward
 * call launches three kernels (dot(dO, O), dQ/dK/dV, dQ's conversion:
 * flash_bwd_launch_template.h); a step accumulates dq, dk and dv (3 ops)
 * and posts two sends (K, V and dK, dV), each waited on; the gradients'
 * conversions at the end are 3 ops. */
#define BWD_KERNELS 3.0
#define BWD_ACC_OPS 3.0
#define BWD_POSTS 2.0
#define BWD_END_OPS 3.0
/* Rings launched from C++ (one Python call a ring): ThunderKittens' and
 * mKernel's step is a kernel, a reduction and a barrier kernel; piggyback's
 * the kernel and its merge. */
#define NATIVE_KERNELS_SMS 3.0
#define NATIVE_KERNELS_PIGGYBACK 2.0
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
  t->gap_s = kc.kernel_gap_s > 0 ? kc.kernel_gap_s : kc.launch_s;
  t->host_op_s = kc.host_op_s;
  t->nccl_s = kc.nccl_p2p_s;
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
  t->post_ops = POST_OPS;
  t->merge_first_ops = MERGE_FIRST_OPS;
  t->merge_ops = MERGE_OPS;
  t->slice_ops = SLICE_OPS;
  t->slice_kernels = SLICE_KERNELS;
  t->end_ops = END_OPS;
  t->bwd_kernels = BWD_KERNELS;
  t->bwd_acc_ops = BWD_ACC_OPS;
  t->bwd_posts = BWD_POSTS;
  t->bwd_end_ops = BWD_END_OPS;
  t->native_kernels_sms = NATIVE_KERNELS_SMS;
  t->native_kernels_piggyback = NATIVE_KERNELS_PIGGYBACK;
  if (!(t->merge_Bps > 0)) /* a profile without HBM: merges are free */
    t->merge_Bps = INFINITY, t->hbm_Bps = INFINITY;
}
