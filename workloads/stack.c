/*
 * stack.c - the software stacks (stack.h): each one's settings, with
 * where they come from.
 *
 * Every stack issues its kernels from one Python thread through PyTorch's
 * dispatcher: host_op 3.3 us per kernel, collective and send, PyTorch's
 * own operator micro-benchmark of an eager CUDA op (pytorch/pytorch pull
 * 32194; sim/engine.h), Python module code and hooks left out.
 */
#include "workloads/stack.h"

#include <stdio.h>
#include <string.h>

#include "workloads/plan.h"

/* torchtitan's settings, eager or compiled (fusion): the two stacks
 * differ in nothing else. */
#define TORCHTITAN(fusion)                                                    \
  {{"fsdp", "yes"},                                                           \
   {"shard_impl", "fsdp2"},                                                   \
   {"grad_dtype", "fp32"},                                                    \
   {"grad_accum", "autograd"},                                                \
   {"attention", "sdpa"},                                                     \
   {"cross_entropy", "fused"},                                                \
   {"fusion", fusion},                                                        \
   {"selective", "ops"},                                                      \
   {"mem_framework", "torchtitan"},                                           \
   {"host_op", "3.3us"},                                                      \
   {NULL, NULL}}

static const struct stack stacks[] = {
    {"megatron-2021",
     "Megatron-LM v2.5 (2021-08), as the SC21 paper ran it",
     "NVIDIA/Megatron-LM v2.5: examples/sc21/CONFIG.sh (--fp16, no "
     "contiguous buffers or FP32 accumulation); megatron/model/"
     "transformer.py (attention as baddbmm + FusedScaleMaskSoftmax + "
     "dropout); megatron/p2p_communication.py (batch_isend_irecv, then "
     "torch.cuda.synchronize); megatron/model/gpt_model.py (the logits "
     "cast to float for vocab_parallel_cross_entropy); PyTorch 1.8 of "
     "nvcr.io/nvidia/pytorch:20.12 (examples/sc21/SRUN.sh): F.linear's "
     "bias add, the biases' gradients and the attention's copies as ATen "
     "kernels (fusion jit)",
     {{"attention", "unfused"},
      {"p2p", "blocking"},
      {"grad_dtype", "fp16"},
      {"grad_accum", "autograd"},
      {"cross_entropy", "fp32"},
      {"fusion", "jit"},
      {"host_op", "3.3us"},
      {NULL, NULL}}},
    {"megatron-core",
     "Megatron-Core with Transformer Engine, as NeMo 2 and Megatron-Bridge "
     "run it (2025)",
     "NVIDIA/NeMo nemo/collections/llm/recipes/precision/mixed_precision.py"
     " (bf16_mixed: grad_reduce_in_fp32=True; bf16_with_fp8_mixed: the "
     "'hybrid' delayed-scaling recipe, fp8_params=True); the recipes' "
     "distributed optimizer "
     "with overlap_grad_reduce and overlap_param_gather, "
     "cross_entropy_loss_fusion, tp_comm_overlap (Transformer Engine's "
     "userbuffers at their defaults; needs SP with TP > 1); "
     "megatron/core/fusions/"
     "fused_cross_entropy.py; attention by TE's DotProductAttention (cuDNN "
     "on Hopper and Blackwell); TE's Linear and LayerNormLinear backward "
     "(module/linear.py, layernorm_linear.py): a column-parallel layer's "
     "dgrad all-reduced (SP: reduce-scattered) with async_op=True beside "
     "its wgrad GEMM, where the userbuffers overlap does not take it",
     {{"attention", "flash"},
      {"zero", "1"},
      {"shard_impl", "megatron"},
      {"grad_dtype", "fp32"},
      {"grad_accum", "fused"},
      {"overlap_grad", "yes"},
      {"overlap_param_gather", "yes"},
      {"cross_entropy", "fused"},
      {"fp8_recipe", "delayed"},
      {"mem_framework", "megatron"},
      {"fp8_params", "yes"},
      {"tp_comm_overlap", "te"},
      {"async_tp_grad", "yes"},
      {"host_op", "3.3us"},
      {NULL, NULL}}},
    {"megatron-fsdp",
     "Megatron-Core with Transformer Engine on Megatron-FSDP, as NeMo's "
     "H100 settings run Llama 3 8B in FP8 (2025)",
     "NVIDIA/NeMo scripts/performance: helpers.py (set_mcore_fsdp_configs: "
     "optim_grads_params, gradient_accumulation_fusion off; "
     "set_precision_configs: grad_reduce_in_fp32 off; nccl_ub and "
     "keep_fp8_transpose_cache from recommended_model_configs' "
     "use_user_buffer_registration and keep_fsdp_fp8_transpose_cache); "
     "NVIDIA/Megatron-LM megatron/core/distributed/fsdp/ (nccl_ub forces "
     "fsdp_double_buffer: param_and_grad_buffer.py); otherwise as "
     "megatron-core",
     {{"attention", "flash"},
      {"zero", "3"},
      {"shard_impl", "megatron-fsdp-ub"},
      {"grad_dtype", "bf16"},
      {"grad_accum", "buffer"},
      {"overlap_grad", "yes"},
      {"cross_entropy", "fused"},
      {"fp8_recipe", "delayed"},
      {"mem_framework", "megatron"},
      {"fp8_params", "yes"},
      {"tp_comm_overlap", "te"},
      {"host_op", "3.3us"},
      {NULL, NULL}}},
    {"torchtitan",
     "torchtitan, eager (FSDP2, 2025)",
     "pytorch/torchtitan: parallelize_llama (fully_shard per Transformer "
     "block with MixedPrecisionPolicy(param_dtype=bfloat16, "
     "reduce_dtype=float32)); SDPA attention (FlashAttention-2 where the "
     "GPU runs it, PyTorch 2.5-2.10); the loss: F.cross_entropy on the "
     "logits cast to float; "
     "eager RMSNorm (nn.RMSNorm), SwiGLU and apply_rotary_emb; "
     "selective activation checkpointing by its op policy "
     "(models/llama3/infra/parallelize.py, _save_list)",
     TORCHTITAN("eager")},
    {"torchtitan-compile",
     "torchtitan with torch.compile of each Transformer block (FSDP2, 2025)",
     "pytorch/torchtitan: as torchtitan, with --compile.enable: Inductor "
     "fuses RMSNorm, SwiGLU and RoPE into single kernels",
     TORCHTITAN("fused")},
    {"deepspeed-2021",
     "DeepSpeed ZeRO-3 as of 2021 (v0.3.16 to v0.5)",
     "microsoft/DeepSpeed v0.3.16-v0.5.x: runtime/zero/stage3.py "
     "(fetch_sub_module blocks on torch.cuda.synchronize, then prefetches "
     "5e7 elements) and partition_parameters.py (a gather per parameter, "
     "a Python loop over the ranks; reduce-scatters per parameter); "
     "plan.h, shard_impl",
     {{"zero", "3"}, {"shard_impl", "deepspeed-2021"}, {"host_op", "3.3us"},
      {NULL, NULL}}},
    {"deepspeed",
     "DeepSpeed ZeRO-3 today (prefetch buckets, coalesced gathers)",
     "microsoft/DeepSpeed: runtime/zero/partitioned_param_coordinator.py "
     "(prefetch bucket, persistence threshold; plan.h, shard_impl)",
     {{"zero", "3"}, {"shard_impl", "deepspeed"}, {"host_op", "3.3us"},
      {NULL, NULL}}},
};

