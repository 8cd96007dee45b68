#!/usr/bin/env bash
# Run 3 (session 30): v9 = stage 2's one-per-SM builds check the row's settings and bias ids
# before griddepcontrol.wait; v9e = v9 with stage 1 letting stage 2 be placed at its start
# when the step has at most 16 rows (an experiment). The five GPU test binaries on v9; A/B of
# base (main, v8 kernels), v9 and v9e, two rounds.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run3.tar.gz -C $W .' EXIT
C=$PWD/.carry; cd $C/b
unxz() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[1][:-3],'wb'))" "$1" && rm "$1"; }
for f in tests/*.xz *.xz; do unxz $f; done; chmod +x tests/* *-bench sonic-bench run.sh
md5sum *-bench sonic-bench tests/* > $W/md5.txt
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $W/gpu.txt
timeout 240 bash ./run.sh > $W/tests.log 2>&1; echo "tests rc $? $(( $(date +%s) - START ))s"; tail -1 $W/tests.log; grep -E "test result|FAILED|panicked|mismatch" $W/tests.log | head -20
CELLS="topk50_topp09_t07:f32:128256:1,topk50_topp09_t07:f32:128256:8,topk50_topp09_t07:f32:128256:64,random_full:f32:128256:1,random_full:f32:128256:64,heterogeneous:f32:128256:1,heterogeneous:f32:128256:8,heterogeneous:f32:128256:64,flat_topp095:f32:128256:1,greedy:f32:128256:1,topk50_topp09_t07:f32:128256:256,random_full:bf16:151936:8"
AB_SECONDS=80 timeout 300 bash ./run.sh ab $W/ab "$CELLS" 2 base=./base-bench v9=./sonic-bench v9e=./v9e-bench > $W/ab.log 2>&1; echo "ab rc $? $(( $(date +%s) - START ))s"; cat $W/ab/ab-table.txt
echo "elapsed $(( $(date +%s) - START ))"
