"""Lesson: the KV cache -- what MHA, GQA, MQA and MLA keep per token, measured, and the "93.3%".

The attention article's design table of Q/K/V projections (§2.2.4):

    shared       W_Q = W_K              fewer parameters, less expressive   (demos/why_separate_qk.py)
    independent  W_Q != W_K != W_V      the standard (MHA)
    grouped      heads share K/V        a compromise, e.g. GQA (MQA: one K/V head)
    low-rank     MLA                    "less memory, same expressiveness"

and on MLA: "compress K/V into a latent space, cache only the compressed version, rebuild
at run time: KV Cache reduced by 93.3%, while Q stays full".

While generating, each layer keeps the K and V of every past token (the KV cache), so a
new token costs one row of attention.  Per token and layer that is
    MHA 2 h d_k,   GQA 2 g d_k (g K/V heads),   MQA 2 d_k,   MLA d_c + d_rope
numbers (d_k = d_model / h, the width of one head; d_c the width of MLA's latent c, d_rope
that of its shared RoPE key: transformer/mla.py caches both).  Here the
sizes are read from the modules' own caches after a real generation, not from the formula:
the small configuration is a whole GPT generating greedily; the large ones cannot be
built whole on a laptop, so one layer of the real width generates a few tokens, its
cache is measured, and the per-token size is multiplied by the number of layers (every
layer of these models caches the same).  Weights are float32 here; served models keep
the cache in 16-bit (bf16), so bytes are given for 2 bytes per number.

What "93.3%" compares: the DeepSeek-V2 paper's "reduces the KV cache by 93.3%" is
DeepSeek-V2 against DeepSeek 67B (GQA, 8 K/V heads, 95 layers), as deployed: DeepSeek-V2's
cache is also quantized to about 6 bits per number (the paper's section on inference
efficiency), 67B's is 16-bit.  At
the same precision MLA alone gives 82.2%; with the 6 bits, 93.3%.  It is not "MLA vs MHA"
(that would be 98.2% for DeepSeek-V2's own 128 heads x 128).

    python -m demos.kv_cache             # ~10 s: builds single layers of 4096-8192 width
    python -m demos.kv_cache --small     # the small configuration only (a second)
"""
import microtensor as mt
from microtensor.i18n import N_, _
from transformer import GPT, KVCache, MultiHeadAttention, causal_mask, use_latent_attention
from transformer import article_data as article
from transformer.mla import MultiHeadLatentAttention

from . import budget, claims
from .report import command_line, options_of, run_lesson, save_plot, table

# the articles' sections this lesson checks (demos/articles.py)
SECTIONS = [('attention', '2.2.4')]

BF16 = 2  # bytes per cached number as served


def cache_numbers(caches):
    """Numbers held by a list of KVCaches (MLA's too: its c and k_R sit in the K and V slots)."""
    return sum(c.K.numel() + c.V.numel() for c in caches)


def cache_bytes(caches):
    return sum(t.numel() * t.dtype.itemsize for c in caches for t in (c.K, c.V))


# ---------------------------------------------------------------------------- small: a whole GPT
MAX_LEN, PROMPT = 64, 8  # the small GPTs' positions, and the prompt they continue


