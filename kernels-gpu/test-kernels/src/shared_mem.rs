//! Static and dynamic shared memory, shared atomics, and `memcpy_async` on every alignment.

use cohort::cg::{self, ThreadGroup};
use cohort::prelude::*;
use cohort::shared;

use crate::cg_collectives::S24;

/// A 16-byte aligned element (vector loads and stores).
#[repr(C, align(16))]
#[derive(Clone, Copy, Debug, Default, PartialEq, DeviceCopy)]
pub struct V4 {
    /// x
    pub x: f32,
    /// y
    pub y: f32,
    /// z
    pub z: f32,
    /// w
    pub w: f32,
}

cohort::shared! {
    static S_U8: [u8; 256];
    static S_U16: [u16; 256];
    static S_U64: [u64; 256];
    static S_F64: [f64; 256];
    static S_W3: [[u32; 3]; 256];
    static S_S24: [S24; 256];
    static S_V4: [V4; 256];
    static COUNTS: [u32; 64];
    static COPY: [u8; 4096];
    static COPY_WORDS: [u32; 64];
}

/// Each thread stores its element in dynamic shared memory, the block syncs, each reads the
/// element of the thread at the mirrored rank: `out[i] = vals[block_base + (size - 1 - rank)]`
/// (launch with `block size * size_of::<T>()` bytes of dynamic shared memory).
#[kernel(instances(u8, u16, u64, f64, [u32; 3], S24, V4))]
pub fn shared_reverse<T: DeviceCopy>(vals: &[T], mut out: DisjointSlice<T>) {
    let i = thread::index_1d();
    let block = cg::this_thread_block();
    let (rank, size) = (block.thread_rank() as usize, block.num_threads() as usize);
    let a = shared::dynamic::<T>();
    a.store(rank, vals[*i]);
    block.sync();
    out.set(&i, a.load(size - 1 - rank));
}

/// (Blocks of at most 256 threads.) The same through static arrays of `u8`, `u16`, `u64`, `f64`, `[u32; 3]`, `S24` and `V4`
/// at once: `out[i]` gets the mirrored thread's element of each.
#[kernel]
pub fn static_reverse(
    a: &[u8],
    b: &[u16],
    c: &[u64],
    d: &[f64],
    e: &[[u32; 3]],
    f: &[S24],
    g: &[V4],
    mut out: DisjointSlice<Pack>,
) {
    let i = thread::index_1d();
    let block = cg::this_thread_block();
    let (rank, size) = (block.thread_rank() as usize, block.num_threads() as usize);
    let (sa, sb, sc, sd, se, sf, sg) =
        (S_U8.get(), S_U16.get(), S_U64.get(), S_F64.get(), S_W3.get(), S_S24.get(), S_V4.get());
    sa.store(rank, a[*i]);
    sb.store(rank, b[*i]);
    sc.store(rank, c[*i]);
    sd.store(rank, d[*i]);
    se.store(rank, e[*i]);
    sf.store(rank, f[*i]);
    sg.store(rank, g[*i]);
    block.sync();
    let m = size - 1 - rank;
    out.set(
        &i,
        Pack {
            a: sa.load(m) as u64,
            b: sb.load(m) as u64,
            c: sc.load(m),
            d: sd.load(m),
            e: se.load(m),
            pad: 0,
            pad2: [0; 2],
            f: sf.load(m),
            g: sg.load(m),
        },
    );
}

/// What [`static_reverse`] writes per thread.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, DeviceCopy)]
pub struct Pack {
    /// From the `u8` array.
    pub a: u64,
    /// From the `u16` array.
    pub b: u64,
    /// From the `u64` array.
    pub c: u64,
    /// From the `f64` array.
    pub d: f64,
    /// From the `[u32; 3]` array.
    pub e: [u32; 3],
    /// Padding made explicit (DeviceCopy structs have none).
    pub pad: u32,
    /// From the `S24` array.
    pub f: S24,
    /// Padding before the 16-byte aligned `g`, made explicit.
    pub pad2: [u32; 2],
    /// From the `V4` array.
    pub g: V4,
}

/// Dynamic shared memory: `out[i] = vals[block_base + (size - 1 - rank)]` through
/// `shared::dynamic::<u32>()`, and `lens[b]` = its length as the kernel sees it.
#[kernel]
pub fn dynamic_reverse(vals: &[u32], mut out: DisjointSlice<u32>, mut lens: DisjointSlice<u32>) {
    let i = thread::index_1d();
    let block = cg::this_thread_block();
    let (rank, size) = (block.thread_rank() as usize, block.num_threads() as usize);
    let dynamic = shared::dynamic::<u32>();
    dynamic.store(rank, vals[*i]);
    block.sync();
    out.set(&i, dynamic.load(size - 1 - rank));
    if rank == 0 {
        // SAFETY: only thread 0 of block b writes element b.
        unsafe { *lens.get_unchecked_mut(thread::block_idx_x() as usize) = dynamic.len() as u32 };
    }
}

