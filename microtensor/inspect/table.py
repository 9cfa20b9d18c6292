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
