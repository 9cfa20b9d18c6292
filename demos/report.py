"""What the lessons share: a plain-text table, and a plot saved under runs/ when matplotlib is there.

    print(table(['d_k', 'Var'], [[4, 4.1], [16, 15.8]]))
    print(table(['steps', 'mean loss'], window_means(losses)))   # a loss curve in 10 rows
    save_lines('lesson', {'scaled': ys, 'unscaled': ys2}, ...)     # -> 'runs/lesson.png' or None

matplotlib is optional (pip install matplotlib, or the `demos` extra): without it a
lesson prints its numbers and says how to get the picture.
"""
import argparse
import os
import unicodedata

import microtensor as mt

RUNS = 'runs'  # relative to where you run the lesson (ignored by git)


def command_line(module, doc, options, argv=None, extra=None):
    """Parse `python -m demos.<module>` arguments: --device plus one --name per entry of
    `options` (typed by its default); `extra(parser)` may add more."""
    parser = argparse.ArgumentParser(prog=f'python -m demos.{module}', description=doc,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--device', default='cpu', choices=['cpu', 'cuda'], help='cuda: run on the GPU via cupy')
    for name, default in options.items():
        parser.add_argument('--' + name.replace('_', '-'), type=type(default), default=default,
                            help='(default %(default)s)')
    if extra is not None:
        extra(parser)
    args = parser.parse_args(argv)
    if args.device == 'cuda' and not mt.cuda.is_available():
        parser.error("--device cuda, but no GPU is usable here (cupy missing or no device)")
    return args


def table(header, rows, fmt=None):
    """Columns padded to their widest cell, the first flush left, the rest right.

    Floats use the format spec `fmt` (e.g. '.4f'); by default 4 significant digits, and
    scientific notation for the very small or large.  Strings are printed as they are.
    """
    cells = [[str(h) for h in header]] + [[_cell(v, fmt) for v in row] for row in rows]
    widths = [max(_width(row[i]) for row in cells) for i in range(len(header))]
    return '\n'.join('  '.join(_pad(c, w, left=i == 0) for i, (c, w) in enumerate(zip(row, widths))).rstrip()
                     for row in cells)


def _cell(value, fmt):
    if not isinstance(value, float):
        return str(value)
    if fmt is not None:
        return format(value, fmt)
    return f"{value:.4g}" if value == 0 or 1e-3 <= abs(value) < 1e5 else f"{value:.3e}"


def _width(text):
    """Columns on a terminal: CJK characters such as 猫 take two."""
    return sum(2 if unicodedata.east_asian_width(c) in 'WF' else 1 for c in text)


def _pad(text, width, left):
    space = ' ' * (width - _width(text))
    return text + space if left else space + text


def window_means(values, n_windows=10):
    """[('1-30', mean of values[0:30]), ('31-60', ...), ...]: a long curve in n_windows rows."""
    size = max(1, -(-len(values) // n_windows))
    return [(f"{a + 1}-{min(a + size, len(values))}", sum(values[a:a + size]) / len(values[a:a + size]))
            for a in range(0, len(values), size)]


def save_lines(name, series, xlabel, ylabel, title, x=None, logx=False, logy=True, folder=RUNS):
    """One line per {label: y values} (against x, default 1, 2, ...), log axes as asked; see save_plot."""
    def draw(ax):
        for (label, ys), style in zip(series.items(), ('o-', 's-', '^--', 'v--', 'd-.')):
            ax.plot(x or range(1, len(ys) + 1), ys, style, markersize=3 if len(ys) < 60 else 0, label=label)
        ax.set(xlabel=xlabel, ylabel=ylabel, xscale='log' if logx else 'linear', yscale='log' if logy else 'linear')
        ax.legend()
    return save_plot(name, draw, title, folder)


def save_plot(name, draw, title=None, folder=RUNS):
    """draw(ax) on a fresh figure; saved as <folder>/<name>.png (written to a temporary name, then renamed).

    Uses matplotlib's Figure directly (no pyplot, no GUI backend).  Returns the path, or None
    when matplotlib is not installed.
    """
    try:
        from matplotlib.figure import Figure
    except ImportError:
        print("(no plot: matplotlib is not installed; `pip install matplotlib` to get one)")
        return None
    fig = Figure(figsize=(7, 4.5), constrained_layout=True)
    ax = fig.subplots()
    draw(ax)
    if title:
        ax.set_title(title)
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, f"{name}.png")
    tmp = f"{path}.{os.getpid()}.tmp"
    fig.savefig(tmp, format='png', dpi=120)
    os.replace(tmp, path)
    print(f"plot saved to {path}")
    return path


def html_option(parser):
    """`--html` for command_line(..., extra=html_option): the lesson also writes a backward-pass viewer."""
    parser.add_argument('--html', action='store_true',
                        help=f'also write a step-by-step backward-pass viewer under {RUNS}/ (open it in a browser)')


def save_viewer(name, loss, title, params=None, folder=RUNS):
    """Run loss's backward pass through mt.BackpropViewer and save the page as <folder>/<name>.html.

    Fills .grad as loss.backward() does, so the lesson goes on as before.  Returns the path.
    """
    os.makedirs(folder, exist_ok=True)
    path = mt.BackpropViewer(loss, params=params, title=title).save(os.path.join(folder, f"{name}.html"))
    size = os.path.getsize(path)
    print(f"backward-pass viewer saved to {path} ({size / 1e6:.1f} MB" if size > 1e6 else
          f"backward-pass viewer saved to {path} ({size / 1e3:.0f} kB", end='; open it in a browser)\n')
    return path
