# %% [markdown]
# # Figures of the posterior comparison
#
# > Fig. 3, fig. 4 and the clusters drawn from the tables a report writes, so a page draws them again from committed results.

# %%
#| default_exp studies.posterior_figures

# %%
#| hide
from nbdev.showdoc import *

# %%
#| export
from __future__ import annotations
from pathlib import Path

import numpy as np
import pandas as pd
import matplotlib.pyplot as plt

from fracsgd.core import read_table
from fracsgd.studies.posterior_comparison import FIG3_KL, TAB2_KL


# %% [markdown]
# The [posterior comparison](posterior_comparison.html) writes its analysis as small csv files; everything
# drawn here reads those tables and nothing else. That page draws the four figures of a synthetic study whose
# answers are known; below, the two tables this chapter makes are checked on numbers whose answer is known.

# %%
#| export
def centroid_table(centroids, probe) -> pd.DataFrame:
    "Cluster centres [k, probe points × 2] as a long table: cluster, probe, x, y and the centre's P(class 1)."
    probe = np.asarray(probe)
    k, n = len(centroids), len(probe)
    p1 = np.asarray(centroids).reshape(k, n, 2)[..., 1]                          # [clusters, probe points]
    return pd.DataFrame({'cluster': np.repeat(np.arange(k), n), 'probe': np.tile(np.arange(n), k),
                         'x': np.tile(probe[:, 0], k), 'y': np.tile(probe[:, 1], k), 'p1': p1.ravel()})

def loss_curves(epochs: pd.DataFrame) -> pd.DataFrame:
    "Per epoch, the median and the 10% and 90% quantiles over nets of the epoch-mean training loss."
    q = epochs.groupby('epoch').loss
    return pd.DataFrame({'median': q.median(), 'q10': q.quantile(0.1), 'q90': q.quantile(0.9)}).reset_index()

def plot_fig3(scan: pd.DataFrame, summary: pd.DataFrame, xi_paper: float = 0.5):
    "KL against ξ (paper fig. 3), m = 1: the text's comparison (left) and table 2's (right), one line per D_ξ choice."
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.6))
    one = scan[scan.m == 1]
    for ax, (how, col) in zip(axes, [('untempered', FIG3_KL), ('tempered', TAB2_KL)]):
        for name, part in one[one.comparison == how].groupby('choice', sort=False):
            ax.plot(part.xi, part[col], marker='.', ms=3, label=name)
        ax.axvline(xi_paper, color='gray', ls=':', label=f'paper: ξ = {xi_paper}')
        ax.set(xlabel='length scale ξ', ylabel=col, yscale='log')
    best = summary.set_index('quantity').loc['ξ minimising KL(SGD‖theoretical SGD)']
    axes[0].axvspan(best.ci_low, best.ci_high, color='C2', alpha=.15, label=f'ξ* = {best.value:g} (95% interval)')
    axes[0].set_title('fig. 3: empirical vs theoretical SGD (m = 1)', fontsize=10)
    axes[1].set_title('table 2\'s comparison: posterior vs tempered SGD (m = 1)', fontsize=10)
    for ax in axes:
        ax.legend(fontsize=7)
    fig.tight_layout()
    return fig

def plot_fig4(solutions: pd.DataFrame, masses: pd.DataFrame):
    "(a) LLC histogram of the analysed SGD solutions by cluster (fig. 4a); (b) cluster masses (fig. 4b)."
    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 3.6))
    s = solutions[solutions.analysed]
    k = len(masses)
    a.hist([s.llc[s.cluster == c] for c in range(k)], bins=25, stacked=True, label=[f'C{c + 1}' for c in range(k)])
    a.set(xlabel='LLC of the SGD solution (paper preset)', ylabel='nets', title=f'fig. 4a: {len(s)} solutions')
    a.legend(fontsize=8)
    cols = [c for c in masses.columns if c != 'cluster']
    width = 0.8 / len(cols)
    for i, c in enumerate(cols):
        b.bar(np.arange(k) + (i - (len(cols) - 1) / 2) * width, masses[c], width, label=c.replace(', m = 1', ''))
    b.set(xticks=np.arange(k), xticklabels=masses.cluster, ylabel='mass', title='fig. 4b: cluster masses')
    b.legend(fontsize=6)
    fig.tight_layout()
    return fig

