"""The three Chinese articles the lessons check, and every numbered section heading in them.

A lesson names what it computes as (article key, section number) pairs in its module:

    SECTIONS = [('attention', '2.3.2'), ('deep_dive', '1.5')]

and every run of it (in the tour, on its own, in `python -m demos --list`) prints header(SECTIONS):
the article's title and each section's number, Chinese heading and an English gloss, so that a
reader can find the passage in the article.  docs/articles.md is the reading path the other way:
from each section to the lesson that computes it, with the article's claim and the verdict.

The headings are copied here once, verbatim (search the article for them); the glosses are ours.
The deep dive has no title, so it goes by a short name (docs/articles.md says which text it is).
Two articles number their sections from chapter 2, so a number alone does not name a section.
"""
import collections
import os

from microtensor import i18n
from microtensor.i18n import N_, _

Article = collections.namedtuple('Article', 'key title gloss short')
Article.__doc__ = """title: as the article prints it (or our short name); gloss: in English; short: how lessons
refer to it in a sentence ("the attention article")."""

ARTICLES = {
    'attention': Article('attention', '第二章：智能的原子 —— 注意力机制的解构',
                         'Chapter 2: The Atom of Intelligence: Deconstructing Attention', N_('the attention article')),
    'architecture': Article('architecture', '第二章：Transformer 架构原理',
                            'Chapter 2: How the Transformer Architecture Works', N_('the architecture article')),
    'deep_dive': Article('deep_dive', '深入篇',
                         'the deep dive (untitled: it opens with 前言 and "1. 再谈自注意力——从直觉到数学")',
                         N_('the deep dive')),
}

