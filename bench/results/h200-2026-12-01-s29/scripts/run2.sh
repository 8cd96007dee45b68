#!/usr/bin/env bash
# Run 2 (session 29): Nsight kernel durations of base (main c249c6d) and v3 (1d91b95) where v3
# measured slower in run 1: flat top-p B 1, peaked top-p B 64, flat top-p V 151936 B 64.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run2.tar.gz -C $W .' EXIT
C=$PWD/.carry; cd $C/b
unxz() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[1][:-3],'wb'))" "$1" && rm "$1"; }
for f in *.xz; do unxz $f; done; chmod +x *-bench run.sh
md5sum *-bench > $W/md5.txt
for b in base v3; do
  cp $b-bench sonic-bench
  for cell in flat_topp095:f32:128256:1 peaked_topp095:f32:128256:64 flat_topp095:f32:151936:64; do
    timeout 60 bash ./run.sh profile $cell $W/profile-$b > $W/profile-$b-$(echo $cell | tr ':' '-').log 2>&1; echo "$b profile $cell rc $? $(( $(date +%s) - START ))s"
  done
done
rm -f $W/profile-*/*.ncu-rep
for f in $W/profile-*/*summary*.txt; do echo "== $f"; grep -E '^  [a-z_]+ \(|Duration' $f | paste - - | awk '{printf "%s %s; ", $1, $NF}'; echo; done
echo "elapsed $(( $(date +%s) - START ))"
