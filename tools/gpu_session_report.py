"""The report of one GPU session (tools/gpu_session.sh), as committed under nbs/bench/gpu_sessions/: the machine, the
SGLD step against its floor, mnist-seeds --full timed by phase and its summary beside the committed CPU run's, the
other full experiments' times, and each finished mnist-architectures run beside the committed CPU run.

    python tools/gpu_session_report.py SESSION_DIR [ARCH_RUNS_DIR] --note TEXT --out nbs/bench/gpu_sessions/DATE-CARD.json

SESSION_DIR holds what gpu_session.sh wrote (small.tgz and seeds_full.tgz unpacked: machine.txt, step.json, full.log,
seeds-full/); ARCH_RUNS_DIR is an mnist-architectures --full folder, finished or not.
"""
import argparse, json, re, sys, warnings
from pathlib import Path
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
COMPACT = ROOT / 'nbs/ledger/compact'


def seconds_command(log: Path) -> float:
    "The end-to-end seconds of `fracsgd run mnist-seeds --full` (interpreter start and report included)."
    return float(re.findall(r'exit 0 after ([0-9.]+) s', log.read_text())[-1])


def seeds_rows(folder: Path) -> list[dict]:
    "The GPU run's summary rows beside the committed CPU run's, with whether each value lies in the other's interval."
    gpu = pd.read_csv(folder / 'summary.csv')
    cpu = pd.read_csv(COMPACT / 'mnist-seeds/full/summary.csv')
    m = gpu.merge(cpu, on='quantity', suffixes=('_gpu', '_cpu'))
    m['gpu_in_cpu_interval'] = (m.value_gpu >= m.ci_low_cpu) & (m.value_gpu <= m.ci_high_cpu)
    cols = ['quantity', 'value_gpu', 'ci_low_gpu', 'ci_high_gpu', 'value_cpu', 'ci_low_cpu', 'ci_high_cpu',
            'gpu_in_cpu_interval']
    return json.loads(m[cols].to_json(orient='records'))


def architecture_rows(folder: Path) -> list[dict]:
    "Each finished architecture run's final LLC, slope, d_s and test accuracy beside the committed CPU run's."
    sys.path.insert(0, str(ROOT))
    from fracsgd.studies.mnist_architectures import FULL, per_architecture
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        gpu, _ = per_architecture(folder, FULL)
    cpu = pd.read_csv(COMPACT / 'mnist-architectures/full/per_architecture.csv')
    m = gpu.merge(cpu, on='key', suffixes=('_gpu', '_cpu'))
    seconds = {p.parent.name: json.loads(p.read_text())['seconds'] for p in Path(folder).glob('runs/*/run.json')}
    m['seconds_gpu'] = m.key.map(seconds)
    cols = ['key', 'architecture_gpu', 'seconds_gpu'] + [f'{c}_{d}' for c in ('llc_final', 'slope', 'd_s', 'test_accuracy')
                                                          for d in ('gpu', 'cpu')] + ['llc_final_ci_low_cpu', 'llc_final_ci_high_cpu']
    return json.loads(m[cols].rename(columns={'architecture_gpu': 'architecture'}).to_json(orient='records'))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('session', type=Path)
    ap.add_argument('architectures', type=Path, nargs='?')
    ap.add_argument('--note', default='')
    ap.add_argument('--extra', type=Path, help='a JSON file of further keys (what a second call measured)')
    ap.add_argument('--out', type=Path, required=True)
    a = ap.parse_args()
    date, commit, card, cores, torch_version = (a.session / 'machine.txt').read_text().split('\n')[:5]
    run = json.loads((a.session / 'seeds-full/runs').glob('*/run.json').__next__().read_text())
    report = dict(date=date, commit=commit, card=card, cores=int(cores), torch=torch_version, note=a.note,
                  sgld_step=json.loads((a.session / 'step.json').read_text()),
                  mnist_seeds_full=dict(seconds_command=seconds_command(a.session / 'seeds.log'),
                                        seconds_run=run['seconds'], phases={k: v for k, v in run['metrics'].items()
                                                                              if k.startswith('seconds')},
                                        summary=seeds_rows(a.session / 'seeds-full')),
                  full_log=(a.session / 'full.log').read_text().splitlines(),
                  architectures=architecture_rows(a.architectures) if a.architectures else [])
    if a.extra:
        report.update(json.loads(a.extra.read_text()))
    a.out.write_text(json.dumps(report, indent=1) + '\n')
    print(f'wrote {a.out}')


if __name__ == '__main__':
    main()
