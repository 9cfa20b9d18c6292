"""Runnable lessons.  `python -m demos` runs the tour; `python -m demos NAME` one lesson."""
import os

# The lessons multiply small matrices, where BLAS threads cost more than they save; on a busy
# machine their busy-waiting made training several times slower.  This only takes effect when
# numpy is not loaded yet (python -m demos ...), and an explicit setting wins.
for _variable in ('OPENBLAS_NUM_THREADS', 'OMP_NUM_THREADS', 'MKL_NUM_THREADS'):
    os.environ.setdefault(_variable, '1')
