#!/usr/bin/env bash
# Recapture the jobs of tests/data/jobs/ (see ../PROVENANCE.md), each into a fresh tests/data/jobs/<job>/.
#
#   TORCH_PYTHON=.../bin/python JAX_PYTHON=.../bin/python TF_PYTHON=.../bin/python XLA_PYTHON=.../bin/python \
#     bash tests/data/jobs/capture/run_all.sh [JOB ...]
#
# TORCH_PYTHON: a venv with torch==2.13.0 (CPU), then lightning, transformers, accelerate installed with
#   the torch pin held (`pip install torch==2.13.0 lightning transformers accelerate`);
# JAX_PYTHON: a venv with `pip install jax jaxlib flax optax`;
# TF_PYTHON: a venv with `pip install tensorflow-cpu tensorboard`;
# XLA_PYTHON: a venv with `pip install 'torch==2.9.*' 'torch-xla==2.9.0'` (the xla_* scripts set PJRT_DEVICE=CPU
#   unless it is set).
# With no JOB every job is run; a job whose interpreter variable is unset is skipped with a note.
# Each job takes a few seconds of CPU, torch_compile about 30 s (a cold inductor compile).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
jobs_dir=$(dirname "$here")

TORCH_JOBS="torch_plain_en torch_input_bound_zh torch_input_prefetched_zh torch_input_bound_de torch_unmarked
  torch_ddp_gloo lightning_fit hf_trainer torch_compile torch_repeated_copy torch_host_wait torch_user_steps"
JAX_JOBS="jax_step_train jax_train_step_scopes jax_flax_unmarked jax_input_bound_de"
TF_JOBS="tf_keras_fit tf_custom_loop"
XLA_JOBS="xla_steptrace xla_dynamic_shapes"

python_for() {
  case " $(echo $TORCH_JOBS) " in *" $1 "*) echo "${TORCH_PYTHON:-}"; return ;; esac
  case " $JAX_JOBS " in *" $1 "*) echo "${JAX_PYTHON:-}"; return ;; esac
  case " $TF_JOBS " in *" $1 "*) echo "${TF_PYTHON:-}"; return ;; esac
  case " $XLA_JOBS " in *" $1 "*) echo "${XLA_PYTHON:-}"; return ;; esac
  echo "unknown job: $1" >&2
  exit 2
}

selected=("$@")
if [ ${#selected[@]} -eq 0 ]; then
  # shellcheck disable=SC2206
  selected=($TORCH_JOBS $JAX_JOBS $TF_JOBS $XLA_JOBS)
fi

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
cd "$jobs_dir"  # the scripts get the relative folder <job>, so no machine path is handed to them
for job in "${selected[@]}"; do
  py=$(python_for "$job")
  if [ -z "$py" ]; then
    echo "skip $job: its interpreter variable is not set" >&2
    continue
  fi
  rm -rf "$job"
  mkdir -p "$job"
  echo "== $job" >&2
  # a cold, private inductor cache for torch_compile; one thread per op pool everywhere
  TORCHINDUCTOR_CACHE_DIR="$scratch/inductor" OMP_NUM_THREADS=1 TF_CPP_MIN_LOG_LEVEL=1 \
    "$py" "$here/$job.py" "$job"
done
du -sh "$jobs_dir" >&2
