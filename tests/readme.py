"""The README's code blocks, by section, so tests can run them exactly as printed."""
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def python_blocks(section):
    """The ```python blocks under the README heading `## {section}` (up to the next `## `).

    Each block starts with blank lines up to where it stands in README.md, so code compiled with
    compile(block, 'README.md', 'exec') reports README's own line numbers in tracebacks and
    warnings (a warning from line 4 of a block is not README.md:4).
    """
    with open(os.path.join(ROOT, 'README.md'), encoding='utf-8') as f:
        text = f.read()
    start = text.index(f"\n## {section}\n")
    end = text.find("\n## ", start + 1)
    end = len(text) if end == -1 else end
    return ['\n' * text.count('\n', 0, block.start(1)) + block.group(1)
            for block in re.compile(r"```python\n(.*?)```", re.S).finditer(text, start, end)]
