/*
 * report_fields.h - the one table of the fields of `weft run --json`, in
 * the object's order.  Everything that names a field is derived from it:
 * report.c's JSON writer, report_columns (the results columns of a sweep),
 * enum report_field and report_fields[] (name, type, format, column), which
 * cmd_report.c looks its metrics up by, and the check of the README's
 * field table (tests/test_report.c).
 *
 * A row is X(ID, NAME, TYPE, FORMAT, KIND, WHEN, VALUE):
 *   ID      RF_<ID> in enum report_field
 *   NAME    the dotted name: "memory.total_bytes" is "total_bytes" inside
 *           the object "memory"; rows of one object are consecutive
 *   TYPE    how the value is printed: NUM a double by FORMAT, null when not
 *           finite; LONG an integer; BOOL true or false; STR a string,
 *           escaped; WORD a string printed as it is (words of weft's own
 *           that hold no quotes); SETTING the plan setting VALUE (enum
 *           plan_key) as numbers, booleans (yes/no) or strings; HOOK a
 *           statement that prints a whole member itself, separator
 *           included (--breakdown)
 *   FORMAT  printf format of NUM, else NULL
 *   KIND    COL a results column of weft sweep; LEAD a leading field that
 *           repeats inputs.* (not a column: it would clash with a study's
 *           own columns); NOCOL neither (the wall time, which differs from
 *           run to run, --breakdown, and settings printed only when set)
 *   WHEN    the field is printed only when this is true
 *   VALUE   an expression over report_print_json's locals: r (the report),
 *           f (the stream), p (the plan), md (the model), m (the memory),
 *           res (the engine's result), c (the cluster), tp (its fabric's
 *           parts), method (the compression as text), placement (the
 *           placement as text)
 *
 * Adding a field: a row here and a line in the README's table (the test
 * compares their names); its value is computed in report_fill.
 */
#ifndef WEFT_REPORT_FIELDS_H
#define WEFT_REPORT_FIELDS_H

