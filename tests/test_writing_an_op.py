"""docs/writing-an-op.md runs as printed: every ```python block, in order, in one namespace, and
each prints exactly the output block shown under it (so the guide cannot drift from the engine)."""
import contextlib
import io

from readme import python_blocks


def test_every_block_of_the_guide_runs_and_prints_what_it_shows(in_tmp_path):
    blocks = python_blocks(document='docs/writing-an-op.md', outputs=True)
    assert len(blocks) >= 8 and sum(output is not None for _, output in blocks) >= 7
    namespace = {'__name__': 'writing_an_op'}
    for code, shown in blocks:
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            exec(compile(code, 'docs/writing-an-op.md', 'exec'), namespace)
        if shown is not None:
            assert printed.getvalue() == shown, f"the guide shows\n{shown}but the block printed\n{printed.getvalue()}"