# {article key: {section number: (Chinese heading as printed, English gloss)}}, in the articles' order.
HEADINGS = {
    'attention': {
        '2.1': ('信息的路由协议：从"传话"到"广播"', 'routing information: from "passing it on" to "broadcasting"'),
        '2.1.1': ('RNN 的序列瓶颈', "the RNN's sequential bottleneck"),
        '2.1.2': ('Attention 的全局视野', "attention's global view"),
        '2.1.3': ('全局视野的必要性：指代消解案例', 'why the global view is needed: resolving a pronoun'),
        '2.2': ('三位一体：Q、K、V 的数学必然', 'three in one: why Q, K, V are a mathematical necessity'),
        '2.2.1': ('角色扮演游戏：图书馆隐喻', 'a role-play: the library metaphor'),
        '2.2.2': ('为什么 Q 和 K 必须分离？（非对称性）', 'why Q and K must be separate (asymmetry)'),
        '2.2.3': ('为什么 K 和 V 必须分离？（寻址与内容的解耦）',
                  'why K and V must be separate (decoupling address from content)'),
        '2.2.4': ('为什么是三个，不是五个？（最小完备集）', 'why three and not five? (the minimal complete set)'),
        '2.3': ('缩放点积 (Scaled Dot-Product)：那个 $\\sqrt{d_k}$ 是什么？',
                'scaled dot-product: what is that sqrt(d_k)?'),
        '2.3.1': ('点积爆炸的数学原理', 'the mathematics of exploding dot products'),
        '2.3.2': ('Softmax 的饱和区', "softmax's saturation zone"),
        '2.3.3': ('缩放的作用：方差归一化', 'what the scale does: normalising the variance'),
        '2.3.4': ('温度参数的类比', 'the temperature analogy'),
        '2.3.5': ('不忘初心：残差连接的智慧', 'never forget the start: the wisdom of residual connections'),
        '2.4': ('Softmax：概率的归一化', 'softmax: normalising into probabilities'),
        '2.4.1': ('为什么叫"Soft"max？', 'why is it called "soft" max?'),
        '2.4.2': ('温度参数的控制', 'control by temperature'),
        '2.5': ('位置编码：无序中的有序', 'positional encoding: order in the orderless'),
        '2.5.1': ('位置编码的演进', 'how positional encodings evolved'),
        '2.5.2': ('位置编码的添加方式', 'how the positional encoding is added'),
        '2.6': ('思想实验：注意力的本质', 'a thought experiment: the nature of attention'),
        '2.7': ('本章总结', 'chapter summary'),
        '2.8': ('下一章预告', 'the next chapter'),
    },
    'architecture': {
        '2.1': ('Transformer 之前：RNN 的两个致命缺陷', "before the Transformer: the RNN's two fatal flaws"),
        '2.1.1': ('顺序计算，无法并行', 'sequential computation, no parallelism'),
        '2.1.2': ('长距离梯度消失', 'gradients vanish over long distances'),
        '2.2': ('Self-Attention 的核心直觉', 'the core intuition of self-attention'),
        '2.3': ('Q/K/V 是怎么得到的', 'where Q/K/V come from'),
        '2.3.1': ('Q/K/V 都来自同一个输入 X', 'Q/K/V all come from the same input X'),
        '2.3.2': ('三个矩阵是独立学习的', 'the three matrices are learned independently'),
        '2.3.3': ('投影维度通常是 d_model / H', 'the projection size is usually d_model / H'),
        '2.4': ('为什么要除以 √d_k', 'why divide by sqrt(d_k)'),
        '2.4.1': ('不除会发生什么', 'what happens without it'),
        '2.4.2': ('能不能用别的方案', 'would another scheme do?'),
        '2.4.3': ('回到主线：两个问题一起解决了', 'back to the main line: two problems solved at once'),
        '2.5': ('Multi-Head Attention：多角度观察', 'multi-head attention: looking from several angles'),
        '2.6': ('位置编码：注入顺序信息', 'positional encoding: injecting order'),
        '2.7': ('前馈网络（FFN）的作用', 'what the feed-forward network (FFN) does'),
        '2.8': ('三种架构', 'three architectures'),
        '2.9': ('为什么 Decoder-only 赢了', 'why decoder-only won'),
        '2.9.1': ('目标极其统一', 'one uniform objective'),
        '2.9.2': ('可以直接在海量无标注文本上自监督训练', 'self-supervised training straight on vast unlabelled text'),
        '2.9.3': ('规模越大，涌现的能力越强', 'the larger the scale, the stronger the emergent abilities'),
        '2.9.4': ('但另外两种架构没有消失', 'but the other two architectures did not disappear'),
        '2.10': ('常见错误', 'common mistakes'),
        '2.10.1': ('说不清 Q/K/V 从哪来', 'not knowing where Q/K/V come from'),
        '2.10.2': ('说不出 √d_k 的动机', 'not knowing why sqrt(d_k)'),
        '2.10.3': ('忽略 Attention 的 O(N²) 代价', "ignoring attention's O(N^2) cost"),
        '2.10.4': ('认为 Multi-Head 只是「多算几遍」', 'thinking multi-head is just "computing it a few times"'),
        '2.10.5': ('忘了位置编码的必要性', 'forgetting that positional encoding is necessary'),
        '2.10.6': ('把 FFN 当成无关紧要的配角', 'treating the FFN as an unimportant extra'),
        '2.10.7': ('说「Encoder-only 被淘汰了」', 'saying "encoder-only is obsolete"'),
        '2.11': ('本章总结', 'chapter summary'),
    },
    'deep_dive': {
        '1': ('再谈自注意力——从直觉到数学', 'self-attention again: from intuition to mathematics'),
        '1.1': ('为什么需要"注意力"——语言学直觉', 'why "attention"? a linguist\'s intuition'),
        '1.2': ('唤醒记忆——Query、Key、Value', 'a reminder: Query, Key, Value'),
        '1.3': ('生成 Q、K、V——线性投影', 'making Q, K, V: linear projections'),
        '1.4': ('计算注意力分数——Q·K^T', 'attention scores: Q K^T'),
        '1.5': ('缩放——为什么除以 $\\sqrt{d_k}$', 'the scale: why divide by sqrt(d_k)'),
        '1.6': ('Softmax——把分数变成权重', 'softmax: turning scores into weights'),
        '1.7': ('加权求和——提取信息', 'the weighted sum: extracting information'),
        '1.8': ('完整维度追踪', 'every shape, traced'),
        '1.9': ('为什么这么设计？——一个语言学的答案', "why this design? a linguist's answer"),
        '2': ('多头注意力——多个视角看同一个句子', 'multi-head attention: several views of one sentence'),
        '2.1': ('为什么一个头不够？——语言学直觉', "why one head is not enough: a linguist's intuition"),
        '2.2': ('多头的数学实现', 'the mathematics of several heads'),
        '2.3': ('维度切分的语言学意义', 'what splitting the dimensions means linguistically'),
        '2.4': ('拼接 + W^O 的作用', 'what concatenation and W^O do'),
        '2.5': ('完整计算示例', 'a complete worked example'),
        '2.6': ('各头学什么？——实证观察', 'what do the heads learn? observations'),
        '3': ('位置编码——语言是有序的', 'positional encoding: language is ordered'),
        '3.1': ('位置盲——自注意力的天生缺陷', "position-blind: self-attention's innate flaw"),
        '3.2': ('sin/cos 位置编码——公式重访', 'sin/cos positional encoding: the formula again'),
        '3.3': ('为什么用 sin/cos——三个理由', 'why sin/cos: three reasons'),
        '3.4': ('为什么是"相加"——Add vs Concat', 'why "add"? add vs concat'),
        '3.5': ('其他位置编码方案简述', 'other positional encodings, briefly'),
        '3.6': ('语言学视角的总结', "a linguist's summary"),
        '4': ('残差连接——让深度成为优势', 'residual connections: making depth an advantage'),
        '4.1': ('为什么越深不一定越好？', 'why deeper is not always better'),
        '4.2': ('残差的解决方案——"兜底"', "the residual's answer: a safety net"),
        '4.3': ('Transformer 中的两个残差位置', 'the two residual connections of a Transformer layer'),
        '4.4': ('Post-LN vs Pre-LN——一个影响了全行业的改动', 'Post-LN vs Pre-LN: a change that swept the field'),
        '4.5': ('语言学类比', 'a linguistic analogy'),
        '5': ('层归一化——保持数值稳定', 'layer normalisation: keeping the numbers stable'),
        '5.1': ('为什么需要归一化——内部协变量偏移', 'why normalise: internal covariate shift'),
        '5.2': ('LayerNorm 的数学', 'the mathematics of LayerNorm'),
        '5.3': ('LayerNorm ≠ BatchNorm——为什么要分开？', 'LayerNorm is not BatchNorm: why keep them apart?'),
        '5.4': ('语言学类比', 'a linguistic analogy'),
        '6': ('前馈神经网络——注意力之后的处理', 'the feed-forward network: the processing after attention'),
        '6.1': ('FFN 的数学定义——"两个线性层夹一个激活"',
                'the FFN defined: "two linear layers around an activation"'),
        '6.2': ('具体计算示例', 'a worked example'),
        '6.3': ('注意力 vs FFN——Transformer 的分工', "attention vs FFN: the Transformer's division of labour"),
        '7': ('完整前向传播——"猫吃鱼"穿过 Transformer', 'the whole forward pass: "猫吃鱼" (cat eats fish) '
                                                    'through a Transformer'),
        '7.1': ('实验设置', 'the setup'),
        '7.2': ('输入准备——Embedding + 位置编码', 'the input: embedding + positional encoding'),
        '7.3': ('Encoder Layer 1——详细追踪', 'encoder layer 1, traced in detail'),
        '7.4': ('Encoder Layer 2——再加工一层', 'encoder layer 2: one more pass'),
        '7.5': ('如果继续往下——Decoder 和最终输出', 'going on: the decoder and the final output'),
        '7.6': ('完整维度变化总表', 'table of every shape change'),
        '7.7': ('对比：RNN 怎么做同一件事？', 'compare: how would an RNN do the same?'),
        '8': ('为什么 Transformer "赢了"？——语言学视角的总结', 'why the Transformer "won": a linguist\'s summary'),
        '8.1': ('并行效率——工程层面的"不战而胜"', 'parallel efficiency: an engineering walkover'),
        '8.2': ('长程依赖——梯度路径 O(1) vs O(n)', 'long-range dependencies: gradient path O(1) vs O(n)'),
        '8.3': ('可解释性——你可以看见它在"看什么"', 'interpretability: you can see what it "looks at"'),
        '8.4': ('通用性——因为语言本身就是"序列结构"', 'generality: language itself is a "sequence structure"'),
        '8.5': ('语言学反思——全文的灵魂段落', "a linguist's reflection: the soul of the article"),
    },
}


