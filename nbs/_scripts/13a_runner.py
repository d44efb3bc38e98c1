# %% [markdown]
# # Runner
#
# > One study protocol and one runner: where tensors live, seeds, trained state kept before analysis, presets.

# %%
#| default_exp experiment.runner

# %%
#| hide
from nbdev.showdoc import *

# %%
#| export
from __future__ import annotations
import dataclasses, json, os, re, shutil, time, warnings
from functools import partial
from pathlib import Path
from typing import Callable

import torch
from torch import nn

from fracsgd.core import (CHECKPOINT_EVERY, atomic_path, available_memory, checkpointing, cpu_cores, format_memory,
    reporting_progress, results_dir, seed_everything)
from fracsgd.experiment.store import read_meta, record_meta, status, failed_keys, done_keys, runs_table
from fracsgd.experiment.protocol import llc_nbeta, protocol_scale
from fracsgd.placement import Placement, check_placed, place, placed, placement
from fracsgd.experiment.sweep import PROGRESS_DIR, Sweep, run_sweep, run_key, config_record


# %% [markdown]
# A study of this project is a list of runs that do not talk to each other, then a report that reads what the
# runs stored. Before this chapter, each of the nine studies decided for itself where its nets and data lived,
# which preset it was in (an environment variable read in some twenty places) and how it was run; on a GPU,
# five of them trained their nets on the device, copied the weights back into nets on the CPU and then crashed
# when they evaluated those nets on data that was still on the GPU.
#
# This chapter splits the work the way fastai's `Learner` or Lightning's `Trainer` does. A **study** says *what*
# to run: its presets, its runs, how to load a run's data and build its models, the one function that trains
# them, what to measure on the trained models, and its report. The **runner** says *where and how*: device,
# floating dtype and CPU threads; seeds; placing the data and the models, with one check at the hand-off;
# keeping each run's trained state before anything else can fail; resuming; the results folder and what it
# records about itself. No study names a device: where tensors live is decided once, in the [placement chapter](placement.html).

# %% [markdown]
# ## The study protocol
#
# A study subclasses `Study` and fills in what it knows. The runner calls, for each run and in this order:
# `seed(run)` (the seed set before anything is built), `load_data(run)`, `build_models(run)`, then `train(run,
# data, models)`, whose result dict (trajectory tables and scalars) is kept with the models' trained weights
# *before* `evaluate(run, data, models, trained)` measures what the trained models need (test accuracy, LLCs at the
# final weights). If evaluation fails, the next `run_study` loads the kept state and evaluates again without
# training. A study with a stage that needs every run (the posterior chains of moons-posterior) adds `finish`.
#
# Presets are part of the study: `smoke` (seconds, for tests), `quick` (a laptop CPU in minutes), `full` (the
# paper's configuration) and any others it needs. A stand-in for data or weights that cannot be had is a change
# of the configuration (`with_stand_in`) that `stand_in(cfg)` describes; the runner records it in the folder, and
# the ledger labels every row made from it. A study that can say which data its runs would read now
# (`data_source(cfg)`, in the words of its runs' `data_source` column) is protected from mixing: `run_study` refuses
# to add runs to a folder whose finished runs read other data (`check_same_data`). The MNIST studies fall back to a
# stand-in when `FRACSGD_DATA` is unset, so without this check a resume in a shell that lacked the variable would
# quietly continue a real-MNIST study on other digits; this happened once to our mnist-ablations full run (25 of 27
# runs on the stand-in, 2 on MNIST), which is why it is not committed.

