"""Lesson: temperature.  softmax(x / T): low T -> near-argmax, high T -> flatter.

The article's table (attention-atom §2.4.2): T = 0.2 "extremely sharp, near argmax",
0.7 "moderate", 1.0 "standard softmax", 1.5 "smooth, diverse".  The same division
appears inside attention as 1/sqrt(d_k): a "training-time temperature".
"""
import math

import microtensor as mt

LOGITS = [2.0, 1.0, 0.1]  # the article's example: softmax = [0.659, 0.242, 0.099]
TEMPERATURES = [0.2, 0.7, 1.0, 1.5]


def table(logits=LOGITS, temperatures=TEMPERATURES):
    """[(T, probabilities, entropy in nats)] for softmax(logits / T)."""
    x = mt.tensor(logits, dtype='float64')
    rows = []
    for T in temperatures:
        p = mt.softmax(x / T).numpy()
        entropy = -sum(pi * math.log(pi) for pi in p if pi > 0)
        rows.append((T, p.tolist(), entropy))
    return rows


def run():
    print(f"softmax({LOGITS} / T)")
    print(f"{'T':>5}  {'probabilities':32s}  entropy (max {math.log(len(LOGITS)):.3f})")
    for T, p, entropy in table():
        print(f"{T:5.1f}  {'[' + ', '.join(f'{pi:.3f}' for pi in p) + ']':32s}  {entropy:.3f}")
    print("Low T puts almost all the mass on the largest logit (near argmax); high T spreads it.")


if __name__ == '__main__':
    run()