int stack_count(void) { return (int)(sizeof stacks / sizeof *stacks); }

const struct stack *stack_at(int i) { return &stacks[i]; }

const struct stack *stack_named(const char *name)
{
  for (int i = 0; i < stack_count(); i++)
    if (strcmp(stacks[i].name, name) == 0)
      return &stacks[i];
  return NULL;
}

int stack_check(const char *name, struct weft_err *err)
{
  if (stack_named(name))
    return 0;
  char list[256] = "";
  size_t n = 0;
  for (int i = 0; i < stack_count() && n < sizeof list; i++)
    n += (size_t)snprintf(list + n, sizeof list - n, "%s%s", i ? ", " : "",
                          stacks[i].name);
  return weft_errf(err, WEFT_ENOTFOUND, "no stack '%s' (stacks: %s)", name,
                   list);
}

int stack_apply(struct plan *p, const char *name, const char *origin,
                struct weft_err *err)
{
  if (stack_check(name, err))
    return weft_err_prefix(err, origin);
  const struct stack *s = stack_named(name);
  char from[WEFT_MAX_ORIGIN];
  snprintf(from, sizeof from, "%s (stack %s)", origin, s->name);
  for (int i = 0; s->set[i].key; i++) {
    int k = plan_key_from_name(s->set[i].key);
    if (k < 0)
      return weft_errf(err, WEFT_ENOTFOUND, "stack %s: no plan setting %s",
                       s->name, s->set[i].key);
    if (p->set[k])
      continue;
    /* fsdp=yes also sets zero=3 (plan.c, set_flag): not over the job's
     * own zero. */
    if (k == PK_FSDP && p->set[PK_ZERO])
      continue;
    if (plan_set(p, (enum plan_key)k, s->set[i].value, from, err))
      return -1;
  }
  return 0;
}
