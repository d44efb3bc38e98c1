# %% [markdown]
# # Sweeps
#
# > Run a list of configurations on a pool of local processes or on Ray, resumably: each finished run is stored once, under a key computed from its configuration.

# %%
#| default_exp experiment.sweep

# %%
#| hide
from nbdev.showdoc import *

# %%
#| export
from __future__ import annotations
import dataclasses, hashlib, importlib.util, json, math, multiprocessing, os, shutil, sys, threading, time, traceback, warnings
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
import torch
from tqdm.auto import tqdm

from fracsgd.core import cpu_cores, key_fields, require
from fracsgd.experiment.store import (RESERVED, ConfigChanged, open_study, locked, tidy, plan_change, save_plan, save_run,
                           save_error, done_keys, status, write_runs, split_result)


# %% [markdown]
# A study that trains 500 nets, or 18 architectures × 5 seeds, is a list of runs that do not talk to each
# other. This chapter runs such a list. A **run** is a top-level function `fn(config) -> dict` applied to one
# configuration, a dataclass; what it returns is stored by the [results store](store.html). A **sweep** is a
# name, that function, the list of configurations and, optionally, the device the runs use, which is recorded
# with the results. A study does not call this chapter directly: the [runner](runner.html) builds the sweep, with
# a function that places each run's data and models, and the configuration never says where a run runs.
#
# The runner adds three things to a plain `map`: it knows which runs are already finished and skips them
# (so a killed sweep resumes), it records a run that raises and goes on, and it runs on two backends, a pool
# of local processes (`concurrent.futures`) or a Ray cluster, with the same results.

# %% [markdown]
# ## The run key
#
# A run is identified by its configuration alone: the key is a SHA-256 hash of the configuration written as
# canonical JSON, the dataclass's qualified name plus its fields with keys sorted, cut to 16 hex digits
# (64 bits). JSON of numbers, strings, booleans and lists is the same text in every process, on every machine
# and in every Python version, which `hash()` and `pickle` do not promise. Consequences worth knowing:
#
# * a changed configuration is a new key, so an old result is never silently reused for a new setting;
# * two equal configurations are one run, however often they appear in the list;
# * `1` and `1.0` are different values to JSON, hence different keys; tuples and lists are the same;
# * the class name is part of the key, its module is not, so moving a class to another module keeps the keys.
#
# A field that JSON cannot hold (a function, a tensor, an object) is refused with a `ValueError` naming the
# field: a key that depended on an object's memory address would change on every start. So is a field named
# like a column the store adds to the runs table (`key`, `status`, `seconds`, `error`).
#
# A field that once belonged to a configuration and no longer does (the device, which the runner now decides)
# would change every stored key if it simply vanished. A configuration class keeps such fields in a class
# attribute `RETIRED_FIELDS = {'device': None}`: their names and the value every stored key was made with enter
# the record and the key, and nothing else reads them.

# %%
#| export
def _canonical(value, where: str):
    "`value` as plain JSON types; raise `ValueError` naming `where` when it has none."
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)
    if isinstance(value, np.generic) and np.ndim(value) == 0:
        return _canonical(value.item(), where)
    if isinstance(value, (list, tuple)):
        return [_canonical(v, f'{where}[{i}]') for i, v in enumerate(value)]
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return {k: _canonical(v, f'{where}.{k}') for k, v in value.items()}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _canonical(getattr(value, f.name), f'{where}.{f.name}') for f in key_fields(value)}
    raise ValueError(f'configuration field {where!r} holds a {type(value).__name__}, which has no stable '
                     'serialisation: use numbers, strings, booleans, None, or lists/dicts of them')

def config_record(config) -> dict:
    "The fields of the dataclass instance `config` as canonical JSON types (nested dataclasses become dicts)."
    if not dataclasses.is_dataclass(config) or isinstance(config, type):
        raise ValueError(f'a run configuration must be a dataclass instance, not {type(config).__name__}')
    clash = [f.name for f in dataclasses.fields(config) if f.name in RESERVED]
    if clash:
        raise ValueError(f'configuration field {clash[0]!r} has the name of a column the store adds')
    retired = {k: _canonical(v, k) for k, v in getattr(type(config), 'RETIRED_FIELDS', {}).items()}
    return {**retired, **{f.name: _canonical(getattr(config, f.name), f.name) for f in key_fields(config)}}


