#!/usr/bin/env bash
# Run 3 (session 33): c3 = c1 with exact_histogram_runs' logits loads cache-streaming
# (ld.global.cs.nc: lines evicted first), so that the band codes it writes stay in L2 for the
# gather at large batches. c2 (the finish reading the codes) is not kept. On c3: the five GPU
# test binaries; A/B of h1, c1 and c3, five rounds; Nsight summaries of flat top-p 0.95 at
# V 128256, B 64 and 256; a 30 s soak; the whole grid on c3 and on c1.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run3.tar.gz -C $W .' EXIT
C=$PWD/.carry; cd $C/b
unxz() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[1][:-3],'wb'))" "$1" && rm "$1"; }
for f in tests/*.xz *.xz; do unxz $f; done; chmod +x tests/* *-bench sonic-bench sonic-soak run.sh
md5sum *-bench sonic-bench sonic-soak tests/* > $W/md5.txt
timeout 200 bash ./run.sh > $W/tests.log 2>&1; echo "tests rc $? $(( $(date +%s) - START ))s"; tail -1 $W/tests.log; grep -E "test result|FAILED|panicked|mismatch" $W/tests.log | head -12
CELLS="flat_topp095:f32:128256:1,flat_topp095:f32:128256:64,flat_topp095:f32:128256:256,flat_topp095:f32:151936:64,flat_topp095:f32:151936:256,flat_topp095:bf16:128256:64,flat_topp095:bf16:128256:256,peaked_topp095:f32:128256:64,peaked_topp095:f32:128256:256,alternating_topp095:f32:128256:64,heterogeneous:f32:128256:64,flat_full:f32:128256:64,flat_full:f32:128256:256,flat_full:f32:151936:64,flat_full:f32:151936:256"
AB_SECONDS=60 timeout 150 bash ./run.sh ab $W/ab "$CELLS" 5 h1=./base-bench c1=./c1-bench c3=./sonic-bench > $W/ab.log 2>&1; echo "ab rc $? $(( $(date +%s) - START ))s"; cat $W/ab/ab-table.txt
for cell in flat_topp095:f32:128256:64 flat_topp095:f32:128256:256; do
  timeout 50 bash ./run.sh profile $cell $W/profile > $W/profile-$cell.log 2>&1; echo "profile $cell rc $? $(( $(date +%s) - START ))s"; grep -E "^  [a-z_]+ \(|Duration" $W/profile-$cell.log | paste - - | awk '{print $1, $(NF)}' | head -8
done
rm -f $W/profile/*.ncu-rep
timeout 45 bash ./run.sh soak --seconds 30 --out $W/soak > $W/soak.log 2>&1; echo "soak rc $? $(( $(date +%s) - START ))s"; tail -2 $W/soak.log
timeout 90 bash ./run.sh bench --out $W/grid > $W/grid.log 2>&1; echo "grid rc $? $(( $(date +%s) - START ))s"; grep -A10 "Exact pass against" $W/grid/sonic-bench.md | tail -8
cp c1-bench sonic-bench; timeout 90 bash ./run.sh bench --out $W/grid-c1 > $W/grid-c1.log 2>&1; echo "grid c1 rc $? $(( $(date +%s) - START ))s"; grep -A10 "Exact pass against" $W/grid-c1/sonic-bench.md | tail -8
echo "elapsed $(( $(date +%s) - START ))"
