import re,sys
p='/work/main/sampler-kernels/src/spec.rs'
s=open(p).read()
def ins_before(anchor, text, count=1):
    global s
    assert s.count(anchor)==count, (anchor, s.count(anchor))
    s=s.replace(anchor, text+anchor)
def ins_after(anchor, text, count=1):
    global s
    assert s.count(anchor)==count, (anchor, s.count(anchor))
    s=s.replace(anchor, anchor+text)
helpers = r'''
// ---- STAMPS (diagnostic build only) ----
core::arch::global_asm!(".visible .global .align 8 .b64 VERIFY_STAMPS[12288];");
#[inline(always)]
unsafe fn st_now() -> u64 { let t: u64; unsafe { core::arch::asm!("mov.u64 {0}, %globaltimer;", out(reg64) t, options(nostack)) }; t }
#[inline(always)]
unsafe fn st_base() -> *mut u64 { let a: u64; unsafe { core::arch::asm!("mov.u64 {0}, VERIFY_STAMPS;", out(reg64) a, options(pure, nomem, nostack)) }; a as *mut u64 }
#[inline(always)]
unsafe fn st_atom_max(slot: u32, v: u64) { unsafe { let a = st_base().add(slot as usize); core::arch::asm!("red.global.max.u64 [{0}], {1};", in(reg64) a, in(reg64) v, options(nostack)) } }
/// Row phase stamp: leader block's thread 0, plain store.
#[inline(always)]
unsafe fn stamp_row(grp: &Group, phase: u32) { unsafe { if thread_idx_x() == 0 && grp.g == 0 && grp.row < 512 { st_base().add((grp.row * 16 + phase) as usize).write_volatile(st_now()); } } }
#[inline(always)]
unsafe fn stamp_row_at(row: u32, phase: u32) { unsafe { if thread_idx_x() == 0 && row < 512 { st_base().add((row * 16 + phase) as usize).write_volatile(st_now()); } } }
/// Earliest (stored as !t under max) and latest.
#[inline(always)]
unsafe fn stamp_first(slot: u32) { unsafe { if thread_idx_x() == 0 { st_atom_max(slot, !st_now()); } } }
#[inline(always)]
unsafe fn stamp_last(slot: u32) { unsafe { if thread_idx_x() == 0 { st_atom_max(slot, st_now()); } } }
const ST_DRAW: u32 = 8192;
const ST_KERNEL: u32 = 10240;
// ---- end STAMPS ----
'''
ins_before("// ---------------------------------------------------------------------------------------------\n// Row groups: the blocks that share one target row.", helpers)
# verify_rows kernel start/end
ins_after("""    let grid = grid_dim_x();
    // SAFETY: the header has VERIFY_HEADER_WORDS words.
""", "    unsafe { stamp_first(ST_KERNEL) };\n")
s=s.replace("""            item = ld_shared_u32(smem(SM_ITEM));
            sync_threads();
        }
    }
}

/// The next item for a group's leader""","""            item = ld_shared_u32(smem(SM_ITEM));
            sync_threads();
        }
    }
    unsafe { stamp_last(ST_KERNEL + 1) };
}

/// The next item for a group's leader""")
assert "stamp_last(ST_KERNEL + 1)" in s
# row phases
ins_after("""        (map.read(), map.add(1).read())
    };
""", "    unsafe { stamp_row(grp, 0) };\n")
ins_before("""        let first_row = row - position;
        if past_rejection(p, grp, first_row, position) {""", "        stamp_row(grp, 1);\n")
ins_before("""        let greedy = s.temperature == 0.0;
        let draft = if position < vs.drafts""", "        stamp_row(grp, 2);\n")
ins_before("""        let mut max_key = block_max_u64(max_key);""", "        stamp_row(grp, 3);\n")
ins_before("""        let infinite = (counts >> 32) as u32;
        let q_total""", "        stamp_row(grp, 4);\n")
ins_before("""            Some(choose_bins(s.top_k, s.top_p))""", "            stamp_row(grp, 5);\n")
ins_before("""        let (n_m, z_m, z_all) = match choice {""", "        stamp_row(grp, 6);\n")
ins_before("""        if greedy {
            let top = key_index(max_key);""", "        stamp_row(grp, 7);\n")
