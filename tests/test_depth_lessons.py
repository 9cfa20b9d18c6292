"""The lessons on depth, position and architecture compute what they claim, in their quick (tour) mode.

Each test runs a lesson's run() with its defaults and asserts the claim on the numbers it
printed: Pre-LN vs Post-LN (gradient ratio vs depth, warm-up); rank collapse without residuals;
positions (equivariance, PE shift, RoPE offsets, wavelengths, extrapolation); residual variants;
the FFN; encoder-only MLM; the 猫吃鱼 residual sum and similarities; the small numbers.
"""
import math

import pytest

import microtensor as mt
from demos import (__main__ as tour, article_trace, encoder_only_mlm, feedforward, positions, pre_vs_post_ln,
                   residual_highway, residual_variants, small_numbers)
from transformer import Encoder, article_checks
from transformer import article_data as article
from transformer.probes import rank_collapse, token_uniformity

NEW_LESSONS = ['pre_vs_post_ln', 'positions', 'residual_variants', 'feedforward', 'encoder_only_mlm', 'small_numbers']


pytestmark = pytest.mark.usefixtures('in_tmp_path', 'speaks_of_the_articles')  # lessons write under runs/


def test_the_new_lessons_are_in_the_tour_with_a_command_line(capsys):
    names = [name for name, _ in tour.LESSONS]
    assert all(name in names for name in NEW_LESSONS)
    with pytest.raises(SystemExit) as exit_:
        pre_vs_post_ln.main(['--help'])
    assert exit_.value.code == 0 and '--full' in capsys.readouterr().out


def test_the_depth_lessons_name_the_deep_dive_or_the_attention_article(capsys):
    tour.main(['--list'])
    out = capsys.readouterr().out
    for name in NEW_LESSONS:
        entry = out[out.index(f"\n{name} ") + 1:].split('\n')[1]  # the first article under the lesson's name
        assert entry.strip() in ('深入篇 (the deep dive)', '第二章：Transformer 架构原理 (the architecture article)',
                                 '第二章：智能的原子 —— 注意力机制的解构 (the attention article)')


# ---------------------------------------------------------------------------- Pre-LN vs Post-LN
@pytest.mark.slow
def test_post_ln_needs_warm_up_and_its_gradient_ratio_grows_with_depth():
    result = pre_vs_post_ln.run()
    ratios, grads = result['ratios'], result['grads']
    depths = sorted(ratios)
    assert [ratios[L] for L in depths] == sorted(ratios[L] for L in depths)       # Post/Pre grows with L
    for L in depths[1:]:                                                           # at least ~ sqrt(L) growth
        assert ratios[L] / ratios[depths[0]] > 0.8 * math.sqrt(L / depths[0])
    level = [grads['pre', L]['W_2'] * math.sqrt(L) for L in depths]               # Pre-LN ~ 1/sqrt(L)
    assert max(level) / min(level) < 1.6
    assert grads['post', 24]['W_2'] > grads['post', 3]['W_2']                      # Post-LN does not shrink
    verdicts = {(place, bool(w)): v for (place, w), v in result['verdicts'].items()}
    assert verdicts['post', False] == ['stalled']
    assert verdicts['post', True] == verdicts['pre', False] == verdicts['pre', True] == ['learns']
    norms = {(place, bool(w)): g for (place, w), g in result['grad_norms'].items()}
    assert all(math.isfinite(g) for g in norms['post', False])                     # stalls, never explodes
    assert max(norms['post', False]) <= max(norms['post', True]) * 1.01
    # the variances, against the deep dive's "Post-LN: 子层接收到的信号方差越来越大"
    post, pre = result['variances']['post'], result['variances']['pre']
    assert all(abs(stream - 1) < 0.05 and abs(sub - 1) < 0.05 for stream, sub in post)  # Post-LN stays at 1
    assert pre[-1][0] > 10 * pre[0][0] and all(abs(sub - 1) < 0.05 for _, sub in pre)  # Pre-LN's stream grows


# ---------------------------------------------------------------------------- rank collapse
@pytest.mark.slow
def test_without_residuals_the_tokens_collapse():
    mt.manual_seed(0)
    x = mt.randn(2, 6, 16)
    assert token_uniformity(x) > 0.8
    assert token_uniformity(mt.randn(1, 1, 16).broadcast_to((2, 6, 16))) < 1e-6   # all rows equal: 0
    collapse = residual_highway.run()['collapse']
    for place in ('pre', 'post'):
        assert collapse[place, False][3] < 1e-4 and max(collapse[place, False][3:]) < 1e-4
        assert min(collapse[place, True]) > 0.3
    deep = rank_collapse(Encoder(4, 8, 2, residual=False), mt.randn(2, 5, 8))
    assert len(deep) == 4 and deep[-1] < deep[0]