def plot_clusters(centroids: pd.DataFrame, masses: pd.DataFrame):
    "The mean predicted P(class 1) of each cluster on the probe grid, with its SGD and posterior mass."
    k = len(masses)
    fig, axes = plt.subplots(1, k, figsize=(2.4 * k, 2.4), squeeze=False)
    for c, ax in enumerate(axes[0]):
        g = centroids[centroids.cluster == c]
        ax.tricontourf(g.x, g.y, g.p1, levels=np.linspace(0, 1, 11), cmap='RdBu_r')
        ax.set_title(f"C{c + 1}: SGD {masses.SGD[c]:.0%}, posterior {masses['posterior (SGLD)'][c]:.0%}", fontsize=8)
        ax.set_xticks([]); ax.set_yticks([])
    fig.suptitle('mean predicted P(class 1) of each function-space cluster', fontsize=9)
    fig.tight_layout()
    return fig

def plot_loss(curves: pd.DataFrame):
    "Epoch-mean training loss: median and 10–90% of nets, log-log."
    fig, ax = plt.subplots(figsize=(5, 3.2))
    ax.fill_between(curves.epoch, curves.q10, curves.q90, alpha=.3)
    ax.loglog(curves.epoch, curves['median'], lw=2)
    ax.set(xlabel='epoch', ylabel='epoch-mean training loss', title='training loss of the nets')
    fig.tight_layout()
    return fig

FIGURES = {'fig3': lambda t, cfg: plot_fig3(t['scan'], t['summary'], cfg.xi_paper),
           'fig4': lambda t, cfg: plot_fig4(t['solutions'], t['masses']),
           'clusters': lambda t, cfg: plot_clusters(t['centroids'], t['masses']),
           'loss': lambda t, cfg: plot_loss(t['curves'])}

def read_results(folder) -> dict:
    "The csv tables a `report` wrote to `folder` (or a copy of them), by name."
    folder = Path(folder)
    names = [n for n in ('summary', 'clusters', 'scan', 'table2', 'choices', 'masses', 'chains', 'solutions',
                         'centroids', 'curves', 'timing', 'by_k') if (folder / f'{n}.csv').exists()]
    if 'summary' not in names:
        raise ValueError(f"{folder} has no summary.csv: run the study's report on it first")
    return {n: read_table(folder / f'{n}.csv') for n in names}



# %%
probe = np.array([[0.0, 0.0], [1.0, -1.0], [-2.0, 0.5]])
cent = np.array([[[0.9, 0.1], [0.2, 0.8], [0.5, 0.5]], [[0.3, 0.7], [0.6, 0.4], [0.0, 1.0]]]).reshape(2, -1)
t = centroid_table(cent, probe)
assert list(t.columns) == ['cluster', 'probe', 'x', 'y', 'p1'] and len(t) == 6
assert np.allclose(t.p1, [0.1, 0.8, 0.5, 0.7, 0.4, 1.0]) and np.allclose(t.x[:3], probe[:, 0])
epochs = pd.DataFrame({'net': np.repeat(range(5), 50), 'epoch': np.tile(range(1, 51), 5),
                       'loss': np.repeat(np.arange(1, 6), 50) / np.sqrt(np.tile(range(1, 51), 5))})
curves = loss_curves(epochs)
assert np.allclose(curves['median'], 3 / np.sqrt(curves.epoch)) and (curves.q10 < curves['median']).all()
plot_loss(curves);

# %%
#| hide
import nbdev; nbdev.nbdev_export()
