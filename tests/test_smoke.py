"""The README's first example and the XOR lesson work."""
import microtensor as mt


def test_readme_first_look():
    x = mt.tensor([[1.0, 2.0]], requires_grad=True, name='x')
    W = mt.randn(2, 3, requires_grad=True, name='W')
    y = (x @ W).tanh().sum()
    y.backward()
    t = (x.data @ W.data)
    expected_x = (1 - mt.tensor(t).tanh().data ** 2) @ W.data.T
    assert abs(x.grad.numpy() - expected_x).max() < 1e-5


def test_xor_lesson_learns():
    from demos import train_xor
    losses, predictions = train_xor.run(steps=300, verbose=False)
    assert losses[-1] < 0.05 < losses[0]
    assert predictions.tolist() == [0, 1, 1, 0]
