"""A lesson whose verdict rests on training counts it over its seeds: with --seeds N (--full: 5) the
record says "N seeds" and the finding how many of them showed the claim, or the range over them."""
import re

import pytest

from demos import claims, softmax_saturation, train_gpt, train_xor


@pytest.fixture
def recorded(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)                    # the lessons' plots and checkpoints go under runs/ here
    monkeypatch.setattr(claims, 'RECORDED', [])
    return claims.RECORDED


def counted(claim, n):
    """The claim rests on n seeds and its finding counts "k of n seeds" with 0 <= k <= n."""
    assert claim.seeds == claims.seeds_note(n)
    found = re.findall(r"(\d+) of (\d+) seeds", claim.finding)
    assert found and all(int(total) == n and 0 <= int(k) <= n for k, total in found), claim.finding
    return [int(k) for k, _ in found]


def test_train_xor_counts_its_seeds(recorded):
    train_xor.main(['--seeds', '3'])
    [claim] = recorded
    assert counted(claim, 3) == [3] and claim.verdict == 'holds'       # every seed solves XOR in 300 steps


def test_softmax_saturation_counts_its_seeds(recorded):
    softmax_saturation.run(d_ks=(4, 64), batch_size=4, seq_len=8, train_steps=20, seeds=2)
    [claim] = [c for c in recorded if c.section == '2.10.2']
    assert claim.verdict == ('holds' if counted(claim, 2) == [2] else 'partly')


@pytest.mark.slow
def test_train_gpt_counts_its_seeds_and_gives_ranges(recorded):
    train_gpt.run(steps=12, warmup=2, d_model=16, n_layers=1, n_heads=2, context=16, batch_size=4, eval_every=6,
                  sample_length=12, seeds=2)
    by_section = {c.section: c for c in recorded}
    assert set(by_section) == {'2.8', '2.4.2', '2.9.1'}
    for claim in by_section.values():
        counted(claim, 2)
    assert re.search(r"validation loss \d\.\d\d(-\d\.\d\d)? at best", by_section['2.8'].finding)
