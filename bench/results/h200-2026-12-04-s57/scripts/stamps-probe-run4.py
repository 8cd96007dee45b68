# Adds the overhead probe to the stamps build (device: stamp_now kernel; host: probe replays).
p='/work/main/sampler-kernels/src/spec.rs'
s=open(p).read()
anchor="const ST_KERNEL: u32 = 10240;\n"
assert s.count(anchor)==1
s=s.replace(anchor, anchor+'''/// STAMPS: the GPU time just before a probed replay (one thread).
#[no_mangle]
pub unsafe extern "ptx-kernel" fn stamp_now() { unsafe { st_base().add(ST_KERNEL as usize + 8).write_volatile(st_now()) } }
''')
open(p,'w').write(s)
p='/work/main/tests/src/verify_bench.rs'
s=open(p).read()
old='''    verifier.upload_verify(&requests)?;
    let stamps = std::env::var("SONIC_STAMPS").is_ok();'''
new='''    if std::env::var("SONIC_STAMPS").is_ok() {
        // Probe: where the time between the events goes, for each graph, without an upload.
        let f = verifier.device().function("stamp_now")?;
        for k in 0..4 {
            verifier.device().stamps_clear()?;
            stream.memset_zeros(flush)?;
            let ev = super::events(&stream, 2)?;
            // SAFETY: a one-thread kernel with no parameters that writes one word of its own array.
            unsafe { stream.launch_builder(&f).launch(cudarc::driver::LaunchConfig { grid_dim: (1, 1, 1), block_dim: (1, 1, 1), shared_mem_bytes: 0 })? };
            ev[0].record(&stream)?;
            verifier.replay(&graphs[k % graphs.len()])?;
            ev[1].record(&stream)?;
            stream.synchronize()?;
            let ms = ev[0].elapsed_ms(&ev[1])?;
            let st = verifier.device().stamps_read()?;
            let t0 = !st[10240];
            let before = st[10240 + 8];
            let end = st[10240 + 5];
            println!(
                "PROBE {} V={} B={} graph {}: events {:.1} us, stamp_now to first block {:.1} us, first block to chains end {:.1} us",
                cell.workload.name(), cell.vocab, cell.batch, k % graphs.len(), ms as f64 * 1000.0,
                (t0 as f64 - before as f64) / 1000.0, (end as f64 - t0 as f64) / 1000.0
            );
        }
    }
    verifier.upload_verify(&requests)?;
    let stamps = std::env::var("SONIC_STAMPS").is_ok();'''
assert s.count(old)==1
s=s.replace(old,new)
open(p,'w').write(s)
