"""Numbers printed in the source articles (seeds/), as plain Python lists, for the demos
and tests that reproduce them.  deep-dive = transformer-deep-dive.zh.txt,
atom = attention-atom.zh.txt.

The 猫 吃 鱼 ("cat eats fish") trace, deep-dive section 7: d_model = 12, h = 3,
d_k = d_v = 4, d_ff = 48, two encoder layers.  The article prints embeddings, score
matrices and attention tables, but not its weight matrices, so only the steps that
follow from printed numbers can be recomputed: X0 = embedding + PE,
softmax(scores / sqrt(d_k)) row by row, the residual sum X_mid_raw = X0 + MHA(X0)
(both printed) and the cosine similarities of X0 (see article_checks.py).
"""

# ---------------------------------------------------------------------------- 猫 吃 鱼 (deep-dive 7.1-7.3)
TOKENS = ['猫', '吃', '鱼']
D_MODEL, N_HEADS, D_K, D_FF = 12, 3, 4, 48

# 7.2: the 12-d embeddings of the three words
EMBEDDINGS = {
    '猫': [0.21, 0.54, 0.13, 0.82, 0.31, 0.67, 0.15, 0.93, 0.25, 0.44, 0.72, 0.18],
    '吃': [0.38, 0.23, 0.91, 0.42, 0.55, 0.19, 0.87, 0.33, 0.61, 0.28, 0.49, 0.76],
    '鱼': [0.73, 0.16, 0.45, 0.34, 0.82, 0.29, 0.56, 0.19, 0.94, 0.37, 0.11, 0.68],
}

# 7.2: sinusoidal PE (d_model = 12) as printed for positions 1 and 2 (first 6 dimensions).
# Typos: the formula gives pos 1 = [0.8415, 0.5403, 0.2138, 0.9769, 0.0464, 0.9989] and
# pos 2 = [0.9093, -0.4161, 0.4177, 0.9086, 0.0927, 0.9957]; the article's own X0 rows
# below agree with the correct values, not with these.
PE_PRINTED = {
    1: [0.8415, 0.5403, 0.2338, 0.9769, 0.0096, 0.9999],
    2: [0.9093, -0.4161, 0.4228, 0.9086, 0.0193, 0.9998],
}
PE_CORRECT = {  # the formula, to 4 decimals (SPEC.md)
    0: [0.0, 1.0, 0.0, 1.0, 0.0, 1.0, 0.0, 1.0, 0.0, 1.0, 0.0, 1.0],
    1: [0.8415, 0.5403, 0.2138, 0.9769, 0.0464, 0.9989],
    2: [0.9093, -0.4161, 0.4177, 0.9086],
}

# 7.2: X0 = embedding + PE, first 4 dimensions, two decimals
X0_PRINTED = [
    [0.21, 1.54, 0.13, 1.82],
    [1.22, 0.77, 1.12, 1.40],
    [1.64, -0.26, 0.87, 1.25],
]

# 7.3: layer 1, Q_i K_i^T (unscaled), rows = queries 猫 吃 鱼, columns = keys
LAYER1_SCORES = {
    1: [[0.1616, 0.0645, -0.1838],
        [-0.0451, 0.0116, -0.1842],
        [0.3690, 0.4822, -0.1198]],
    2: [[1.4839, 2.7337, 3.3434],
        [0.7253, 0.9784, 1.4120],
        [0.1239, -0.0305, 0.5266]],
}

# 7.3: head 1's scores divided by sqrt(4) = 2, as printed
LAYER1_SCALED_SCORES = {
    1: [[0.0808, 0.0322, -0.0919],
        [-0.0226, 0.0058, -0.0921],
        [0.1845, 0.2411, -0.0599]],
}

# 7.3: the attention weights softmax(Q K^T / 2), 4 decimals.  Head 3's scores are not
# printed, only its weights.
LAYER1_WEIGHTS = {
    1: [[0.3579, 0.3409, 0.3011],
        [0.3377, 0.3474, 0.3150],
        [0.3519, 0.3724, 0.2756]],
    2: [[0.1851, 0.3458, 0.4691],
        [0.2821, 0.3202, 0.3977],
        [0.3176, 0.2940, 0.3884]],
    3: [[0.2254, 0.4073, 0.3673],
        [0.2109, 0.3957, 0.3934],
        [0.1960, 0.3972, 0.4068]],
}

# 7.4: layer 2, head 1 weights (scores not printed)
LAYER2_WEIGHTS = {
    1: [[0.4459, 0.3749, 0.1792],
        [0.4346, 0.3688, 0.1966],
        [0.4622, 0.3558, 0.1820]],
}

# ---------------------------------------------------------------------------- LayerNorm (deep-dive 5.2)
LAYERNORM_EXAMPLE = {
    'x': [2.0, 8.0, -4.0, -6.0],
    'gamma': [1.2, 0.8, 1.0, 1.5],
    'beta': [0.1, -0.1, 0.0, 0.2],
    'eps': 0.0,
    'x_hat': [0.365, 1.461, -0.730, -1.096],
    'y': [0.538, 1.069, -0.730, -1.444],
}

# ---------------------------------------------------------------------------- softmax (atom 2.3.2, 2.4.1)
SOFTMAX_EXAMPLES = [  # (input, output to 3 decimals); the atom article prints the second as [0.09, 0.24, 0.67]
    ([2.0, 1.0, 0.1], [0.659, 0.242, 0.099]),
    ([1.0, 2.0, 3.0], [0.090, 0.245, 0.665]),
    ([10.0, 20.0, 30.0], [0.000, 0.000, 1.000]),
    ([100.0, 200.0, 300.0], [0.000, 0.000, 1.000]),
]

