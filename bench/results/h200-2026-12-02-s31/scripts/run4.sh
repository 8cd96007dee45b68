#!/usr/bin/env bash
# Run 4 (session 31): f6 = the lists skipped after a wide step, with stage 2 reading the slot
# flag itself (no record flag, no reload in stage 1 after the scan) and quiet steps carrying no
# flags. The five GPU test binaries; A/B of base (v13), f6 and noskip (f6 with
# --no-skip-lists), three rounds; alternating rows (noskip, f6); memcheck over the five test
# binaries; the whole benchmark grid on f6; a 60 s soak.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run4.tar.gz -C $W .' EXIT
C=$PWD/.carry; cd $C/b
unxz() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[1][:-3],'wb'))" "$1" && rm "$1"; }
for f in tests/*.xz *.xz; do unxz $f; done; chmod +x tests/* *-bench sonic-bench sonic-soak run.sh
printf '#!/bin/sh\nexec "$(dirname "$0")/sonic-bench" --no-skip-lists "$@"\n' > noskip-bench; chmod +x noskip-bench
md5sum *-bench sonic-bench sonic-soak tests/* > $W/md5.txt
timeout 240 bash ./run.sh > $W/tests.log 2>&1; echo "tests rc $? $(( $(date +%s) - START ))s"; tail -1 $W/tests.log; grep -E "test result|FAILED|panicked|mismatch|per step" $W/tests.log | head -20
CELLS="flat_topp095:f32:128256:1,flat_topp095:f32:128256:64,flat_topp095:f32:128256:256,flat_topp095:f32:151936:1,flat_topp095:f32:151936:64,flat_topp095:f32:151936:256,flat_full:f32:128256:1,flat_full:f32:128256:64,flat_full:f32:128256:256,flat_full:f32:151936:64,flat_full:f32:151936:256,peaked_topp095:f32:128256:64,peaked_topp095:f32:128256:256,heterogeneous:f32:128256:64,heterogeneous:f32:128256:256,heterogeneous:bf16:128256:256,random_full:f32:128256:1,random_full:f32:128256:256,topk50_topp09_t07:f32:128256:1,topk50_topp09_t07:f32:128256:256,greedy:f32:128256:64"
AB_SECONDS=60 timeout 200 bash ./run.sh ab $W/ab "$CELLS" 3 base=./base-bench f6=./sonic-bench noskip=./noskip-bench > $W/ab.log 2>&1; echo "ab rc $? $(( $(date +%s) - START ))s"; cat $W/ab/ab-table.txt
CELLS2="alternating_topp095:f32:128256:1,alternating_topp095:f32:128256:64,alternating_topp095:f32:128256:256,alternating_topp095:f32:151936:64"
AB_SECONDS=60 timeout 100 bash ./run.sh ab $W/ab2 "$CELLS2" 3 noskip=./noskip-bench f6=./sonic-bench > $W/ab2.log 2>&1; echo "ab2 rc $? $(( $(date +%s) - START ))s"; cat $W/ab2/ab-table.txt
SANITIZE_TOOLS="memcheck" SANITIZE_SECONDS=120 timeout 130 bash ./run.sh sanitize $W/sanitizer > $W/sanitize.log 2>&1; echo "sanitize rc $? $(( $(date +%s) - START ))s"; cat $W/sanitizer/summary.txt
timeout 100 bash ./run.sh bench --out $W/grid > $W/grid.log 2>&1; echo "grid rc $? $(( $(date +%s) - START ))s"; grep -A10 "Exact pass against" $W/grid/sonic-bench.md | tail -8
timeout 90 bash ./run.sh soak --seconds 60 --out $W/soak > $W/soak.log 2>&1; echo "soak rc $? $(( $(date +%s) - START ))s"; tail -3 $W/soak.log
echo "elapsed $(( $(date +%s) - START ))"
