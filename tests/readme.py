"""The code blocks of README.md (or another document), by section, so tests can run them exactly as printed."""
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def python_blocks(section=None, document='README.md', outputs=False):
    """The ```python blocks under the heading `{section}` of `document` (a path from the repository's
    root), at any level (up to the next heading as high: `## A` stops at the next `## `, `### B` at
    the next `### ` or `## `); section=None: the whole document.  With outputs=True, (block, output)
    pairs: output is the plain ``` block right after the code (what it prints), or None.

    Each block starts with blank lines up to where it stands in README.md, so code compiled with
    compile(block, 'README.md', 'exec') reports README's own line numbers in tracebacks and
    warnings (a warning from line 4 of a block is not README.md:4).
    """
    with open(os.path.join(ROOT, document), encoding='utf-8') as f:
        text = f.read()
    headings, fenced, offset = [], False, 0  # (level, title, offset) of each heading outside ``` blocks
    for line in text.splitlines(keepends=True):
        fenced ^= line.startswith('```')
        found = None if fenced else re.match(r"(#+) (.*)$", line.rstrip('\n'))
        if found:
            headings.append((len(found.group(1)), found.group(2), offset))
        offset += len(line)
    start, end = 0, len(text)
    if section is not None:
        i = next(i for i, (_, title, _) in enumerate(headings) if title == section)
        start = headings[i][2]
        end = next((o for level, _, o in headings[i + 1:] if level <= headings[i][0]), len(text))
    blocks = [('\n' * text.count('\n', 0, block.start(1)) + block.group(1), block.group(2))
              for block in re.compile(r"```python\n(.*?)```\n(?:\s*```\n(.*?)```)?", re.S).finditer(text, start, end)]
    return blocks if outputs else [code for code, _ in blocks]
