//! What device functions do when they are compiled for the host.
//!
//! The device library builds for the host target too, so that rust-analyzer, clippy, rustdoc,
//! doctests and the host half of `#[kernel]` see real types, and so that kernel bodies run on
//! the CPU device: on the host, a device function's body calls the CPU engine
//! ([`cohort_cpu`]), which runs each CUDA thread of a launch as a coroutine and gives barriers,
//! warp collectives, grid sync and shared memory their GPU meaning. A device function that has
//! no CPU meaning yet goes through [`device_only`], which panics (inside a CPU launch, the
//! launch's `Err` names the call site, block and thread).
//!
//! Called outside a CPU launch (in a plain host function), the engine's operations panic:
//! they need a CUDA thread.

/// Panics, naming the device function that was called on the host.
#[cold]
#[inline(never)]
#[track_caller]
pub fn device_only(name: &str) -> ! {
    panic!(
        "`cohort::{name}` is a device function that does not run on the CPU device yet: it runs only \
         in a kernel on an NVIDIA GPU (target nvptx64-nvidia-cuda)"
    )
}

/// Expands to the device body on nvptx64; on every other target, to the host body when one is
/// given (`on_device!(name => { device } host => { host })`), else to [`device_only`].
macro_rules! on_device {
    ($name:expr => $body:block) => {{
        #[cfg(target_arch = "nvptx64")]
        {
            $body
        }
        #[cfg(not(target_arch = "nvptx64"))]
        {
            $crate::host::device_only($name)
        }
    }};
    ($name:expr => $body:block host => $host:block) => {{
        #[cfg(target_arch = "nvptx64")]
        {
            $body
        }
        #[cfg(not(target_arch = "nvptx64"))]
        {
            $host
        }
    }};
}
pub(crate) use on_device;

#[cfg(not(target_arch = "nvptx64"))]
pub use cpu::*;

#[cfg(not(target_arch = "nvptx64"))]
mod cpu {
    use core::sync::atomic::Ordering::SeqCst;
    use core::sync::atomic::{AtomicI32, AtomicI64, AtomicU32, AtomicU64};
    use std::vec::Vec;

    /// The shared address of a `shared!` static in the running block (`key`: the static's
    /// address), placed in the block's window the first time the block asks.
    #[doc(hidden)]
    #[track_caller]
    #[must_use]
    pub fn shared_static(key: usize, size: usize, align: usize) -> u32 {
        cohort_cpu::shared_static(key, size, align)
    }

    /// Nanoseconds since the first call in this process (the host's `%clock64`).
    #[must_use]
    pub(crate) fn clock_ns() -> u64 {
        static START: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
        START.get_or_init(std::time::Instant::now).elapsed().as_nanos() as u64
    }

