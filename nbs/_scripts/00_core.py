# %% [markdown]
# # Core
#
# > What every chapter shares: the default device, folders, seeds, result files written whole.

# %%
#| default_exp core

# %%
#| hide
from nbdev.showdoc import *

# %%
#| export
from __future__ import annotations
import dataclasses, math, os, random, tempfile, time, warnings
from contextlib import contextmanager
from pathlib import Path
from typing import Callable

import numpy as np
import pandas as pd
import torch


# %% [markdown]
# ## Device
#
# `default_device` picks CUDA when PyTorch can see a GPU and the CPU otherwise. Only the [runner](runner.html)
# (and the benchmarks, which measure a device) ask it: a study never picks a device, the runner places its models
# and data, and the library's functions compute where the models they are given are.

# %%
#| export
def default_device() -> torch.device:
    "`cuda` when a GPU is visible to PyTorch, else `cpu`."
    return torch.device('cuda' if torch.cuda.is_available() else 'cpu')


# %%
assert default_device().type in ('cuda', 'cpu')
default_device()


# %% [markdown]
# On the CPU, the runner and the sweep pool share the cores among their workers. `cpu_cores` says how many
# there are to share: the cores this process may run on (its CPU affinity, which a container or `taskset`
# narrows), or `FRACSGD_CPUS` when a caller that runs several jobs at once has given each its part. Without
# that, two jobs on two cores would each start two threads per worker, and on small models the threads wait for
# each other far more than they compute (two chapter notebooks run side by side took 2.7 times as
# long that way, and the whole documentation build 1.4 times).

# %%
#| export
def cpu_cores() -> int:
    "The CPU cores this process may use: `FRACSGD_CPUS` if set, else the size of its CPU affinity set."
    given = os.environ.get('FRACSGD_CPUS', '').strip()
    if given:
        if not given.isdigit() or int(given) < 1:
            raise ValueError(f"FRACSGD_CPUS must be a positive whole number of cores, got {given!r}")
        return int(given)
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:                         # macOS and Windows have no affinity sets
        return os.cpu_count() or 1


