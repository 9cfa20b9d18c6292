#!/usr/bin/env bash
# GPU acceptance in one command, from the working tree (no install step):
#
#   bash benchmarks/gpu_acceptance.sh OUTDIR [--device cuda|cpu] [--quick] [--budget SECONDS]
#
# Runs the cuda selftest, tests/test_gpu.py, 200 steps of train_gpt --preset gpu, gpt_step at three
# sizes and, when PyTorch is installed, the same step in PyTorch; prints one summary table and writes
# it, with the logs, to OUTDIR. Uses $PYTHON (default python3). See benchmarks/gpu_acceptance.py.
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
export PYTHONPATH="$(dirname "$here")${PYTHONPATH:+:$PYTHONPATH}"
exec "${PYTHON:-python3}" "$here/gpu_acceptance.py" "$@"