def heading(article, number):
    """(Chinese heading, English gloss) of section `number` of `article`; a clear KeyError if none."""
    if article not in ARTICLES:
        raise KeyError(f"no article {article!r}: the articles are {', '.join(map(repr, ARTICLES))}")
    try:
        return HEADINGS[article][number]
    except KeyError:
        raise KeyError(f"{ARTICLES[article].short} ({ARTICLES[article].title}) has no section {number!r}; "
                       f"its sections are {', '.join(HEADINGS[article])}") from None


def section_line(article, number, lang=None):
    """'§2.3.2 Softmax 的饱和区 (softmax's saturation zone)': a section by number, heading and gloss
    (in Chinese, the heading alone: '§2.3.2 Softmax 的饱和区'); lang: that language, not the current one."""
    chinese, english = heading(article, number)
    return f"§{number} {chinese}" if (lang or i18n.current()) == 'zh' else f"§{number} {chinese} ({english})"


def cite(article, number):
    """'the attention article §2.3.2': where a number in a lesson's output comes from."""
    heading(article, number)
    return f"{_(ARTICLES[article].short)} §{number}"


def header(sections, indent=''):
    """The lines that name a lesson's articles and sections, grouped by article in the order given:

        第二章：智能的原子 —— 注意力机制的解构 (the attention article)
          §2.3.2 Softmax 的饱和区 (softmax's saturation zone)
    """
    by_article = {}
    for article, number in sections:
        by_article.setdefault(article, []).append(section_line(article, number))
    lines = []
    for article, entries in by_article.items():
        title, short = ARTICLES[article].title, _(ARTICLES[article].short)
        lines.append(f"{indent}{title}" if short == title else f"{indent}{title} ({short})")  # 深入篇 is both
        lines += [f"{indent}  {entry}" for entry in entries]
    return '\n'.join(lines)