# %%
#| export
class Study:
    "What a study supplies; the runner does the rest. Subclass it and fill in what the study needs."
    name: str = ''
    presets: dict = {}                  # 'smoke', 'quick', 'full', ...: configuration dataclasses
    keep: tuple = ()                    # files of a reported folder that the ledger keeps beside summary.csv
    protocol_caveat: str = ''           # where the paper leaves its protocol unstated: what our full preset assumes
    llc_tables: dict = {}               # named SGLD settings that a configuration's `llc` may name

    def config(self, preset: str = 'quick'):
        "The configuration of `preset`."
        if preset not in self.presets:
            raise ValueError(f"study {self.name} has no preset {preset!r}; it has {sorted(self.presets)}")
        return self.presets[preset]

    def preset_of(self, cfg) -> str:
        "The name of the preset whose configuration is `cfg` ('custom' when none is)."
        return next((k for k, v in self.presets.items() if v == cfg), 'custom')

    def config_from_record(self, record: dict):
        "The configuration a folder's `meta.json` recorded (lists back to tuples)."
        cls = type(self.presets['quick'])
        return cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in record.items()})

    def runs(self, cfg) -> list: raise NotImplementedError
    def seed(self, run) -> int: return int(getattr(run, 'first_seed', getattr(run, 'seed', 0)))
    def load_data(self, run): return None
    def build_models(self, run) -> list: return []
    def train(self, run, data, models) -> dict: raise NotImplementedError
    def evaluate(self, run, data, models, trained: dict) -> dict: return {}
    def finish(self, folder, cfg): "A stage after every run finished; runs under the study's placement."
    def report(self, folder, cfg) -> dict: raise NotImplementedError
    def check_data(self, cfg): "Refuse, before any run, a configuration whose data cannot be found (say how)."
    def data_source(self, cfg) -> str: "What the runs of `cfg` would read now, as their `data_source` says it ('': untold)."; return ''
    def run_cost(self, run) -> float: "The relative work of `run`, for the progress bar's time left (default: all alike)."; return 1.0
    def stand_in(self, cfg) -> str: "What stands in for the paper's data or weights in `cfg` ('' for nothing)."; return ''
    def threads(self, run=None) -> int | None:
        "CPU threads `run` (None: the `finish` stage) works best with; on a CPU the runner uses them (None: its own)."
        return None

    def memory(self, run) -> float | None:
        """Peak resident bytes one local worker needs for `run` (measured with `tools/measure_memory.py`, or bounded
        by the study); None when the study has not declared it: the runner then counts cores only."""
        return None

    def found_stand_in(self, folder, cfg) -> str:
        "What the finished runs in `folder` found standing in for the paper's data, beyond `stand_in(cfg)` ('': nothing)."
        return ''

    def llc_settings(self, cfg):
        "The SGLD settings of `cfg`'s LLC: its `llc`, looked up in `llc_tables` when it is a name (an unknown name stays one)."
        s = getattr(cfg, 'llc', None)
        return self.llc_tables.get(s, s) if isinstance(s, str) else s

    def with_stand_in(self, cfg):
        raise ValueError(f"study {self.name} has no stand-in data (--stand-in)")

    def __repr__(self): return f'{type(self).__name__}({self.name!r}, presets {sorted(self.presets)})'


# %% [markdown]
# Studies register by name in the [study registry](studies.html), which lives with the studies; the runner
# looks a study up there when it is given a name.

# %% [markdown]
# ## One run
#
# `run_one` is what a worker process executes. It is a top-level function, and a study pickles as a reference
# to its class, so both travel to a process pool or to Ray. The trained state goes to `trained/<key>.pt` in the study folder, written whole or
# not at all; the runner deletes it once the run's results are stored.
#
# A run stopped part-way through its training resumes where it was, not from step 0: `run_one` trains inside
# `checkpointing` on `checkpoints/<key>/`, so each `train_ensemble` call of the study saves its state
# there every `CHECKPOINT_EVERY` seconds (the environment variable `FRACSGD_CHECKPOINT_EVERY` changes it) and after
# every chunk, and a restarted run picks it up, with a line in the folder's `resumed.log`. The states go once the
# trained state is written. The LLC estimates after training (a study's `evaluate`) are not checkpointed: a stop
# there repeats them, from the trained state. A saved state costs little: for `mnist-seeds --full` at its last step
# (50 nets, every row recorded) it is 57 MiB, written in 0.5–0.6 s on the 2-core development CPU, 0.2% of the run
# at one save per 300 s (`tools/checkpoint_cost.py`, 2026-11-27).

# %%
#| export
def _models_list(models) -> list:
    return [models] if isinstance(models, nn.Module) else list(models or [])

