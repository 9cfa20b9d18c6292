"""Plain-text tables for the inspection tools (trace, gradient flow, probes)."""


def format_table(header, rows, align):
    """Columns padded to their widest cell; align holds one '<' (left) or '>' (right) per column."""
    widths = [max(len(cells[i]) for cells in [header] + rows) for i in range(len(header))]
    return '\n'.join('  '.join(cell.ljust(w) if a == '<' else cell.rjust(w)
                               for cell, w, a in zip(cells, widths, align)).rstrip()
                     for cells in [header] + rows)


def fmt(value, spec='.3e'):
    """A number for a table cell; '-' for None (no gradient, nothing measured)."""
    return '-' if value is None else format(value, spec)


class Rows:
    """The rows of a report: len(), iteration, and print() shows its table()."""

    def __init__(self, rows):
        self.rows = list(rows)

    def __len__(self):
        return len(self.rows)

    def __iter__(self):
        return iter(self.rows)

    def __str__(self):
        return self.table()
