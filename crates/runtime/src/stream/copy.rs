//! Asynchronous copies and fills on a stream ([`Stream::copy`], [`Stream::fill`],
//! [`Stream::fill_bytes`]), ordered by the tracker.

use super::Stream;
use crate::backend::Fill;
use crate::device::Doing;
use crate::error::{Error, Result};
use crate::track::{CopyDst, CopySrc, Use, run_tracked};

impl Stream {
    /// The body of [`Stream::copy`] (see there).
    pub(super) fn copy_impl<T: cohort::DeviceCopy>(&self, src: impl CopySrc<T>, dst: impl CopyDst<T>) -> Result<()> {
        cohort::assert_no_padding::<T>();
        let (s, d) = (src.use_read(), dst.use_write());
        let (sl, dl) = ((s.end - s.start) / size_of::<T>().max(1), (d.end - d.start) / size_of::<T>().max(1));
        if s.end - s.start != d.end - d.start {
            return Err(Error::Argument(format!("copy: the source has {sl} elements, the destination {dl}")));
        }
        if s.end == s.start {
            return Ok(());
        }
        let bytes = s.end - s.start;
        let (sp, dp) = (s.device_addr(), d.device_addr());
        let path = crate::peer::copy_path(&self.inner.gpu, &s, &d)?;
        self.inner.gpu.bind()?;
        run_tracked(&self.inner, &[s, d], || {
            let backend = &self.inner.gpu.backend;
            // SAFETY: both ranges are inside live allocations (their `Use`s were made from
            // borrows that last this call) of `bytes` bytes; the tracker ordered the copy
            // after conflicting work on other streams. A peer copy names both allocations'
            // contexts, which the allocations keep alive.
            unsafe {
                match path {
                    crate::peer::CopyPath::Local => backend.copy_async(dp, sp, bytes, self.inner.raw),
                    crate::peer::CopyPath::Peer(dc, sc) => {
                        backend.copy_peer_async(dp, dc, sp, sc, bytes, self.inner.raw)
                    }
                }
            }
            .map_err(|f| self.inner.gpu.fail(f, Doing::Call(format!("copying {bytes} B asynchronously"))))
        })
    }

    /// The body of [`Stream::fill_bytes`] (see there).
    pub(super) fn fill_bytes_impl<T: cohort::DeviceCopy>(&self, dst: impl CopyDst<T>, value: u8) -> Result<()> {
        cohort::assert_no_padding::<T>();
        let d = dst.use_write();
        self.memset(d, 1, u32::from(value))
    }

    /// The body of [`Stream::fill`] (see there).
    pub(super) fn fill_impl<T: cohort::DeviceCopy>(&self, dst: impl CopyDst<T>, value: T) -> Result<()> {
        cohort::assert_no_padding::<T>();
        let width = size_of::<T>();
        let mut bits = [0u8; 4];
        if !matches!(width, 1 | 2 | 4) {
            return Err(Error::Argument(format!(
                "fill: {} is {width} bytes; memset fills elements of 1, 2 or 4 bytes",
                std::any::type_name::<T>()
            )));
        }
        // SAFETY: `value` is `width` bytes, all initialized (`DeviceCopy` types have no
        // padding), and `bits` has room for them.
        unsafe { std::ptr::copy_nonoverlapping((&raw const value).cast::<u8>(), bits.as_mut_ptr(), width) };
        let v = match width {
            1 => u32::from(bits[0]),
            2 => u32::from(u16::from_ne_bytes([bits[0], bits[1]])),
            _ => u32::from_ne_bytes(bits),
        };
        self.memset(dst.use_write(), width, v)
    }

    fn memset(&self, d: Use<'_>, width: usize, value: u32) -> Result<()> {
        if !d.is_device() {
            return Err(Error::Argument("fill: the destination must be device memory".into()));
        }
        crate::peer::require_same(
            || "fill".into(),
            &self.inner.gpu,
            &d.alloc.gpu,
            "fill a buffer on a stream of its own Gpu",
        )?;
        let bytes = d.end - d.start;
        if bytes == 0 {
            return Ok(());
        }
        let (ptr, n) = (d.device_addr(), bytes / width);
        self.inner.gpu.bind()?;
        run_tracked(&self.inner, &[d], || {
            let raw = self.inner.raw;
            let fill = match width {
                1 => Fill::U8(value as u8),
                2 => Fill::U16(value as u16),
                _ => Fill::U32(value),
            };
            // SAFETY: `ptr..ptr+bytes` is inside a live device allocation, aligned for `width`
            // (the view's element type is `width` bytes, or `width` is 1); ordered by the
            // tracker.
            unsafe { self.inner.gpu.backend.memset_async(ptr, fill, n, raw) }
                .map_err(|f| self.inner.gpu.fail(f, Doing::Call(format!("filling {bytes} B asynchronously"))))
        })
    }
}
