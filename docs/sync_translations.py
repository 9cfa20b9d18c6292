"""Copy the English guides' fenced blocks into their Chinese editions.

    python docs/sync_translations.py        # after a block of an English guide changed

A Chinese guide (NAME.zh.md) translates the prose of NAME.md and keeps every fenced block (code,
commands, debugger transcripts) as the English guide has it, in the same order; when code moves,
the English blocks change (line numbers in a pdb session, say) and this puts them into the
Chinese edition unchanged.  A block added or removed in English needs its prose translated by
hand: the script then refuses, naming the guide.
"""
import os
import re
import sys

DOCS = os.path.dirname(os.path.abspath(__file__))
FENCED = re.compile(r"(^```.*?^```$)", re.S | re.M)


def sync(name):
    """Rewrite docs/NAME.zh.md with docs/NAME.md's blocks; returns whether it changed."""
    with open(os.path.join(DOCS, f'{name}.md'), encoding='utf-8') as f:
        english = FENCED.findall(f.read())
    path = os.path.join(DOCS, f'{name}.zh.md')
    with open(path, encoding='utf-8') as f:
        text = f.read()
    parts = FENCED.split(text)
    if len(parts) // 2 != len(english):
        raise SystemExit(f"{name}.zh.md has {len(parts) // 2} fenced blocks and {name}.md {len(english)}: "
                         "translate the added or removed part by hand")
    parts[1::2] = english
    new = ''.join(parts)
    if new != text:
        tmp = path + '.tmp'
        with open(tmp, 'w', encoding='utf-8') as f:
            f.write(new)
        os.replace(tmp, path)
    return new != text


if __name__ == '__main__':
    for guide in ('stepping-through-backprop', 'writing-an-op'):
        print(f"docs/{guide}.zh.md:", 'updated' if sync(guide) else 'already in step', file=sys.stderr)