# ---------------------------------------------------------------------------- 我 爱 你 (deep-dive 1.4-1.6)
# "I love you", n = 3, d_model = 12, d_k = 4.  The article prints S = Q K^T, S / sqrt(4) and
# A = softmax(S / 2), but not the full W_Q, W_K, so what can be recomputed is A from S.
LOVE_TOKENS = ['我', '爱', '你']
LOVE_D_K = 4
LOVE_SCORES = [[3.2, -0.5, 1.1],   # 1.4: S, rows = queries, columns = keys
               [2.1, 0.3, 4.7],
               [0.8, 3.9, -0.2]]
LOVE_SCALED_SCORES = [[1.60, -0.25, 0.55],   # 1.5: S / 2 (correct)
                      [1.05, 0.15, 2.35],
                      [0.40, 1.95, -0.10]]
LOVE_WEIGHTS_PRINTED = [[0.72, 0.11, 0.17],  # 1.6: A as printed; softmax(S / 2) gives rows 1 and 3 as
                        [0.20, 0.08, 0.72],  # about [0.66, 0.10, 0.23] and [0.16, 0.75, 0.10]
                        [0.15, 0.70, 0.15]]
# 1.4's text: "S_{1,2} = 4.7 ('爱' attends to '你') ... S_{2,1} = 2.1 ('你' attends to '爱')".  With the
# 0-based indices that make S_{1,2} = 4.7, S_{2,1} is 3.9 (你 -> 爱); 2.1 is S_{1,0} (爱 -> 我).
LOVE_TEXT_CELLS = [((1, 2), 4.7, '爱 -> 你'), ((2, 1), 2.1, '你 -> 爱')]

# ---------------------------------------------------------------------------- small numbers (both articles)
SATURATED_SOFTMAX = ([20.0, -5.0], [0.999, 0.0])      # deep-dive 1.5: "close to one-hot ([0.999, 0.000...])"
DOT_PRODUCT_STD = {64: 8.0, 128: 11.3, 512: 22.6}    # atom 2.3.1: std of q . k = sqrt(d_k)
DOT_PRODUCT_RANGE = 20.0                             # atom 2.3.1: "between -20 and +20 (2 standard deviations)"
ARGMAX_EXAMPLE = ([2.0, 1.0, 0.1], [0, 1, 0])        # atom 2.4.1: printed [0, 1, 0]; argmax is [1, 0, 0]
# atom 2.6: "attention heat map" of "The animal didn't cross the street because it was too tired"
# (5 of the sentence's 11 tokens shown; a row over a subset may sum to less than 1, never more).
HEATMAP_COLUMNS = ['The', 'animal', 'street', 'it', 'tired']
HEATMAP_ROWS = {'The': [0.1, 0.2, 0.1, 0.1, 0.1],
                'animal': [0.1, 0.3, 0.1, 0.4, 0.2],   # sums to 1.1
                'it': [0.05, 0.65, 0.05, 0.05, 0.15]}

# ---------------------------------------------------------------------------- KV cache (atom 2.2.4)
MLA_KV_CACHE_REDUCTION = 0.933  # "KV Cache reduced by 93.3%" (DeepSeek-V2 vs DeepSeek 67B, per the DeepSeek-V2 paper)
# Published configurations (each model's Hugging Face config.json; the DeepSeek-V2 paper's hyper-parameters).
LLAMA2_7B = dict(n_layers=32, d_model=4096, n_heads=32, context=4096)
DEEPSEEK_67B = dict(n_layers=95, d_model=8192, n_heads=64, n_kv_heads=8, context=4096)
DEEPSEEK_V2 = dict(n_layers=60, d_model=5120, n_heads=128, d_head=128, d_c=512, d_rope=64, d_cq=1536,
                   context=131072)
# The DeepSeek-V2 paper (inference efficiency): deployed, its KV cache is quantized to about 6 bits per
# element on average; DeepSeek 67B's is 16-bit (bf16).
DEEPSEEK_V2_CACHE_BITS, DEEPSEEK_67B_CACHE_BITS = 6, 16

# ------------------------------------------------------------------------ 猫 吃 鱼, layer 1 (deep-dive 7.3 (a)-(b))
# Multi-head attention output MHA(X0), first 4 dimensions, and the residual sum printed after it:
# X_mid_raw = X0 + MHA(X0).  Both are printed, so the sum can be checked (article_checks.py).
MHA_PRINTED = [
    [-0.5722, 0.7385, -0.5564, 1.0929],
    [-0.5871, 0.7438, -0.5761, 1.1288],
    [-0.5851, 0.7480, -0.5745, 1.1437],
]
X_MID_RAW_PRINTED = [
    [-0.3622, 2.2785, -0.4264, 2.9129],
    [0.6344, 1.5141, 0.5477, 2.5257],
    [1.0542, 0.4919, 0.2932, 2.3923],
]

# ---------------------------------------------------------------------------- 猫 吃 鱼, similarities (deep-dive 7.4)
# Cosine similarities of the word pairs in X0 (recomputable: X0 is fully known) and after the two
# layers in X2 (not recomputable: X2 is printed to 4 of its 12 dimensions).  The article: every pair
# became more similar, and 猫-鱼 the most, "from 0.73 to 0.91, up 25%".
PAIRS = [('猫', '吃'), ('吃', '鱼'), ('猫', '鱼')]
COS_X0_PRINTED = {('猫', '吃'): 0.8565, ('吃', '鱼'): 0.9396, ('猫', '鱼'): 0.7298}
COS_X2_PRINTED = {('猫', '吃'): 0.9626, ('吃', '鱼'): 0.9466, ('猫', '鱼'): 0.9134}