/// A block-private histogram in shared memory with `atom.shared` adds, merged into global
/// counts: `counts[v % 64]` over all `vals`.
#[kernel]
pub fn shared_histogram(vals: &[u32], counts: &[AtomicU32]) {
    let block = cg::this_thread_block();
    let bins = COUNTS.get();
    let rank = block.thread_rank() as usize;
    if rank < 64 {
        bins.store(rank, 0);
    }
    block.sync();
    for i in thread::grid_stride(vals.len()) {
        bins.atomic((vals[*i] % 64) as usize).add_scoped(1, Ordering::Relaxed, Scope::Block);
    }
    block.sync();
    if rank < 64 {
        counts[rank].add(bins.load(rank), Ordering::Relaxed);
    }
}

/// `memcpy_async` of `bytes[offset..offset + len]` into shared memory (so every chunk width
/// and the byte fallback run), then back out: `out[b * 4096 + k]`.
#[kernel]
pub fn memcpy_offsets(bytes: &[u8], offset: u32, len: u32, mut out: DisjointSlice<u8>) {
    let block = cg::this_thread_block();
    let src = &bytes[offset as usize..(offset + len) as usize];
    let mut buf = COPY.get().as_slice();
    cg::memcpy_async(&block, &mut buf, src).wait(&block);
    let b = thread::block_idx_x() as usize;
    let mut k = block.thread_rank() as usize;
    while k < len as usize {
        // SAFETY: element b * 4096 + k is written by one thread.
        unsafe { *out.get_unchecked_mut(b * 4096 + k) = buf.load(k) };
        k += block.num_threads() as usize;
    }
}

/// `memcpy_async` of `u32` words then `u64` words at an element offset (8- and 4-byte
/// chunks), then back out.
#[kernel]
pub fn memcpy_words(words: &[u32], offset: u32, len: u32, mut out: DisjointSlice<u32>) {
    let block = cg::this_thread_block();
    let mut buf = shared::dynamic::<u32>();
    cg::memcpy_async(&block, &mut buf, &words[offset as usize..(offset + len) as usize]).wait(&block);
    let mut k = block.thread_rank() as usize;
    while k < len as usize {
        // SAFETY: element k is written by one thread (single block).
        unsafe { *out.get_unchecked_mut(k) = buf.load(k) };
        k += block.num_threads() as usize;
    }
}

cohort::constant! {
    /// A table in constant memory, which `memcpy_async` cannot read (`cp.async` reads global
    /// memory only): [`memcpy_from`] refuses it.
    pub static COPY_TABLE: [u32; 64] = {
        let mut t = [0u32; 64];
        let mut i = 0;
        while i < 64 {
            t[i] = 0x5eed_0000 + i as u32;
            i += 1;
        }
        t
    };
}

/// Where [`memcpy_from`] copies from.
pub mod copy_source {
    /// `words[..64]`, a kernel parameter: global memory.
    pub const PARAMETER: u32 = 0;
    /// The thread's own array: local memory.
    pub const LOCAL: u32 = 1;
    /// [`super::COPY_TABLE`]: constant memory.
    pub const CONSTANT: u32 = 2;
}

/// `memcpy_async` of 64 words from `source` (see [`copy_source`]) into shared memory, then
/// `out[i] = copied[i % 64]`. Only a global source is copied: a local array or a constant is a
/// panic at the `memcpy_async` call (a launch `Err`), never a `cp.async` fault.
#[kernel]
pub fn memcpy_from(source: u32, words: &[u32], mut out: DisjointSlice<u32>) {
    let block = cg::this_thread_block();
    let mut buf = COPY_WORDS.get().as_slice();
    let t = block.thread_rank();
    let local = [t.wrapping_mul(0x9e37_79b9); 64];
    let src: &[u32] = match source {
        copy_source::PARAMETER => &words[..64],
        copy_source::LOCAL => &local,
        _ => &COPY_TABLE[..],
    };
    cg::memcpy_async(&block, &mut buf, src).wait(&block);
    let i = thread::index_1d();
    let v = buf.load(*i % 64);
    out.set(&i, v);
}
