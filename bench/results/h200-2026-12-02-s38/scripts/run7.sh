#!/usr/bin/env bash
# Run 7 (session 38): the final kernels (v1's bundle, the final commit's PTX): synccheck and
# initcheck over gpu_sampler and gpu_reliability (memcheck and racecheck ran in run 5).
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run7.tar.gz -C $W .' EXIT
el() { echo $(( $(date +%s) - START )); }
C=$PWD/.carry; cd $C/b
unxz() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[1][:-3],'wb'))" "$1" && rm "$1"; }
for f in tests/*.xz; do unxz $f; done; chmod +x tests/* run.sh
md5sum tests/* > $W/md5.txt
SANITIZE_TOOLS="synccheck initcheck" SANITIZE_JOBS=4 SANITIZE_SECONDS=200 timeout 210 bash ./run.sh sanitize $W/sanitizer > $W/sanitize.log 2>&1; echo "sanitize rc $? $(el)s"; cat $W/sanitizer/summary.txt
echo "elapsed $(el)"
