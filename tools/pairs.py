"""Every notebook of nbs/ has a percent-format twin in nbs/_scripts/ (jupytext pairing, configured in pyproject.toml).

    python tools/pairs.py --check    # exit 1, naming the files, if a pair differs or a twin is missing
    python tools/pairs.py --sync     # bring every pair together (jupytext --sync: the newer file wins)

nbdev reads only the .ipynb; the script is for editing and reviewing a chapter as plain Python.
"""
import json, subprocess, sys
from pathlib import Path

import jupytext
from jupytext.config import load_jupytext_config

ROOT = Path(__file__).resolve().parents[1]
NBS = ROOT / 'nbs'
SCRIPTS = NBS / '_scripts'


def notebooks() -> list[Path]:
    "The notebooks that nbdev reads: `.ipynb` under nbs/, outside folders starting with `_` or `.`."
    return [p for p in sorted(NBS.rglob('*.ipynb'))
            if not any(part.startswith(('_', '.')) for part in p.relative_to(NBS).parts)]


def twin(nb: Path) -> Path:
    "The percent script paired with notebook `nb`."
    return nb.parent / '_scripts' / (nb.stem + '.py')


def cells(notebook) -> list[tuple[str, str]]:
    "What a pair must agree on: each cell's type and source (outputs live only in the notebook)."
    return [(c.cell_type, c.source.strip()) for c in notebook.cells]


def problems() -> list[str]:
    "One line for each pair that is out of sync, each notebook without a script and each script without a notebook."
    config = load_jupytext_config(str(NBS))
    out = []
    for nb in notebooks():
        script = twin(nb)
        if not script.is_file():
            out.append(f'{nb.relative_to(ROOT)} has no paired script {script.relative_to(ROOT)}')
            continue
        if cells(jupytext.read(nb)) != cells(jupytext.read(script, config=config)):
            out.append(f'{nb.relative_to(ROOT)} and {script.relative_to(ROOT)} differ')
    twins = {twin(nb) for nb in notebooks()}
    out += [f'{s.relative_to(ROOT)} has no notebook' for s in sorted(NBS.rglob('_scripts/*.py')) if s not in twins]
    return out


KERNEL = {'kernelspec': {'display_name': 'python3', 'language': 'python', 'name': 'python3'}}


def new_notebooks() -> None:
    "Make a notebook for each script that has none, with the metadata every notebook of nbs/ carries."
    for script in sorted(SCRIPTS.glob('*.py')):
        nb = NBS / (script.stem + '.ipynb')
        if nb.exists(): continue
        subprocess.run([sys.executable, '-m', 'jupytext', '--to', 'ipynb', '-o', str(nb), str(script)], check=True)
        data = json.loads(nb.read_text())
        data['metadata'] = KERNEL
        nb.write_text(json.dumps(data, indent=1, ensure_ascii=False) + '\n')


if __name__ == '__main__':
    if '--sync' in sys.argv:
        new_notebooks()
        subprocess.run([sys.executable, '-m', 'jupytext', '--sync', *map(str, notebooks())], check=True)
    found = problems()
    for line in found: print(line)
    if '--check' in sys.argv and found:
        sys.exit('notebook pairs out of sync: run `make sync` (the newer file of each pair wins), then commit both')
    if not found: print(f'pairs: {len(notebooks())} notebooks, each in sync with its script in nbs/_scripts/')
