#!/bin/sh
# The batched GPU check of the owned math library and the unary / clip / astype kernels (issue 23),
# one command on a lent GPU from the repository root (bench/results/README.md). Each step is
# guarded by its own timeout, so one failure or overrun leaves the others' results. Writes into $OUT:
#   gpu_check.txt / gpu_check.json  tests/kernel/math/gpu_check.py: every owned math entry point,
#                                   NVRTC on the GPU against Numba on the CPU, bit for bit
#   gpu-tests.txt / gpu.xml / gpu-tests.json  the quick-tier sweep of tests/gpu/test_gpu_engine.py
#                                   restricted to the unary ops, clip and astype (GP_GPU_OPS)
#   bench.txt / unary_gpu.md / unary_gpu.json  bench/bench_gpu.py -k unary: gp.exp / tanh / sigmoid /
#                                   fused GELU on 10^7 float32 and float16 against CuPy and torch
# In order of what a short lease must get first: the math check (~25 s on an H200 with 15 workers),
# the timing (alone on the GPU), then the sweep (CPU references and NVRTC compiles of ~700 cases: it
# did not finish within 65 s on the first run, 2026-11-26). `timeout -k` kills what ignores SIGINT
# (the sweep's worker pools did).
# Times (seconds): GP_T_MATH, GP_T_BENCH, GP_T_SWEEP; workers: GP_W_MATH, GP_W_SWEEP.
# GP_STEPS picks the steps (default "math bench sweep"; gpu_session_batch.sh runs math, then others, then the rest).
export PYTHONPATH=. PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/gp-out}; mkdir -p "$OUT"; STEPS=${GP_STEPS:-math bench sweep}
step() { case " $STEPS " in *" $1 "*) return 0;; esac; return 1; }
OPS=$(python3 -c "from tests.support.engine_cases import UNARY; print(','.join(UNARY + ['clip', 'astype']))")
K=$(python3 -c "import sys; print(' or '.join(f'-{o}]' for o in sys.argv[1].split(',')))" "$OPS")
if step math; then
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > "$OUT/gpu_check.txt" 2>&1
date -u >> "$OUT/gpu_check.txt"
GP_MATH_SAMPLES=${GP_MATH_SAMPLES:-5000} timeout -k 5 -s INT ${GP_T_MATH:-60} \
  python3 tests/kernel/math/gpu_check.py --out "$OUT" --workers ${GP_W_MATH:-15} >> "$OUT/gpu_check.txt" 2>&1
echo "gpu_check rc=$?" >> "$OUT/gpu_check.txt"
fi
if step bench; then
GP_BENCH_REPEAT=${GP_BENCH_REPEAT:-10} GP_BENCH_RESULTS="$OUT/unary_gpu.md" \
  GP_BENCH_COMMAND="PYTHONPATH=. GP_BENCH_REPEAT=10 python3 -m pytest bench/bench_gpu.py -m gpu -k unary -s" \
  timeout -k 5 -s INT ${GP_T_BENCH:-45} python3 -m pytest bench/bench_gpu.py -m gpu -k unary -s -q -p no:cacheprovider \
  > "$OUT/bench.txt" 2>&1
echo "bench rc=$?" >> "$OUT/bench.txt"
fi
if step sweep; then
GP_GPU_SWEEP=quick GP_GPU_OPS="$OPS" GP_GPU_WORKERS=${GP_W_SWEEP:-15} GP_GPU_REPORT="$OUT/gpu-tests.json" \
  timeout -k 10 -s INT ${GP_T_SWEEP:-150} python3 -m pytest -q -p no:cacheprovider tests/gpu/test_gpu_engine.py -m gpu \
  -k "known_generator or $K" -rfE --junitxml="$OUT/gpu.xml" > "$OUT/gpu-tests.txt" 2>&1
echo "sweep rc=$?" >> "$OUT/gpu-tests.txt"
fi
for f in gpu_check.txt bench.txt gpu-tests.txt; do [ -f "$OUT/$f" ] && tail -n 4 "$OUT/$f"; done; true
