#!/usr/bin/env bash
# Run 4 (session 26): racecheck over gpu_sampler on the final build (ccfaff7; the test binary is
# run 3's, md5 5773943a, whose racecheck ran out of time there), then one more A/B round of
# base (session 25's final k3) against the final build on the cells whose rows all need the mass.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run4.tar.gz -C $W .' EXIT
C=$PWD/.carry; cd $C/b
for f in tests/*.gz *.gz; do gunzip -f $f; done; chmod +x tests/* *-bench sonic-soak run.sh; cp final-bench sonic-bench
md5sum *-bench sonic-bench tests/* > $W/md5.txt
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $W/gpu.txt
SANITIZE_TOOLS=racecheck SANITIZE_SECONDS=300 timeout 315 bash ./run.sh sanitize $W/sanitizer > $W/sanitize.log 2>&1; echo "sanitize rc $? $(( $(date +%s) - START ))s"
cat $W/sanitizer/summary.txt
left=$(( 440 - ($(date +%s) - START) )); echo "ab budget $left s"
CELLS="random_full:f32:128256:1,random_full:f32:128256:64,peaked_topp095:f32:128256:64,flat_topp095:f32:128256:64,flat_full:f32:151936:64"
if [ $left -gt 100 ]; then
  AB_SECONDS=$(( (left - 10) / 2 )) timeout $left bash ./run.sh ab $W/ab "$CELLS" 1 base=./k3-bench final=./final-bench > $W/ab.log 2>&1; echo "ab rc $? $(( $(date +%s) - START ))s"; cat $W/ab/ab-table.txt
fi
echo "elapsed $(( $(date +%s) - START ))"
