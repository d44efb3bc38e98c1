# %% [markdown]
# # Results store
#
# > One folder per study: a row per run, the runs' trajectory tables, the errors of the runs that failed, and where the numbers came from. `load_study` reads it all back in one call.

# %%
#| default_exp experiment.store

# %%
#| hide
from nbdev.showdoc import *

# %%
#| export
from __future__ import annotations
import datetime, json, math, os, re, shutil, subprocess, sys, tempfile
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import torch

import fracsgd
from fracsgd.core import atomic_path, write_table, read_table, shared_mode, default_device

try:
    import fcntl
except ImportError:          # Windows: no advisory locks, one sweep per folder is then up to the user
    fcntl = None


# %% [markdown]
# A study folder is the only thing a sweep leaves behind, and the only thing an analysis reads. Its layout:
#
# ```
# my-study/
#   meta.json            the study's name, and for every session that wrote to it: package version,
#                        git commit, PyTorch version, device, start time
#   plan.json            the run keys of the latest sweep, in its order
#   runs/<key>/          one folder per finished run: run.json (configuration, scalar metrics, seconds)
#                        and one parquet file per trajectory table
#   errors/<key>.json    one file per failed run: type, message and traceback of the exception
#   runs.parquet         the runs table: one row per run of the plan, configuration + metrics + status
# ```
#
# Each run owns a folder named by its key (the [sweep chapter](sweep.html) explains keys). The folder is
# written under a hidden temporary name and renamed to its key when it is complete, so a run either is in the
# store whole or is not there at all: a kill while writing leaves only a hidden folder, which every reader
# skips and the next sweep deletes. A run's folder is never rewritten.
#
# `runs.parquet` is a summary the store can rebuild at any time from the run folders and error files. It is
# written at the end of each sweep, and again by `load_study` when a killed sweep left it behind.

# %% [markdown]
# ## Where the numbers came from
#
# `environment` records what produced a result: the package version, the git commit of the source when it lies
# in a git checkout, the PyTorch and Python versions, and the device.

# %%
#| export
def _git_commit() -> str | None:
    "The commit of the checkout holding the package source, or `None` outside a git checkout."
    try:
        out = subprocess.run(['git', 'rev-parse', 'HEAD'], cwd=Path(fracsgd.__file__).parent,
                             capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() if out.returncode == 0 else None

def environment(device=None) -> dict:
    "Package version, git commit (or `None`), PyTorch and Python versions, device, and the time now (UTC)."
    return dict(fracsgd=fracsgd.__version__, git_commit=_git_commit(), torch=torch.__version__,
                python=sys.version.split()[0], device=str(device or default_device()),
                time=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec='seconds'))


# %%
env = environment()
assert env['torch'] == torch.__version__ and env['fracsgd'] == fracsgd.__version__
assert env['git_commit'] is None or re.fullmatch('[0-9a-f]{40}', env['git_commit'])
env


# %% [markdown]
# ## Opening a study folder
#
# `open_study` creates the folder and its `meta.json`, or reopens it. Three things make it refuse:
#
# * the folder belongs to another study (`StudyMismatch`), since mixing two studies' runs in one table is
#   never wanted;
# * the folder exists, is not empty and has no `meta.json`: it holds something else (`NotAStudy`);
# * `meta.json` is unreadable.
#
# All of them are `ValueError`s with a one-line message naming the folder, so that a command line can print
# the message as it is. Every opening appends the current `environment` to the list of sessions in
# `meta.json`, so a study resumed after an upgrade says so.

# %%
#| export
class StudyMismatch(ValueError):
    "The folder holds the results of another study."

class NotAStudy(ValueError):
    "The folder is not empty and is not a study folder."

def _write_json(obj, path) -> Path:
    "Write `obj` as indented JSON to `path`, atomically."
    with atomic_path(path) as tmp:
        tmp.write_text(json.dumps(obj, indent=1, allow_nan=True) + '\n')
    return Path(path)

def read_meta(folder) -> dict:
    "The study's `meta.json`; `NotAStudy` when it is missing or unreadable."
    path = Path(folder) / 'meta.json'
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise NotAStudy(f'{folder} is not a readable study folder: {path} ({e})') from None

