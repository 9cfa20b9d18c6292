"""Text the lessons print but transformer/ and demos/claims.py make speaks Chinese too, with the same
numbers: article_trace's tables (transformer.article_checks), the BatchNorm1d batch-of-one error that
layernorm_vs_batchnorm shows, compare_with_torch's table and every lesson's 'Typical run time' line."""
import re

import pytest

import microtensor as mt
from microtensor import i18n


@pytest.fixture
def in_each_language():
    """Call f() in English, then in Chinese: (english, chinese)."""
    def run(f):
        try:
            return i18n.use('en') and f(), (i18n.use('zh') and f())
        finally:
            i18n.use()
    return run


def _numbers(text):
    return re.findall(r"-?\d+(?:\.\d+)?(?:e[-+]?\d+)?", str(text))


def _chinese(text):
    return re.search(r'[\u4e00-\u9fff]', str(text)) is not None


def test_article_trace_tables(in_each_language):
    from demos import article_trace
    from transformer import article_checks
    X0 = article_trace.x0()
    english, chinese = in_each_language(lambda: article_checks.tables(X0))
    assert [rows for _, _, rows in english] == [rows for _, _, rows in chinese]
    for (title, header, _rows), (title_zh, header_zh, _) in zip(english, chinese):
        assert title != title_zh and _chinese(title_zh) and _numbers(title) == _numbers(title_zh)
        assert len(header) == len(header_zh) and any(map(_chinese, header_zh))
    assert english[0][0].startswith('4. The first residual connection (§7.3 b)')


def test_batchnorm_batch_of_one(in_each_language):
    from transformer import BatchNorm1d

    def error():
        with pytest.raises(ValueError) as caught:
            BatchNorm1d(8)(mt.randn(1, 8))
        return str(caught.value)
    english, chinese = in_each_language(error)
    assert english.startswith('BatchNorm1d: training needs more than one value per feature')
    assert _chinese(chinese) and _numbers(english) == _numbers(chinese) and '.eval()' in chinese


def test_the_run_time_line(in_each_language):
    from demos import claims
    english, chinese = in_each_language(lambda: claims.run_time('article_trace'))
    assert english.startswith('Typical run time: ') and chinese.startswith('典型运行时间：')
    assert _numbers(english) == _numbers(chinese)


def test_compare_with_torch_table(in_each_language, capsys):
    pytest.importorskip('torch', reason='compare_with_torch runs the same model in PyTorch')
    from transformer import GPT, compare_with_torch

    def table():
        mt.manual_seed(0)
        model = GPT(11, d_model=8, n_layers=1, n_heads=2, max_len=6, init_std=0.1)
        compare_with_torch(model, mt.tensor([[1, 2, 3, 4, 5, 6]]))
        return capsys.readouterr().out
    english, chinese = in_each_language(table)
    assert 'largest relative difference:' in english and '最大相对差' in chinese
    assert _numbers(english) == _numbers(chinese)
    assert not any(line in chinese for line in english.splitlines() if re.search(r'[a-z]{4,} [a-z]{4,}', line))
