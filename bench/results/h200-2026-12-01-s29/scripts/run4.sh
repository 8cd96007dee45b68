#!/usr/bin/env bash
# Run 4 (session 29): A/B of base (main), d2 (v3 with the warp paths removed from the kernels),
# d3 (main with the prologue8 refactor alone), v3, v4 and v5 (v4 with each lane asking L2 for
# its own tokens, v5a 1 round beyond the next as v3, v5b 4); Nsight summaries of v5a and v5b.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run4.tar.gz -C $W .' EXIT
C=$PWD/.carry; cd $C/b
unxz() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[1][:-3],'wb'))" "$1" && rm "$1"; }
for f in *.xz; do unxz $f; done; chmod +x *-bench run.sh
md5sum *-bench > $W/md5.txt
CELLS="flat_topp095:f32:128256:1,flat_topp095:f32:128256:64,flat_topp095:f32:128256:256,flat_topp095:f32:151936:64,flat_topp095:f32:151936:256,peaked_topp095:f32:128256:64,peaked_topp095:f32:128256:256,heterogeneous:f32:128256:64,flat_full:f32:128256:64"
AB_SECONDS=80 timeout 400 bash ./run.sh ab $W/ab "$CELLS" 3 base=./base-bench d2=./d2-bench d3=./d3-bench v3=./v3-bench v4=./v4-bench v5a=./v5a-bench v5b=./v5b-bench > $W/ab.log 2>&1; echo "ab rc $? $(( $(date +%s) - START ))s"; cat $W/ab/ab-table.txt
for b in v5a v5b; do cp $b-bench sonic-bench; for cell in flat_topp095:f32:128256:256 flat_topp095:f32:128256:64 flat_topp095:f32:151936:64; do
  timeout 60 bash ./run.sh profile $cell $W/profile-$b > $W/profile-$b-$(echo $cell | tr ':' '-').log 2>&1; echo "profile $b $cell rc $? $(( $(date +%s) - START ))s"
done; done
rm -f $W/profile-*/*.ncu-rep
for f in $W/profile-*/*summary*.txt; do echo "== $f"; grep -E '^  [a-z_]+ \(|Duration' $f | paste - - | awk '{printf "%s %s; ", $1, $NF}'; echo; done
echo "elapsed $(( $(date +%s) - START ))"