def record_meta(folder, **fields) -> dict:
    "Add `fields` to the study folder's `meta.json`, written whole or not at all; the record as it is now."
    meta = read_meta(folder)
    if any(meta.get(k) != v for k, v in fields.items()):
        meta.update(fields)
        with atomic_path(Path(folder) / 'meta.json') as tmp:
            tmp.write_text(json.dumps(meta, indent=1, allow_nan=True) + '\n')
    return meta


# %%
with tempfile.TemporaryDirectory() as d:
    _write_json(dict(study='demo'), Path(d) / 'meta.json')
    assert read_meta(d) == dict(study='demo')
    (Path(d) / 'meta.json').write_text('{"study": "de')               # cut short by hand
    try:
        read_meta(d)
        raise AssertionError('a broken meta.json must be refused')
    except NotAStudy as e:
        print(e)


# %%
#| export
def open_study(folder, name: str, device=None, fields: dict | None = None) -> Path:
    """Create or reopen the study folder `folder` for study `name`, recording `fields` (e.g. the preset) in its
    `meta.json`; refuse a folder that holds anything else."""
    folder = Path(folder)
    if (folder / 'meta.json').exists():
        meta = read_meta(folder)
        if meta.get('study') != name:
            raise StudyMismatch(f"{folder} holds results of study {meta.get('study')!r}, not {name!r}")
    elif folder.is_dir() and any(folder.iterdir()):
        raise NotAStudy(f'{folder} is not empty and is not a study folder (it has no meta.json)')
    else:
        meta = dict(study=name, store_format=1, sessions=[])
    folder.mkdir(parents=True, exist_ok=True)
    meta['sessions'].append(environment(device))
    meta.update(fields or {})
    _write_json(meta, folder / 'meta.json')
    return folder


# %%
with tempfile.TemporaryDirectory() as d:
    f = open_study(Path(d) / 'demo', 'demo')
    open_study(f, 'demo')                                        # reopening is fine
    assert [s['torch'] for s in read_meta(f)['sessions']] == [torch.__version__] * 2
    for bad, err in [('other-study', StudyMismatch), (d, NotAStudy)]:
        try:
            open_study(f if bad == 'other-study' else d, bad)
            raise AssertionError('should have been refused')
        except err as e:
            print(e)


# %% [markdown]
# ## One sweep at a time
#
# Two sweeps writing into one folder would each clean up the other's half-written runs. `locked` holds an
# advisory lock on the folder for the length of a sweep; the operating system drops it when the process ends,
# also on a kill, so a killed sweep never leaves a stale lock. `tidy` deletes what killed writers left: the
# hidden temporary files of `atomic_path` (`.*.tmp`) in the folder and in `errors/`, and any hidden entry in
# `runs/`, which belongs to the store alone. Other hidden files (a `.git`, say) are left alone.

# %%
#| export
class StudyBusy(RuntimeError):
    "Another process is running a sweep in this folder."

@contextmanager
def locked(folder):
    "Hold the study folder's lock for the block; raise `StudyBusy` if another process holds it."
    if fcntl is None:
        yield
        return
    with open(Path(folder) / '.lock', 'a') as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise StudyBusy(f'another process is running a sweep in {folder}') from None
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


# %%
with tempfile.TemporaryDirectory() as d:
    with locked(d):
        try:
            with locked(d):
                raise AssertionError('a second lock must be refused')
        except StudyBusy as e:
            print(e)
    with locked(d):                                               # released again
        pass


# %%
#| export
def _runs(folder) -> Path:
    return Path(folder) / 'runs'

def _errors(folder) -> Path:
    return Path(folder) / 'errors'

def tidy(folder) -> int:
    "Delete the temporary files and folders that killed writers left in the store; return how many."
    leftovers = [*Path(folder).glob('.*.tmp'), *_errors(folder).glob('.*.tmp'), *_runs(folder).glob('.*')]
    for p in leftovers:
        shutil.rmtree(p) if p.is_dir() else p.unlink()
    return len(leftovers)


# %%
with tempfile.TemporaryDirectory() as d:
    (Path(d) / 'runs' / '.abc.x1').mkdir(parents=True)         # a run folder a kill left half-written
    (Path(d) / '.runs.parquet.x2.tmp').write_text('half')
    (Path(d) / 'runs' / 'abc').mkdir()                          # a finished run stays
    (Path(d) / '.git').mkdir()                                  # and so does anything that is not the store's
    assert tidy(d) == 2 and tidy(d) == 0 and os.listdir(Path(d) / 'runs') == ['abc']
    assert (Path(d) / '.git').is_dir()

