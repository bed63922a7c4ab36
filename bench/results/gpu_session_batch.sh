#!/bin/sh
# One lease, one command: everything that awaits a GPU, most wanted first, each step under its own
# `timeout -k` so an overrun leaves the others' results (bench/results/README.md). Writes into $OUT
# (the device tool brings back at most 8 files, so u/ comes back packed as u.tar.gz):
#   build.txt            the compiled dispatcher's build, versions, nvidia-smi
#   u/                   gpu_unary_batch.sh: owned math check, unary timing, unary/clip/astype sweep
#   gpu-other.txt        every `gpu` test but the engine sweep: reductions, sanitizer, gp.compare, interop, Dask
#   reduce-diag.txt      gpu_reduce_diag.py: host against device time of the reductions, kernel by kernel;
#                        gpu_f16_roundtrip_diag.py: a float16 chain's round trips, GPU against CPU bits
#   bench.txt, $TAG-<date>.md/.json  bench/bench_gpu.py without the unary rows
# GP_SESSION_STEPS picks steps (default "math other diag unary main"; "unary" is the unary timing and sweep).
# Times (seconds): GP_T_MATH 60, GP_T_OTHER 150, GP_T_DIAG 60 (+40 float16), GP_T_BENCH 45 (unary), GP_T_SWEEP 110,
# GP_T_MAIN 100: at most ~575 s with the build, under the device tool's 600 s a call.
export PYTHONPATH=. PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/gp-out}; mkdir -p "$OUT/u"; D=$(date -u +%F); TAG=${GP_GPU_TAG:-gpu}
STEPS=${GP_SESSION_STEPS:-math other diag unary main}
step() { case " $STEPS " in *" $1 "*) return 0;; esac; return 1; }
python3 setup.py -q build_ext --inplace > "$OUT/build.txt" 2>&1; echo "build rc=$?" >> "$OUT/build.txt"
python3 -c "import cupy, torch, numba, sys; print(sys.version.split()[0], 'cupy', cupy.__version__, 'torch', torch.__version__, 'numba', numba.__version__, 'runtime', cupy.cuda.runtime.runtimeGetVersion(), 'driver', cupy.cuda.runtime.driverGetVersion())" >> "$OUT/build.txt" 2>&1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv >> "$OUT/build.txt" 2>&1
step math && OUT="$OUT/u" GP_STEPS=math GP_T_MATH=${GP_T_MATH:-60} sh bench/results/gpu_unary_batch.sh > /dev/null 2>&1
if step other; then
timeout -k 5 -s INT ${GP_T_OTHER:-150} python3 -m pytest tests -m gpu -q -p no:cacheprovider -rfE \
  --ignore=tests/gpu/test_gpu_engine.py > "$OUT/gpu-other.txt" 2>&1; echo "other rc=$?" >> "$OUT/gpu-other.txt"
fi
if step diag; then
timeout -k 5 -s INT ${GP_T_DIAG:-60} python3 bench/results/gpu_reduce_diag.py > "$OUT/reduce-diag.txt" 2>&1
echo "diag rc=$?" >> "$OUT/reduce-diag.txt"
timeout -k 5 -s INT 40 python3 bench/results/gpu_f16_roundtrip_diag.py >> "$OUT/reduce-diag.txt" 2>&1
echo "f16 diag rc=$?" >> "$OUT/reduce-diag.txt"
fi
step unary && OUT="$OUT/u" GP_STEPS="bench sweep" GP_T_BENCH=${GP_T_BENCH:-45} GP_T_SWEEP=${GP_T_SWEEP:-110} \
  sh bench/results/gpu_unary_batch.sh > /dev/null 2>&1
tar czf "$OUT/u.tar.gz" -C "$OUT" u   # packed before the last step: an overrun there keeps it
if step main; then
GP_BENCH_RESULTS="$OUT/$TAG-$D.md" GP_BENCH_COMMAND="PYTHONPATH=. python3 -m pytest bench/bench_gpu.py -m gpu -k 'not unary' -s" \
  timeout -k 5 -s INT ${GP_T_MAIN:-100} python3 -m pytest bench/bench_gpu.py -m gpu -k "not unary" -s -q -p no:cacheprovider \
  > "$OUT/bench.txt" 2>&1; echo "bench rc=$?" >> "$OUT/bench.txt"
fi
for f in build.txt u/gpu_check.txt gpu-other.txt reduce-diag.txt u/bench.txt u/gpu-tests.txt bench.txt; do
  [ -f "$OUT/$f" ] && tail -n 3 "$OUT/$f"
done
rm -rf "$OUT/u"; true