def trained_path(folder, key: str) -> Path:
    "Where the trained state of run `key` waits for its evaluation."
    return Path(folder) / 'trained' / f'{key}.pt'

RESUMED_LOG = 'resumed.log'   # one line per run whose training took up a saved state

def checkpoint_dir(folder, key: str) -> Path:
    "Where the training of run `key` saves its state part-way, until its trained state is written."
    return Path(folder) / 'checkpoints' / key

def checkpoint_every() -> float:
    "Seconds between two saved states of a run's training: `FRACSGD_CHECKPOINT_EVERY`, else `CHECKPOINT_EVERY`."
    return float(os.environ.get('FRACSGD_CHECKPOINT_EVERY', CHECKPOINT_EVERY))

PROGRESS_EVERY = 2.0      # seconds between two progress files of a run

def progress_writer(folder, key: str, every: float = PROGRESS_EVERY) -> Callable:
    """A `reporting_progress` listener that writes `{key, done, total, what, time}` to `folder/progress/<key>.json`
    (whole, at most every `every` seconds) for the sweep runner's progress bar, in whatever process the run is."""
    path, last = Path(folder) / PROGRESS_DIR / f'{key}.json', [0.0]
    def write(done: int, total: int, what: str):
        now = time.time()
        if now - last[0] < every and done < total:
            return
        last[0] = now
        with atomic_path(path) as tmp:
            tmp.write_text(json.dumps(dict(key=key, done=int(done), total=int(total), what=what, time=now)))
    return write

def with_threads(p: Placement, threads: int | None) -> Placement:
    "`p` with the thread count a study asks for, on a CPU; `p` itself when the study asks for none or runs elsewhere."
    return dataclasses.replace(p, threads=int(threads)) if threads and p.torch_device.type == 'cpu' else p

def run_one(study, p: Placement, folder, run) -> dict:
    "Train (or reload the trained state of) one run under placement `p`, then evaluate it; its result dict."
    from fracsgd.studies import get_study   # the lazy registry (the one import that points up)
    study, key = get_study(study), run_key(run)
    with placed(with_threads(p, study.threads(run))), reporting_progress(progress_writer(folder, key)):
        seed_everything(study.seed(run))
        data = place(study.load_data(run), p)
        models = place(study.build_models(run), p)
        check_placed(data, p, 'data')
        check_placed(models, p, 'models')
        saved = trained_path(folder, key)
        if saved.exists():                                       # trained before; its evaluation failed
            state = torch.load(saved, map_location=p.torch_device, weights_only=False)
            for m, s in zip(_models_list(models), state['models']):
                m.load_state_dict(s)
            trained = state['trained']
        else:
            with checkpointing(checkpoint_dir(folder, key), checkpoint_every()) as slot:
                trained = study.train(run, data, models)
            if slot.resumed:                                     # say so: the run was trained in more than one go
                with open(Path(folder) / RESUMED_LOG, 'a') as f:
                    f.write(f"{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())} run {key}: training resumed "
                            f"from {', '.join(str(p.relative_to(folder)) for p in slot.resumed)}\n")
            with atomic_path(saved) as tmp:
                torch.save(dict(models=[m.state_dict() for m in _models_list(models)], trained=trained), tmp)
            shutil.rmtree(checkpoint_dir(folder, key), ignore_errors=True)
        seed_everything(study.seed(run))                         # evaluation sees the same RNG fresh or resumed
        return {**trained, **study.evaluate(run, data, models, trained)}


# %% [markdown]
# ## A study, run and reported
#
# `run_study` resolves the configuration (a preset, or a configuration of the study's own type), refuses what it
# cannot run before anything is written (an unknown device, data that are missing), then runs the unfinished
# runs, stores them, runs `finish`, records in `meta.json` the preset, the configuration, the placement and the
# stand-in, and reports. A run's key is its configuration alone: neither the device nor the number of workers
# nor the backend enters it, so a folder started on a laptop resumes on a GPU.
#
# By default the local pool starts one worker per core, each with one thread (`cpu_cores()` shared out). On small
# models that beats fewer workers with more threads each: mnist-ablations `--quick` (5 runs) took 56 s with two
# workers of one thread and 76 s with one worker of two threads (`--workers 1`), on the 2-core development machine,
# otherwise idle, 2026-11-27.
#
# A local pool of workers forks by default; once CUDA may be initialised, forking is unsafe (Python 3.12 warns
# about it), so runs placed on a GPU start their workers with `spawn`. A worker that is not forked has no notebook
# in it: a study defined in the notebook that runs it (every study page defines its own) is replaced by the
# exported module's study (and its configuration as that module's class), which a worker can import: the notebook
# and its module hold the same code, and the run keys, which name classes without their module, do not change.