# %% [markdown]
# ## What a run may return
#
# A run returns a dict. Scalar values (numbers, booleans, strings, `None`, NumPy scalars, one-element tensors)
# are its metrics and become columns of the runs table. `DataFrame` values are its tables, typically a
# trajectory, stored as `<name>.parquet`; the table called `trajectory` is what a `Study` offers as its
# trajectories. Anything else is an error of the run, reported when the run finishes rather than when the table
# is read. Metric names must not collide with configuration fields or with the columns the store adds itself.

# %%
#| export
RESERVED = ('key', 'status', 'seconds', 'error')

def split_result(result, config_fields=()) -> tuple[dict, dict]:
    "Split a run's result dict into (scalar metrics, tables); raise `TypeError`/`ValueError` on the rest."
    if not isinstance(result, dict):
        raise TypeError(f'a run must return a dict, not {type(result).__name__}')
    metrics, tables = {}, {}
    for name, v in result.items():
        if not isinstance(name, str) or name in RESERVED or name in config_fields:
            raise ValueError(f'result name {name!r} is reserved or repeats a configuration field')
        if isinstance(v, pd.DataFrame):
            if not re.fullmatch(r'[A-Za-z0-9_][A-Za-z0-9_.-]*', name):
                raise ValueError(f'table name {name!r} is not usable as a file name')
            tables[name] = v
        elif isinstance(v, np.generic) or (isinstance(v, torch.Tensor) and v.numel() == 1):
            metrics[name] = v.item()
        elif v is None or isinstance(v, (bool, int, float, str)):
            metrics[name] = v
        else:
            raise TypeError(f'result {name!r} is a {type(v).__name__}: return scalars or DataFrames')
    return metrics, tables


# %%
m, t = split_result(dict(loss=np.float32(0.5), acc=torch.tensor(0.9), trajectory=pd.DataFrame({'R': [0.]})))
assert m['loss'] == 0.5 and abs(m['acc'] - 0.9) < 1e-6 and list(t) == ['trajectory']
for bad in [dict(w=np.zeros(3)), dict(lr=1.0), dict(status='ok'), [1]]:
    try:
        split_result(bad, config_fields=('lr',))
        raise AssertionError(bad)
    except (TypeError, ValueError) as e:
        print(e)


# %% [markdown]
# ## Writing a run, or its error
#
# `save_run` writes a finished run's folder under a hidden name and renames it to the key as the last step.
# `save_error` writes a failed run's error file the same way (through `atomic_path`). A run that failed
# before and succeeds later has its error file removed once its folder is in place, so a key is never both
# done and failed. Every file gets the mode of `shared_mode`, 0644 under the usual umask, and every folder
# 0755.

# %%
#| export
def save_run(folder, key: str, config: dict, result: dict, seconds: float = math.nan) -> Path:
    "Store a finished run atomically: `runs/<key>/` with `run.json` and one parquet file per table."
    metrics, tables = split_result(result, config)
    final = _runs(folder) / key
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=final.parent, prefix=f'.{key}.'))
    try:
        for name, table in tables.items():
            write_table(table, tmp / f'{name}.parquet')
        run = dict(key=key, config=config, metrics=metrics, tables=sorted(tables), seconds=seconds)
        _write_json(run, tmp / 'run.json')
        os.chmod(tmp, shared_mode(folder=True))
        os.rename(tmp, final)                       # the commit: from here on the run is done
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    (_errors(folder) / f'{key}.json').unlink(missing_ok=True)
    return final


# %%
with tempfile.TemporaryDirectory() as d:
    old_mask = os.umask(0o022)
    run_dir = save_run(d, 'k1', dict(lr=0.1), dict(loss=0.2, trajectory=pd.DataFrame({'step': [0, 1]})), 1.5)
    assert sorted(p.name for p in run_dir.iterdir()) == ['run.json', 'trajectory.parquet']
    assert {oct(p.stat().st_mode & 0o777) for p in run_dir.iterdir()} == {'0o644'}
    assert oct(run_dir.stat().st_mode & 0o777) == '0o755'
    os.umask(old_mask)
    print(run_dir.joinpath('run.json').read_text())


