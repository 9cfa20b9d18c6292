"""The backward-pass viewer in a real browser: headless Chromium, driven over its DevTools
protocol (tests/chromium.py: a small websocket client, standard library only, so CI needs no extra package).

Skipped, with the reason, when no Chromium is installed (.ci/run installs Debian's `chromium`).
"""
import time

import pytest

import microtensor as mt
from chromium import CHROMIUM, headless
from transformer import Encoder

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no Chromium found (Debian: apt-get install chromium); "
                                                         "the viewer's browser test needs one")


@pytest.fixture(scope='module')
def browser(tmp_path_factory):
    """A headless Chromium with a fresh profile, a 1400 x 900 window; yields a DevTools connection to its page."""
    with headless(tmp_path_factory.mktemp('chromium-profile'), 1400, 900) as page:
        yield page


def encoder_viewer(layout):
    """A 2-layer Pre-LN encoder, modules recorded: residual connections, attention, about 60 ops."""
    mt.manual_seed(0)
    encoder = Encoder(2, 8, 2, d_ff=16)
    x = mt.randn(2, 3, 8, requires_grad=True, name='x')
    with mt.record_modules(encoder):
        out = encoder(x)
    return mt.BackpropViewer((out * mt.randn(*out.shape)).sum(), params=encoder, layout=layout)


def open_page(browser, viewer, path):
    viewer.save(path)
    browser.call('Page.navigate', url=path.as_uri())
    browser.wait_for("document.body && document.body.dataset.step === '0'")


def shown(browser):
    """What the page says now: step, highlighted node, op, |g| arriving."""
    return browser.js("({step: +document.body.dataset.step, node: document.querySelector('.node.current').id, "
                      "op: document.getElementById('op-name').textContent, "
                      "g: document.getElementById('g-in').textContent, "
                      "sent: [...document.querySelectorAll('#sent .sent-row b')].map(b => b.textContent)})")


def assert_shows(page, viewer, n):
    step = viewer.steps[n]
    assert page['step'] == n
    assert page['node'] == f'n{step.node}'
    assert page['op'] == step.op
    assert float(page['g']) == pytest.approx(step.grad_in, rel=1e-3)
    assert [float(g) for g in page['sent']] == pytest.approx([g for g in step.sent if g is not None], rel=1e-3)


@pytest.mark.slow
@pytest.mark.parametrize('layout', ['auto', 'layered'])
def test_next_click_filter_in_chromium(browser, tmp_path, layout):
    viewer = encoder_viewer(layout)
    open_page(browser, viewer, tmp_path / 'backprop.html')
    assert_shows(shown(browser), viewer, 0)

    n = 7
    for _ in range(n):
        browser.click_element('#next')
    assert_shows(shown(browser), viewer, n)
    browser.key('ArrowRight', 39)
    browser.key('ArrowRight', 39)
    browser.key('ArrowLeft', 37)
    assert_shows(shown(browser), viewer, n + 1)
    # the value tables: g arriving, then each gradient sent (first row, first column shown)
    firsts = browser.js("[...document.querySelectorAll('#values table.values')]"
                        ".map(t => t.rows[0].cells[1].textContent)")
    v_in, v_sent = viewer.values[n + 1]
    expected = [v_in['rows'][0][0]] + [v['rows'][0][0] for v in v_sent if v is not None]
    assert [float(x) for x in firsts] == pytest.approx(expected, rel=1e-2)
    # edges of steps already run are coloured, edges of later steps are not
    coloured = browser.js("[...document.querySelectorAll('.edge')].filter(e => e.querySelector('path').style.stroke)"
                          ".map(e => +e.id.slice(1))")
    assert sorted(coloured) == list(range(sum(len(s.inputs) for s in viewer.steps[:n + 2])))

    # play at 30 steps/s, then pause: it moved on, and stays where it paused
    browser.js("(() => { const s = document.getElementById('speed'); s.value = 30; "
               "s.dispatchEvent(new Event('input')); })()")
    browser.click_element('#play')
    browser.wait_for(f"+document.body.dataset.step > {n + 3}")
    browser.click_element('#play')
    paused = shown(browser)['step']
    time.sleep(0.2)
    assert shown(browser)['step'] == paused < len(viewer.steps) - 1

    # click a ResidualAdd node: the page jumps to its step and shows the +1 and F roads
    target = next(s for s in viewer.steps if s.op == 'ResidualAdd' and s.index > paused)
    browser.click_element(f'#n{target.node}')
    assert_shows(shown(browser), viewer, target.index)
    roads = browser.js("[...document.querySelectorAll('#sent .road')].map(r => r.textContent)")
    assert roads == ['+1 road: ', 'F road: ']

    # module filter: next only visits ops of that module; other nodes are dimmed
    browser.js("(() => { const s = document.getElementById('module-filter'); s.value = 'layers.0.ffn'; "
               "s.dispatchEvent(new Event('change')); })()")
    ffn = [s for s in viewer.steps if s.module and s.module.startswith('layers.0.ffn')]
    assert_shows(shown(browser), viewer, ffn[0].index)
    browser.click_element('#next')
    assert_shows(shown(browser), viewer, ffn[1].index)
    dimmed = browser.js("[...document.querySelectorAll('.node.dimmed')].map(e => +e.id.slice(1))")
    in_ffn = {i for i, node in enumerate(viewer.nodes) if (node.module or '').startswith('layers.0.ffn')}
    assert dimmed and not in_ffn & set(dimmed)

    screenshot = tmp_path / f'viewer-{layout}.png'
    browser.screenshot(screenshot)
    assert screenshot.stat().st_size > 10_000  # a real picture, not an empty page


