#!/usr/bin/env bash
# Run 7 (session 29): racecheck of v7's warp-run test stopped in run 6 with "process didn't
# terminate successfully" (rc 11) after 6 s. The test alone at reduced sizes; racecheck again
# with a large stack; racecheck of an older exact-pass test for comparison.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run7.tar.gz -C $W .' EXIT
C=$PWD/.carry; cd $C/b
python3 -c "import lzma,shutil; shutil.copyfileobj(lzma.open('tests/gpu_sampler.xz'), open('tests/gpu_sampler','wb'))"; chmod +x tests/gpu_sampler
md5sum tests/gpu_sampler > $W/md5.txt
export SONIC_SANITIZE=1; T=gpu_band_rows_taken_in_warp_runs_equal_reference
./tests/gpu_sampler $T --test-threads=1 > $W/plain-warp.log 2>&1; echo "plain rc $? $(( $(date +%s) - START ))s"; grep "test result" $W/plain-warp.log
ulimit -s unlimited; export RUST_MIN_STACK=67108864
timeout 130 compute-sanitizer --tool racecheck --error-exitcode 1 ./tests/gpu_sampler $T --test-threads=1 --nocapture > $W/racecheck-warp.log 2>&1; echo "racecheck warp rc $? $(( $(date +%s) - START ))s"; grep -E "RACECHECK SUMMARY|test result|Error|run (None|Some)" $W/racecheck-warp.log | head
timeout 130 compute-sanitizer --tool racecheck --error-exitcode 1 ./tests/gpu_sampler gpu_exact_pass_paths_equal_reference --test-threads=1 > $W/racecheck-paths.log 2>&1; echo "racecheck paths rc $? $(( $(date +%s) - START ))s"; grep -E "RACECHECK SUMMARY|test result|Error" $W/racecheck-paths.log | head
echo "elapsed $(( $(date +%s) - START ))"
