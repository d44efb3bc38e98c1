"""Build the documentation site of fracsgd into `_site/` from the root `_quarto.yml`.

    python tools/site.py build [--no-execute] [--workers N] [--renderer auto|quarto|smalldocs] [--out DIR] [--proc DIR]
    python tools/site.py katex           # fetch the KaTeX files (npm registry) into the venv, once

Steps of `build`:
1. Prepare: every notebook of `nbs/` goes through nbdev's own documentation processors (`FilterDefaults`, as
   `nbdev.serve.proc_nbs` applies them for Quarto) into `_proc/`, one fresh process per notebook (forked from a
   server that has imported torch, pandas, nbdev and fracsgd once). With
   `--execute` (the default) nbdev's `exec_show_docs` is replaced by a processor that runs EVERY code cell with
   execnb (cwd = the notebook's folder, IN_TEST=1, as `nbdev_test` does), so the page shows outputs, tables, plots
   and the `show_doc` API docs. Cells flagged with a test flag of settings.ini (`#| heavy`, `#| gpu`) are not run:
   their code is shown with a visible note. A cell that raises fails the build, naming notebook and cell.
   Each page is named as nbdev names it (`00_core.ipynb` -> `core.html`), ordered by the numeric prefix.
2. Render `_proc/` with the root `_quarto.yml` copied beside the notebooks: `quarto render` when `quarto` is on
   PATH, else smalldocs (pure Python, reads `_quarto.yml`). The result is moved to `_site/`.
3. Post-process the HTML: KaTeX from `site_libs/katex/` (copied from the npm package `katex`, never a CDN), and
   links into the site's own public address (nbdev's doc links) made relative, so the site works offline.
"""
from __future__ import annotations

import argparse, json, os, re, shutil, signal, subprocess, sys, tarfile, tempfile, threading, time
from concurrent.futures import ThreadPoolExecutor, as_completed
from configparser import ConfigParser
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
KATEX_VERSION = '0.16.11'  # the version smalldocs' pages ask for; any 0.16.x renders the same markup
KATEX_DIR = Path(sys.prefix) / 'share' / f'katex-{KATEX_VERSION}'  # inside the venv: installed, not committed
CDN_KATEX = re.compile(r'https://cdn\.jsdelivr\.net/npm/katex@[^/"\']*/dist/?')
WEB_IMPORT = re.compile(r'@import\s+(?:url\(\s*["\']?(?:https?:)?//[^)]*\)|["\'](?:https?:)?//[^"\']*["\'])[^;]*;', re.I)
WEB_URL_IN_CSS = re.compile(r'(?:@import\s+|url\()\s*["\']?(?:https?:)?//', re.I)
EXTERNAL_ASSET = re.compile(r'<(?:script|link)\b[^>]*\b(?:src|href)\s*=\s*["\'](?:https?:)?//[^"\']*["\']', re.I)


def settings() -> dict:
    "The `[DEFAULT]` section of settings.ini."
    cfg = ConfigParser(delimiters=['='])
    cfg.read(ROOT / 'settings.ini', encoding='utf-8')
    return dict(cfg['DEFAULT'])


def notebooks(nbs: Path) -> list[Path]:
    "The notebooks that become pages: every `.ipynb` under `nbs/`, except names or folders starting with `_` or `.`."
    out = []
    for p in sorted(nbs.rglob('*.ipynb')):
        rel = p.relative_to(nbs)
        if any(part.startswith(('_', '.')) for part in rel.parts): continue
        out.append(p)
    return out


def page_name(nb: Path) -> str:
    "The page's file stem as nbdev names it: the numeric prefix dropped (`00_core` -> `core`)."
    return re.sub(r'^\d+[a-zA-Z0-9]*_', '', nb.stem)


# ----------------------------------------------------------------------------------------------- notebook processing

