import microtensor as mt

x = mt.tensor([[1.0, 2.0]], requires_grad=True, name='x')
W = mt.tensor([[0.5, -1.0, 2.0], [0.0, 1.0, -0.5]], requires_grad=True, name='W')
y = (x @ W).tanh().sum()
y.backward()
print(x.grad, W.grad)
