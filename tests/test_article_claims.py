"""The lessons that check the articles' remaining claims compute them: each test asserts one claim (or its
refutation) on numbers the lesson's own functions compute, at small sizes.

Lessons: qkv_roles, scale_alternatives, heads_specialise, positional_add_vs_concat, residual_stream,
ffn_memory, dependency_span, score_matrix_size.
"""
import math

import pytest

from demos import (__main__ as tour, articles, dependency_span, ffn_memory, heads_specialise,
                   positional_add_vs_concat, qkv_roles, residual_stream, scale_alternatives, score_matrix_size)
from transformer import article_data as article

LESSONS = [qkv_roles, scale_alternatives, heads_specialise, positional_add_vs_concat, residual_stream, ffn_memory,
           dependency_span, score_matrix_size]

pytestmark = pytest.mark.usefixtures('in_tmp_path')  # lessons write under runs/ of the working folder


def test_the_lessons_are_in_the_tour_and_name_real_sections():
    names = dict(tour.LESSONS)
    for lesson in LESSONS:
        assert lesson.__name__.split('.')[-1] in names
        assert lesson.SECTIONS
        for key, number in lesson.SECTIONS:
            articles.heading(key, number)                                   # a KeyError if there is no such section


# ---------------------------------------------------------------------------- qkv_roles
def test_without_projections_each_word_attends_most_to_itself():
    S, A = qkv_roles.self_attention_of_x0()
    n = len(S)
    assert all(abs(S[i][j] - S[j][i]) < 1e-12 for i in range(n) for j in range(n))   # X X^T is symmetric
    assert all(max(range(n), key=lambda j: A[i][j]) == i for i in range(n))
    is_max, on_diagonal = qkv_roles.diagonal_share(samples=50)
    assert is_max == 1.0 and on_diagonal > 0.9        # Cauchy-Schwarz, rows of equal length


@pytest.mark.slow
def test_without_projections_copying_the_previous_token_is_not_learned():
    without = qkv_roles.copy_previous(False, steps=100)
    with_ = qkv_roles.copy_previous(True, steps=150)
    assert without['accuracy'] < 0.3 and without['itself'] > 0.5 > without['back']
    assert with_['accuracy'] > 0.9 and with_['back'] > 0.8


@pytest.mark.slow
def test_tying_w_v_to_w_k_loses_the_lookup_only_when_d_k_is_tight():
    tight = {tie: qkv_roles.train_lookup(tie, d_k=4, steps=400)[2] for tie in (False, True)}
    roomy = qkv_roles.train_lookup(True, d_k=8, steps=400)[2]
    assert tight[False] > 0.95 and tight[True] < 0.85
    assert roomy > 0.95


def test_a_fourth_projection_is_no_combination_of_q_k_v_but_a_second_key_merges():
    four = qkv_roles.fourth_projection(d_model=32)
    assert four['residual'] > 0.9                       # U = aQ + bK + cV explains almost nothing
    assert four['merged'] < 1e-10 and four['rescaled'] < 1e-10


def test_solve3_solves():
    G, x = [[4.0, 1.0, 0.5], [1.0, 3.0, 0.2], [0.5, 0.2, 2.0]], [1.0, -2.0, 0.5]
    r = [sum(G[i][j] * x[j] for j in range(3)) for i in range(3)]
    assert qkv_roles.solve3(G, r) == pytest.approx(x)


def test_mla_compresses_queries_with_d_cq_without_changing_the_cache():
    small = qkv_roles.mla_queries(d_model=32, n_heads=2, d_c=8, d_cq=12)
    (full, full_formula, full_cache), (compressed, compressed_formula, compressed_cache) = small[None], small[12]
    assert full == full_formula and compressed == compressed_formula
    assert compressed < full and compressed_cache == full_cache
    v2 = article.DEEPSEEK_V2
    shape = (v2['d_model'], v2['n_heads'], v2['d_head'], v2['d_rope'])
    assert qkv_roles.query_parameters(*shape, v2['d_cq']) < 0.5 * qkv_roles.query_parameters(*shape)


