"""The package's import graph: no circle between modules, and no arrow from a lower wing to a higher one.

Every import counts, at module level or inside a function (a late import hides a circle, it does not remove it).
The one exception is the lazy study registry (`fracsgd/studies/__init__.py`): the runner and the ledger import it
inside a function to find a study by name, and it imports the study's module only then. The root package imports nothing of ours
at import time (its first names are looked up on first use), so an arrow into it is not one either."""
import ast, collections, subprocess, sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / 'fracsgd'

# The floors, lowest first: a module may import from its own floor and from the floors below it.
FLOORS = [('fracsgd.core', 'fracsgd.placement'), ('fracsgd.datasets', 'fracsgd.nets'), ('fracsgd.llc',),
          ('fracsgd.train',), ('fracsgd.diffusion',), ('fracsgd.posterior',), ('fracsgd.experiment',),
          ('fracsgd.ledger',), ('fracsgd.bench',), ('fracsgd.studies',), ('fracsgd.cli', 'fracsgd.__main__')]
ROOT_PACKAGE = 'fracsgd'
REGISTRY = 'fracsgd.studies'      # the one named exception, when imported inside a function


def floor(module: str) -> int | None:
    for i, rooms in enumerate(FLOORS):
        if any(module == r or module.startswith(r + '.') for r in rooms):
            return i
    return None


def modules(package: Path = PACKAGE) -> dict:
    "{dotted name: (path, is a package)} of every module of the package but nbdev's index."
    out = {}
    for p in sorted(package.rglob('*.py')):
        if p.name == '_modidx.py':
            continue
        name = '.'.join(p.relative_to(package.parent).with_suffix('').parts)
        out[name.removesuffix('.__init__')] = (p, p.name == '__init__.py')
    return out


def arrows(package: Path = PACKAGE) -> list[tuple[str, str, bool, int]]:
    "(importer, imported, inside a function, line) for every import of one module of the package by another."
    mods, out = modules(package), []
    for m, (p, is_package) in mods.items():
        def visit(node, in_function, m=m, is_package=is_package):
            for child in ast.iter_child_nodes(node):
                inner = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
                if isinstance(child, ast.ImportFrom):
                    base = child.module or ''
                    if child.level:
                        parts = m.split('.') if is_package else m.split('.')[:-1]
                        parts = parts[:len(parts) - child.level + 1]
                        base = '.'.join(parts + ([child.module] if child.module else []))
                    for a in child.names:
                        target = f'{base}.{a.name}' if f'{base}.{a.name}' in mods else base
                        if target in mods and target != m:
                            out.append((m, target, inner, child.lineno))
                elif isinstance(child, ast.Import):
                    out.extend((m, a.name, inner, child.lineno) for a in child.names if a.name in mods and a.name != m)
                visit(child, inner)
        visit(ast.parse(p.read_text()), False)
    return out


def counted(edges) -> list:
    "The arrows that count: all but a late import of the study registry."
    return [(a, b, inner, n) for a, b, inner, n in edges if not (b == REGISTRY and inner)]


def cycles(edges) -> list[list[str]]:
    graph = collections.defaultdict(set)
    for a, b, *_ in counted(edges):
        graph[a].add(b)
    state, stack, found = {}, [], []
    def dfs(u):
        state[u] = 1; stack.append(u)
        for v in sorted(graph[u]):
            if state.get(v) == 1:
                found.append(stack[stack.index(v):] + [v])
            elif not state.get(v):
                dfs(v)
        stack.pop(); state[u] = 2
    for u in sorted(graph):
        if not state.get(u):
            dfs(u)
    return found


def upward(edges) -> list[str]:
    return [f'{a} (line {n}{", in a function" if inner else ""}) imports the higher {b}'
            for a, b, inner, n in counted(edges) if b != ROOT_PACKAGE and floor(b) > floor(a)]


def test_every_module_has_a_floor():
    assert not [m for m in modules() if m != ROOT_PACKAGE and floor(m) is None]


def test_no_circle():
    assert not cycles(arrows()), '\n'.join(' -> '.join(c) for c in cycles(arrows()))


def test_imports_point_down():
    assert not upward(arrows()), '\n'.join(upward(arrows()))


def test_the_root_imports_nothing_at_import_time():
    tree = ast.parse((PACKAGE / '__init__.py').read_text())
    assert not [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]