FIRST_SCREEN = """(() => {
  const p = document.getElementById('graph'), s = p.querySelector('svg'), r = p.getBoundingClientRect();
  const node = document.querySelector('.node.current'), n = node.getBoundingClientRect();
  const sizes = [...node.querySelectorAll('text')]  // the labels' font size on screen, in px
    .map(t => parseFloat(getComputedStyle(t).fontSize) * t.getScreenCTM().a);
  const o = document.getElementById('overview'), header = document.querySelector('header');
  const boxes = [...header.children].map(c => c.getBoundingClientRect());  // one line: every item overlaps every other
  const oneLine = Math.max(...boxes.map(b => b.top)) < Math.min(...boxes.map(b => b.bottom));
  return {svgW: +s.getAttribute('width'), svgH: +s.getAttribute('height'), paneW: p.clientWidth, paneH: p.clientHeight,
          inside: n.left >= r.left && n.right <= r.right && n.top >= r.top && n.bottom <= r.bottom,
          labelPx: sizes, overview: !o.hidden, overviewW: o.width, overviewH: o.height,
          oneLine, headerOverflow: header.scrollWidth - header.clientWidth,
          windowW: window.innerWidth, module: document.getElementById('op-module').textContent};
})()"""


def deep_viewer(n_layers=8, lang=None):
    mt.manual_seed(0)
    encoder = Encoder(n_layers, 8, 2, d_ff=16)  # a graph many times taller than the window
    x = mt.randn(2, 3, 8, requires_grad=True, name='x')
    with mt.record_modules(encoder):
        out = encoder(x)
    return mt.BackpropViewer((out * mt.randn(*out.shape)).sum(), params=encoder, lang=lang,
                             title='a long title ' * 12)  # (cut on one line, not wrapped)


def test_the_first_screen_is_readable_at_the_loss_with_the_whole_graph_in_the_overview(browser, tmp_path):
    viewer = deep_viewer()
    open_page(browser, viewer, tmp_path / 'deep.html')
    first = browser.js(FIRST_SCREEN)
    assert first['windowW'] == 1400
    assert first['oneLine'] and first['headerOverflow'] <= 0, first  # the toolbar is one line at 1400 px
    assert first['inside'] and first['module'].startswith('loss'), first     # at the loss, where backward starts
    assert first['labelPx'] and min(first['labelPx']) >= 10, first            # its labels legible on screen
    assert first['svgH'] > first['paneH'] and first['overview'], first        # too tall to fit: the overview shows
    assert 20 <= max(first['overviewW'], first['overviewH']) <= first['paneH'], first  # the whole graph, small
    browser.click_element('#next')
    browser.click_element('#next')
    assert browser.js(FIRST_SCREEN)['inside']                                 # stepping keeps the op in view

    # a click on the overview's bottom moves the window to the graph's start (the inputs)
    before = browser.js("document.getElementById('graph').scrollTop")
    x, y = browser.js("(() => { const r = document.getElementById('overview').getBoundingClientRect(); "
                      "return [r.left + r.width / 2, r.bottom - 2]; })()")
    browser.click(x, y)
    assert browser.js("document.getElementById('graph').scrollTop") > before

    browser.click_element('#zoom-page')  # the whole graph: then the overview has nothing to add
    page = browser.js(FIRST_SCREEN)
    assert page['svgW'] <= page['paneW'] and page['svgH'] <= page['paneH'] and not page['overview'], page
    browser.click_element('#zoom-fit')
    wide = browser.js(FIRST_SCREEN)
    assert wide['svgW'] <= wide['paneW'] and wide['inside'], wide


