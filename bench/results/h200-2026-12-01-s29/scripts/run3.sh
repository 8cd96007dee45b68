#!/usr/bin/env bash
# Run 3 (session 29): v4 = warp runs (each warp an even run of rounds, L2 asked 6 rounds
# ahead) on v3. gpu_sampler whole on v4; A/B of base (main), d1 (v3 without exact_bins'
# clearing), d2 (v3 with the block path alone), v3 and v4; Nsight summaries of v4; source
# counters of sample_tiles_mass (base) at flat top-p and flat_full B 256.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run3.tar.gz -C $W .' EXIT
C=$PWD/.carry; cd $C/b
unxz() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[1][:-3],'wb'))" "$1" && rm "$1"; }
for f in tests/*.xz *.xz; do unxz $f; done; chmod +x tests/* *-bench run.sh
md5sum *-bench tests/* > $W/md5.txt
REQUIRE_GPU=1 timeout 200 ./tests/gpu_sampler --test-threads=1 --nocapture > $W/test-gpu_sampler.log 2>&1; rc=$?; echo "gpu_sampler (v4) rc $rc $(( $(date +%s) - START ))s"; grep -E "test result|panicked|run |row [0-9]+:" $W/test-gpu_sampler.log | head -30
V4="v4=./v4-bench"; [ $rc -eq 0 ] || V4=""
CELLS="flat_topp095:f32:128256:1,flat_topp095:f32:128256:64,flat_topp095:f32:128256:256,flat_topp095:f32:151936:64,flat_topp095:f32:151936:256,peaked_topp095:f32:128256:64,peaked_topp095:f32:128256:256,heterogeneous:f32:128256:64,flat_full:f32:128256:64"
AB_SECONDS=80 timeout 300 bash ./run.sh ab $W/ab "$CELLS" 3 base=./base-bench d1=./d1-bench d2=./d2-bench v3=./v3-bench $V4 > $W/ab.log 2>&1; echo "ab rc $? $(( $(date +%s) - START ))s"; cat $W/ab/ab-table.txt
[ -n "$V4" ] && cp v4-bench sonic-bench && for cell in flat_topp095:f32:128256:256 flat_topp095:f32:128256:64 flat_topp095:f32:151936:64; do
  timeout 60 bash ./run.sh profile $cell $W/profile-v4 > $W/profile-v4-$(echo $cell | tr ':' '-').log 2>&1; echo "profile v4 $cell rc $? $(( $(date +%s) - START ))s"
done
rm -f $W/profile-v4/*.ncu-rep
for f in $W/profile-v4/*summary*.txt; do echo "== $f"; grep -E '^  [a-z_]+ \(|Duration' $f | paste - - | awk '{printf "%s %s; ", $1, $NF}'; echo; done
cp base-bench sonic-bench
for cell in flat_topp095:f32:128256:256 flat_full:f32:128256:256; do
  left=$(( 570 - ($(date +%s) - START) )); [ $left -gt 30 ] || break
  timeout $left bash ./run.sh profile-source $cell sample_tiles_mass $W/source > $W/source-$(echo $cell | tr ':' '-').log 2>&1; echo "source $cell rc $? $(( $(date +%s) - START ))s"; tail -3 $W/source-$(echo $cell | tr ':' '-').log
done
echo "elapsed $(( $(date +%s) - START ))"
