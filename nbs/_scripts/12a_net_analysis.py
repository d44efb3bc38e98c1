# %% [markdown]
# # One net's numbers
#
# > What a trajectory table says about each net: the eq.-17 slope and its d_s, the crossover and late slope, the LLC over the run, and the explored volume's d_s; and the compact table the ledger keeps.

# %%
#| default_exp diffusion.net_analysis

# %%
#| hide
from nbdev.showdoc import *

# %%
#| export
from __future__ import annotations
import warnings

import numpy as np
import pandas as pd

from fracsgd.llc.estimate import final_llc
from fracsgd.diffusion.spectral import fit_power_law, spectral_dimension_from_volume
from fracsgd.diffusion.crossover import detect_crossover, fit_late_exponent


# %% [markdown]
# Training produces trajectory tables (the [ensemble chapter](ensemble.html): one row per net and recorded step);
# analysis reads them and never the training loop. The MNIST studies and the CIFAR-10 study take their per-net
# numbers from this chapter, so each of them reads eq. 17 the same way.

# %% [markdown]
# ## One net's numbers
#
# `analyse_net` reads one net's rows of a trajectory table (columns `step`, `R`, `llc` where it was estimated, and
# optionally `volume/<ε>`, `llc_near_minimum` and `llc_flagged`) and nothing else:
#
# * **the paper's slope**: eq. 17 fitted to the whole run at the LLC checkpoints (every 100 steps), with its r²
#   (fig. 18) and a block-bootstrap interval;
# * **crossover and late slope**: the crossover model of the crossover chapter on all recorded steps
#   (`detect_crossover`, $t_c$ where the local slope falls below ½), and the log–log slope after it
#   (`fit_late_exponent`) with its interval; NaN, with a note, when the net's curve has no crossover;
# * **λ̄ and the final LLC** (`final_llc`, the mean of the last 10); in runs that record them, the share of the
#   LLC steps whose point is near a minimum by the [criticality chapter](criticality.html)'s test, over the run
#   and over the last 10 (`llc_near_minimum_share`, `llc_final_near_minimum_share`): elsewhere an LLC describes
#   the path, not a minimum; and the share the estimator's own diagnostics flag (`llc_flagged_share`,
#   `llc_final_flagged_share`);
# * **$d_s$** by the chosen reading of eq. 17 (`ds_llc`), with the interval the slope's interval gives, and the
#   check $d_s \le \bar\lambda$ (and $d_s \le \lambda_{final}$);
# * **$d_s$ from the explored volume** for each recorded ε, `spectral_dimension_from_volume`; marked saturated
#   when its interval reaches slope 1 or when nearly every step entered a new cell, and then it says only
#   $d_s \ge 2$.

# %%
#| export
def _ds_pointwise(t, R, lam) -> float:
    "Least-squares coefficient of log R on log t / (2 lambda(t)), with an intercept (eq. 17 read pointwise)."
    x = np.log(t) / (2 * lam)
    A = np.vstack([x, np.ones_like(x)]).T
    return float(np.linalg.lstsq(A, np.log(R), rcond=None)[0][0])

def _late(t, R, n_boot, seed) -> dict:
    "Crossover and late log-log slope of one curve, or NaN with the reason."
    try:
        c = detect_crossover(t, R, method='slope')
        if not c.found:
            return dict(t_c=np.nan, late_slope=np.nan, late_ci_low=np.nan, late_ci_high=np.nan,
                        crossover_note=f'one power law (ΔBIC {c.delta_bic:.0f})')
        with warnings.catch_warnings():
            warnings.simplefilter('ignore')
            late = fit_late_exponent(t, R, c, estimator='loglog', n_boot=n_boot, seed=seed)
        return dict(t_c=c.t_c, late_slope=late.slope, late_ci_low=late.ci_low, late_ci_high=late.ci_high,
                    crossover_note=f'{c.model}; {late.late_decades:.2f} decades after t_c')
    except ValueError as e:
        return dict(t_c=np.nan, late_slope=np.nan, late_ci_low=np.nan, late_ci_high=np.nan,
                    crossover_note=str(e)[:120])


# %%
#| export
DS_READINGS = ('mean', 'final', 'pointwise')

