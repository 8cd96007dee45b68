#!/usr/bin/env bash
# Run 4 (session 34): n6's gpu_infra and gpu_topk under compute-sanitizer synccheck, racecheck
# and initcheck (memcheck over them was run 2's), so that every tool has run over all five GPU
# test binaries on the final kernels.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run4.tar.gz -C $W .' EXIT
el() { echo $(( $(date +%s) - START )); }
C=$PWD/.carry; cd $C/b
unxz() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[1][:-3],'wb'))" "$1" && rm "$1"; }
for f in tests/*.xz; do unxz $f; done; chmod +x tests/* run.sh
md5sum tests/* > $W/md5.txt
SANITIZE_TOOLS="synccheck racecheck initcheck" SANITIZE_JOBS=6 SANITIZE_SECONDS=330 timeout 340 bash ./run.sh sanitize $W/sanitizer > $W/sanitize.log 2>&1; echo "sanitize rc $? $(el)s"; cat $W/sanitizer/summary.txt
echo "elapsed $(el)"
