"""The documentation site, as a reader sees it: every page opened in headless Chromium.

The site is built fresh (executing every notebook, heavy cells skipped) into a temporary folder by `tools/site.py build`,
served on 127.0.0.1 by http.server, and each page is opened in Debian's Chromium driven over the Chrome DevTools
Protocol (a small WebSocket client below, standard library only). A test fails on: a notebook without a page, a sidebar
entry or an internal link that leads nowhere (page or #anchor), an image that does not load, a JavaScript error (uncaught
exception, console error, failed request), a request that leaves this machine, maths that KaTeX did not render, an
exported function without its API docs, or a `#| heavy` cell without its "not run" note.

FRACSGD_SITE_DIR=path reuses a site built earlier in the same run (e.g. by `make docs`) when it is newer than every
notebook, module and site source; otherwise the test builds one. FRACSGD_SITE_SCREENSHOT=file.png keeps a screenshot.
"""
from __future__ import annotations

import ast, base64, functools, http.server, json, os, re, shutil, socket, subprocess, sys, tempfile, threading, time
import urllib.request
from pathlib import Path
from urllib.parse import urlparse, urljoin, urldefrag, unquote, quote

import pytest

ROOT = Path(__file__).resolve().parents[1]
NBS = ROOT / 'nbs'
SITE_TOOL = ROOT / 'tools' / 'site.py'
CHROMIUM_FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
                  '--disable-background-networking', '--disable-component-update', '--disable-sync',
                  '--disable-default-apps', '--mute-audio', '--hide-scrollbars', '--window-size=1280,1000']
PAGE_TIMEOUT = 30  # seconds for one page to load: pages are local static files, a few MB at most


# ------------------------------------------------------------------------------------------- minimal CDP client

