"""Where the time of a full mnist-seeds run goes (issue 24, item 2), measured on a faithful slice.

    FRACSGD_DATA=/path/to/data nice -n 10 python tools/profile_mnist_seeds.py phases   # ~25 min on a busy 2-core CPU
    nice -n 10 python tools/profile_mnist_seeds.py counts                               # ~10 min

`phases`: the full preset's configuration (50 nets of 784-128-64-32-10, the LLC in the paper's setting every 100
steps, explored-volume cells at two sizes, recording) for the first 300 of its 2,000 steps (3 LLC estimates: the
report needs 3), run in this process exactly as a worker runs it (`run_one`), stored (`save_run`) and reported
(`report_study`); then the LLCs at the final weights: the printed nβ on all 50 nets (as the full run) and our
calibrated setting (`10nets-1x5000`) on the first `--calibrated-nets` of its 10 nets. Each phase is scaled to the full
run by the count of its units (steps, recorded steps, LLC estimates, calibrated nets), and the analysis of the report
is also timed on the committed full run's trajectories. Writes nbs/bench/mnist_seeds_phases.{csv,json}.

`counts`: operator calls and host synchronisations per step (`fracsgd.bench.timing.per_step`) of the ensemble trainer
(the study's 50 nets), of its recording and explored-volume count, and of the SGLD step (the benchmark's one chain
of 784-128-64-10, and the study's 50 chains), with and without the per-step diagnostics. Writes
nbs/bench/host_syncs.{csv,json}.
"""
from __future__ import annotations
import argparse, json, os, tempfile, time, warnings
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import torch

torch.set_num_threads(1)
OUT = Path(__file__).resolve().parents[1] / 'nbs' / 'bench'


def _machine() -> dict:
    from fracsgd.bench.timing import machine_info
    return dict(machine_info(), cores=os.cpu_count(), load_average=[round(x, 2) for x in os.getloadavg()],
                note='shared 2-core x86-64 virtual machine, other jobs running; one thread, nice 10')


def _records(settings, n_steps: int) -> int:
    "Steps at which the trainer records (step 0 included)."
    return sum(settings.due(t) or settings.llc_due(t) for t in range(n_steps + 1))


