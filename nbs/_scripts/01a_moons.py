# %% [markdown]
# # Moons
#
# > scikit-learn's two interleaving half circles, seeded: the toy problem of the paper's moons experiments.

# %%
#| default_exp datasets.moons

# %%
#| hide
from nbdev.showdoc import *

# %%
#| export
from __future__ import annotations

import torch
from sklearn.datasets import make_moons

from fracsgd.datasets.common import Loaded


# %% [markdown]
# The posterior-concentration experiment of the paper (appendix G.4; figures 3–4, table 2) trains small ReLU
# networks on scikit-learn's two interleaving half circles: 512 points with Gaussian noise of standard
# deviation 0.2. The dataset is fixed once (here by `seed`) and the 500 networks differ only in their
# initialisation, so the same seed must give the same points on every machine. scikit-learn puts $\lfloor n/2
# \rfloor$ points on the upper moon (label 0) and the rest on the lower one (label 1), then shuffles them.
# Like every loader (see the [data chapter](data.html)), `load_moons` returns a `Loaded` tuple of inputs,
# labels and source.

# %%
#| export
def load_moons(n_samples: int = 512, noise: float = 0.2, seed: int = 0, device=None) -> Loaded:
    "scikit-learn's two moons (paper: 512 points, noise 0.2): `X` float32 (n, 2), `y` int64 (n,), `source`."
    if n_samples < 2:
        raise ValueError(f"n_samples must be at least 2 (one point per moon), got {n_samples}")
    if not noise >= 0:
        raise ValueError(f"noise must be a non-negative standard deviation, got {noise}")
    X, y = make_moons(n_samples=n_samples, noise=noise, random_state=seed)
    device = 'cpu' if device is None else device
    return Loaded(torch.as_tensor(X, dtype=torch.float32, device=device),
                  torch.as_tensor(y, dtype=torch.int64, device=device),
                  f"sklearn.datasets.make_moons(n_samples={n_samples}, noise={noise}, random_state={seed})")


# %%
X, y, source = load_moons()
assert X.shape == (512, 2) and X.dtype == torch.float32 and y.dtype == torch.int64
assert torch.bincount(y.cpu()).tolist() == [256, 256]                   # two moons, equally populated
assert torch.equal(load_moons().X, X) and not torch.equal(load_moons(seed=1).X, X)  # seeded
source

# %%
import matplotlib.pyplot as plt
fig, ax = plt.subplots(figsize=(6, 3.2))
Xc, yc = X.cpu(), y.cpu()
for k, c in [(0, 'tab:blue'), (1, 'tab:orange')]:
    ax.scatter(Xc[yc == k, 0], Xc[yc == k, 1], s=8, c=c, label=f'class {k}')
ax.set_xlabel('$x_1$ (dimensionless)')
ax.set_ylabel('$x_2$ (dimensionless)')
ax.set_title('moons: 512 samples, noise 0.2, seed 0')
ax.set_aspect('equal')
ax.legend(loc='upper left', bbox_to_anchor=(1.01, 1), frameon=False)
fig.tight_layout()
plt.show()

# %%
#| hide
import nbdev
nbdev.nbdev_export()
