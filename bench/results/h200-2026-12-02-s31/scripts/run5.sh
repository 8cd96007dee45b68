#!/usr/bin/env bash
# Run 5 (session 31): where a flat top-p row's time goes now that its lists are skipped (f6,
# the landed kernels): Nsight summaries of flat_topp095 at V 128256, B 64 and 256, and
# flat_full B 64; initcheck and synccheck over gpu_sampler (the new test) and gpu_reliability.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run5.tar.gz -C $W .' EXIT
C=$PWD/.carry; cd $C/b
unxz() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[1][:-3],'wb'))" "$1" && rm "$1"; }
for f in tests/*.xz *.xz; do unxz $f; done; chmod +x tests/* sonic-bench run.sh
md5sum sonic-bench tests/* > $W/md5.txt
for cell in flat_topp095:f32:128256:64 flat_topp095:f32:128256:256 flat_full:f32:128256:64; do
  timeout 80 bash ./run.sh profile $cell $W/profile > $W/profile-$(echo $cell | tr ':' '-').log 2>&1; echo "profile $cell rc $? $(( $(date +%s) - START ))s"
done
rm -f $W/profile/*.ncu-rep
for f in $W/profile/*summary*.txt; do echo "== $f"; grep -E '^  [a-z_0-9]+ \(|Duration' $f | paste - - | awk '{printf "%s %s %s; ", $1, $(NF-1), $NF}'; echo; done
SANITIZE_TOOLS="initcheck synccheck" SANITIZE_SECONDS=170 timeout 180 bash ./run.sh sanitize $W/sanitizer > $W/sanitize.log 2>&1; echo "sanitize rc $? $(( $(date +%s) - START ))s"; cat $W/sanitizer/summary.txt
echo "elapsed $(( $(date +%s) - START ))"