def test_the_it_table_sums_to_one_and_disagrees_slightly_with_the_heat_map():
    it = qkv_roles.it_table()
    assert it['sum'] == pytest.approx(1.0, abs=1e-9)
    assert len(it['others']) == 6 and 'The' in it['others']
    assert it['gaps']['animal'] == pytest.approx(math.log(13))
    assert it['heat_sum'] == pytest.approx(0.95) and it['heat_the'] == pytest.approx(0.05)


# ---------------------------------------------------------------------------- scale_alternatives
def test_thirty_is_about_two_and_a_half_standard_deviations_at_d_k_128():
    d = scale_alternatives.dot_products(rows=40)
    assert d['std'] == pytest.approx(math.sqrt(128), rel=0.05)
    assert 0.004 < d['beyond'] < 0.014                  # the normal tail: 0.80%
    assert scale_alternatives.normal_beyond(30 / math.sqrt(128)) == pytest.approx(0.0080, abs=2e-4)
    assert d['row_max'] > 30                            # a row of 512 keys does reach ±30


def test_layernorm_does_not_stop_the_scores_growing_with_d_k():
    std = scale_alternatives.pre_ln_scores(d_ks=(16, 1024), n=8, B=2)
    assert std[1024] / std[16] > 4                      # sqrt(1024 / 16) = 8


@pytest.mark.slow
def test_a_small_d_k_limits_what_one_head_can_hold():
    acc = scale_alternatives.small_d_k(d_ks=(2, 16), steps=400)
    assert acc[2] < 0.3 < 0.8 < acc[16]


def test_softmax_examples_and_their_gradients():
    p, slope = scale_alternatives.softmax_and_slope([1.2, -0.3])
    assert [round(v, 3) for v in p] == [0.818, 0.182]
    assert slope == pytest.approx(p[0] * (1 - p[0]))
    p, slope = scale_alternatives.softmax_and_slope([20.0, -5.0])
    assert p[0] > 0.999 and slope < 1e-10
    p, slope = scale_alternatives.softmax_and_slope([5.0, -5.0])   # inside ±5, and still saturated
    assert p[0] > 0.9999 and slope < 1e-4


@pytest.mark.slow
def test_a_trained_model_goes_beyond_five_and_still_learns():
    trained = scale_alternatives.trained_scores(steps=200)
    assert trained['accuracy'] > 0.9 and trained['largest'] > 5


# ---------------------------------------------------------------------------- heads_specialise
def test_the_three_head_tables():
    facts = heads_specialise.table_facts()
    assert all(s == pytest.approx(1.0) for f in facts.values() for s in f['sums'])
    assert max(facts, key=lambda h: facts[h]['entropy']) == 3               # head 3 is the most uniform
    assert max(facts, key=lambda h: facts[h]['neighbours']) == 2            # not head 1
    assert heads_specialise.concat_shapes() == [(3, 4), (3, 4), (3, 12), (3, 12)]


@pytest.mark.slow
def test_two_heads_split_the_previous_and_the_next_token():
    one = heads_specialise.train_neighbours(1, steps=300)
    two = heads_specialise.train_neighbours(2, steps=300)
    assert min(one['accuracy']) < 0.6
    assert min(two['accuracy']) > 0.9
    assert {heads_specialise.role(w) for w in two['offsets']} == {'previous token', 'next token'}


# ---------------------------------------------------------------------------- positional_add_vs_concat
def test_pe_dot_products_depend_on_the_distance_only_and_fall_only_in_a_wide_code():
    for d in (12, 512):
        dots = positional_add_vs_concat.pe_dots(d)
        assert dots[10] == pytest.approx(dots[100], abs=1e-9)
        assert dots[10][0] == pytest.approx(d / 2)                           # |PE_p|^2 = d / 2
    narrow, wide = positional_add_vs_concat.pe_dots(12)[10], positional_add_vs_concat.pe_dots(512)[10]
    assert positional_add_vs_concat.first_rise(wide) is None
    assert positional_add_vs_concat.OFFSETS[positional_add_vs_concat.first_rise(narrow)] == 5   # k = 5 beats k = 2


