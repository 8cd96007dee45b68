# Sourced by the device scripts (bench/results/h200-2026-12-05-s61/scripts/ and -s62/) from the
# checkout's root, after they set START and W:
# unpacks .carry/ (each build's xz'd sonic-bench, run.sh, sonic-soak, test binaries and peers, as
# build-carry.sh packs them) in place, and defines
# `el` (seconds since START) and C (the unpacked .carry/), leaving the shell in C.
el() { echo $(( $(date +%s) - START )); }
C=$PWD/.carry; cd $C
unxz() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[1][:-3],'wb'))" "$1" && rm "$1"; }
for f in */*.xz */tests/*.xz */peers/*.xz; do [ -e "$f" ] && unxz "$f" & done; wait
chmod +x */sonic-bench */tests/* */run.sh
chmod +x */sonic-soak */peers/flashinfer_peers 2>/dev/null || true