def analyse_net(net: pd.DataFrame, ds_llc: str = 'mean', n_boot: int = 100, seed: int = 0) -> dict:
    "One net's exponents, LLCs, d_s (eq. 17 read as `ds_llc`) and checks, from its rows of a trajectory table."
    if ds_llc not in DS_READINGS:
        raise ValueError(f"ds_llc must be one of {DS_READINGS}, got {ds_llc!r}")
    net = net.sort_values('step')
    pos = net[(net.step > 0) & (net.R > 0)]
    t, R = pos.step.to_numpy(float), pos.R.to_numpy()
    at = pos.dropna(subset=['llc']) if 'llc' in pos else pos.iloc[:0]
    if len(at) < 3:
        raise ValueError(f"analyse_net needs at least 3 LLC estimates after step 0, got {len(at)}")
    tl, Rl, lam = at.step.to_numpy(float), at.R.to_numpy(), at.llc.to_numpy()
    paper = fit_power_law(tl, Rl, n_boot=n_boot, seed=seed)              # eq. 17, whole run, LLC checkpoints
    lam_mean, lam_final = float(lam.mean()), final_llc(at)
    scale = 2 * (lam_final if ds_llc == 'final' else lam_mean)
    d_s = _ds_pointwise(tl, Rl, lam) if ds_llc == 'pointwise' else scale * paper.slope
    ci = sorted(scale * np.array([paper.ci_low, paper.ci_high])) if ds_llc != 'pointwise' else [np.nan] * 2
    late = _late(t, R, n_boot, seed)
    row = dict(slope=paper.slope, slope_ci_low=paper.ci_low, slope_ci_high=paper.ci_high, r2=paper.r2,
               **late, llc_mean=lam_mean, llc_final=lam_final, llc_last=float(lam[-1]), llc_min=float(lam.min()),
               ds_reading=ds_llc,
               d_s=d_s, d_s_ci_low=ci[0], d_s_ci_high=ci[1], d_s_late=2 * lam_mean * late['late_slope'],
               ds_le_llc_mean=bool(d_s <= lam_mean), ds_le_llc_final=bool(d_s <= lam_final),
               R_final=float(net.R.iloc[-1]))
    row['llc_estimates'] = len(at)
    for flag in [c[4:] for c in ('llc_near_minimum', 'llc_flagged') if c in at]:   # in runs made since it was recorded
        v = at[f'llc_{flag}'].to_numpy(float)
        row.update({f'llc_{flag}_share': float(np.mean(v)), f'llc_final_{flag}_share': float(np.mean(v[-10:]))})
    for col in [c for c in net.columns if c.startswith('volume/') and net[c].notna().any()]:
        v = pos[col].to_numpy()
        vol = spectral_dimension_from_volume(t[v > 0], v[v > 0], n_boot=n_boot, seed=seed)
        every_step_new = v[-1] >= 0.9 * (t[-1] + 1)                     # V ~ t: a new cell at (almost) every step
        row[f'd_s_{col}'], row[f'saturated_{col}'] = vol['d_s'], bool(vol['saturated'] or every_step_new)
    return row

def analyse_nets(table: pd.DataFrame, **kw) -> pd.DataFrame:
    "`analyse_net` for every net (`run`) of a trajectory table: one row per net."
    return pd.DataFrame([dict(run=r, **analyse_net(g, **kw)) for r, g in table.groupby('run')])


# %% [markdown]
# Checks with numbers nobody chose: a curve $R = 3t^{0.3}$ with a constant LLC of 12 has slope 0.3 exactly, so
# every reading gives $d_s = 2\cdot12\cdot0.3 = 7.2$ and $d_s \le λ$; an LLC that starts at $-4$ and rises to
# 12 leaves the mean and final readings positive but can turn the pointwise one negative, which is the effect
# appendix J describes.

# %%
steps = np.arange(0, 2001, 10)
synthetic = pd.DataFrame(dict(run=0, step=steps, R=3 * np.maximum(steps, 1) ** 0.3,
                              llc=np.where(steps % 100 == 0, 12.0, np.nan)))
