//! How to create a stream: [`StreamOptions`].

/// How to create a [`Stream`](crate::Stream): [`Gpu::new_stream_with`](crate::Gpu::new_stream_with).
#[derive(Clone, Copy, Debug, Default)]
pub struct StreamOptions {
    pub(super) non_blocking: bool,
    pub(super) priority: i32,
}

impl StreamOptions {
    /// A blocking stream of default priority (`cudaStreamCreate`).
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }
    /// A stream that does not synchronize with the legacy default stream
    /// (`cudaStreamNonBlocking`).
    #[must_use]
    pub fn non_blocking(mut self, yes: bool) -> Self {
        self.non_blocking = yes;
        self
    }
    /// Scheduling priority: lower numbers are higher priorities; see
    /// [`Gpu::stream_priority_range`](crate::Gpu::stream_priority_range). Values outside the range are clamped by the driver.
    #[must_use]
    pub fn priority(mut self, priority: i32) -> Self {
        self.priority = priority;
        self
    }
}
