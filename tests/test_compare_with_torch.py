"""compare_with_torch and its lesson: one row per parameter, rounding-sized differences, a planted
mistake caught; without torch the lesson skips with the reason."""
import sys

import pytest

import microtensor as mt
from demos import compare_with_torch as lesson
from transformer import GPT, Transformer, compare_with_torch

needs_torch = pytest.mark.skipif(lesson.torch_missing() is not None,
                                 reason="compare_with_torch needs torch (pip install 'microtensor[torch]')")
pytestmark = pytest.mark.usefixtures('in_tmp_path')


def tiny_gpt(**options):
    return GPT(16, d_model=8, n_layers=1, n_heads=2, max_len=8, **dict(dict(init_std=0.1), **options))


@needs_torch
def test_the_lesson_prints_one_row_per_parameter_for_both_models(capsys):
    results = lesson.main(['--d-model', '8', '--n-layers', '1', '--n-heads', '2', '--seq-len', '5'])
    out = capsys.readouterr().out
    model = tiny_gpt()
    names = [name for name, _ in model.named_parameters()]
    rows = results['tiny GPT']['rows']
    assert [row['name'] for row in rows] == names
    for name in names:
        assert f"\n{name} " in out
    assert results['tiny GPT']['largest'][2] < 1e-5 and results['variant']['largest'][2] < 1e-10
    assert 0 < results['variant']['largest'][2] < results['tiny GPT']['largest'][2]
    assert out.count('largest relative difference:') == 2 and 'float64' in out


@needs_torch
def test_a_mistake_in_the_pytorch_twin_shows_up(monkeypatch, capsys):
    from transformer import torch_modules
    ids = mt.randint(0, 16, (2, 6))
    honest = compare_with_torch(tiny_gpt(), ids)
    scaled_attend = torch_modules.attend
    monkeypatch.setattr(torch_modules, 'attend',   # the 1/sqrt(d_k) forgotten
                        lambda Q, K, V, mask, scale, *rest: scaled_attend(Q, K, V, mask, 1.0, *rest))
    mt.manual_seed(0)
    wrong = compare_with_torch(tiny_gpt(init_std=1.0), ids)
    assert honest['largest'][2] < 1e-5 and wrong['largest'][2] > 1e-2 and wrong['outputs'][1] > 1e-3


@needs_torch
def test_dropout_in_training_and_a_batch_of_the_wrong_form_are_refused():
    ids = mt.randint(0, 16, (2, 6))
    with pytest.raises(ValueError, match=r"dropout in training mode.*model\.eval\(\)"):
        compare_with_torch(tiny_gpt(dropout=0.1), ids)
    assert compare_with_torch(tiny_gpt(dropout=0.1).eval(), ids)['largest'][2] < 1e-5
    model = Transformer(16, 16, d_model=8, n_layers=1, n_heads=2, max_len=8)
    with pytest.raises(ValueError, match=r"a Transformer takes a batch of the form \(src, tgt\), got 1 arrays"):
        compare_with_torch(model, ids)


def test_without_torch_the_lesson_skips_with_the_reason(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, 'torch', None)   # `import torch` now fails
    assert lesson.main([]) is None
    assert "skipped, it needs PyTorch, which is not installed here: pip install 'microtensor[torch]'" \
        in capsys.readouterr().out
    with pytest.raises(ImportError, match='needs torch'):
        compare_with_torch(tiny_gpt(), mt.randint(0, 16, (2, 6)))


def test_ci_installs_the_cpu_build_then_the_extra_and_runs_the_pytorch_tests():
    import glob
    import os
    import re
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    with open(os.path.join(root, '.ci', 'run'), encoding='utf-8') as f:
        ci = f.read()
    pinned, extra = ci.index('pip install -q torch==2.13.0'), ci.index("pip install -q -e '.[torch]'")
    tests = ci.index('-m pytest -rs $(grep -lE ')
    assert ci.index('-m pytest\n') < pinned < extra < tests     # after the README's run, where they skip
    pattern = re.search(r'grep -lE "(.*?)" tests/test_\*\.py', ci).group(1)   # the files that need torch
    chosen = set()
    for path in glob.glob(os.path.join(root, 'tests', 'test_*.py')):
        with open(path, encoding='utf-8') as f:
            if re.search(pattern, f.read()):
                chosen.add(os.path.basename(path))
    assert {'test_torch_bridge.py', 'test_compare_with_torch.py', 'test_ddp.py', 'test_promotion.py',
            'test_param_groups.py'} <= chosen
    with open(os.path.join(root, 'pyproject.toml'), encoding='utf-8') as f:
        extras = re.search(r"\[project\.optional-dependencies\](.*?)\n\[", f.read(), re.S).group(1)
    assert re.search(r'^torch = \["torch>=2\.4"\]', extras, re.M)   # 2.13.0 satisfies it
    assert 'torch' not in re.search(r"^test = (.*)$", extras, re.M).group(1)