for reading in DS_READINGS:
    a = analyse_net(synthetic, ds_llc=reading, n_boot=20)
    assert abs(a['slope'] - 0.3) < 1e-9 and abs(a['d_s'] - 7.2) < 1e-6 and a['ds_le_llc_mean'], (reading, a)
assert abs(a['r2'] - 1) < 1e-12 and a['llc_final'] == 12.0 and 'llc_flagged_share' not in a
flags = synthetic.assign(llc_flagged=np.where(steps % 100 == 0, (steps >= 1000).astype(float), np.nan))
f = analyse_net(flags, n_boot=0)                  # 11 of the 20 estimates (steps 1000-2000) flagged, the last 10 all
assert abs(f['llc_flagged_share'] - 11 / 20) < 1e-12 and f['llc_final_flagged_share'] == 1.0, f
rising = synthetic.assign(llc=np.where(steps % 100 == 0, np.interp(steps, [0, 300, 2000], [-4, 12, 12]), np.nan))
mean_ds, point_ds = (analyse_net(rising, ds_llc=r, n_boot=0)['d_s'] for r in ('mean', 'pointwise'))
assert mean_ds > 0 > point_ds, (mean_ds, point_ds)
mean_ds, point_ds

# %% [markdown]
# A broken power law, $R = t^{0.9}$ up to $t_c = 300$ and $300^{0.9}(t/300)^{0.3}$ after it, recorded every 10
# steps to step 20,000: the crossover is found near 300, the late slope comes out at 0.3 (exactly the curve's),
# and the whole-run slope of eq. 17 lies between the two.

# %%
t_rec = np.arange(0, 20001, 10)
broken = np.where(t_rec < 300, np.maximum(t_rec, 1) ** 0.9, 300 ** 0.9 * (t_rec / 300) ** 0.3)
bent = pd.DataFrame(dict(run=0, step=t_rec, R=broken,
                         llc=np.where(t_rec % 100 == 0, 10.0, np.nan)))
b = analyse_net(bent, n_boot=0)
assert 200 < b['t_c'] < 450 and abs(b['late_slope'] - 0.3) < 0.02 and 0.3 < b['slope'] < 0.9, b
{k: b[k] for k in ('t_c', 'late_slope', 'slope', 'd_s', 'd_s_late', 'crossover_note')}


# %% [markdown]
# ## What the ledger keeps of a trajectory
#
# A full run records R(t) every 10 steps of every net (the 81 nets of the ablations: about 6 MB of parquet; their
# compact table: 0.7 MB). `compact_trajectories` keeps
# the LLC checkpoints and about `n_log` log-spaced steps of each net, which is what a log–log figure of R(t) and the
# eq.-17 fit at the checkpoints need. It keeps a log-spaced step only where the table has it (the MNIST runs record
# log-spaced early steps for this). Checked on a curve recorded at every step: every checkpoint stays, the first
# and last steps stay, every decade keeps its share of the picks, and the eq.-17 fit at the checkpoints is unchanged.

# %%
#| export
def compact_trajectories(traj: pd.DataFrame, n_log: int = 60) -> pd.DataFrame:
    "The LLC checkpoints plus about `n_log` log-spaced steps of every net: a few hundred kB for 50 nets."
    steps = np.sort(traj.step.unique())
    picks = set(np.unique(np.geomspace(1, steps.max(), n_log).round())) | {0}
    keep = traj.step.isin([s for s in steps if s in picks]) | traj.llc.notna()
    return traj[keep].reset_index(drop=True)


# %%
t_all = np.arange(0, 2001)
dense = pd.DataFrame(dict(run=0, step=t_all, R=3 * np.maximum(t_all, 1) ** 0.3,
                          llc=np.where(t_all % 100 == 0, 12.0, np.nan)))
small = compact_trajectories(dense, n_log=30)
kept = small[small.llc.isna()].step
assert set(dense.dropna(subset=['llc']).step) <= set(small.step) and {0, 2000} <= set(small.step)
assert len(small) < 60 and all(kept.between(lo, 10 * lo).sum() >= 5 for lo in (1, 10, 100)), kept.tolist()
assert analyse_net(small, n_boot=0)['slope'] == analyse_net(dense, n_boot=0)['slope']
len(dense), len(small)

# %%
#| hide
import nbdev
nbdev.nbdev_export()
