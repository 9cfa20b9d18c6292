"""The language a learner reads: English, or Chinese (the source articles' language).

What a lesson, the tour, the workbook or the viewer prints goes through `_`:

    from microtensor.i18n import _
    print(_("{n} steps, loss {loss:.4f}").format(n=n, loss=loss))   # a template with named fields
    WHAT = {'xor': N_('an MLP learns XOR')}     # made at import, before the language is chosen: marked,
    print(_(WHAT['xor']))                       # and translated where it is used

The catalogs are Python's gettext's: microtensor/locale/<lang>/LC_MESSAGES/microtensor.po (the
text a translator reviews) and the compiled .mo beside it, which is what gettext reads.  Both are
committed, since neither setuptools nor `pip install -e` compiles a .po; after editing a .po:

    python -m microtensor.i18n compile      # (needs babel: pip install babel)

What is new to translate: `PYTHONPATH=. pybabel extract -F babel.cfg -o /tmp/microtensor.pot .` (every
_("...") and N_("...") of the code); tests/test_untranslated.py fails while one has no entry.

The language, first found wins: `--lang`, then the MICROTENSOR_LANG variable, then the locale as
gettext reads it (LANGUAGE, LC_ALL, LC_MESSAGES, LANG), then English.  The numbers printed are the
same in every language; only the words change.
"""
import argparse
import contextlib
import gettext
import os

DOMAIN = 'microtensor'
LOCALE_DIR = os.path.join(os.path.dirname(__file__), 'locale')
LANGUAGES = ('en', 'zh')      # English is the source text: it needs no catalog
LOCALE_VARIABLES = ('LANGUAGE', 'LC_ALL', 'LC_MESSAGES', 'LANG')   # gettext's order

_active = {'lang': None, 'catalog': None}


def _code(text):
    """'zh_CN.UTF-8' -> 'zh', 'en' -> 'en', 'C' or 'fr_FR' -> None (no catalog for it)."""
    code = text.strip().split('.')[0].split('@')[0].replace('-', '_').split('_')[0].lower()
    return code if code in LANGUAGES else None


def language(explicit=None, environ=None):
    """The language code to use: `explicit` (from --lang), else MICROTENSOR_LANG, else the locale."""
    environ = os.environ if environ is None else environ
    for value, source in ((explicit, '--lang'), (environ.get('MICROTENSOR_LANG'), 'MICROTENSOR_LANG')):
        if value:
            code = _code(value)
            if code is None:
                raise ValueError(f"{source} {value!r}: no such language here; choose one of {', '.join(LANGUAGES)}")
            return code
    for variable in LOCALE_VARIABLES:   # as gettext: the first variable that is set decides
        value = environ.get(variable)
        if value:
            return next((code for code in map(_code, value.split(':')) if code), 'en')
    return 'en'


def use(lang=None):
    """Make `lang` (resolved by language()) the language of every later `_()`; returns its code."""
    code = language(lang)
    _active['lang'] = code
    _active['catalog'] = gettext.translation(DOMAIN, LOCALE_DIR, languages=[code], fallback=True)
    return code


def current():
    """The language `_()` translates into now (resolved from the environment on first use)."""
    if _active['lang'] is None:
        use()
    return _active['lang']


def translator(lang):
    """The `_` of language `lang` (one of LANGUAGES), whatever the current language: for a page
    written in a language of its own (BackpropViewer(..., lang='zh'))."""
    if lang not in LANGUAGES:
        raise ValueError(f"no such language here: {lang!r}; choose one of {', '.join(LANGUAGES)}")
    return gettext.translation(DOMAIN, LOCALE_DIR, languages=[lang], fallback=True).gettext


def _(message):
    """`message` in the current language; the English text itself where there is no translation."""
    current()
    return _active['catalog'].gettext(message)


def ngettext(singular, plural, n):
    """The form of a message for the number n, in the current language."""
    current()
    return _active['catalog'].ngettext(singular, plural, n)


def N_(message):
    """`message` itself, marked for the catalog: for text defined before the language is chosen (a
    module's table of hints), which `_()` translates where it is shown."""
    return message


class Words(str):
    """Words kept translatable after they are made ('5 of 5 learned', 'the poem'): the English text, which
    is what prints, with the template and the fields it was filled from, so that another language can fill
    the template's translation with the same numbers (in_language).  A record saves one as {"template":
    ..., "fields": {...}}.  Made by words()."""
    template: str
    fields: dict


def words(template, **fields):
    """Words from the English `template` (marked N_() by the caller) filled with `fields`."""
    text = Words(template.format(**fields))
    text.template, text.fields = template, fields
    return text


