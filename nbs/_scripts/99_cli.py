# %% [markdown]
# # Command line
#
# > `fracsgd run STUDY`, `fracsgd bench WHAT`, `fracsgd list`: the thin layer that calls studies and benchmarks.

# %%
#| default_exp cli

# %%
#| hide
from nbdev.showdoc import *

# %%
#| export
from __future__ import annotations
import argparse, importlib, os, sys, warnings
from contextlib import contextmanager
from pathlib import Path

from fracsgd.experiment.runner import NotEnoughMemory, report_study, run_study
from fracsgd.studies import STUDIES, get_study
from fracsgd.placement import placement
from fracsgd.experiment.store import StudyBusy, status

# %% [markdown]
# The command line calls studies, the sweep runner and benchmarks; nothing in the core knows about it.
#
# * `fracsgd run STUDY [--quick|--full] [--backend local|ray] [--workers N] [--address A] [--device D]
#   [--out DIR]` runs a study's sweep into its folder, resuming what an earlier call left, then writes and prints
#   its report.
# * `fracsgd status DIR` counts the done, failed and pending runs of a study folder.
# * `fracsgd report DIR` analyses a study folder again and prints its summary.
# * `fracsgd bench WHAT [--json]` and `fracsgd list`.
#
# Studies register with the [runner](runner.html), which does everything here: the command line only reads
# arguments. `--quick` (the default), `--full` and `--smoke` name a preset; `--preset NAME` names any other a
# study has (the long CIFAR-10 run, say). `--device` is checked before anything is written: a device that does
# not exist, or a GPU on a machine without one, ends in one line. `fracsgd report FOLDER` reads the study and
# its configuration from the folder's `meta.json`, never from the caller's environment. Bad input (an unknown
# study or preset, an unusable device, an `--out` that is a file or cannot be created, `--backend ray` without
# Ray, a folder holding another study, a configuration that cannot be stored) ends with one line naming the
# problem and exit status 2, no traceback. Warnings (for instance that a folder held a sweep of another
# configuration) are printed as one line each. `python -m fracsgd` is the same command.

# %%
#| export
BENCHMARKS = {'displacement': ('fracsgd.bench.timing', 'bench_displacement'),
              'llc': ('fracsgd.bench.llc', 'run_llc_benchmark'),
              'ensemble': ('fracsgd.bench.ensemble', 'run_ensemble_benchmark')}

class _Parser(argparse.ArgumentParser):
    "An argument parser whose errors are one line and exit status 2."
    def error(self, message):
        sys.stderr.write(f"fracsgd: {message}\n")
        sys.exit(2)

def _parser():
    p = _Parser(prog='fracsgd', description='Late-stage SGD as fractal sub-diffusion: studies and benchmarks.')
    sub = p.add_subparsers(dest='command', required=True, parser_class=_Parser)
    r = sub.add_parser('run', help='run (or resume) a study and write its results',
                       epilog='The same command again resumes a stopped study: finished runs are kept, and a run '
                              'stopped in its training continues from the state it saved last (every 300 s; '
                              'FRACSGD_CHECKPOINT_EVERY sets the seconds).')
    r.add_argument('study', choices=sorted(STUDIES))
    mode = r.add_mutually_exclusive_group()
    mode.add_argument('--quick', dest='preset', action='store_const', const='quick',
                      help='CPU-sized configuration (default)')
    mode.add_argument('--full', dest='preset', action='store_const', const='full',
                      help="the paper's configuration")
    mode.add_argument('--smoke', dest='preset', action='store_const', const='smoke',
                      help='a seconds-long check that everything runs (its numbers mean nothing)')
    mode.add_argument('--preset', help="any other preset of the study (see `fracsgd list`)")
    r.add_argument('--backend', choices=['local', 'ray'], default='local', help='where runs execute')
    r.add_argument('--workers', type=int, help='worker processes (local) or parallel tasks (ray)')
    r.add_argument('--address', help='a Ray cluster to join (default: start a local Ray)')
    r.add_argument('--gpus-per-run', type=float,
                   help='GPUs a Ray task asks for (default 1 on a CUDA device, 0 otherwise; 0.25 packs 4 runs a card)')
    r.add_argument('--device', help='cpu, cuda, cuda:1, ... (default: cuda when available)')
    r.add_argument('--dtype', default='float32', help='floating dtype of models and data (default float32)')
    r.add_argument('--out', help='results folder (default: results/<study>/<preset>)')
    r.add_argument('--stand-in', action='store_true',
                   help="when the paper's data or weights cannot be had: run on the study's labelled stand-in "
                        "(studies that have one: cifar10, tiny-imagenet)")
    r.add_argument('--no-progress', action='store_true')
    for name, text in [('status', 'done / failed / pending runs of a study folder'),
                       ('report', "a study folder's summary table")]:
        sub.add_parser(name, help=text).add_argument('folder')
    b = sub.add_parser('bench', help='measure speed against a baseline in the same process')
    b.add_argument('what', choices=sorted(BENCHMARKS))
    b.add_argument('--json', action='store_true', help='print JSON')
    sub.add_parser('list', help='list studies and benchmarks')
    return p