def process_one(src: Path, dst: Path, execute: bool, order: int, nbs: Path) -> None:
    "Run nbdev's doc processors on one notebook (executing it when asked) and write the result to `dst`."
    os.environ['IN_TEST'] = '1'  # as nbdev_test and nbdev's doc processor set it
    os.environ.setdefault('MPLBACKEND', 'Agg')
    from execnb.nbio import read_nb, write_nb, mk_cell
    from execnb.shell import CaptureShell
    from nbdev.processors import FilterDefaults, add_show_docs, exec_show_docs
    from nbdev.process import Processor

    flags = set(settings().get('tst_flags', '').replace('|', ' ').split())

    class mark_skipped(Processor):
        "Put a visible note after each cell whose test flag (`#| heavy`, `#| gpu`) keeps it from running here."
        def begin(self):
            for cell in reversed(list(self.nb.cells)):
                found = sorted(flags & set(getattr(cell, 'directives_', {}) or {})) if cell.cell_type == 'code' else []
                if not found: continue
                cell.skipped_ = True
                note = mk_cell(
                    '::: {.callout-note title="Not run in this build"}\n'
                    f'The cell above is marked `#| {found[0]}`: it is too slow for the documentation build (and for CI), '
                    'so it was not run here and has no output on this page. Run the notebook yourself to see it.\n:::',
                    'markdown')
                note.skip_note_ = True
                self.nb.cells.insert(cell.idx_ + 1, note)

    class exec_all(Processor):
        "Run every code cell in one execnb shell, except flagged cells, `eval: false` cells and `nbdev_export()`."
        def begin(self):
            self.k = CaptureShell(src)
            self.k.run_cell('from nbdev.showdoc import show_doc')

        def __call__(self, cell):
            if cell.cell_type != 'code' or not cell.source.strip() or getattr(cell, 'skipped_', False): return
            d = getattr(cell, 'directives_', {}) or {}
            if d.get('eval:', [''])[0].lower() == 'false': return
            if 'nbdev_export' + '(' in cell.source: return
            self.k.cell(cell)
            if self.k.exc:
                tb = self.k.prettytb(fname=src) if hasattr(self.k, 'prettytb') else repr(self.k.exc)
                raise RuntimeError(f'{src.relative_to(nbs)}: cell {cell.idx_} raised while building the docs:\n'
                                   f'{cell.source}\n{tb}')

    class Procs(FilterDefaults):
        def base_procs(self):
            procs = list(super().base_procs())
            if execute:  # run the cells as nbdev_test does: right after nbdev adds its show_doc cells, before any rewrite
                procs.remove(exec_show_docs)
                i = procs.index(add_show_docs) + 1
                procs[i:i] = [mark_skipped, exec_all]
            else:
                procs.insert(procs.index(exec_show_docs), mark_skipped)
            return procs

    os.chdir(src.parent)
    nb = read_nb(src)
    Procs()(nb)
    fm = getattr(nb, 'frontmatter_', {}) or {}
    front = nb.cells[0] if nb.cells and nb.cells[0].cell_type == 'raw' and nb.cells[0].source.startswith('---') else None
    if front is None:  # a notebook without a title: give it one, so the sidebar can name it
        nb.cells.insert(0, mk_cell(f'---\ntitle: {json.dumps(page_name(src).replace("_", " ").title())}\n---', 'raw'))
        front = nb.cells[0]
    if 'order' not in fm:
        front.source = front.source.rstrip().removesuffix('---').rstrip() + f'\norder: {order}\n---'
    for c in nb.cells:  # our private markers must not reach the JSON
        for k in ('skipped_', 'skip_note_'): c.pop(k, None)
    dst.parent.mkdir(parents=True, exist_ok=True)
    write_nb(nb, dst)


