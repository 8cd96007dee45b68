#!/usr/bin/env bash
# Run 1 (session 30): main (v8 kernels, e51cb55). The gpu_sampler binary with the warp-run test's
# new setup; Nsight kernel durations of heterogeneous B 64 / 256, and of the B 1 steps.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run1.tar.gz -C $W .' EXIT
C=$PWD/.carry; cd $C/b
unxz() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[1][:-3],'wb'))" "$1" && rm "$1"; }
for f in tests/*.xz *.xz; do unxz $f; done; chmod +x tests/* sonic-bench run.sh
md5sum sonic-bench tests/* > $W/md5.txt
timeout 150 ./tests/gpu_sampler --test-threads=1 > $W/gpu_sampler.log 2>&1; echo "gpu_sampler rc $? $(( $(date +%s) - START ))s"; grep -E "test result|FAILED|panicked|mismatch" $W/gpu_sampler.log | head -20
for cell in heterogeneous:f32:128256:64 heterogeneous:f32:128256:256 random_full:f32:128256:64 topk50_topp09_t07:f32:128256:1 random_full:f32:128256:1 greedy:f32:128256:1 heterogeneous:f32:128256:8; do
  timeout 60 bash ./run.sh profile $cell $W/profile > $W/profile-$(echo $cell | tr ':' '-').log 2>&1; echo "profile $cell rc $? $(( $(date +%s) - START ))s"
done
rm -f $W/profile/*.ncu-rep
for f in $W/profile/*summary*.txt; do echo "== $f"; grep -E '^  [a-z_0-9]+ \(|Duration' $f | paste - - | awk '{printf "%s %s %s; ", $1, $(NF-1), $NF}'; echo; done
echo "elapsed $(( $(date +%s) - START ))"