# %% [markdown]
# `main` dispatches. Errors the user can fix are caught where they can arise (setting up the sweep and its
# folder), so a bug inside a study still shows its traceback.

# %%
#| export
INPUT_ERRORS = (ValueError, ImportError, OSError, StudyBusy, NotEnoughMemory)    # StudyFailed is a ValueError

def _fail(message) -> int:
    sys.stderr.write(f"fracsgd: {message}\n")
    return 2

def _print_summary(res: dict):
    print(res['summary'].to_string(index=False, float_format=lambda v: f'{v:.4g}'))

def results_folder(out: str | None) -> Path | None:
    "The folder `--out` names (None: the runner's default), refused unless it is or can be a folder."
    if out is None:
        return None
    path = Path(out).expanduser()
    if path.exists() and not path.is_dir():
        raise ValueError(f"--out {out} is a file, not a folder")
    parent = next(p for p in [path, *path.parents] if p.exists())    # the nearest folder that exists already
    if not parent.is_dir():
        raise ValueError(f"--out {out}: {parent} is a file, not a folder")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise ValueError(f"--out {out}: cannot write in {parent} (permission denied)")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise ValueError(f"--out {out}: cannot create the folder ({e.strerror})") from None
    return path

def _run(args) -> int:
    "`fracsgd run`: the sweep (resuming), then the report."
    try:
        study = get_study(args.study)
        study.config(args.preset or 'quick')                # an unknown preset, refused before anything is written
        placement(args.device, args.dtype)                  # so is an unusable device or dtype
        res = run_study(study, args.preset or 'quick', results_folder(args.out), stand_in=args.stand_in,
                        device=args.device, dtype=args.dtype, backend=args.backend, workers=args.workers,
                        address=args.address, progress=not args.no_progress, gpus_per_run=args.gpus_per_run)
    except INPUT_ERRORS as e:
        return _fail(e)
    _print_summary(res)
    print(f"\nresults written to {res['folder']}")
    return 0

@contextmanager
def _one_line_warnings():
    "Show every warning raised in the block as one line, `fracsgd: warning: ...`, on standard error."
    with warnings.catch_warnings():
        warnings.simplefilter('default')
        warnings.showwarning = lambda message, *rest, **kw: sys.stderr.write(f"fracsgd: warning: {message}\n")
        yield

def main(argv: list[str] | None = None) -> int:
    "Entry point of the `fracsgd` command."
    with _one_line_warnings():
        return _main(argv)

def _main(argv):
    args = _parser().parse_args(argv)
    if args.command == 'list':
        for name in sorted(STUDIES):
            print(f"study {name}: presets {', '.join(get_study(name).presets)}")
        print('benchmarks: ' + ', '.join(sorted(BENCHMARKS)))
        return 0
    if args.command == 'run':
        return _run(args)
    if args.command in ('status', 'report'):
        try:
            if args.command == 'status':
                counts = status(args.folder)
                print(', '.join(f'{n} {what}' for what, n in counts.items()))
                return 0
            _print_summary(report_study(args.folder))
        except INPUT_ERRORS as e:
            return _fail(e)
        return 0
    mod_name, fn = BENCHMARKS[args.what]
    mod = importlib.import_module(mod_name)
    if args.what in ('llc', 'ensemble'):                      # these return their formatted report
        print(getattr(mod, fn)(as_json=args.json))
        return 0
    print(mod.report(getattr(mod, fn)(), as_json=args.json))
    return 0


# %% [markdown]
# `python -m fracsgd` runs the same entry point, through the package's three-line `fracsgd/__main__.py`
# (written by hand, the one module that no notebook generates).

# %% [markdown]
# Each kind of bad input ends in one line on standard error and exit status 2. The check calls `main` in this
# process with standard error captured (a fresh Python process per case would spend most of the check importing
# torch), and runs the first case again as a user would, as a fresh `fracsgd` process, to show that it sees the
# same line and the same exit status:

# %%
from fracsgd.experiment.store import read_meta
import contextlib, io, subprocess, sys, tempfile
from pathlib import Path
import torch

def fracsgd(*args) -> subprocess.CompletedProcess:
    "Run the `fracsgd` command in a fresh process; its exit status and output."
    code = 'import sys; from fracsgd.cli import main; sys.exit(main(sys.argv[1:]))'
    return subprocess.run([sys.executable, '-c', code, *args], capture_output=True, text=True)

