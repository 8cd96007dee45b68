#!/usr/bin/env bash
# Run 1 (session 29): builds with the cubin embedded. gpu_infra (the cubin loads?) and
# gpu_sampler whole on v3 (warp rows v2 + exact_bins_two_per_sm, 1d91b95); A/B of base
# (main c249c6d), v2 (c33ba95) and v3; Nsight summaries of v3 at flat top-p B 256 and 64.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run1.tar.gz -C $W .' EXIT
C=$PWD/.carry; cd $C/b
unxz() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[1][:-3],'wb'))" "$1" && rm "$1"; }
for f in tests/*.xz *.xz; do unxz $f; done; chmod +x tests/* *-bench run.sh
md5sum *-bench tests/* > $W/md5.txt; echo "unpacked $(( $(date +%s) - START ))s"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $W/gpu.txt
REQUIRE_GPU=1 timeout 60 ./tests/gpu_infra --test-threads=1 --nocapture > $W/test-gpu_infra.log 2>&1; echo "gpu_infra rc $? $(( $(date +%s) - START ))s"; grep -E "test result|panicked|module" $W/test-gpu_infra.log | head
REQUIRE_GPU=1 timeout 200 ./tests/gpu_sampler --test-threads=1 --nocapture > $W/test-gpu_sampler.log 2>&1; rc=$?; echo "gpu_sampler rc $rc $(( $(date +%s) - START ))s"; grep -E "test result|panicked|rows split|row [0-9]+:|warp|block" $W/test-gpu_sampler.log | head -30
[ $rc -eq 0 ] || exit 1
CELLS="flat_topp095:f32:128256:1,flat_topp095:f32:128256:64,flat_topp095:f32:128256:256,flat_topp095:f32:151936:64,flat_topp095:f32:151936:256,peaked_topp095:f32:128256:64,peaked_topp095:f32:128256:256,heterogeneous:f32:128256:64,flat_full:f32:128256:64"
AB_SECONDS=80 timeout 300 bash ./run.sh ab $W/ab "$CELLS" 2 base=./base-bench v2=./v2-bench v3=./v3-bench > $W/ab.log 2>&1; echo "ab rc $? $(( $(date +%s) - START ))s"; cat $W/ab/ab-table.txt
grep -h "module loaded" $W/ab/*.log | sort | uniq -c
cp v3-bench sonic-bench
for cell in flat_topp095:f32:128256:256 flat_topp095:f32:128256:64; do
  left=$(( 560 - ($(date +%s) - START) )); [ $left -gt 40 ] || break
  timeout $left bash ./run.sh profile $cell $W/profile > $W/profile-$(echo $cell | tr ':' '-').log 2>&1; echo "profile $cell rc $? $(( $(date +%s) - START ))s"
done
rm -f $W/profile/*.ncu-rep
for f in $W/profile/*summary*.txt; do echo "== $f"; grep -E '^  [a-z_]+ \(|Duration' $f | paste - - | awk '{print $1, $NF}'; done
echo "elapsed $(( $(date +%s) - START ))"
