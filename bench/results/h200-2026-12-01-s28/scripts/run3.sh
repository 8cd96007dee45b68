#!/usr/bin/env bash
# Prepared, not run: the device tool lent no machine after run 2.
# Run 3 (session 28): v2 = 49602aa (predicated sub-bin adds, abi::warp_row_parts, L2 prefetch);
# v2s = v2 with v1's spare-bin adds (a local variant, not committed). The warp-path test on v2
# (stop if it fails); A/B of base (c537bc8), v2 and v2s; Nsight summaries of v2.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run3.tar.gz -C $W .' EXIT
C=$PWD/.carry; cd $C/b
for f in tests/*.gz *.gz; do gunzip -f $f; done; chmod +x tests/* *-bench sonic-bench run.sh
md5sum *-bench sonic-bench tests/* > $W/md5.txt
T=gpu_band_rows_taken_a_warp_per_tile_part_equal_reference
timeout 150 ./tests/gpu_sampler $T --test-threads=1 --nocapture > $W/warp-test.log 2>&1; rc=$?; echo "warp test rc $rc $(( $(date +%s) - START ))s"; grep -E "test result|panicked|rows split|row [0-9]+:" $W/warp-test.log | head -30
[ $rc -eq 0 ] || exit 1
CELLS="flat_topp095:f32:128256:1,flat_topp095:f32:128256:64,flat_topp095:f32:128256:256,flat_topp095:f32:151936:64,flat_topp095:f32:151936:256,peaked_topp095:f32:128256:64,peaked_topp095:f32:128256:256,heterogeneous:f32:128256:64,flat_full:f32:128256:64"
AB_SECONDS=100 timeout 330 bash ./run.sh ab $W/ab "$CELLS" 2 base=./base-bench v2=./sonic-bench v2s=./v2s-bench > $W/ab.log 2>&1; echo "ab rc $? $(( $(date +%s) - START ))s"; cat $W/ab/ab-table.txt
for cell in flat_topp095:f32:128256:256 flat_topp095:f32:128256:64; do
  left=$(( 540 - ($(date +%s) - START) )); [ $left -gt 40 ] || break
  timeout $left bash ./run.sh profile $cell $W/profile > $W/profile-$(echo $cell | tr ':' '-').log 2>&1; echo "profile $cell rc $? $(( $(date +%s) - START ))s"
done
rm -f $W/profile/*.ncu-rep
for f in $W/profile/*summary*.txt; do echo "== $f"; grep -E '^  [a-z_]+ \(|Duration' $f | paste - - | awk '{print $1, $NF}'; done
echo "elapsed $(( $(date +%s) - START ))"
