"""The Chinese editions of the guides translate the prose and nothing else: every fenced block
(code, shell commands, debugger transcripts) is the English edition's, in the same order, so the
tests that run and replay the English blocks hold for both."""
import os
import re

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GUIDES = ['stepping-through-backprop', 'writing-an-op', 'your-pytorch-model']


def blocks(path):
    with open(os.path.join(ROOT, path), encoding='utf-8') as f:
        return re.findall(r"^```.*?^```$", f.read(), re.S | re.M)


@pytest.mark.parametrize('guide', GUIDES)
def test_the_chinese_guide_has_the_english_blocks(guide):
    zh = os.path.join('docs', f'{guide}.zh.md')
    english, chinese = blocks(os.path.join('docs', f'{guide}.md')), blocks(zh)
    assert len(chinese) == len(english), f"{zh} has {len(chinese)} fenced blocks, the English {len(english)}"
    for i, (a, b) in enumerate(zip(english, chinese)):
        assert a == b, (f"block {i + 1} of {zh} differs from the English guide's (python docs/sync_translations.py "
                        f"copies the English blocks):\n{b}")


@pytest.mark.parametrize('guide', GUIDES)
def test_the_editions_link_to_each_other(guide):
    zh = os.path.join(ROOT, 'docs', f'{guide}.zh.md')
    with open(os.path.join(ROOT, 'docs', f'{guide}.md'), encoding='utf-8') as f:
        assert f'({guide}.zh.md)' in ''.join(f.readlines()[:5])
    with open(zh, encoding='utf-8') as f:
        assert f'({guide}.md)' in ''.join(f.readlines()[:5])
