#!/usr/bin/env bash
# Run 4 (session 22): v3 (14fb53d; the final HEAD's PTX is the same) under initcheck and
# synccheck over all five test binaries (run 3 ran memcheck and racecheck over two); source
# counters of exact_histogram and exact_finish, flat top-p 0.95, V = 128256, B = 256 and B = 1.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run4.tar.gz -C $W .' EXIT
C=$PWD/.carry; cd $C/b
for f in tests/*.gz *.gz; do gunzip -f $f; done; chmod +x tests/* *-bench sonic-soak run.sh; cp v3-bench sonic-bench
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $W/gpu.txt
SANITIZE_TOOLS="initcheck synccheck" SANITIZE_SECONDS=150 timeout 170 bash ./run.sh sanitize $W/sanitizer > $W/sanitize.log 2>&1; echo "sanitize rc $? $(( $(date +%s) - START ))s"; tail -13 $W/sanitizer/summary.txt
for kc in "exact_histogram flat_topp095:f32:128256:256" "exact_finish flat_topp095:f32:128256:1"; do
  set -- $kc
  NCU_EXTRA="--warp-sampling-interval 0" timeout 90 bash ./run.sh profile-source $2 $1 $W/source > $W/source-$1.log 2>&1; echo "source $1 rc $? $(( $(date +%s) - START ))s"; tail -3 $W/source-$1.log
done
echo "elapsed $(( $(date +%s) - START ))"
