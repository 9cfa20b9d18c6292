"""The tour and what every lesson shares, in Chinese: the same numbers as in English, other words.

(tests/test_untranslated.py checks that every marked sentence has a translation; this file checks
that the translations are the ones printed, and that a plot in Chinese gets a font that has the
characters, or one line that says how to get one.)
"""
import os
import re
import subprocess
import sys
import warnings

import pytest

from microtensor import i18n

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NUMBER = re.compile(r'-?\d+(?:\.\d+)?(?:e[-+]?\d+)?')
TIMING = re.compile(r'^\(\d+(\.\d+)? s\)$')  # the tour's clock after each lesson: not the same twice


def tour(*argv, cwd):
    """What `python -m demos ARGV` prints (stdout, stderr), run in `cwd` with the repository importable."""
    env = {**os.environ, 'PYTHONPATH': ROOT + os.pathsep + os.environ.get('PYTHONPATH', '')}
    env.pop('MICROTENSOR_LANG', None)  # the language comes from --lang alone
    result = subprocess.run([sys.executable, '-m', 'demos', *argv], capture_output=True, text=True, cwd=cwd,
                            env={**env, 'LANG': 'C.UTF-8', 'LANGUAGE': ''}, timeout=300)
    assert result.returncode == 0, result.stderr
    return result.stdout


def numbers(text):
    """The numbers printed, in order; the clock's lines and the articles' headings (whose English
    glosses are left out in Chinese) are skipped."""
    lines = [line for line in text.splitlines()
             if not TIMING.match(line.strip()) and not line.strip().startswith('§')]
    return NUMBER.findall('\n'.join(lines))


def test_a_lesson_in_the_tour_prints_the_same_numbers_in_chinese(tmp_path):
    english = tour('train_xor', '--steps', '200', '--lang', 'en', cwd=tmp_path)
    chinese = tour('train_xor', '--steps', '200', '--lang', 'zh', cwd=tmp_path)
    assert numbers(chinese) == numbers(english) and len(numbers(english)) > 20
    for said in ('图已保存到 runs/train_xor.png', '写出的文件（路径相对于', '\n深入篇\n  §6.1 FFN 的数学定义'):
        assert said in chinese, chinese
    for said in ('plot saved to', 'Files written', '深入篇 (the deep dive)'):
        assert said in english and said not in chinese


def test_the_tours_help_and_list_speak_chinese(tmp_path):
    chinese = tour('--lang', 'zh', '--help', cwd=tmp_path)
    english = tour('--help', cwd=tmp_path)
    for said in ('用法：', '演示之旅', '列出各课并退出', '输出的语言'):
        assert said in chinese and said not in english
    assert 'list the lessons and exit' in english and 'list the lessons and exit' not in chinese
    listed = tour('--list', '--lang', 'zh', cwd=tmp_path)
    assert '只用引擎：一个 MLP 学会 XOR' in listed and '§2.3.2 Softmax 的饱和区\n' in listed


def test_a_usage_error_of_a_lesson_speaks_chinese(tmp_path):
    env = {**os.environ, 'PYTHONPATH': ROOT}
    result = subprocess.run([sys.executable, '-m', 'demos.train_xor', '--lang', 'zh', '--steps', '0'],
                            capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120)
    assert result.returncode == 2 and '必须是整数 >= 1，得到的是 0' in result.stderr, result.stderr


@pytest.fixture
def chinese():
    i18n.use('zh')
    yield
    i18n.use('en')


def test_shared_sentences_are_templates_filled_in_chinese(chinese):
    from demos import budget, report
    with pytest.raises(report.Diverged, match='损失在第 7 步变成了 nan.*更低的 --lr'):
        report.check_loss(float('nan'), 7, 'lesson')
    assert report.check_learned([1.0] * 20, 'lesson') == \
        'lesson：这次运行没有学到东西：损失几乎没动，从第 1 步的 1 到 1（最后 2 步的平均）。试试更多的 --steps，或者更高的 --lr。'
    assert budget.heads({'--d-model': 6, '--n-heads': 4}) == \
        '--n-heads 4 必须整除 --d-model 6：每个头分到 d_model / n_heads 维（例如 --n-heads 3）'


def _plot(report, folder):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        path = report.save_lines('zh', {'缩放': [1.0, 0.5, 0.25]}, '步数', '损失', '梯度与距离', folder=str(folder))
    return path, [str(w.message) for w in caught]


def test_a_plot_in_chinese_uses_a_cjk_font(chinese, tmp_path, capsys, monkeypatch):
    pytest.importorskip('matplotlib', reason='the plots need matplotlib')
    from demos import report
    monkeypatch.setattr(report, '_FONTS', {})
    if report.cjk_font() is None:
        pytest.skip("no CJK font installed (Debian: apt-get install fonts-noto-cjk); the plot's font is untested")
    path, warned = _plot(report, tmp_path)
    assert os.path.exists(path) and not [w for w in warned if 'Glyph' in w], warned
    assert 'CJK' not in capsys.readouterr().out


def test_without_a_cjk_font_one_line_says_how_to_get_one(chinese, tmp_path, capsys, monkeypatch):
    pytest.importorskip('matplotlib', reason='the plots need matplotlib')
    from demos import report
    monkeypatch.setattr(report, '_FONTS', {})
    monkeypatch.setattr(report, 'cjk_font', lambda: None)
    monkeypatch.setitem(__import__('matplotlib').rcParams, 'font.sans-serif', ['DejaVu Sans'])
    for _ in range(2):
        path, warned = _plot(report, tmp_path)
        assert os.path.exists(path) and not [w for w in warned if 'Glyph' in w], warned
    said = [line for line in capsys.readouterr().out.splitlines() if 'fonts-noto-cjk' in line]
    assert len(said) == 1 and '没有安装中文字体' in said[0]


def test_every_weight_of_the_chinese_font_is_added(monkeypatch):
    """A font installed after matplotlib made its list is added with all its weights: a bold title (the
    attention_by_hand grid's wrong cells) then finds a bold face rather than warning 'Failed to find font
    weight bold'."""
    font_manager = pytest.importorskip('matplotlib.font_manager', reason='the plots need matplotlib')
    import copy
    import shutil
    from demos import report
    if shutil.which('fc-list') is None:
        pytest.skip('no fontconfig (fc-list): fonts installed later are not looked for')
    listing = subprocess.run(['fc-list', ':lang=zh', 'file'], capture_output=True, text=True).stdout
    cjk_files = {line.split(':')[0].strip() for line in listing.splitlines() if line.strip()}
    if not any('Bold' in path for path in cjk_files):
        pytest.skip('no bold CJK face installed (Debian: apt-get install fonts-noto-cjk)')
    as_if_new = copy.copy(font_manager.fontManager)     # matplotlib's list as made before the font came
    as_if_new.ttflist = [f for f in font_manager.fontManager.ttflist if f.fname not in cjk_files]
    monkeypatch.setattr(font_manager, 'fontManager', as_if_new)
    monkeypatch.setattr(report, 'CJK_FONTS', ())
    name = report.cjk_font()
    weights = {font_manager.weight_dict.get(f.weight, f.weight) for f in as_if_new.ttflist if f.name == name}
    assert 400 in weights and 700 in weights, (name, weights)