# %%
#| export
def _exported(study: Study, config):
    "A study (and configuration) defined in a notebook, as the exported module's: a worker can import those."
    from fracsgd.studies import STUDIES, get_study   # the lazy registry (the one import that points up)
    if type(study).__module__ != '__main__' or study.name not in STUDIES:
        return study, config
    exported = get_study(study.name)
    return exported, None if config is None else exported.config_from_record(config_record(config))

def default_folder(study: Study, preset: str, stand_in: str) -> Path:
    "`results/<study>/<preset>` (`-stand-in` added when something stands in)."
    return results_dir(study.name, preset + ('-stand-in' if stand_in else ''))

def data_identity(source: str) -> str:
    "A data source without the folder it was read from: the same files moved elsewhere are the same data."
    return re.sub(r' in \S+', '', str(source))

def check_same_data(folder, source: str):
    """Refuse to add runs that read `source` to a study folder whose finished runs read other data: one study is
    one experiment, and a mix (e.g. a resume without `FRACSGD_DATA`, which falls back to a stand-in) is neither."""
    if not source or not (Path(folder) / 'meta.json').exists():
        return
    done = runs_table(folder)
    if 'data_source' not in done or done.empty:
        return
    stored = {k: int(v) for k, v in done.data_source.dropna().map(data_identity).value_counts().items()}
    if set(stored) - {data_identity(source)}:
        raise ValueError(f"{folder}: its {len(done)} finished runs read {stored}, but this session would read "
                         f"{source!r}. Point FRACSGD_DATA at the data they used, or start a new --out folder.")

class NotEnoughMemory(MemoryError):
    "A run would need more memory than there is; raised before anything starts."

DRIVER_MEMORY = 2 ** 30        # the runner's own process beside its workers (its peak: <= 0.98 GB in every preset measured)

