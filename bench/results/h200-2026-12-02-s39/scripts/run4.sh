#!/usr/bin/env bash
# Run 4 (session 39): d2 = d1 with count_masses as in v1 (summing once measured 0.996-1.013x
# on verify_uniform in run 1). Its machine code is d1's kernel for kernel but verify_rows, which
# is v1's (nvdisasm here, label numbers aside). The grid on d2; then its five GPU test binaries
# beside memcheck over gpu_verify and gpu_sampler.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run4.tar.gz -C $W .' EXIT
el() { echo $(( $(date +%s) - START )); }
C=$PWD/.carry; cd $C/b
unxz() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[1][:-3],'wb'))" "$1" && rm "$1"; }
for f in tests/*.xz *.xz; do unxz $f; done; chmod +x tests/* sonic-bench run.sh
md5sum sonic-bench tests/* > $W/md5.txt
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $W/gpu.txt 2>&1
echo "unpacked $(el)s"
timeout 60 bash ./run.sh bench --out $W/grid > $W/grid.log 2>&1; echo "grid rc $? $(el)s"; grep -A10 "Exact pass against" $W/grid/sonic-bench.md | tail -7
mkdir -p san/tests; cp run.sh san/; cp tests/gpu_verify tests/gpu_sampler san/tests/
(SANITIZE_TOOLS="memcheck" SANITIZE_JOBS=2 SANITIZE_SECONDS=200 timeout 210 bash ./san/run.sh sanitize $W/sanitizer > $W/sanitize.log 2>&1; echo "rc $?" >> $W/sanitize.log) &
SP=$!
timeout 280 bash ./run.sh > $W/tests.log 2>&1; echo "tests rc $? $(el)s"; tail -1 $W/tests.log; grep -E "test result|FAILED|panicked|mismatch" $W/tests.log | head -12
wait $SP; echo "sanitize $(tail -1 $W/sanitize.log) $(el)s"; cat $W/sanitizer/summary.txt
echo "elapsed $(el)"
