#!/usr/bin/env bash
# Run 1 (session 57), one call. stamps: the landed build plus %globaltimer stamps at verify_rows'
# phase boundaries (per row, the group leader's thread 0), verify_draws' items and draws, and
# each kernel's first start and last end (not for landing: its spills grew past the check).
# base: the landed build (vh3, PTX c6f3162c). cs: base with VerifyParams::chain_stats moved
# after _pad (the fields after it back at session 55's offsets). Then an A/B of base and cs
# (four rounds) and Nsight's source page of verify_rows at verify_hetero B = 8.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run1.tar.gz -C $W .' EXIT
el() { echo $(( $(date +%s) - START )); }
C=$PWD/.carry; cd $C
unxz() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[1][:-3],'wb'))" "$1" && rm "$1"; }
for f in */*.xz; do unxz $f & done; wait
chmod +x */sonic-bench */run.sh
md5sum */sonic-bench */sampler_kernels.ptx > $W/md5.txt
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $W/gpu.txt 2>&1
echo "unpacked $(el)s"
SC="verify_hetero:f32:128256:1,verify_hetero:f32:128256:8,verify_hetero:f32:128256:32,verify_hetero:f32:151936:1,verify_hetero:f32:151936:8,verify_uniform:f32:128256:8,verify_sampled:f32:128256:8,verify_accept70:f32:128256:8,verify_accepted:f32:128256:8"
for i in 1 2; do SONIC_STAMPS=1 timeout 90 ./stamps/sonic-bench --only "$SC" --replays 30 --out $W/stamps-$i > $W/stamps-$i.log 2>&1; echo "stamps $i rc $? $(el)s"; done
grep -c "^STAMPS" $W/stamps-1.log
CELLS="verify_accepted:f32:128256:1,verify_accepted:f32:128256:8,verify_accepted:f32:151936:32,verify_accepted:f32:128256:128,verify_accept70:f32:128256:8,verify_hetero:f32:128256:8,verify_uniform:f32:128256:8,verify_sampled:f32:128256:1"
AB_SECONDS=90 timeout 240 bash ./base/run.sh ab $W/ab "$CELLS" 4 base=$C/base/sonic-bench cs=$C/cs/sonic-bench > $W/ab.log 2>&1; echo "ab rc $? $(el)s"; cat $W/ab/ab-table.txt
timeout 120 bash ./base/run.sh profile-source verify_hetero:f32:128256:8 verify_rows $W/source > $W/source.log 2>&1; echo "source rc $? $(el)s"; tail -3 $W/source.log
echo "elapsed $(el)"