# ---------------------------------------------------------------------------- positions
@pytest.mark.slow
def test_positions_lesson():
    result = positions.run()
    gaps = result['gaps']
    assert max(gaps['none'].values()) < 1e-12                                      # equivariant without PE
    for kind in ('sinusoidal', 'rope', 'relative'):
        assert min(gaps[kind].values()) > 1e-3
    assert gaps['alibi']['reversed'] < 1e-12 < 1e-3 < gaps['alibi']['first two swapped']
    assert max(result['shift_errors'].values()) < 1e-10                           # PE(pos+k) = PE(pos) M_k
    scores = list(result['rope_scores'].values())
    assert max(scores) - min(scores) < 1e-10 and abs(scores[0]) > 1e-3            # offset only
    lam = result['wavelengths']
    assert lam[0] == pytest.approx(2 * math.pi) and len(lam) == 256
    assert lam[-1] == pytest.approx(2 * math.pi * 10000 ** (510 / 512)) and 50000 < lam[-1] < 20000 * math.pi
    ex, N = result['extrapolation'], result['N']
    assert ex['learned']['acc'][2 * N] is None and ex['learned']['acc'][N] > 0.9   # learned cannot run past N
    for kind in ('sinusoidal', 'rope', 'alibi'):
        assert ex[kind]['acc'][N] > 0.9
    assert ex['alibi']['acc'][4 * N] > 0.85                                          # ALiBi holds at 4N
    assert ex['alibi']['acc'][4 * N] == max(r['acc'][4 * N] or 0 for r in ex.values())  # best: not "长序列性能下降"
    assert ex['sinusoidal']['acc'][2 * N] < ex['sinusoidal']['acc'][N] - 0.15       # sinusoidal drops past N
    assert ex['rope']['acc'][4 * N] < ex['rope']['acc'][N]
    assert ex['relative']['acc'][N] > 0.6 and result['unseen_buckets']


# ---------------------------------------------------------------------------- residual variants
@pytest.mark.slow
def test_residual_variants_lesson():
    result = residual_variants.run()
    share = {name: s for name, (s, _) in result['init'].items()}
    gate = {name: g for name, (_, g) in result['init'].items()}
    names = list(share)
    standard, half, quarter = names[0], names[1], names[2]
    opened, halfway, closed = names[3], names[4], names[5]
    assert share[standard] < share[half] < share[quarter]
    assert share[opened] < share[halfway] < share[closed] and share[closed] > 0.95
    assert abs(share[opened] - share[standard]) < 0.05
    assert gate[opened] > 0.9 and 0.4 < gate[halfway] < 0.6 and gate[closed] < 0.1
    trained = result['trained']
    assert sum(trained['losses'][-10:]) / 10 < 0.2 * sum(trained['losses'][:10]) / 10
    assert trained['channels_after'].keys() == trained['channels_before'].keys()


# ---------------------------------------------------------------------------- the FFN
@pytest.mark.slow
def test_feedforward_lesson():
    result = feedforward.run()
    assert result['collapse']['gap'] < 1e-12 and result['collapse']['with_activation_gap'] > 1e-2
    final, plateau = result['final'], result['plateau']
    assert final['|x|', None] > 0.95 * plateau and final['sin(2x)', None] > 0.95 * result['sin_plateau']
    for activation in ('relu', 'gelu'):
        assert final['|x|', activation] < 0.1 * plateau and final['sin(2x)', activation] < 0.7 * result['sin_plateau']
        assert result['copy_final'][activation] < 0.2
    params = result['params']
    assert abs(result['ffn_share'] - 2 / 3) < 1e-3
    d = params['d_model']
    assert params['attention'] == 4 * d * d + 4 * d and params['ffn'] == 8 * d * d + 5 * d
    assert len(set(params['heads'].values())) == 1


# ---------------------------------------------------------------------------- encoder-only MLM
@pytest.mark.slow
def test_encoder_only_mlm_lesson():
    result = encoder_only_mlm.run()
    shares = result['shares']
    assert abs(shares['chosen'] - 0.15) < 0.02
    assert abs(shares['mask'] - 0.8) < 0.05 and abs(shares['random'] - 0.1) < 0.04
    acc = result['accuracy']
    assert acc['all'] > 0.7 and acc['all'] <= result['best'] + 0.03                 # far above chance 10%
    assert acc['first half'] > 0.6                                                   # read from the right
    assert result['losses'][-1] < 0.5 * result['losses'][0]


# ---------------------------------------------------------------------------- the 猫吃鱼 residual sum
def test_article_trace_residual_sum_and_similarities():
    X0 = article_trace.x0()
    x_mid_raw = article_checks.residual_sum(X0)
    for computed, printed in zip(x_mid_raw, article.X_MID_RAW_PRINTED):
        assert computed == pytest.approx(printed, abs=1e-4)                          # 4 decimals (both rounded)
    cos = article_checks.cosine_similarities(X0)
    assert {pair: round(v, 4) for pair, v in cos.items()} == article.COS_X0_PRINTED
    changes = article_checks.relative_changes(article.COS_X0_PRINTED, article.COS_X2_PRINTED)
    assert all(c > 0 for c in changes.values())                                      # every pair more similar
    assert max(changes, key=changes.get) == ('猫', '鱼') and round(100 * changes['猫', '鱼']) == 25
    titles = [title for title, _, _ in article_checks.tables(X0)]
    assert 'X_mid_raw' in titles[0] and '猫-鱼' in titles[1]


# ---------------------------------------------------------------------------- the small numbers
@pytest.mark.slow
def test_small_numbers():
    result = small_numbers.run(seq_len=128, repeats=1)  # (part 4 is a timing: printed, never asserted)
    factors = result['factors']
    assert factors['pre', False] < 0.9 and factors['post', False] < 0.9              # faster than 0.9 per layer
    assert 0.9 < factors['pre', True] < 1.1
    before, after = result['layernorm']
    assert before == pytest.approx(14) and round(before / after, 1) == 5.6
    (n32, s32), (n2, s2) = result['batchnorm'][32], result['batchnorm'][2]
    assert (n32, n2) == (320, 20) and 3 < s2 / s32 < 5


def test_readme_section_runs():
    from readme import python_blocks
    blocks = python_blocks('Lessons on depth, position and architecture')
    assert blocks
    for block in blocks:
        exec(compile(block, 'README.md', 'exec'), {})
