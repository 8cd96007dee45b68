#!/usr/bin/env bash
# Run 6 (session 46), one call, after the review: the final kernels (PTX md5 528634..., as runs
# 4 and 5) with the review's gpu_verify, whose special-values test now also asserts that first
# rows with log-probabilities and values between 2^22 and 2^23 were checked.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run6.tar.gz -C $W .' EXIT
el() { echo $(( $(date +%s) - START )); }
C=$PWD/.carry; cd $C/b
unxz() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[1][:-3],'wb'))" "$1" && rm "$1"; }
for f in tests/*.xz; do unxz $f; done
chmod +x tests/* run.sh
md5sum tests/* > $W/md5.txt
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $W/gpu.txt 2>&1
timeout 120 bash ./run.sh > $W/tests.log 2>&1; echo "tests rc $? $(el)s"; tail -1 $W/tests.log; grep -E "test result|FAILED|panicked|layout" $W/tests.log | head -20
echo "elapsed $(el)"
