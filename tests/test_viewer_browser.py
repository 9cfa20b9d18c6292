"""The backward-pass viewer in a real browser: headless Chromium, driven over its DevTools
protocol (a small websocket client below, standard library only, so CI needs no extra package).

Skipped, with the reason, when no Chromium is installed (.ci/run installs Debian's `chromium`).
"""
import base64
import json
import os
import shutil
import socket
import struct
import subprocess
import time
import urllib.parse
import urllib.request

import pytest

import microtensor as mt
from transformer import Encoder

CHROMIUM = next(filter(None, map(shutil.which, ('chromium', 'chromium-browser', 'google-chrome', 'chrome'))), None)
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no Chromium found (Debian: apt-get install chromium); "
                                                         "the viewer's browser test needs one")
FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
         '--disable-background-networking', '--disable-component-update', '--disable-sync',
         '--remote-debugging-port=0', '--window-size=1400,900']


class DevTools:
    """Just enough of a websocket client (RFC 6455) to call Chrome DevTools Protocol methods."""

    def __init__(self, url, timeout=20):
        u = urllib.parse.urlparse(url)
        self.sock = socket.create_connection((u.hostname, u.port), timeout=timeout)
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall((f"GET {u.path} HTTP/1.1\r\nHost: {u.hostname}:{u.port}\r\nUpgrade: websocket\r\n"
                           f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n")
                          .encode())
        self.buffer = b''
        while b'\r\n\r\n' not in self.buffer:
            self._fill()
        head, self.buffer = self.buffer.split(b'\r\n\r\n', 1)
        assert b' 101 ' in head.split(b'\r\n')[0], head
        self.last_id = 0

    def _fill(self):
        chunk = self.sock.recv(1 << 16)
        if not chunk:
            raise ConnectionError("DevTools closed the connection")
        self.buffer += chunk

    def _take(self, n):
        while len(self.buffer) < n:
            self._fill()
        out, self.buffer = self.buffer[:n], self.buffer[n:]
        return out

    def _send(self, text):
        payload = text.encode()
        n = len(payload)
        header = bytes([0x81]) + (bytes([0x80 | n]) if n < 126 else
                                  bytes([0x80 | 126]) + struct.pack('>H', n) if n < 1 << 16 else
                                  bytes([0x80 | 127]) + struct.pack('>Q', n))
        mask = os.urandom(4)
        self.sock.sendall(header + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload)))

    def _receive(self):
        message = b''
        while True:
            b0, b1 = self._take(2)
            n = b1 & 0x7f
            if n == 126:
                n = struct.unpack('>H', self._take(2))[0]
            elif n == 127:
                n = struct.unpack('>Q', self._take(8))[0]
            mask = self._take(4) if b1 & 0x80 else None
            payload = self._take(n)
            if mask:
                payload = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
            opcode = b0 & 0x0f
            if opcode == 8:
                raise ConnectionError("DevTools closed the websocket")
            if opcode in (9, 10):  # ping / pong: not part of a message
                continue
            message += payload
            if b0 & 0x80:
                return json.loads(message)

    def call(self, method, **params):
        self.last_id += 1
        self._send(json.dumps({'id': self.last_id, 'method': method, 'params': params}))
        while True:
            reply = self._receive()
            if reply.get('id') == self.last_id:
                if 'error' in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get('result', {})

    def js(self, expression):
        result = self.call('Runtime.evaluate', expression=expression, returnByValue=True, awaitPromise=True)
        if 'exceptionDetails' in result:
            raise RuntimeError(f"{expression}: {result['exceptionDetails']}")
        return result['result'].get('value')

    def click(self, x, y):
        for kind in ('mousePressed', 'mouseReleased'):
            self.call('Input.dispatchMouseEvent', type=kind, x=x, y=y, button='left', clickCount=1)

    def click_element(self, selector):
        """A real mouse click at the middle of the element (scrolled into view first)."""
        x, y = self.js(f"(() => {{ const e = document.querySelector({json.dumps(selector)}); "
                       "e.scrollIntoView({block: 'center', inline: 'center'}); const r = e.getBoundingClientRect(); "
                       "return [r.left + r.width / 2, r.top + r.height / 2]; })()")
        self.click(x, y)

    def key(self, key, keycode):
        for kind in ('rawKeyDown', 'keyUp'):
            self.call('Input.dispatchKeyEvent', type=kind, key=key, code=key, windowsVirtualKeyCode=keycode)

    def wait_for(self, expression, timeout=15):
        end = time.monotonic() + timeout
        while not self.js(expression):
            if time.monotonic() > end:
                raise TimeoutError(f"waited {timeout} s for {expression}")
            time.sleep(0.05)