# ---------------------------------------------------------------------------- docs/articles.md
DOCS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'docs')
PAGES = {'en': os.path.join(DOCS, 'articles.md'), 'zh': os.path.join(DOCS, 'articles.zh.md')}   # the two editions


# the command line of a lesson's record over several seeds: its --full, or the quick run with --seeds 5
SEEDED = {'positions': ['--seeds', '5'], 'pre_vs_post_ln': ['--seeds', '5'], 'feedforward': ['--seeds', '5']}


def seeded_argv(lesson):
    return SEEDED.get(lesson, ['--full'])


def run_for_records(lesson, full=False):
    """Run a lesson as `python -m demos LESSON` would (full: with seeded_argv(lesson)), in a scratch folder,
    its output hidden; (its claims, the seconds it took, the load average when it started)."""
    import contextlib
    import importlib
    import io
    import tempfile
    import time
    from . import claims
    module = importlib.import_module(f"demos.{lesson}")
    first = len(claims.RECORDED)
    load = os.getloadavg()[0] if hasattr(os, 'getloadavg') else None
    here = os.getcwd()
    with tempfile.TemporaryDirectory() as scratch, contextlib.redirect_stdout(io.StringIO()):
        os.chdir(scratch)
        try:
            start = time.perf_counter()
            module.main(seeded_argv(lesson) if full else [])
            seconds = time.perf_counter() - start
        finally:
            os.chdir(here)
    return claims.RECORDED[first:], seconds, load


def has_full(lesson):
    import importlib
    return lesson in SEEDED or hasattr(importlib.import_module(f"demos.{lesson}"), 'FULL')


def write_page(folder=None):
    """Render docs/articles.md and docs/articles.zh.md from the records under docs/claims/ (atomically);
    returns their paths."""
    from microtensor.atomic_write import write_atomically
    from . import claims, claims_page
    records = claims.read_records(*([folder] if folder else []))
    for lang, path in PAGES.items():
        text = claims_page.render(records, lang)
        write_atomically(path, lambda f: f.write(text.encode('utf-8')), who='demos.articles --write')
    missing = claims_page.untranslated(records)
    if missing:
        print(f"{len(missing)} findings or looks have no Chinese entry yet: articles.zh.md shows them in English")
    return list(PAGES.values())


def main(argv=None):
    """python -m demos.articles --write [--full] [LESSON ...]: run the lessons, save their claims under
    docs/claims/ and render docs/articles.md from them; --render only renders the saved records."""
    import argparse
    from . import claims, claims_page
    parser = argparse.ArgumentParser(prog='python -m demos.articles', description=main.__doc__)
    parser.add_argument('lessons', nargs='*', help='only these lessons (default: every lesson that records claims)')
    parser.add_argument('--write', action='store_true', help="run the lessons' quick (tour) mode and save")
    parser.add_argument('--full', action='store_true', help='also run --full (several seeds) where a lesson has it')
    parser.add_argument('--render', action='store_true', help='only render docs/articles.md and articles.zh.md from '
                        'the saved records')
    args = parser.parse_args(argv)
    if not (args.write or args.render):
        parser.error('say --write (run the lessons, save, render) or --render (render the saved records)')
    lessons = args.lessons or claims_page.lesson_order()
    if args.write:
        for lesson in lessons:
            for full in (False, True) if args.full and has_full(lesson) else (False,):
                found, seconds, load = run_for_records(lesson, full)
                if found:
                    path = claims.write_records(lesson, found, seconds, full, load)
                    print(f"{lesson}{' --full' if full else ''}: {len(found)} claims in {seconds:.1f} s -> {path}")
    print(f"wrote {' and '.join(write_page())}")


if __name__ == '__main__':
    main()
