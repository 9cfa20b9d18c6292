"""The attention lessons compute what they claim, in their quick modes."""
import importlib
import math
import os

import pytest

import microtensor as mt
from demos import attention_by_hand, attention_cost, attention_maps, kv_cache, scale_variants, why_separate_qk
from demos import __main__ as tour, articles
from transformer import article_data as article
from transformer import generate

from readme import ROOT


pytestmark = pytest.mark.usefixtures('in_tmp_path', 'speaks_of_the_articles')  # lessons write under runs/


def test_the_tour_lists_the_attention_lessons_with_their_sections(capsys):
    tour.main(['--list'])
    out = capsys.readouterr().out
    for name in ('attention_by_hand', 'why_separate_qk', 'kv_cache', 'scale_variants', 'attention_cost',
                 'attention_maps'):
        entry = out[out.index(f"\n{name} ") + 1:].split('\n')[2]  # the line after the article's title
        article, number = importlib.import_module(f"demos.{name}").SECTIONS[0]
        assert entry.strip().startswith(f"§{number} {articles.HEADINGS[article][number][0]}")


@pytest.mark.slow
def test_attention_by_hand_love_example_hard_soft_and_small_numbers(capsys):
    result = attention_by_hand.run(samples=4000)
    A = result['A']
    assert sum(result["scaled"], []) == pytest.approx(sum(article.LOVE_SCALED_SCORES, []), abs=1e-12)  # S / 2 is right
    assert [round(v, 2) for v in A[0]] == [0.66, 0.10, 0.23]
    assert [round(v, 2) for v in A[2]] == [0.16, 0.75, 0.10]
    assert A[1] == pytest.approx(article.LOVE_WEIGHTS_PRINTED[1], abs=0.005)           # row 爱 is right
    assert {(q, k) for q, k, _, _ in result['wrong']} == {(q, k) for q in '我你' for k in '我爱你'}
    named = {cell: (value, actual) for cell, _, value, actual, _ in result['text_cells']}
    assert named[(1, 2)] == (4.7, 4.7) and named[(2, 1)] == (2.1, 3.9)                 # the wrong cell

    soft, hard = result['hard_vs_soft']['soft'], result['hard_vs_soft']['hard']
    assert soft[0] > 0.1 and soft[1] < 1e-6          # non-zero, and autograd agrees with central differences
    assert hard == (0.0, 0.0)                        # exactly zero, both ways
    temperatures = result['hard_vs_soft']['temperatures']
    assert temperatures[-1][1] < 1e-6 * temperatures[0][1]

    small = result['small']
    p = small['softmax'][2]
    assert p[0] > 0.999 and p[1] < 1e-10
    for d_k, printed, exact, sampled, _ in small['stds']:
        assert abs(printed - exact) < 0.05 and abs(sampled / exact - 1) < 0.05
    x, printed, computed = small['argmax']
    assert computed == [1, 0, 0] != printed
    sums = small['heatmap_sums']
    assert sums['animal'] == pytest.approx(1.1) and sums['The'] <= 1 and sums['it'] <= 1
    assert 'IMPOSSIBLE' in capsys.readouterr().out


@pytest.mark.slow
def test_why_separate_qk_symmetry_and_the_directional_task():
    result = why_separate_qk.run()
    shared, separate = result['symmetry'][True], result['symmetry'][False]
    assert shared['S_asym'] < 1e-12 < 0.1 < separate['S_asym']      # shared: S symmetric
    assert shared['A_asym'] > 1e-3                                   # but A is not (the article overstates)
    assert shared['AZ_asym'] < 1e-12                                 # A_ij Z_i = exp(S_ij) is
    runs = result['training']
    s, d = runs['shared W_Q = W_K'], runs['separate W_Q, W_K']
    assert d['accuracy'] > 0.99 and d['back'] > 0.9 > d['forward'] * 100
    assert sum(s['losses'][:60]) > 2 * sum(d['losses'][:60])         # the shared one learns slower
    assert s['back'] < d['back']                                     # and attends less cleanly to t-1
    steps = [row[1] for row in result['staircase']]                  # S_{t,t-1} falls along t
    assert all(a > b for a, b in zip(steps, steps[1:]))


@pytest.mark.slow
def test_scale_variants_variance_sharpness_and_training():
    result = scale_variants.run()
    stats = {(name, d_k): (var, max_p) for name, d_k, var, max_p in result['statistics']}
    for (name, d_k), (var, max_p) in stats.items():
        assert var == pytest.approx(d_k * scale_variants.SCALES[name](d_k) ** 2, rel=0.1)
        assert stats['1/d_k', d_k][1] < stats['1/sqrt(d_k)', d_k][1] < stats['no scale', d_k][1]
    sqrt_sharpness = [stats['1/sqrt(d_k)', d_k][1] for d_k in scale_variants.D_KS]
    assert max(sqrt_sharpness) - min(sqrt_sharpness) < 0.03          # the same at every d_k
    assert stats['1/d_k', 1024][1] < 1.1 / 16 and stats['no scale', 1024][1] > 0.9  # uniform vs one-hot
    summary = result['summary']
    assert max(summary, key=lambda n: summary[n]['first']) == '1/d_k'          # slowest start
    assert max(summary, key=lambda n: summary[n]['worst_late']) == 'no scale'  # least stable
    assert min(summary, key=lambda n: summary[n]['last']) == '1/d_k'           # yet 1/d_k ends lowest here
    assert all(r['accuracy'] > 0.95 for r in result['training'].values())      # all learn it (a margin: one kernel ends at 98.9%)
    assert result['learned_scale'] != pytest.approx(1 / 8, abs=1e-4)           # the scale did learn
    assert result['learned_scale'] == pytest.approx(1 / 8, rel=0.5)
    # the table's "1/d_k: extremely slow": plain SGD shows it, Adam mostly hides it
    learn = result['steps_to_learn']
    sgd, adam = (learn[opt, '1/d_k'] / learn[opt, '1/sqrt(d_k)'] for opt in ('SGD', 'Adam'))
    assert sgd > 2.5 and adam < 0.75 * sgd
    assert result['sgd']['1/d_k']['back'] < 0.8 < result['sgd']['1/sqrt(d_k)']['back']  # still blurred under SGD


