"""The lessons compute what they claim (small, fast versions of each)."""
import importlib
import math
import warnings

import numpy as np
import pytest

import microtensor as mt
from demos import (__main__ as tour, article_trace, layernorm_vs_batchnorm, residual_highway, rnn_vs_attention,
                   softmax_saturation, temperature, train_gpt, train_reverse)
from transformer import article_data as article


pytestmark = pytest.mark.usefixtures('in_tmp_path', 'speaks_of_the_articles')  # lessons write under runs/


def test_temperature_table_matches_the_article():
    rows = [(T, p.tolist(), h) for T, p, h in temperature.distributions()]
    by_T = {T: (p, h) for T, p, h in rows}
    assert [round(v, 3) for v in by_T[1.0][0]] == [0.659, 0.242, 0.099]
    assert by_T[0.2][0][0] > 0.99  # near argmax
    max_probs = [p[0] for _, p, _ in rows]
    entropies = [h for _, _, h in rows]
    assert max_probs == sorted(max_probs, reverse=True)
    assert entropies == sorted(entropies)


@pytest.mark.parametrize('logits, T, exp_x', [
    ((1e308, 1e308, 0.0), 0.5, (1, 1, 0)),  # 1e308 / 0.5 overflows: x / T would be [inf, inf, 0]
    ((1e308, -1e308, 0.0), 1e308, (math.e, 1 / math.e, 1)),  # 1e308 - (-1e308) overflows: x - max would be -inf
    ((1e308, -1e308, 0.0), 0.5, (1, 0, 0)),  # a sure choice: entropy 0
    ((2.0, 1.0, 0.1), 1e-300, (1, 0, 0)),
])
def test_temperature_gives_the_true_softmax_where_x_over_t_or_x_minus_max_overflows(logits, T, exp_x):
    """softmax(x / T) = exp_x / sum(exp_x), and its entropy, with no nan, no -0 and no numpy warning."""
    with warnings.catch_warnings():
        warnings.simplefilter('error')
        [(_, p, entropy)] = temperature.distributions(logits, [T])
    expected = np.array(exp_x) / sum(exp_x)
    np.testing.assert_allclose(p.tolist(), expected, rtol=1e-12, atol=0)
    assert entropy == pytest.approx(sum(-q * math.log(q) for q in expected if q > 0), rel=1e-12, abs=0)
    assert math.copysign(1, entropy) == 1  # printed 0.000, not -0.000


def test_every_lesson_is_listed_and_runnable(capsys):
    tour.main(['--list'])
    listed = [line.split()[0] for line in capsys.readouterr().out.splitlines() if not line.startswith(' ')]
    assert listed == [name for name, _ in tour.LESSONS]
    assert {'article_trace', 'softmax_saturation', 'residual_highway', 'rnn_vs_attention',
            'layernorm_vs_batchnorm', 'train_gpt', 'train_reverse'} <= set(listed)
    for name in listed:
        lesson = importlib.import_module(f"demos.{name}")
        assert callable(lesson.run) and callable(lesson.main)


def test_article_trace_reproduces_the_printed_numbers_and_finds_the_pe_typos(capsys):
    result = article_trace.run()
    pe = result['pe']
    for pos, row in article.PE_CORRECT.items():
        assert pe[pos][:len(row)] == pytest.approx(row, abs=5e-5)
    # the article's 0.2338, 0.0096, 0.9999 (pos 1) and 0.4228, 0.0193, 0.9998 (pos 2)
    assert {(pos, dim) for pos, dim, _, _ in result['typos']} == {(1, 2), (1, 4), (1, 5), (2, 2), (2, 4), (2, 5)}
    assert [[round(v, 2) for v in row[:4]] for row in result['x0']] == article.X0_PRINTED
    assert round(result['x0_with_printed_pe'][1][2], 2) != article.X0_PRINTED[1][2]  # the typo would show in X0
    for head in (1, 2):
        assert article_trace.max_difference(result['weights'][head].tolist(), article.LAYER1_WEIGHTS[head]) < 1e-4
    assert 'typo' in capsys.readouterr().out
    low, high = result['head1_range']  # the article's "30%-37%" for head 1, from its own table
    assert (round(100 * low, 1), round(100 * high, 1)) == (27.6, 37.2)


@pytest.mark.slow
def test_softmax_saturation_variance_and_gradient():
    result = softmax_saturation.run(d_ks=(4, 256), batch_size=8, seq_len=16, train=True, train_steps=60)
    rows = {(r['d_k'], r['scaled']): r for r in result['rows']}
    for d_k in (4, 256):
        assert 0.7 < rows[d_k, True]['var'] < 1.3                   # Var(q.k / sqrt(d_k)) = 1
        assert 0.7 < rows[d_k, False]['var'] / d_k < 1.3            # Var(q.k) = d_k
        assert rows[d_k, True]['cut_off'] == 0
    scaled, unscaled = rows[256, True], rows[256, False]
    assert abs(scaled['max_p'] - rows[4, True]['max_p']) < 0.05     # the scale makes d_k irrelevant
    assert unscaled['max_p'] > 0.8 and unscaled['entropy'] < 0.5 * scaled['entropy']
    assert unscaled['p1p'] < 0.3 * scaled['p1p']
    assert unscaled['passes'] < 0.5 * scaled['passes'] and unscaled['cut_off'] > 0.2
    curves = result['curves']
    assert sum(curves[True][-10:]) / 10 < 0.1 < 0.5 < sum(curves[False][-10:]) / 10


