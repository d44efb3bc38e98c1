"""Every study page opens the same way (issue 42, item 6): a short paragraph, its main figure, and the ledger's
verdict table in five columns (claim, paper, ours, scale, verdict) with the longer notes in a collapsed block."""
import ast, json, re
from html.parser import HTMLParser
from pathlib import Path

import pytest

NBS = Path(__file__).resolve().parents[1] / 'nbs'


def cells(nb: Path) -> list[tuple[str, str]]:
    "(type, source) of each cell of a notebook."
    return [(c['cell_type'], ''.join(c['source'])) for c in json.loads(nb.read_text())['cells']]


STUDY_PAGES = sorted(p for p in NBS.glob('*.ipynb') if cells(p)[0][1].startswith('# Study:'))


def words(markdown: str) -> int:
    "Words a reader reads: maths counts as one word, markup as none."
    return len(re.sub(r'\$[^$]*\$', 'x', markdown.replace('**', '')).split())


class Tables(HTMLParser):
    "The header cells of each table and whether a <details> block follows the first table."
    def __init__(self):
        super().__init__()
        self.heads, self.details_after_first, self._in_th = [], False, False
    def handle_starttag(self, tag, attrs):
        if tag == 'table': self.heads.append([])
        if tag == 'th': self._in_th = True
        if tag == 'details' and len(self.heads) == 1: self.details_after_first = True
    def handle_endtag(self, tag):
        if tag == 'th': self._in_th = False
    def handle_data(self, data):
        if self._in_th and data.strip(): self.heads[-1].append(data.strip())


def test_the_study_pages_are_found():
    assert {p.stem for p in STUDY_PAGES} == {
        '20_moons_diffusion', '21a_moons_posterior', '22a_mnist_seeds', '22b_mnist_architectures',
        '22c_mnist_ablations', '24_cifar10_study', '25_tiny_imagenet_study', '26_tinystories_study', '27_grokking'}


@pytest.mark.parametrize('nb', STUDY_PAGES, ids=lambda p: p.stem)
def test_study_page_opens_with_paragraph_figure_and_verdicts(nb):
    _title, (kind, summary), (k1, figure), (k2, table), *_ = cells(nb)
    assert kind == 'markdown' and words(summary) <= 120, f'{nb.name}: opening paragraph of {words(summary)} words'
    assert k1 == 'code' and '#| echo: false' in figure and 'plt.show()' in figure, f'{nb.name}: no figure first'
    assert k2 == 'code' and '#| echo: false' in table and re.search(r'study_(verdicts|table)\(', table), \
        f'{nb.name}: no verdict table'
    tree = ast.parse(table)
    last = tree.body.pop()
    assert isinstance(last, ast.Expr), f'{nb.name}: the table cell must end with the table'
    ns = {}
    exec(compile(tree, nb.name, 'exec'), ns)
    shown = eval(compile(ast.Expression(last.value), nb.name, 'eval'), ns)
    parsed = Tables()
    parsed.feed(shown._repr_html_())
    assert parsed.heads and parsed.heads[0] == ['claim', 'paper', 'ours', 'scale', 'verdict'], parsed.heads[:1]
    assert parsed.details_after_first, f'{nb.name}: the notes are not in a <details> block after the table'


def test_every_study_with_ledger_rows_shows_its_verdict_table():
    # a study whose results put numbers in the ledger has a page that shows them, read from the ledger
    from fracsgd.ledger.claims import read_ledger
    rows = read_ledger()
    studies = {s.split('/')[1] for s in rows[rows.value.notna()].source if s.split('/')[1] not in ('derived', 'paper')}
    shown = {m for nb in NBS.glob('*.ipynb') for _, src in cells(nb) for m in re.findall(r"study_table\('([^']+)'\)", src)}
    assert studies <= shown, f'no page shows the verdict table of {sorted(studies - shown)}'
    assert len(studies) >= 16
