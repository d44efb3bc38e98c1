"""Write README.md from nbs/index.ipynb (its markdown cells), as `nbdev_readme` would with Quarto.

`python tools/readme.py` writes README.md; `python tools/readme.py --check` exits 1 if README.md is out of date.
"""
import json, sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

def render() -> str:
    nb = json.loads((ROOT / 'nbs' / 'index.ipynb').read_text())
    parts = [''.join(c['source']).strip() for c in nb['cells'] if c['cell_type'] == 'markdown']
    note = '<!-- Generated from nbs/index.ipynb by tools/readme.py: edit the notebook, not this file. -->'
    return note + '\n\n' + '\n\n'.join(parts) + '\n'

if __name__ == '__main__':
    text, path = render(), ROOT / 'README.md'
    if '--check' in sys.argv:
        if path.read_text() != text: sys.exit('README.md is out of date: run `python tools/readme.py`')
    else: path.write_text(text)