# %%
@dataclass(frozen=True)
class Toy:
    "A run configuration for the examples of this chapter."
    seed: int
    lr: float = 0.1
    hidden: tuple = (8, 8)

assert config_record(Toy(0, hidden=(np.int64(8), 8))) == dict(seed=0, lr=0.1, hidden=[8, 8])
for bad in [Toy(0, lr=lambda s: 0.1), Toy(0, hidden=(8, torch.ones(2)))]:
    try:
        config_record(bad)
        raise AssertionError('must be refused')
    except ValueError as e:
        print(e)


# %%
#| export
def run_key(config) -> str:
    "A 16-hex-digit key of `config`, the same in every process, machine and Python version."
    text = json.dumps([type(config).__qualname__, config_record(config)], sort_keys=True,
                      separators=(',', ':'), ensure_ascii=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


# %%
assert run_key(Toy(0)) == run_key(Toy(0, 0.1, [8, 8]))           # equal configurations, one key
assert run_key(Toy(0)) != run_key(Toy(0, lr=0.2)) != run_key(Toy(1))
assert run_key(Toy(0)) == '078ff7cd0901becb', run_key(Toy(0))      # fixed: the same on every machine

@dataclass(frozen=True)
class Placed:                                 # a configuration as it was, with the device in it
    lr: float
    device: str | None = None
before = run_key(Placed(0.1))

@dataclass(frozen=True)
class Placed:                                 # the same configuration once the runner decides the device
    lr: float
    RETIRED_FIELDS = {'device': None}
assert run_key(Placed(0.1)) == before and config_record(Placed(0.1)) == dict(lr=0.1, device=None)


# %% [markdown]
# The fixed key in the check above is the promise made to users: a study folder written today on one machine
# resumes tomorrow on another. `unique_runs` maps each key to its configuration, keeping the first of
# duplicates and the list's order.

# %%
#| export
def unique_runs(configs: Sequence) -> dict:
    "`{key: config}` for `configs`, duplicates dropped, order kept."
    runs = {}
    for c in configs:
        runs.setdefault(run_key(c), c)
    return runs


# %%
assert list(unique_runs([Toy(0), Toy(1), Toy(0)])) == [run_key(Toy(0)), run_key(Toy(1))]


# %% [markdown]
# ## Executing one run
#
# `execute` is what a worker runs: it calls `fn(config)`, checks that the result is something the store can
# hold, and returns the outcome as `('done', result, seconds)` or `('failed', error, seconds)`. The error is a
# dict with the exception's type, message and formatted traceback, built in the worker where the traceback
# still exists. An exception never leaves `execute`, so one failing run cannot stop a sweep.

# %%
#| export
def error_record(exc: BaseException) -> dict:
    "Type, message and traceback of `exc`, as plain strings."
    return dict(type=type(exc).__name__, message=str(exc),
                traceback=''.join(traceback.format_exception(type(exc), exc, exc.__traceback__)))


# %%
try:
    1 / 0
except ZeroDivisionError as e:
    rec = error_record(e)
assert rec['type'] == 'ZeroDivisionError' and rec['traceback'].startswith('Traceback')
rec['message']


# %%
#| export
def execute(fn: Callable, config) -> tuple:
    "Run `fn(config)`; return `('done', result, seconds)` or `('failed', error_record, seconds)`."
    t0 = time.perf_counter()
    try:
        result = fn(config)
        split_result(result, config_record(config))
        return 'done', result, time.perf_counter() - t0
    except Exception as e:
        return 'failed', error_record(e), time.perf_counter() - t0


# %%
import pandas as pd

def toy_run(cfg: Toy) -> dict:
    "Example run: a seeded random walk, its final distance and its trajectory."
    if cfg.lr > 1:
        raise FloatingPointError(f'lr={cfg.lr} diverges')
    g = torch.Generator().manual_seed(cfg.seed)
    walk = (cfg.lr * torch.randn(100, generator=g)).cumsum(0).abs()
    return dict(final_R=walk[-1], trajectory=pd.DataFrame({'step': range(100), 'R': walk.numpy()}))

state, res, sec = execute(toy_run, Toy(0))
assert state == 'done' and set(res) == {'final_R', 'trajectory'}
state, err, sec = execute(toy_run, Toy(0, lr=2.0))
assert state == 'failed' and err['type'] == 'FloatingPointError' and 'toy_run' in err['traceback']
err['message']


# %% [markdown]
# ## Backends
#
# **Local** (the default) is a `concurrent.futures.ProcessPoolExecutor` with `workers` processes (default: one
# per core that `cpu_cores` counts). Each worker gives PyTorch its share of those cores, so two workers on two
# cores do not fight over four threads (set `FRACSGD_CPUS` to give a sweep fewer cores than the machine has). The run function must be importable by the workers: a top-level function of a module, or
# of a notebook or script on platforms that start workers by `fork` (Linux with Python up to 3.13).
#
# **Ray** is an optional extra (`pip install "fracsgd[ray]"`). Each run becomes one Ray task needing one CPU,
# with Ray's automatic retries turned off (a retried run could be executed twice). Without `address` the
# runner starts a local Ray with `workers` CPUs and stops it at the end; the local workers see the driver's
# `sys.path`, so a run function defined in a test module or a script next to the data works as on the local
# pool. With `address` (e.g. `ray://head:10001`, or `auto` on a cluster node) it joins that cluster, whose
# workers must be able to import `fracsgd` and the run function's module. Recent Ray versions protect a
# cluster with a token (local clusters from Ray 2.59 on): a driver joining one needs `RAY_AUTH_MODE=token` set
# before Ray is imported, and the token, which Ray keeps in `~/.ray/auth_token` on the machine that made it.
# A Ray session the caller already started is used as it is. Ray's object references turn into ordinary
# `concurrent.futures` futures, so both backends feed the same loop below.

# %%
#| export
def _set_threads(n: int, environ: dict | None = None):
    """A worker's start: the driver's environment as it is now (a fork server started earlier holds an older one),
    its share of the CPU's threads, and (Linux) an end when the process that started it ends."""
    if environ is not None:
        os.environ.clear()
        os.environ.update(environ)
    torch.set_num_threads(n)
    try:                                       # PR_SET_PDEATHSIG: a killed driver leaves no idle workers behind
        import ctypes, signal
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)
    except (OSError, AttributeError):
        pass