def share_of_cores(jobs: int, environ=None) -> dict:
    """A copy of `environ` (default: this process's) that gives one of `jobs` jobs running at once its share of
    `cpu_cores()`: `FRACSGD_CPUS` for fracsgd, `OMP_NUM_THREADS` and `MKL_NUM_THREADS` for torch's default thread
    count. Values already set are kept."""
    env = dict(os.environ if environ is None else environ)
    share = str(max(1, cpu_cores() // max(1, jobs)))
    for name in ('FRACSGD_CPUS', 'OMP_NUM_THREADS', 'MKL_NUM_THREADS'):
        env.setdefault(name, share)
    return env


# %%
import unittest.mock
assert share_of_cores(2, {})['OMP_NUM_THREADS'] == str(max(1, cpu_cores() // 2))
assert share_of_cores(2, {'OMP_NUM_THREADS': '7'})['OMP_NUM_THREADS'] == '7'     # the user's choice stays
assert 1 <= cpu_cores() <= (os.cpu_count() or 1)
with unittest.mock.patch.dict(os.environ, FRACSGD_CPUS='3'):
    assert cpu_cores() == 3
with unittest.mock.patch.dict(os.environ, FRACSGD_CPUS='two'):
    try:
        cpu_cores()
        raise AssertionError('a bad FRACSGD_CPUS must be refused')
    except ValueError as e:
        assert 'FRACSGD_CPUS' in str(e)

# %% [markdown]
# Memory is the other thing the workers share. `available_memory` says how much there is to share: `FRACSGD_MEMORY`
# when it is set (`8G`, `512M`, `1.5GB`, or bytes), else what the kernel reports as available (Linux's
# `MemAvailable`: free memory plus the caches it can drop). The runner compares it with what one worker of a study
# needs ([runner chapter](runner.html)) before it starts anything.

# %%
#| export
_UNITS = {'': 1, 'B': 1, 'K': 2 ** 10, 'KB': 2 ** 10, 'M': 2 ** 20, 'MB': 2 ** 20, 'G': 2 ** 30, 'GB': 2 ** 30,
          'T': 2 ** 40, 'TB': 2 ** 40}

def parse_memory(text) -> int:
    "Bytes in `text`: a number with an optional unit K, M, G or T (powers of 1024; a trailing B is allowed)."
    s = str(text).strip().upper().replace('IB', 'B')
    num = s.rstrip('KMGTB')
    unit = s[len(num):]
    try:
        value = float(num)
    except ValueError:
        value = float('nan')
    if unit not in _UNITS or not value > 0:
        raise ValueError(f"a memory size must be a positive number with an optional unit K, M, G or T, got {text!r}")
    return int(value * _UNITS[unit])

def format_memory(n: float) -> str:
    "`n` bytes in GB (or MB below 1 GB), as a person reads it."
    return f'{n / 2 ** 30:.1f} GB' if n >= 2 ** 30 else f'{n / 2 ** 20:.0f} MB'

def available_memory() -> int:
    "The memory this process's work may use, in bytes: `FRACSGD_MEMORY` if set, else the kernel's available memory."
    given = os.environ.get('FRACSGD_MEMORY', '').strip()
    if given:
        try:
            return parse_memory(given)
        except ValueError as e:
            raise ValueError(f"FRACSGD_MEMORY: {e}") from None
    try:
        with open('/proc/meminfo') as f:
            info = dict(line.split(':', 1) for line in f)
        return int(info['MemAvailable'].split()[0]) * 1024
    except (OSError, KeyError, ValueError):              # not Linux: what the system says is free
        return os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_AVPHYS_PAGES')


# %%
assert parse_memory('4G') == 4 * 2 ** 30 and parse_memory('512m') == 512 * 2 ** 20 and parse_memory('1.5GB') == 3 * 2 ** 29
assert parse_memory(10 ** 9) == 10 ** 9 and parse_memory('2GiB') == 2 * 2 ** 30
for bad in ('four G', '-1G', '3Q', ''):
    try:
        parse_memory(bad)
        raise AssertionError(f'{bad!r} was accepted')
    except ValueError as e:
        assert 'memory size' in str(e)
with unittest.mock.patch.dict(os.environ, FRACSGD_MEMORY='3G'):
    assert available_memory() == 3 * 2 ** 30
assert 0 < available_memory() and format_memory(3 * 2 ** 30) == '3.0 GB' and format_memory(2 ** 29) == '512 MB'
format_memory(available_memory())


# %% [markdown]
# ## Quick or full
#
# Every study has a *smoke* preset (seconds, for the tests), a *quick* one that runs on a 2-core CPU in minutes,
# and the paper's *full* one. The preset is an argument of the [runner](runner.html) (`fracsgd run STUDY --full`),
# recorded in the folder it writes; no environment variable decides it.

# %% [markdown]
# ## Where data and results live
#
# `FRACSGD_DATA` names a directory of datasets in their original formats (for MNIST,
# `MNIST/raw/*-idx?-ubyte.gz`). Nothing from it is ever copied into the repository. `FRACSGD_RESULTS` names
# where studies write figures and tables (default `results/` under the working directory).
#
# The committed results (the claims ledger, the compact study results, the LLC validation tables) live in `nbs/`
# of a source checkout. `source_dir` finds that checkout from where you work, never from where the package is
# installed: `FRACSGD_SOURCE` when it is set, else the nearest folder at or above the working directory that
# holds fracsgd's `settings.ini` and `nbs/`. Outside a checkout it names `FRACSGD_SOURCE` or the working
# directory, so a reader of a committed file gets a missing-file error that says where it looked.

# %%
#| export
def data_dir() -> Path | None:
    "The dataset directory named by `FRACSGD_DATA`, or `None` when it is unset or missing."
    d = os.environ.get('FRACSGD_DATA', '').strip()
    return Path(d).expanduser() if d and Path(d).expanduser().is_dir() else None

def results_dir(*parts: str) -> Path:
    "A results directory (`FRACSGD_RESULTS`, default `./results`) joined with `parts`, created if needed."
    p = Path(os.environ.get('FRACSGD_RESULTS', 'results')).expanduser().joinpath(*parts)
    p.mkdir(parents=True, exist_ok=True)
    return p

def _is_checkout(folder: Path) -> bool:
    ini = folder / 'settings.ini'
    return (folder / 'nbs').is_dir() and ini.is_file() and 'lib_name = fracsgd' in ini.read_text()

def source_dir(start=None) -> Path:
    """The source checkout that holds the committed results in `nbs/`: `FRACSGD_SOURCE`, else the nearest folder at
    or above `start` (default: the working directory) with fracsgd's `settings.ini` and `nbs/`, else `start`."""
    named = os.environ.get('FRACSGD_SOURCE', '').strip()
    if named:
        return Path(named).expanduser().resolve()
    here = Path(start or os.getcwd()).resolve()
    return next((f for f in (here, *here.parents) if _is_checkout(f)), here)

def committed_dir(*parts: str) -> Path:
    "A folder of committed results: `nbs/` of the `source_dir`, joined with `parts`."
    return source_dir() / 'nbs' / Path(*parts) if parts else source_dir() / 'nbs'


# %%
with tempfile.TemporaryDirectory() as d:
    os.environ['FRACSGD_RESULTS'] = d
    assert results_dir('study', 'run1') == Path(d)/'study'/'run1' and (Path(d)/'study'/'run1').is_dir()
    os.environ.pop('FRACSGD_RESULTS')
    (Path(d)/'co'/'nbs'/'deep').mkdir(parents=True)
    (Path(d)/'co'/'settings.ini').write_text('[DEFAULT]\nlib_name = fracsgd\n')
    assert source_dir(Path(d)/'co'/'nbs'/'deep') == (Path(d)/'co').resolve()     # found from below
    assert source_dir(Path(d)) == Path(d).resolve()                               # outside a checkout: where we are
assert (committed_dir('ledger') / 'claims.csv').exists()                          # this page runs in the checkout


# %% [markdown]
# ## Seeds
#
# One call seeds Python, NumPy and PyTorch so a run can be repeated.

# %%
#| export
def seed_everything(seed: int) -> torch.Generator:
    "Seed `random`, NumPy and PyTorch with `seed`; return a `torch.Generator` seeded the same way."
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)
    return torch.Generator().manual_seed(seed)


# %%
seed_everything(3)
a = torch.rand(3)
seed_everything(3)
assert torch.equal(a, torch.rand(3))

# %% [markdown]
# ## Optional packages
#
# The core needs only the scientific stack. Three groups of studies need more, each an extra of the package:
# `vision` (torchvision: the CIFAR-10 and Tiny ImageNet studies, MNIST's download), `language` (transformers,
# datasets, tokenizers: the TinyStories study and the Hugging Face callback) and `ray` (the sweep runner's Ray
# backend). `require` imports one of them, or says which extra installs it.

# %%
#| export
EXTRAS = {'torchvision': 'vision', 'transformers': 'language', 'datasets': 'language', 'tokenizers': 'language',
          'ray': 'ray'}

def require(module: str):
    "Import `module` (e.g. 'torchvision.models'), or raise an ImportError naming the extra that installs it."
    import importlib
    try:
        return importlib.import_module(module)
    except ImportError as e:
        top = module.split('.')[0]
        how = f'pip install "fracsgd[{EXTRAS[top]}]"' if top in EXTRAS else f'pip install {top}'
        raise ImportError(f"{module} is needed here but is not installed ({e}): {how}") from None


# %%
assert require('os.path').join('a', 'b') == os.path.join('a', 'b')
EXTRAS['not_installed_here'] = 'vision'
for name, hint in [('not_installed_here.models', 'pip install "fracsgd[vision]"'), ('nor_this', 'pip install nor_this')]:
    try:
        require(name)
        raise AssertionError('an absent package was imported')
    except ImportError as e:
        assert str(e).startswith(f'{name} is needed here') and str(e).endswith(hint), e
del EXTRAS['not_installed_here']


# %% [markdown]
# ## Settings objects
#
# Settings travel as frozen dataclasses (the SGLD sampler's, the ensemble trainer's, each study's). A changed copy
# comes from `replace_checked`, which names a misspelt field instead of failing with Python's generic error.

# %%
#| export
def replace_checked(settings, **changes):
    "A copy of the dataclass `settings` with `changes`; an unknown name is refused with the list of known ones."
    known = {f.name for f in dataclasses.fields(settings)}
    unknown = sorted(set(changes) - known)
    if unknown:
        raise ValueError(f"unknown {type(settings).__name__} field(s) {unknown}; known: {sorted(known)}")
    return dataclasses.replace(settings, **changes)


# %% [markdown]
# Their fields check themselves when the object is made, with two helpers that name the field and the value:

# %%
#| export
def check_whole(name: str, value, least: int = 1):
    "Refuse `value` unless it is an integer ≥ `least` (1: a positive integer, 0: a non-negative one)."
    if int(value) != value or value < least:
        kind = {1: 'a positive integer', 0: 'a non-negative integer'}.get(least, f'an integer ≥ {least}')
        raise ValueError(f"{name} must be {kind}, got {value!r}")

def check_range(name: str, value, low: float, high: float = math.inf, low_ok: bool = True):
    "Refuse `value` unless it is a finite number in `[low, high)` (`(low, high)` when not `low_ok`)."
    inside = (value >= low if low_ok else value > low) and value < high
    if not (isinstance(value, (int, float)) and math.isfinite(value) and inside):
        raise ValueError(f"{name} must lie in {'[' if low_ok else '('}{low}, {high}), got {value!r}")


# %% [markdown]
# A setting added to a settings object after results were recorded must not change the key under which the
# [sweep runner](sweep.html) filed them, or every old folder would stop resuming. `added_field` marks such a field:
# the run key leaves it out while it holds its default, which is the behaviour before it existed.

# %%
#| export
def added_field(default):
    "A dataclass field added later: left out of run keys while it equals `default` (see `fracsgd.experiment.sweep.run_key`)."
    return dataclasses.field(default=default, metadata={'key': 'omit at default'})

def key_fields(obj) -> list:
    "The fields of the dataclass instance `obj` that enter its run key (all but `added_field`s at their default)."
    return [f for f in dataclasses.fields(obj)
            if not (f.metadata.get('key') == 'omit at default' and getattr(obj, f.name) == f.default)]

def analysis_field(default):
    """A dataclass field that changes how the same experiment is analysed or run (bootstrap resamples, threads,
    which steps are recorded), not the experiment: the [protocol chapter](protocol.html) does not count it as a
    difference from the paper's protocol. It stays in run keys like any field."""
    return dataclasses.field(default=default, metadata={'protocol': 'analysis'})

def is_analysis_field(f: dataclasses.Field) -> bool:
    "Whether the dataclass field `f` was declared with `analysis_field`."
    return f.metadata.get('protocol') == 'analysis'


# %%
check_whole('n_chains', 3)
check_range('lr', 0.1, 0, low_ok=False)
for call, words in [(lambda: check_whole('n_burnin', 1.5, 0), 'n_burnin must be a non-negative integer'),
                    (lambda: check_range('lr', 0.0, 0, low_ok=False), 'lr must lie in (0, inf)'),
                    (lambda: check_range('beta', float('nan'), 0, 1), 'beta must lie in [0, 1)')]:
    try:
        call()
        raise AssertionError(words)
    except ValueError as e:
        assert words in str(e), e


# %%
@dataclasses.dataclass(frozen=True)
class Example:
    lr: float = 0.1
assert replace_checked(Example(), lr=0.2).lr == 0.2

@dataclasses.dataclass(frozen=True)
class Later:
    lr: float = 0.1
    momentum: float = added_field(0.0)
assert [f.name for f in key_fields(Later())] == ['lr'] and [f.name for f in key_fields(Later(momentum=0.9))] == ['lr', 'momentum']
try:
    replace_checked(Example(), lrr=0.2)
    raise AssertionError
except ValueError as e:
    assert "['lrr']" in str(e) and "['lr']" in str(e)


# %% [markdown]
# ## Results written whole or not at all
#
# A run killed halfway must not leave a truncated file that a later run mistakes for a finished result.
# `atomic_path` hands out a temporary name in the destination's directory and renames it onto the destination
# only when the block finishes without error; `os.replace` is atomic on POSIX and Windows within one file
# system.
#
# Results are meant to be shared: a study folder on a cluster is read by colleagues and by web servers.
# `tempfile.mkstemp` creates its file readable by the owner only (0600), and a rename keeps that mode, so
# `atomic_path` gives the finished file the mode an ordinary `open(path, 'w')` would have given it: 0666 with
# the user's umask taken off, which is 0644 under the usual umask 022. `shared_mode` computes that mode (0777
# minus the umask for folders). On Linux it reads the umask from `/proc` rather than setting and restoring it,
# which would briefly change it for every thread of the process.

# %%
#| export
def _umask() -> int:
    "The umask, read from `/proc` on Linux (elsewhere `os.umask` must set it to read it)."
    try:
        line = next(l for l in Path('/proc/self/status').read_text().splitlines() if l.startswith('Umask:'))
        return int(line.split()[1], 8)
    except (OSError, StopIteration):
        mask = os.umask(0o022)
        os.umask(mask)
        return mask

def shared_mode(folder: bool = False) -> int:
    "The mode `open` gives a new file (0666), or `mkdir` a new folder (0777), under the current umask."
    return (0o777 if folder else 0o666) & ~_umask()


# %%
old_mask = os.umask(0o022)
assert shared_mode() == 0o644 and shared_mode(folder=True) == 0o755
os.umask(0o077)
assert shared_mode() == 0o600      # a user who asks for private files gets private files
os.umask(old_mask)


# %%
#| export
@contextmanager
def atomic_path(path):
    "Yield a temporary path next to `path`; on success give it `shared_mode()` and rename it onto `path`."
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f'.{path.name}.', suffix='.tmp')
    os.close(fd)
    try:
        yield Path(tmp)
        os.chmod(tmp, shared_mode())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise

def write_table(df: pd.DataFrame, path) -> Path:
    "Write `df` to `path` atomically: parquet for `.parquet`, else CSV."
    path = Path(path)
    with atomic_path(path) as tmp:
        if path.suffix == '.parquet': df.to_parquet(tmp, index=False)
        else: df.to_csv(tmp, index=False)
    return path

def read_table(path) -> pd.DataFrame:
    "Read a table written by `write_table`."
    path = Path(path)
    return pd.read_parquet(path) if path.suffix == '.parquet' else pd.read_csv(path)

def save_figures(figures: dict, folder, dpi: int = 110) -> dict:
    "Write each matplotlib figure of `figures` (name → figure) to `folder/<name>.png` atomically, close it; return them."
    import matplotlib.pyplot as plt                    # late: the rest of core does not need matplotlib
    for name, fig in figures.items():
        with atomic_path(Path(folder) / f'{name}.png') as tmp:
            fig.savefig(tmp, dpi=dpi, format='png')
        plt.close(fig)
    return figures


# %%
with tempfile.TemporaryDirectory() as d:
    df = pd.DataFrame({'step': [1, 2], 'R': [0.1, 0.2]})
    p = write_table(df, Path(d)/'t.parquet')
    pd.testing.assert_frame_equal(read_table(p), df)
    try:
        with atomic_path(Path(d)/'half.parquet') as tmp:
            tmp.write_text('partial')
            raise KeyboardInterrupt                      # a kill in the middle of writing
    except KeyboardInterrupt:
        pass
    assert sorted(os.listdir(d)) == ['t.parquet'], os.listdir(d)  # nothing half-written is left behind
    old_mask = os.umask(0o022)
    assert (write_table(df, Path(d)/'t.csv').stat().st_mode & 0o777) == 0o644   # readable by other users
    os.umask(old_mask)

# %% [markdown]
# A study's report draws its figures and hands them to `save_figures`, which writes each one beside the tables,
# whole or not at all, and closes it (a long sweep that left its figures open would hold their memory). Here a
# small figure goes through it, and what is shown is the PNG read back from the folder:

# %%
import matplotlib.pyplot as plt
from IPython.display import Image
with tempfile.TemporaryDirectory() as d:
    fig, ax = plt.subplots(figsize=(3.2, 2.2))
    t = np.logspace(0, 3, 50)
    ax.loglog(t, t ** 0.5, label='R ∝ t^½')
    ax.set(xlabel='step t', ylabel='R(t)', title='written by save_figures')
    ax.legend()
    save_figures({'demo': fig}, d, dpi=80)
    png = (Path(d) / 'demo.png').read_bytes()
    assert png[:4] == b'\x89PNG' and not plt.get_fignums()        # a whole PNG, and the figure is closed
    assert sorted(os.listdir(d)) == ['demo.png']                   # no temporary file left behind
Image(png)


# %% [markdown]
# ## Where the time goes
#
# A long run should say which of its parts took the time (the [ensemble trainer](ensemble.html) and the MNIST
# studies keep one per run). `PhaseClock` keeps, per named phase, the wall-clock seconds (`time.perf_counter`) and
# the CPU seconds of the process (`time.process_time`; on a shared machine the wall clock also counts the time other
# jobs had the cores, the CPU clock does not). Phases nest: time spent in an
# inner phase is charged to it alone, so the phases add up to the time inside the outermost ones. A reading costs
# about a microsecond, little enough for every step. On a GPU the clocks see only the host: the time of queued
# kernels lands in the phase that waits for them (the first copy to the host or `.item()` after them).

# %%
#| export
class PhaseClock:
    """Wall-clock and CPU seconds per named phase; `with clock('name'):` times a block (inner phases excluded).
    On a GPU, work is queued and a phase's kernels may run during the next phase: with `sync=True` (default: the
    environment variable `FRACSGD_SYNC_CLOCK=1`) the clock waits for the GPU at every phase boundary, so each phase
    is charged its own GPU time, at the cost of that wait (use it to profile, not for production runs)."""
    def __init__(self, sync: bool | None = None):
        self.wall, self.cpu, self._open = {}, {}, []
        self.sync = os.environ.get('FRACSGD_SYNC_CLOCK', '') == '1' if sync is None else sync

    def _now(self) -> tuple[float, float]:
        if self.sync and torch.cuda.is_available() and torch.cuda.is_initialized(): torch.cuda.synchronize()
        return time.perf_counter(), time.process_time()

    def _charge(self, phase: str, since: tuple, now: tuple) -> None:
        self.wall[phase] = self.wall.get(phase, 0.0) + now[0] - since[0]
        self.cpu[phase] = self.cpu.get(phase, 0.0) + now[1] - since[1]

    @contextmanager
    def __call__(self, phase: str):
        now = self._now()
        if self._open:                                       # the enclosing phase pauses
            self._charge(*self._open[-1], now)
        self._open.append((phase, now))
        try:
            yield self
        finally:
            now = self._now()
            self._charge(*self._open.pop(), now)
            if self._open:
                self._open[-1] = (self._open[-1][0], now)

    def seconds(self, prefix: str = 'seconds_') -> dict:
        "`{prefix + phase: wall seconds}` and `{'cpu_' + prefix + phase: CPU seconds}` of every phase."
        return {**{prefix + k: v for k, v in self.wall.items()}, **{'cpu_' + prefix + k: v for k, v in self.cpu.items()}}


# %%
clock = PhaseClock()                                  # readings at known times: (wall, CPU)
ticks = iter([(0, 0), (2, 1), (5, 2), (6, 2), (9, 3), (10, 4)])
clock._now = lambda: next(ticks)
with clock('outer'):                                  # 0: outer starts
    with clock('inner'):                              # 2: outer pauses after 2 s
        pass                                          # 5: inner took 3 s; outer resumes
    with clock('inner'):                              # 6: outer 1 s more
        pass                                          # 9: inner 3 s more
                                                      # 10: outer 1 s more
assert clock.wall == {'outer': 4, 'inner': 6} and clock.cpu == {'outer': 2, 'inner': 2}, (clock.wall, clock.cpu)
assert clock.seconds() == {'seconds_outer': 4, 'seconds_inner': 6, 'cpu_seconds_outer': 2, 'cpu_seconds_inner': 2}

real = PhaseClock()
with real('sleep'):
    time.sleep(0.05)
assert real.wall['sleep'] >= 0.05 and real.cpu['sleep'] < 0.04           # sleeping takes no CPU time

# %% [markdown]
# ### Progress from inside a run
#
# A long run should say how far it is, but the code that knows (a training loop) is not the code that shows it
# (the sweep runner, perhaps in another process). `report_progress(done, total, what)` is the loop's side: it
# costs a list lookup when nobody listens. `reporting_progress(fn)` is the listener's: inside the block every
# report goes to `fn`.

# %%
#| export
_PROGRESS: list = []

@contextmanager
def reporting_progress(fn: Callable):
    "Inside the block, `report_progress(done, total, what)` calls `fn(done, total, what)`."
    _PROGRESS.append(fn)
    try:
        yield fn
    finally:
        _PROGRESS.remove(fn)

def report_progress(done: int, total: int, what: str = 'step') -> None:
    "Tell the innermost `reporting_progress` listener, if any, that `done` of `total` `what`s are done."
    if _PROGRESS:
        _PROGRESS[-1](done, total, what)


# %%
heard = []
report_progress(1, 10)                                 # nobody listens: nothing happens
with reporting_progress(lambda *a: heard.append(a)):
    report_progress(3, 10, 'training step')
assert heard == [(3, 10, 'training step')] and not _PROGRESS

# %% [markdown]
# ### Resuming inside a run
#
# The sweep runner resumes a study run by run; a run cut off by a stop would start again from its first step. The
# code that can save a run's state part-way (a training loop) is again not the code that knows where it may save it
# (the runner). `checkpointing(folder)` is the runner's side: inside the block, every resumable call of the run
# asks `current_checkpoints()` for its own file, in call order (`0.pt`, `1.pt`, ...), so the same run, started
# again, finds each call's file where it left it. `save_state` writes a state whole or not at all, with a
# `fingerprint` of the call; `load_state` gives it back only to a call with the same fingerprint.

# %%
#| export
CHECKPOINT_EVERY = 300.0          # seconds between two saved states of a resumable call

class Checkpoints:
    "The checkpoint files of one run: one per resumable call, in call order, saved at most every `every` seconds."
    def __init__(self, folder, every: float = CHECKPOINT_EVERY):
        self.folder, self.every, self.calls = Path(folder), float(every), 0
        self.resumed: list[Path] = []                     # the files whose saved state a call took up

    def next_path(self) -> Path:
        "The file of the run's next resumable call."
        self.calls += 1
        return self.folder / f'{self.calls - 1}.pt'

_CHECKPOINTS: list = []

@contextmanager
def checkpointing(folder, every: float = CHECKPOINT_EVERY):
    "Inside the block, resumable calls save their state under `folder` (see `current_checkpoints`)."
    slot = Checkpoints(folder, every)
    _CHECKPOINTS.append(slot)
    try:
        yield slot
    finally:
        _CHECKPOINTS.remove(slot)

def current_checkpoints() -> Checkpoints | None:
    "The innermost `checkpointing` block's `Checkpoints`, or None outside one."
    return _CHECKPOINTS[-1] if _CHECKPOINTS else None

def save_state(path, fingerprint: str, state: dict) -> None:
    "Write `state` (anything `torch.save` takes) to `path`, whole or not at all, under `fingerprint`."
    with atomic_path(path) as tmp:
        torch.save(dict(fingerprint=fingerprint, state=state), tmp)

def load_state(path, fingerprint: str) -> dict | None:
    """The state saved at `path` under the same `fingerprint`, its tensors on the devices they were saved from; None
    when there is none (another call's state is ignored; one saved on a device this machine lacks, with a warning)."""
    path = Path(path)
    if not path.exists():
        return None
    try:
        saved = torch.load(path, weights_only=False)
    except RuntimeError as e:                                  # e.g. saved on a GPU, resumed on a CPU-only machine
        warnings.warn(f"{path}: cannot be resumed here ({str(e).splitlines()[0]}); the call starts again")
        return None
    return saved['state'] if saved.get('fingerprint') == fingerprint else None

class ResumableCall:
    """One resumable call of a run: inside a `checkpointing` block it takes the run's next checkpoint file, `saved`
    is the state the call left there (None: start afresh), `due()` says whether `every` seconds have passed since
    the last save, and `save(state)` writes a state. Outside a block it is inactive: nothing is saved or loaded."""
    def __init__(self, fingerprint: str):
        slot = current_checkpoints()
        self.fingerprint, self.path = fingerprint, slot.next_path() if slot else None
        self.every = slot.every if slot else math.inf
        self.saved = load_state(self.path, fingerprint) if self.path else None
        if self.saved is not None:
            slot.resumed.append(self.path)
        self.last = time.monotonic()

    def due(self) -> bool:
        return self.path is not None and time.monotonic() - self.last >= self.every

    def save(self, state: dict) -> None:
        if self.path is not None:
            save_state(self.path, self.fingerprint, state)
            self.last = time.monotonic()

def rng_states() -> dict:
    "The global random states of Python, NumPy, torch and CUDA (what `seed_everything` seeds)."
    cuda = torch.cuda.get_rng_state_all() if torch.cuda.is_available() and torch.cuda.is_initialized() else None
    return dict(python=random.getstate(), numpy=np.random.get_state(), torch=torch.get_rng_state(), cuda=cuda)

def set_rng_states(states: dict) -> None:
    "Put back the global random states `rng_states()` gave."
    random.setstate(states['python'])
    np.random.set_state(states['numpy'])
    torch.set_rng_state(states['torch'])
    if states['cuda'] is not None and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(states['cuda'])


# %%
import tempfile as _tf
with checkpointing(Path(_tf.mkdtemp()) / 'run', every=0) as slot:
    assert current_checkpoints() is slot
    first, second = current_checkpoints().next_path(), current_checkpoints().next_path()
assert current_checkpoints() is None and (first.name, second.name) == ('0.pt', '1.pt')
save_state(first, 'train 3 nets', dict(step=7, w=torch.ones(3)))
assert load_state(first, 'train 3 nets')['step'] == 7
assert load_state(first, 'train 4 nets') is None and load_state(second, 'train 3 nets') is None
with checkpointing(first.parent, every=0):
    call = ResumableCall('train 3 nets')                # the run's first call again: it finds its state
    assert call.saved['step'] == 7 and call.due() and current_checkpoints().resumed == [first]
assert ResumableCall('train 3 nets').saved is None      # outside a block: inactive
before = rng_states(); a = torch.rand(3); set_rng_states(before)
assert torch.equal(torch.rand(3), a)                   # the same draws again

# %%
#| hide
import nbdev
nbdev.nbdev_export()
