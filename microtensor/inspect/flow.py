"""Gradient flow through a model: one row per parameter, around one optimizer step.

    loss.backward()
    flow = mt.gradient_flow(model, optimizer)   # takes the step itself, comparing W before and after
    print(flow)                                  # |grad|, |W|, |dW| / |W| per parameter
    flow.plot('flow.png')                        # the same as points on log axes (needs matplotlib)

Works with any nn.Module and any optimizer with a step() method: the weights are
copied before the step and compared after it, so nothing depends on how the
optimizer computes its update.  A healthy update/weight ratio is often quoted
as about 1e-3 per step: far below, the layer hardly learns; far above, it thrashes.
"""
import os
from typing import NamedTuple

from .steps import norm
from .table import Rows, fmt, format_table


class FlowRow(NamedTuple):
    name: str
    shape: tuple
    grad: float      # |dL/dW| (None: no gradient reached it)
    weight: float    # |W| before the step
    update: float    # |W_after - W_before| / |W_before| (None without an optimizer or when |W| = 0)


class FlowReport(Rows):
    """One row per parameter; print it for the table."""

    def __getitem__(self, name):
        """The row of the parameter called `name` ('layers.0.ffn.W_1.weight')."""
        for row in self.rows:
            if row.name == name:
                return row
        raise KeyError(f"gradient_flow: no parameter named {name!r}; names: {[r.name for r in self.rows]}")

    def table(self):
        header = ('parameter', 'shape', '|grad|', '|W|', '|dW|/|W|')
        lines = [(r.name, str(r.shape), fmt(r.grad), fmt(r.weight), fmt(r.update)) for r in self.rows]
        return format_table(header, lines, '<<>>>')

    def plot(self, path=None, title='Gradient flow: one step, per parameter'):
        """|grad| and |dW|/|W| per parameter, as points on log axes (a bar's length on a log axis
        means nothing); saved to `path` if given.

        Returns the matplotlib Figure.  Needs matplotlib (pip install matplotlib).
        """
        try:
            import matplotlib
            if path is not None:
                matplotlib.use('Agg')  # no window needed to write a file
            import matplotlib.pyplot as plt
        except ImportError:
            raise ImportError("FlowReport.plot needs matplotlib: pip install matplotlib "
                              "(or pip install -e '.[demos]'); print(report) shows the same numbers") from None
        names = [r.name for r in self.rows]
        fig, (top, bottom) = plt.subplots(2, 1, sharex=True, figsize=(max(6, 0.35 * len(names)), 6))
        for ax, values, label, color in ((top, [r.grad for r in self.rows], '|grad|', 'tab:blue'),
                                         (bottom, [r.update for r in self.rows], '|dW| / |W|', 'tab:orange')):
            shown = [(i, v) for i, v in enumerate(values) if v]  # None or 0 has no place on a log axis
            ax.plot([i for i, _ in shown], [v for _, v in shown], 'o', color=color)
            ax.set(yscale='log', ylabel=label)
            ax.grid(True, which='major', axis='y', alpha=0.3)
            if not shown:
                ax.text(0.5, 0.5, 'no values (' + ('no optimizer given' if ax is bottom else 'no gradients') + ')',
                        transform=ax.transAxes, ha='center', va='center')
        bottom.axhline(1e-3, color='grey', linestyle='--', linewidth=1, label='1e-3: the rule-of-thumb update size')
        bottom.legend(loc='best', fontsize=8)
        bottom.set_xticks(range(len(names)), names, rotation=90)
        top.set_title(title)
        fig.tight_layout()
        if path is not None:
            root, ext = os.path.splitext(os.fspath(path))
            tmp = f"{root}.tmp{os.getpid()}{ext}"  # keep the extension: it picks the format
            fig.savefig(tmp)
            os.replace(tmp, path)
        return fig


def gradient_flow(model, optimizer=None):
    """Read every parameter's gradient and weight norms; with an optimizer, take its step and
    report each update's size relative to the weight.  Call it after loss.backward()."""
    params = list(model.named_parameters())
    before = [p.data.copy() for _, p in params] if optimizer is not None else None
    grads = [norm(p.grad) for _, p in params]
    if optimizer is not None:
        optimizer.step()
    rows = []
    for i, (name, p) in enumerate(params):
        weight = norm(before[i] if before is not None else p.data)
        update = None
        if before is not None and weight > 0:
            update = norm(p.data - before[i]) / weight
        rows.append(FlowRow(name, tuple(p.shape), grads[i], weight, update))
    return FlowReport(rows)