def small_gpt(kind, vocab=16, d_model=64, n_layers=4, n_heads=8, seed=0, device='cpu'):
    """A GPT whose attention is 'MHA', 'GQA' (2 K/V heads), 'MQA' or 'MLA' (d_c = 4 d_h, d_rope = d_h / 2)."""
    mt.manual_seed(seed)
    n_kv = {'MHA': None, 'GQA': 2, 'MQA': 1, 'MLA': None}[kind]
    model = GPT(vocab, d_model=d_model, n_layers=n_layers, n_heads=n_heads, n_kv_heads=n_kv, max_len=MAX_LEN)
    d_head = d_model // n_heads
    model = use_latent_attention(model, d_c=4 * d_head, d_rope=d_head // 2) if kind == 'MLA' else model
    return model.to(device)


def generate_with_cache(model, prompt, n):
    """Greedy generation (as transformer.generate does it), keeping the cache: (ids (B, T + n), cache)."""
    cache = model.new_cache()
    with mt.no_grad():
        logits, ids = model(prompt, cache=cache), prompt
        for i in range(n):
            next_id = logits[:, -1].argmax(dim=-1).reshape(-1, 1)
            ids = mt.concatenate([ids, next_id], axis=1)
            if i < n - 1:                                       # the last token is never fed back
                logits = model(next_id, cache=cache)
    return ids, cache


# ---------------------------------------------------------------------------- large: one layer of the real width
def one_layer(kind, d_model, n_heads, n_kv_heads=None, d_c=None, d_rope=None, d_head=None, d_cq=None):
    if kind == 'MLA':
        return MultiHeadLatentAttention(d_model, n_heads, d_c, d_rope, d_head, d_cq)
    return MultiHeadAttention(d_model, n_heads, n_kv_heads=n_kv_heads, bias=False)


def measure_one_layer(module, prompt=4, steps=3, seed=0):
    """Generate through one attention layer (its output fed back as the next input), on the module's
    device; cached numbers and bytes per token (the cache divided by the positions it holds)."""
    mt.manual_seed(seed)
    cache = KVCache()
    with mt.no_grad():
        x = mt.randn(1, prompt, module.d_model).to(module.parameters()[0].device)
        y = module(x, mask=causal_mask(prompt, device=x.device), cache=cache)
        for _ in range(steps):
            y = module(y[:, -1:], cache=cache)
    return cache_numbers([cache]) / cache.length, cache_bytes([cache]) / cache.length


LLAMA = N_('LLaMA-2-7B width')  # a name shown translated; the DeepSeek models' names are the same in every language
LARGE = [  # (configuration, kind, module options); layers and context from article_data
    (LLAMA, 'MHA', {}),
    (LLAMA, 'GQA', {'n_kv_heads': 8}),
    (LLAMA, 'MQA', {'n_kv_heads': 1}),
    (LLAMA, 'MLA', {'d_c': 512, 'd_rope': 64}),
    ('DeepSeek 67B', 'GQA', {'n_kv_heads': 8}),
    ('DeepSeek-V2', 'MLA', {k: article.DEEPSEEK_V2[k] for k in ('d_c', 'd_rope', 'd_head', 'd_cq')}),
]
SHAPES = {LLAMA: article.LLAMA2_7B, 'DeepSeek 67B': article.DEEPSEEK_67B,
          'DeepSeek-V2': article.DEEPSEEK_V2}


def measure(small=True, large=SHAPES, prompt=PROMPT, new_tokens=24, device='cpu'):
    """Rows {'config', 'kind', 'layers', 'per_layer' (numbers / token / layer), 'bytes_fp32' (per token,
    all layers, measured), 'context', 'params' (of one attention layer), 'device' (of the cache)}.
    large: the names of the large configurations to measure (SHAPES' keys)."""
    rows = []
    if small:
        for kind in ('MHA', 'GQA', 'MQA', 'MLA'):
            model = small_gpt(kind, device=device)
            _, cache = generate_with_cache(model, mt.randint(0, 16, (1, prompt)).to(device), new_tokens)
            T = cache[0].length
            rows.append({'config': N_('small GPT (64 wide, 8 heads)'), 'kind': kind, 'layers': len(cache),
                         'per_layer': cache_numbers(cache) / T / len(cache), 'bytes_fp32': cache_bytes(cache) / T,
                         'context': T, 'params': model.layers[0].self_attn.num_parameters(),
                         'device': cache[0].K.device})
    for config, kind, options in LARGE:
        if config not in large:
            continue
        shape = SHAPES[config]
        module = one_layer(kind, shape['d_model'], shape['n_heads'], **options).to(device)
        numbers, nbytes = measure_one_layer(module)
        rows.append({'config': config, 'kind': kind, 'layers': shape['n_layers'], 'per_layer': numbers,
                     'bytes_fp32': nbytes * shape['n_layers'], 'context': 4096,
                     'params': module.num_parameters(), 'device': module.parameters()[0].device})
        del module  # up to 600 MB of weights: free them before the next
    return rows


DESIGNS = [  # the article's design table, one attention layer each: (row, kind, module options)
    (N_('shared: W_Q = W_K'), 'MHA', {'shared_qk': True}),
    (N_('independent: W_Q, W_K, W_V (MHA)'), 'MHA', {}),
    (N_('grouped: GQA, 2 K/V heads'), 'MHA', {'n_kv_heads': 2}),
    (N_('grouped: MQA, 1 K/V head'), 'MHA', {'n_kv_heads': 1}),
    (N_('low-rank: MLA, d_c = 32, d_rope = 4'), 'MLA', {'d_c': 32, 'd_rope': 4}),
]


def design_table(d_model=64, n_heads=8, device='cpu'):
    """Rows (design, parameters, cached numbers per token) of one layer of each design, measured."""
    rows = []
    for design, kind, options in DESIGNS:
        mt.manual_seed(0)
        module = (MultiHeadLatentAttention(d_model, n_heads, **options) if kind == 'MLA'
                  else MultiHeadAttention(d_model, n_heads, bias=False, **options)).to(device)
        rows.append((design, module.num_parameters(), int(measure_one_layer(module)[0])))
    return rows


def deepseek_comparison(rows):
    """The 93.3%: DeepSeek-V2 (MLA) against DeepSeek 67B (GQA), per token, from the measured rows."""
    per_token = {r['config']: r['per_layer'] * r['layers'] for r in rows
                 if r['config'] in ('DeepSeek 67B', 'DeepSeek-V2')}
    v2, old = per_token['DeepSeek-V2'], per_token['DeepSeek 67B']
    same_precision = 1 - v2 / old
    deployed = 1 - (v2 * article.DEEPSEEK_V2_CACHE_BITS) / (old * article.DEEPSEEK_67B_CACHE_BITS)
    v2 = article.DEEPSEEK_V2
    mha_v2 = 2 * v2['n_heads'] * v2['d_head'] * v2['n_layers']  # formula: our MHA ties d_k to d_model / h
    return {'v2_numbers': per_token['DeepSeek-V2'], 'old_numbers': old, 'same_precision': same_precision,
            'deployed': deployed, 'v2_as_mha': mha_v2, 'vs_own_mha': 1 - per_token['DeepSeek-V2'] / mha_v2}


def run(small=False, new_tokens=24, device='cpu'):
    design = design_table(device=device)
    print(_("The attention article's design table (§2.2.4), one layer d_model = 64 wide with h = 8 heads "
            "(d_k = d_model / h = 8),\nno biases.  d_c: the width of MLA's latent c, the compressed K and V it caches; "
            "d_rope: the width of its one\nRoPE key shared by the heads; GQA: g = 2 K/V heads shared by 4 query "
            "heads each; MQA: one K/V head."))
    print(table([_('projections'), _('parameters'), _('cached numbers / token')],
                [[_(d), params, cached] for d, params, cached in design]))
    print(_("Sharing W_Q = W_K saves parameters, not cache (K is still stored); grouping and low rank shrink the "
            "cache.\n"))
    by_design = {d: (params, cached) for d, params, cached in design}
    (shared, shared_cache), (mha, mha_cache) = by_design[DESIGNS[0][0]], by_design[DESIGNS[1][0]]
    claims.record('attention', '2.2.4', '共享投影 W_Q = W_K 减少参数，但损失表达能力', 'holds',
                  N_("{shared} parameters instead of {mha} for one 64-wide layer (the cache stays {cache} numbers per "
                     "token: K is still stored); the loss of expressiveness is §2.2.2's blurrier training "
                     "(why_separate_qk)"), N_('the design table "projections, parameters, cached numbers / token"'),
                  shared=shared, mha=mha, cache=shared_cache)
    rows = measure(large=() if small else SHAPES, new_tokens=new_tokens, device=device)
    mha = {r['config']: r['per_layer'] for r in rows if r['kind'] == 'MHA'}
    print(_("KV cache per token, read from the caches after generating (large: one layer of the real width "
            "x layers):"))
    print(table([_('configuration'), _('attention'), _('params / layer'), _('cached / token / layer'), _('layers'),
                 _('KiB / token (bf16)'), _('measured fp32 KiB'), _('context'), _('MiB / sequence (bf16)'),
                 _('vs MHA')],
                [[_(r['config']), r['kind'], r['params'], int(r['per_layer']), r['layers'],
                  r['per_layer'] * r['layers'] * BF16 / 1024, r['bytes_fp32'] / 1024, r['context'],
                  r['per_layer'] * r['layers'] * BF16 * r['context'] / 2 ** 20,
                  f"{r['per_layer'] / mha[r['config']]:.3f}" if r['config'] in mha else '-'] for r in rows]))
    print(_("MLA caches d_c + d_rope numbers per layer (latent c + shared RoPE key); MQA caches 2 d_k, which is\n"
            "less; MLA's bet is that it keeps MHA's quality while caching about as little as a small GQA."))
    print(_("(caches measured on {device}; their sizes do not depend on the device)").format(device=device))
    result = {'rows': rows, 'design': design, 'device': rows[0]['device']}
    if not small:
        ds = deepseek_comparison(rows)
        result['deepseek'] = ds
        print(_("\nThe attention article's 'KV Cache 减少 93.3%' (§2.2.4), from the DeepSeek-V2 paper: DeepSeek-V2 vs "
                "DeepSeek 67B:"))
        in_16_bit, numbers = _("{n:.0f} numbers x 16 bit"), _("{n:.0f} numbers")
        print(table([_('comparison'), _('cache per token'), _('reduction')], [
            [_('DeepSeek 67B (GQA 8 x 128, 95 layers), bf16'), in_16_bit.format(n=ds['old_numbers']), '-'],
            [_('DeepSeek-V2 (MLA 512 + 64, 60 layers), bf16'), in_16_bit.format(n=ds['v2_numbers']),
             f"{100 * ds['same_precision']:.1f}%"],
            [_('DeepSeek-V2 as deployed, ~6-bit cache'), _("{n:.0f} numbers x 6 bit").format(n=ds['v2_numbers']),
             f"{100 * ds['deployed']:.1f}%"],
            [_('(DeepSeek-V2 if it used MHA 128 x 128: formula)'), numbers.format(n=ds['v2_as_mha']),
             _("MLA saves {percent:.1f}%").format(percent=100 * ds['vs_own_mha'])]]))
        print(_("93.3% needs both MLA and the 6-bit cache; MLA alone, at equal precision, is "
                "{percent:.1f}%.  The same ratio for the configurations above:").format(
            percent=100 * ds['same_precision']))
        print(table([_('configuration'), 'MLA / MHA', 'MLA / GQA', 'MLA / MQA'],
                    [[_(config)] + [_reduction(rows, config, kind) for kind in ('MHA', 'GQA', 'MQA')]
                     for config in dict.fromkeys(r['config'] for r in rows if r['kind'] == 'MLA')
                     if config != 'DeepSeek-V2']))
        claims.record('attention', '2.2.4', 'KV Cache 减少 93.3%', 'partly',
                      N_("93.3% is DeepSeek-V2 against DeepSeek 67B *with* DeepSeek-V2's ~6-bit cache ({deployed:.1%} "
                         "here); at the same precision MLA alone saves {same:.1%}, and against its own MHA (128 heads x "
                         "128) {own:.1%}"), N_('the DeepSeek table "comparison, cache per token, reduction"'),
                      deployed=ds['deployed'], same=ds['same_precision'], own=ds['vs_own_mha'])
    plot(rows)
    return result


def _reduction(rows, config, baseline):
    per = {r['kind']: r['per_layer'] for r in rows if r['config'] == config}
    if baseline not in per:
        return '-'
    ratio = per['MLA'] / per[baseline]
    return (_("{ratio:.3f} ({percent:.1f}% less)") if ratio < 1 else _("{ratio:.3f} ({percent:.1f}% more)")).format(
        ratio=ratio, percent=100 * abs(1 - ratio))


def plot(rows):
    def draw(ax):
        labels = [f"{_(r['config'])}\n{r['kind']}" for r in rows]
        ax.bar(range(len(rows)), [r['per_layer'] * r['layers'] * BF16 / 1024 for r in rows],
               color=['C0' if r['kind'] == 'MLA' else 'C1' for r in rows])
        ax.set_xticks(range(len(rows)), labels, rotation=60, ha='right', fontsize=7)
        ax.set(ylabel=_('KiB per token (bf16), all layers'), yscale='log')
    return save_plot('kv_cache', draw, _('KV cache per token (MLA in blue)'))


def main(argv=None):
    options = options_of(run, small=N_('only the small GPT (skips the 4096-8192 wide layers)'),
                         new_tokens=N_('tokens the small GPTs generate (the cache then holds 8 + new-tokens - 1)'))
    return run_lesson(run, command_line('kv_cache', __doc__, options, argv, check=_budget))


def _budget(args):
    """--new-tokens within the small GPTs' MAX_LEN positions (a usage error, before any work, beyond)."""
    most = MAX_LEN - PROMPT + 1   # the last new token is computed at position MAX_LEN - 1
    if args.new_tokens > most:
        return _("--new-tokens {n}: the small GPTs have {positions} positions and start from a {prompt}-token "
                 "prompt, so at most {most} new tokens").format(n=args.new_tokens, positions=MAX_LEN, prompt=PROMPT,
                                                                most=most)
    return None


if __name__ == '__main__':
    main()
