import microtensor as mt
from transformer import scaled_dot_product_attention

mt.manual_seed(0)
X = mt.randn(3, 4, name='X')                            # 3 tokens, d_model = d_k = 4
W_Q, W_K, W_V = (mt.randn(4, 4, requires_grad=True, name=n) for n in ('W_Q', 'W_K', 'W_V'))
Q, K, V = X @ W_Q, X @ W_K, X @ W_V
out, A = scaled_dot_product_attention(Q, K, V)          # softmax(Q K^T / sqrt(d_k)) V
out.sum().backward()
print(W_Q.grad)
