"""What the lessons share: the command line, a plain-text table, a median clock, plots under
runs/, and the list of files written.

    SECTIONS = [('attention', '2.3.2')]   # the articles' sections it checks (demos/articles.py), printed first

    def main(argv=None):                                   # every lesson ends like this
        options = options_of(run, steps='training steps', lr='learning rate', seed='random seed')
        return run_lesson(run, command_line('train_xor', __doc__, options, argv))

    print(table(['d_k', 'Var'], [[4, 4.1], [16, 15.8]]))
    print(table(['steps', 'mean loss'], window_means(losses)))   # a loss curve in 10 rows
    save_lines('lesson', {'scaled': ys, 'unscaled': ys2}, ...)     # -> 'runs/lesson.png' or None
    check_loss(loss.item(), step, 'train_xor')                     # NaN/inf: stop, say what to try

The learner's language (microtensor/i18n.py) is chosen by command_line (--lang); what this file
prints goes through `_`.  A lesson's option helps and check_loss/check_learned's `tries` are
translated here, where they are used: mark them N_('...') where the lesson writes them.

Every file a lesson writes goes through wrote(path, what) (save_plot does it), so the tour can
end with the list in WRITTEN.  matplotlib is optional (pip install matplotlib, or the `demos`
extra): without it a lesson prints its numbers and says how to get the picture.
"""
import argparse
import collections
import inspect
import math
import os
import shlex
import statistics
import subprocess
import sys
import time
import unicodedata
import warnings

import microtensor as mt
from microtensor import i18n
from microtensor.i18n import N_, _

from . import articles, claims

RUNS = 'runs'  # relative to where you run the lesson (ignored by git)
WRITTEN = []   # (path, what) for every file the lessons wrote in this process, oldest first
COMMAND = {}   # the lesson's command line, as command_line parsed it last: 'lesson' and 'argv'
PAGES = {}     # group -> {path: BackpropViewer}: viewer pages that share one colour scale


def wrote(path, what=''):
    """Record that a lesson wrote `path` (a plot, a checkpoint, a page): what it is; returns path."""
    path = os.fspath(path)
    WRITTEN.append((path, what))
    return path


# ---------------------------------------------------------------------------- the command line
Option = collections.namedtuple('Option', 'default help minimum', defaults=('', None))
Option.__doc__ = """One command-line option: its default (which sets its type), a help line, and the
smallest value allowed.  minimum=None is the usual rule: integers >= 1 (a seed >= 0), floats > 0;
floats must always be finite.  A bool becomes --name / --no-name; a tuple takes several values."""


def options_of(run, **helps):
    """{name: Option} for the keywords of `run` named in `helps`, defaults from run's signature.

    A help is a string, or (string, minimum) to change the smallest value allowed.
    """
    parameters = inspect.signature(run).parameters
    options = {}
    for name, text in helps.items():
        text, minimum = (text, None) if isinstance(text, str) else text
        options[name] = Option(parameters[name].default, text, minimum)
    return options


