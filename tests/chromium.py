"""Headless Chromium driven over its DevTools protocol: a small websocket client, standard library
only, so neither CI nor docs/make_viewer_screenshot.py needs an extra package.

    with headless(profile_folder, width=1400, height=900) as page:   # a fresh profile each time
        page.call('Page.navigate', url=path.as_uri())
        page.js('document.title')
"""
import base64
import contextlib
import json
import os
import shutil
import socket
import struct
import subprocess
import time
import urllib.parse
import urllib.request

CHROMIUM = next(filter(None, map(shutil.which, ('chromium', 'chromium-browser', 'google-chrome', 'chrome'))), None)
FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
         '--disable-background-networking', '--disable-component-update', '--disable-sync',
         '--remote-debugging-port=0']


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

    def screenshot(self, path):
        """The page as it is on screen, as a PNG file."""
        with open(path, 'wb') as f:
            f.write(base64.b64decode(self.call('Page.captureScreenshot', format='png')['data']))


@contextlib.contextmanager
def headless(profile, width=1400, height=900):
    """Start Chromium with a fresh profile in the folder `profile`, a window of width x height px;
    yields a DevTools connection to its page, and ends the browser on the way out."""
    if CHROMIUM is None:
        raise RuntimeError("no Chromium found (Debian: apt-get install chromium)")
    process = subprocess.Popen([CHROMIUM, *FLAGS, f'--window-size={width},{height}', f'--user-data-dir={profile}',
                                'about:blank'], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        port_file, end = os.path.join(profile, 'DevToolsActivePort'), time.monotonic() + 20
        while _read(port_file).count('\n') < 1:  # the port, then the browser's path, once it listens
            if process.poll() is not None or time.monotonic() > end:
                raise RuntimeError(f"{CHROMIUM} did not start (exit code {process.poll()})")
            time.sleep(0.05)
        port = int(_read(port_file).split()[0])
        with urllib.request.urlopen(f'http://127.0.0.1:{port}/json/list', timeout=10) as reply:
            page = next(t for t in json.load(reply) if t['type'] == 'page')
        tools = DevTools(page['webSocketDebuggerUrl'])
        try:
            yield tools
        finally:
            tools.sock.close()
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()


def _read(path):
    try:
        with open(path, encoding='utf-8') as f:
            return f.read()
    except FileNotFoundError:
        return ''
