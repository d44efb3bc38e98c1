"""Issue 41, item 7: the automatic LLC rule (`calibrate`, `CALIBRATED_SETTINGS['10nets-auto']`) at the final weights
of the MNIST seeds study's paper-scale run, beside the curvature rule the committed full run used on the same nets.

Runs the seeds study's `final-auto` preset through the runner: the full run's first nets, trained again one per run
(the runner checks nothing here; the report refuses nets whose R(t) differs from the committed full run's, through
`borrow_llc`), then reads that run's `per_net.csv` and writes, next to the seeds chapter,

* nbs/mnist_seeds/final_auto.csv: one row per net, the automatic rule's LLC, s.e., flag, step and localization, and
  the curvature rule's and the paper setting's at the same weights from the committed full run;
* nbs/mnist_seeds/final_auto.json: the date, machine, commit, workers, the runner's measured seconds and the check
  of the nets against the full run.

    FRACSGD_DATA=/path/to/mnist python tools/final_auto_llc.py [--nets 2] [--workers 2]

The run resumes after a stop (the same command again). `--nets` overrides the preset's net count.
"""
import os
os.environ.setdefault('OMP_NUM_THREADS', '1')
import argparse, dataclasses, json, platform, subprocess, time
from datetime import date
from pathlib import Path

from fracsgd.core import committed_dir, read_table, write_table
from fracsgd.experiment.runner import run_study
from fracsgd.ledger.provenance import COMPACT
from fracsgd.studies.mnist_seeds import FINAL_AUTO, STUDY

KEEP = ['run', 'llc_calibrated', 'llc_calibrated_se', 'calibrated_flagged', 'calibrated_step_size',
        'calibrated_localization', 'llc_end/paper', 'test_accuracy']

def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--nets', type=int, default=FINAL_AUTO.n_models)
    ap.add_argument('--workers', type=int, default=2)
    ap.add_argument('--out', default='results/mnist-seeds/final-auto')
    a = ap.parse_args()
    cfg = dataclasses.replace(FINAL_AUTO, n_models=a.nets)
    t0 = time.time()
    res = run_study(STUDY, config=cfg, folder=a.out, workers=a.workers, threads=1)
    seconds = time.time() - t0
    auto = read_table(Path(a.out) / 'per_net.csv')[KEEP]
    full = read_table(COMPACT / 'mnist-seeds' / 'full' / 'per_net.csv')
    curv = full[['run', 'llc_calibrated', 'llc_calibrated_se', 'calibrated_flagged', 'calibrated_step_size',
                 'llc_end/paper']].rename(columns=lambda c: c if c == 'run' else f'full/{c}')
    table = auto.merge(curv, on='run', how='left')
    write_table(table, committed_dir('mnist_seeds', 'final_auto.csv'))
    runs = read_table(Path(a.out) / 'runs.parquet')
    commit = subprocess.run(['git', 'rev-parse', '--short', 'HEAD'], capture_output=True, text=True).stdout.strip()
    meta = dict(date=str(date.today()), machine=f'{platform.machine()} {os.cpu_count()} cores', commit=commit,
                workers=a.workers, threads_per_worker=1, nets=a.nets, seconds_wall_this_call=round(seconds, 1),
                run_seconds=[round(float(s), 1) for s in runs.seconds],
                seconds_calibrated=[round(float(s), 1) for s in runs.seconds_calibrated],
                counts=res.get('counts'), command=f'python tools/final_auto_llc.py --nets {a.nets} --workers {a.workers}')
    committed_dir('mnist_seeds', 'final_auto.json').write_text(json.dumps(meta, indent=1, default=str) + '\n')
    print(table.round(4).to_string())
    print(json.dumps(meta, indent=1, default=str))

if __name__ == '__main__':
    main()