def plan_workers(needs, cores: int, available: float, workers: int | None = None, what: str = 'a run',
                 driver: float = DRIVER_MEMORY) -> int | None:
    """Local workers for runs whose per-worker needs are `needs` (bytes; None: undeclared): `workers` when given,
    else as many as the cores and the `available` memory less the runner's own (`driver`) both allow (at most one
    per run; None, the pool's own default of one per core, when no need is declared). `NotEnoughMemory`, in one
    line that names the need and the memory available, when even those workers would not fit."""
    needs = list(needs)
    declared = [n for n in needs if n]
    if not declared:
        return workers
    limit = int(workers or max(1, min(cores, len(needs))))
    need, usable = max(declared), available - driver
    fit = int(usable // need)
    if workers is None:
        limit = min(limit, max(fit, 1))
    if limit * need > usable:
        total = f', {limit} workers {format_memory(limit * need)},' if limit > 1 else ''
        raise NotEnoughMemory(
            f"{what} needs about {format_memory(need)} per worker{total} and {format_memory(available)} is available "
            f"({format_memory(driver)} of it for the runner itself): free memory, run fewer workers (--workers), or "
            "set FRACSGD_MEMORY if more is truly free")
    return limit

LAPTOP_SHARE = 4 * 2 ** 30     # what a laptop of 8 GB spares for a run beside a browser (issue 44's bound)

def memory_notice(needs, workers: int, available: float, what: str = 'a run') -> str:
    """One line, said before a start that plans more than `LAPTOP_SHARE` in all (`workers` times the largest of the
    declared `needs`, in bytes): the need, the workers and the memory available; '' when the plan stays within it."""
    declared = [n for n in needs if n]
    if not declared:
        return ''
    need, k = max(declared), max(1, min(int(workers), len(declared)))
    if k * need <= LAPTOP_SHARE:
        return ''
    return (f"{what} needs about {format_memory(need)} per worker (its largest run), more than the "
            f"{format_memory(LAPTOP_SHARE)} a laptop spares: {k} worker{'s' if k > 1 else ''}, "
            f"{format_memory(k * need)} of the {format_memory(available)} available")

def run_study(study, preset: str = 'quick', folder=None, *, config=None, stand_in: bool = False, device=None,
              dtype: str = 'float32', threads: int | None = None, backend: str = 'local',
              workers: int | None = None, address: str | None = None, progress: bool = True,
              report: bool = True, gpus_per_run: float | None = None) -> dict:
    """Run (or resume) `study` with `preset` (or `config`) into `folder` on `device`; report it. The report's dict,
    with `folder`, `config`, `preset` and the run `counts`. `threads` per run defaults to the cores `cpu_cores()` counts,
    shared among the local workers (results can differ in the last digits with the thread count; meta.json records it).
    On Ray, each run asks for `gpus_per_run` GPUs (default: 1 on a CUDA device, 0 otherwise; a fraction lets
    several small runs share a card). The folder's `meta.json` records what the ledger reads: the preset, the
    configuration, the placement, what stood in (with what the runs found: the study's found_stand_in method), the
    scale of the configuration against the paper's protocol and the nβ of its LLC (the [protocol chapter](protocol.html))."""
    from fracsgd.studies import get_study   # the lazy registry (the one import that points up)
    study, config = _exported(get_study(study), config)
    cfg = config if config is not None else study.config(preset)
    if stand_in:
        cfg = study.with_stand_in(cfg)
    label = study.preset_of(cfg) if config is not None else preset
    runs = study.runs(cfg)
    if backend == 'local':                                       # before anything is written: refuse what won't fit
        needs, free = [study.memory(r) for r in runs], available_memory()
        workers = plan_workers(needs, cpu_cores(), free, workers, f'{study.name} {label}')
        notice = memory_notice(needs, workers or cpu_cores(), free, f'{study.name} {label}')
        if notice:                                               # said before it starts, with the plan
            print(notice, flush=True)
    if threads is None and backend == 'local':
        threads = max(1, cpu_cores() // (workers or cpu_cores()))
    p = placement(device, dtype, threads)                        # refuses an unusable device, writes nothing
    study.check_data(cfg)
    what = study.stand_in(cfg)
    folder = Path(folder) if folder is not None else default_folder(study, label, what)
    check_same_data(folder, study.data_source(cfg))
    meta = dict(preset=label, config=config_record(cfg), placement=dataclasses.asdict(p), stand_in=what,
                workers=(workers or cpu_cores()) if backend == 'local' else workers)
    fn = partial(run_one, study, p, str(folder))
    cuda = p.torch_device.type == 'cuda'
    gpus = (1.0 if cuda else 0.0) if gpus_per_run is None else float(gpus_per_run)
    counts = run_sweep(Sweep(study.name, fn, runs, device=p.device, meta=meta, cost=study.run_cost), folder, backend=backend,
                       workers=workers, address=address, progress=progress,
                       start_method='spawn' if cuda else None, gpus_per_run=gpus)
    for key in done_keys(folder):
        trained_path(folder, key).unlink(missing_ok=True)
        shutil.rmtree(checkpoint_dir(folder, key), ignore_errors=True)
    what = study.found_stand_in(folder, cfg) or what             # a stand-in only the runs could find (data offline)
    record_meta(folder, stand_in=what, scale=protocol_scale(study, cfg, what), llc_nbeta=llc_nbeta(study, cfg))
    if counts['done'] + counts['skipped'] == len(set(run_key(r) for r in runs)):
        with placed(with_threads(p, study.threads(None))):
            study.finish(folder, cfg)
    out = report_study(folder, study) if report else {}
    return dict(out, folder=folder, config=cfg, preset=label, counts=counts)


# %% [markdown]
# ### Memory
#
# The local pool's workers also share the memory. A study may declare what one worker needs for a run (its `memory`
# method, in bytes: measured with `tools/measure_memory.py`, table on the [benchmarks page](bench.html)); the
# runner then starts no more workers than `available_memory()` holds, and refuses in one line, before anything is
# written, a run that would not fit even alone, rather than start what the kernel would kill. `--workers` sets the
# count (it is refused too when that many would not fit; the runner's own process, `DRIVER_MEMORY`, is counted
# beside them), and `FRACSGD_MEMORY` says how much memory there is when
# the kernel's figure is not the right one (a container, a shared machine). A study that declares nothing is
# planned by its cores alone, as before. A plan that needs more than a laptop spares (`LAPTOP_SHARE`, 4 GB in all)
# is said before it starts, in one line (`memory_notice`) with the need, the workers and the memory available.

# %%
GB = 2 ** 30
assert plan_workers([None, None, None], cores=2, available=1 * GB) is None            # undeclared: the pool's default
assert plan_workers([3 * GB] * 4, cores=4, available=16 * GB) == 4
assert plan_workers([3 * GB] * 4, cores=4, available=8 * GB) == 2                     # memory, not cores, decides
assert plan_workers([3 * GB] * 4, cores=4, available=4 * GB) == 1
assert plan_workers([3 * GB], cores=4, available=16 * GB) == 1                        # never more workers than runs
for bad in (dict(available=2 * GB), dict(available=8 * GB, workers=3)):
    try:
        plan_workers([3 * GB] * 4, cores=4, **{'available': bad['available']}, workers=bad.get('workers'), what='toy quick')
        raise AssertionError('a plan that does not fit was accepted')
    except NotEnoughMemory as e:
        assert str(e).startswith('toy quick needs about 3.0 GB per worker') and '\n' not in str(e)
        print(e)
assert memory_notice([3 * GB] * 4, workers=1, available=8 * GB) == ''                 # within a laptop's share
assert memory_notice([None, None], workers=2, available=8 * GB) == ''                  # nothing declared
note = memory_notice([1 * GB, 5 * GB], workers=2, available=16 * GB, what='toy quick')
assert note.startswith('toy quick needs about 5.0 GB per worker') and '2 workers, 10.0 GB of the 16.0 GB' in note
note

# %% [markdown]
# ### On a machine with several GPUs
#
# The local pool runs every run on the device the runner was given; to spread a study over several GPUs, start a
# local Ray cluster that knows them and let each run ask for a GPU (`gpus_per_run`, default 1 on a CUDA device).
# Ray sets `CUDA_VISIBLE_DEVICES` for every task, so each run sees its own card as `cuda`:
#
# ```sh
# export RAY_AUTH_MODE=token                         # Ray >= 2.59: clusters use token auth (see the sweep chapter)
# ray start --head --num-gpus=4 --num-cpus=16       # once, on the machine
# fracsgd run moons-diffusion --preset long --device cuda --backend ray --address auto --gpus-per-run 0.25
# fracsgd run moons-posterior --full --device cuda --backend ray --address auto --gpus-per-run 0.25
# fracsgd run mnist-seeds --full --device cuda --backend ray --address auto
# fracsgd run mnist-architectures --full --device cuda --backend ray --address auto --gpus-per-run 0.5
# fracsgd run mnist-ablations --full --device cuda --backend ray --address auto --gpus-per-run 0.25
# ray stop
# ```
#
# A killed driver is resumed by running the same command again: finished runs are stored once, under their
# key, whichever backend ran them. Small models leave most of a card idle, so a fraction (`--gpus-per-run 0.25`)
# packs several runs onto it.
#
# **What each costs.** The table below lists the worker time of every full-scale result the ledger keeps. It is
# read from the `timing.json` beside each compact result, measured on the shared 2-core development CPU, often
# with other jobs running. Runs are independent, so on several devices the wall time is about the longest single
# run once there are as many workers as runs. The mnist-seeds study is a single run of 50 nets, so it cannot be
# spread this way. For moons-posterior the time is that of its runs; its posterior chains, a stage after them,
# took 17 s more. GPU numbers are few:
# - on one H200 (an early version of the code), 16 of mnist-architectures' 17 runs trained their 5,000 steps in
#   290 s with six workers;
# - on one H100 (2026-11-26), mnist-seeds `--full` trained its 2,000 steps, with the LLC along the run, in about
#   80 s, but its LLCs at the final weights (the calibrated setting, one net at a time) ran past a 330 s limit;
#   moons-diffusion `--full` trained its 10 runs in under a minute;
# - on one H100 (2026-11-27), with the calibrated LLCs in one vectorized pass, mnist-seeds `--full` took 155 s end
#   to end; at once on the same card, moons-diffusion `--full` took 139 s and moons-posterior `--full` 210 s; 12
#   of mnist-architectures' 17 runs finished within 235 s on 12 workers (109–207 s each), and agree with the
#   committed CPU run (the [benchmarks page](bench.html) has both reports).
#
# No multi-GPU run has been timed by this project: the devices lent were single H100s, 15 minutes each. The
# per-phase profile of mnist-seeds is on the [benchmarks page](bench.html).

# %%
import pandas as pd
from fracsgd.ledger.provenance import COMPACT
_rows = []
for prov_file in sorted(COMPACT.glob('*/*/provenance.json')):
    prov, timing = json.loads(prov_file.read_text()), prov_file.with_name('timing.json')
    if not timing.exists() or not prov.get('scale', '').startswith(('paper scale', 'extended')):
        continue
    _rows.append(dict(study=prov['study'], preset=prov['preset'], scale=prov['scale'].split(':')[0],
                      runs=len(prov.get('run_keys', [])),
                      worker_minutes=round(json.loads(timing.read_text())['seconds'] / 60, 1),
                      device=prov.get('session', {}).get('device') or 'cpu',
                      date=(prov.get('session', {}).get('time') or '')[:10]))
costs = pd.DataFrame(_rows)
assert {'mnist-seeds', 'mnist-architectures', 'moons-diffusion', 'moons-posterior'} <= set(costs.study), costs
assert (costs.worker_minutes > 0).all() and (costs.runs >= 1).all()
costs


# %% [markdown]
# `report_study` reads everything it needs from the folder: the study and its configuration from `meta.json`,
# never from the caller's environment. A folder whose runs all failed is refused in one line with the count, the
# first error and where the rest are; one where only some failed is reported with a warning that says so.

# %%
#| export
class StudyFailed(ValueError):
    "No run of the study finished."

def _failures(folder) -> str:
    keys = failed_keys(folder)
    first = json.loads((Path(folder) / 'errors' / f'{keys[0]}.json').read_text())
    message = str(first.get('message', '')).splitlines()[0][:200] if first.get('message') else ''
    return (f"first error: {first.get('type')}: {message}; every error with its traceback is in "
            f"{Path(folder) / 'errors'}")

def study_config(folder, study=None):
    "The study (default: the registered one named there) and the configuration that made `folder`, from `meta.json`."
    from fracsgd.studies import get_study   # the lazy registry (the one import that points up)
    meta = read_meta(folder)
    study = get_study(study or meta['study'])
    if 'config' not in meta:
        raise ValueError(f"{folder} was written before study folders recorded their configuration: run "
                         f"`fracsgd run {study.name} --out {folder}` with the preset that made it (finished runs "
                         "are reused) to record it")
    return study, study.config_from_record(meta['config'])

def report_study(folder, study=None) -> dict:
    "Report the study in `folder` with the configuration recorded there; refuse a folder where no run finished."
    study, cfg = study_config(folder, study)
    counts = status(folder)
    total = sum(counts.values())
    if counts['done'] == 0:
        if counts['failed']:
            raise StudyFailed(f"{folder}: all {counts['failed']} of {total} runs failed; {_failures(folder)}")
        raise StudyFailed(f"{folder}: none of its {total} runs has finished yet: run the study first")
    if counts['failed']:
        warnings.warn(f"{folder}: {counts['failed']} of {total} runs failed, the report covers the "
                      f"{counts['done']} that finished; {_failures(folder)}", stacklevel=2)
    return study.report(folder, cfg)