def test_the_checks_can_fail(tmp_path):
    "A circle made by a late import, and an arrow up, are both found."
    pkg = tmp_path / 'fracsgd'
    for wing in ('llc', 'train'):
        (pkg / wing).mkdir(parents=True)
        (pkg / wing / '__init__.py').write_text('')
    (pkg / '__init__.py').write_text('')
    (pkg / 'llc' / 'a.py').write_text('from ..train.b import f\n')            # llc is below train: up
    (pkg / 'train' / 'b.py').write_text('def f():\n    from fracsgd.llc.a import g\n')
    edges = arrows(pkg)
    assert ('fracsgd.train.b', 'fracsgd.llc.a', True, 2) in edges
    assert cycles(edges) and upward(edges) == ['fracsgd.llc.a (line 1) imports the higher fracsgd.train.b']


def test_the_registry_is_the_one_exception():
    edges = arrows()
    late = [(a, b) for a, b, inner, _ in edges if b == REGISTRY and inner]
    assert ('fracsgd.experiment.runner', REGISTRY) in late          # the runner finds a study by name
    assert not [(a, n) for a, b, inner, n in edges if b == REGISTRY and not inner and floor(a) < floor(REGISTRY)]


def test_no_unused_imports():
    "ruff's F401 (unused import), F811 (redefined unused name) and F821 (undefined name) on the package, tests, tools."
    ruff = Path(sys.executable).parent / 'ruff'
    if not ruff.exists():
        pytest.skip('ruff is not installed (pip install -e ".[dev]")')
    out = subprocess.run([str(ruff), 'check', '--no-cache', '--select', 'F401,F811,F821', '--output-format', 'concise',
                          'fracsgd', 'tests', 'tools'], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr


def test_no_module_over_400_lines():
    long = {m: n for m, (p, _) in modules().items() if (n := len(p.read_text().splitlines())) > 400}
    assert not long, long


def test_no_path_into_nbs_from_the_package_location():
    "Committed results are found from the checkout you work in (core's `source_dir`), not from the installed package."
    found = [f'{p.relative_to(ROOT)}:{i}' for p in PACKAGE.rglob('*.py') if p.name != '_modidx.py'
             for i, line in enumerate(p.read_text().splitlines(), 1)
             if '__file__' in line and ('nbs' in line or 'parents' in line or 'parent.parent' in line)]
    assert not found, found


def test_every_notebook_name_is_defined(tmp_path):
    """ruff's F821 on each chapter's percent script, without the `from nbdev.showdoc import *` that would hide every
    undefined name: a demo or heavy cell that uses a name no cell imports or defines fails here, before the site build."""
    ruff = Path(sys.executable).parent / 'ruff'
    if not ruff.exists():
        pytest.skip('ruff is not installed (pip install -e ".[dev]")')
    for script in sorted((ROOT / 'nbs' / '_scripts').glob('*.py')):
        lines = [l for l in script.read_text().splitlines() if l.strip() != 'from nbdev.showdoc import *']
        (tmp_path / script.name).write_text('\n'.join(lines) + '\n')
    out = subprocess.run([str(ruff), 'check', '--no-cache', '--isolated', '--select', 'F821', '--output-format', 'concise',
                          '--config', "builtins = ['show_doc', 'display']", str(tmp_path)], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout.replace(str(tmp_path) + '/', 'nbs/_scripts/') + out.stderr


STAGES = ('runs', 'load_data', 'build_models', 'train', 'evaluate', 'finish', 'report', 'with_stand_in')

def test_each_study_is_one_class():
    "Every stage a study overrides is a method written in its own module; no module function of a stage's name is left to forward to."
    import importlib
    from fracsgd.experiment.runner import Study
    from fracsgd.studies import STUDIES, get_study
    for name, module in STUDIES.items():
        study, mod = get_study(name), importlib.import_module(module)
        own = [s for s in STAGES if getattr(type(study), s) is not getattr(Study, s, None)]
        assert {'runs', 'report'} <= set(own), (name, own)
        for stage in own:
            assert getattr(type(study), stage).__module__ in (module, 'fracsgd.studies.mnist_runs'), (name, stage)
        left = [f for f in ('runs', 'report', 'train_run', 'evaluate_run', 'finish', 'with_stand_in')
                if callable(getattr(mod, f, None)) and getattr(getattr(mod, f), '__module__', '') == module]
        assert not left, f'{name}: module functions {left} beside its class'