def local_pool(workers: int | None = None, start_method: str | None = None) -> ProcessPoolExecutor:
    """A process pool of `workers` (default: `cpu_cores()`) whose workers split the CPU's threads between them;
    `start_method` 'spawn' or 'forkserver' for work that uses CUDA. By default a worker with one thread is forked,
    one with several starts from a fork server (a forked OpenMP pool can hang)."""
    workers = workers or cpu_cores()
    threads = max(1, cpu_cores() // workers)
    if start_method is None and threads > 1 and 'forkserver' in multiprocessing.get_all_start_methods():
        start_method = 'forkserver'
    context = multiprocessing.get_context(start_method) if start_method else None
    return ProcessPoolExecutor(workers, mp_context=context, initializer=_set_threads,
                               initargs=(threads, dict(os.environ)))


# %% [markdown]
# How a worker starts matters. Forking is fast and lets a run function defined in a notebook reach the worker,
# but a process whose OpenMP thread pool has run (any multi-threaded PyTorch operation) can leave a forked child
# that uses several threads hanging at its first parallel operation: the child inherits the pool's locks, not its
# threads. So a worker that gets one thread is forked, and a worker that gets several starts from a fork server,
# a clean process that has never run OpenMP (its run functions must then be importable, as in every study).

# %%
with local_pool(2) as pool:
    assert [f.result()[0] for f in [pool.submit(execute, toy_run, Toy(s)) for s in range(3)]] == ['done'] * 3


# %%
#| export
@contextmanager
def _driver_path():
    "Set `PYTHONPATH` to this process's `sys.path` for the block: a local Ray's processes inherit it."
    saved = os.environ.get('PYTHONPATH')
    os.environ['PYTHONPATH'] = os.pathsep.join(p for p in sys.path if p)
    try:
        yield
    finally:
        if saved is None:
            del os.environ['PYTHONPATH']
        else:
            os.environ['PYTHONPATH'] = saved

class RayPool:
    """Ray tasks behind the `submit`/`shutdown` interface of `concurrent.futures` executors. A task asks for one CPU
    and `gpus` GPUs (a fraction lets several runs share a card; Ray then places them on the GPUs it has)."""
    def __init__(self, workers: int | None = None, address: str | None = None, gpus: float = 0.0):
        if not (isinstance(gpus, (int, float)) and 0 <= gpus):
            raise ValueError(f"gpus per run must be a number >= 0, got {gpus!r}")
        ray = require('ray')
        self.gpus = float(gpus)
        self.ray, self.refs, self.started = ray, [], not ray.is_initialized()
        joining = address or os.environ.get('RAY_ADDRESS')
        if self.started and joining:
            ray.init(address=address, logging_level='WARNING')
        elif self.started:
            for attempt in (1, 2):      # a loaded machine can miss Ray's fixed 30-s raylet wait: try once more
                try:
                    with _driver_path():
                        ray.init(num_cpus=workers or cpu_cores(), include_dashboard=False, logging_level='WARNING')
                    break
                except Exception as e:
                    if attempt == 2 or 'timed out during startup' not in str(e):
                        raise
                    ray.shutdown()
        self.tasks = {}

    def submit(self, fn, *args) -> Future:
        "Run `fn(*args)` as a Ray task needing one CPU and `gpus` GPUs; return its future."
        if fn not in self.tasks:
            self.tasks[fn] = self.ray.remote(num_cpus=1, num_gpus=self.gpus, max_retries=0)(fn)
        ref = self.tasks[fn].remote(*args)
        self.refs.append(ref)
        return ref.future()

    def shutdown(self, wait: bool = True, cancel_futures: bool = False):
        "Cancel what is still running when `cancel_futures`; stop Ray if this pool started it."
        if cancel_futures:
            for ref in self.refs:
                self.ray.cancel(ref, force=True)
        if self.started:
            self.ray.shutdown()


# %% [markdown]
# The check below starts a Ray session itself, as a user on a laptop or a cluster node may. `RayPool` then
# joins that session and leaves it running when it shuts down; the last section of this chapter runs a whole
# sweep in it. Starting Ray takes several seconds.

# %%
import importlib.util
has_ray = importlib.util.find_spec('ray') is not None          # ray is a dev requirement: true in CI
if has_ray:
    import ray
    ray.init(num_cpus=2, include_dashboard=False, logging_level='WARNING')
    pool = RayPool()
    state, res, sec = pool.submit(execute, toy_run, Toy(0)).result()
    assert state == 'done' and res['final_R'] == execute(toy_run, Toy(0))[1]['final_R']
    pool.shutdown()
    assert ray.is_initialized()                               # the caller's session is the caller's to stop


# %% [markdown]
# ## The runner
#
# `run_sweep` opens (or creates) the study folder, refusing one that holds another study, takes the folder's
# lock, deletes what a killed sweep left half-written and records the plan, with a `ConfigChanged` warning when
# the folder's earlier plan had runs that the new one leaves out (see the [results store](store.html)). It then
# submits the runs that are not finished (failed runs count as not finished and run again), at most `workers`
# at a time, and stores each outcome as it arrives: a finished run through `save_run`, a failed one through
# `save_error`. Results are written by this process, not by the workers, so a Ray cluster needs no shared file
# system. One progress bar counts runs; the last line printed counts the runs done and failed in this call and
# those skipped because an earlier call had finished them.
#
# If a local worker process dies (a crash, the out-of-memory killer), `concurrent.futures` marks the whole
# pool broken: the runs then in flight are recorded as failed with `BrokenProcessPool`, the runner starts a
# new pool and goes on. Which of those runs killed the worker cannot be told, so all of them get the error
# and run again on the next call.

# %%
#| export
@dataclass(frozen=True)
class Sweep:
    "A named list of run configurations, the top-level function that runs one, and the device it uses."
    name: str
    fn: Callable
    configs: Sequence
    device: str | None = None          # recorded in meta.json; default: `default_device()`
    meta: dict | None = None           # more fields for meta.json (the runner records the preset here)
    cost: Callable | None = None       # config -> its relative work, for the time left (default: runs cost alike)

    def weights(self) -> dict:
        "`{key: weight}` of the unique runs: their relative work, scaled to sum to the number of runs."
        runs = unique_runs(self.configs)
        work = {k: float(self.cost(c)) if self.cost else 1.0 for k, c in runs.items()}
        if not all(math.isfinite(w) and w > 0 for w in work.values()):
            raise ValueError(f"{self.name}: the cost of every run must be a positive number, got {work}")
        scale = len(work) / sum(work.values())
        return {k: w * scale for k, w in work.items()}


# %%
toy = Sweep('toy', toy_run, [Toy(0), Toy(1), Toy(0)])
assert len(unique_runs(toy.configs)) == 2


# %%
#| export
def _check_backend(backend: str):
    "Refuse an unknown backend, or `ray` when it is not installed, before anything is written."
    if backend not in ('local', 'ray'):
        raise ValueError(f"unknown backend {backend!r}: use 'local' or 'ray'")
    if backend == 'ray' and importlib.util.find_spec('ray') is None:
        raise ImportError('the ray backend needs ray: pip install "fracsgd[ray]"')

def _pool(backend: str, workers: int | None, address: str | None, start_method: str | None = None,
          gpus: float = 0.0):
    return local_pool(workers, start_method) if backend == 'local' else RayPool(workers, address, gpus)

def _outcomes(make_pool, fn: Callable, runs: dict, todo: list, limit: int):
    "Yield `(key, outcome)` as runs finish, keeping at most `limit` in flight; replace a broken local pool."
    if not todo:                                         # every run done: no pool to start (Ray takes seconds)
        return
    pool, queue, flying = make_pool(), list(reversed(todo)), {}
    try:
        while queue or flying:
            while queue and len(flying) < limit:
                try:
                    fut = pool.submit(execute, fn, runs[queue[-1]])
                except BrokenProcessPool:                # broken before its failed runs came back
                    pool.shutdown(wait=False)
                    pool = make_pool()
                    continue
                flying[fut] = queue.pop(), pool
            finished, _ = wait(flying, return_when=FIRST_COMPLETED)
            for fut in finished:
                key, its_pool = flying.pop(fut)
                try:
                    yield key, fut.result()
                except Exception as e:                   # the worker died: no result, no traceback of the run
                    yield key, ('failed', error_record(e), math.nan)
                    if isinstance(e, BrokenProcessPool) and its_pool is pool:
                        pool.shutdown(wait=False)
                        pool = make_pool()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


# %%
few = unique_runs([Toy(0), Toy(1), Toy(0, lr=2.0)])
got = dict(_outcomes(partial(_pool, 'local', 2, None), toy_run, few, list(few), limit=2))
assert set(got) == set(few) and sorted(o[0] for o in got.values()) == ['done', 'done', 'failed']

# %% [markdown]
# **Progress.** The bar counts finished runs, and while a run is in flight it shows the run's own step and moves by
# the fraction done: a run that calls `fracsgd.core.report_progress` (the ensemble trainer does at every step)
# writes it to `<folder>/progress/<key>.json` through the runner's `progress_writer`, from whichever process or
# machine runs it (on a shared folder), and `ProgressWatcher` reads those files every two seconds. The time left
# tqdm prints then counts the part of each run already done. Runs of one sweep can differ in cost by an order of
# magnitude (the MNIST ablations' batch-32 runs take 14 times the batch-256 ones): a sweep's `cost` gives each
# run's relative work, and the bar counts work, not runs, so that its time left does not take a long run for a
# short one.

# %%
#| export
PROGRESS_DIR = 'progress'             # where a run in flight says how far it is (the runner's progress_writer)

class ProgressWatcher:
    """The sweep's progress bar `bar`: `done` finished work plus the fraction of each run in flight, read from the
    progress files in `folder` every `every` seconds by a thread; its postfix names the latest run's step. A run
    that goes on to a later phase (its evaluation, say) restarts its count: the bar keeps the run's largest fraction
    so far, so it never goes back, while the postfix says what the run is doing now. `weights`: each run's share
    of the work (from the sweep's cost of each run; default 1 each), so that the time left counts a long run as long."""
    def __init__(self, folder, bar, done: float, every: float = 2.0, enabled: bool = True,
                 weights: dict | None = None, runs: tuple[int, int] | None = None):
        self.folder, self.bar, self.done, self.lock = Path(folder), bar, done, threading.Lock()
        self.weights, self.runs, self.name = weights or {}, list(runs) if runs else None, getattr(bar, 'desc', '')
        self.fraction = {}                                          # run key -> largest fraction reported
        shutil.rmtree(self.folder, ignore_errors=True)            # what a stopped sweep left
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._loop, args=(every,), daemon=True) if enabled else None
        if self.thread:
            self.thread.start()

    def reports(self) -> list[dict]:
        out = []
        for f in self.folder.glob('*.json'):
            try:
                out.append(json.loads(f.read_text()))
            except (OSError, ValueError):                         # gone, or being replaced: next time
                pass
        return out

    def show(self) -> None:
        with self.lock:
            now = self.reports()
            for r in now:
                if r.get('total'):
                    f = min(1.0, r['done'] / r['total'])
                    self.fraction[r['key']] = max(f, self.fraction.get(r['key'], 0.0))
            self.bar.n = self.done + sum(self.fraction.get(r['key'], 0.0) * self.weights.get(r['key'], 1.0)
                                         for r in now)
            if self.runs:                                          # runs done / runs, beside the work done
                self.bar.set_description_str(f'{self.name}, {self.runs[0]}/{self.runs[1]} runs done', refresh=False)
            if now:
                r = max(now, key=lambda r: r['time'])
                self.bar.set_postfix_str(f"run {r['key'][:8]}: {r['what']} {r['done']:,}/{r['total']:,}"
                                         + (f' (+{len(now) - 1} more)' if len(now) > 1 else ''), refresh=False)
            else:
                self.bar.set_postfix_str('', refresh=False)
            self.bar.refresh()

    def finished(self, key: str) -> None:
        with self.lock:
            self.done += self.weights.get(key, 1.0)
            if self.runs:
                self.runs[0] += 1
            self.fraction.pop(key, None)
            (self.folder / f'{key}.json').unlink(missing_ok=True)
        self.show()

    def _loop(self, every: float) -> None:
        while not self._stop.wait(every):
            self.show()

    def stop(self) -> None:
        self._stop.set()
        if self.thread:
            self.thread.join()
        shutil.rmtree(self.folder, ignore_errors=True)


