"""The README's code blocks, by section, so tests can run them exactly as printed."""
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def python_blocks(section):
    """The ```python blocks under the README heading `{section}`, at any level (up to the next heading
    as high: `## A` stops at the next `## `, `### B` at the next `### ` or `## `).

    Each block starts with blank lines up to where it stands in README.md, so code compiled with
    compile(block, 'README.md', 'exec') reports README's own line numbers in tracebacks and
    warnings (a warning from line 4 of a block is not README.md:4).
    """
    with open(os.path.join(ROOT, 'README.md'), encoding='utf-8') as f:
        text = f.read()
    headings, fenced, offset = [], False, 0  # (level, title, offset) of each heading outside ``` blocks
    for line in text.splitlines(keepends=True):
        fenced ^= line.startswith('```')
        found = None if fenced else re.match(r"(#+) (.*)$", line.rstrip('\n'))
        if found:
            headings.append((len(found.group(1)), found.group(2), offset))
        offset += len(line)
    i = next(i for i, (_, title, _) in enumerate(headings) if title == section)
    start = headings[i][2]
    end = next((o for level, _, o in headings[i + 1:] if level <= headings[i][0]), len(text))
    return ['\n' * text.count('\n', 0, block.start(1)) + block.group(1)
            for block in re.compile(r"```python\n(.*?)```", re.S).finditer(text, start, end)]
