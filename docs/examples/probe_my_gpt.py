# my_gpt.py's model after its three steps, seen with microtensor's tools: the residual and softmax
# probes, and the backward pass in the viewer, under the file's own module names.
import os

import microtensor as mt
from transformer.probes import ResidualProbe, SaturationProbe

from my_gpt import model, x, y  # (runs my_gpt.py: its three training steps)

with ResidualProbe(model) as residual, SaturationProbe(model) as saturation:
    model(x, y).backward()
for r in residual.records:
    print(f"{r.layer} {r.branch:4}  through +1: {r.identity_share:.0%} of the gradient")
for r in saturation.rows():
    print(f"{r.attention} head {r.head}  max p {r.stats.max_p:.2f}  mean p(1-p) {r.stats.mean_p1p:.2f}")

with mt.record_modules(model):  # each op named after the module that made it
    loss = model(x, y)
viewer = mt.BackpropViewer(loss, params=model)
print(sorted({node.module for node in viewer.nodes if node.title == 'Softmax'}))
os.makedirs('runs', exist_ok=True)
viewer.save('runs/my_gpt.html')