# %%
#| export
def _store(folder, key: str, record: dict, outcome: tuple) -> str:
    "Store one outcome; a result the store cannot write (e.g. a table pyarrow refuses) becomes a failure."
    state, payload, seconds = outcome
    if state == 'done':
        try:
            save_run(folder, key, record, payload, seconds)
            return 'done'
        except (TypeError, ValueError, OSError) as e:
            payload = error_record(e)
    save_error(folder, key, record, payload, seconds)
    return 'failed'

def run_sweep(sweep: Sweep, folder, backend: str = 'local', workers: int | None = None,
              address: str | None = None, progress: bool = True, start_method: str | None = None,
              gpus_per_run: float = 0.0) -> dict:
    """Run the unfinished runs of `sweep` into the study folder `folder`; return done/failed/skipped counts.
    `gpus_per_run`: the GPUs a Ray task asks for (the local pool ignores it: its workers share the driver's)."""
    _check_backend(backend)
    runs = unique_runs(sweep.configs)        # a configuration that has no key fails before any folder exists
    folder = open_study(folder, sweep.name, sweep.device, sweep.meta)
    with locked(folder):
        tidy(folder)
        change = plan_change(folder, {k: config_record(c) for k, c in runs.items()})
        if change:
            warnings.warn(change, ConfigChanged, stacklevel=2)
        save_plan(folder, runs)
        finished = set(done_keys(folder))
        todo = [k for k in runs if k not in finished]
        counts = dict(done=0, failed=0, skipped=len(runs) - len(todo))
        limit = workers or (cpu_cores() if backend == 'local' else len(todo)) or 1
        weights = sweep.weights()                        # each run's share of the work: the bar counts work
        bar = tqdm(total=len(runs), initial=sum(weights.get(k, 0.0) for k in finished), desc=sweep.name, unit='run',
                   disable=not progress,
                   bar_format='{desc} |{bar}| {percentage:3.0f}% of the work [{elapsed}<{remaining}{postfix}]')
        watcher = ProgressWatcher(Path(folder) / PROGRESS_DIR, bar, bar.n, enabled=progress, weights=weights,
                                  runs=(counts['skipped'], len(runs)))
        watcher.show()
        outcomes = _outcomes(partial(_pool, backend, workers, address, start_method, gpus_per_run), sweep.fn, runs,
                             todo, limit)
        try:
            for key, outcome in outcomes:
                counts[_store(folder, key, config_record(runs[key]), outcome)] += 1
                watcher.finished(key)
        finally:
            outcomes.close()                             # shuts the pool down now, also on an error
            watcher.stop()
            bar.close()
        write_runs(folder)
    print(f"{sweep.name}: {counts['done']} done, {counts['failed']} failed, {counts['skipped']} skipped "
          f"(finished earlier); results in {folder}")
    return counts


