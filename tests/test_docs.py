"""docs/stepping-through-backprop.md quotes real pdb sessions: every `file.py(N)` location
it shows, followed by `-> code`, must still be that line of the source (so the walk-through
cannot silently drift when the code moves)."""
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_pdb_locations_in_the_stepping_doc_match_the_source():
    with open(os.path.join(ROOT, 'docs', 'stepping-through-backprop.md'), encoding='utf-8') as f:
        doc = f.read()
    quoted = re.findall(r"(microtensor/[\w/]+\.py)\((\d+)\)\w+\(\)\n-> (.+)", doc)
    assert len(quoted) >= 10  # the doc walks through many stops
    for path, line, code in quoted:
        with open(os.path.join(ROOT, path), encoding='utf-8') as f:
            source_line = f.read().splitlines()[int(line) - 1].strip()
        assert source_line == code.strip(), f"{path}:{line} is now {source_line!r}, the doc shows {code!r}"


def test_breakpoints_in_the_stepping_doc_are_on_the_lines_it_stops_at():
    """`Breakpoint 1 at file.py:N` must be a line the doc then stops at (or the def line of
    the function it stops in)."""
    with open(os.path.join(ROOT, 'docs', 'stepping-through-backprop.md'), encoding='utf-8') as f:
        doc = f.read()
    breakpoints = re.findall(r"Breakpoint \d+ at (microtensor/[\w/]+\.py):(\d+)", doc)
    assert breakpoints
    for path, line in breakpoints:
        with open(os.path.join(ROOT, path), encoding='utf-8') as f:
            source_line = f.read().splitlines()[int(line) - 1].strip()
        stops = re.findall(rf"{re.escape(path)}\((\d+)\)\w+\(\)\n-> (.+)", doc)
        assert line in [n for n, _ in stops] or source_line.startswith('def '), (path, line, source_line)
