#!/usr/bin/env bash
# Sets up everything gradcscg needs beyond the Go toolchain: the Jupyter tools and the
# GoNB Go kernel for the notebooks under notebooks/, Fashion-MNIST, goimports, and a warm
# Go build cache. Safe to run repeatedly: every step checks first and skips what is done.
#
# Usage: scripts/setup.sh [--no-ui] [--no-apt] [--quickstart]
#   --no-ui       skip the classic Notebook UI (jupyter-notebook); headless execution
#                 (nbconvert) is still installed
#   --no-apt      install no Debian packages (they must be present already)
#   --quickstart  finally execute notebooks/00_quickstart.ipynb headlessly at CI size
#                 (go test ./notebooks -run TestNotebooks/00_quickstart)
#
# Needs: Go (any 1.21+; GOTOOLCHAIN fetches go1.27.3), Debian/Ubuntu with apt-get and root
# (or sudo) for the system packages. Works offline once everything is installed.
set -euo pipefail

cd "$(dirname "$0")/.."
repo=$(pwd)

# The toolchain and the SIMD kernels of GoMLX's go backend (as the Makefile).
export GOTOOLCHAIN=go1.27.3 GOEXPERIMENT=simd
# An unbounded worker pool: with the go backend's default pool a While loop whose
# body runs a matmul can deadlock (README, "Backends and GPUs").
export GOMLX_BACKEND="${GOMLX_BACKEND:-go:parallelism=-1}"

GOIMPORTS_VERSION=v0.52.0 # golang.org/x/tools; GoNB runs goimports on every Go cell

ui=1 apt=1 quickstart=0
for arg in "$@"; do
	case "$arg" in
	--no-ui) ui=0 ;;
	--no-apt) apt=0 ;;
	--quickstart) quickstart=1 ;;
	-h | --help)
		sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'
		exit 0
		;;
	*)
		echo "setup: unknown argument $arg (try --help)" >&2
		exit 2
		;;
	esac
done

step() { printf '\n==> %s\n' "$*"; }
fail() {
	echo "setup: FAILED: $*" >&2
	exit 1
}

step "Go toolchain"
command -v go >/dev/null 2>&1 || fail "go not found on PATH: install Go (https://go.dev/dl/) and rerun"
go version || fail "go version: could not get toolchain $GOTOOLCHAIN (the module proxy serves it; offline? set GOTOOLCHAIN=local with Go 1.27 installed)"
gobin=$(go env GOBIN)
[ -n "$gobin" ] || gobin="$(go env GOPATH)/bin"
godir=$(dirname "$(command -v go)")