@pytest.fixture(scope='module')
def browser(tmp_path_factory):
    """A headless Chromium with a fresh profile; yields a DevTools connection to its page."""
    profile = tmp_path_factory.mktemp('chromium-profile')
    process = subprocess.Popen([CHROMIUM, *FLAGS, f'--user-data-dir={profile}', 'about:blank'],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        port_file, end = profile / 'DevToolsActivePort', time.monotonic() + 20
        while not (port_file.exists() and port_file.read_text().count('\n') >= 1):
            if process.poll() is not None or time.monotonic() > end:
                pytest.fail(f"{CHROMIUM} did not start (exit code {process.poll()})")
            time.sleep(0.05)
        port = int(port_file.read_text().split()[0])
        with urllib.request.urlopen(f'http://127.0.0.1:{port}/json/list', timeout=10) as reply:
            page = next(t for t in json.load(reply) if t['type'] == 'page')
        tools = DevTools(page['webSocketDebuggerUrl'])
        yield tools
        tools.sock.close()
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()


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
    screenshot.write_bytes(base64.b64decode(browser.call('Page.captureScreenshot', format='png')['data']))
    assert screenshot.stat().st_size > 10_000  # a real picture, not an empty page


def test_the_page_opens_fitted_at_the_loss_and_fits_the_page_on_request(browser, tmp_path):
    mt.manual_seed(0)
    encoder = Encoder(8, 8, 2, d_ff=16)  # a graph many times taller than the window
    x = mt.randn(2, 3, 8, requires_grad=True, name='x')
    with mt.record_modules(encoder):
        out = encoder(x)
    viewer = mt.BackpropViewer((out * mt.randn(*out.shape)).sum(), params=encoder)
    open_page(browser, viewer, tmp_path / 'deep.html')
    view = ("(() => { const p = document.getElementById('graph'), s = p.querySelector('svg'); "
            "const r = p.getBoundingClientRect(), n = document.getElementById('n' + {node}).getBoundingClientRect(); "
            "return {svgW: +s.getAttribute('width'), svgH: +s.getAttribute('height'), paneW: p.clientWidth, "
            "paneH: p.clientHeight, inside: n.left >= r.left && n.right <= r.right && n.top >= r.top && "
            "n.bottom <= r.bottom, module: document.getElementById('op-module').textContent}; })()")
    view = view.replace('{node}', str(viewer.steps[0].node))
    first = browser.js(view)
    assert first['inside'], first                           # the loss, where the backward pass starts, in view
    assert first['svgW'] <= first['paneW'] < first['svgH']   # the whole width, scrolled to the loss
    assert first['module'].startswith('loss')                # the loss's ops are named
    browser.click_element('#zoom-page')
    page = browser.js(view)
    assert page['svgW'] <= page['paneW'] and page['svgH'] <= page['paneH'] and page['inside'], page
    browser.click_element('#zoom-fit')
    wide = browser.js(view)
    assert first['svgW'] - 20 < wide['svgW'] <= wide['paneW'] and wide['inside'], wide  # the width again


def legend(browser):
    return browser.js("[...document.querySelectorAll('#legend-bar span')].map(s => s.textContent)")


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
