#!/usr/bin/env bash
# Run 2 (session 31): f2 = a top-p row whose request's last step was wide skips its candidate
# lists in stage 1 and goes to the exact pass (GpuSamplerConfig::skip_lists_after_wide_step,
# on by default; noskip = the same build with --no-skip-lists). The five GPU test binaries on
# f2; A/B of base (v13), f2 and noskip, three rounds; A/B of noskip and f2 on alternating
# flat/peaked rows (the worst case); memcheck over the five test binaries.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run2.tar.gz -C $W .' EXIT
C=$PWD/.carry; cd $C/b
unxz() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[1][:-3],'wb'))" "$1" && rm "$1"; }
for f in tests/*.xz *.xz; do unxz $f; done; chmod +x tests/* *-bench sonic-bench run.sh
printf '#!/bin/sh\nexec "$(dirname "$0")/sonic-bench" --no-skip-lists "$@"\n' > noskip-bench; chmod +x noskip-bench
md5sum *-bench sonic-bench tests/* > $W/md5.txt
timeout 240 bash ./run.sh > $W/tests.log 2>&1; echo "tests rc $? $(( $(date +%s) - START ))s"; tail -1 $W/tests.log; grep -E "test result|FAILED|panicked|mismatch|rows listed" $W/tests.log | head -40
CELLS="flat_topp095:f32:128256:1,flat_topp095:f32:128256:64,flat_topp095:f32:128256:256,flat_topp095:f32:151936:1,flat_topp095:f32:151936:64,flat_topp095:f32:151936:256,flat_full:f32:128256:1,flat_full:f32:128256:64,flat_full:f32:128256:256,peaked_topp095:f32:128256:64,peaked_topp095:f32:128256:256,heterogeneous:f32:128256:64,heterogeneous:f32:128256:256,heterogeneous:bf16:128256:256,random_full:f32:128256:1,random_full:f32:128256:256,topk50_topp09_t07:f32:128256:1,topk50_topp09_t07:f32:128256:64,topk50_topp09_t07:f32:128256:256,greedy:f32:128256:64"
AB_SECONDS=60 timeout 200 bash ./run.sh ab $W/ab "$CELLS" 3 base=./base-bench f2=./sonic-bench noskip=./noskip-bench > $W/ab.log 2>&1; echo "ab rc $? $(( $(date +%s) - START ))s"; cat $W/ab/ab-table.txt
CELLS2="alternating_topp095:f32:128256:1,alternating_topp095:f32:128256:64,alternating_topp095:f32:128256:256,alternating_topp095:f32:151936:64,flat_topp095:f32:128256:64,peaked_topp095:f32:128256:64"
AB_SECONDS=60 timeout 100 bash ./run.sh ab $W/ab2 "$CELLS2" 3 noskip=./noskip-bench f2=./sonic-bench > $W/ab2.log 2>&1; echo "ab2 rc $? $(( $(date +%s) - START ))s"; cat $W/ab2/ab-table.txt
SANITIZE_TOOLS="memcheck" SANITIZE_SECONDS=120 timeout 130 bash ./run.sh sanitize $W/sanitizer > $W/sanitize.log 2>&1; echo "sanitize rc $? $(( $(date +%s) - START ))s"; cat $W/sanitizer/summary.txt
echo "elapsed $(( $(date +%s) - START ))"
