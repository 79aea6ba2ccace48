#!/bin/bash
# Run-directory and flag faults (issue 14), each against a small finished run: prints
# the exit code and the first line of the error. Needs bin/gradcscg (make build).
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
rm -rf $W