# --- Debian packages -----------------------------------------------------------------
sudo=""
if [ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null 2>&1; then
	sudo=sudo
fi
installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'; }

pkgs=(jupyter-nbconvert jupyter-client)
[ "$ui" = 1 ] && pkgs+=(jupyter-notebook)
if [ "$apt" = 1 ]; then
	step "Debian packages: ${pkgs[*]}"
	missing=()
	for p in "${pkgs[@]}"; do installed "$p" || missing+=("$p"); done
	if [ ${#missing[@]} -eq 0 ]; then
		echo "all installed"
	else
		command -v apt-get >/dev/null 2>&1 || fail "apt-get not found: install Jupyter (nbconvert, jupyter_client, optionally notebook 6) with your package manager or pip, then rerun with --no-apt"
		[ "$(id -u)" -eq 0 ] || [ -n "$sudo" ] || fail "need root (or sudo) for apt-get install ${missing[*]}"
		$sudo apt-get update || fail "apt-get update"
		DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y --no-install-recommends "${missing[@]}" ||
			fail "apt-get install ${missing[*]}"
	fi

	step "Fashion-MNIST (scripts/install-fashion.sh)"
	bash scripts/install-fashion.sh || fail "scripts/install-fashion.sh"
fi
# Debian's jupyter scripts run on /usr/bin/python3; call them by name, never via the
# first python3 on PATH (it may be another interpreter without Jupyter).
command -v jupyter >/dev/null 2>&1 || fail "jupyter not found on PATH (Debian: apt-get install jupyter-nbconvert jupyter-client)"
jupyter nbconvert --version >/dev/null 2>&1 || fail "jupyter nbconvert does not run (Debian: apt-get install jupyter-nbconvert)"

# --- Go tools ----------------------------------------------------------------------
step "goimports $GOIMPORTS_VERSION"
if [ -x "$gobin/goimports" ] && go version -m "$gobin/goimports" 2>/dev/null | grep -q "golang.org/x/tools[[:space:]]*$GOIMPORTS_VERSION"; then
	echo "installed ($gobin/goimports)"
else
	go install "golang.org/x/tools/cmd/goimports@$GOIMPORTS_VERSION" || fail "go install golang.org/x/tools/cmd/goimports@$GOIMPORTS_VERSION"
fi

# gonb's version is pinned by go.mod's tool dependency (go get -tool ...@v0.11.5).
gonb_version=$(go list -m -f '{{.Version}}' github.com/janpfeifer/gonb) || fail "go.mod lacks the tool dependency github.com/janpfeifer/gonb"
step "gonb $gonb_version (go.mod tool dependency)"
go install github.com/janpfeifer/gonb || fail "go install github.com/janpfeifer/gonb"

# --- Jupyter kernel ------------------------------------------------------------------
step "GoNB Jupyter kernel"
# gopls (code completion only) is optional: --force_deps installs without it. gonb
# looks for goimports on PATH, hence $gobin first.
PATH="$gobin:$PATH" "$gobin/gonb" --install --force_deps || fail "gonb --install --force_deps"
echo "(gonb's note above is about gopls, which only gives code completion: goimports is in $gobin)"
kernel_dir=$(jupyter kernelspec list --json 2>/dev/null |
	/usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["kernelspecs"].get("gonb",{}).get("resource_dir",""))') ||
	fail "jupyter kernelspec list --json"
[ -n "$kernel_dir" ] && [ -f "$kernel_dir/kernel.json" ] || fail "gonb --install wrote no kernel Jupyter can see (jupyter kernelspec list)"
# The kernelspec's env starts empty. GoNB compiles every cell with the go on its PATH,
# so it needs the same toolchain, experiment and backend as the Makefile, and goimports.
# Jupyter expands ${PATH} from its own environment.
GONB_KERNEL_JSON="$kernel_dir/kernel.json" GONB_PATH="$godir:$gobin:\${PATH}" /usr/bin/python3 - <<'EOF' || fail "patching $kernel_dir/kernel.json"
import json, os
path = os.environ["GONB_KERNEL_JSON"]
with open(path) as f:
    spec = json.load(f)
spec.setdefault("env", {}).update({
    "GOTOOLCHAIN": os.environ["GOTOOLCHAIN"],
    "GOEXPERIMENT": os.environ["GOEXPERIMENT"],
    "GOMLX_BACKEND": os.environ["GOMLX_BACKEND"],
    "PATH": os.environ["GONB_PATH"],
})
tmp = path + ".tmp"
with open(tmp, "w") as f:
    json.dump(spec, f, indent=1)
    f.write("\n")
os.replace(tmp, path)
EOF
echo "kernel: $kernel_dir/kernel.json (env: GOTOOLCHAIN, GOEXPERIMENT, GOMLX_BACKEND, PATH with $godir and $gobin)"

# --- Build cache ---------------------------------------------------------------------
# GoNB builds each cell with the same GOTOOLCHAIN/GOEXPERIMENT, so it shares this cache:
# the first GoMLX cell then takes seconds instead of minutes.
step "warm the Go build cache (go build ./...)"
go build ./... || fail "go build ./..."

if [ "$quickstart" = 1 ]; then
	step "execute notebooks/00_quickstart.ipynb (CI size)"
	GRADCSCG_NB_SIZE=ci GRADCSCG_NB_OUT="$repo/notebooks/out" go test -count=1 -timeout 20m -v -run 'TestNotebooks/00_quickstart' ./notebooks/ ||
		fail "notebooks/00_quickstart.ipynb (executed copy and HTML under notebooks/out/)"
	echo "executed notebook: $repo/notebooks/out/00_quickstart.ipynb (and .html); its map: $repo/notebooks/out/runs/"
fi

step "done"
echo "Notebook test: go test ./notebooks/ (GRADCSCG_NB_OUT=DIR keeps the executed notebooks and their HTML)"
[ "$ui" = 1 ] && echo "Notebook UI: jupyter notebook --no-browser --ip=127.0.0.1 --port=8888 --allow-root --notebook-dir=notebooks"
exit 0
