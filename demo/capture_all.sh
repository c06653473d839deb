#!/usr/bin/env bash
# Regenerate every demo run into LOGDIR (default: demo/logdir next to this script), then check and
# summarise what was written. Each framework runs from its own Python environment, chosen with:
#   PYTHON_TORCH  python with torch            (required)
#   PYTHON_JAX    python with jax and jaxlib   (required)
#   PYTHON_XLA    python with torch_xla        (optional: the run is skipped when torch_xla is missing)
#   PYTHON_TF     python with tensorflow       (optional: the run is skipped when tensorflow is missing)
# Each defaults to python3. Only the run folders this script writes are replaced; other runs in LOGDIR
# are left alone.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
logdir="${1:-$here/logdir}"
py_torch="${PYTHON_TORCH:-python3}"
py_jax="${PYTHON_JAX:-python3}"
py_xla="${PYTHON_XLA:-python3}"
py_tf="${PYTHON_TF:-python3}"

mkdir -p "$logdir"

# capture RUN PYTHON MODULE SCRIPT required|optional: replace LOGDIR/RUN with a fresh capture, or explain why it is skipped.
capture() {
    local run="$1" python="$2" module="$3" script="$4" optional="$5"
    if ! "$python" -c "import $module" >/dev/null 2>&1; then
        if [[ "$optional" == optional ]]; then
            echo "skip $run: $python cannot import $module"
            return 0
        fi
        echo "error: $run needs $module, which $python cannot import (set the PYTHON_* variables)" >&2
        exit 1
    fi
    rm -rf "${logdir:?}/$run"
    echo "== $run"
    "$python" "$here/$script" "$logdir" --run "$run"
}

capture pytorch_cpu_training "$py_torch" torch capture_torch.py required
capture jax_cpu_training "$py_jax" jax capture_jax.py required
capture pytorch_xla_cpu_recompile "$py_xla" torch_xla capture_xla.py optional
capture tensorflow_cpu_training "$py_tf" tensorflow capture_tf.py optional
capture pytorch_cpu_slow_input "$py_torch" torch capture_torch_input.py required
capture pytorch_cpu_prefetch_input "$py_torch" torch capture_torch_prefetch.py required
capture pytorch_cpu_repeated_copy "$py_torch" torch capture_torch_copy.py required
capture pytorch_cpu_memory "$py_torch" torch capture_torch_memory.py required

echo "== contents"
python3 "$here/inspect_logdir.py" "$logdir"
echo "total bytes: $(du -sb "$logdir" | cut -f1)"