def command_line(module, doc, options, argv=None, extra=None, check=None):
    """Parse `python -m demos.<module>` arguments into a Namespace for run(**vars(args)).

    options: {name: Option or default value}, one --name each (underscores become dashes),
    checked as Option says: a bad value is a usage error, never a traceback.  Always --device
    (cpu, cuda, or auto: cuda when a GPU is usable), resolved to 'cpu' or 'cuda'.
    extra(parser) may add more arguments; check(args) returns an error message, or None when
    the options fit together.  `doc` (the lesson's docstring) is looked up in the catalog whole: its
    translation is an entry of the .po whose msgid is the docstring, written there by hand (gettext's
    extraction skips docstrings).
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    try:  # chosen before the parser is built, so that its --help speaks that language too
        i18n.use(i18n.requested(argv))
    except ValueError as error:
        raise SystemExit(f"python -m demos.{module}: error: {error}") from None
    sections = getattr(_lesson_module(module), 'SECTIONS', ())
    epilog = '\n'.join(filter(None, [claims.run_time(module),
                                     _("Reads with:") + f"\n{articles.header(sections, '  ')}" if sections else None]))
    parser = i18n.ArgumentParser(prog=f'python -m demos.{module}', description=_(doc) if doc else doc,
                                 epilog=epilog or None, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--device', default='cpu', choices=['cpu', 'cuda', 'auto'],
                        help=_('where the tensors live: cuda runs on the GPU via cupy; auto picks cuda when a GPU '
                               'is usable (default: cpu)'))
    i18n.add_option(parser)
    for name, option in options.items():
        _add_option(parser, name, option if isinstance(option, Option) else Option(option))
    if extra is not None:
        extra(parser)
    args = parser.parse_args(argv)
    del args.lang  # in use already (above); run() does not take it
    COMMAND.update(lesson=module, argv=argv)
    if args.device == 'auto':
        args.device = 'cuda' if mt.cuda.is_available() else 'cpu'
    elif args.device == 'cuda' and not mt.cuda.is_available():
        parser.error(_("--device cuda, but no GPU is usable here: {reason}").format(reason=why_no_gpu()))
    message = check(args) if check is not None else None
    if message:
        parser.error(message)
    return args


def _lesson_module(module):
    """The loaded module of lesson `module`: demos.<module>, or __main__ under python -m demos.<module>."""
    main = sys.modules.get('__main__')
    if getattr(getattr(main, '__spec__', None), 'name', None) == f'demos.{module}':
        return main
    return sys.modules.get(f'demos.{module}')


def _add_option(parser, name, option):
    flag, default = '--' + name.replace('_', '-'), option.default
    many = isinstance(default, (tuple, list))
    shown = (_('yes') if default else _('no')) if isinstance(default, bool) else ' '.join(map(str, default)) if many \
        else default
    # option.help is translated here, once the language is chosen (a lesson marks it with N_)
    text = _("{help} (default: {default})").format(help=_(option.help) if option.help else '',
                                                   default=shown).replace('%', '%%')
    if isinstance(default, bool):  # --name / --no-name (argparse.BooleanOptionalAction's help differs by version)
        group = parser.add_mutually_exclusive_group()
        group.add_argument(flag, dest=name, action='store_true', default=default, help=text)
        group.add_argument('--no-' + flag[2:], dest=name, action='store_false', help=_('the opposite'))
    elif many or isinstance(default, (int, float)):
        kind = type(default[0] if many else default)
        parser.add_argument(flag, nargs='+' if many else None, type=_checked(kind, name, option.minimum),
                            default=default, metavar=name.upper(), help=text)
    else:
        parser.add_argument(flag, type=type(default), default=default, help=text)


def _checked(kind, name, minimum):
    """argparse's `type` for a number: parse it and check its range, with a message that says the rule."""
    if minimum is None:
        low, strict = (0, True) if kind is float else (0 if name.endswith('seed') else 1, False)
    else:
        low, strict = minimum, False
    rule = '' if low == -math.inf else f" > {low}" if strict else f" >= {low}"

    def parse(text):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError((_("expected an integer, got {text}") if kind is int else
                                              _("expected a number, got {text}")).format(text=repr(text))) from None
        if not math.isfinite(value) or value < low or (strict and value == low):
            raise argparse.ArgumentTypeError((_("must be a finite number{rule}, got {text}") if kind is float else
                                              _("must be an integer{rule}, got {text}")).format(rule=rule, text=text))
        return value
    parse.__name__ = kind.__name__
    return parse


def why_no_gpu():
    """The engine's reason (backend.no_gpu_reason) plus what a lesson can do instead."""
    return _("{reason}. Run without --device, or with --device auto, to use the CPU.").format(
        reason=mt.backend.no_gpu_reason())


# ---------------------------------------------------------------------------- training runs
class Diverged(ArithmeticError):
    """A training run stopped because its loss became NaN or infinite."""


class Refused(ValueError):
    """A lesson cannot do what it was asked (say, resume a checkpoint made with other settings);
    the message says why and what to do instead."""


class Interrupted(Exception):
    """Ctrl-C in a training loop: the steps done (of `steps`) and the last checkpoint, (path, its
    step) or None, read back after the interruption, so intact.  run_lesson turns it into one line."""

    def __init__(self, step, steps, checkpoint=None, next_checkpoint=None):
        super().__init__(_("stopped by Ctrl-C after step {step} of {steps}").format(step=step, steps=steps))
        self.step, self.steps, self.checkpoint, self.next_checkpoint = step, steps, checkpoint, next_checkpoint


LOWER_LR = N_('a lower --lr (say 10x smaller)')


def _tries(tries):
    """'A, or B': what to try, each marked with N_ where it is written and translated here."""
    return _(', or ').join(_(t) for t in tries)


