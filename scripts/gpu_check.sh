#!/usr/bin/env bash
# Everything GPU-side in one call, on a machine with a GPU and possibly no network.
#
#   scripts/gpu_check.sh [OUT_DIR] [STEP...]
#
# Installs the project's missing dependencies from the wheel folder .whl/ (see docs/gpu.md for
# how to fill it), then runs the steps (default: env pytest suite evidence) and writes their
# results under OUT_DIR (default: $OUT, else gpu-results/), at most eight files:
#   env      env.txt (nvidia-smi, versions, `gauntlet devices`) and peaks.json (measured peaks)
#   h2d      h2d.md: scripts/bench_h2d.py, how fast a frame-sized host tensor reaches the GPU
#            (pageable, mapped memory file, the judge's pinned staging, 3 at once)
#   pytest   pytest-gpu.log: pytest -m gpu (the judge on CUDA, the exploit corpus, CUDA builds)
#   suite    suite.txt and suite-run.tar.gz: `gauntlet run` with the baseline and expert agents
#   evidence evidence.json, evidence.md: repeatability, judge cost (scripts/gpu_evidence.py)
#   cost     cost.json: `gauntlet eval` per candidate, this tree against OLD_TREE, alternating
#   bench    bench.md: scripts/bench_judge.py, cold vs warm (`gauntlet.Judge`) vs feedback,
#            with where a timed call's host time goes (timing.pairs.*, timing.judge*, ms per
#            call); then scripts/bench_timed_calls.py: the judge's exchange per timed call on
#            this host's CPUs alone (no GPU), alone, 3 at once and beside busy judge threads
#   ray      ray.log and scaling.md: the Ray engine on this host's GPUs (tests/engines/
#            test_ray_gpu.py, then scripts/bench_engines.py on one GPU and on all of them);
#            needs Ray: carry .ray-kit/ (scripts/ray_kit.py builds it), installed where missing
#   kb       kb.md, kb.log and kb-verdicts.jsonl (every judgment's whole verdict): issue 18's
#            side by side, KernelBench's own eval and our judge on the same problem and the
#            same naive kernel (scripts/bench_judge.py --case with --kernelbench-case), cold
#            and warm; needs .kb-kit/: build it on a machine with the
#            KernelBench snapshot (`python scripts/kb_kit.py`, 0.35 MiB: KernelBench's src/,
#            the anchors' scripts and kernels, our imported tasks, cases.tsv) and carry it
#            (carry [".whl", ".kb-kit"]; STEP_TIMEOUT=520 scripts/gpu_check.sh "$OUT" env kb)
#   kbimport kbimport.log and kbimport/ (problems.jsonl, runs.jsonl, probes.jsonl,
#            coverage.md): issue 21's KernelBench import coverage of levels 1-3 on this
#            machine's CPUs, each written task's baseline judged on `cpu`
#            (scripts/kb_import_coverage.py --baseline); needs .kb-kit/ (its kb/KernelBench/);
#            resumable: put a call's kbimport/*.jsonl under .kb-kit/kbimport/<n>/ and the next
#            call skips those problems and reuses their finished probes (docs/importers.md)
#   kbcompat kbcompat.log and kbcompat/kb_compat.{json,md}: issue 21's KernelBench ModelNew
#            files judged through the compatibility contract beside KernelBench's eval
#            (scripts/kb_compat_evidence.py on .kb-kit/compat/tasks); resumable: put a call's
#            kb_compat.json under .kb-kit/kbcompat/<n>/
#   autotune autotune.md, autotune.json, autotune.log and autotune-run.tar.gz: issue 22's
#            `autotune` alone on the tasks with knobs that run on a GPU (8 of `gpu`, the 6 of
#            `smoke`; its speedups are over the baseline), through a run
#            (scripts/bench_autotune.py --tuned); the table and JSON are rewritten after every
#            attempt; resumable: unpack the tarball in the checkout and carry AUTOTUNE_RUN_DIR
#   search   search.md, search.json and search.log: issue 22's search of SEARCH_CANDIDATES
#            candidates on one GPU task (scripts/bench_evolve.py: `evolve` with a scripted
#            proposer that moves the task's knobs, each candidate judged in feedback mode,
#            GAUNTLET_JUDGMENTS_PER_GPU of them at once: evolve's `judges` default on a GPU), its
#            wall time against 600 s and where a judgment's time goes; search.json rewritten
#            before every proposal
# and summary.txt (each step and the exit status).
#
# Settings (environment):
#   SUITE=gpu-quick      the suite the `suite` step runs
#   TASKS=               a glob narrowing it (e.g. '*2triton/*')
#   AGENTS="baseline expert"  the agents the `suite` step runs (e.g. AGENTS=expert: every
#                        expert judged, the false-rejection check)
#   RUN_DIR=runs/gpu     the run directory: resumed when it already holds a run, so a suite
#                        too long for one call continues in the next (carry the folder along)
#   REDO=                on resuming, globs of task ids (space-separated) whose attempts are
#                        made again after a fix to them or to the judge, e.g. 'cuda2cuda/gemv *rope'
#   TIME_CAP=10          seconds of timing per config at most (`gauntlet run --time-cap`)
#   PARALLEL=4           attempts at a time (`--parallel`): CUDA builds and workers' imports
#                        overlap the GPU work of another attempt, which holds the GPU's lock
#   RUN_FLAGS=           more `gauntlet run` flags (e.g. --no-compile-reference --parallel 4)
#   SUITE_TIMEOUT=0      stop the suite step after this many seconds (0: never); what finished
#                        is kept and resumable
#   H2D_ARGS=            more scripts/bench_h2d.py arguments (e.g. --mib 2048 --threads 3)
#   PYTEST_ARGS=         more pytest arguments (e.g. -n 8, the tier in one call; -k cuda_build)
#   PYTEST_PATHS=tests   what pytest collects (test files or node ids: a rerun of some tests)
#   EVIDENCE_ARGS=       scripts/gpu_evidence.py arguments (e.g. --parts repeatability)
#   OLD_TREE=            for `cost`: the src/ folder of the revision to compare with
#   COST_TASK=cuda2cuda/matmul   for `cost`: the task whose expert is judged
#   BENCH_SUITE=gpu-quick        for `bench`: the suite whose experts are judged (set empty
#                        to judge only BENCH_ARGS' --tasks)
#   BENCH_ARGS=          more scripts/bench_judge.py arguments (e.g. the KernelBench side:
#                        --kernelbench-eval kb/kb_eval_one.py --kernelbench-case PROBLEM KERNEL;
#                        or --threads 4 --spares 4: also 4 judgments at a time through one
#                        Judge, candidates per hour side by side; GAUNTLET_JUDGMENTS_PER_GPU=1
#                        gives the one-at-a-time lock to compare with)
#   KB_PROBLEMS=1        for `kb`: level 1 problems of .kb-kit/cases.tsv, space-separated
#                        (1: 4096² matmul, 23: softmax 4096×393216, 47: sum reduction); each
#                        is ours (cold, warm, feedback) then KernelBench's (cold, warm)
#   KB_REPEATS=3         for `kb`: warm judgments of each side (the median: the first warm one
#                        of ours may still wait for its spare workers' imports)
#   KB_ARGS=             more scripts/bench_judge.py arguments for `kb` (e.g. --time-cap 2)
#   KB_THEIRS=1          for `kb`: 0 judges ours only, no KernelBench side (L1/23's both sides
#                        take about 500 s: ours alone fits a call with other steps)
#   KBIMPORT_LEVELS=1,2,3  for `kbimport`: the levels (KBIMPORT_ARGS: more arguments, e.g.
#                        --ids 1,2 or --max-mb 16 --max-gflop 0.5, the defaults)
#   KBIMPORT_JOBS=14     for `kbimport`: problems imported at once (each probe one CPU thread)
#   KBCOMPAT_ARGS=       for `kbcompat`: more scripts/kb_compat_evidence.py arguments (--cases)
#   AUTOTUNE_TASKS=      for `autotune`: a glob narrowing the tasks (e.g. 'torch2triton/*')
#   AUTOTUNE_OPTIONS=calls=4  the agent's options (`autotune:calls=4`: judgments per task;
#                        judges=N: points judged at once, default GAUNTLET_JUDGMENTS_PER_GPU)
#   AUTOTUNE_TIME_CAP=2  seconds of timing per config in the final judgments
#   AUTOTUNE_RUN_DIR=runs/autotune-gpu  the run folder: resumed when it holds a run
#   SEARCH_TASK=torch2triton/causal_conv1d  for `search`: the task (its expert must have knobs)
#   SEARCH_CANDIDATES=200  the candidates judged, the seed included
#   SEARCH_INPUTS=fixed  evolve's inputs option: one draw of inputs for the whole search, so
#                        the judge's cached references serve every candidate (fresh: new ones
#                        for each, a reference worker each)
#   SEARCH_ARGS=         more scripts/bench_evolve.py arguments (e.g. --proposer copies;
#                        --judges 1: one judgment at a time, the figure to compare with)
#   DEVICE=cuda:0        the device of the autotune and search steps (DEVICE=sim:npu with an
#                        accelerator task tries the steps on a machine without a GPU)
#   PACK_FILES=7         more files than this under OUT_DIR at the end are packed into
#                        OUT_DIR/results.tar.gz (summary.txt stays): a device call brings back
#                        8 files at most; with two gpu_check.sh runs in one call, set 3
#   STEP_TIMEOUT=0       stop each pytest, evidence, cost, bench, ray, kb, kbimport, kbcompat,
#                        autotune or search step after this many seconds (0: never) and go on
#                        to the next; what a step printed so far is in its log under OUT_DIR (a
#                        `timeout` around the whole script would lose it: the logs are written
#                        as the step goes)
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
if ! python3 -c "import ray" 2>/dev/null && ls .ray-kit/*.whl >/dev/null 2>&1; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --target /tmp/gauntlet-ray .ray-kit/*.whl || exit 2
    export PYTHONPATH="/tmp/gauntlet-ray${PYTHONPATH:+:$PYTHONPATH}"
    export PATH="/tmp/gauntlet-ray/bin:$PATH"
fi
export PYTHONPATH="$PWD/src:$PWD${PYTHONPATH:+:$PYTHONPATH}"

# Judge workers run in sessions of their own; a step stopped by its timeout must not leave
# them on the GPU while the next step times kernels.
stop_workers() { pkill -f "gauntlet.zygote" 2>/dev/null; pkill -f "gauntlet.judge.worker" 2>/dev/null; pkill -f "gauntlet.judge.cuda_build" 2>/dev/null; true; }

# A step's command, stopped after STEP_TIMEOUT seconds (its workers with it).
# SIGINT first: pytest then prints its summary (failures, durations) and the scripts stop as
# on Ctrl-C, keeping what they wrote; SIGKILL 30 s later if a step ignores it
bounded() { timeout -s INT -k 30 "${STEP_TIMEOUT:-0}" "$@"; }

status=0
for step in "${steps[@]}"; do
    echo "== $step $(date -u +%H:%M:%S)" | tee -a "$out/summary.txt"
    case "$step" in
        env)
            { nvidia-smi; python3 -c "import torch, triton; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'triton', triton.__version__)"; } \
                > "$out/env.txt" 2>&1
            python3 -m gauntlet devices >> "$out/env.txt" 2>&1
            python3 -c "from gauntlet.judge.roofline import device_peaks; print(device_peaks('cuda:0').model_dump_json(indent=1))" \
                > "$out/peaks.json" 2>> "$out/env.txt" || status=1
            tail -n 3 "$out/env.txt" ;;
        h2d)
            # shellcheck disable=SC2086
            bounded python3 scripts/bench_h2d.py ${H2D_ARGS:-} > "$out/h2d.md" 2>&1 || status=1
            cat "$out/h2d.md" ;;
        pytest)
            # shellcheck disable=SC2086
            # -v names each test's outcome as it ends: a step stopped by STEP_TIMEOUT still
            # shows which tests failed and which were left running. --maxschedchunk 1 (with
            # -n): xdist hands each worker one test more as it finishes one, so the minute-long
            # tests, collected first (tests/conftest.py GPU_FIRST), spread over the workers
            bounded python3 -m pytest -m gpu --gpu -v -rfE --durations=25 -p no:cacheprovider \
                --maxschedchunk 1 ${PYTEST_ARGS:-} ${PYTEST_PATHS:-tests} 2>&1 \
                | tee "$out/pytest-gpu.log" | tail -n 25
            [ "${PIPESTATUS[0]}" -eq 0 ] || status=1 ;;
        suite)
            run_dir="${RUN_DIR:-runs/gpu}"
            if [ -f "$run_dir/run.json" ]; then
                how=(--resume "$run_dir" --parallel "${PARALLEL:-4}")
                read -r -a redo <<< "${REDO:-}"  # split on spaces, no filename globbing
                for pattern in "${redo[@]}"; do how+=(--redo "$pattern"); done
            else
                how=(--suite "${SUITE:-gpu-quick}" --seed 1
                     --time-cap "${TIME_CAP:-10}" --parallel "${PARALLEL:-4}" --out "$run_dir")
                read -r -a agents <<< "${AGENTS:-baseline expert}"
                for agent in "${agents[@]}"; do how+=(--agent "$agent"); done
                [ -n "${TASKS:-}" ] && how+=(--tasks "$TASKS")
                # shellcheck disable=SC2206
                how+=(${RUN_FLAGS:-})
            fi
            limit="${SUITE_TIMEOUT:-0}"
            timeout -k 10 "$limit" python3 -m gauntlet run "${how[@]}" > "$out/suite.txt" 2>&1
            code=$?
            stop_workers
            [ "$code" -eq 0 ] || { echo "suite step: exit $code (124: stopped by SUITE_TIMEOUT, resumable)" >> "$out/suite.txt"; status=1; }
            tail -n 60 "$out/suite.txt"
            tar -czf "$out/suite-run.tar.gz" "$run_dir" ;;
        evidence)
            # shellcheck disable=SC2086
            bounded python3 scripts/gpu_evidence.py --out "$out" ${EVIDENCE_ARGS:-} 2>&1 \
                | tee "$out/evidence.log" | tail -n 40
            [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
            stop_workers ;;
        cost)
            # The judge's cost per candidate, this tree against OLD_TREE (a src/ folder of the
            # revision before a change, carried along), alternating: scripts/judge_cost.py.
            # shellcheck disable=SC2086
            bounded python3 scripts/judge_cost.py --task "${COST_TASK:-cuda2cuda/matmul}" \
                --tree "new=$PWD/src" ${OLD_TREE:+--tree "old=$OLD_TREE"} --out "$out/cost.json" 2>&1 \
                | tee "$out/cost.log" | tail -n 30
            [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
            stop_workers ;;
        bench)
            suite="${BENCH_SUITE-gpu-quick}"
            # shellcheck disable=SC2086
            bounded python3 scripts/bench_judge.py --device cuda:0 ${suite:+--suite "$suite"} \
                --repeats 2 --out "$out/bench.md" ${BENCH_ARGS:-} 2>&1 | tee "$out/bench.log" | tail -n 30
            [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
            stop_workers
            { echo; bounded python3 scripts/bench_timed_calls.py --pairs 200; } 2>&1 \
                | tee -a "$out/bench.md" | tail -n 9
            [ "${PIPESTATUS[0]}" -eq 0 ] || status=1 ;;
        ray)
            bounded python3 -m pytest -m gpu --gpu -q -p no:cacheprovider -n 0 tests/engines/test_ray_gpu.py \
                > "$out/ray.log" 2>&1 || status=1
            gpus=$(nvidia-smi -L | wc -l)
            # One GPU first (CUDA_VISIBLE_DEVICES, so agents' tools see one too), then all.
            CUDA_VISIBLE_DEVICES=0 bounded python3 scripts/bench_engines.py --suite "${BENCH_SUITE:-gpu-quick}" \
                --agents expert autotune --engines ray --keep runs/bench-1gpu --out "$out/scaling.md" \
                >> "$out/ray.log" 2>&1 || status=1
            if [ "$gpus" -gt 1 ]; then
                bounded python3 scripts/bench_engines.py --suite "${BENCH_SUITE:-gpu-quick}" --agents expert autotune \
                    --engines ray --keep runs/bench-${gpus}gpu --out "$out/scaling.md" >> "$out/ray.log" 2>&1 || status=1
            fi
            tail -n 30 "$out/ray.log"
            stop_workers ;;
        kb)
            # Our side first, then KernelBench's, each row in kb.log as it is measured.
            if [ ! -f .kb-kit/cases.tsv ]; then
                echo "kb step: no .kb-kit/cases.tsv: run 'python scripts/kb_kit.py' and carry .kb-kit" \
                    | tee "$out/kb.log"; status=1; continue
            fi
            ours=(); theirs=()
            for number in ${KB_PROBLEMS:-1}; do
                # cases.tsv: number, task folder, submission folder, problem file, kernel file
                line=$(awk -F '\t' -v n="$number" '$1 == n' .kb-kit/cases.tsv)
                [ -n "$line" ] || { echo "kb step: problem $number is not in .kb-kit/cases.tsv" >> "$out/kb.log"; status=1; continue; }
                IFS=$'\t' read -r _ task submission problem kernel <<< "$line"
                ours+=(--case "$task" "$submission")
                [ "${KB_THEIRS:-1}" = 0 ] || theirs+=(--kernelbench-case "$problem" "$kernel")
            done
            [ ${#theirs[@]} -eq 0 ] || theirs=(--kernelbench-eval .kb-kit/kb_eval_one.py "${theirs[@]}")
            # shellcheck disable=SC2086
            bounded python3 scripts/bench_judge.py --device cuda:0 --repeats "${KB_REPEATS:-3}" \
                --out "$out/kb.md" --verdicts "$out/kb-verdicts.jsonl" "${ours[@]}" ${theirs[@]+"${theirs[@]}"} \
                ${KB_ARGS:-} 2>&1 | tee -a "$out/kb.log" | tail -n 30
            [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
            stop_workers ;;
        kbimport)
            if [ ! -d .kb-kit/kb/KernelBench/level3 ]; then
                echo "kbimport step: no .kb-kit/kb/KernelBench/: run 'python scripts/kb_kit.py' and carry .kb-kit" \
                    | tee "$out/kbimport.log"; status=1; continue
            fi
            merged=()  # earlier calls' records, brought back by hand
            for folder in .kb-kit/kbimport/*/; do [ -d "$folder" ] && merged+=("$folder"); done
            # No problem starts in the step's last 90 s: it would be cut off (it would go first
            # in the next call, as every problem started and unfinished does).
            stop=0; [ "${STEP_TIMEOUT:-0}" -gt 90 ] && stop=$((STEP_TIMEOUT - 90))
            # shellcheck disable=SC2086
            bounded python3 scripts/kb_import_coverage.py --kernelbench .kb-kit/kb \
                --kernelbench-commit "$(cat .kb-kit/kb/COMMIT)" --out "$out/kbimport" \
                --tasks-dir /tmp/gauntlet-kbimport-tasks --levels "${KBIMPORT_LEVELS:-1,2,3}" \
                --jobs "${KBIMPORT_JOBS:-14}" --baseline --stop-after-s "$stop" \
                ${merged[@]:+--merge "${merged[@]}"} ${KBIMPORT_ARGS:-} 2>&1 \
                | tee "$out/kbimport.log" | tail -n 40
            [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
            stop_workers ;;
        kbcompat)
            if [ ! -d .kb-kit/compat/tasks ]; then
                echo "kbcompat step: no .kb-kit/compat/tasks: run 'python scripts/kb_kit.py' and carry .kb-kit" \
                    | tee "$out/kbcompat.log"; status=1; continue
            fi
            merged=()
            for file in .kb-kit/kbcompat/*/kb_compat.json; do [ -f "$file" ] && merged+=("$file"); done
            # shellcheck disable=SC2086
            bounded python3 scripts/kb_compat_evidence.py --kernelbench .kb-kit/kb --device cuda:0 \
                --tasks .kb-kit/compat/tasks --work /tmp/gauntlet-kbcompat --out "$out/kbcompat" \
                --kernelbench-eval .kb-kit/kb_eval_one.py ${merged[@]:+--merge "${merged[@]}"} \
                ${KBCOMPAT_ARGS:-} 2>&1 | tee "$out/kbcompat.log" | tail -n 30
            [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
            stop_workers ;;
        autotune)
            run_dir="${AUTOTUNE_RUN_DIR:-runs/autotune-gpu}"
            # shellcheck disable=SC2086
            bounded python3 scripts/bench_autotune.py --tuned --device "${DEVICE:-cuda:0}" --others '' \
                --options "${AUTOTUNE_OPTIONS:-calls=4}" --time-cap "${AUTOTUNE_TIME_CAP:-2}" \
                --no-compile-reference --parallel "${PARALLEL:-4}" --run-dir "$run_dir" \
                ${AUTOTUNE_TASKS:+--tasks "$AUTOTUNE_TASKS"} --out "$out/autotune.md" \
                --json "$out/autotune.json" 2>&1 | tee "$out/autotune.log" | tail -n 30
            [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
            stop_workers
            [ -d "$run_dir" ] && tar -czf "$out/autotune-run.tar.gz" "$run_dir" ;;
        search)
            # shellcheck disable=SC2086
            bounded python3 scripts/bench_evolve.py --task "${SEARCH_TASK:-torch2triton/causal_conv1d}" \
                --device "${DEVICE:-cuda:0}" --candidates "${SEARCH_CANDIDATES:-200}" \
                --inputs "${SEARCH_INPUTS:-fixed}" --out "$out/search.md" --json "$out/search.json" \
                ${SEARCH_ARGS:-} 2>&1 | tee "$out/search.log" | tail -n 30
            [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
            stop_workers ;;
        *)
            echo "gpu_check: unknown step '$step'" >&2; status=2 ;;
    esac
done
# A device call brings back at most 8 files (and none deeper than two folders): past
# PACK_FILES, everything but summary.txt goes into one results.tar.gz, so nothing is dropped.
files=$(find "$out" -type f ! -name summary.txt | wc -l)
if [ "$files" -gt "${PACK_FILES:-7}" ]; then
    if (cd "$out" && find . -type f ! -name summary.txt ! -name results.tar.gz -print0 \
            | tar --null -czf results.tar.gz -T - --remove-files); then
        find "$out" -mindepth 1 -type d -empty -delete
        echo "gpu_check: $files files packed into $out/results.tar.gz" | tee -a "$out/summary.txt"
    fi
fi
echo "gpu_check: exit $status $(date -u +%H:%M:%S)" | tee -a "$out/summary.txt"
exit $status