# %%
#| export
def save_error(folder, key: str, config: dict, error: dict, seconds: float = math.nan) -> Path:
    "Store a failed run's error (`type`, `message`, `traceback`) atomically as `errors/<key>.json`."
    record = dict(key=key, config=config, seconds=seconds, **error)
    return _write_json(record, _errors(folder) / f'{key}.json')


# %%
with tempfile.TemporaryDirectory() as d:
    err = dict(type='ValueError', message='boom', traceback='Traceback ...')
    assert json.loads(save_error(d, 'k1', dict(lr=0.1), err).read_text())['message'] == 'boom'
    save_run(d, 'k1', dict(lr=0.1), dict(loss=0.2))
    assert not (Path(d) / 'errors' / 'k1.json').exists()                  # done now, no longer failed


# %% [markdown]
# ## Reading the store
#
# `done_keys` and `failed_keys` list the keys from the folder alone, skipping hidden temporary entries. The
# plan, `plan.json`, is the list of keys of the latest sweep, in its order; it lets `status` count pending
# runs without the sweep's code, and keeps the runs of an older configuration out of the runs table once the
# configuration has changed (they stay on disk; `everything=True` shows them).

# %%
#| export
def done_keys(folder) -> list[str]:
    "Keys of the runs whose folder is complete, sorted."
    return sorted(p.name for p in _runs(folder).glob('[!.]*') if p.is_dir())

def failed_keys(folder) -> list[str]:
    "Keys of the runs that failed and have not succeeded since, sorted."
    done = set(done_keys(folder))
    return sorted(k for k in (p.stem for p in _errors(folder).glob('[!.]*.json')) if k not in done)


# %%
with tempfile.TemporaryDirectory() as d:
    save_run(d, 'a', {}, dict(loss=1.0))
    save_error(d, 'b', {}, dict(type='E', message='m', traceback='t'))
    (Path(d) / 'runs' / '.c.tmp-half').mkdir()                   # a write cut short by a kill: not done
    assert done_keys(d) == ['a'] and failed_keys(d) == ['b']


# %%
#| export
def save_plan(folder, keys) -> Path:
    "Record the keys of the current sweep, in its order."
    return _write_json(list(keys), Path(folder) / 'plan.json')

def read_plan(folder) -> list[str] | None:
    "The keys of the latest sweep, or `None` when no sweep has recorded one."
    path = Path(folder) / 'plan.json'
    return json.loads(path.read_text()) if path.exists() else None


# %%
with tempfile.TemporaryDirectory() as d:
    assert read_plan(d) is None
    save_plan(d, ['b', 'a'])
    assert read_plan(d) == ['b', 'a']


# %%
#| export
def status(folder, keys=None) -> dict:
    "Counts of done, failed and pending runs among `keys` (default: the folder's plan)."
    read_meta(folder)
    done, failed = set(done_keys(folder)), set(failed_keys(folder))
    keys = list(keys) if keys is not None else (read_plan(folder) or sorted(done | failed))
    n_done, n_failed = sum(k in done for k in keys), sum(k in failed for k in keys)
    return dict(done=n_done, failed=n_failed, pending=len(keys) - n_done - n_failed)


# %%
with tempfile.TemporaryDirectory() as d:
    open_study(d, 'demo')
    save_plan(d, ['a', 'b', 'c'])
    save_run(d, 'a', {}, dict(loss=1.0))
    save_error(d, 'b', {}, dict(type='E', message='m', traceback='t'))
    assert status(d) == dict(done=1, failed=1, pending=1)
    assert status(d, ['a', 'z']) == dict(done=1, failed=0, pending=1)


# %% [markdown]
# ## The runs table
#
# One row per run: `key`, `status` (`done` or `failed`), the configuration's fields, the metrics, `seconds`
# (the run's wall time) and `error` (`type: message` for a failed run). Rows follow the plan's order; pending
# runs have no row. Configuration values appear as the run key saw them: tuples as lists, nested dataclasses
# as dicts.

# %%
#| export
def _row(folder, key: str) -> dict | None:
    run = _runs(folder) / key / 'run.json'
    if run.exists():
        r = json.loads(run.read_text())
        return dict(key=key, status='done', **r['config'], **r['metrics'], seconds=r['seconds'], error=None)
    err = _errors(folder) / f'{key}.json'
    if err.exists():
        e = json.loads(err.read_text())
        return dict(key=key, status='failed', **e['config'], seconds=e['seconds'],
                    error=f"{e['type']}: {e['message']}")
    return None

