#!/usr/bin/env bash
# Run 6 (session 27): compute-sanitizer initcheck and synccheck over the five GPU test binaries
# (a530c03's, 10dffeb's kernels), reduced sizes: barriers in the out-of-line crowded merge.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run6.tar.gz -C $W .' EXIT
C=$PWD/.carry; cd $C/b
gunzip -f tests/*.gz; chmod +x tests/* run.sh
md5sum tests/* > $W/md5.txt
SANITIZE_TOOLS="synccheck initcheck" SANITIZE_SECONDS=300 timeout 330 bash ./run.sh sanitize $W/sanitizer > $W/sanitize.log 2>&1; echo "sanitize rc $? $(( $(date +%s) - START ))s"
cat $W/sanitizer/summary.txt
echo "elapsed $(( $(date +%s) - START ))"