@pytest.mark.slow
def test_residual_highway_keeps_the_gradient_and_its_absence_loses_it():
    result = residual_highway.run(n_layers=24)
    ratios, shares = result['ratios'], result['shares']
    for norm_place in ('pre', 'post'):
        assert 0.1 < ratios[norm_place, True] < 10             # first layer within 10x of the last
        assert ratios[norm_place, False] < 1e-2                # orders of magnitude smaller
        assert min(shares[norm_place, True]) > 0.5             # most of the gradient rides the "+1"
        assert max(shares[norm_place, False]) == 0             # no highway, no share


@pytest.mark.slow
def test_rnn_gradient_decays_with_distance_and_attention_does_not():
    grads = rnn_vs_attention.run(seq_len=16, d_model=8, batch_size=4)['grads']
    rnn, attention = grads['RNN'], grads['attention']
    assert rnn[15] < 1e-3 * rnn[1]
    assert all(a > b for a, b in zip(rnn[1:], rnn[2:]))       # every extra step shrinks it
    far = attention[1:]
    assert max(far) < 10 * min(far)                             # one hop, at any distance


def test_layernorm_ignores_the_batch_and_batchnorm_does_not():
    result = layernorm_vs_batchnorm.run(d_model=8)
    assert result['article_example'] == pytest.approx(article.LAYERNORM_EXAMPLE['y'], abs=2e-3)
    assert result['changes']['LayerNorm'] < 1e-6
    assert result['changes']['BatchNorm1d'] > 0.1
    alone = result['results']['x alone (batch of 1)']
    assert isinstance(alone[0], list) and isinstance(alone[1], ValueError)
    sweep = result['by_batch_size']
    assert max(sweep['LayerNorm']) - min(sweep['LayerNorm']) < 1e-6      # the batch size cannot move it
    assert max(sweep['BatchNorm1d']) - min(sweep['BatchNorm1d']) > 0.1   # it moves BatchNorm's output


TINY_GPT = dict(d_model=16, n_layers=1, n_heads=2, context=16, batch_size=4)


def test_train_gpt_resumes_exactly_where_it_stopped(tmp_path):
    interrupted = train_gpt.train(steps=6, out=str(tmp_path / 'a'), ckpt_every=3, stop_after=3, **TINY_GPT)
    assert len(interrupted['losses']) == 3
    resumed = train_gpt.train(steps=6, out=str(tmp_path / 'a'), resume=True, **TINY_GPT)
    straight = train_gpt.train(steps=6, out=str(tmp_path / 'b'), **TINY_GPT)
    assert resumed['losses'] == pytest.approx(straight['losses'], rel=1e-6)
    assert mt.load(tmp_path / 'a' / 'ckpt.npz')['step'] == 6
    with pytest.raises(ValueError, match='other settings'):
        train_gpt.train(steps=6, out=str(tmp_path / 'a'), resume=True, **dict(TINY_GPT, d_model=32))


@pytest.mark.slow
def test_train_gpt_loss_falls_and_it_samples(capsys):
    result = train_gpt.run(steps=60, d_model=32, n_layers=1, n_heads=2, context=32, batch_size=8, sample_length=40)
    losses = result['losses']
    assert sum(losses[-10:]) / 10 < sum(losses[:10]) / 10 - 0.5
    out = capsys.readouterr().out
    for label in ('T = 0.2', 'T = 0.7', 'T = 1.0', 'T = 1.5', 'greedy'):
        assert f"--- {label}\nTwinkle" in out
    texts = train_gpt.samples(result['model'], result['chars'], length=40)
    assert all(len(t) == len('Twinkle') + 40 for t in texts.values())  # past max_len / 2: written in pieces


def test_train_gpt_command_line(capsys):
    with pytest.raises(SystemExit):
        train_gpt.main(['--help'])
    assert '--resume' in capsys.readouterr().out


@pytest.mark.slow
def test_train_reverse_beats_chance():
    result = train_reverse.run(steps=100, length=4, n_test=100, d_model=32, n_heads=4, lr=1e-2)
    assert result['token_accuracy'] > 0.5  # chance: 0.1


def test_the_saturation_plot_says_what_passes_means_on_the_plot():
    figure = pytest.importorskip('matplotlib.figure', reason="the plot needs matplotlib")
    rows = [{'d_k': d, 'scaled': scaled, 'p1p': 0.1 / d, 'passes': 0.5 / d} for d in (4, 16) for scaled in (True, False)]
    ax = figure.Figure().subplots()
    softmax_saturation.draw_saturation(ax, rows, (4, 16))
    assert any(t.get_text().startswith('passes = |dL/dscores| / |dL/dp|') for t in ax.texts)
    assert 'passes' in ax.get_ylabel() and len(ax.get_lines()) == 4
