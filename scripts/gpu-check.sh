#!/usr/bin/env bash
# The prepared GPU check: from binaries built on a machine with Go (make gpu-build puts them in
# bin/gpu), run on one backend — by default GOMLX_BACKEND=xla:cuda through JAX's CUDA PJRT plugin —
#   1. the joint-iteration benchmarks (pkg/pipeline, two_rooms conv: 256 of 1,024 frames with
#      gradients, and all frames),
#   2. every test of the packages with graphs (pkg/hmmgraph, pkg/vqvae; pkg/pipeline's graph tests),
#   3. a conv `gradcscg train --env room --seed 1` and `--env two_rooms --seed 1`,
# and write ONE report, OUTDIR/gpu-check.md, with the runs' report.json files, the logs and the
# raw benchmark output beside it. It needs no Go toolchain and no network; everything is bounded
# by a wall-clock budget, and what did not finish in it is reported as such.
#
#   bash scripts/gpu-check.sh OUTDIR                   # on the GPU machine (or OUT=DIR)
#   GOMLX_BACKEND=go GPU_CHECK_SIZE=ci bash scripts/gpu-check.sh OUTDIR   # the same on a CPU, small
#
# Settings (environment):
#   GOMLX_BACKEND        backend of every step (default xla:cuda; xla gets tf32=false from the binaries)
#   GPU_CHECK_SIZE       full (the paper's data size, default), ci or smoke: train's --size; ci and
#                        smoke also shorten the benchmarks
#   GPU_CHECK_BUDGET_S   wall seconds for everything (default 540: one 10-minute command with room
#                        to unpack the binaries and write the report)
#   GPU_CHECK_BIN        folder of gradcscg, hmmgraph.test, vqvae.test, pipeline.test, each plain or
#                        gzipped (.gz) (default bin/gpu)
#   GPU_CHECK_PIPELINE_RUN  the -test.run pattern for pkg/pipeline (default: its graph tests)
# For xla:<plugin> without pjrt_c_api_<plugin>_plugin.so on PJRT_PLUGIN_LIBRARY_PATH, the plugin
# that python3's JAX installed (jax_plugins/xla_<plugin>*/xla_<plugin>_plugin.so) is linked under
# that name in a temporary folder, and the nvidia/*/lib folders of the same Python are appended to
# LD_LIBRARY_PATH.
set -uo pipefail

out=${1:-${OUT:-}}
if [[ -z $out || $out == -h || $out == --help ]]; then
	echo "usage: bash scripts/gpu-check.sh OUTDIR   (or OUT=DIR; settings in the script's header)" >&2
	exit 2
fi
repo=$(cd "$(dirname "$0")/.." && pwd)
bin=${GPU_CHECK_BIN:-$repo/bin/gpu}
size=${GPU_CHECK_SIZE:-full}
budget=${GPU_CHECK_BUDGET_S:-540}
export GOMLX_BACKEND=${GOMLX_BACKEND:-xla:cuda}
pipelineRun=${GPU_CHECK_PIPELINE_RUN:-'^(TestJoint|TestStep|TestXLA|TestCISizedAliasedRecoversMap$|TestBackendNote|TestResumeMatchesUninterrupted)'}
case $size in
full | ci | smoke) ;;
*)
	echo "GPU_CHECK_SIZE=$size: want full, ci or smoke" >&2
	exit 2
	;;
esac
if ! [[ $budget =~ ^[0-9]+$ ]] || ((budget < 60)); then
	echo "GPU_CHECK_BUDGET_S=$budget: want whole seconds, at least 60" >&2
	exit 2
fi
mkdir -p "$out" || exit 2
out=$(cd "$out" && pwd)
if [[ -e $out/gpu-check.md ]]; then
	echo "$out/gpu-check.md exists: give an empty or new folder" >&2
	exit 2
