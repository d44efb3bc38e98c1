"""The GPU check (issue 21): every study's smoke and quick presets through `fracsgd run --device DEVICE`, then
`fracsgd bench llc` and `fracsgd bench ensemble`, into one short report.

    python tools/gpu_check.py --device cuda --out results/gpu-check          # what `make gpu-check` runs
    python tools/gpu_check.py --device cpu --presets smoke --no-bench         # the same script, checked on a CPU

Each study runs in a fresh process (`python -m fracsgd run ...`), so one crash does not stop the others; a study
whose paper data are not on the machine runs its labelled stand-in (`--stand-in`), and the report says so. The
report (`gpu_check.md`, and `gpu_check.json` with the same rows) names the card, the date, the commit, and per
study and preset: ok or the last line of the error, and the seconds. Commit the JSON under nbs/bench/gpu_check/ with
the card and date in its name (a .md there would become a page of the site).
"""
import argparse, datetime, json, os, subprocess, sys, time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def write(path: Path, text: str):
    "Write `text` to `path` whole or not at all, readable by other users."
    from fracsgd.core import atomic_path
    with atomic_path(path) as tmp:
        tmp.write_text(text)


def card(device: str) -> str:
    import torch
    if device.startswith('cuda') and torch.cuda.is_available():
        return torch.cuda.get_device_name(torch.device(device))
    import platform
    return f'{platform.processor() or platform.machine()} CPU, {os.cpu_count()} cores'


def commit() -> str:
    "The commit of the code that runs: $FRACSGD_COMMIT if set (a copied tree's .git may name another), else git's."
    if os.environ.get('FRACSGD_COMMIT'):
        return os.environ['FRACSGD_COMMIT']
    p = subprocess.run(['git', 'rev-parse', '--short', 'HEAD'], cwd=ROOT, capture_output=True, text=True)
    return p.stdout.strip() or 'unknown'


def fracsgd(*args, timeout: float) -> tuple[int, str, float]:
    "Run `python -m fracsgd ARGS` in a fresh process: exit status, its output, seconds."
    t0 = time.perf_counter()
    try:
        p = subprocess.run([sys.executable, '-m', 'fracsgd', *args], capture_output=True, text=True, cwd=ROOT,
                           timeout=timeout, env={**os.environ, 'PYTHONUNBUFFERED': '1'})
        return p.returncode, p.stdout + p.stderr, time.perf_counter() - t0
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b'').decode(errors='replace') if isinstance(e.stdout, bytes) else (e.stdout or '')
        return 124, out + f'\ntimed out after {timeout:.0f} s', time.perf_counter() - t0


def last_error(output: str) -> str:
    "The line that says what went wrong: the last one naming an error, else the last line."
    lines = [l.strip() for l in output.strip().splitlines() if l.strip()]
    named = [l for l in lines if 'Error' in l or l.startswith('fracsgd:') or 'timed out' in l]
    return (named or lines or ['(no output)'])[-1][:300]


def needs_stand_in(name: str) -> str:
    "'' when the study's paper data are here, else why not (the study's own check_data message)."
    from fracsgd.studies import get_study
    study = get_study(name)
    try:
        study.check_data(study.config('quick'))
        return ''
    except (ValueError, OSError) as e:
        return str(e).splitlines()[0][:200]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--device', default='cuda')
    ap.add_argument('--presets', default='smoke,quick', help='comma-separated presets to run per study')
    ap.add_argument('--studies', default='', help='comma-separated studies (default: all)')
    ap.add_argument('--out', default='results/gpu-check')
    ap.add_argument('--timeout', type=float, default=600, help='seconds per study and preset')
    ap.add_argument('--no-bench', action='store_true')
    ap.add_argument('--jobs', type=int, default=1, help='study runs at a time (their seconds then overlap)')
    args = ap.parse_args(argv)
    from fracsgd.studies import STUDIES
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    studies = [s for s in args.studies.split(',') if s] or sorted(STUDIES)
    def one(name_preset):
        name, preset = name_preset
        why = needs_stand_in(name)
        extra = ['--stand-in'] if why else []
        code, output, seconds = fracsgd('run', name, '--preset', preset, '--device', args.device,
                                        '--out', str(out / f'{name}-{preset}'), '--no-progress', *extra,
                                        timeout=args.timeout)
        row = dict(study=name, preset=preset, stand_in=bool(why), ok=code == 0, seconds=round(seconds, 1),
                   error='' if code == 0 else last_error(output), jobs=args.jobs)
        print(f"{name:20s} {preset:6s} {'ok' if code == 0 else 'FAILED':6s} {seconds:7.1f} s "
              f"{'' if code == 0 else row['error']}", flush=True)
        write(out / f'{name}-{preset}.log', output)
        return row
    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(max(1, args.jobs)) as pool:   # each run is its own process: threads only wait
        rows = list(pool.map(one, [(n, p) for n in studies for p in args.presets.split(',')]))
    bench = {}
    if not args.no_bench:
        for what in ('llc', 'ensemble'):
            code, output, seconds = fracsgd('bench', what, timeout=args.timeout)
            bench[what] = dict(ok=code == 0, seconds=round(seconds, 1), output=output.strip())
            print(f'bench {what}: {"ok" if code == 0 else "FAILED"} ({seconds:.0f} s)', flush=True)
    head = dict(date=datetime.date.today().isoformat(), device=args.device, card=card(args.device), commit=commit())
    write(out / 'gpu_check.json', json.dumps(dict(head, studies=rows, bench=bench), indent=1) + '\n')
    lines = [f"# GPU check, {head['date']}: {head['card']} (`--device {args.device}`, commit {head['commit']})", '',
             f"{sum(r['ok'] for r in rows)} of {len(rows)} study runs ok.", '',
             '| study | preset | stand-in | result | seconds |', '|---|---|---|---|---|']
    lines += [f"| {r['study']} | {r['preset']} | {'yes' if r['stand_in'] else ''} | "
              f"{'ok' if r['ok'] else 'FAILED: ' + r['error'].replace('|', '/')} | {r['seconds']} |" for r in rows]
    for what, b in bench.items():
        lines += ['', f'## fracsgd bench {what} ({b["seconds"]} s)', '', '```', b['output'][-4000:], '```']
    write(out / 'gpu_check.md', '\n'.join(lines) + '\n')
    print(f"report: {out / 'gpu_check.md'}")
    return 0 if all(r['ok'] for r in rows) and all(b['ok'] for b in bench.values()) else 1


if __name__ == '__main__':
    sys.exit(main())
