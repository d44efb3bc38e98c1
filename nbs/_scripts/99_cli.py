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
import argparse, importlib, os

# %% [markdown]
# The command line is `fracsgd run STUDY [--quick|--full] [--out DIR]`, `fracsgd bench WHAT [--json]` and
# `fracsgd list`. Nothing in the core knows about it.
#
# Studies register here by name and module. A study module exposes `config(full)` and
# `run(cfg, out_dir, progress)` returning a dict with a `summary` table and the output folder `out`; adding a
# study is one line in `STUDIES`. `--full` sets the one documented switch, `FRACSGD_FULL=1`, for the whole
# process.

# %%
#| export
STUDIES = {'moons-diffusion': 'fracsgd.studies.moons_diffusion'}
BENCHMARKS = {'displacement': ('fracsgd.bench', 'bench_displacement'),
              'llc': ('fracsgd.bench_llc', 'run_llc_benchmark')}

def _parser():
    p = argparse.ArgumentParser(prog='fracsgd',
                                description='Late-stage SGD as fractal sub-diffusion: studies and benchmarks.')
    sub = p.add_subparsers(dest='command', required=True)
    r = sub.add_parser('run', help='run a study and write its figures and tables')
    r.add_argument('study', choices=sorted(STUDIES))
    mode = r.add_mutually_exclusive_group()
    mode.add_argument('--quick', action='store_true', help='CPU-sized configuration (default)')
    mode.add_argument('--full', action='store_true',
                      help="the paper's configuration (GPU); same as FRACSGD_FULL=1")
    r.add_argument('--out', help='results folder (default: results/<study>/<quick|full>)')
    r.add_argument('--no-progress', action='store_true')
    b = sub.add_parser('bench', help='measure speed against a baseline in the same process')
    b.add_argument('what', choices=sorted(BENCHMARKS))
    b.add_argument('--json', action='store_true', help='print JSON')
    sub.add_parser('list', help='list studies and benchmarks')
    return p


# %%
#| export
def main(argv: list[str] | None = None) -> int:
    "Entry point of the `fracsgd` command."
    args = _parser().parse_args(argv)
    if args.command == 'list':
        print('studies:    ' + ', '.join(sorted(STUDIES)))
        print('benchmarks: ' + ', '.join(sorted(BENCHMARKS)))
        return 0
    if args.command == 'run':
        if args.full or args.quick:
            os.environ['FRACSGD_FULL'] = '1' if args.full else '0'
        study = importlib.import_module(STUDIES[args.study])
        res = study.run(study.config(), args.out, progress=not args.no_progress)
        print(res['summary'].to_string(index=False, float_format=lambda v: f'{v:.4g}'))
        print(f"\nresults written to {res['out']}")
        return 0
    mod_name, fn = BENCHMARKS[args.what]
    mod = importlib.import_module(mod_name)
    if args.what == 'llc':
        print(getattr(mod, fn)(as_json=args.json))
        return 0
    print(mod.report(getattr(mod, fn)(), as_json=args.json))
    return 0


# %%
import contextlib, io
buf = io.StringIO()
with contextlib.redirect_stdout(buf):
    assert main(['list']) == 0
assert 'moons-diffusion' in buf.getvalue()
try:
    main(['run', 'no-such-study'])
    raise AssertionError('an unknown study must be refused')
except SystemExit as e:
    assert e.code == 2
print(buf.getvalue())

# %%
#| hide
import nbdev
nbdev.nbdev_export()
