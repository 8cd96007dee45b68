#!/usr/bin/env bash
# Run 2 (session 37): e2 = e1 with one shared atomic a warp and batch of code words for its
# lanes' places in gather_coded_row (e1: one a word with a hit). A/B of s2, e1 and e2, three
# rounds; source counters of exact_finish (e2) at flat top-p 0.95, V 128256, B 64.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run2.tar.gz -C $W .' EXIT
el() { echo $(( $(date +%s) - START )); }
C=$PWD/.carry; cd $C/b
unxz() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[1][:-3],'wb'))" "$1" && rm "$1"; }
for f in *.xz; do unxz $f; done; chmod +x *-bench sonic-bench run.sh
md5sum *-bench sonic-bench > $W/md5.txt
echo "unpacked $(el)s"
CELLS="flat_topp095:f32:128256:64,flat_topp095:f32:128256:256,flat_topp095:f32:151936:64,flat_topp095:f32:151936:256,flat_topp095:f32:128256:1,peaked_topp095:f32:128256:256,heterogeneous:f32:128256:256"
AB_SECONDS=60 timeout 100 bash ./run.sh ab $W/ab "$CELLS" 3 s2=./s2-bench e1=./e1-bench e2=./sonic-bench > $W/ab.log 2>&1; echo "ab rc $? $(el)s"; cat $W/ab/ab-table.txt
NCU_EXTRA="--warp-sampling-interval 0" timeout 120 bash ./run.sh profile-source flat_topp095:f32:128256:64 exact_finish $W/source > $W/src.log 2>&1; echo "src rc $? $(el)s"; tail -5 $W/src.log
echo "elapsed $(el)"
