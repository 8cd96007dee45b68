#!/usr/bin/env bash
# Run 6 (session 17, review): run.sh profile on a greedy cell, which now takes three launches a
# step (replays of greedy rows alone run without the exact pass's nodes).
W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run6.tar.gz -C $W .' EXIT
C=$PWD/.carry; cd $C/b; gunzip -f *.gz; chmod +x sonic-bench run.sh
timeout 100 ./run.sh profile greedy:f32:128256:1 $W/prof > $W/prof.log 2>&1; echo "prof rc $?"
cat $W/prof/*-summary.txt; rm -f $W/prof/*.ncu-rep
