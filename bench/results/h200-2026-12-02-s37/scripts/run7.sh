#!/usr/bin/env bash
# Run 7 (session 37): the final HEAD (e1e20d8; s2's PTX), after the review's no-op changes to the host's
# `last_step_two_per_sm` hook and gpu_exact_pass_paths_equal_reference sized from the SM count
# and asserting which builds each step took. The five GPU test binaries.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run7.tar.gz -C $W .' EXIT
el() { echo $(( $(date +%s) - START )); }
C=$PWD/.carry; cd $C/b
unxz() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[1][:-3],'wb'))" "$1" && rm "$1"; }
for f in tests/*.xz; do unxz $f; done; chmod +x tests/* run.sh
md5sum tests/* > $W/md5.txt
timeout 330 bash ./run.sh > $W/tests.log 2>&1; echo "tests rc $? $(el)s"; tail -1 $W/tests.log; grep -E "test result|FAILED|panicked|mismatch" $W/tests.log | head -12
grep -E "rows split|steps of one" $W/tests.log | head -20
echo "elapsed $(el)"