# %% [markdown]
# `sweep_status` answers "how far is it?" for a sweep, counting its runs as done, failed or pending; the
# folder alone answers the same through `status` in the store, from the plan of its latest sweep.

# %%
#| export
def sweep_status(sweep: Sweep, folder) -> dict:
    "Done, failed and pending counts of `sweep`'s runs in `folder`."
    return status(folder, unique_runs(sweep.configs))


# %% [markdown]
# ## A sweep, interrupted and resumed
#
# Six toy runs, one of which diverges. The first call runs only four of them, as a stand-in for a sweep that
# was killed; the second call gets the whole list, skips the four and runs the two others. A call that finds
# every run done starts no pool at all, which matters on Ray, whose local cluster takes seconds to come up (13 s
# on the 2-core development machine, measured 2026-12-03, for a smoke study resumed with nothing left to run).

# %%
import tempfile
from pathlib import Path
from fracsgd.experiment.store import load_study

configs = [Toy(seed) for seed in range(5)] + [Toy(0, lr=2.0), Toy(0)]     # a duplicate: runs once
folder = Path(tempfile.mkdtemp()) / 'toy'
first = run_sweep(Sweep('toy', toy_run, configs[:4]), folder, workers=2, progress=False)
assert sweep_status(Sweep('toy', toy_run, configs), folder) == dict(done=4, failed=0, pending=2)
again = run_sweep(Sweep('toy', toy_run, configs), folder, workers=2, progress=False)
assert first == dict(done=4, failed=0, skipped=0) and again == dict(done=1, failed=1, skipped=4)
study = load_study(folder)
study.runs

