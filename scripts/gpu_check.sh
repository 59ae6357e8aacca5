#!/usr/bin/env bash
# Everything GPU-side in one call, on a machine with a GPU and possibly no network.
#
#   scripts/gpu_check.sh [OUT_DIR] [STEP...]
#
# Installs the project's missing dependencies from the wheel folder .whl/ (see docs/gpu.md for
# how to fill it), then runs the steps (default: all) and writes their results under OUT_DIR
# (default: $OUT, else gpu-results/):
#   env      nvidia-smi, versions, `gauntlet devices`, the measured device peaks
#   pytest   pytest -m gpu (the judge on CUDA, the exploit corpus on GPU, CUDA builds)
#   suite    gauntlet run --suite gpu-quick with the baseline and expert agents, then report
#   evidence scripts/gpu_evidence.py: repeatability, exploit table, judge cost per candidate
set -uo pipefail
cd "$(dirname "$0")/.."
out="${1:-${OUT:-gpu-results}}"
shift || true
steps=("$@")
[ ${#steps[@]} -eq 0 ] && steps=(env pytest suite evidence)
mkdir -p "$out"
export PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1

if ! python3 -c "import pydantic" 2>/dev/null; then
    ls .whl/*.whl >/dev/null 2>&1 || { echo "gpu_check: pydantic is missing and .whl/ is empty" >&2; exit 2; }
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --target /tmp/gauntlet-site .whl/*.whl || exit 2
    export PYTHONPATH="/tmp/gauntlet-site${PYTHONPATH:+:$PYTHONPATH}"
fi
export PYTHONPATH="$PWD/src:$PWD${PYTHONPATH:+:$PYTHONPATH}"
status=0
for step in "${steps[@]}"; do
    echo "== $step" | tee -a "$out/summary.txt"
    case "$step" in
        env)
            { nvidia-smi; python3 -c "import torch, triton; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'triton', triton.__version__)"; } \
                > "$out/env.txt" 2>&1
            python3 -m gauntlet devices >> "$out/env.txt" 2>&1
            python3 -c "from gauntlet.judge.roofline import device_peaks; print(device_peaks('cuda:0').model_dump_json(indent=1))" \
                > "$out/peaks.json" 2>> "$out/env.txt" || status=1
            tail -n 3 "$out/env.txt" ;;
        pytest)
            python3 -m pytest -m gpu --gpu -q -p no:cacheprovider tests 2>&1 | tee "$out/pytest-gpu.log" | tail -n 25
            [ "${PIPESTATUS[0]}" -eq 0 ] || status=1 ;;
        suite)
            rm -rf "$out/run-gpu-quick"
            python3 -m gauntlet run --suite gpu-quick --agent baseline --agent expert \
                --out "$out/run-gpu-quick" --seed 1 2>&1 | tail -n 40 || status=1
            python3 -m gauntlet report "$out/run-gpu-quick" --html "$out/report.html" > /dev/null 2>&1 || true ;;
        evidence)
            python3 scripts/gpu_evidence.py --out "$out" 2>&1 | tail -n 40 || status=1 ;;
        *)
            echo "gpu_check: unknown step '$step'" >&2; status=2 ;;
    esac
done
echo "gpu_check: exit $status" | tee -a "$out/summary.txt"
exit $status
