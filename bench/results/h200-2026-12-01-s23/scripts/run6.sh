#!/usr/bin/env bash
# Run 6 (session 23): A/B of base (session 22's final) and the final build (389bc04) on the
# cells whose code the session did not aim at but whose grid figures read 2–3% above session
# 22's grid (random_full, flat_full; greedy, unchanged code, as a control), two rounds.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run6.tar.gz -C $W .' EXIT
C=$PWD/.carry; cd $C/b
for f in *-bench.gz; do gunzip -f $f; done; chmod +x *-bench run.sh
CELLS="random_full:f32:128256:1,random_full:f32:128256:64,random_full:f32:128256:1024,random_full:f32:32000:64,flat_full:f32:128256:64,greedy:f32:128256:1"
AB_SECONDS=60 timeout 200 bash ./run.sh ab $W/ab "$CELLS" 2 base=./base-bench final=./final-bench > $W/ab.log 2>&1; echo "ab rc $? $(( $(date +%s) - START ))s"; cat $W/ab/ab-table.txt