ins_before("""        if draft != NO_DRAFT {
            // SAFETY: slot < slots (request_ok).""", "        stamp_row(grp, 8);\n")
ins_before("""        let r64 = if tid == 0 && leader { draw_word""", "        stamp_row(grp, 9);\n")
# inside bin_histogram: after tile loop; after first grp.sync
ins_before("""        if grp.size == 1 {
            return false;
        }
        // Added before the exchange's group barrier""", "        stamp_row(grp, 10);\n")
ins_before("""        let stopped = ld_relaxed_gpu_u32(stop_seen) != 0;""", "        stamp_row(grp, 11);\n")
# gather_sorted: after for_each_key + sync, after sort
ins_before("""        let n = ld_relaxed_gpu_u32(counter);
        let n = if n < MERGE_CAPACITY { n } else { MERGE_CAPACITY };
        let padded = pow2_at_least(n);""", "        stamp_row(grp, 12);\n")
ins_after("""        block_sort_desc(padded);
""", "        stamp_row(grp, 13);\n")
# draws
s=s.replace("""pub unsafe extern "ptx-kernel" fn verify_draws(p: VerifyParams) {
    if block_dim_x() != SAMPLER_THREADS {
        return;
    }
""","""pub unsafe extern "ptx-kernel" fn verify_draws(p: VerifyParams) {
    if block_dim_x() != SAMPLER_THREADS {
        return;
    }
    unsafe { stamp_first(ST_KERNEL + 2) };
""")
s=s.replace("""            let local = item - offset;
            let row = ld_shared_u32(smem(SM_DRAW_LIST + (local / per_row) * 4));
            let first = (local % per_row) * span;
            let n = if p.tiles - first < span { p.tiles - first } else { span };
            draw_item(&p, row, first, n);""","""            let local = item - offset;
            let row = ld_shared_u32(smem(SM_DRAW_LIST + (local / per_row) * 4));
            let first = (local % per_row) * span;
            let n = if p.tiles - first < span { p.tiles - first } else { span };
            if row < 512 { stamp_first(ST_DRAW + row * 4); }
            draw_item(&p, row, first, n);
            if row < 512 { stamp_last(ST_DRAW + row * 4 + 1); }
            stamp_last(ST_KERNEL + 3);""")
assert "stamp_last(ST_KERNEL + 3)" in s
ins_before("""        // (One call site of `pick`: each inlined copy is tens of kilobytes of SASS.)""", "        if row < 512 { stamp_row_at(ST_DRAW / 16 + row / 4, 0); }\n".replace("stamp_row_at(ST_DRAW / 16 + row / 4, 0)","if thread_idx_x() == 0 { st_base().add((ST_DRAW + row * 4 + 2) as usize).write_volatile(st_now()); }"))
ins_before("""        let lp = if plan.want_lp { plan.sum.logprob_of(key, plan.ln_z) } else { f32::NAN };
        if thread_idx_x() == 0 {
            // `pending` stays set""", "        if row < 512 && thread_idx_x() == 0 { st_base().add((ST_DRAW + row * 4 + 3) as usize).write_volatile(st_now()); }\n")
# chains
s=s.replace("""pub unsafe extern "ptx-kernel" fn verify_chains(p: VerifyParams) {
    let request = block_idx_x() * block_dim_x() + thread_idx_x();
""","""pub unsafe extern "ptx-kernel" fn verify_chains(p: VerifyParams) {
    let request = block_idx_x() * block_dim_x() + thread_idx_x();
    unsafe { stamp_first(ST_KERNEL + 4) };
""")
s=s.replace("""            red_add_global_u64(p.chain_stats as *mut u64, stopped as u64 | (ran as u64) << 32);
        }
    }
}""","""            red_add_global_u64(p.chain_stats as *mut u64, stopped as u64 | (ran as u64) << 32);
        }
        stamp_last(ST_KERNEL + 5);
    }
}""")
assert "stamp_last(ST_KERNEL + 5)" in s
open(p,'w').write(s)
print("ok")
