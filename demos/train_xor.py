"""Lesson 0: the engine alone. A two-layer MLP learns XOR; the loss falls as you watch.

    h = tanh(X @ W1 + b1);   logits = h @ W2 + b2;   L = cross_entropy(logits, y)
"""
import microtensor as mt


def run(steps=300, lr=0.5, seed=0, verbose=True):
    mt.manual_seed(seed)
    X = mt.tensor([[0., 0.], [0., 1.], [1., 0.], [1., 1.]])
    y = mt.tensor([0, 1, 1, 0])
    W1 = (mt.randn(2, 8) * 1.0).requires_grad_()
    b1 = mt.zeros(8, requires_grad=True)
    W2 = (mt.randn(8, 2) * 0.5).requires_grad_()
    b2 = mt.zeros(2, requires_grad=True)
    params = [W1, b1, W2, b2]
    losses = []
    for step in range(steps):
        h = (X @ W1 + b1).tanh()
        loss = mt.cross_entropy(h @ W2 + b2, y)
        for p in params:
            p.grad = None
        loss.backward()
        with mt.no_grad():
            for p in params:
                p.data -= lr * p.grad.data
        losses.append(loss.item())
        if verbose and (step % 50 == 0 or step == steps - 1):
            print(f"step {step:4d}  loss {loss.item():.4f}")
    predictions = (h @ W2 + b2).argmax(axis=-1).numpy()
    if verbose:
        print("predictions", predictions.tolist(), "targets", y.numpy().tolist())
    return losses, predictions


if __name__ == '__main__':
    run()