# %% [markdown]
# The failed run keeps its error, traceback included, in `errors/<key>.json`; the runs table shows its type
# and message. Changing a configuration gives new keys: the sweep with `lr=0.05` below runs everything again
# and leaves the older runs on disk, out of the runs table, and says so.

# %%
failed = study.runs[study.runs.status == 'failed'].key.item()
assert 'diverges' in json.loads((folder / 'errors' / f'{failed}.json').read_text())['traceback']
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter('always')
    changed = run_sweep(Sweep('toy', toy_run, [Toy(s, lr=0.05) for s in range(2)]), folder, progress=False)
assert [w.category for w in caught] == [ConfigChanged] and 'lr: ' in str(caught[0].message), caught
print(caught[0].message)
assert changed == dict(done=2, failed=0, skipped=0) and len(load_study(folder).runs) == 2
assert len(load_study(folder, everything=True).runs) == 8

# %% [markdown]
# ## The same sweep on Ray
#
# When Ray is installed, the same six runs on Ray give the same table as on the local pool, apart from the
# wall times. This uses the Ray session started above; without one, `backend='ray'` starts a local Ray with
# `workers` CPUs, and `address=` joins a cluster.

# %%
if has_ray:
    on_ray, on_pool = Path(tempfile.mkdtemp()) / 'toy', Path(tempfile.mkdtemp()) / 'toy'
    counts = run_sweep(Sweep('toy', toy_run, configs), on_ray, backend='ray', progress=False)
    assert counts == dict(done=5, failed=1, skipped=0)
    run_sweep(Sweep('toy', toy_run, configs), on_pool, backend='local', workers=2, progress=False)
    ray_runs, pool_runs = (load_study(f).runs.drop(columns='seconds') for f in (on_ray, on_pool))
    pd.testing.assert_frame_equal(ray_runs, pool_runs)
    ray.shutdown()

# %%
#| hide
import nbdev
nbdev.nbdev_export()
