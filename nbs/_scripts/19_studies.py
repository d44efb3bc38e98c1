# %% [markdown]
# # Studies
#
# > The registry of the studies: each study's name and the module that holds it, looked up on first use.

# %%
#| default_exp studies.__init__

# %%
#| hide
from nbdev.showdoc import *

# %%
#| export
from __future__ import annotations
import importlib

from fracsgd.experiment.runner import Study

# %% [markdown]
# Each study is a module of `fracsgd.studies` that exposes its `Study` as `STUDY`. The runner, the command line
# and the ledger find a study by its name here; the module is imported only when the study is asked for, so
# that `import fracsgd.studies` stays light and modules below the studies can look one up (the one import of
# the package that points up, tested in `tests/test_layers.py`).
#
# A study is one class. Its chapter defines the class as soon as the presets exist (name, presets, what the ledger
# keeps), then adds each stage (`runs`, `load_data`, `train`, `evaluate`, `report`) as a method in the cell that
# explains it, with fastcore's `@patch` (fastai's way of writing a class across a notebook). No module function
# does a stage's work for a method to forward to; what studies share lives in [`studies.common`](study_common.html).

# %%
#| export
STUDIES = {'moons-diffusion': 'fracsgd.studies.moons_diffusion',
           'moons-posterior': 'fracsgd.studies.moons_posterior',
           'mnist-seeds': 'fracsgd.studies.mnist_seeds',
           'mnist-architectures': 'fracsgd.studies.mnist_architectures',
           'mnist-ablations': 'fracsgd.studies.mnist_ablations',
           'grokking': 'fracsgd.studies.grokking',
           'cifar10': 'fracsgd.studies.cifar10',
           'tinystories': 'fracsgd.studies.tinystories',
           'tiny-imagenet': 'fracsgd.studies.tiny_imagenet'}

def get_study(name) -> Study:
    "The registered study called `name` (or `name` itself when it is a `Study`)."
    if isinstance(name, Study):
        return name
    if name not in STUDIES:
        raise ValueError(f"unknown study {name!r}; known: {', '.join(sorted(STUDIES))}")
    return importlib.import_module(STUDIES[name]).STUDY


# %%
assert get_study('moons-diffusion').name == 'moons-diffusion' and get_study(get_study('grokking')).name == 'grokking'
try:
    get_study('moons')
    raise AssertionError('an unknown study was found')
except ValueError as e:
    assert 'moons-diffusion' in str(e)
sorted(STUDIES)

# %%
#| hide
import nbdev; nbdev.nbdev_export()