/* clang-format off */
#define REPORT_FIELDS(X) \
  X(MODEL, "model", STR, NULL, LEAD, true, md->name)                          \
  X(GPUS, "gpus", LONG, NULL, LEAD, true, p->gpus)                            \
  X(TP, "tp", LONG, NULL, LEAD, true, p->tp)                                  \
  X(PP, "pp", LONG, NULL, LEAD, true, p->pp)                                  \
  X(DP, "dp", LONG, NULL, LEAD, true, p->dp)                                  \
  X(CP, "cp", LONG, NULL, LEAD, true, p->cp)                                  \
  X(EP, "ep", LONG, NULL, LEAD, true, p->ep)                                  \
  X(ZERO, "zero", LONG, NULL, LEAD, true, p->zero)                            \
  X(SHARD_IMPL, "shard_impl",                                                 \
    WORD, NULL, LEAD, p->zero == 3 || p->shard_impl == SI_MEGATRON,           \
    shard_impl_name(p->shard_impl))                                           \
  X(ITERATION_TIME_S, "iteration_time_s",                                     \
    NUM, "%.9g", COL, true, r->iteration_s)                                   \
  X(TFLOPS_PER_GPU, "tflops_per_gpu",                                         \
    NUM, "%.6g", COL, true, r->hw_flops_per_gpu / 1e12)                       \
  X(MODEL_TFLOPS_PER_GPU, "model_tflops_per_gpu",                             \
    NUM, "%.6g", COL, true, r->model_flops_per_gpu / 1e12)                    \
  X(MFU, "mfu",                                                               \
    NUM, "%.6g", COL, true, r->model_flops_per_gpu / r->peak_flops)           \
  X(TOKENS_PER_S, "tokens_per_s", NUM, "%.6g", COL, true, r->tokens_per_s)    \
  X(PARAMS_TOTAL, "params_total",                                             \
    NUM, "%.0f", COL, true, model_params(md))                                 \
  X(PARAMS_ACTIVE, "params_active",                                           \
    NUM, "%.0f", COL, true, model_active_params(md))                          \
  X(COMPUTE_S, "compute_s", NUM, "%.9g", COL, true, res->compute_s)           \
  X(COMPUTE_GEMM_S, "compute_gemm_s", NUM, "%.9g", COL, true, r->gemm_s)      \
  X(COMPUTE_ATTENTION_S, "compute_attention_s",                               \
    NUM, "%.9g", COL, true, r->attention_s)                                   \
  X(COMPUTE_MEMORY_BOUND_S, "compute_memory_bound_s",                         \
    NUM, "%.9g", COL, true, r->memory_bound_s)                                \
  X(COMPUTE_OPTIMIZER_S, "compute_optimizer_s",                               \
    NUM, "%.9g", COL, true, r->optimizer_s)                                   \
  X(OVERLAPPED_COMM_S, "overlapped_comm_s",                                   \
    NUM, "%.9g", COL, true, res->overlapped_s)                                \
  X(EXPOSED_COMM_S, "exposed_comm_s", NUM, "%.9g", COL, true, res->exposed_s) \
  X(IDLE_S, "idle_s", NUM, "%.9g", COL, true, res->idle_s)                    \
  X(MEMORY_PER_GPU_BYTES, "memory_per_gpu_bytes",                             \
    NUM, "%.0f", COL, true, m->total)                                         \
  X(FITS_IN_MEMORY, "fits_in_memory", BOOL, NULL, COL, true, m->fits)         \
  X(MEM_STAGE, "memory.stage", LONG, NULL, COL, true, m->stage)               \
  X(MEM_MICROBATCHES_IN_FLIGHT, "memory.microbatches_in_flight",              \
    LONG, NULL, COL, true, m->peak_inflight)                                  \
  X(MEM_NCCL_COMMUNICATORS, "memory.nccl_communicators",                      \
    LONG, NULL, COL, true, m->communicators)                                  \
  X(MEM_PIPELINE_PEERS, "memory.pipeline_peers",                              \
    LONG, NULL, COL, true, m->p2p_peers)                                      \
  X(MEM_SHARD, "memory.shard", NUM, "%.6g", COL, true, m->shard)              \
  X(MEM_EXPERT_SHARD, "memory.expert_shard",                                  \
    NUM, "%.6g", COL, true, m->expert_shard)                                  \
  X(MEM_WEIGHTS_BYTES, "memory.weights_bytes",                                \
    NUM, "%.0f", COL, true, m->weights)                                       \
  X(MEM_GRADIENTS_BYTES, "memory.gradients_bytes",                            \
    NUM, "%.0f", COL, true, m->grads)                                         \
  X(MEM_OPTIMIZER_BYTES, "memory.optimizer_bytes",                            \
    NUM, "%.0f", COL, true, m->optimizer)                                     \
  X(MEM_ACTIVATIONS_BYTES, "memory.activations_bytes",                        \
    NUM, "%.0f", COL, true, m->activations)                                   \
  X(MEM_TRANSIENT_BYTES, "memory.transient_bytes",                            \
    NUM, "%.0f", COL, true, m->transient)                                     \
  X(MEM_BUFFERS_BYTES, "memory.buffers_bytes",                                \
    NUM, "%.0f", COL, true, m->buffers)                                       \
  X(MEM_TOTAL_BYTES, "memory.total_bytes", NUM, "%.0f", COL, true, m->total)  \
  X(MEM_CAPACITY_BYTES, "memory.capacity_bytes",                              \
    NUM, "%.0f", COL, true, m->capacity)                                      \
  X(MEM_FIT_HINT, "memory.fit_hint",                                          \
    STR, NULL, COL, r->fit_hint[0], r->fit_hint)                              \
  X(MEM_FIT_HINT_BYTES, "memory.fit_hint_bytes",                              \
    NUM, "%.0f", COL, r->fit_hint[0], r->fit_hint_bytes)                      \
  X(GPU_ENERGY_J, "gpu_energy_j", NUM, "%.6g", COL, true, r->energy_j)        \
  X(GPU_ENERGY_PER_TOKEN_J, "gpu_energy_per_token_j",                         \
    NUM, "%.6g", COL, true, r->energy_j / r->tokens)                          \
  X(NIC_ENERGY_J, "nic_energy_j",                                             \
    NUM, "%.6g", COL, true,                                                   \
    r->nic_ports && !r->have_nic_power ? NAN : r->nic_energy_j)               \
  X(SWITCH_ENERGY_J, "switch_energy_j",                                       \
    NUM, "%.6g", COL, true,                                                   \
    r->nic_ports && !r->have_switch ? NAN : r->switch_energy_j)               \
  X(ENERGY_J, "energy_j",                                                     \
    NUM, "%.6g", COL, true,                                                   \
    (r->energy_j + r->nic_energy_j + r->switch_energy_j))                     \
  X(ENERGY_PER_TOKEN_J, "energy_per_token_j",                                 \
    NUM, "%.6g", COL, true,                                                   \
    (r->energy_j + r->nic_energy_j + r->switch_energy_j) / r->tokens)         \
  X(NETWORK_BYTES, "network_bytes", NUM, "%.6g", COL, true, r->cf.nic_bytes)  \
  X(COST_PER_MTOKEN, "cost_per_mtoken",                                       \
    NUM, "%.6g", COL, true,                                                   \
    r->cost_per_mtoken > 0 ? r->cost_per_mtoken : NAN)                        \
  X(NET_TOPOLOGY, "network.topology",                                         \
    STR, NULL, COL, true, topology_name(c->topology))                         \
  X(NET_NIC_PORTS, "network.nic_ports", LONG, NULL, COL, true, tp.nic_ports)  \
  X(NET_SWITCHES, "network.switches", LONG, NULL, COL, true, tp.switches_all) \
  X(NET_SWITCH_PORTS, "network.switch_ports",                                 \
    LONG, NULL, COL, true, tp.ports_all)                                      \
  X(NET_CABLES, "network.cables", LONG, NULL, COL, true, tp.cables)           \
  X(NET_POWER_W, "network.power_w",                                           \
    NUM, "%.6g", COL, true,                                                   \
    tp.have_switch_power && c->nic.max_w > 0 ? tp.power_w : NAN)              \
  X(NET_COST_USD, "network.cost_usd",                                         \
    NUM, "%.6g", COL, true, tp.have_prices ? tp.cost_usd : NAN)               \
  X(CF_ITERATION_S, "closed_form.iteration_s",                                \
    NUM, "%.9g", COL, true, r->cf.iteration_s)                                \
  X(CF_COMPUTE_S, "closed_form.compute_s",                                    \
    NUM, "%.9g", COL, true, r->cf.compute_s)                                  \
  X(CF_COMM_S, "closed_form.comm_s", NUM, "%.9g", COL, true, r->cf.comm_s)    \
  X(CF_EXPOSED_COMM_S, "closed_form.exposed_comm_s",                          \
    NUM, "%.9g", COL, true, r->cf.exposed_s)                                  \
  X(CF_BUBBLE_S, "closed_form.bubble_s",                                      \
    NUM, "%.9g", COL, true, r->cf.bubble_s)                                   \
  X(CF_SIM_OVER_CLOSED, "closed_form.sim_over_closed",                        \
    NUM, "%.6g", COL, true, r->iteration_s / r->cf.iteration_s)               \
  X(COMP_METHOD, "compression.method", STR, NULL, COL, true, method)          \
  X(COMP_CODEC_S, "compression.codec_s", NUM, "%.9g", COL, true, r->codec_s)  \
  X(COMP_DP_BYTES, "compression.dp_bytes",                                    \
    NUM, "%.6g", COL, true, r->ddp.dp_bytes)                                  \
  X(COMP_MODEL_ITERATION_S, "compression.model_iteration_s",                  \
    NUM, "%.9g", COL, true, r->ddp.iteration_s)                               \
  X(COMP_BASELINE_ITERATION_S, "compression.baseline_iteration_s",            \
    NUM, "%.9g", COL, true,                                                   \
    r->base_iteration_s > 0 ? r->base_iteration_s : NAN)                      \
  X(COMP_BASELINE_DP_BYTES, "compression.baseline_dp_bytes",                  \
    NUM, "%.6g", COL, true,                                                   \
    r->base_iteration_s > 0 ? r->base_ddp.dp_bytes : NAN)                     \
  X(COMP_MODEL_BASELINE_S, "compression.model_baseline_s",                    \
    NUM, "%.9g", COL, true,                                                   \
    r->base_iteration_s > 0 ? r->base_ddp.iteration_s : NAN)                  \
  X(COMP_SPEEDUP, "compression.speedup",                                      \
    NUM, "%.6g", COL, true,                                                   \
    r->base_iteration_s > 0 ? r->base_iteration_s / r->iteration_s : NAN)     \
  X(COMP_MODEL_SPEEDUP, "compression.model_speedup",                          \
    NUM, "%.6g", COL, true,                                                   \
    r->base_iteration_s > 0 ? r->base_ddp.iteration_s / r->ddp.iteration_s    \
                            : NAN)                                            \
  X(GP_FAIL_RATES, "goodput.fail_rates",                                      \
    STR, NULL, NOCOL, r->goodput, r->fail_rates)                              \
  X(GP_MODE, "goodput.ckpt_mode",                                             \
    WORD, NULL, NOCOL, r->goodput,                                            \
    r->goodput->mode == CKPT_ASYNC ? "async" : "sync")                        \
  X(GP_WALL_S, "goodput.wall_s",                                              \
    NUM, "%.9g", COL, r->goodput, r->goodput->wall_s)                         \
  X(GP_WORK_S, "goodput.work_s",                                              \
    NUM, "%.9g", COL, r->goodput, r->goodput->work_s)                         \
  X(GP_EFFICIENCY, "goodput.efficiency",                                      \
    NUM, "%.6g", COL, r->goodput, r->goodput->efficiency)                     \
  X(GP_MTBF_S, "goodput.mtbf_s",                                              \
    NUM, "%.9g", COL, r->goodput, r->goodput->mtbf_s)                         \
  X(GP_INTERRUPTIONS, "goodput.interruptions",                                \
    NUM, "%.6g", COL, r->goodput, r->goodput->interruptions)                  \
  X(GP_REWORK_S, "goodput.rework_s",                                          \
    NUM, "%.9g", COL, r->goodput, r->goodput->rework_s)                       \
  X(GP_CHECKPOINT_S, "goodput.checkpoint_s",                                  \
    NUM, "%.9g", COL, r->goodput, r->goodput->checkpoint_s)                   \
  X(GP_RESTART_S, "goodput.restart_s",                                        \
    NUM, "%.9g", COL, r->goodput, r->goodput->restart_s)                      \
  X(GP_CKPT_BYTES, "goodput.checkpoint_bytes",                                \
    NUM, "%.6g", COL, r->goodput, r->goodput->ckpt_bytes)                     \
  X(GP_WRITE_S, "goodput.write_s",                                            \
    NUM, "%.9g", COL, r->goodput, r->goodput->write_s)                        \
  X(GP_BLOCK_S, "goodput.block_s",                                            \
    NUM, "%.9g", COL, r->goodput, r->goodput->block_s)                        \
  X(GP_RESTART_TIME_S, "goodput.restart_time_s",                              \
    NUM, "%.9g", COL, r->goodput, r->goodput->restart_in_s)                   \
  X(GP_INTERVAL_S, "goodput.interval_s",                                      \
    NUM, "%.9g", COL, r->goodput, r->goodput->interval_s)                     \
  X(GP_OPTIMAL_S, "goodput.optimal_interval_s",                               \
    NUM, "%.9g", COL, r->goodput, r->goodput->optimal_s)                      \
  X(GP_YOUNG_S, "goodput.young_interval_s",                                   \
    NUM, "%.9g", COL, r->goodput, r->goodput->young_s)                        \
  X(GP_DALY_S, "goodput.daly_interval_s",                                     \
    NUM, "%.9g", COL, r->goodput, r->goodput->daly_s)                         \
  X(HELD_BY_RANK, "held_by_rank",                                             \
    LONG, NULL, COL, r->held_cols && res->stages && res->path.held_rank >= 0,\
    res->path.held_rank)                                                      \
  X(HELD_BY_RANK_S, "held_by_rank_s",                                         \
    NUM, "%.9g", COL, r->held_cols && res->stages && res->path.held_rank >= 0,\
    res->path.held_rank_s)                                                    \
  X(IT_COUNT, "iterations.count", LONG, NULL, COL, r->iters, r->iters->n)     \
  X(IT_SEED, "iterations.first_seed",                                         \
    LONG, NULL, COL, r->iters, (long)r->iters->seed0)                         \
  X(IT_MIN_S, "iterations.min_s",                                             \
    NUM, "%.9g", COL, r->iters, r->iters->min_s)                              \
  X(IT_MEDIAN_S, "iterations.median_s",                                       \
    NUM, "%.9g", COL, r->iters, r->iters->median_s)                           \
  X(IT_MEAN_S, "iterations.mean_s",                                           \
    NUM, "%.9g", COL, r->iters, r->iters->mean_s)                             \
  X(IT_P90_S, "iterations.p90_s",                                             \
    NUM, "%.9g", COL, r->iters, r->iters->p90_s)                              \
  X(IT_P99_S, "iterations.p99_s",                                             \
    NUM, "%.9g", COL, r->iters, r->iters->p99_s)                              \
  X(IT_MAX_S, "iterations.max_s",                                             \
    NUM, "%.9g", COL, r->iters, r->iters->max_s)                              \
  X(IT_EVEN_S, "iterations.even_s",                                           \
    NUM, "%.9g", COL, r->iters, r->iters->even_s)                             \
  X(IT_LOST, "iterations.throughput_lost",                                    \
    NUM, "%.6g", COL, r->iters, 1 - r->iters->even_s / r->iters->mean_s)      \
  X(KERNELS, "kernels", LONG, NULL, COL, true, res->kernels)                  \
  X(FLOWS, "flows", LONG, NULL, COL, true, res->flows)                        \
  X(BREAKDOWN, "breakdown",                                                   \
    HOOK, NULL, NOCOL, res->stages, json_breakdown(f, res))                   \
  X(SIM_WALL_S, "sim_wall_s", NUM, "%.3f", NOCOL, true, r->sim_wall_s)        \
  X(SCHEMA, "schema", LONG, NULL, COL, true, REPORT_JSON_SCHEMA)              \
  X(WEFT_VERSION, "weft_version", STR, NULL, COL, true, WEFT_VERSION)         \
  X(MODEL_NAME, "inputs.model.name", STR, NULL, COL, true, md->name)          \
  X(MODEL_LAYERS, "inputs.model.layers", LONG, NULL, COL, true, md->layers)   \
  X(MODEL_HIDDEN, "inputs.model.hidden", LONG, NULL, COL, true, md->hidden)   \
  X(MODEL_HEADS, "inputs.model.heads", LONG, NULL, COL, true, md->heads)      \
  X(MODEL_KV_HEADS, "inputs.model.kv_heads",                                  \
    LONG, NULL, COL, true, md->kv_heads)                                      \
  X(MODEL_FFN, "inputs.model.ffn", LONG, NULL, COL, true, md->ffn)            \
  X(MODEL_FFN_KIND, "inputs.model.ffn_kind",                                  \
    WORD, NULL, COL, true, md->ffn_kind == FFN_SWIGLU ? "swiglu" : "gelu")    \
  X(MODEL_VOCAB, "inputs.model.vocab", LONG, NULL, COL, true, md->vocab)      \
  X(MODEL_SEQ, "inputs.model.seq", LONG, NULL, COL, true, md->seq)            \
  X(MODEL_DTYPE, "inputs.model.dtype",                                        \
    WORD, NULL, COL, true, dtype_name(md->dtype))                             \
  X(MODEL_EXPERTS, "inputs.model.experts",                                    \
    LONG, NULL, COL, true, md->experts)                                       \
  X(MODEL_TOPK, "inputs.model.topk", LONG, NULL, COL, true, md->topk)         \
  X(MODEL_STYLE, "inputs.model.style",                                        \
    WORD, NULL, COL, true, md->gpt_style ? "gpt" : "llama")                   \
  X(MODEL_HEAD_DIM, "inputs.model.head_dim",                                  \
    LONG, NULL, NOCOL, md->head_dim > 0, md->head_dim)                        \
  X(MODEL_QKV_BIAS, "inputs.model.qkv_bias",                                  \
    BOOL, NULL, NOCOL, md->qkv_bias != MO_STYLE, model_qkv_bias(md))          \
  X(MODEL_QK_NORM, "inputs.model.qk_norm",                                    \
    BOOL, NULL, NOCOL, md->qk_norm, md->qk_norm)                              \
  X(MODEL_TIED, "inputs.model.tied",                                          \
    BOOL, NULL, NOCOL, md->tied != MO_STYLE, model_tied(md))                  \
  X(MODEL_MOE_FFN, "inputs.model.moe_ffn",                                    \
    LONG, NULL, NOCOL, md->moe_ffn > 0, md->moe_ffn)                          \
  X(MODEL_SHARED_FFN, "inputs.model.shared_ffn",                              \
    LONG, NULL, NOCOL, md->shared_ffn > 0, md->shared_ffn)                    \
  X(MODEL_DENSE_LAYERS, "inputs.model.dense_layers",                          \
    LONG, NULL, NOCOL, md->dense_layers > 0, md->dense_layers)                \
  X(MODEL_MOE_EVERY, "inputs.model.moe_every",                                \
    LONG, NULL, NOCOL, md->moe_every > 1, md->moe_every)                      \
  X(MODEL_EXPERT_GROUPS, "inputs.model.expert_groups",                        \
    LONG, NULL, NOCOL, md->expert_groups > 0, md->expert_groups)              \
  X(MODEL_TOPK_GROUPS, "inputs.model.topk_groups",                            \
    LONG, NULL, NOCOL, md->topk_groups > 0, md->topk_groups)                  \
  X(MODEL_Q_LORA, "inputs.model.q_lora",                                      \
    LONG, NULL, NOCOL, md->q_lora > 0, md->q_lora)                            \
  X(MODEL_KV_LORA, "inputs.model.kv_lora",                                    \
    LONG, NULL, NOCOL, md->kv_lora > 0, md->kv_lora)                          \
  X(MODEL_ROPE_DIM, "inputs.model.rope_dim",                                  \
    LONG, NULL, NOCOL, model_mla(md), model_rope_dim(md))                     \
  X(MODEL_NOPE_DIM, "inputs.model.nope_dim",                                  \
    LONG, NULL, NOCOL, model_mla(md), model_qk_head_dim(md) - model_rope_dim(md))\
  X(MODEL_V_DIM, "inputs.model.v_dim",                                        \
    LONG, NULL, NOCOL, model_mla(md), model_v_head_dim(md))                   \
  X(MODEL_MTP_LAYERS, "inputs.model.mtp_layers",                              \
    LONG, NULL, NOCOL, md->mtp_layers > 0, md->mtp_layers)                    \
  X(MODEL_WINDOW, "inputs.model.window",                                      \
    LONG, NULL, NOCOL, md->window > 0, md->window)                            \
  X(MODEL_FULL_EVERY, "inputs.model.full_every",                              \
    LONG, NULL, NOCOL, md->full_every > 0, md->full_every)                    \
  X(MODEL_ATTN_CHUNK, "inputs.model.attn_chunk",                              \
    LONG, NULL, NOCOL, md->attn_chunk > 0, md->attn_chunk)                    \
  X(MODEL_VOCAB_PAD, "inputs.model.vocab_pad",                                \
    LONG, NULL, NOCOL, md->vocab_pad > 1, md->vocab_pad)                      \
  X(PLAN_TP, "inputs.plan.tp", SETTING, NULL, COL, true, PK_TP)               \
  X(PLAN_PP, "inputs.plan.pp", SETTING, NULL, COL, true, PK_PP)               \
  X(PLAN_DP, "inputs.plan.dp", SETTING, NULL, COL, true, PK_DP)               \
  X(PLAN_CP, "inputs.plan.cp", SETTING, NULL, COL, true, PK_CP)               \
  X(PLAN_EP, "inputs.plan.ep", SETTING, NULL, COL, true, PK_EP)               \
  X(PLAN_SP, "inputs.plan.sp", SETTING, NULL, COL, true, PK_SP)               \
  X(PLAN_MICRO_BATCH, "inputs.plan.micro_batch",                              \
    SETTING, NULL, COL, true, PK_MICRO_BATCH)                                 \
  X(PLAN_GLOBAL_BATCH, "inputs.plan.global_batch",                            \
    SETTING, NULL, COL, true, PK_GLOBAL_BATCH)                                \
  X(PLAN_SCHEDULE, "inputs.plan.schedule",                                    \
    SETTING, NULL, COL, true, PK_SCHEDULE)                                    \
  X(PLAN_RECOMPUTE, "inputs.plan.recompute",                                  \
    SETTING, NULL, COL, true, PK_RECOMPUTE)                                   \
  X(PLAN_BUCKET, "inputs.plan.bucket", SETTING, NULL, COL, true, PK_BUCKET)   \
  X(PLAN_OVERLAP_GRAD, "inputs.plan.overlap_grad",                            \
    SETTING, NULL, COL, true, PK_OVERLAP_GRAD)                                \
  X(PLAN_ORDER, "inputs.plan.order", SETTING, NULL, COL, true, PK_ORDER)      \
  X(PLAN_ATTENTION, "inputs.plan.attention",                                  \
    SETTING, NULL, COL, true, PK_ATTENTION)                                   \
  X(PLAN_P2P, "inputs.plan.p2p", SETTING, NULL, COL, true, PK_P2P)            \
  X(PLAN_GRAD_DTYPE, "inputs.plan.grad_dtype",                                \
    SETTING, NULL, COL, true, PK_GRAD_DTYPE)                                  \
  X(PLAN_ZERO, "inputs.plan.zero", SETTING, NULL, COL, true, PK_ZERO)         \
  X(PLAN_FSDP, "inputs.plan.fsdp", SETTING, NULL, COL, true, PK_FSDP)         \
  X(PLAN_HSDP, "inputs.plan.hsdp", SETTING, NULL, COL, true, PK_HSDP)         \
  X(PLAN_MOE_IMBALANCE, "inputs.plan.moe_imbalance",                          \
    SETTING, NULL, COL, true, PK_MOE_IMBALANCE)                               \
  X(PLAN_FIRST_LAYERS, "inputs.plan.first_stage_layers",                      \
    SETTING, NULL, COL, true, PK_FIRST_LAYERS)                                \
  X(PLAN_LAST_LAYERS, "inputs.plan.last_stage_layers",                        \
    SETTING, NULL, COL, true, PK_LAST_LAYERS)                                 \
  X(PLAN_SPLIT_UNITS, "inputs.plan.account_embedding_loss",                   \
    SETTING, NULL, COL, true, PK_SPLIT_UNITS)                                 \
  X(PLAN_SHARD_IMPL, "inputs.plan.shard_impl",                                \
    SETTING, NULL, COL, true, PK_SHARD_IMPL)                                  \
  X(PLAN_CROSS_ENTROPY, "inputs.plan.cross_entropy",                          \
    SETTING, NULL, COL, true, PK_CROSS_ENTROPY)                               \
  X(PLAN_FP8_RECIPE, "inputs.plan.fp8_recipe",                                \
    SETTING, NULL, COL, true, PK_FP8_RECIPE)                                  \
  X(PLAN_TENSOR3D, "inputs.plan.tensor3d",                                    \
    SETTING, NULL, COL, true, PK_TENSOR3D)                                    \
  X(PLAN_PIECES, "inputs.plan.overdecompose",                                 \
    SETTING, NULL, COL, true, PK_PIECES)                                      \
  X(PLAN_COMPRESS, "inputs.plan.compress",                                    \
    SETTING, NULL, COL, true, PK_COMPRESS)                                    \
  X(PLAN_OVERLAP_PARAM_GATHER, "inputs.plan.overlap_param_gather",            \
    SETTING, NULL, COL, true, PK_OVERLAP_PARAM_GATHER)                        \
  X(PLAN_GRAD_ACCUM, "inputs.plan.grad_accum",                                \
    SETTING, NULL, COL, true, PK_GRAD_ACCUM)                                  \
  X(PLAN_STACK, "inputs.plan.stack", SETTING, NULL, COL, true, PK_STACK)      \
  X(PLAN_FUSION, "inputs.plan.fusion", SETTING, NULL, COL, true, PK_FUSION)   \
  X(PLAN_SELECTIVE, "inputs.plan.selective",                                  \
    SETTING, NULL, COL, true, PK_SELECTIVE)                                   \
  X(PLAN_MEM_FRAMEWORK, "inputs.plan.mem_framework",                          \
    SETTING, NULL, NOCOL, p->mem_framework != MF_ZERO, PK_MEM_FRAMEWORK)      \
  X(PLAN_COMM_CONTENTION, "inputs.plan.comm_contention",                      \
    SETTING, NULL, COL, true, PK_COMM_CONTENTION)                             \
  X(PLAN_HOST_OP, "inputs.plan.host_op",                                      \
    SETTING, NULL, COL, true, PK_HOST_OP)                                     \
  X(PLAN_FP8_PARAMS, "inputs.plan.fp8_params",                                \
    SETTING, NULL, COL, true, PK_FP8_PARAMS)                                  \
  X(PLAN_TP_COMM_OVERLAP, "inputs.plan.tp_comm_overlap",                      \
    SETTING, NULL, NOCOL, p->tp_overlap != TPO_NONE, PK_TP_COMM_OVERLAP)      \
  X(PLAN_MOE_DISPATCHER, "inputs.plan.moe_dispatcher",                      \
    SETTING, NULL, NOCOL, p->moe_dispatcher != MD_BASIC, PK_MOE_DISPATCHER)   \
  X(PLAN_MOE_CAPACITY, "inputs.plan.moe_capacity",                          \
    SETTING, NULL, NOCOL, p->moe_capacity > 0, PK_MOE_CAPACITY)               \
  X(PLAN_MOE_PAD, "inputs.plan.moe_pad",                                      \
    SETTING, NULL, NOCOL, p->moe_pad, PK_MOE_PAD)                             \
  X(PLAN_MOE_NODE_GPUS, "inputs.plan.moe_node_gpus",                          \
    SETTING, NULL, NOCOL, p->moe_dispatcher == MD_DEEPEP, PK_MOE_NODE_GPUS)   \
  X(PLAN_MOE_MAX_NODES, "inputs.plan.moe_max_nodes",                          \
    SETTING, NULL, NOCOL, p->moe_max_nodes > 0, PK_MOE_MAX_NODES)             \
  X(PLAN_ETP, "inputs.plan.etp",                                              \
    SETTING, NULL, NOCOL, p->etp > 0, PK_ETP)                                 \
  X(PLAN_OVERLAP_MOE_A2A, "inputs.plan.overlap_moe_expert_parallel_comm",     \
    SETTING, NULL, NOCOL, p->a2a_overlap, PK_OVERLAP_MOE_A2A)                 \
  X(PLAN_DELAY_WGRAD, "inputs.plan.delay_wgrad_compute",                     \
    SETTING, NULL, NOCOL, p->delay_wgrad, PK_DELAY_WGRAD)                     \
  X(PLAN_ASYNC_TP_GRAD, "inputs.plan.async_tp_grad",                        \
    SETTING, NULL, NOCOL, p->async_tp_grad, PK_ASYNC_TP_GRAD)                 \
  X(PLAN_MOE_SHARED_OVERLAP, "inputs.plan.moe_shared_expert_overlap",         \
    SETTING, NULL, NOCOL, p->moe_shared_overlap, PK_MOE_SHARED_OVERLAP)       \
  X(CLUSTER_NAME, "inputs.cluster.name", STR, NULL, COL, true, c->name)       \
  X(CLUSTER_NODE, "inputs.cluster.node", STR, NULL, COL, true, c->node_type)  \
  X(CLUSTER_GPU, "inputs.cluster.gpu", STR, NULL, COL, true, c->gpu.name)     \
  X(CLUSTER_NIC, "inputs.cluster.nic", STR, NULL, COL, true, c->nic.name)     \
  X(CLUSTER_GPUS, "inputs.cluster.gpus", LONG, NULL, COL, true, c->gpus)      \
  X(CLUSTER_NODES, "inputs.cluster.nodes", LONG, NULL, COL, true, c->nodes)   \
  X(CLUSTER_GPUS_PER_NODE, "inputs.cluster.gpus_per_node",                    \
    LONG, NULL, COL, true, c->gpus_per_node)                                  \
  X(CLUSTER_NICS_PER_NODE, "inputs.cluster.nics_per_node",                    \
    LONG, NULL, COL, true, c->nics_per_node)                                  \
  X(CLUSTER_NODES_PER_LEAF, "inputs.cluster.nodes_per_leaf",                  \
    LONG, NULL, COL, true, c->nodes_per_leaf)                                 \
  X(CLUSTER_LEAVES_PER_POD, "inputs.cluster.leaves_per_pod",                  \
    LONG, NULL, COL, true, c->leaves_per_pod)                                 \
  X(CLUSTER_OVERSUBSCRIPTION, "inputs.cluster.oversubscription",              \
    NUM, "%.6g", COL, true, c->oversub)                                       \
  X(CLUSTER_POD_OVERSUBSCRIPTION, "inputs.cluster.pod_oversubscription",      \
    NUM, "%.6g", COL, true, c->pod_oversub)                                   \
  X(CLUSTER_PLACEMENT, "inputs.cluster.placement",                            \
    STR, NULL, COL, true, placement)                                          \
  X(CLUSTER_GPU_PEAK_TFLOPS, "inputs.cluster.gpu_peak_tflops",                \
    NUM, "%.6g", COL, true, r->peak_flops / 1e12)                             \
  X(CLUSTER_HBM_BYTES, "inputs.cluster.hbm_bytes",                            \
    NUM, "%.0f", COL, true, c->gpu.hbm_bytes)                                 \
  X(CLUSTER_HBM_BW_GBPS, "inputs.cluster.hbm_bw_GBps",                        \
    NUM, "%.6g", COL, true, c->gpu.hbm_bw_Bps / 1e9)                          \
  X(CLUSTER_NIC_GBPS, "inputs.cluster.nic_GBps",                              \
    NUM, "%.6g", COL, true, c->nic.bw_Bps / 1e9)                              \
  X(CLUSTER_TREND, "inputs.cluster.trend", STR, NULL, COL, true, c->trend)    \
  X(CLUSTER_GPU_YEARS_AHEAD, "inputs.cluster.gpu_years_ahead",                \
    NUM, "%.6g", COL, true, c->proj_gpu_years)                                \
  X(CLUSTER_NIC_YEARS_AHEAD, "inputs.cluster.nic_years_ahead",                \
    NUM, "%.6g", COL, true, c->proj_nic_years)                                \
  X(CLUSTER_CLOCK, "inputs.cluster.clock", NUM, "%.6g", COL, true, c->clock)  \
  X(CLUSTER_GPU_ACTIVE_W, "inputs.cluster.gpu_active_w",                      \
    NUM, "%.6g", COL, true, c->active_w)                                      \
  X(CLUSTER_GPU_HOUR_PRICE, "inputs.cluster.gpu_hour_price",                  \
    NUM, "%.6g", COL, true, c->gpu_hour_price)                                \
  X(ENGINE_COLLECTIVE, "inputs.engine.collective",                            \
    STR, NULL, COL, true, r->collective ? r->collective : "auto")             \
  X(ENGINE_FIDELITY, "inputs.engine.fidelity",                                \
    STR, NULL, COL, true, r->fidelity ? r->fidelity : "auto")                 \
  X(ENGINE_EVERY_RANK, "inputs.engine.every_rank",                            \
    BOOL, NULL, COL, true, r->every_rank)                                     \
  X(ENGINE_KERNEL_TABLE, "inputs.engine.kernel_table",                        \
    BOOL, NULL, COL, true, r->kernel_table)
/* clang-format on */

#endif
