#!/usr/bin/env bash
# Installs Fashion-MNIST (Debian's dataset-fashion-mnist package) if it is not
# installed yet; dataset.Load("fashion", ...) reads its IDX files from
# /usr/share/datasets/fashion-mnist. Safe to run repeatedly.
set -euo pipefail

pkg=dataset-fashion-mnist
dir=/usr/share/datasets/fashion-mnist

if dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' && [ -d "$dir" ]; then
	echo "$pkg is installed ($dir)"
	exit 0
fi

if ! command -v apt-get >/dev/null 2>&1; then
	echo "install-fashion: apt-get not found: this is not a Debian-like system." >&2
	echo "Download Fashion-MNIST's four IDX files (train-images-idx3-ubyte.gz, train-labels-idx1-ubyte.gz," >&2
	echo "t10k-images-idx3-ubyte.gz, t10k-labels-idx1-ubyte.gz) into a directory and pass that directory" >&2
	echo "to dataset.Load in place of \"fashion\"." >&2
	exit 1
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then
	if ! command -v sudo >/dev/null 2>&1; then
		echo "install-fashion: need root (or sudo) to run apt-get install $pkg" >&2
		exit 1
	fi
	sudo=sudo
fi

# Refresh the package lists only if apt does not know the package yet.
if ! apt-cache show "$pkg" >/dev/null 2>&1; then
	$sudo apt-get update
fi
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y --no-install-recommends "$pkg"

for f in train-images-idx3-ubyte.gz train-labels-idx1-ubyte.gz t10k-images-idx3-ubyte.gz t10k-labels-idx1-ubyte.gz; do
	if [ ! -f "$dir/$f" ]; then
		echo "install-fashion: $pkg is installed but $dir/$f is missing (dpkg -L $pkg lists its files)" >&2
		exit 1
	fi
done
echo "$pkg installed ($dir)"