class CDP:
    "Chrome DevTools Protocol over a WebSocket (RFC 6455 client, text frames only), standard library only."

    def __init__(self, ws_url: str, timeout: float = PAGE_TIMEOUT):
        u = urlparse(ws_url)
        self.sock = socket.create_connection((u.hostname, u.port), timeout=timeout)
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall((f'GET {u.path} HTTP/1.1\r\nHost: {u.hostname}:{u.port}\r\nUpgrade: websocket\r\n'
                           f'Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n').encode())
        head = b''
        while b'\r\n\r\n' not in head:
            chunk = self.sock.recv(4096)
            if not chunk: raise ConnectionError('DevTools closed the connection during the handshake')
            head += chunk
        head, self.buf = head.split(b'\r\n\r\n', 1)
        if b' 101 ' not in head.split(b'\r\n')[0]: raise ConnectionError(f'WebSocket handshake refused: {head[:200]!r}')
        self.next_id, self.events = 0, []

    def _send_frame(self, payload: bytes, opcode: int = 1):
        n, mask = len(payload), os.urandom(4)
        head = bytes([0x80 | opcode])
        head += bytes([0x80 | n]) if n < 126 else (bytes([0x80 | 126]) + n.to_bytes(2, 'big') if n < 65536
                                                   else bytes([0x80 | 127]) + n.to_bytes(8, 'big'))
        masked = (int.from_bytes(payload, 'big') ^ int.from_bytes((mask * (n // 4 + 1))[:n], 'big')).to_bytes(n, 'big') if n else b''
        self.sock.sendall(head + mask + masked)

    def _read(self, n: int) -> bytes:
        while len(self.buf) < n:
            chunk = self.sock.recv(max(65536, n - len(self.buf)))
            if not chunk: raise ConnectionError('DevTools closed the connection')
            self.buf += chunk
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def _message(self) -> dict:
        parts = []
        while True:
            b0, b1 = self._read(2)
            n = b1 & 0x7F
            if n == 126: n = int.from_bytes(self._read(2), 'big')
            elif n == 127: n = int.from_bytes(self._read(8), 'big')
            mask = self._read(4) if b1 & 0x80 else None
            data = self._read(n)
            if mask: data = bytes(c ^ mask[i % 4] for i, c in enumerate(data))
            op = b0 & 0x0F
            if op == 9: self._send_frame(data, 10); continue  # ping -> pong
            if op == 8: raise ConnectionError('DevTools closed the WebSocket')
            if op == 10: continue
            parts.append(data)
            if b0 & 0x80: return json.loads(b''.join(parts))

    def call(self, method: str, **params):
        "Send a command and wait for its result; events that arrive meanwhile are kept in `events`."
        self.next_id += 1
        me = self.next_id
        self._send_frame(json.dumps({'id': me, 'method': method, 'params': params}).encode())
        while True:
            m = self._message()
            if m.get('id') == me:
                if 'error' in m: raise RuntimeError(f'{method}: {m["error"]}')
                return m.get('result', {})
            if 'method' in m: self.events.append(m)

    def wait_event(self, name: str, timeout: float = PAGE_TIMEOUT) -> dict:
        end = time.time() + timeout
        while True:
            for i, e in enumerate(self.events):
                if e['method'] == name: return self.events.pop(i)
            if time.time() > end: raise TimeoutError(f'no {name} within {timeout}s')
            m = self._message()
            if 'method' in m: self.events.append(m)

    def close(self):
        try: self._send_frame(b'', 8)
        except OSError: pass
        self.sock.close()


# ------------------------------------------------------------------------------------------------------ fixtures

def page_name(nb: Path) -> str:
    return re.sub(r'^\d+[a-zA-Z0-9]*_', '', nb.stem)


def source_notebooks() -> list[Path]:
    return [p for p in sorted(NBS.rglob('*.ipynb')) if not any(s.startswith(('_', '.')) for s in p.relative_to(NBS).parts)]


def fresh(site: Path) -> bool:
    "Whether `site` was built (with execution) after the last change to anything it is made from."
    info = site / '.build-info.json'
    if not info.is_file(): return False
    meta = json.loads(info.read_text())
    sources = [*source_notebooks(), *(ROOT / 'fracsgd').rglob('*.py'), ROOT / '_quarto.yml', SITE_TOOL, ROOT / 'settings.ini']
    return bool(meta.get('executed')) and meta['built_at'] > max(p.stat().st_mtime for p in sources)


@pytest.fixture(scope='session')
def site(tmp_path_factory) -> Path:
    given = os.environ.get('FRACSGD_SITE_DIR')
    if given and fresh(ROOT / given): return ROOT / given  # ROOT / an absolute path is that path
    if given: print(f'FRACSGD_SITE_DIR={given} is missing or older than its sources: building afresh')
    tmp = tmp_path_factory.mktemp('docs')
    r = subprocess.run([sys.executable, str(SITE_TOOL), 'build', '--out', str(tmp / '_site'), '--proc', str(tmp / '_proc')],
                       cwd=ROOT, capture_output=True, text=True)
    print(r.stdout[-3000:])
    assert r.returncode == 0, f'site build failed:\n{r.stdout[-4000:]}\n{r.stderr[-8000:]}'
    return tmp / '_site'


@pytest.fixture(scope='session')
def server(site):
    handler = functools.partial(QuietHandler, directory=str(site))
    httpd = http.server.ThreadingHTTPServer(('127.0.0.1', 0), handler)
    t = threading.Thread(target=httpd.serve_forever, daemon=True)
    t.start()
    yield f'http://127.0.0.1:{httpd.server_address[1]}/'
    httpd.shutdown()
    httpd.server_close()


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *a): pass


@pytest.fixture(scope='session')
def browser():
    exe = shutil.which('chromium') or '/usr/bin/chromium'
    assert Path(exe).exists(), 'Chromium is needed for the docs test: `make chromium` (Debian package chromium)'
    profile = tempfile.mkdtemp(prefix='fracsgd-chromium-')
    proc = subprocess.Popen([exe, *CHROMIUM_FLAGS, f'--user-data-dir={profile}', '--remote-debugging-port=0',
                             '--remote-allow-origins=*', 'about:blank'],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        port_file, end = Path(profile) / 'DevToolsActivePort', time.time() + 60
        while not (port_file.is_file() and port_file.read_text().count('\n') >= 1):
            assert proc.poll() is None, f'Chromium exited with code {proc.returncode}'
            assert time.time() < end, 'Chromium did not open its DevTools port within 60 s'
            time.sleep(0.1)
        port = int(port_file.read_text().split()[0])
        targets = json.load(urllib.request.urlopen(f'http://127.0.0.1:{port}/json/list', timeout=10))
        ws = next(t['webSocketDebuggerUrl'] for t in targets if t['type'] == 'page')
        cdp = CDP(ws)
        for domain in ('Page', 'Runtime', 'Log', 'Network'): cdp.call(f'{domain}.enable')
        yield cdp
        cdp.close()
    finally:
        proc.terminate()
        try: proc.wait(10)
        except subprocess.TimeoutExpired: proc.kill(); proc.wait()
        shutil.rmtree(profile, ignore_errors=True)


# What each page reports about itself, once loaded.
INSPECT = r"""(() => {
  const abs = (a) => a.href;
  // Content wider than the text column: a box whose right edge passes the column's, or a box whose content overflows
  // it visibly past the column's edge, unless an ancestor inside the column scrolls or clips it.
  const spills = () => {
    const main = document.querySelector('main.content') || document.querySelector('main');
    if (!main) return [];
    const right = main.getBoundingClientRect().right + 3;  // 3 px of slack: inline maths at a line end pokes out 1 px
    const held = (e) => {
      for (let a = e.parentElement; a && a !== main; a = a.parentElement)
        if (getComputedStyle(a).overflowX !== 'visible') return a.getBoundingClientRect().right <= right;
      return false;
    };
    const out = [];
    for (const e of main.querySelectorAll('*')) {
      const r = e.getBoundingClientRect();
      if (r.width === 0 || held(e)) continue;
      const visible = getComputedStyle(e).overflowX === 'visible';
      if (r.right > right || (visible && e.clientWidth > 0 && r.left + e.scrollWidth > right))
        out.push(`${e.tagName.toLowerCase()}.${[...e.classList].join('.')} (${Math.round(r.right - right + 3)} px past the column,`
                 + ` content ${e.scrollWidth} px in a ${e.clientWidth} px box): ${e.textContent.trim().slice(0, 60)}`);
    }
    return out;
  };
  return {
    links: [...document.querySelectorAll('a[href]')].map(abs),
    sidebar: [...document.querySelectorAll('#quarto-sidebar a[href]')].map(abs),
    ids: [...document.querySelectorAll('[id]')].map(e => e.id).concat([...document.querySelectorAll('a[name]')].map(e => e.name)),
    images: [...document.images].map(i => ({src: i.currentSrc || i.src, ok: i.complete && i.naturalWidth > 0})),
    math: document.querySelectorAll('.math').length,
    katex: document.querySelectorAll('.math .katex').length,
    katexErrors: document.querySelectorAll('.katex-error').length,
    notRun: [...document.querySelectorAll('.callout')].filter(c => c.textContent.includes('Not run in this build')).length,
    title: document.title,
    text: document.body.innerText.length,
    spills: spills(),
  };
})()"""


def visit(cdp: CDP, url: str) -> tuple[dict, list[str]]:
    "Open `url`; return what the page reports and the problems seen while it loaded."
    cdp.events.clear()
    nav = cdp.call('Page.navigate', url=url)
    if nav.get('errorText'): return {}, [f'navigation failed: {nav["errorText"]}']
    cdp.wait_event('Page.loadEventFired')
    cdp.call('Runtime.evaluate', expression='new Promise(r => setTimeout(r, 300))', awaitPromise=True)  # deferred work
    res = cdp.call('Runtime.evaluate', expression=INSPECT, returnByValue=True)['result']['value']
    host = urlparse(url).netloc
    implicit = urljoin(url, '/favicon.ico')  # the browser asks for it by itself; the site links no icon
    problems = []
    for e in cdp.events:
        m, p = e['method'], e['params']
        if implicit in json.dumps(p): continue
        if m == 'Runtime.exceptionThrown':
            d = p['exceptionDetails']
            problems.append(f"uncaught exception: {d.get('exception', {}).get('description') or d.get('text')}")
        elif m == 'Runtime.consoleAPICalled' and p['type'] in ('error', 'assert'):
            problems.append('console.error: ' + ' '.join(str(a.get('value', a.get('description', ''))) for a in p['args']))
        elif m == 'Log.entryAdded' and p['entry']['level'] == 'error':
            problems.append(f"browser error: {p['entry']['text']} {p['entry'].get('url', '')}")
        elif m == 'Network.requestWillBeSent':
            u = urlparse(p['request']['url'])
            if u.scheme in ('http', 'https', 'ws', 'wss') and u.netloc != host:
                problems.append(f"request leaves the machine: {p['request']['url']}")
        elif m == 'Network.responseReceived' and p['response']['status'] >= 400:
            problems.append(f"HTTP {p['response']['status']}: {p['response']['url']}")
        elif m == 'Network.loadingFailed' and not p.get('canceled'):
            problems.append(f"failed to load: {p.get('errorText')} ({p.get('type')})")
    return res, problems


@pytest.fixture(scope='session')
def crawl(site, server, browser):
    "Open every page of the site (every .html file, and every internal link found) once."
    pages = {str(p.relative_to(site).as_posix()) for p in site.rglob('*.html')}
    todo, seen, report = sorted(pages), set(), {}
    while todo:
        rel = todo.pop(0)
        if rel in seen: continue
        seen.add(rel)
        info, problems = visit(browser, urljoin(server, rel))
        report[rel] = {'info': info, 'problems': problems}
        for link in info.get('links', []):
            u = urlparse(urldefrag(link)[0])
            if u.netloc == urlparse(server).netloc and u.path.endswith('.html'):
                target = unquote(u.path.lstrip('/'))
                if (site / target).is_file() and target not in seen: todo.append(target)
    shot = os.environ.get('FRACSGD_SITE_SCREENSHOT')
    if shot:  # the page with the most maths and pictures: the one most likely to look wrong
        best = max(report, key=lambda r: (report[r]['info'].get('math', 0) > 0) + len(report[r]['info'].get('images', [])))
        visit(browser, urljoin(server, best))
        png = browser.call('Page.captureScreenshot', format='png')['data']
        Path(shot).write_bytes(base64.b64decode(png))
    return {'site': site, 'server': server, 'report': report}


def resolve(crawl, href: str) -> tuple[str | None, str]:
    "The site-relative page path and anchor of an internal link, or (None, '') for an external one."
    url, frag = urldefrag(href)
    u = urlparse(url)
    if u.netloc != urlparse(crawl['server']).netloc: return None, ''
    path = unquote(u.path.lstrip('/'))
    if path == '' or path.endswith('/'): path += 'index.html'
    return path, frag


# ------------------------------------------------------------------------------------------------------- tests

def test_every_notebook_has_a_page_in_the_sidebar(crawl):
    site, report = crawl['site'], crawl['report']
    nbs = source_notebooks()
    assert nbs, 'no notebooks found'
    assert 'index.html' in report, 'no home page: nbs/index.ipynb must render to index.html'
    missing = [str(nb.relative_to(NBS)) for nb in nbs if not (site / nb.relative_to(NBS).parent / f'{page_name(nb)}.html').is_file()]
    assert not missing, f'notebooks without a page: {missing}'
    sidebar = {resolve(crawl, h)[0] for h in report['index.html']['info']['sidebar']}
    unlisted = [str(nb.relative_to(NBS)) for nb in nbs
                if (nb.relative_to(NBS).parent / f'{page_name(nb)}.html').as_posix() not in sidebar]
    assert not unlisted, f'chapters missing from the sidebar: {unlisted}'


# Pages readers may have linked to: every page the site had before chapters were split or renumbered. A page is
# named after its notebook without the numeric prefix, so renumbering keeps these addresses; splitting must too.
PUBLISHED_PAGES = ['index', 'core', 'data', 'theory', 'train', 'displacement', 'spectral', 'walks', 'llc',
                   'moons_diffusion', 'bench', 'bench_llc', 'cli']


def test_published_page_addresses_still_resolve(crawl):
    missing = [f'{name}.html' for name in PUBLISHED_PAGES if f'{name}.html' not in crawl['report']]
    assert not missing, f'pages that readers may have linked to are gone: {missing}'


def test_sidebar_lists_chapters_in_order(crawl):
    sidebar = [resolve(crawl, h)[0] for h in crawl['report']['index.html']['info']['sidebar']]
    chapters = [f'{page_name(nb)}.html' for nb in sorted(source_notebooks(), key=lambda nb: nb.stem != 'index') if nb.parent == NBS]
    listed = [p for p in sidebar if p in chapters]
    assert listed == chapters, f'sidebar order {listed} is not: home page, then the notebooks in numeric order {chapters}'


def test_internal_links_resolve(crawl):
    site, report, broken = crawl['site'], crawl['report'], []
    for rel, r in report.items():
        for href in r['info'].get('links', []):
            path, frag = resolve(crawl, href)
            if path is None: continue
            if not (site / path).is_file(): broken.append(f'{rel} -> {href} (no such file)')
            elif frag and path in report and unquote(frag) not in report[path]['info'].get('ids', []):
                broken.append(f'{rel} -> {href} (no element with id {frag!r})')
    assert not broken, 'broken internal links:\n' + '\n'.join(sorted(set(broken)))


def test_code_and_tables_stay_in_the_text_column(crawl):
    "Long code lines and wide tables wrap or scroll inside the content column; nothing spills past it (1280 px window)."
    bad = {rel: r['info']['spills'][:3] for rel, r in crawl['report'].items() if r['info'].get('spills')}
    assert not bad, f'content wider than the text column on {len(bad)} page(s): {bad}'


def test_spill_check_sees_a_wide_table(browser):
    "The check above can fail: a wide table spills from a narrow column, and stops spilling inside a scrolling box."
    cell = '<td>' + 'wide' * 200 + '</td>'  # one unbreakable word, several times the 300 px column
    page = '<main class="content" style="width:300px">{}</main>'
    spilling, held = (page.format(f'<div{style}><table><tr>{cell}</tr></table></div>')
                      for style in ('', ' style="overflow-x:auto"'))
    found = {}
    for name, html in (('spilling', spilling), ('held', held)):
        browser.call('Page.navigate', url='data:text/html,' + quote(html))
        browser.wait_event('Page.loadEventFired')
        found[name] = browser.call('Runtime.evaluate', expression=INSPECT, returnByValue=True)['result']['value']['spills']
    assert found['spilling'] and not found['held'], found


def test_images_load(crawl):
    bad = [f"{rel}: {i['src'][:120]}" for rel, r in crawl['report'].items() for i in r['info'].get('images', []) if not i['ok']]
    assert not bad, 'images that did not load:\n' + '\n'.join(bad)


def test_no_javascript_errors_or_failed_requests(crawl):
    bad = [f'{rel}: {p}' for rel, r in crawl['report'].items() for p in r['problems']]
    assert not bad, 'problems while loading pages:\n' + '\n'.join(bad)


def test_no_external_scripts_or_stylesheets(crawl):
    pat = re.compile(r'<(?:script|link)\b[^>]*\b(?:src|href)\s*=\s*["\'](?:https?:)?//[^"\']*', re.I)
    css = re.compile(r'(?:@import\s+|url\()\s*["\']?(?:https?:)?//[^)"\';]*', re.I)
    bad = [f'{p.relative_to(crawl["site"])}: {m.group(0)[:150]}' for p in crawl['site'].rglob('*.html')
           for m in pat.finditer(p.read_text(encoding='utf-8'))]
    bad += [f'{p.relative_to(crawl["site"])}: {m.group(0)[:150]}' for p in crawl['site'].rglob('*.css')
            for m in css.finditer(p.read_text(encoding='utf-8', errors='replace'))]
    assert not bad, 'pages that load scripts or CSS from the web (the site must work offline):\n' + '\n'.join(bad)


def test_maths_rendered_by_katex(crawl):
    report = crawl['report']
    with_maths = {rel: r['info'] for rel, r in report.items() if r['info'].get('math')}
    has_dollars = any('$' in ''.join(c['source']) for nb in source_notebooks()
                      for c in json.loads(nb.read_text())['cells'] if c['cell_type'] == 'markdown')
    if has_dollars: assert with_maths, 'notebooks contain $maths$ but no page has any .math element'
    bad = {rel: (i['katex'], i['math'], i['katexErrors']) for rel, i in with_maths.items()
           if i['katex'] < i['math'] or i['katexErrors']}
    assert not bad, f'maths not rendered by KaTeX (rendered, total, errors): {bad}'


def exported_names(nb: Path) -> list[str]:
    "Public functions and classes defined in the `#| export` cells of a notebook: each must have API docs on its page."
    names = []
    for c in json.loads(nb.read_text())['cells']:
        src = ''.join(c['source'])
        if c['cell_type'] != 'code' or not re.match(r'\s*#\|\s*exports?\b', src): continue
        try: tree = ast.parse(src)
        except SyntaxError: continue
        names += [doc_name(n) for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                  and not n.name.startswith('_')]
    return names


def doc_name(node) -> str:
    "The anchor nbdev gives a definition: `Class.method` for a method added with fastcore's `@patch`, else its name."
    patched = any(isinstance(d, ast.Name) and d.id == 'patch' for d in getattr(node, 'decorator_list', []))
    first = node.args.args[0] if patched and node.args.args else None
    if first is not None and isinstance(first.annotation, ast.Name):
        return f'{first.annotation.id}.{node.name}'
    return node.name


def test_exported_functions_have_api_docs(crawl):
    missing = []
    for nb in source_notebooks():
        rel = (nb.relative_to(NBS).parent / f'{page_name(nb)}.html').as_posix()
        ids = {i.lower() for i in crawl['report'].get(rel, {'info': {}})['info'].get('ids', [])}
        missing += [f'{rel}: {n}' for n in exported_names(nb) if n.lower() not in ids]
    assert not missing, 'exported functions without show_doc API docs on their page:\n' + '\n'.join(missing)


def test_heavy_cells_are_marked_not_run(crawl):
    flags = {'heavy', 'gpu'}
    bad = []
    for nb in source_notebooks():
        n = sum(1 for c in json.loads(nb.read_text())['cells'] if c['cell_type'] == 'code'
                and any(re.match(rf'\s*#\|\s*{f}\s*$', line) for line in ''.join(c['source']).splitlines()[:5] for f in flags))
        rel = (nb.relative_to(NBS).parent / f'{page_name(nb)}.html').as_posix()
        shown = crawl['report'].get(rel, {'info': {}})['info'].get('notRun', 0)
        if shown != n: bad.append(f'{rel}: {n} flagged cell(s), {shown} "not run" note(s)')
    assert not bad, '\n'.join(bad)


def test_pages_show_executed_outputs(crawl):
    "Each chapter whose notebook has a plot or a table cell shows at least one picture or table output."
    empty = []
    for nb in source_notebooks():
        src = ''.join(''.join(c['source']) for c in json.loads(nb.read_text())['cells'] if c['cell_type'] == 'code'
                      and not re.search(r'^\s*#\|\s*(heavy|gpu)\s*$', ''.join(c['source']), re.M))
        if not re.search(r'\bplt\.|\.plot\(|matplotlib', src): continue
        rel = (nb.relative_to(NBS).parent / f'{page_name(nb)}.html').as_posix()
        if not crawl['report'].get(rel, {'info': {}})['info'].get('images'): empty.append(rel)
    assert not empty, f'chapters that draw plots but show no picture (notebook not executed?): {empty}'


def test_quarto_renderer_is_called_when_on_path(tmp_path, monkeypatch):
    """Quarto cannot be installed here, so its branch is checked against a stand-in `quarto` on PATH: `auto` must pick
    it, call `quarto render <proc> --no-execute` (the notebooks were executed while preparing), and take the site from
    the `output-dir` that the root `_quarto.yml` names. What Quarto itself makes of the pages is not tested here."""
    import importlib.util, yaml
    spec = importlib.util.spec_from_file_location('fracsgd_site_tool', SITE_TOOL)
    tool = importlib.util.module_from_spec(spec); spec.loader.exec_module(tool)
    bin_dir, proc, calls = tmp_path / 'bin', tmp_path / 'proc', tmp_path / 'calls.json'
    bin_dir.mkdir(); proc.mkdir()
    fake = bin_dir / 'quarto'
    fake.write_text(f'#!{sys.executable}\nimport json, sys, pathlib\n'
                    f'pathlib.Path({str(calls)!r}).write_text(json.dumps(sys.argv[1:]))\n'
                    "out = pathlib.Path(sys.argv[2]) / '_site'; out.mkdir(); (out / 'index.html').write_text('ok')\n")
    fake.chmod(0o755)
    monkeypatch.setenv('PATH', f'{bin_dir}{os.pathsep}{os.environ["PATH"]}')
    site = tool.render(proc, 'auto')
    assert json.loads(calls.read_text()) == ['render', str(proc), '--no-execute']
    assert site == proc / yaml.safe_load((ROOT / '_quarto.yml').read_text())['project']['output-dir']
    assert (site / 'index.html').read_text() == 'ok'


def test_each_notebook_gets_its_share_of_the_cores(tmp_path, monkeypatch):
    """Two notebooks at a time on a machine's cores: each notebook process is told its share (FRACSGD_CPUS, which
    `fracsgd.core.cpu_cores` reads, and OMP_NUM_THREADS, which sets torch's thread count), so that two notebooks do
    not start two threads each on two cores."""
    import importlib.util
    spec = importlib.util.spec_from_file_location('fracsgd_site_tool', SITE_TOOL)
    tool = importlib.util.module_from_spec(spec); spec.loader.exec_module(tool)
    for name in ('FRACSGD_CPUS', 'OMP_NUM_THREADS', 'MKL_NUM_THREADS'):
        monkeypatch.delenv(name, raising=False)
    nbs = tmp_path / 'nbs'
    nbs.mkdir()
    cell = {'cell_type': 'code', 'execution_count': None, 'metadata': {}, 'outputs': [],
            'source': 'import torch\nfrom fracsgd.core import cpu_cores\nprint(cpu_cores(), torch.get_num_threads())'}
    for name in ('index.ipynb', '01_one.ipynb'):
        (nbs / name).write_text(json.dumps({'cells': [{'cell_type': 'markdown', 'metadata': {}, 'source': '# A page'}, cell],
                                            'metadata': {}, 'nbformat': 4, 'nbformat_minor': 5}))
    tool.prepare(tmp_path / 'proc', True, 2, nbs)
    share = max(1, len(os.sched_getaffinity(0)) // 2)
    for page in ('index.ipynb', 'one.ipynb'):
        out = json.loads((tmp_path / 'proc' / page).read_text())
        printed = [''.join(o.get('text', '')) for c in out['cells'] if c['cell_type'] == 'code' for o in c['outputs']]
        assert f'{share} {share}' in ''.join(printed), printed


def test_site_tests_share_one_worker(request):
    """Under `make test` (pytest-xdist, `--dist loadgroup`) the site tests form one group, so one worker builds, serves
    and crawls the site once. The group works only if it reaches the test's id (pytest 9.2 broke that; see
    settings.ini)."""
    if getattr(request.config.option, 'loadgroup', False):
        assert request.node.nodeid.endswith('@site'), request.node.nodeid