fi
mkdir -p "$out/logs" "$out/tests" "$out/runs"
work=$(mktemp -d "${TMPDIR:-/tmp}/gpu-check.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
start=$(date +%s)
left() { echo $((budget - ($(date +%s) - start))); }
note() { echo "$(date -u +%H:%M:%S) $*" | tee -a "$out/logs/steps.log" >&2; }

# Binaries: plain or gzipped, copied to the work folder.
mkdir -p "$work/bin"
for b in gradcscg hmmgraph.test vqvae.test pipeline.test; do
	if [[ -x $bin/$b ]]; then
		cp "$bin/$b" "$work/bin/$b"
	elif [[ -f $bin/$b.gz ]]; then
		gzip -dc "$bin/$b.gz" >"$work/bin/$b" && chmod +x "$work/bin/$b"
	else
		echo "$bin/$b (or $b.gz) is missing: run make gpu-build on a machine with Go first" >&2
		exit 2
	fi
done

# Environment and plugin.
{
	echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
	echo "host: $(uname -srm), $(nproc) CPUs"
	echo "GOMLX_BACKEND: $GOMLX_BACKEND"
	echo "size: $size, budget: ${budget} s"
	echo "binaries built from: $(cat "$bin/commit" 2>/dev/null || echo unknown)"
	command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | sed 's/^/gpu: /'
} >"$out/logs/environment.txt" 2>&1
if [[ $GOMLX_BACKEND =~ ^(xla|stablehlo|hlo|shlo):([^,]*) ]]; then
	plugin=${BASH_REMATCH[2]:-cuda}
	have=""
	IFS=: read -ra dirs <<<"${PJRT_PLUGIN_LIBRARY_PATH:-}"
	for d in "${dirs[@]}"; do
		[[ -n $d && -e $d/pjrt_c_api_${plugin}_plugin.so ]] && have=$d/pjrt_c_api_${plugin}_plugin.so
	done
	if [[ -z $have ]]; then
		so=$(python3 - "$plugin" <<'EOF' 2>/dev/null
import glob, os, sys
import jax_plugins
name = sys.argv[1]
for p in jax_plugins.__path__:
    for f in sorted(glob.glob(os.path.join(p, "xla_%s*" % name, "xla_%s_plugin.so" % name))):
        print(f)
        raise SystemExit
EOF
		)
		if [[ -z $so ]]; then
			echo "GOMLX_BACKEND=$GOMLX_BACKEND: no pjrt_c_api_${plugin}_plugin.so on PJRT_PLUGIN_LIBRARY_PATH and no JAX plugin xla_${plugin}_plugin.so under python3's jax_plugins" | tee "$out/gpu-check.md" >&2
			exit 1
		fi
		mkdir -p "$work/pjrt"
		ln -s "$so" "$work/pjrt/pjrt_c_api_${plugin}_plugin.so"
		export PJRT_PLUGIN_LIBRARY_PATH=$work/pjrt${PJRT_PLUGIN_LIBRARY_PATH:+:$PJRT_PLUGIN_LIBRARY_PATH}
		have=$so
	fi
	nv=$(python3 -c 'import glob, os, nvidia; print(":".join(sorted(glob.glob(os.path.join(list(nvidia.__path__)[0], "*", "lib")))))' 2>/dev/null)
	[[ -n $nv ]] && export LD_LIBRARY_PATH=${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$nv
	{
		echo "plugin: $have"
		python3 -c 'import importlib.metadata as m
for p in ("jax", "jaxlib", "jax-cuda13-pjrt", "jax-cuda12-pjrt"):
    try: print("python package %s %s" % (p, m.version(p)))
    except Exception: pass' 2>/dev/null
	} >>"$out/logs/environment.txt"
fi

# run NAME SECONDS DIR CMD...: runs CMD in DIR with a time limit (SIGINT, then KILL), its output in
# logs/NAME.log, its exit status in logs/NAME.rc and its wall seconds in logs/NAME.s.
run() {
	local name=$1 limit=$2 dir=$3 t0 rc ms
	shift 3
	if ((limit < 5)); then
		note "$name: skipped, the budget is spent"
		echo skipped >"$out/logs/$name.rc"
		return
	fi
	note "$name: start (limit ${limit} s)"
	t0=$(date +%s%N)
	(cd "$dir" && exec timeout -s INT -k 20 "$limit" "$@") >"$out/logs/$name.log" 2>&1
	rc=$?
	echo "$rc" >"$out/logs/$name.rc"
	ms=$((($(date +%s%N) - t0) / 1000000))
	printf '%d.%03d\n' $((ms / 1000)) $((ms % 1000)) >"$out/logs/$name.s"
	note "$name: exit $rc after $((ms / 1000)) s"
}

# 1. Benchmarks, alone on the machine.
iters=20
[[ $size != full ]] && iters=3
lim=$(($(left) / 6))
run bench-subset "$lim" "$repo/pkg/pipeline" "$work/bin/pipeline.test" -test.run '^$' \
	-test.bench 'JointStepTwoRoomsConvSubset$' -test.benchtime "${iters}x" -test.timeout "${lim}s"
lim=$(($(left) / 6))
run bench-full "$lim" "$repo/pkg/pipeline" "$work/bin/pipeline.test" -test.run '^$' \
	-test.bench 'JointStepTwoRoomsConvFull$' -test.benchtime "${iters}x" -test.timeout "${lim}s"

# 2 and 3. The two training runs one after the other, the test binaries beside them.
sizeFlag=()
[[ $size != full ]] && sizeFlag=(--size "$size")
trains() {
	local env
	for env in room two_rooms; do
		run "train-$env" "$(($(left) - 15))" "$repo" "$work/bin/gradcscg" train --env "$env" --seed 1 \
			"${sizeFlag[@]}" --run "$work/runs/$env" --json "$out/runs/${env}_seed1.json"
		cp "$work/runs/$env/config.json" "$out/runs/${env}_seed1.config.json" 2>/dev/null
	done
}
tests() {
	local p
	for p in hmmgraph vqvae pipeline; do
		local filter=()
		[[ $p == pipeline ]] && filter=(-test.run "$pipelineRun")
		local lim=$(($(left) - 20))
		run "test-$p" "$lim" "$repo/pkg/$p" "$work/bin/$p.test" -test.v -test.count=1 \
			-test.timeout "$((lim > 30 ? lim - 10 : 20))s" "${filter[@]}"
		mv "$out/logs/test-$p.log" "$out/tests/$p.log" 2>/dev/null
	done
}
trains &
trainsPID=$!
tests &
testsPID=$!
wait "$trainsPID" "$testsPID"

# The report.
python3 - "$out" "$size" "$budget" "$(($(date +%s) - start))" <<'EOF'
import glob, json, os, re, sys

out, size, budget, took = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
def read(path, default=""):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return default
def status(name):
    rc = read(os.path.join(out, "logs", name + ".rc")).strip() or "not run"
    sec = read(os.path.join(out, "logs", name + ".s")).strip()
    if rc == "0":
        word = "ok"
    elif rc in ("124", "130"):
        word = "stopped at its time limit"
    elif rc == "skipped":
        word = "skipped (budget spent)"
    else:
        word = "exit " + rc
    return word, (float(sec) if sec else None)

lines = ["# GPU check", "", "```", read(os.path.join(out, "logs", "environment.txt")).strip(), "```", ""]
lines += ["Whole check: %d s of a %d s budget; size %s." % (took, budget, size), ""]

lines += ["## Joint-iteration benchmarks (pkg/pipeline, two_rooms conv, 4 × 256 frames)", ""]
lines += ["| benchmark | status | s per iteration | iterations per second | CPU s per iteration |", "|---|---|---|---|---|"]
for name in ("bench-subset", "bench-full"):
    word, _ = status(name)
    log = read(os.path.join(out, "logs", name + ".log"))
    m = re.search(r"^(BenchmarkJointStep\S+)\s+(\d+)\s+(\d+) ns/op(.*)$", log, re.M)
    if m:
        ns = float(m.group(3))
        cpu = re.search(r"([\d.]+) cpu-s/iter", m.group(4))
        lines.append("| %s | %s | %.4f | %.2f | %s |" % (m.group(1), word, ns / 1e9, 1e9 / ns, cpu.group(1) if cpu else "-"))
    else:
        lines.append("| %s | %s (no result; logs/%s.log) | - | - | - |" % (name, word, name))
lines.append("")

lines += ["## Tests", ""]
lines += ["| package | status | passed | failed | skipped | seconds |", "|---|---|---|---|---|---|"]
failures = []
for p in ("hmmgraph", "vqvae", "pipeline"):
    word, sec = status("test-" + p)
    log = read(os.path.join(out, "tests", p + ".log"))
    res = re.findall(r"^--- (PASS|FAIL|SKIP): (\S+)", log, re.M)
    n = {k: sum(1 for r, _ in res if r == k) for k in ("PASS", "FAIL", "SKIP")}
    failures += ["%s: %s" % (p, t) for r, t in res if r == "FAIL"]
    m = re.search(r"panic: test timed out after \S+\s+running tests:\s+((?:\s+\S+ \(.*\)\n?)+)", log)
    if m:
        failures.append("%s: timed out while running %s" % (p, " ".join(x.split()[0] for x in m.group(1).strip().splitlines())))
    lines.append("| %s | %s | %d | %d | %d | %s |" % (p, word, n["PASS"], n["FAIL"], n["SKIP"], "%.0f" % sec if sec else "-"))
lines.append("")
if failures:
    lines += ["Failed or unfinished (logs in tests/):", ""] + ["- " + f for f in failures] + [""]

lines += ["## Training runs (seed 1)", ""]
lines += ["| env | status | backend | recall | F1 | H(token given place) | warm-up s | joint s | final s | total s | joint iterations |", "|---|---|---|---|---|---|---|---|---|---|---|"]
for env in ("room", "two_rooms"):
    word, sec = status("train-" + env)
    try:
        r = json.load(open(os.path.join(out, "runs", env + "_seed1.json")))
    except (OSError, ValueError):
        r = None
    if r is None:
        lines.append("| %s | %s (no report; logs/train-%s.log) | | | | | | | | %s | |" % (env, word, env, "%.0f" % sec if sec else "-"))
        continue
    vm, s = r.get("viterbi_map") or {}, r.get("seconds") or {}
    joint = ((r.get("training") or {}).get("joint") or {}).get("iters", "-")
    f = lambda k: "%.1f" % s[k] if k in s else "-"
    num = lambda x: "%.3f" % x if isinstance(x, (int, float)) else "-"
    lines.append("| %s | %s | %s | %s | %s | %.3f | %s | %s | %s | %s | %s |" % (
        env, word, r.get("backend", "-"), num(vm.get("recall")), num(vm.get("f1")),
        r.get("h_token_given_place", float("nan")), f("warmup"), f("joint"), f("final"), f("total"), joint))
lines += ["", "Phase seconds are the runs' own (report.json `seconds`); the full reports are in runs/."]
with open(os.path.join(out, "gpu-check.md"), "w") as fh:
    fh.write("\n".join(lines) + "\n")
print("\n".join(lines))
EOF