@pytest.mark.slow
def test_kv_cache_sizes_from_the_caches_and_the_93_percent():
    rows = kv_cache.measure(large=('DeepSeek 67B', 'DeepSeek-V2'))
    small = {r['kind']: r for r in rows if r['config'].startswith('small')}
    d_h = 8  # 64 wide, 8 heads
    expected = {'MHA': 2 * 8 * d_h, 'GQA': 2 * 2 * d_h, 'MQA': 2 * d_h, 'MLA': 4 * d_h + d_h // 2}
    for kind, numbers in expected.items():
        assert small[kind]['per_layer'] == numbers
        assert small[kind]['bytes_fp32'] == 4 * numbers * small[kind]['layers']     # float32, every layer
    large = {r['config']: r for r in rows if not r['config'].startswith('small')}
    assert large['DeepSeek 67B']['per_layer'] == 2 * 8 * 128
    assert large['DeepSeek-V2']['per_layer'] == 512 + 64
    ds = kv_cache.deepseek_comparison(rows)
    assert ds['deployed'] == pytest.approx(article.MLA_KV_CACHE_REDUCTION, abs=5e-4)  # 93.3% with the 6 bits
    assert ds['same_precision'] == pytest.approx(0.822, abs=5e-4)                      # MLA alone: 82.2%
    assert ds['vs_own_mha'] == pytest.approx(1 - 576 / 32768, abs=1e-9)


def test_kv_cache_design_table():
    shared, mha, gqa, mqa, mla = kv_cache.design_table()         # (design, parameters, cached per token)
    assert shared[0].startswith('shared') and mla[0].startswith('low-rank')
    assert shared[2] == mha[2] == 128 and shared[1] == mha[1] - 64 * 64      # fewer parameters, same cache
    assert (gqa[2], mqa[2], mla[2]) == (32, 16, 36)


def test_kv_cache_generation_is_the_library_generation():
    model = kv_cache.small_gpt('MLA')
    prompt = mt.tensor([[3, 1, 4]])
    ids, cache = kv_cache.generate_with_cache(model, prompt, 5)
    assert ids.tolist() == generate(model, prompt, 5, greedy=True).tolist()
    assert cache[0].length == 3 + 5 - 1


@pytest.mark.slow
def test_attention_cost_structure():
    rows = attention_cost.measure([64, 128, 256], timing=False)
    ns = [r['n'] for r in rows]
    assert attention_cost.slope(ns, [r['score_bytes'] for r in rows]) == pytest.approx(2.0, abs=1e-9)
    assert len({r['attention_depth'] for r in rows}) == 1                        # constant: parallel
    assert attention_cost.slope(ns, [r['rnn_depth'] for r in rows]) == pytest.approx(1.0, abs=0.01)  # serial
    assert rows[0]['score_bytes'] == 4 * 64 * 64 * 4                            # h x n x n float32
    fake = [{'n': n, 'attention_s': a, 'rnn_s': 1.0} for n, a in ((100, 0.5), (200, 2.0))]
    assert attention_cost.crossing(fake) == pytest.approx(100 * 2 ** 0.5)
    assert attention_cost.crossing(fake[:1]) is None


def test_readme_and_the_reading_path_quote_the_sequential_steps_attention_cost_counts():
    depth = attention_cost.measure([64], timing=False)[0]['attention_depth']
    with open(os.path.join(ROOT, 'README.md'), encoding='utf-8') as f:
        assert f"sequential steps {depth} (the same at every n) vs 4n + 2" in f.read()
    with open(os.path.join(ROOT, 'docs', 'articles.md'), encoding='utf-8') as f:
        doc = f.read()
    assert f"longest chain of ops is {depth} for" in doc and f"stays {depth} long at every n" in doc


@pytest.mark.slow
def test_attention_maps_reversal_is_an_anti_diagonal():
    result = attention_maps.run()
    rev = result['reverse']
    L = len(rev['argmax'][0])
    assert rev['token_accuracy'] > 0.9
    for head, anti in zip(rev['argmax'], rev['anti_diagonal']):
        assert head == [L - 1 - t for t in range(L)] and anti > 3 / L
    gpt = result['gpt']
    for layer in gpt['weights']:
        for A in layer:
            T = len(A)
            assert all(abs(sum(row) - 1) < 1e-5 for row in A)
            assert all(A[t][s] == 0 for t in range(T) for s in range(t + 1, T))          # causal
    best = result['gpt_head']
    assert best['previous'] == max(h['previous'] for h in gpt['heads']) and best['previous'] > best['self']
    assert not math.isnan(gpt['final_loss'])
