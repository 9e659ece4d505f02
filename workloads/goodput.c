/*
 * goodput.c - Daly's model of a checkpointed run under failures
 * (goodput.h).  Everything is in seconds of wall-clock time.
 *
 * The split of the wall-clock time: by Wald's identity the expected
 * number of failures in a run of wall-clock length W is W / M (failures
 * arrive at rate 1/M all along, in work, checkpoints and restarts alike).
 * Each failure starts one restart attempt, which lasts min(R, X) for an
 * exponential X of mean M, M (1 - e^(-R/M)) on average; the finished
 * segments' work and checkpoints are tau and delta each; what is left is
 * rework: work (and checkpoints) cut short by a failure.
 */
#include "workloads/goodput.h"

#include <math.h>

#include "platforms/topo.h"

void goodput_units(const struct cluster *c, double out_units[FP_COUNT])
{
  struct topo_parts tp;
  topo_parts(c, &tp);
  /* A rack of trays (NVL72) is one node of weft's but a host per tray. */
  long per_host = c->tray > 0 ? c->tray : c->gpus_per_node;
  out_units[FP_GPU] = c->gpus;
  out_units[FP_NIC] = (double)c->nics_per_node * c->nodes;
  out_units[FP_NET] = (double)tp.switches_all + (double)tp.cables;
  out_units[FP_HOST] = per_host > 0 ? (double)c->gpus / (double)per_host : 0;
  out_units[FP_SOFTWARE] = c->gpus;
}

double goodput_mtbf_s(const double rates_per_h[FP_COUNT],
                      const double units[FP_COUNT])
{
  double per_h = 0;
  for (int p = 0; p < FP_COUNT; p++)
    per_h += rates_per_h[p] * units[p];
  return per_h > 0 ? 3600.0 / per_h : INFINITY;
}

double goodput_wall_per_work(double tau_s, double delta_s, double r_s,
                             double m_s)
{
  if (!isfinite(m_s))
    return (tau_s + delta_s) / tau_s;
  /* expm1 keeps the digits when (tau + delta) << M */
  return m_s * exp(r_s / m_s) * expm1((tau_s + delta_s) / m_s) / tau_s;
}

double goodput_optimal_interval_s(double delta_s, double m_s)
{
  if (!isfinite(m_s))
    return INFINITY;
  /* d/dtau of E(tau)/tau is zero where g(x) = e^(x + d) (x - 1) + 1 = 0,
   * x = tau/M, d = delta/M: g(0) = 1 - e^d < 0, g(1) = 1 > 0, and g
   * rises on (0, 1) (g' = x e^(x + d)), so bisection finds the one root. */
  double d = delta_s / m_s, lo = 0, hi = 1;
  for (int i = 0; i < 200 && hi - lo > 1e-15 * hi; i++) {
    double x = 0.5 * (lo + hi);
    double g = exp(x + d) * (x - 1) + 1;
    if (g < 0)
      lo = x;
    else
      hi = x;
  }
  return 0.5 * (lo + hi) * m_s;
}

double goodput_young_s(double delta_s, double m_s)
{
  return sqrt(2 * delta_s * m_s);
}

double goodput_daly_s(double delta_s, double m_s)
{
  if (delta_s >= 2 * m_s)
    return m_s;
  double q = delta_s / (2 * m_s);
  return sqrt(2 * delta_s * m_s) * (1 + sqrt(q) / 3 + q / 9) - delta_s;
}

double goodput_checkpoint_bytes(double params)
{
  return params * (2.0 + 12.0);
}

static bool pos(double v)
{
  return isfinite(v) && v > 0;
}

int goodput_eval(const struct goodput_in *in, struct goodput *out,
                 struct weft_err *err)
{
  if (!(in->mtbf_s > 0) || isnan(in->mtbf_s))
    return weft_errf(err, WEFT_EINVAL, "the MTBF must be positive");
  if (!pos(in->ckpt_bytes) || in->ranks < 1)
    return weft_errf(err, WEFT_EINVAL, "the checkpoint must have bytes "
                     "and ranks");
  if (!pos(in->storage_bw_Bps))
    return weft_errf(err, WEFT_EINVAL, "the storage bandwidth must be "
                     "positive");
  if (in->mode == CKPT_ASYNC && !pos(in->copy_bw_Bps))
    return weft_errf(err, WEFT_EINVAL, "the host copy bandwidth must be "
                     "positive");
  if (!(in->restart_s >= 0) || !isfinite(in->restart_s))
    return weft_errf(err, WEFT_EINVAL, "the restart time must be zero or "
                     "positive");
  if (!(in->interval_s >= 0) || !isfinite(in->interval_s))
    return weft_errf(err, WEFT_EINVAL, "the checkpoint interval must be "
                     "positive");
  if ((in->wall_s > 0) == (in->work_s > 0) || !isfinite(in->wall_s) ||
      !isfinite(in->work_s))
    return weft_errf(err, WEFT_EINVAL, "give the run's wall-clock length "
                     "or its useful time, one of them");
  struct goodput g = {.mtbf_s = in->mtbf_s, .ckpt_bytes = in->ckpt_bytes,
                      .mode = in->mode, .restart_in_s = in->restart_s};
  double M = in->mtbf_s;
  g.write_s = in->ckpt_bytes / in->storage_bw_Bps;
  double copy_s = 0, R = in->restart_s;
  if (in->mode == CKPT_ASYNC) {
    /* Megatron-LM's async save (megatron/training/checkpointing.py,
     * save_checkpoint with async_save; core/dist_checkpointing/strategies/
     * async_utils.py): the rank's tensors are staged to host memory, then
     * written by a background process; the next save finalizes the
     * previous one first. */
    copy_s = in->ckpt_bytes / (double)in->ranks / in->copy_bw_Bps;
    g.lag_s = g.write_s;
    R += g.lag_s;
  }
  /* The blocking time, as a function of the interval (async: the part of
   * the previous write the interval did not cover). */
  double delta0 = in->mode == CKPT_ASYNC ? copy_s : g.write_s;
  g.optimal_s = goodput_optimal_interval_s(delta0, M);
  if (in->mode == CKPT_ASYNC && g.optimal_s < g.lag_s)
    g.optimal_s = g.lag_s; /* shorter ones only wait for the write */
  g.young_s = goodput_young_s(delta0, M);
  g.daly_s = goodput_daly_s(delta0, M);
  g.interval_s = in->interval_s > 0 ? in->interval_s : g.optimal_s;
  double tau = g.interval_s;
  if (!isfinite(tau))
    tau = g.interval_s = in->work_s > 0 ? in->work_s : in->wall_s;
  g.block_s = delta0;
  if (in->mode == CKPT_ASYNC && tau < g.lag_s)
    g.block_s += g.lag_s - tau;
  double per_work = goodput_wall_per_work(tau, g.block_s, R, M);
  if (in->wall_s > 0) {
    g.wall_s = in->wall_s;
    g.work_s = in->wall_s / per_work;
  } else {
    g.work_s = in->work_s;
    g.wall_s = in->work_s * per_work;
  }
  g.efficiency = g.work_s / g.wall_s;
  g.interruptions = isfinite(M) ? g.wall_s / M : 0;
  g.checkpoint_s = g.work_s / tau * g.block_s;
  g.restart_s = isfinite(M) ? g.interruptions * M * -expm1(-in->restart_s / M)
                            : 0;
  g.rework_s = g.wall_s - g.work_s - g.checkpoint_s - g.restart_s;
  if (g.rework_s < 0) /* rounding when nothing fails */
    g.rework_s = 0;
  *out = g;
  return 0;
}
