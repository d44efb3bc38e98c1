# %% [markdown]
# # Protocol
#
# > How a study's configuration compares with the paper's protocol, and the inverse temperature of its LLC: decided from the study and its configuration, and recorded by the runner in the folder the run writes.

# %%
#| default_exp experiment.protocol

# %%
#| hide
from nbdev.showdoc import *

# %%
#| export
from __future__ import annotations
import dataclasses, math

from fracsgd.core import is_analysis_field

# %% [markdown]
# A verdict is about the paper's experiment, so whoever reads a number must know how far the configuration that
# made it is from that experiment. The [runner](runner.html) answers when it runs a study: it compares the
# configuration with the study's `full` preset, with the functions of this chapter, and writes the answer into the
# study folder's `meta.json` beside the preset and any stand-in. The [claims ledger](ledger.html) reads the answer
# from there (and from the compact results' `provenance.json`); it rebuilds no configuration. The kinds of answer
# and what each one allows are set out in the [provenance chapter](provenance.html).
#
# What is *not* a difference is declared where the field is: a configuration field made with core's
# `analysis_field` (bootstrap resamples, nets per process, threads, recorded steps, the cross-check of the LLC,
# the rule that places the crossover on the recorded curve) changes how the same experiment is run or read, and is
# skipped. A new field is a protocol field unless it says otherwise, so nothing here needs to learn its name.

# %%
#| export
SCALES = ('paper scale', 'extended', 'assumed', 'reduced', 'stand-in')
LENGTH_FIELDS = {'epochs', 'steps', 'n_steps', 'sgd_steps'}   # longer than the paper's and nothing else: `extended`

def _n(x) -> str:
    return f'{x:,}' if isinstance(x, int) else f'{x:g}'

def protocol_differences(cfg, full, prefix: str = '') -> list[tuple[str, str, bool]]:
    "(field, what differs, longer-only) for each protocol field where the configuration `cfg` differs from `full`."
    out = []
    for f in dataclasses.fields(full):
        if is_analysis_field(f) or not hasattr(cfg, f.name):
            continue
        v, w, name = getattr(cfg, f.name), getattr(full, f.name), prefix + f.name
        if v == w:
            continue
        if dataclasses.is_dataclass(v) and dataclasses.is_dataclass(w) and type(v) is type(w):
            out += protocol_differences(v, w, name + '.')
        elif all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in (v, w)):
            out.append((name, f'{name} {_n(v)} of {_n(w)}', f.name in LENGTH_FIELDS and v > w))
        elif isinstance(v, (tuple, list)) and isinstance(w, (tuple, list)) and len(v) != len(w):
            out.append((name, f'{name}: {len(v)} of {len(w)}', False))
        else:
            show = lambda x: (_n(x) if isinstance(x, (int, float)) and not isinstance(x, bool) else
                              repr(x) if len(repr(x)) <= 40 else f'{type(x).__name__}(...)')
            out.append((name, f'{name} {show(v)} (full: {show(w)})', False))
    return out

def protocol_scale(study, cfg, stand_in: str = '') -> str:
    """How the configuration `cfg` of `study` (a `Study`; `cfg` None: a configuration that is none of its presets)
    compares with the paper's protocol: the text of the ledger's `scale` column."""
    full = study.presets.get('full')
    if cfg is None or full is None:
        what = (f'a custom configuration of {study.name}' if cfg is None else
                f'{study.name} has no full preset to compare with')
        diffs, longer = [what], False
    else:
        found = protocol_differences(cfg, full)
        diffs, longer = [d for _, d, _ in found], bool(found) and all(l for *_, l in found)
    if stand_in:
        return f'stand-in: {stand_in}' + (f'; reduced: {"; ".join(diffs)}' if diffs else '')
    if not diffs:
        return f'assumed: {study.protocol_caveat}' if study.protocol_caveat else 'paper scale'
    return ('extended: ' if longer else 'reduced: ') + '; '.join(diffs)

def scale_kind(scale: str) -> str:
    "The kind of a `scale` text: one of `SCALES`."
    kind = str(scale).split(':')[0].strip()
    if kind not in SCALES:
        raise ValueError(f'scale {scale!r} does not start with one of {SCALES}')
    return kind


# %% [markdown]
# The moons studies' presets against their full ones. The long preset trains 1,000 epochs where the paper trains
# 200, records every 10th step and places $t_c$ by model comparison; only the first is a difference:

# %%
from fracsgd.studies import get_study
moons, posterior = get_study('moons-diffusion'), get_study('moons-posterior')
assert protocol_scale(moons, moons.config('full')) == 'paper scale'
assert protocol_scale(moons, moons.config('quick')) == 'reduced: n_models 100 of 500'
assert protocol_scale(moons, moons.config('long')) == 'extended: epochs 1,000 of 200'
assert protocol_scale(posterior, posterior.config('quick'), 'synthetic moons').startswith('stand-in: synthetic moons; reduced')
assert protocol_scale(posterior, None) == 'reduced: a custom configuration of moons-posterior'
assert protocol_scale(get_study('mnist-ablations'), get_study('mnist-ablations').config('full')).startswith('assumed: ')
assert scale_kind(protocol_scale(posterior, posterior.config('quick-converged'))) == 'reduced'
{p: protocol_scale(posterior, c) for p, c in posterior.presets.items()}

# %% [markdown]
# ## The inverse temperature of a configuration's LLC
#
# Every ledger row that involves the LLC states the $n\beta$ its estimates used, because the paper's β = 1/ln n
# can be read with $n$ the training samples or with $n$ the SGLD batch (devinterp's reading), and the two differ by
# two orders of magnitude on MNIST ([claims ledger](ledger.html), "The LLC estimator's own uncertainty").
# `llc_nbeta` asks the study for the SGLD settings of a configuration's LLC (its llc_settings method, which looks a
# named setting up in the study's own `llc_tables`) and says what they use.

# %%
#| export
NBETA_NAMES = {'paper': 'nβ = n/ln n (β = 1/ln n, n the training samples: table 3 as printed)',
               'paper-devinterp-nbeta': "nβ = B/ln B, B the SGLD batch size (devinterp's reading of β = 1/ln n)"}

def llc_nbeta(study, cfg) -> str:
    "The inverse temperature nβ of the LLC estimates of configuration `cfg` of `study`, in words ('' when untold)."
    s = None if cfg is None else study.llc_settings(cfg)
    if isinstance(s, str):                                # a name the study's tables do not hold
        return NBETA_NAMES.get(s, '')
    nb, B = getattr(s, 'n_beta', 0), getattr(s, 'batch_size', None)
    if s is None or nb == 0:
        return ''
    if nb is None:
        return NBETA_NAMES['paper']
    if B and math.isclose(nb, B / math.log(B)):
        return f"nβ = {B}/ln {B} ≈ {nb:.1f} (the SGLD batch size as n: devinterp's reading of β = 1/ln n)"
    return f'nβ ≈ {nb:.4g}'


# %%
seeds = get_study('mnist-seeds')
assert llc_nbeta(posterior, posterior.config('full')) == NBETA_NAMES['paper']
assert llc_nbeta(seeds, seeds.config('full')).startswith('nβ = 256/ln 256 ≈ 46.2')
assert llc_nbeta(moons, moons.config('full')) == '' and llc_nbeta(seeds, None) == ''
llc_nbeta(seeds, seeds.config('full'))

# %%
#| hide
import nbdev; nbdev.nbdev_export()