def runs_table(folder, everything: bool = False) -> pd.DataFrame:
    "One row per finished or failed run of the plan (of every run in the folder when `everything`)."
    plan = read_plan(folder) or []
    others = sorted((set(done_keys(folder)) | set(failed_keys(folder))) - set(plan))
    keys = plan + others if everything else plan
    rows = [r for r in (_row(folder, k) for k in keys) if r is not None]
    table = pd.DataFrame(rows, columns=None if rows else ['key', 'status', 'seconds', 'error'])
    last = [c for c in ('seconds', 'error') if c in table]
    return table[[c for c in table if c not in last] + last]


# %%
with tempfile.TemporaryDirectory() as d:
    open_study(d, 'demo')
    save_plan(d, ['b', 'a', 'c'])
    save_run(d, 'a', dict(lr=0.1, hidden=[64, 64]), dict(loss=0.2), 1.0)
    save_error(d, 'b', dict(lr=0.5, hidden=[64, 64]), dict(type='FloatingPointError', message='diverged',
                                                           traceback='...'), 0.3)
    tab = runs_table(d)
    assert list(tab.key) == ['b', 'a'] and list(tab.status) == ['failed', 'done']
    assert list(tab.columns) == ['key', 'status', 'lr', 'hidden', 'loss', 'seconds', 'error']
tab


# %% [markdown]
# ## A folder that held another configuration
#
# A sweep run into a folder whose latest plan had other runs starts a new plan there: the runs whose
# configuration is unchanged are the same runs and are kept, the others stay on disk but leave the runs table,
# and everything reported from then on belongs to the new configuration. That must never happen silently.
# `plan_change` compares the folder's plan with a new one and returns what a user needs to know (which fields
# changed, how many earlier runs are reused, how many leave the table), or `None` when the new plan keeps
# every earlier run (a resumed or an extended sweep). The runner raises it as a `ConfigChanged` warning, which
# the command line prints as one line.

# %%
#| export
class ConfigChanged(UserWarning):
    "A sweep was started in a folder whose earlier plan had runs of another configuration."

def _stored_config(folder, key: str) -> dict | None:
    "The configuration record of a stored run, done or failed; `None` when the run is pending."
    for path in (_runs(folder) / key / 'run.json', _errors(folder) / f'{key}.json'):
        if path.exists():
            return json.loads(path.read_text())['config']
    return None

def _values(records: list[dict], name: str) -> str:
    "The values of field `name` in `records`, as JSON: one value, or a list of up to four."
    vals = sorted({json.dumps(r.get(name), sort_keys=True) for r in records})
    return vals[0] if len(vals) == 1 else '[' + ', '.join(vals[:4]) + (', ...' if len(vals) > 4 else '') + ']'

def plan_change(folder, new: dict) -> str | None:
    "What changes when the plan of `folder` is replaced by `new` ({key: configuration record}), or `None`."
    old = read_plan(folder) or []
    left = [k for k in old if k not in new]
    if not left:
        return None
    before, after = [c for c in (_stored_config(folder, k) for k in old) if c is not None], list(new.values())
    fields = sorted({f for c in before + after for f in c})
    changed = [f'{f}: {a} → {b}' for f in fields if (a := _values(before, f)) != (b := _values(after, f))]
    what = '; '.join(changed[:4]) if changed else 'the same values in other combinations'
    return (f"{folder} held a sweep of another configuration ({what}): starting a new plan there; "
            f"{len(old) - len(left)} earlier run(s) with unchanged configuration are reused, {len(left)} stay on "
            "disk but leave the runs table (load_study(folder, everything=True) shows them)")


# %%
with tempfile.TemporaryDirectory() as d:
    save_plan(d, ['a', 'b'])
    save_run(d, 'a', dict(lr=0.1, seed=0), dict(loss=0.2))
    save_run(d, 'b', dict(lr=0.1, seed=1), dict(loss=0.3))
    assert plan_change(d, {'a': dict(lr=0.1, seed=0), 'b': dict(lr=0.1, seed=1)}) is None       # resumed
    assert plan_change(d, {'a': {}, 'b': {}, 'c': dict(lr=0.1, seed=2)}) is None               # extended
    note = plan_change(d, {'a': dict(lr=0.1, seed=0), 'z': dict(lr=0.2, seed=1)})
    assert 'lr: 0.1 → [0.1, 0.2]' in note and '1 earlier run(s)' in note and '1 stay on disk' in note, note
    print(note)


