#!/bin/sh
# The batched GPU check (bench/results/README.md): run from the repository root on a lent GPU.
# Writes into $OUT: build.txt, nvidia-smi.txt, gpu-tests.txt, gpu-other.txt, bench.txt and the .md/.json results.
export PYTHONPATH=. GP_GPU_WORKERS=${GP_GPU_WORKERS:-15}; D=$(date -u +%F)
TAG=${GP_GPU_TAG:-gpu}
python3 setup.py -q build_ext --inplace > $OUT/build.txt 2>&1 || true
nvidia-smi --query-gpu=name,driver_version --format=csv > $OUT/nvidia-smi.txt 2>&1
GP_GPU_REPORT=$OUT/$TAG-$D-gpu-tests.json timeout -s INT ${GP_T_TESTS:-220} \
  python3 -m pytest tests/gpu/test_gpu_engine.py -m gpu -q -p no:cacheprovider -rfE > $OUT/gpu-tests.txt 2>&1
timeout -s INT ${GP_T_OTHER:-90} python3 -m pytest tests -m gpu -q -p no:cacheprovider -rfE \
  --ignore=tests/gpu/test_gpu_engine.py > $OUT/gpu-other.txt 2>&1
GP_BENCH_RESULTS=$OUT/$TAG-$D.md GP_BENCH_COMMAND="PYTHONPATH=. python3 -m pytest bench/bench_gpu.py -m gpu -s" \
  timeout -s INT ${GP_T_BENCH:-170} python3 -m pytest bench/bench_gpu.py -m gpu -s -q -p no:cacheprovider > $OUT/bench.txt 2>&1
tail -n 5 $OUT/gpu-tests.txt $OUT/gpu-other.txt $OUT/bench.txt
