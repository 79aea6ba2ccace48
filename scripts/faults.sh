#!/bin/bash
# Run-directory and flag faults (issue 14) and hostile inputs (issue 72), each against a
# small finished run: prints the exit code and the first line of the error (every case
# but the last few ends in one error line; those print what shows they hold). Needs
# bin/gradcscg (make build).
B=${B:-$(cd "$(dirname "$0")/.." && pwd)/bin/gradcscg}
W=$(mktemp -d)
cd $W
small="--env aliased --size ci --set data.steps=800 --set data.episodes=2 --set joint.iters=20"
$B train $small --run fin --quiet >/dev/null 2>&1 || { echo "setup failed"; exit 1; }
$B train $small --seed 2 --run fin2 --quiet >/dev/null 2>&1
t() { # name, setup, command...
  local name=$1 setup=$2; shift 2
  rm -rf case; cp -r fin case; eval "$setup"
  out=$("$@" 2>&1); rc=$?
  printf '%-55s exit %d  %s\n' "$name" $rc "$(echo "$out" | grep -v '^run directory' | head -1 | cut -c1-150)"
}
t "rm chmm.model; train --run"            "rm case/chmm.model"              $B train $small --run case --quiet
t "truncate vqvae.ckpt; train --run"      "truncate -s 1000 case/vqvae.ckpt" $B train $small --run case --quiet
t "rm config.json; train --env corridors" "rm case/config.json"             $B train --env corridors --size ci --run case --quiet
t "rm config.json; plan --run"            "rm case/config.json"             $B plan --run case --pairs 5
t "edit config seed; train --seed 2"      "sed -i 's/\"seed\": 1/\"seed\": 2/' case/config.json" $B train $small --seed 2 --run case --quiet
t "chmm.model from seed 2; plan --run"    "cp fin2/chmm.model case/"        $B plan --run case --pairs 5
t "state.gob byte flip"                   "printf 'X' | dd of=case/state.gob bs=1 seek=200 conv=notrunc 2>/dev/null" $B train $small --run case --quiet
t "truncate vqvae.ckpt; train --reevaluate" "truncate -s 5000 case/vqvae.ckpt" $B train --run case --reevaluate --quiet
t "second process while locked"           "exec 9>case/.lock; flock -n 9" $B train $small --run case --quiet
t "symbolic --set steps=-5"               ":" $B symbolic --set steps=-5
t "symbolic --set lr=NaN"                 ":" $B symbolic --set lr=NaN
t "train --set joint.iters=-9"            ":" $B train --set joint.iters=-9
t "symbolic --set clones_per_class=5000"  ":" $B symbolic --set clones_per_class=5000
t "symbolic --set episodes=1000 --set steps=10000000" ":" $B symbolic --set episodes=1000 --set steps=10000000
t "train --set joint.clones=2000 --env two_rooms" ":" $B train --set joint.clones=2000 --env two_rooms
t "plan --demo 1000000000"                ":" $B plan --run fin --demo 1000000000
t "1x1 room: symbolic F1"                 "printf '3\n' > one.txt" sh -c "$B symbolic --layout one.txt --quiet | grep 'Viterbi map'"

# Issue 72: special files, foreign files, unchecked data, sizes, exit codes.
T="timeout 120"
ln -s /dev/zero zero; ln -s /dev/urandom urandom; mkfifo fifo
t "config.json -> /dev/zero; train --run"       "rm case/config.json; ln -s /dev/zero case/config.json" $T $B train $small --run case --quiet
t "state.gob a named pipe; train --run"         "rm case/state.gob; mkfifo case/state.gob" $T $B train $small --run case --quiet
t "report.json -> /dev/urandom; plan --run"     "rm case/report.json; ln -s /dev/urandom case/report.json" $T $B plan --run case --pairs 5
t "vqvae.ckpt a named pipe; train --reevaluate" "rm case/vqvae.ckpt; mkfifo case/vqvae.ckpt" $T $B train --run case --reevaluate --quiet
t "--config -> /dev/zero"                       ":" $T $B train --config zero --run c1 --quiet
t "--config a named pipe"                       ":" $T $B train --config fifo --run c2 --quiet
t "--layout -> /dev/urandom"                    ":" $T $B symbolic --layout urandom --quiet
t "--model a named pipe; plan"                  ":" $T $B plan --model fifo --env aliased
data() { # a copy of the repository's data directory in $W/$1
  rm -rf $1; mkdir -p $1/mnist; cp "$(dirname "$B")"/../data/mnist/* $1/mnist/
}
t "MNIST train images -> /dev/zero"             "data dz; rm dz/mnist/train-images-idx3-ubyte.gz; ln -s /dev/zero dz/mnist/train-images-idx3-ubyte.gz" \
  env GRADCSCG_DATA=$W/dz $T $B train $small --run c3 --quiet
t "state.gob deleted, seed 2's warm-up copied in" "rm case/state.gob; cp fin2/warmup-*.ckpt case/warmup.ckpt" $T $B train $small --run case --quiet
t "vqvae.side 4096 in --config"                 "sed 's/\"side\": 28/\"side\": 4096/' fin/config.json > side.json" $T $B train --config side.json --run c4 --quiet
idx() { # idx MAGIC N [ROWS COLS]: an IDX header, big-endian
  printf "\\x00\\x00\\x08\\x$1"; for v in "${@:2}"; do printf "\\x$(printf %02x $((v>>24&255)))\\x$(printf %02x $((v>>16&255)))\\x$(printf %02x $((v>>8&255)))\\x$(printf %02x $((v&255)))"; done
}
img32() { # 32×32 images of classes 0-9 (checksums regenerated) in $W/$1
  rm -rf $1; mkdir -p $1/mnist; cd $1/mnist
  for s in train test; do
    { idx 03 200 32 32; head -c $((200*1024)) /dev/urandom; } | gzip -n > $s-images-idx3-ubyte.gz
    { idx 01 200; for i in $(seq 0 199); do printf "\\x0$((i%10))"; done; } | gzip -n > $s-labels-idx1-ubyte.gz
  done
  sha256sum *.gz > SHA256SUMS; cd $W
}
t "32×32 images in data/mnist; train"           "img32 d32" env GRADCSCG_DATA=$W/d32 $T $B train $small --run c5 --quiet
t "32×32 images in data/mnist; vqvae"           "img32 d32" env GRADCSCG_DATA=$W/d32 $T $B vqvae --env aliased --set steps=2 --out c6 --quiet
t "figures --runs /nonexistent"                 ":" $T $B figures --runs $W/nonexistent --out figs --symbolic=false --quiet
t "plan --pairs/--localize/--demo 1000000"      ":" $T $B plan --run fin --pairs 1000000 --localize 1000000 --demo 1000000 --quiet
t "damaged raw IDX beside the .gz: reads the .gz" "data dbad; gunzip -k dbad/mnist/train-images-idx3-ubyte.gz; truncate -s 5000 dbad/mnist/train-images-idx3-ubyte" \
  sh -c "GRADCSCG_DATA=$W/dbad $T $B train $small --run c8 --quiet | grep 'map verdict' | cut -c1-60"
t "user's .notes.tmp-1 kept by the lock"        "echo mine > case/.notes.tmp-1" sh -c "$B train $small --run case --quiet >/dev/null && ls case/.notes.tmp-1"
t "train --from a source with no lock: none made" "rm -f fin/.lock" sh -c "$B train --from fin --run br --set final.iters=50 --quiet >/dev/null && ls -a fin | grep -c '^.lock' ; true"
rm -rf $W