@pytest.mark.slow
def test_adding_and_concatenating_both_learn_the_positional_task():
    results = {name: positional_add_vs_concat.train_variant(options, steps=300)
               for name, options in list(positional_add_vs_concat.VARIANTS.items())[:2]}
    (add_params, _, add_acc, _), (concat_params, _, concat_acc, _) = results.values()
    assert add_acc > 0.9 and concat_acc > 0.9
    assert concat_params <= add_params                 # the same width: no more parameters
    assert positional_add_vs_concat.interference(512) < positional_add_vs_concat.interference(16) < 0.5


# ---------------------------------------------------------------------------- residual_stream
def test_the_residual_stream_does_not_keep_x0_at_100_percent():
    pre = residual_stream.stream('pre', at=(1, 96))
    post = residual_stream.stream('post', at=(1, 96))
    assert pre[1][0] > 0.9 and pre[96][0] < 0.6 and pre[96][1] > 1     # added more than x_0's own length
    assert post[96][0] < 0.2 < pre[96][0]
    layer, normed = residual_stream.article_layer(seeds=5)
    assert all(mean < 0.8 for mean, _, _ in layer.values())
    assert all(c < 0.8 for c in normed.values())                        # LayerNorm alone turns the vectors


@pytest.mark.slow
def test_the_plain_net_stops_training_at_a_lower_depth_than_the_residual_one():
    sweep = residual_stream.depth_sweep(depths=(2, 24), steps=150)['errors']
    assert residual_stream.trains(sweep[2, False]) and not residual_stream.trains(sweep[24, False])
    assert residual_stream.trains(sweep[24, True])
    assert sweep[24, False] > sweep[2, False]          # deeper plain nets do worse on the training data


# ---------------------------------------------------------------------------- ffn_memory
def test_the_ffn_unit_by_hand():
    h = ffn_memory.by_hand()
    assert h['products'] == pytest.approx(ffn_memory.PRODUCTS_PRINTED, abs=1e-12)
    assert h['pre'] == pytest.approx(0.0609, abs=1e-9)
    assert round(h['gelu'], 2) == 0.03 and h['gelu'] / h['pre'] == pytest.approx(0.5, abs=0.03)
    assert h['module'] == pytest.approx(h['gelu'], abs=1e-5) and h['gelu_tanh'] == pytest.approx(h['gelu'], abs=1e-5)
    assert [tuple(s) for s in h['shapes']] == [(1, 12), (1, 48), (1, 48), (1, 12)]
    assert max(abs(a - b) for a, b in zip(ffn_memory.X_KNOWN, ffn_memory.X_MID_EAT)) < 0.005


@pytest.mark.slow
def test_an_ffn_stores_more_facts_than_a_linear_map_and_more_with_a_wider_hidden_layer():
    recall = {d_ff: ffn_memory.store(N=256, d_ff=d_ff, steps=300)[2] for d_ff in (None, 8, 64)}
    assert recall[None] < 0.5 < 0.95 < recall[64]
    assert recall[8] < 0.5


# ---------------------------------------------------------------------------- dependency_span
@pytest.mark.slow
def test_the_rnn_learns_a_short_dependency_but_not_a_long_one_and_attention_both():
    assert dependency_span.span('rnn', 3, steps=300)[0] > 0.9
    assert dependency_span.span('rnn', 24, steps=300)[0] < 0.3
    assert dependency_span.span('attention', 24, steps=300)[0] > 0.9


# ---------------------------------------------------------------------------- score_matrix_size
def test_vit_patches_and_the_n_squared_count():
    vit = score_matrix_size.vit_scores()
    assert vit['patches'] == (196, 768) and vit['checked'] == 0
    assert vit['weights'] == (1, 12, 196, 196) and vit['per_head'] == 196 ** 2
    sizes = score_matrix_size.scores_by_length((128, 256))
    assert sizes[128][0] == 128 ** 2 and sizes[256][0] == 4 * sizes[128][0]