def prepare(proc: Path, execute: bool, workers: int, nbs: Path | None = None, timeout: float = 900) -> list[tuple[Path, float]]:
    "Process every notebook of `nbs` (default: nbs_path of settings.ini) into `proc`, in parallel processes; return (notebook, seconds) pairs."
    nbs = (nbs or ROOT / settings().get('nbs_path', 'nbs')).resolve()
    if proc.exists(): shutil.rmtree(proc)
    proc.mkdir(parents=True)
    nbl = notebooks(nbs)
    if not nbl: raise SystemExit(f'no notebooks in {nbs}')
    jobs, seen = [], {}
    for i, nb in enumerate(nbl):
        rel = nb.relative_to(nbs)
        dst = proc / rel.parent / f'{page_name(nb)}.ipynb'
        if dst in seen:
            raise SystemExit(f'{rel} and {seen[dst]} both become the page {dst.relative_to(proc).with_suffix(".html")}: rename one')
        seen[dst] = rel
        jobs.append((nb, dst, 0 if rel.as_posix() == 'index.ipynb' else i + 1))  # the home page first
    for f in nbs.rglob('*'):  # pictures, .qmd/.md pages, css and the like, as nbdev's proc_nbs copies them
        rel = f.relative_to(nbs)
        if f.is_file() and f.suffix != '.ipynb' and not any(p.startswith(('_', '.')) for p in rel.parts) \
                and f.name not in ('sidebar.yml', 'nbdev.yml', 'settings.ini'):
            (proc / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(f, proc / rel)
    shutil.copy2(ROOT / '_quarto.yml', proc / '_quarto.yml')
    shutil.copy2(Path(__file__).with_name('site.css'), proc / 'styles.css')

    def run(job):
        nb, dst, order = job
        t = time.time()
        argv = ['_process', str(nb), str(dst), str(order), str(nbs)] + ([] if execute else ['--no-execute'])
        if stop.is_set(): return nb, 0.0
        with tempfile.NamedTemporaryFile('w+', suffix='.log', prefix='fracsgd-page-') as err:
            p = start_notebook(argv, share_env, err.name)
            running.add(p)
            try:
                p.join(timeout)
                if p.is_alive():
                    _stop_group(p, signal.SIGKILL); p.join()
                    raise BuildError(f'{nb.relative_to(nbs)} took more than {timeout:.0f}s to run: mark its slow cells `#| heavy`')
            finally:
                running.discard(p)
            if p.exitcode:
                if stop.is_set(): return nb, 0.0  # stopped because another notebook failed
                raise BuildError(f'{nb.relative_to(nbs)} failed:\n{Path(err.name).read_text()[-6000:]}')
        dt = time.time() - t
        print(f'  {dt:6.1f}s  {nb.relative_to(nbs)} -> {dst.relative_to(proc)}', flush=True)
        return nb, dt

    # each notebook gets its share of the cores (fracsgd.core.cpu_cores reads FRACSGD_CPUS; torch's default thread
    # count follows OMP_NUM_THREADS): two notebooks with two threads each on two cores ran 2.7 times slower
    from fracsgd.core import share_of_cores
    share_env = share_of_cores(workers)
    running, stop = set(), threading.Event()
    ex = ThreadPoolExecutor(max_workers=max(1, workers))
    futures = [ex.submit(run, j) for j in jobs]
    try:
        for f in as_completed(futures): f.result()  # the first failure stops the build
    except BaseException:
        stop.set()
        for p in list(running): _stop_group(p)  # only the processes this build started, and their workers
        ex.shutdown(wait=True, cancel_futures=True)
        raise
    ex.shutdown()
    return [f.result() for f in futures]


# Every notebook runs in a fresh process, forked from a server that has already imported what the pages import
# (torch, pandas, matplotlib, nbdev, fracsgd): about 4 s of imports per page saved, a sixth of the build on two
# cores. The server never runs a tensor operation, so no OpenMP thread pool exists when it forks; each page sets its
# own share of the threads. Modules that fail to import (an optional package) are left to the page.
PRELOAD = ['numpy', 'pandas', 'scipy.optimize', 'scipy.stats', 'matplotlib.pyplot', 'torch', 'torch.func',
           'execnb.shell', 'execnb.nbio', 'nbdev.processors', 'nbdev.showdoc', 'fracsgd.experiment.runner', 'fracsgd.llc.sgld',
           'fracsgd.train.ensemble', 'fracsgd.llc.estimate', 'fracsgd.diffusion.spectral', 'fracsgd.diffusion.crossover', 'fracsgd.ledger.claims']


def _page_process(argv: list[str], env: dict, err_path: str):
    "In the forked child: its own process group, the page's environment and threads, stderr to `err_path`, then `main`."
    import multiprocessing
    os.setsid()
    os.environ.clear(); os.environ.update(env)
    multiprocessing.set_start_method(None, force=True)  # the platform's default, as in a fresh interpreter
    with open(os.devnull, 'w') as null, open(err_path, 'w') as err:
        os.dup2(null.fileno(), 1); os.dup2(err.fileno(), 2)
    sys.stdout, sys.stderr = open(1, 'w', closefd=False), open(2, 'w', closefd=False)
    if 'torch' in sys.modules and env.get('OMP_NUM_THREADS'):
        sys.modules['torch'].set_num_threads(int(env['OMP_NUM_THREADS']))
    main(argv)


def start_notebook(argv: list[str], env: dict, err_path: str):
    "Start `site.py ARGV` as a process forked from the preloaded server (a `multiprocessing.Process`)."
    import multiprocessing as mp
    ctx = mp.get_context('forkserver')
    if not getattr(start_notebook, 'preloaded', False):
        os.environ.setdefault('MPLBACKEND', 'Agg')
        ctx.set_forkserver_preload(PRELOAD)  # takes effect if this process has not started its fork server yet
        start_notebook.preloaded = True
    # exec of a line, not this module's function: the tests load this file under another module name
    code = (f'import runpy; runpy.run_path({str(Path(__file__).resolve())!r}, run_name="fracsgd_site")'
            f'["_page_process"]({argv!r}, {dict(env)!r}, {err_path!r})')
    p = ctx.Process(target=exec, args=(code,), daemon=False)
    p.start()
    return p


def _stop_group(p, sig=None):
    "Signal the process group of `p` (the notebook and any workers it started), SIGTERM by default."
    try:
        os.killpg(p.pid, sig or signal.SIGTERM)
    except ProcessLookupError:
        pass


class BuildError(SystemExit):
    "The site cannot be built; the message says why."


# ----------------------------------------------------------------------------------------------------------- KaTeX

def ensure_katex() -> Path:
    "The `dist/` folder of the npm package katex, fetched once with `npm pack` from the npm registry."
    dist = KATEX_DIR / 'dist'
    if (dist / 'katex.min.js').is_file() and (dist / 'contrib' / 'auto-render.min.js').is_file(): return dist
    if not shutil.which('npm'):
        raise SystemExit('KaTeX is missing and `npm` is not on PATH: install Node.js/npm (Debian package npm), '
                         f'or unpack the npm package katex@{KATEX_VERSION} into {KATEX_DIR}')
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(['npm', 'pack', '--silent', f'katex@{KATEX_VERSION}'], cwd=tmp, check=True, capture_output=True)
        tgz = next(Path(tmp).glob('katex-*.tgz'))
        with tarfile.open(tgz) as tf:
            members = [m for m in tf.getmembers() if m.name.startswith('package/dist/') and m.isfile()]
            tf.extractall(tmp, members=members, filter='data')
        staged = KATEX_DIR.with_name(KATEX_DIR.name + '.tmp')
        if staged.exists(): shutil.rmtree(staged)
        staged.mkdir(parents=True)
        shutil.move(str(Path(tmp) / 'package' / 'dist'), staged / 'dist')
        if KATEX_DIR.exists(): shutil.rmtree(KATEX_DIR)
        staged.rename(KATEX_DIR)  # whole or not at all
    return dist


# ----------------------------------------------------------------------------------------------------------- render

def render(proc: Path, renderer: str) -> Path:
    "Render the prepared project; return the folder holding the rendered site."
    if renderer == 'auto': renderer = 'quarto' if shutil.which('quarto') else 'smalldocs'
    print(f'rendering {proc.relative_to(ROOT) if proc.is_relative_to(ROOT) else proc} with {renderer}', flush=True)
    if renderer == 'quarto':
        subprocess.run(['quarto', 'render', str(proc), '--no-execute'], check=True)
    elif renderer == 'smalldocs':
        from smalldocs.site import build as sd_build
        site = sd_build(proc, quiet=True)
        harmless = ('output-file is not read', 'html-math-method is ignored')  # Quarto-only keys, handled here
        for w in site.warnings:
            if not any(h in w for h in harmless): print(f'  smalldocs: {w}', file=sys.stderr)
    else:
        raise SystemExit(f'unknown renderer {renderer!r}: use auto, quarto or smalldocs')
    return proc / '_site'


def postprocess(site: Path, katex: Path) -> list[str]:
    "Serve KaTeX locally, make links to the site's own public address relative; return pages that still load assets from the web."
    cfg = settings()
    base = cfg.get('doc_baseurl', '').strip('/')
    own = cfg.get('doc_host', '').rstrip('/') + '/' + (base + '/' if base else '')  # nbdev's doc links point here
    shutil.copytree(katex, site / 'site_libs' / 'katex', dirs_exist_ok=True)
    bad = []
    for css in site.rglob('*.css'):  # themes @import web fonts (Google Fonts): drop them, the fallback fonts are local
        text = css.read_text(encoding='utf-8', errors='surrogateescape')
        new = WEB_IMPORT.sub('', text)
        if new != text: css.write_text(new, encoding='utf-8', errors='surrogateescape')
        if WEB_URL_IN_CSS.search(new): bad.append(str(css.relative_to(site)))
    for page in site.rglob('*.html'):
        up = '../' * (len(page.relative_to(site).parts) - 1)
        text = page.read_text(encoding='utf-8')
        new = CDN_KATEX.sub(f'{up}site_libs/katex/', text)
        if own.startswith('http'):
            new = new.replace(f'href="{own}', f'href="{up}')
        if new != text: page.write_text(new, encoding='utf-8')
        if EXTERNAL_ASSET.search(new): bad.append(str(page.relative_to(site)))
    return bad


def build(out: Path, proc: Path, execute: bool = True, workers: int = 2, renderer: str = 'auto', nbs: Path | None = None,
          timeout: float = 900) -> dict:
    "Prepare, render and post-process the site into `out`; return timings."
    t0 = time.time()
    katex = ensure_katex()
    print(f'preparing notebooks ({"executing" if execute else "not executing"}, {workers} worker(s))', flush=True)
    times = prepare(proc, execute, workers, nbs, timeout)
    t1 = time.time()
    built = render(proc, renderer)
    if out.exists(): shutil.rmtree(out)
    shutil.move(str(built), out)
    bad = postprocess(out, katex)
    if bad: raise SystemExit(f'pages load scripts or CSS from the web (the site must work offline): {bad}')
    info = {'executed': execute, 'renderer': renderer, 'prepare_s': round(t1 - t0, 1),
            'render_s': round(time.time() - t1, 1), 'notebooks': {n.name: round(s, 1) for n, s in times},
            'built_at': time.time()}
    (out / '.build-info.json').write_text(json.dumps(info, indent=1))
    print(f'site built in {time.time() - t0:.1f}s (prepare {info["prepare_s"]}s, render {info["render_s"]}s): '
          f'{out.relative_to(ROOT) if out.is_relative_to(ROOT) else out}/index.html', flush=True)
    return info


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    sub = p.add_subparsers(dest='cmd', required=True)
    b = sub.add_parser('build', help='build the site into _site/')
    b.add_argument('--no-execute', dest='execute', action='store_false',
                   help='do not run the notebooks (pages then show only the API docs and the code)')
    b.add_argument('--workers', type=int, default=int(os.environ.get('FRACSGD_DOCS_WORKERS', '2')),
                   help='notebooks processed at once (default 2, or FRACSGD_DOCS_WORKERS)')
    b.add_argument('--renderer', default='auto', choices=['auto', 'quarto', 'smalldocs'])
    b.add_argument('--out', type=Path, default=ROOT / '_site')
    b.add_argument('--proc', type=Path, default=ROOT / '_proc')
    b.add_argument('--timeout', type=float, default=900, help='seconds one notebook may take (default 900)')
    b.add_argument('--nbs', type=Path, default=None, help='the notebooks folder (default: nbs_path of settings.ini)')
    sub.add_parser('katex', help=f'fetch KaTeX {KATEX_VERSION} from the npm registry into {KATEX_DIR}')
    one = sub.add_parser('_process')  # internal: one notebook, in its own process
    for a in ('src', 'dst', 'order', 'nbs'): one.add_argument(a)
    one.add_argument('--no-execute', dest='execute', action='store_false')
    a = p.parse_args(argv)
    if a.cmd == 'build':
        build(a.out.resolve(), a.proc.resolve(), a.execute, a.workers, a.renderer, a.nbs, a.timeout)
    elif a.cmd == 'katex':
        print(ensure_katex())
    else:
        process_one(Path(a.src), Path(a.dst), a.execute, int(a.order), Path(a.nbs))


if __name__ == '__main__':
    main()
