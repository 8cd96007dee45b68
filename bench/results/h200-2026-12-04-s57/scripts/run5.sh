#!/usr/bin/env bash
# Run 5 (session 57), one call. swf5: wf4 with the stamps and probe v2: four replays of graph 0
# with no upload between, alternately after the L2 flush and without it, each timed by
# events, with every row's phase stamps; then the stamped replay after a fresh upload.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run5.tar.gz -C $W .' EXIT
el() { echo $(( $(date +%s) - START )); }
C=$PWD/.carry; cd $C
python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[1][:-3],'wb'))" swf5/sonic-bench.xz && rm swf5/sonic-bench.xz
chmod +x swf5/sonic-bench; md5sum swf5/sonic-bench > $W/md5.txt
SC="verify_hetero:f32:128256:1,verify_hetero:f32:128256:8,verify_hetero:f32:151936:1,verify_accepted:f32:128256:8"
SONIC_STAMPS=1 timeout 60 ./swf5/sonic-bench --only "$SC" --replays 30 --out $W/stamps > $W/stamps.log 2>&1; echo "stamps rc $? $(el)s"
grep -E "^PROBE verify|^STAMPS verify" $W/stamps.log
echo "elapsed $(el)"