# %% [markdown]
# ## `load_study`: everything in one call
#
# Analysis code reads a study through `load_study` and nothing else. It returns a `Study`: the name, the runs
# table, every stored table concatenated over runs with a `key` column in front (`tables`, by name;
# `trajectories` is the one named `trajectory`), and `meta.json`. Join a trajectory to its configuration with
# `study.trajectories.merge(study.runs, on='key')`. When `runs.parquet` is missing or stale (a killed sweep
# never got to write it), `load_study` writes it, if the folder is writable.

# %%
#| export
@dataclass
class StoredStudy:
    "A study read back from its folder."
    name: str
    runs: pd.DataFrame
    tables: dict = field(default_factory=dict)
    meta: dict = field(default_factory=dict)

    @property
    def trajectories(self) -> pd.DataFrame:
        "The runs' `trajectory` tables, stacked, with a `key` column."
        return self.tables.get('trajectory', pd.DataFrame(columns=['key']))


# %%
one_run = pd.DataFrame({'key': ['a', 'a'], 'R': [0, 1]})
assert len(StoredStudy('demo', pd.DataFrame({'key': ['a']}), dict(trajectory=one_run)).trajectories) == 2
assert list(StoredStudy('empty', pd.DataFrame()).trajectories.columns) == ['key']      # no tables: empty, keyed


# %%
#| export
def write_runs(folder, runs: pd.DataFrame | None = None) -> Path:
    "Write `runs.parquet` (the runs table, rebuilt from the run folders unless given)."
    return write_table(runs_table(folder) if runs is None else runs, Path(folder) / 'runs.parquet')


# %%
with tempfile.TemporaryDirectory() as d:
    save_plan(d, ['a'])
    save_run(d, 'a', dict(lr=0.1), dict(loss=0.2))
    assert read_table(write_runs(d)).loss.tolist() == [0.2]


# %%
#| export
def _tables(folder, keys) -> dict:
    parts = {}
    for key in keys:
        for path in sorted((_runs(folder) / key).glob('*.parquet')):
            parts.setdefault(path.stem, []).append(read_table(path).assign(key=key))
    columns = lambda dfs: list(dict.fromkeys(c for df in dfs for c in df.columns if c != 'key'))  # all runs' columns
    return {name: pd.concat(dfs, ignore_index=True)[['key', *columns(dfs)]] for name, dfs in parts.items()}

def load_study(folder, everything: bool = False) -> StoredStudy:
    "The study in `folder`: runs table, tables (trajectories) and meta, all in one call."
    meta = read_meta(folder)
    runs = runs_table(folder, everything)
    saved = Path(folder) / 'runs.parquet'
    if not everything and (not saved.exists() or read_table(saved)[['key', 'status']].values.tolist()
                           != runs[['key', 'status']].values.tolist()):
        try:
            write_runs(folder, runs)
        except PermissionError:
            pass                                  # a study read from someone else's folder
    done = runs.key[runs.status == 'done'] if len(runs) else []
    return StoredStudy(meta['study'], runs, _tables(folder, done), meta)


# %%
with tempfile.TemporaryDirectory() as d:
    open_study(d, 'demo')
    save_plan(d, ['a', 'b'])
    for k, lr in [('a', 0.1), ('b', 0.2)]:
        save_run(d, k, dict(lr=lr), dict(trajectory=pd.DataFrame({'step': [0, 1], 'R': [0, lr]})))
    study = load_study(d)
    assert study.name == 'demo' and list(study.runs.key) == ['a', 'b']
    assert list(study.trajectories.columns) == ['key', 'step', 'R'] and len(study.trajectories) == 4
    assert (Path(d) / 'runs.parquet').exists()
    joined = study.trajectories.merge(study.runs, on='key')
import fracsgd
top_level = fracsgd.load_study                  # the package offers it at the top, imported on first use
assert (top_level.__module__, top_level.__name__) == ('fracsgd.experiment.store', 'load_study')
joined

# %%
#| hide
import nbdev
nbdev.nbdev_export()
