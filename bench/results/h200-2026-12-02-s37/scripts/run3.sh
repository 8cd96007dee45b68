#!/usr/bin/env bash
# Run 3 (session 37): e3 = e2 with the code words read as 16-byte pairs (ld.global.nc.v4),
# every load issued (none under a branch), 8 pairs ahead in exact_finish and 4 in
# exact_finish_two_per_sm. A/B of s2, e2 and e3, five rounds.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run3.tar.gz -C $W .' EXIT
el() { echo $(( $(date +%s) - START )); }
C=$PWD/.carry; cd $C/b
unxz() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[1][:-3],'wb'))" "$1" && rm "$1"; }
for f in *.xz; do unxz $f; done; chmod +x *-bench sonic-bench run.sh
md5sum *-bench sonic-bench > $W/md5.txt
CELLS="flat_topp095:f32:128256:1,flat_topp095:f32:128256:64,flat_topp095:f32:128256:256,flat_topp095:f32:151936:64,flat_topp095:f32:151936:256,peaked_topp095:f32:128256:64,peaked_topp095:f32:128256:256,alternating_topp095:f32:128256:64"
AB_SECONDS=60 timeout 100 bash ./run.sh ab $W/ab "$CELLS" 5 s2=./s2-bench e2=./e2-bench e3=./sonic-bench > $W/ab.log 2>&1; echo "ab rc $? $(el)s"; cat $W/ab/ab-table.txt
for cell in flat_topp095:f32:128256:256 flat_topp095:f32:128256:64; do
  timeout 50 bash ./run.sh profile $cell $W/profile > $W/profile-$(echo $cell | tr ':' '-').log 2>&1; echo "profile $cell rc $? $(el)s"; grep -E "^  [a-z_]+ \(|Duration" $W/profile-$(echo $cell | tr ':' '-').log | paste - - | awk '{print $1, $(NF)}' | head -12
done
rm -f $W/profile/*.ncu-rep
echo "elapsed $(el)"
