"""transformer.GPT written in PyTorch eager, the way a PyTorch user writes it: the twin that
vs_torch.py (from microtensor's own initial weights; the first losses must agree) and
gpu_acceptance.py's torch stage time.

Pre-LN, learned positions, separate W_Q/W_K/W_V/W_O with biases, a tanh-GELU FFN of
4 d_model, a final LayerNorm and an untied head without bias.  Only the standard library is
imported here (torch inside the functions): the processes that run it must not import
microtensor, whose import tunes malloc.
"""


def gpt(vocab, d_model, n_layers, n_heads, context, attention='manual'):
    """The twin as an nn.Module; attention='sdpa' uses F.scaled_dot_product_attention."""
    import torch
    import torch.nn.functional as F
    from torch import nn

    class Attention(nn.Module):
        def __init__(self):
            super().__init__()
            self.W_Q, self.W_K, self.W_V, self.W_O = (nn.Linear(d_model, d_model) for _ in range(4))
            self.register_buffer('mask', torch.tril(torch.ones(context, context, dtype=torch.bool)))

        def forward(self, x):
            B, T, _ = x.shape
            split = lambda y: y.view(B, T, n_heads, d_model // n_heads).transpose(1, 2)  # noqa: E731
            q, k, v = split(self.W_Q(x)), split(self.W_K(x)), split(self.W_V(x))
            if attention == 'sdpa':
                y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            else:
                scores = (q @ k.transpose(-1, -2)) * (1.0 / (d_model // n_heads) ** 0.5)
                y = scores.masked_fill(~self.mask[:T, :T], float('-inf')).softmax(dim=-1) @ v
            return self.W_O(y.transpose(1, 2).reshape(B, T, d_model))

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.norm1, self.norm2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
            self.self_attn = Attention()
            self.W_1, self.W_2 = nn.Linear(d_model, 4 * d_model), nn.Linear(4 * d_model, d_model)

        def forward(self, x):
            x = x + self.self_attn(self.norm1(x))
            return x + self.W_2(F.gelu(self.W_1(self.norm2(x)), approximate='tanh'))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.tok, self.pos = nn.Embedding(vocab, d_model), nn.Embedding(context, d_model)
            self.layers = nn.ModuleList(Block() for _ in range(n_layers))
            self.final_norm = nn.LayerNorm(d_model)
            self.lm_head = nn.Linear(d_model, vocab, bias=False)

        def forward(self, ids):
            x = self.tok(ids) + self.pos.weight[:ids.shape[1]]
            for layer in self.layers:
                x = layer(x)
            return self.lm_head(self.final_norm(x))

    return GPT()


def load_microtensor_weights(model, w):
    """Copy a transformer.GPT's state_dict (numpy arrays by name) into the twin."""
    import torch

    def copy(param, array, transpose=False):  # transformer's Projection weight is (in, out), torch's (out, in)
        with torch.no_grad():
            param.copy_(torch.from_numpy(array.T.copy() if transpose else array))

    copy(model.tok.weight, w['embed.tok.weight'])
    copy(model.pos.weight, w['embed.pos.weight'])
    copy(model.lm_head.weight, w['lm_head.weight'], transpose=True)
    copy(model.final_norm.weight, w['decoder.final_norm.gamma'])
    copy(model.final_norm.bias, w['decoder.final_norm.beta'])
    for i, layer in enumerate(model.layers):
        p = f'decoder.layers.{i}.'
        for name in ('W_Q', 'W_K', 'W_V', 'W_O'):
            copy(getattr(layer.self_attn, name).weight, w[p + f'self_attn.{name}.weight'], transpose=True)
            copy(getattr(layer.self_attn, name).bias, w[p + f'self_attn.{name}.bias'])
        for name in ('W_1', 'W_2'):
            copy(getattr(layer, name).weight, w[p + f'ffn.{name}.weight'], transpose=True)
            copy(getattr(layer, name).bias, w[p + f'ffn.{name}.bias'])
        for norm in ('norm1', 'norm2'):
            copy(getattr(layer, norm).weight, w[p + f'{norm}.gamma'])
            copy(getattr(layer, norm).bias, w[p + f'{norm}.beta'])


def train_step(model, ids, vocab, update=True, **adamw):
    """step(): forward, next-token cross-entropy, backward, AdamW(**adamw) (update=False: without
    the update); returns the loss as a float (a host copy: on a GPU it waits for the step, as
    microtensor's loss.item() does)."""
    import torch
    import torch.nn.functional as F
    opt = torch.optim.AdamW(model.parameters(), **adamw)

    def step():
        logits = model(ids)
        loss = F.cross_entropy(logits[:, :-1].reshape(-1, vocab), ids[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        if update:
            opt.step()
        return loss.item()

    return step
