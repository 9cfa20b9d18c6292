import microtensor as mt
from transformer import GPT

mt.manual_seed(0)
model = GPT(vocab_size=10, d_model=4, n_layers=2, n_heads=2, max_len=8, alpha=0.5)  # x + 0.5 F(x)
ids, targets = mt.tensor([[1, 2]]), mt.tensor([2, 3])
with mt.record_modules(model):                          # names each op after its module
    loss = mt.cross_entropy(model(ids)[0], targets)
loss.backward()
print(round(loss.item(), 3))
