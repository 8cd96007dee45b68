#!/usr/bin/env bash
# Run 5 (session 26): the graph-replay test alone on HEAD's test binary (kind 5 added after
# run 4: quiet steps whose rows need the row mass; the module-load check of every entry point).
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run5.tar.gz -C $W .' EXIT
C=$PWD/.carry; cd $C/b
gunzip -f tests/gpu_sampler.gz; chmod +x tests/gpu_sampler
md5sum tests/* > $W/md5.txt
REQUIRE_GPU=1 timeout 150 ./tests/gpu_sampler gpu_graph_replays_listing_rows_or_not_equal_reference --test-threads=1 > $W/test.log 2>&1; echo "test rc $? $(( $(date +%s) - START ))s"
grep -E "test result|panicked|differ|mismatch" $W/test.log | head
echo "elapsed $(( $(date +%s) - START ))"
