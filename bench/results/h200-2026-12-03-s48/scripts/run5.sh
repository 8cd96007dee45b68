#!/usr/bin/env bash
# Run 5 (session 48), one short call (the device time left: about 400 s). v5: v4 with the
# cp.async ring of the mass scan and of sample_tiles_ring holding twice the rounds for
# half-width logits (eight 16-byte half-slots a lane, seven rounds ahead, f32's bytes), after
# run 4 put the mass scan at 1.38x f32's time in heterogeneous bf16 B = 256 with the same
# instructions. An A/B of v4 and v5 on 9 cells (four rounds); gpu_sampler and gpu_reliability
# on v5, beside racecheck and memcheck over gpu_sampler's mixed-batch and smoke tests (reduced
# sizes).
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run5.tar.gz -C $W .' EXIT
el() { echo $(( $(date +%s) - START )); }
C=$PWD/.carry; cd $C
unxz() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[1][:-3],'wb'))" "$1" && rm "$1"; }
for f in v5/tests/*.xz v5/*.xz v4/*.xz; do unxz $f; done
chmod +x v5/tests/* */sonic-bench v5/run.sh
md5sum */sonic-bench v5/tests/* > $W/md5.txt
echo "unpacked $(el)s"
cd $C/v5
CELLS="heterogeneous:bf16:128256:64,heterogeneous:bf16:128256:256,heterogeneous:bf16:151936:256,random_full:bf16:128256:64,random_full:bf16:128256:256,topk50_topp09_t07:bf16:128256:64,heterogeneous:f32:128256:256,random_full:f32:128256:256,topk50_topp09_t07:f32:128256:64"
AB_SECONDS=40 timeout 100 bash ./run.sh ab $W/ab "$CELLS" 4 v4=../v4/sonic-bench v5=./sonic-bench > $W/ab.log 2>&1; echo "ab rc $? $(el)s"; cat $W/ab/ab-table.txt
mkdir -p $W/san
for tool in racecheck memcheck; do
  (SONIC_SANITIZE=1 timeout 170 compute-sanitizer --tool $tool tests/gpu_sampler --test-threads=1 --nocapture gpu_tokens_equal_reference_on_mixed_batches gpu_smoke_small_batch > $W/san/$tool-gpu_sampler.log 2>&1; echo "rc $?" >> $W/san/$tool-gpu_sampler.log) &
done
(timeout 170 tests/gpu_sampler --test-threads=1 > $W/tests-gpu_sampler.log 2>&1; echo "rc $?" >> $W/tests-gpu_sampler.log; timeout 60 tests/gpu_reliability --test-threads=1 > $W/tests-gpu_reliability.log 2>&1; echo "rc $?" >> $W/tests-gpu_reliability.log)
echo "tests $(el)s"; grep -hE "test result|FAILED|panicked|^rc" $W/tests-*.log
wait; echo "sanitizers $(el)s"; for f in $W/san/*.log; do echo "$f: $(grep -E 'SUMMARY|test result' $f | tr '\n' ' ') $(tail -1 $f)"; done
echo "elapsed $(el)"
