#!/usr/bin/env bash
# Run 3 (session 31): why f2 made untruncated rows (flat_full, random_full) 4-6% slower with
# the skip on and off. f3 = f2 with the record's TILE_NO_LIST read again after the scan (one
# spill less across it); f4 = a speed probe, not a working build: stage 1 skips the lists on a
# settings bit instead of the slot flag (no load before the scan); f5 = f3's stage 2 with
# session 30's stage 1 (sample_tiles_mass's SASS is v13's but for parameter offsets). The
# gpu_sampler binary on f3 (the skip test with corrected expectations); A/B of base (v13),
# f3, f4, f5, three rounds.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run3.tar.gz -C $W .' EXIT
C=$PWD/.carry; cd $C/b
unxz() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[1][:-3],'wb'))" "$1" && rm "$1"; }
for f in tests/*.xz *.xz; do unxz $f; done; chmod +x tests/* *-bench run.sh
md5sum *-bench tests/* > $W/md5.txt
timeout 120 bash ./run.sh > $W/tests.log 2>&1; echo "tests rc $? $(( $(date +%s) - START ))s"; tail -1 $W/tests.log; grep -E "test result|FAILED|panicked|mismatch|rows listed|per step" $W/tests.log | head -30
CELLS="flat_full:f32:128256:1,flat_full:f32:128256:64,flat_full:f32:128256:256,random_full:f32:128256:1,random_full:f32:128256:256,peaked_topp095:f32:128256:64,peaked_topp095:f32:128256:256,flat_topp095:f32:128256:64,flat_topp095:f32:128256:256,heterogeneous:f32:128256:256,topk50_topp09_t07:f32:128256:256"
AB_SECONDS=60 timeout 300 bash ./run.sh ab $W/ab "$CELLS" 3 base=./base-bench f3=./f3-bench f4=./f4-bench f5=./f5-bench > $W/ab.log 2>&1; echo "ab rc $? $(( $(date +%s) - START ))s"; cat $W/ab/ab-table.txt
echo "elapsed $(( $(date +%s) - START ))"