def check_loss(loss, step, lesson, tries=(LOWER_LR,)):
    """Return loss (a float) when finite; else raise Diverged naming the step and what to try.

    Call it before anything is saved at that step, so a NaN never overwrites a good checkpoint.
    """
    if not math.isfinite(loss):
        raise Diverged(_("{lesson}: the loss became {loss} at step {step}, so training stopped there (nothing from "
                         "this step was kept). Try {tries}; `with mt.detect_anomaly():` names the op that first made "
                         "a NaN/inf.").format(lesson=lesson, loss=loss, step=step, tries=_tries(tries)))
    return loss


def check_learned(losses, lesson, rose=(LOWER_LR,), flat=(N_('more --steps'), N_('a higher --lr'))):
    """Print what to try when a run did not learn, and return that remark (None when it learned).

    Learning means the mean of the last tenth of the losses is below 90% of the first loss (the
    untrained model's).  A loss that ended above where it started (the steps overshoot: `rose`)
    needs other remedies than one that barely moved (`flat`).
    """
    if not losses:
        return None
    first, tail = losses[0], losses[-max(1, len(losses) // 10):]
    last = sum(tail) / len(tail)
    if last < 0.9 * first:
        return None
    went = _("rose") if last > first else _("barely moved")
    over = _('at the last step') if len(tail) == 1 else _("over the last {n} steps").format(n=len(tail))
    remark = _("{lesson}: this run did not learn: the loss {went}, from {first} at step 1 to {last} {over}. "
               "Try {tries}.").format(lesson=lesson, went=went, first=f"{first:.4g}", last=f"{last:.4g}", over=over,
                                      tries=_tries(rose if last > first else flat))
    print(remark)
    return remark


def resume_command():
    """The command that continues the lesson last parsed by command_line: the interpreter that runs it
    (a bare `python` may be another one, without the project), its options, and --resume."""
    argv = COMMAND['argv'] + ([] if '--resume' in COMMAND['argv'] else ['--resume'])
    return ' '.join([shlex.quote(sys.executable), '-m', f"demos.{COMMAND['lesson']}", *map(shlex.quote, argv)])


def interrupted_message(stop, resumable):
    """One line for a run stopped by Ctrl-C: where it stopped, the checkpoint, how to go on."""
    lesson = COMMAND.get('lesson') or _('the lesson')
    if stop.checkpoint is None:
        if stop.next_checkpoint is None:
            return _("{lesson}: {stop}; no checkpoint was written yet: run the same command to start again.").format(
                lesson=lesson, stop=stop)
        return _("{lesson}: {stop}; no checkpoint was written yet (the first comes at step {step}): run the same "
                 "command to start again.").format(lesson=lesson, stop=stop, step=stop.next_checkpoint)
    path, step = stop.checkpoint
    if resumable:
        return _("{lesson}: {stop}; the last checkpoint, {path} (step {step}), is intact. Resume with: "
                 "{command}").format(lesson=lesson, stop=stop, path=path, step=step, command=resume_command())
    return _("{lesson}: {stop}; the last checkpoint, {path} (step {step}), is intact. This lesson trains from the "
             "start each time: run it again.").format(lesson=lesson, stop=stop, path=path, step=step)


def run_lesson(run, args):
    """Print the articles' sections the lesson checks (its module's SECTIONS), then run(**vars(args));
    a run that diverged, was refused or stopped by Ctrl-C ends with one line (exit status 1, or 130
    for Ctrl-C as in a shell), not a traceback."""
    sections = getattr(sys.modules[run.__module__], 'SECTIONS', ())
    if sections:  # [] for a lesson that checks no article's claim
        print(articles.header(sections))
    try:
        return run(**vars(args))
    except (Diverged, Refused) as error:
        raise SystemExit(_("error: {error}").format(error=error)) from None
    except Interrupted as stop:
        print(interrupted_message(stop, resumable='resume' in vars(args)), file=sys.stderr)
    except KeyboardInterrupt:
        print(_("{lesson}: stopped by Ctrl-C before it finished: run it again to see the rest.").format(
            lesson=COMMAND.get('lesson') or _('the lesson')), file=sys.stderr)
    raise SystemExit(130)


# ---------------------------------------------------------------------------- tables
def table(header, rows, fmt=None):
    """Columns padded to their widest cell, the first flush left, the rest right.

    Floats use the format spec `fmt` (e.g. '.4f'); by default 4 significant digits, and
    scientific notation for the very small or large.  Strings are printed as they are; an
    exception is refused (error messages go under a table, never inside a cell).
    """
    cells = [[str(h) for h in header]] + [[_cell(v, fmt) for v in row] for row in rows]
    widths = [max(_width(row[i]) for row in cells) for i in range(len(header))]
    return '\n'.join('  '.join(_pad(c, w, left=i == 0) for i, (c, w) in enumerate(zip(row, widths))).rstrip()
                     for row in cells)


def _cell(value, fmt):
    if isinstance(value, BaseException):
        raise TypeError(f"table: a cell holds the error {type(value).__name__}: {value}; put a short marker in "
                        "the cell and print the message under the table")
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


# ---------------------------------------------------------------------------- clocks
def median_seconds(fn, repeats, warmup=0):
    """Median wall time of fn() over `repeats` runs, after `warmup` untimed ones.  On a GPU, fn
    must wait for its result (say with .item()): a kernel launch returns before the work is done."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


# ---------------------------------------------------------------------------- plots
def save_lines(name, series, xlabel, ylabel, title, x=None, logx=False, logy=True, folder=RUNS, mark=None):
    """One line per {label: y values} (against x, default 1, 2, ...), log axes as asked; mark=(x, label): a
    dotted vertical line there (say, the training length); see save_plot."""
    return save_plot(name, lambda ax: draw_lines(ax, series, xlabel, ylabel, x, logx, logy, mark), title, folder)


def draw_lines(ax, series, xlabel, ylabel, x=None, logx=False, logy=True, mark=None):
    """save_lines's drawing on one matplotlib axis (a panel of save_plot(..., panels=k))."""
    # each its own line style and marker, markers staggered and earlier lines wider: curves that
    # coincide stay visible
    for i, ((label, ys), style) in enumerate(zip(series.items(), ('o-', 's--', '^:', 'v-.', 'd-', 'x--'))):
        every = max(1, len(ys) // 12)
        ax.plot(x or range(1, len(ys) + 1), ys, style, markersize=5, fillstyle='none', label=label,
                markevery=(i * every // len(series), every), linewidth=max(1.0, 3.0 - 0.6 * i))
    ax.set(xlabel=xlabel, ylabel=ylabel, xscale='log' if logx else 'linear', yscale='log' if logy else 'linear')
    if mark is not None:
        ax.axvline(mark[0], color='grey', linestyle=':', label=mark[1])
    if logx and x:  # label the measured x values themselves, not powers of ten
        ax.set_xticks(x, [f"{v:g}" for v in x])
        ax.tick_params(axis='x', which='minor', bottom=False, labelbottom=False)
    ax.legend()


def save_heatmaps(name, matrices, rows, columns, title, fmt='.2f', folder=RUNS):
    """One heatmap per {panel title: matrix (lists)}, side by side, each cell printed; see save_plot.

    All panels share one colour scale, from 0 (or below) to the largest value, so that equal
    colours mean equal numbers across panels.
    """
    low = min(0, min(min(map(min, m)) for m in matrices.values()))
    high = max(max(map(max, m)) for m in matrices.values())

    def draw(axes):
        for ax, (panel, matrix) in zip(axes, matrices.items()):
            ax.imshow(matrix, cmap='Blues', vmin=low, vmax=high)
            ax.set(title=panel, xticks=range(len(columns)), xticklabels=columns,
                   yticks=range(len(rows)), yticklabels=rows)
            for i, row in enumerate(matrix):
                for j, value in enumerate(row):  # white text on the dark cells
                    ax.text(j, i, format(value, fmt), ha='center', va='center',
                            color='white' if value > low + 0.6 * (high - low) else 'black')
    return save_plot(name, draw, title, folder, panels=len(matrices))


def save_plot(name, draw, title=None, folder=RUNS, panels=1):
    """draw(ax) on a fresh figure (draw(axes), a list, when panels > 1); saved as <folder>/<name>.png.

    Uses matplotlib's Figure directly (no pyplot, no GUI backend); written to a temporary name,
    then renamed, and recorded with wrote().  Returns the path, or None when matplotlib is not
    installed.
    """
    try:
        from matplotlib.figure import Figure
    except ImportError:
        print(_("(no plot: matplotlib is not installed; `pip install matplotlib` to get one)"))
        return None
    import matplotlib
    with matplotlib.rc_context(_plot_fonts()), warnings.catch_warnings():
        # without a CJK font, _plot_fonts said so once: not one warning per missing glyph
        warnings.filterwarnings('ignore', message='Glyph .* missing from')
        fig = Figure(figsize=(7 if panels == 1 else 4.5 * panels, 4.5), constrained_layout=True)
        axes = fig.subplots(1, panels, squeeze=False)[0].tolist()
        draw(axes[0] if panels == 1 else axes)
        if title:
            (axes[0].set_title if panels == 1 else fig.suptitle)(title)
        os.makedirs(folder, exist_ok=True)
        path = os.path.join(folder, f"{name}.png")
        tmp = f"{path}.{os.getpid()}.tmp"
        fig.savefig(tmp, format='png', dpi=120)
    os.replace(tmp, path)
    print(_("plot saved to {path}").format(path=path))
    return wrote(path, title or name)


# CJK fonts, preferred first: Simplified Chinese forms, then any font that has the Han characters
CJK_FONTS = ('Noto Sans CJK SC', 'Source Han Sans SC', 'WenQuanYi Zen Hei', 'WenQuanYi Micro Hei', 'Microsoft YaHei',
             'PingFang SC', 'Heiti SC', 'SimHei', 'Noto Sans CJK JP', 'Noto Sans CJK TC', 'Droid Sans Fallback',
             'AR PL UMing CN')
_FONTS = {}  # language -> matplotlib rc settings for it (found once per process)


def _plot_fonts():
    """matplotlib settings for the plots' text in the current language: for Chinese, a CJK font first
    in the sans-serif list; when none is installed, {} and one line (once) that says how to get one."""
    lang = i18n.current()
    if lang == 'en':
        return {}
    if lang not in _FONTS:
        font = cjk_font()
        if font is None:
            print(_("(no CJK font installed: the plots' Chinese text shows as boxes; install one, e.g. "
                    "`apt-get install fonts-noto-cjk` on Debian or Ubuntu, then run the lesson again)"))
            _FONTS[lang] = {}
        else:
            import matplotlib
            _FONTS[lang] = {'font.family': 'sans-serif',
                            'font.sans-serif': [font, *matplotlib.rcParams['font.sans-serif']],
                            'axes.unicode_minus': False}  # CJK fonts often lack U+2212, the minus sign
    return _FONTS[lang]


def cjk_font():
    """The name of an installed font with the Chinese characters that matplotlib can use, or None.

    matplotlib caches its list of fonts; a font installed since is found through fontconfig
    (`fc-list :lang=zh`) and added to it."""
    from matplotlib import font_manager
    known = {f.name for f in font_manager.fontManager.ttflist}
    for name in CJK_FONTS:
        if name in known:
            return name
    try:
        listing = subprocess.run(['fc-list', ':lang=zh', 'file', 'style'], capture_output=True, text=True,
                                 timeout=30).stdout
    except (OSError, subprocess.SubprocessError):  # no fontconfig (Windows, macOS without it)
        return None
    paths = sorted({line.split(':')[0].strip() for line in listing.splitlines() if line.strip()},
                   key=lambda path: ('Regular' not in path, path))  # a regular weight first
    names = []
    for path in paths:  # every weight, so that a bold title finds its bold face
        try:
            font_manager.fontManager.addfont(path)
            names.append(font_manager.FontProperties(fname=path).get_name())
        except (OSError, RuntimeError, ValueError):  # a font matplotlib cannot read: try the next
            continue
    return names[0] if names else None


# ---------------------------------------------------------------------------- backward-pass viewer pages
def save_viewer(name, loss, title, params=None, folder=RUNS, group=None):
    """Run loss's backward pass through mt.BackpropViewer and save the page as <folder>/<name>.html.

    Fills .grad as loss.backward() does, so the lesson goes on as before.  Recorded with wrote();
    returns the path.  group: pages saved with the same group (the lesson's name) share one colour
    scale, so that equal colours mean equal gradient norms across them; a page that widens the
    scale rewrites the group's earlier pages with it.
    """
    os.makedirs(folder, exist_ok=True)
    path, viewer = os.path.join(folder, f"{name}.html"), mt.BackpropViewer(loss, params=params, title=title)
    pages = PAGES.setdefault(group, {}) if group is not None else {}
    pages[path] = viewer
    scale = mt.inspect.shared_scale(*pages.values()) if group is not None else None
    for other, page in pages.items():
        if page is viewer or page.scale != scale:
            page.scale = scale
            page.save(other)
    size = os.path.getsize(path)
    print(_("backward-pass viewer saved to {path} ({size}; open it in a browser)").format(
        path=path, size=f'{size / 1e6:.1f} MB' if size > 1e6 else f'{size / 1e3:.0f} kB'))
    return wrote(path, _("backward-pass viewer: {title}").format(title=title))
