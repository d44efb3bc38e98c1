"""Peak memory of a study's preset, measured as a user runs it: `fracsgd run STUDY --preset P` in a fresh folder,
its process tree sampled every 0.2 s from /proc (Linux).

For every process of the tree it keeps the peak resident set (RSS); for the tree as a whole, the peak of the summed
proportional set size (PSS: a page shared by k processes counts 1/k in each, so the sum is what the run really
holds) and, as an upper bound, of the summed RSS. One row per measurement is added to (or replaces the row of the
same study, preset and workers in) the CSV given with --out, written whole:

    python tools/measure_memory.py tiny-imagenet --preset quick --stand-in
    python tools/measure_memory.py --all-smoke

Columns: study, preset, stand_in, workers (the runner's choice unless --workers), peak_worker_rss_gb (the largest
worker), peak_driver_rss_gb, peak_total_pss_gb, peak_total_rss_gb, wall_s, cores, date, machine.
"""
from __future__ import annotations
import argparse, datetime, json, os, platform, shutil, subprocess, sys, tempfile, time
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / 'nbs' / 'bench' / 'memory.csv'
GB = 2 ** 30


def _children(pid: int) -> list[int]:
    "Every descendant of `pid` (from /proc/<pid>/task/*/children)."
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        for task in Path(f'/proc/{p}/task').glob('*'):
            try:
                kids = [int(k) for k in (task / 'children').read_text().split()]
            except OSError:
                continue
            out += kids
            todo += kids
    return out


def _kb(path: Path, field: str) -> int:
    try:
        for line in path.read_text().splitlines():
            if line.startswith(field + ':'):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def measure(study: str, preset: str, stand_in: bool = False, workers: int | None = None, every: float = 0.2) -> dict:
    "Run the preset in a temporary folder and return its peak memory and wall time."
    folder = Path(tempfile.mkdtemp(prefix='fracsgd-memory-'))
    cmd = [str(Path(sys.executable).with_name('fracsgd')), 'run', study, '--preset', preset, '--out', str(folder / 'run'),
           '--no-progress'] + (['--stand-in'] if stand_in else []) + (['--workers', str(workers)] if workers else [])
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    driver, worker_peak, pss_peak, rss_peak, seen = 0, 0, 0, 0, set()
    while proc.poll() is None:
        kids = _children(proc.pid)
        seen.update(kids)
        rss = {p: _kb(Path(f'/proc/{p}/status'), 'VmRSS') for p in [proc.pid, *kids]}
        pss = sum(_kb(Path(f'/proc/{p}/smaps_rollup'), 'Pss') for p in rss)
        driver = max(driver, rss[proc.pid])
        worker_peak = max([worker_peak, *(rss[p] for p in kids)])
        pss_peak, rss_peak = max(pss_peak, pss), max(rss_peak, sum(rss.values()))
        time.sleep(every)
    log = proc.stdout.read()
    wall = time.perf_counter() - t0
    try:
        used = json.loads((folder / 'run' / 'meta.json').read_text()).get('workers', '')
    except OSError:
        used = ''
    shutil.rmtree(folder, ignore_errors=True)
    if proc.returncode:
        raise RuntimeError(f'{" ".join(cmd)} failed ({proc.returncode}):\n{log[-2000:]}')
    return dict(study=study, preset=preset, stand_in=stand_in, workers=used, processes_seen=len(seen),
                peak_worker_rss_gb=round(worker_peak / GB, 3), peak_driver_rss_gb=round(driver / GB, 3),
                peak_total_pss_gb=round(pss_peak / GB, 3), peak_total_rss_gb=round(rss_peak / GB, 3),
                wall_s=round(wall, 1), cores=len(os.sched_getaffinity(0)), date=datetime.date.today().isoformat(),
                machine=f'{platform.machine()}, {os.cpu_count()} cores, '
                        f'{os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / GB:.0f} GB')


def save(row: dict, out: Path = OUT) -> pd.DataFrame:
    "Add `row` to the table at `out` (replacing the row of the same study, preset, stand-in and workers), whole."
    table = pd.read_csv(out) if out.exists() else pd.DataFrame()
    if len(table):
        same = ((table.study == row['study']) & (table.preset == row['preset']) & (table.stand_in == row['stand_in']))
        table = table[~same]
    table = pd.concat([table, pd.DataFrame([row])], ignore_index=True).sort_values(['study', 'preset'])
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f'.{out.name}.tmp')
    table.to_csv(tmp, index=False)
    tmp.replace(out)
    return table


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('study', nargs='?')
    ap.add_argument('--preset', default='smoke')
    ap.add_argument('--stand-in', action='store_true')
    ap.add_argument('--workers', type=int)
    ap.add_argument('--all-smoke', action='store_true', help="every study's smoke preset")
    ap.add_argument('--out', type=Path, default=OUT)
    args = ap.parse_args(argv)
    if args.all_smoke:
        from fracsgd.studies import STUDIES
        jobs = [(s, 'smoke', s in ('tiny-imagenet', 'cifar10')) for s in STUDIES]
    else:
        jobs = [(args.study, args.preset, args.stand_in)]
    for study, preset, stand in jobs:
        row = measure(study, preset, stand, args.workers)
        print(row, flush=True)
        save(row, args.out)


if __name__ == '__main__':
    main()
