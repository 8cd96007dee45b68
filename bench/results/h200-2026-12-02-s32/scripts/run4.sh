#!/usr/bin/env bash
# Run 4 (session 32): fine-grained source counters (a sample every 32 cycles) of the lone
# blocks of a flat top-p 0.95 step at V 128256 B 1 (exact_finish, exact_bins, sample_rows),
# of random_full's quiet stage 2 at B 1, and of exact_gather_runs at flat B 64, on f8 (main at
# 8498269). Run 3's trims of the finish and bins chains changed nothing: where do those
# blocks wait?
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run4.tar.gz -C $W .' EXIT
C=$PWD/.carry; cd $C/b
unxz() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[1][:-3],'wb'))" "$1" && rm "$1"; }
unxz sonic-bench.xz; chmod +x sonic-bench run.sh
md5sum sonic-bench > $W/md5.txt
for kc in "flat_topp095:f32:128256:1 exact_finish" "flat_topp095:f32:128256:1 exact_bins" "flat_topp095:f32:128256:1 sample_rows" "random_full:f32:128256:1 sample_rows_quiet" "flat_topp095:f32:128256:64 exact_gather_runs" "flat_topp095:f32:128256:64 exact_histogram_runs"; do
  set -- $kc
  X="--warp-sampling-interval 0"; case $2 in *_runs) X="";; esac
  NCU_EXTRA="$X" timeout 100 bash ./run.sh profile-source $1 $2 $W/source > $W/source-$2-$(echo $1 | tr ':' '-').log 2>&1; echo "source $1 $2 rc $? $(( $(date +%s) - START ))s"; tail -3 $W/source-$2-$(echo $1 | tr ':' '-').log
done
echo "elapsed $(( $(date +%s) - START ))"
