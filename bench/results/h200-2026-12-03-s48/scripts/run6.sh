#!/usr/bin/env bash
# Run 6 (session 48, review), one short call on the device time left (about 250 s). v6: v4
# with sample_tiles_half given sample_tiles' launch-bound directives (.maxntid 256,
# .minnctapersm 3), which v4 lacked: the same SASS but for register numbers and a few
# instructions' order. gpu_sampler on v6 beside racecheck and memcheck over its mixed-batch and
# smoke tests (reduced sizes); an A/B of v4 and v6 on 3 cells (two rounds).
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run6.tar.gz -C $W .' EXIT
el() { echo $(( $(date +%s) - START )); }
C=$PWD/.carry; cd $C
unxz() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[1][:-3],'wb'))" "$1" && rm "$1"; }
for f in v6/tests/*.xz v6/*.xz v4/*.xz; do unxz $f; done
chmod +x v6/tests/* */sonic-bench v6/run.sh
md5sum */sonic-bench v6/tests/* > $W/md5.txt
cd $C/v6; mkdir -p $W/san
for tool in racecheck memcheck; do
  (SONIC_SANITIZE=1 timeout 120 compute-sanitizer --tool $tool tests/gpu_sampler --test-threads=1 --nocapture gpu_tokens_equal_reference_on_mixed_batches gpu_smoke_small_batch > $W/san/$tool-gpu_sampler.log 2>&1; echo "rc $?" >> $W/san/$tool-gpu_sampler.log) &
done
timeout 140 tests/gpu_sampler --test-threads=1 > $W/tests-gpu_sampler.log 2>&1; echo "rc $?" >> $W/tests-gpu_sampler.log
echo "tests $(el)s"; grep -hE "test result|FAILED|panicked|^rc" $W/tests-*.log
wait; echo "sanitizers $(el)s"; for f in $W/san/*.log; do echo "$f: $(grep -E 'SUMMARY|test result' $f | tr '\n' ' ') $(tail -1 $f)"; done
CELLS="topk50_topp09_t07:bf16:128256:256,topk50_topp09_t07:bf16:128256:1024,heterogeneous:bf16:128256:256"
AB_SECONDS=40 timeout 60 bash ./run.sh ab $W/ab "$CELLS" 2 v4=../v4/sonic-bench v6=./sonic-bench > $W/ab.log 2>&1; echo "ab rc $? $(el)s"; cat $W/ab/ab-table.txt
echo "elapsed $(el)"