    /// Nanoseconds since the Unix epoch (the host's `%globaltimer`).
    #[must_use]
    pub(crate) fn globaltimer_ns() -> u64 {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64)
    }

    /// `fns.b32` as the PTX ISA defines it: the `|offset|`-th set bit of `mask` counting from
    /// bit `base` (included) up (`offset > 0`) or down (`offset < 0`); for `offset == 0`, `base`
    /// if its bit is set; `0xffffffff` when there is none.
    #[must_use]
    pub(crate) fn fns(mask: u32, base: u32, offset: i32) -> u32 {
        if offset == 0 {
            return if base < 32 && mask >> base & 1 != 0 { base } else { u32::MAX };
        }
        let step: i64 = if offset > 0 { 1 } else { -1 };
        let mut count = offset.unsigned_abs() - 1;
        let mut pos = i64::from(base);
        while (0..32).contains(&pos) {
            if mask >> pos & 1 != 0 {
                if count == 0 {
                    return pos as u32;
                }
                count -= 1;
            }
            pos += step;
        }
        u32::MAX
    }

    /// A host pointer to shared address `addr` of the running block.
    #[inline]
    #[track_caller]
    pub(crate) fn shared_ptr(addr: u32) -> *mut u8 {
        cohort_cpu::shared_window().wrapping_add(addr as usize)
    }

    /// The atomic operations the host arms of `cohort::atomic` need, on the host memory the
    /// atomic lives in. Every operation is `SeqCst` (stronger than any PTX ordering it stands
    /// for). Float operations are compare-and-swap loops on the bits.
    pub(crate) trait HostAtomic: Copy {
        /// `*p`.
        ///
        /// # Safety
        /// `p` is valid and aligned for `Self` and accessed only atomically meanwhile.
        unsafe fn load(p: *mut Self) -> Self;
        /// `*p = v`. # Safety: as for `load`.
        unsafe fn store(p: *mut Self, v: Self);
        /// Compares bit patterns; returns the previous value. # Safety: as for `load`.
        unsafe fn cas(p: *mut Self, cur: Self, new: Self) -> Self;
        /// `op` (`"add"`, `"exch"`, `"and"`, `"or"`, `"xor"`, `"min"`, `"max"`, `"inc"`,
        /// `"dec"`) with `v`; returns the previous value. # Safety: as for `load`.
        unsafe fn rmw(p: *mut Self, op: &str, v: Self) -> Self;
    }

    macro_rules! host_int {
        ($t:ty, $a:ty) => {
            impl HostAtomic for $t {
                unsafe fn load(p: *mut Self) -> Self {
                    // SAFETY: the caller's contract (valid, aligned, only atomic accesses).
                    unsafe { <$a>::from_ptr(p) }.load(SeqCst)
                }
                unsafe fn store(p: *mut Self, v: Self) {
                    // SAFETY: as above.
                    unsafe { <$a>::from_ptr(p) }.store(v, SeqCst)
                }
                unsafe fn cas(p: *mut Self, cur: Self, new: Self) -> Self {
                    // SAFETY: as above.
                    let a = unsafe { <$a>::from_ptr(p) };
                    a.compare_exchange(cur, new, SeqCst, SeqCst).unwrap_or_else(|x| x)
                }
                unsafe fn rmw(p: *mut Self, op: &str, v: Self) -> Self {
                    // SAFETY: as above.
                    let a = unsafe { <$a>::from_ptr(p) };
                    match op {
                        "add" => a.fetch_add(v, SeqCst),
                        "exch" => a.swap(v, SeqCst),
                        "and" => a.fetch_and(v, SeqCst),
                        "or" => a.fetch_or(v, SeqCst),
                        "xor" => a.fetch_xor(v, SeqCst),
                        "min" => a.fetch_min(v, SeqCst),
                        "max" => a.fetch_max(v, SeqCst),
                        // atomicInc / atomicDec (`v` is the limit).
                        "inc" => {
                            a.try_update(SeqCst, SeqCst, |o| Some(if o >= v { 0 } else { o + 1 })).unwrap_or_else(|x| x)
                        }
                        "dec" => a
                            .try_update(SeqCst, SeqCst, |o| Some(if o == 0 || o > v { v } else { o - 1 }))
                            .unwrap_or_else(|x| x),
                        _ => unreachable!("atomic operation {op}"),
                    }
                }
            }
        };
    }
    host_int!(u32, AtomicU32);
    host_int!(i32, AtomicI32);
    host_int!(u64, AtomicU64);
    host_int!(i64, AtomicI64);

    macro_rules! host_float {
        ($t:ty, $bits:ty) => {
            impl HostAtomic for $t {
                unsafe fn load(p: *mut Self) -> Self {
                    // SAFETY: the caller's contract; the float and its bits have one layout.
                    <$t>::from_bits(unsafe { <$bits as HostAtomic>::load(p.cast()) })
                }
                unsafe fn store(p: *mut Self, v: Self) {
                    // SAFETY: as above.
                    unsafe { <$bits as HostAtomic>::store(p.cast(), v.to_bits()) }
                }
                unsafe fn cas(p: *mut Self, cur: Self, new: Self) -> Self {
                    // SAFETY: as above.
                    <$t>::from_bits(unsafe { <$bits as HostAtomic>::cas(p.cast(), cur.to_bits(), new.to_bits()) })
                }
                unsafe fn rmw(p: *mut Self, op: &str, v: Self) -> Self {
                    match op {
                        // SAFETY: as above.
                        "exch" => <$t>::from_bits(unsafe { <$bits as HostAtomic>::rmw(p.cast(), "exch", v.to_bits()) }),
                        "add" => {
                            // A CAS loop on the bits: ends on NaN too (bits compare equal).
                            // SAFETY: as above.
                            let mut old = unsafe { Self::load(p) };
                            loop {
                                // SAFETY: as above.
                                let seen = unsafe { Self::cas(p, old, old + v) };
                                if seen.to_bits() == old.to_bits() {
                                    return old;
                                }
                                old = seen;
                            }
                        }
                        _ => unreachable!("float atomic operation {op}"),
                    }
                }
            }
        };
    }
    host_float!(f32, u32);
    host_float!(f64, u64);

    /// Formats CUDA's device `printf` on the host: the C format string at `format` with the
    /// arguments laid out as `cohort::print::ArgBuffer` lays them out (each at its natural
    /// alignment: 4 bytes for `%d %i %u %x %X %o %c` without a `l`/`ll`/`z`/`j`/`t` length, 8
    /// for the rest), each conversion formatted by the C library's `snprintf` as the GPU's
    /// `vprintf` formats it. Hands the text, whole, to the running launch's printf buffer
    /// ([`cohort_cpu::device_print`]: written to stdout when the host launch returns, as a GPU's
    /// driver writes its buffer when the host synchronizes); returns the number of arguments
    /// read.
    ///
    /// # Safety
    /// `format` must be a NUL-terminated C string whose conversions match the values in
    /// `args`; a `%s` argument must be a valid NUL-terminated string.
    pub(crate) unsafe fn printf(format: *const u8, args: *const u8) -> i32 {
        unsafe extern "C" {
            fn snprintf(buf: *mut u8, n: usize, fmt: *const u8, ...) -> i32;
        }
        // SAFETY: the caller's contract: a NUL-terminated string.
        let f = unsafe { core::ffi::CStr::from_ptr(format.cast()) }.to_bytes();
        let mut out = Vec::<u8>::new();
        let mut at = 0usize;
        let mut count = 0i32;
        let mut next = |size: usize| -> u64 {
            at = (at + size - 1) & !(size - 1);
            // SAFETY: the caller's contract: the buffer holds an argument of `size` bytes at
            // its natural alignment here.
            let v = unsafe {
                if size == 4 {
                    u64::from(args.add(at).cast::<u32>().read_unaligned())
                } else {
                    args.add(at).cast::<u64>().read_unaligned()
                }
            };
            at += size;
            count += 1;
            v
        };
        let mut i = 0;
        while i < f.len() {
            if f[i] != b'%' {
                out.push(f[i]);
                i += 1;
                continue;
            }
            if f.get(i + 1) == Some(&b'%') {
                out.push(b'%');
                i += 2;
                continue;
            }
            // One conversion: `%[flags][width][.precision][length]conv`.
            let start = i;
            i += 1;
            let mut stars = Vec::new();
            let mut long = false;
            while i < f.len() {
                let c = f[i];
                if c == b'*' {
                    stars.push(next(4) as u32 as i32);
                } else if matches!(c, b'l' | b'z' | b'j' | b't' | b'q' | b'L') {
                    long = true;
                } else if c.is_ascii_alphabetic() && c != b'h' {
                    break;
                }
                i += 1;
            }
            let conv = f.get(i).copied().unwrap_or(b'd');
            if !matches!(conv, b'd' | b'i' | b'u' | b'x' | b'X' | b'o' | b'c' | b's' | b'p' | b'f' | b'F' | b'e' | b'E')
                && !matches!(conv, b'g' | b'G' | b'a' | b'A')
            {
                // `%n` (which would write through its argument) and unknown conversions: the
                // argument is skipped and the text printed as it is.
                next(8);
                out.extend_from_slice(&f[start..(i + 1).min(f.len())]);
                i += 1;
                continue;
            }
            let mut spec: Vec<u8> = f[start..(i + 1).min(f.len())].to_vec();
            // Pass every integer as 64 bits (`ll`), every float as a double.
            let int = matches!(conv, b'd' | b'i' | b'u' | b'x' | b'X' | b'o' | b'c');
            if int && conv != b'c' {
                spec.retain(|&c| !matches!(c, b'l' | b'z' | b'j' | b't' | b'q' | b'h'));
                let last = spec.pop().unwrap_or(b'd');
                spec.extend_from_slice(b"ll");
                spec.push(last);
            }
            spec.push(0);
            let size = if int && !long { 4 } else { 8 };
            let raw = next(size);
            let v: u64 = if int && !long {
                // 32-bit argument: sign-extend for the signed conversions.
                if matches!(conv, b'd' | b'i') { raw as u32 as i32 as i64 as u64 } else { raw as u32 as u64 }
            } else {
                raw
            };
            let mut buf = [0u8; 512];
            let n = match (conv, stars.as_slice()) {
                (b'f' | b'F' | b'e' | b'E' | b'g' | b'G' | b'a' | b'A', s) => {
                    let d = f64::from_bits(v);
                    // SAFETY: `spec` is a NUL-terminated format of one conversion taking the
                    // star arguments and one double; `buf` is as long as we say.
                    unsafe {
                        match s {
                            [] => snprintf(buf.as_mut_ptr(), buf.len(), spec.as_ptr(), d),
                            [a] => snprintf(buf.as_mut_ptr(), buf.len(), spec.as_ptr(), *a, d),
                            [a, b, ..] => snprintf(buf.as_mut_ptr(), buf.len(), spec.as_ptr(), *a, *b, d),
                        }
                    }
                }
                (_, s) => {
                    // `%c` takes an int; `%s` / `%p` a pointer; the integers a long long.
                    // SAFETY: as above, with one integer or pointer argument; a `%s` pointer is
                    // a valid C string (the caller's contract).
                    unsafe {
                        if conv == b'c' {
                            let c = v as i32;
                            match s {
                                [] => snprintf(buf.as_mut_ptr(), buf.len(), spec.as_ptr(), c),
                                [a] => snprintf(buf.as_mut_ptr(), buf.len(), spec.as_ptr(), *a, c),
                                [a, b, ..] => snprintf(buf.as_mut_ptr(), buf.len(), spec.as_ptr(), *a, *b, c),
                            }
                        } else {
                            match s {
                                [] => snprintf(buf.as_mut_ptr(), buf.len(), spec.as_ptr(), v),
                                [a] => snprintf(buf.as_mut_ptr(), buf.len(), spec.as_ptr(), *a, v),
                                [a, b, ..] => snprintf(buf.as_mut_ptr(), buf.len(), spec.as_ptr(), *a, *b, v),
                            }
                        }
                    }
                }
            };
            let n = (n.max(0) as usize).min(buf.len() - 1);
            out.extend_from_slice(&buf[..n]);
            i += 1;
        }
        cohort_cpu::device_print(&out);
        count
    }
}