def test_a_small_graph_opens_whole_with_legible_labels(browser, tmp_path):
    x = mt.randn(2, 3, requires_grad=True, name='x')
    open_page(browser, mt.BackpropViewer((x.tanh() * 2).sum()), tmp_path / 'small.html')
    first = browser.js(FIRST_SCREEN)
    assert first['svgW'] <= first['paneW'] and first['svgH'] <= first['paneH'], first
    assert min(first['labelPx']) >= 10 and not first['overview'] and first['oneLine'], first


def legend(browser):
    return browser.js("[...document.querySelectorAll('#legend-bar span')].map(s => s.textContent)")


@pytest.mark.slow
def test_pages_of_one_lesson_share_one_colour_scale(browser, tmp_path, monkeypatch):
    from demos import report
    monkeypatch.setattr(report, 'PAGES', {})
    mt.manual_seed(0)
    x = mt.randn(4, 8, requires_grad=True)
    losses = {'small': (x.tanh() * 1e-4).sum(), 'large': (x.tanh() * 1e3).sum()}
    alone = {}
    for name, loss in losses.items():
        alone[name] = mt.BackpropViewer(loss, retain_graph=True)
        report.save_viewer(name, loss, name, folder=str(tmp_path), group='lesson')
    def look(path):  # the legend, and the colour of the loss's |g| (1 on both pages)
        browser.call('Page.navigate', url=path.as_uri())
        browser.wait_for("document.body && document.body.dataset.step === '0'")
        return legend(browser), browser.js("document.getElementById('g-in-swatch').style.background")

    shared = [look(tmp_path / f'{name}.html') for name in losses]
    assert shared[0] == shared[1]       # one legend, and equal norms in equal colours
    for name, viewer in alone.items():  # each page alone has a scale of its own
        viewer.save(tmp_path / f'{name}-alone.html')
    own = [look(tmp_path / f'{name}-alone.html') for name in losses]
    assert own[0][0] != own[1][0] and own[0][1] != own[1][1]


def cjk_font_installed():
    """Whether fontconfig (which Chromium on Linux asks for fonts) knows a font with the Chinese characters."""
    import shutil
    import subprocess
    if shutil.which('fc-list') is None:
        return False
    return bool(subprocess.run(['fc-list', ':lang=zh', 'family'], capture_output=True, text=True).stdout.strip())


def test_a_page_in_chinese_fits_its_toolbar_on_one_line(browser, tmp_path):
    if not cjk_font_installed():
        pytest.skip("no CJK font (Debian: apt-get install fonts-noto-cjk): the Chinese page would show boxes")
    page = deep_viewer(lang='zh')
    open_page(browser, page, tmp_path / 'zh.html')
    first = browser.js(FIRST_SCREEN)
    assert first['windowW'] == 1400
    assert first['oneLine'] and first['headerOverflow'] <= 0, first  # the toolbar is one line at 1400 px
    assert first['module'].startswith('损失'), first
    said = browser.js("({lang: document.documentElement.lang, next: document.getElementById('next').textContent, "
                      "tip: document.getElementById('next').title, "
                      "counter: document.getElementById('counter').textContent, "
                      "legend: document.querySelector('#legend div').textContent, "
                      "arriving: document.querySelector('.in-row td').textContent})")
    assert said == {'lang': 'zh-CN', 'next': '下一步 ▶', 'tip': '下一步（右方向键）',
                    'counter': f'第 #0 步（最后 #{len(page.steps) - 1}）',
                    'legend': '边的颜色：它传过的 |梯度|（对数刻度）', 'arriving': '到达的梯度：g = dL/d(output)'}, said
    browser.click_element('#next')
    assert_shows(shown(browser), page, 1)  # the numbers and op names are the English page's
    assert browser.js("document.getElementById('play').textContent") == '▶ 播放'
    browser.screenshot(tmp_path / 'viewer-zh.png')