def fracsgd_here(*args) -> subprocess.CompletedProcess:
    "`main(args)` in this process, with its exit status and captured output in the shape `fracsgd` returns."
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try: code = main(list(args))
        except SystemExit as e: code = e.code
    return subprocess.CompletedProcess(['fracsgd', *args], code, out.getvalue(), err.getvalue())

scratch = Path(tempfile.mkdtemp())
(scratch / 'other').mkdir()
(scratch / 'other' / 'meta.json').write_text('{"study": "another-study", "sessions": []}')
(scratch / 'locked').mkdir(mode=0o500)
(scratch / 'a-file').write_text('')
bad_inputs = {'no-such-study': ['run', 'no-such-study'],
              'another-study': ['run', 'moons-diffusion', '--out', str(scratch / 'other')],
              'a-file is a file, not a folder': ['run', 'moons-diffusion', '--out', str(scratch / 'a-file')],
              'is not a readable study folder': ['status', str(scratch)],
              '--workers': ['run', 'moons-diffusion', '--workers', 'two']}
if os.geteuid() != 0:                                    # root may write anywhere: nothing to refuse then
    bad_inputs['Permission denied'] = ['run', 'moons-diffusion', '--out', str(scratch / 'locked' / 'x')]
for words, argv in bad_inputs.items():
    p = fracsgd_here(*argv)
    assert p.returncode == 2 and words in p.stderr and len(p.stderr.strip().splitlines()) == 1, (argv, p.stderr)
    print(p.stderr.strip())
for argv, words in [(['--device', 'tpu9'], "unknown device 'tpu9'"), (['--preset', 'huge'], "no preset 'huge'"),
                    (['--dtype', 'float8'], "unknown dtype 'float8'")] + \
                   ([] if torch.cuda.is_available() else [(['--device', 'cuda'], "'cuda' is not available")]):
    p = fracsgd_here('run', 'moons-diffusion', '--out', str(scratch / 'new'), *argv)
    assert p.returncode == 2 and words in p.stderr and len(p.stderr.strip().splitlines()) == 1, (argv, p.stderr)
    print(p.stderr.strip())
assert not (scratch / 'new').exists()                   # refused before anything was written
fresh, here = fracsgd('run', 'no-such-study'), fracsgd_here('run', 'no-such-study')
assert (fresh.returncode, fresh.stderr) == (here.returncode, here.stderr) == (2, fresh.stderr), (fresh, here)

# %% [markdown]
# `--backend ray` without Ray installed is refused the same way, naming the extra to install (checked where Ray is
# missing: the development environment installs it). `status` and `report` read a folder that a study wrote:

# %%
folder = scratch / 'moons'
p = fracsgd('run', 'moons-diffusion', '--smoke', '--out', str(folder), '--no-progress')
assert p.returncode == 0 and 'crossover time' in p.stdout, p.stderr
p = fracsgd('status', str(folder))
assert p.returncode == 0 and p.stdout.strip() == '2 done, 0 failed, 0 pending', p.stdout
assert read_meta(folder)['preset'] == 'smoke'
with contextlib.redirect_stdout(io.StringIO()) as listing:
    assert main(['list']) == 0
assert 'moons-diffusion' in listing.getvalue()

# %% [markdown]
# ## Running, stopping and resuming a sweep
#
# A study's results folder is the sweep's memory: stop a run in any way, start the same command again, and only
# the runs that had not finished are run (the [sweep chapter](sweep.html) kills a sweep with `SIGKILL` in its
# tests and checks that nothing is run twice or lost). On a laptop:
#
# ```sh
# fracsgd run moons-diffusion --quick --workers 2 --out results/moons   # stop it at any point (Ctrl-C, kill -9)
# fracsgd status results/moons                                         # e.g. "1 done, 0 failed, 1 pending"
# fracsgd run moons-diffusion --quick --workers 2 --out results/moons   # runs only what is missing
# fracsgd report results/moons                                         # the summary table, again
# ```
#
# On a Ray cluster (the head started with `ray start --head`, every node with `pip install "fracsgd[ray]"`), from
# a node of the cluster; Ray 2.59 and later protect a cluster with a token, which the driver must be allowed to
# use:
#
# ```sh
# RAY_AUTH_MODE=token fracsgd run moons-diffusion --full --backend ray --address auto --device cuda \
#     --out results/moons-full
# fracsgd status results/moons-full
# ```
#
# Without `--address`, `--backend ray` starts a local Ray with `--workers` CPUs. Results are written by the
# process that runs the command, so the cluster needs no shared disk. A changed configuration gets new run keys:
# the folder keeps the old runs, but they are never reported as results of the new configuration, and the command
# says so in one line (`fracsgd: warning: results/moons held a sweep of another configuration (epochs: 100 →
# 200): starting a new plan there; ...`).

# %%
#| hide
import nbdev
nbdev.nbdev_export()
