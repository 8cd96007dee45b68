# Probe v2: per-row phases of a flushed and an unflushed replay (no upload between).
p='/work/main/tests/src/verify_bench.rs'
s=open(p).read()
old='''        for k in 0..4 {
            verifier.device().stamps_clear()?;
            stream.memset_zeros(flush)?;'''
new='''        for k in 0..4 {
            verifier.device().stamps_clear()?;
            if k % 2 == 0 {
                stream.memset_zeros(flush)?;
            }'''
assert s.count(old)==1
s=s.replace(old,new)
old='''                cell.workload.name(), cell.vocab, cell.batch, k % graphs.len(), ms as f64 * 1000.0,
                (t0 as f64 - before as f64) / 1000.0, (end as f64 - t0 as f64) / 1000.0
            );'''
new='''                cell.workload.name(), cell.vocab, cell.batch, k % graphs.len(), ms as f64 * 1000.0,
                (t0 as f64 - before as f64) / 1000.0, (end as f64 - t0 as f64) / 1000.0
            );
            println!("PROBE {}", if k % 2 == 0 { "flushed" } else { "not flushed" });
            print_stamps(&st, cell, rows, &drafts);'''
assert s.count(old)==1
s=s.replace(old,new)
s=s.replace('''verifier.replay(&graphs[k % graphs.len()])?;''','''verifier.replay(&graphs[0])?;''')
s=s.replace('''cell.workload.name(), cell.vocab, cell.batch, k % graphs.len(), ms''','''cell.workload.name(), cell.vocab, cell.batch, 0, ms''')
open(p,'w').write(s)