def joined(parts, template):
    """Words joined two by two with `template` (N_("{first}; {second}")), still translatable."""
    text = parts[0]
    for part in parts[1:]:
        text = words(template, first=text, second=part)
    return text


def in_language(value, tr=None):
    """`value` as the language of `tr` (default: the current language's `_`) prints it: Words, or Words saved
    as {"template": ..., "fields": ...}, translated and filled; anything else as it is."""
    tr = tr or _
    if isinstance(value, Words):
        value = {'template': value.template, 'fields': value.fields}
    if isinstance(value, dict) and set(value) == {'template', 'fields'}:
        return tr(value['template']).format(**{k: in_language(v, tr) for k, v in value['fields'].items()})
    return value


def requested(argv):
    """The value of --lang in a command line (`--lang zh` or `--lang=zh`), or None: read before the
    parser is built, so that its --help is in that language too."""
    argv = list(argv)
    for i, arg in enumerate(argv):
        if arg == '--lang' and i + 1 < len(argv):
            return argv[i + 1]
        if arg.startswith('--lang='):
            return arg.split('=', 1)[1]
    return None


def add_option(parser):
    """Give an argparse parser the --lang option (its default: the environment's choice)."""
    parser.add_argument('--lang', choices=LANGUAGES, default=None,
                        help=_('the language of the output: en or zh (default: MICROTENSOR_LANG, '
                               'then the locale, then en)'))


# argparse's own words, which it passes to its module's gettext: ArgumentParser answers them from our catalog
ARGPARSE = (N_('usage: '), N_('positional arguments'), N_('options'), N_('optional arguments'),
            N_('show this help message and exit'), N_('%(prog)s: error: %(message)s\n'),
            N_('argument %(argument_name)s: %(message)s'), N_('invalid choice: %(value)r (choose from %(choices)s)'),
            N_('invalid %(type)s value: %(value)r'), N_('the following arguments are required: %s'),
            N_('unrecognized arguments: %s'), N_('expected one argument'), N_('expected at most one argument'),
            N_('expected at least one argument'), N_('not allowed with argument %s'),
            N_('one of the arguments %s is required'), N_('ambiguous option: %(option)s could match %(matches)s'),
            N_('ignored explicit argument %r'))


class ArgumentParser(argparse.ArgumentParser):
    """argparse's parser, its own words in the current language: the headings and -h's help, 'usage:',
    'error:' and its messages ('invalid choice: ...').  argparse looks them up with its module's gettext
    (`argparse._`), which this parser points at our catalog while it builds, parses, prints or complains,
    and gives back afterwards.  Subcommands' parsers are of this class too (add_subparsers' default)."""

    def __init__(self, *args, **kwargs):
        with _argparse_speaks():
            super().__init__(*args, **kwargs)

    def parse_args(self, args=None, namespace=None):
        with _argparse_speaks():
            return super().parse_args(args, namespace)

    def parse_known_args(self, args=None, namespace=None):
        with _argparse_speaks():
            return super().parse_known_args(args, namespace)

    def format_usage(self):
        with _argparse_speaks():
            return super().format_usage()

    def format_help(self):
        with _argparse_speaks():
            return super().format_help()

    def error(self, message):
        with _argparse_speaks():
            super().error(message)


@contextlib.contextmanager
def _argparse_speaks():
    saved = getattr(argparse, '_', None), getattr(argparse, 'ngettext', None)
    if None in saved:  # an argparse that looks its words up otherwise: it speaks English
        yield
        return
    argparse._ = _
    argparse.ngettext = ngettext
    try:
        yield
    finally:
        argparse._, argparse.ngettext = saved


def catalog_path(lang, suffix):
    """microtensor/locale/<lang>/LC_MESSAGES/microtensor.<suffix> (suffix 'po' or 'mo')."""
    return os.path.join(LOCALE_DIR, lang, 'LC_MESSAGES', f'{DOMAIN}.{suffix}')


def compile_catalogs():
    """Write each .po's .mo (atomically) with babel; returns the paths written."""
    from babel.messages.mofile import write_mo
    from babel.messages.pofile import read_po

    from .atomic_write import write_atomically
    written = []
    for lang in LANGUAGES[1:]:
        with open(catalog_path(lang, 'po'), 'rb') as f:
            catalog = read_po(f, locale=lang)
        written.append(write_atomically(catalog_path(lang, 'mo'), lambda f: write_mo(f, catalog),
                                        'microtensor.i18n compile'))
    return written


if __name__ == '__main__':
    import sys
    if sys.argv[1:] != ['compile']:
        sys.exit("usage: python -m microtensor.i18n compile   (write each .po's .mo)")
    for path in compile_catalogs():
        print('wrote', path)
