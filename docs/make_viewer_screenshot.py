"""Make docs/backprop-viewer.png, README's picture of the viewer, from the real page.

    .venv/bin/python docs/make_viewer_screenshot.py            # from the repository's folder

Runs `python -m demos.residual_highway --html` in a temporary folder, opens its Pre-LN residual
page in headless Chromium (a fresh profile; a 1400 x 900 window, the first screen a learner
sees), steps to the first residual connection, where the gradient splits into the "+1" and F
roads, and saves the screen.  Needs Chromium (Debian: apt-get install chromium).
"""
import argparse
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, 'tests'))  # the DevTools client the viewer's browser test uses
from chromium import headless  # noqa: E402

OUT = os.path.join(ROOT, 'docs', 'backprop-viewer.png')


def main(out=OUT):
    with tempfile.TemporaryDirectory() as folder:
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [ROOT, os.environ.get('PYTHONPATH')])))
        subprocess.run([sys.executable, '-m', 'demos.residual_highway', '--html'], cwd=folder, env=env, check=True,
                       stdout=subprocess.DEVNULL)
        page = os.path.join(folder, 'runs', 'residual_highway_residual.html')
        profile = os.path.join(folder, 'chromium-profile')
        with headless(profile, 1400, 900) as browser:
            browser.call('Page.navigate', url='file://' + page)
            browser.wait_for("document.body && document.body.dataset.step === '0'")
            step = browser.js("DATA.steps.findIndex(s => s.op === 'ResidualAdd')")
            browser.js(f"document.querySelectorAll('#steps div')[{step}].click()")
            browser.wait_for(f"document.body.dataset.step === '{step}'")
            browser.screenshot(out)
    print(f"wrote {os.path.relpath(out)}: the first screen of residual_highway's page, at step {step}")


if __name__ == '__main__':
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--out', default=OUT, help='the PNG file to write (default: %(default)s)')
    main(parser.parse_args().out)
