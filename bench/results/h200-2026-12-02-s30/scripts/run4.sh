#!/usr/bin/env bash
# Run 4 (session 30): main (e51cb55, v8 kernels). Nsight of greedy B 64 / 256 (summaries, and
# source counters at B 64); the whole benchmark grid; initcheck and synccheck over the five
# GPU test binaries, with a 60 s soak beside them.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run4.tar.gz -C $W .' EXIT
C=$PWD/.carry; cd $C/b
unxz() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[1][:-3],'wb'))" "$1" && rm "$1"; }
for f in tests/*.xz *.xz; do unxz $f; done; chmod +x tests/* sonic-bench sonic-soak run.sh
md5sum sonic-bench sonic-soak tests/* > $W/md5.txt
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $W/gpu.txt
for cell in greedy:f32:128256:64 greedy:f32:128256:256; do
  timeout 60 bash ./run.sh profile $cell $W/profile > $W/profile-$(echo $cell | tr ':' '-').log 2>&1; echo "profile $cell rc $? $(( $(date +%s) - START ))s"
done
rm -f $W/profile/*.ncu-rep
timeout 60 bash ./run.sh profile-source greedy:f32:128256:64 sample_tiles_greedy $W/source > $W/source-greedy-64.log 2>&1; echo "source rc $? $(( $(date +%s) - START ))s"
grep -hE "^  [a-z_]+ \(|Duration|DRAM Throughput|Achieved Active" $W/profile/*summary*.txt
timeout 200 bash ./run.sh bench --out $W/grid > $W/bench-stdout.log 2>&1; echo "bench rc $? $(( $(date +%s) - START ))s"; grep -E "ceilings" $W/bench-stdout.log
timeout 100 bash ./run.sh soak --seconds 60 --out $W/soak > $W/soak.log 2>&1 &
SANITIZE_TOOLS="initcheck synccheck" SANITIZE_SECONDS=230 timeout 250 bash ./run.sh sanitize $W/sanitizer > $W/sanitize.log 2>&1; echo "sanitize rc $? $(( $(date +%s) - START ))s"; cat $W/sanitizer/summary.txt
wait; echo "soak done $(( $(date +%s) - START ))s"; tail -8 $W/soak.log
echo "elapsed $(( $(date +%s) - START ))"
