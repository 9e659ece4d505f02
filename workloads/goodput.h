/*
 * goodput.h - failures, checkpoints and the effective training time of a
 * long run: from the failure rates of a cluster's parts
 * (platforms/failrates.h) the job's mean time between interruptions
 * (MTBF); from the model's checkpoint and the storage tier's bandwidth the
 * time a checkpoint costs (synchronous: training waits for the write;
 * asynchronous: for a copy to host memory, the write going on behind);
 * with the restart time, Daly's model of the expected wall-clock time of
 * a run under exponentially distributed failures, and the checkpoint
 * interval that maximizes the useful fraction of it, beside Young's and
 * Daly's closed forms.  Plain arithmetic: no simulation.
 *
 * The model (J. T. Daly, "A higher order estimate of the optimum
 * checkpoint interval for restart dumps", Future Generation Computer
 * Systems 22(3), 2006, its complete model and its higher-order optimum):
 * work is done in segments of tau seconds of computation followed by a
 * checkpoint of delta seconds; failures arrive as a Poisson process of
 * mean M; a failure loses the segment in progress and costs a restart of
 * R seconds (which may itself fail) before the segment starts over.  The
 * expected wall-clock time of a segment is
 *     E(tau) = M e^(R/M) (e^((tau + delta)/M) - 1),
 * exact under these assumptions, so the useful fraction is tau / E(tau).
 * Young's optimum sqrt(2 delta M) (CACM 17(9), 1974) and Daly's
 * higher-order one sqrt(2 delta M) (1 + sqrt(delta/2M)/3 + delta/18M) -
 * delta are its first- and higher-order approximations; goodput_eval
 * finds the exact optimum.
 */
#ifndef WEFT_GOODPUT_H
#define WEFT_GOODPUT_H

#include <stdbool.h>

#include "platforms/cluster.h"
#include "platforms/failrates.h"
#include "sim/base/err.h"

/* The parts of a job's cluster that fail, by enum fail_part: its GPUs,
 * NICs (nics_per_node x nodes), switches plus cables of its scale-out
 * fabric (platforms/topo.h, topo_parts; none on one node), hosts (nodes),
 * and its GPUs again for software. */
void goodput_units(const struct cluster *c, double out_units[FP_COUNT]);

/* The job's mean time between interruptions, seconds: 1 / sum over parts
 * of rate x units.  Infinite when no part can fail. */
double goodput_mtbf_s(const double rates_per_h[FP_COUNT],
                      const double units[FP_COUNT]);

/* Daly's expected wall-clock time per second of useful work, E(tau)/tau
 * (above), for a checkpoint every tau seconds of work costing delta
 * seconds, restarts of r seconds and an MTBF of m seconds. */
double goodput_wall_per_work(double tau_s, double delta_s, double r_s,
                             double m_s);

/* The tau that minimizes goodput_wall_per_work for delta > 0: the root of
 * e^((tau + delta)/M) (tau/M - 1) + 1 = 0 in (0, M), which does not depend
 * on R. */
double goodput_optimal_interval_s(double delta_s, double m_s);

/* Young's sqrt(2 delta M) and Daly's higher-order estimate (M itself for
 * delta >= 2M, as Daly gives it). */
double goodput_young_s(double delta_s, double m_s);
double goodput_daly_s(double delta_s, double m_s);

/* The bytes a checkpoint of a model of `params` parameters writes, once
 * over all ranks: what Megatron-LM's distributed checkpoint holds for
 * mixed-precision Adam, the 16-bit weights (2 bytes) and the optimizer's
 * FP32 master weights, momentum and variance (12 bytes; the ZeRO paper's
 * K = 12), 14 bytes per parameter. */
double goodput_checkpoint_bytes(double params);

enum ckpt_mode { CKPT_SYNC, CKPT_ASYNC };

struct goodput_in {
  double mtbf_s;          /* of the job (goodput_mtbf_s) */
  double ckpt_bytes;      /* the whole checkpoint */
  long ranks;             /* each writes its 1/ranks share */
  double storage_bw_Bps;  /* the storage tier's aggregate write bandwidth */
  enum ckpt_mode mode;
  double copy_bw_Bps;     /* async: each rank's device-to-host copy */
  double restart_s;
  double interval_s;      /* of work between checkpoints; 0: the optimum */
  /* The run: its wall-clock length, or (wall_s 0) the useful time it
   * must deliver (tokens over the job's rate). */
  double wall_s, work_s;
};

struct goodput {
  double mtbf_s;
  double ckpt_bytes;     /* the inputs' */
  enum ckpt_mode mode;
  double restart_in_s;   /* one restart, the inputs' */
  double write_s;        /* the whole checkpoint at the storage bandwidth */
  double block_s;        /* what training waits per checkpoint (delta) */
  double lag_s;          /* async: the write behind training; 0 sync */
  double interval_s;     /* used */
  double optimal_s, young_s, daly_s;
  double wall_s, work_s; /* the run's wall-clock and useful time */
  double interruptions;  /* expected: wall / MTBF */
  double rework_s;       /* work lost and redone (and failed checkpoints) */
  double checkpoint_s;   /* blocking time of the checkpoints that finished */
  double restart_s;      /* time in restarts (some cut short by failures) */
  double efficiency;     /* work / wall */
};

/* Evaluate the run of `in` into *out.  Asynchronous checkpoints block for
 * the copy of a rank's share (bytes / ranks / copy_bw) and, if the next
 * checkpoint comes before the previous write ends, for the rest of that
 * write (Megatron-LM's async save finalizes the previous save first); a
 * failure then also loses the work done while the last write was still
 * going, charged as lag_s more of restart in Daly's formula (to first
 * order, a failure in the first lag_s of a segment loses the previous
 * segment too).  Returns 0, or WEFT_EINVAL with a message when the inputs
 * are not positive and finite where they must be. */
int goodput_eval(const struct goodput_in *in, struct goodput *out,
                 struct weft_err *err) WEFT_WUR;

#endif