def phases(steps: int = 300, calibrated_nets: int = 2, smoke: bool = False) -> pd.DataFrame:
    from fracsgd.core import seed_everything
    from fracsgd.core import PhaseClock
    from fracsgd.experiment.runner import run_one, trained_path, report_study
    from fracsgd.placement import Placement
    from fracsgd.experiment.store import load_study, open_study, save_plan, save_run, write_runs
    from fracsgd.experiment.sweep import config_record, run_key
    from fracsgd.studies import mnist_runs as mr
    from fracsgd.diffusion.net_analysis import analyse_nets
    from fracsgd.studies.mnist_seeds import FULL, SMOKE, STUDY, summarize
    if smoke:                                                      # a check of this script, in seconds
        FULL, steps = replace(SMOKE, n_models=2, epochs=12, llc_every=4), 36
    from fracsgd.core import read_table
    from fracsgd.ledger.provenance import COMPACT

    machine = _machine()
    t_start, c_start = time.perf_counter(), time.process_time()
    full_run = STUDY.runs(FULL)[0]
    per_epoch = full_run.n_steps // full_run.epochs
    cfg = replace(FULL, epochs=steps // per_epoch, calibrated='')  # final-weight LLCs timed below, on fewer nets
    run = STUDY.runs(cfg)[0]
    assert run.n_steps == steps and replace(run, epochs=FULL.epochs, calibrated=FULL.calibrated) == full_run
    folder = Path(tempfile.mkdtemp()) / 'mnist-seeds-slice'
    p = Placement('cpu', 'float32', threads=1)
    meta = dict(preset='custom', config=config_record(cfg), placement=dict(device='cpu', dtype='float32', threads=1),
                stand_in='')
    open_study(folder, STUDY.name, 'cpu', meta)
    save_plan(folder, [run_key(run)])

    clock = PhaseClock()
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        with clock('run_one'):                                     # data, placement, training, trained-state save, accuracy
            result = run_one(STUDY, p, folder, run)
        partial = folder.parent / 'partial.json'                   # kept in case a later phase fails
        partial.write_text(json.dumps({k: v for k, v in result.items() if 'seconds' in k}, indent=1))
        print(f'training done; its phases are in {partial}', flush=True)
        # the final-weight LLCs of `evaluate`, on the trained nets the runner kept
        data = mr.run_data(run)
        nets = STUDY.build_models(run)
        state = torch.load(trained_path(folder, run_key(run)), weights_only=False)
        for m, s in zip(nets, state['models']):
            m.load_state_dict(s)
        seed_everything(STUDY.seed(run))
        with clock('llc_paper'):
            others = mr.other_paper_llcs(nets, data.train, full_run)
        with clock('llc_calibrated'):
            cal = mr.calibrated_llc(nets[:calibrated_nets], data.train, full_run.calibrated, seed=run.first_seed)
        result['nets'] = pd.concat([result['nets'], others, cal], axis=1)
        with clock('store'):
            save_run(folder, run_key(run), config_record(run), result, clock.wall['run_one'])
            write_runs(folder)
            trained_path(folder, run_key(run)).unlink()
        with clock('report'):
            rep = report_study(folder)
        slice_traj = load_study(folder).trajectories.drop(columns='key')
        with clock('report_analysis_slice'):
            summarize(analyse_nets(slice_traj, ds_llc=FULL.ds_llc, n_boot=FULL.n_boot).assign(
                test_accuracy=np.nan), FULL.n_boot)
        # the report's analysis on the committed full-length trajectories (2,000 steps, 20 LLC estimates per net)
        full_traj = read_table(COMPACT / 'mnist-seeds' / 'full' / 'trajectory_compact.parquet')
        with clock('report_analysis_full'):
            summarize(analyse_nets(full_traj, ds_llc=FULL.ds_llc, n_boot=FULL.n_boot).assign(
                test_accuracy=np.nan), FULL.n_boot)
    settings_full, settings_slice = full_run.settings(), run.settings()
    rec_full, rec_slice = _records(settings_full, full_run.n_steps), _records(settings_slice, run.n_steps)
    n_llc_full, n_llc_slice = full_run.n_steps // full_run.llc_every, run.n_steps // run.llc_every
    evaluate = dict(accuracy=result['seconds_eval_accuracy'], cpu_accuracy=result['cpu_seconds_eval_accuracy'])
    phases4 = ('steps', 'record', 'llc', 'volume')
    runner = clock.wall['run_one'] - sum(result[f'seconds_train_{k}'] for k in phases4) - evaluate['accuracy']
    cpu_runner = clock.cpu['run_one'] - sum(result[f'cpu_seconds_train_{k}'] for k in ('steps', 'record', 'llc', 'volume')) \
        - evaluate['cpu_accuracy']
    # the report on the full run: the slice's report, its analysis replaced by that of the full-length trajectories
    report_full = {c: t['report'] - t['report_analysis_slice'] + t['report_analysis_full']
                   for c, t in (('wall', clock.wall), ('cpu', clock.cpu))}
    rows = [
        ('training steps', 'SGD step of the 50 nets', steps, full_run.n_steps,
         result['seconds_train_steps'], result['cpu_seconds_train_steps']),
        ('LLC along the run', 'estimate (50 nets x 1 chain x 400 draws)', n_llc_slice, n_llc_full,
         result['seconds_train_llc'], result['cpu_seconds_train_llc']),
        ('explored-volume cells', 'step (10 nets, 2 cell sizes)', steps + 1, full_run.n_steps + 1,
         result['seconds_train_volume'], result['cpu_seconds_train_volume']),
        ('recording', 'recorded step (R, layers, loss, accuracy; table)', rec_slice, rec_full,
         result['seconds_train_record'], result['cpu_seconds_train_record']),
        ('test and train accuracy', 'run (50 nets)', 1, 1, evaluate['accuracy'], evaluate['cpu_accuracy']),
        ('final LLC, printed nβ', 'run (50 nets x 400 draws)', 1, 1, clock.wall['llc_paper'], clock.cpu['llc_paper']),
        ('final LLC, calibrated', 'net (1 chain x 5,000 + 5,000 steps)', calibrated_nets,
         10 if not smoke else calibrated_nets,
         clock.wall['llc_calibrated'], clock.cpu['llc_calibrated']),
        ('runner (data, placement, trainer set-up, trained-state save)', 'run', 1, 1, runner, cpu_runner),
        ('store (run.json, tables)', 'recorded step', rec_slice, rec_full, clock.wall['store'], clock.cpu['store']),
        ('report (analysis, tables, figures)', 'run; analysis of the full trajectories timed apart', 1, 1,
         clock.wall['report'], clock.cpu['report']),
    ]
    df = pd.DataFrame(rows, columns=['phase', 'unit', 'units_slice', 'units_full', 'wall_s_slice', 'cpu_s_slice'])
    df['factor'] = df.units_full / df.units_slice
    df['wall_s_full'] = df.wall_s_slice * df.factor
    df['cpu_s_full'] = df.cpu_s_slice * df.factor
    last = df.index[-1]                                              # the report: see report_full above
    df.loc[last, ['factor', 'wall_s_full', 'cpu_s_full']] = [np.nan, report_full['wall'], report_full['cpu']]
    df['cpu_share_full'] = df.cpu_s_full / df.cpu_s_full.sum()
    info = dict(machine=machine, load_average_end=[round(x, 2) for x in os.getloadavg()],
                slice=f'mnist-seeds FULL preset, first {steps} of {full_run.n_steps} steps (50 nets, LLC every 100 '
                      f'steps: {n_llc_slice} estimates), run_one in this process; final-weight LLCs: printed nβ on all '
                      f'50 nets, calibrated on {calibrated_nets} of 10',
                data=dict(source=result['data_source'], warning=result['data_warning']),
                seconds_total_wall=time.perf_counter() - t_start, seconds_total_cpu=time.process_time() - c_start,
                seconds_train_slice=result['seconds_train'],
                report_analysis=dict(slice_wall_s=clock.wall['report_analysis_slice'],
                                     slice_cpu_s=clock.cpu['report_analysis_slice'],
                                     full_trajectories_wall_s=clock.wall['report_analysis_full'],
                                     full_trajectories_cpu_s=clock.cpu['report_analysis_full'],
                                     note='the full run is analysed on its committed compact trajectories (LLC '
                                          'checkpoints and ~60 log-spaced steps per net)'),
                report_full_estimate=report_full,
                records=dict(slice=rec_slice, full=rec_full),
                full_estimate=dict(wall_s=float(df.wall_s_full.sum()), cpu_s=float(df.cpu_s_full.sum())),
                committed_full_run=json.loads((COMPACT / 'mnist-seeds' / 'full' / 'timing.json').read_text()),
                summary_rows=len(rep['summary']))
    return df, info


def _workloads(nets, X, y, run, bench_net, Xb, yb, quick: bool) -> list:
    "(name, per, run(n), n1, n2): the loops whose calls are counted, each run for n steps."
    from fracsgd.bench.llc import _bench_settings
    from fracsgd.train.ensemble import EnsembleTrainer
    from fracsgd.llc.estimate import estimate_llc
    from fracsgd.nets.stack import resolve_loss
    from fracsgd.studies import mnist_runs as mr
    base = run.settings().replace(every=10, llc_every=0)           # records every 10 steps: amortized exactly
    def trainer(n):
        return EnsembleTrainer(nets, range(len(nets)), (X, y), resolve_loss('classification'), base.replace(n_steps=n),
                               X.device)
    def steps_only(n):
        t = trainer(n)
        for _ in range(n):
            t.step()
    k = (10, 20) if quick else (20, 40)
    out = [('ensemble trainer: step (50 nets, batch 256)', 'training step', steps_only, *k),
           ('+ recording every 10 steps', 'training step', lambda n: trainer(n).run(), *k),
           ('+ explored-volume cells (10 nets, 2 cell sizes)', 'training step',
            lambda n: trainer(n).run(observers=[mr.VolumeCounter(run.volume_eps)]), *k)]
    m = (20, 40) if quick else (100, 200)                          # multiples of 20 (diagnostics) and 50 (NaN scan)
    for every in (20, 0):
        s = _bench_settings(len(Xb), m[0], 256).replace(n_chains=1, diag_every=every)
        out.append((f'SGLD, benchmark (1 chain of 784-128-64-10), diagnostics ' + (f'every {every}' if every else 'off'),
                    'SGLD step', lambda n, s=s: estimate_llc(bench_net, (Xb, yb), 'classification', s.replace(n_draws=n)),
                    *m))
    for every in (20, 0):
        s = mr.llc_setting(run.llc).replace(diag_every=every)
        out.append((f'SGLD, study (50 nets x 1 chain), diagnostics ' + (f'every {every}' if every else 'off'),
                    'SGLD step of all 50 chains',
                    lambda n, s=s: estimate_llc(nets, (X, y), 'classification', s.replace(n_draws=n)), *m))
    return out


def _cpu_per_step(fn, n1, n2, repeats=3) -> float:
    "CPU seconds per step: the least over `repeats` of (time of fn(n2) - time of fn(n1)) / (n2 - n1)."
    def t(n):
        c = time.process_time()
        fn(n)
        return time.process_time() - c
    return min((t(n2) - t(n1)) / (n2 - n1) for _ in range(repeats))


def counts(quick: bool = False) -> pd.DataFrame:
    """Operator calls and host syncs per step of each loop (the study's nets); and its host time per step, measured
    on the same loop with nets 8 wide (the same operators, negligible arithmetic): dispatch, Python and vmap alone."""
    from fracsgd.bench.timing import per_step
    from fracsgd.bench.llc import _mnist
    from fracsgd.nets.models import make_mlp
    from fracsgd.studies import mnist_runs as mr
    from fracsgd.studies.mnist_seeds import FULL, STUDY

    machine = _machine()
    run = STUDY.runs(FULL)[0]
    data = mr.run_data(run)
    X, y = data.train
    Xb, yb, source = _mnist(5000, 'cpu')
    real = _workloads(STUDY.build_models(run), X, y, run, make_mlp([784, 128, 64, 10], seed=0), Xb, yb, quick)
    g = torch.Generator().manual_seed(0)
    Xn, yn = torch.randn(len(X), 8, generator=g), torch.randint(0, 10, (len(X),), generator=g)
    narrow_nets = [make_mlp([8, 8, 8, 8, 10], batch_norm=True, seed=i) for i in range(run.n_nets)]
    narrow = _workloads(narrow_nets, Xn, yn, run, make_mlp([8, 8, 8, 10], seed=0), Xn, yn, quick)
    rows, sites, previous = [], {}, None
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        for (name, per, fn, n1, n2), (_, _, fn_narrow, _, _) in zip(real, narrow):
            c = per_step(fn, n1, n2)
            sites[name] = c.pop('by_site')
            row = dict(workload=name, per=per, **c, host_ms=1e3 * _cpu_per_step(fn_narrow, n1, n2),
                       cpu_ms=1e3 * _cpu_per_step(fn, n1, n2, repeats=1))
            rows.append(row)
            print(row, flush=True)
    df = pd.DataFrame(rows)
    info = dict(machine=machine, data=dict(source=data.source, warning=data.warning, benchmark=source),
                host_ms='CPU ms per step of the same loop with nets 8 wide (8-8-8-8-10 with batch norm; 8-8-8-10 '
                        'for the benchmark), random data of that width: the host-side cost alone',
                cpu_ms='CPU ms per step of the loop itself (one run, unprofiled)',
                fixed='fixed_*: the counts of one call less its steps (trainer set-up and table; the LLC estimate '
                      'set-up, baseline L_n(w*) and assembly)', by_site=sites)
    return df, info


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('what', choices=['phases', 'counts'])
    ap.add_argument('--steps', type=int, default=300)
    ap.add_argument('--calibrated-nets', type=int, default=2)
    ap.add_argument('--quick', action='store_true', help='counts: fewer steps (a check, not for the record)')
    ap.add_argument('--smoke', action='store_true', help='phases: the smoke preset (a check of this script)')
    ap.add_argument('--out', default=str(OUT))
    a = ap.parse_args()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    name = 'mnist_seeds_phases' if a.what == 'phases' else 'host_syncs'
    df, info = phases(a.steps, a.calibrated_nets, a.smoke) if a.what == 'phases' else counts(a.quick)
    df.to_csv(out / f'{name}.csv', index=False, float_format='%.4g')
    (out / f'{name}.json').write_text(json.dumps(dict(info, command=f'python tools/profile_mnist_seeds.py {a.what}'),
                                                 indent=1, default=str) + '\n')
    pd.set_option('display.width', 200)
    print(df.to_string(index=False))
    print(json.dumps({k: v for k, v in info.items() if k != 'by_site'}, indent=1, default=str))


if __name__ == '__main__':
    main()
