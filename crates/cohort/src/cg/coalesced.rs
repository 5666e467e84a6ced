//! Coalesced groups (`cg::coalesced_threads()`) and partitions (`labeled_partition`,
//! `binary_partition`).
//!
//! A coalesced group is a set of lanes of one warp, usually the ones that took a branch
//! together. Ranks count the group's lanes from the lowest: `thread_rank() = popc(mask &
//! lanemask_lt)`. Every member that takes a rank is **relative to the group**, as in CUDA:
//! `shfl(v, r)` reads the member of rank `r` (the caller's own value when the group has no
//! rank `r`; CUDA leaves that undefined), `shfl_down(v, d)` the member `d` ranks higher
//! (its own value when there is none), and `ballot`/`match_*` results have bit `r` for rank
//! `r` (packed, not lane bits).

use super::shfl::{self, MatchValue};
use super::{ThreadGroup, WarpGroup};
use crate::DeviceCopy;
use crate::raw;

/// A set of lanes of one warp.
#[derive(Clone, Copy, Debug)]
pub struct CoalescedGroup {
    mask: u32,
    meta_rank: u32,
    meta_size: u32,
}

/// `cg::coalesced_threads()`: the lanes running this code together (`__activemask()`).
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
#[must_use]
pub fn coalesced_threads() -> CoalescedGroup {
    CoalescedGroup { mask: raw::activemask(), meta_rank: 0, meta_size: 1 }
}

impl CoalescedGroup {
    /// A group of exactly the lanes in `mask`.
    ///
    /// # Safety
    /// The calling lane is in `mask`, and every lane in `mask` uses the group the same way
    /// (its collectives are `*.sync` instructions on `mask`).
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    #[must_use]
    pub unsafe fn from_mask(mask: u32) -> Self {
        Self { mask, meta_rank: 0, meta_size: 1 }
    }

    /// The group's lanes (bit *i* = lane *i*).
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    #[must_use]
    pub fn mask(&self) -> u32 {
        self.mask
    }

    /// The lane of the member of rank `rank` (32 if there is none).
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    fn lane_of(&self, rank: u32) -> u32 {
        if self.mask == u32::MAX {
            if rank < 32 { rank } else { 32 }
        } else {
            let l = raw::fns(self.mask, 0, rank as i32 + 1);
            if l == u32::MAX { 32 } else { l }
        }
    }
}

/// Packs the bits of `bits` at the lanes of `mask` into rank order (bit *r* for rank *r*).
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub(crate) fn pack_lanes(mask: u32, bits: u32) -> u32 {
    if mask == u32::MAX {
        return bits;
    }
    let (mut m, mut out, mut r) = (mask, 0u32, 0u32);
    while m != 0 {
        let lane = m.trailing_zeros();
        out |= ((bits >> lane) & 1) << r;
        r += 1;
        m &= m - 1;
    }
    out
}

impl ThreadGroup for CoalescedGroup {
    type Size = u32;
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    fn thread_rank(&self) -> u32 {
        (self.mask & raw::lanemask_lt()).count_ones()
    }
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    fn num_threads(&self) -> u32 {
        self.mask.count_ones()
    }
    #[inline(always)]
    #[cfg_attr(any(cohort_checked, not(target_arch = "nvptx64")), track_caller)]
    fn sync(&self) {
        crate::check::warp("sync", self.lane_mask());
        // SAFETY: the group's lanes reach its sync together with its mask.
        unsafe { raw::bar_warp_sync(self.mask) }
    }
}

impl WarpGroup for CoalescedGroup {
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    fn lane_mask(&self) -> u32 {
        self.mask
    }
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    fn meta_group_rank(&self) -> u32 {
        self.meta_rank
    }
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    fn meta_group_size(&self) -> u32 {
        self.meta_size
    }
    #[inline(always)]
    #[cfg_attr(any(cohort_checked, not(target_arch = "nvptx64")), track_caller)]
    fn shfl<T: DeviceCopy>(&self, v: T, src_rank: u32) -> T {
        crate::check::warp("shfl", self.lane_mask());
        // A rank the group does not have reads the caller's own value (a lane outside the
        // group is not a member, and its value is not defined for the group).
        let lane = self.lane_of(src_rank);
        let lane = if lane >= 32 { raw::laneid() } else { lane };
        // SAFETY: every member executes the group's collective with the group's mask.
        unsafe { shfl::idx(self.mask, v, lane, raw::shfl_c(32, false)) }
    }
    #[inline(always)]
    #[cfg_attr(any(cohort_checked, not(target_arch = "nvptx64")), track_caller)]
    fn shfl_up<T: DeviceCopy>(&self, v: T, delta: u32) -> T {
        crate::check::warp("shfl_up", self.lane_mask());
        if self.mask == u32::MAX {
            // SAFETY: the whole warp is the group.
            return unsafe { shfl::up(u32::MAX, v, delta, raw::shfl_c(32, true)) };
        }
        let me = raw::laneid();
        let lane = raw::fns(self.mask, me, -(delta as i32 + 1));
        let lane = if lane >= 32 { me } else { lane };
        // SAFETY: every member executes the group's collective with the group's mask.
        unsafe { shfl::idx(self.mask, v, lane, raw::shfl_c(32, false)) }
    }
    #[inline(always)]
    #[cfg_attr(any(cohort_checked, not(target_arch = "nvptx64")), track_caller)]
    fn shfl_down<T: DeviceCopy>(&self, v: T, delta: u32) -> T {
        crate::check::warp("shfl_down", self.lane_mask());
        if self.mask == u32::MAX {
            // SAFETY: the whole warp is the group.
            return unsafe { shfl::down(u32::MAX, v, delta, raw::shfl_c(32, false)) };
        }
        let me = raw::laneid();
        let lane = raw::fns(self.mask, me, delta as i32 + 1);
        let lane = if lane >= 32 { me } else { lane };
        // SAFETY: every member executes the group's collective with the group's mask.
        unsafe { shfl::idx(self.mask, v, lane, raw::shfl_c(32, false)) }
    }
    #[inline(always)]
    #[cfg_attr(any(cohort_checked, not(target_arch = "nvptx64")), track_caller)]
    fn any(&self, pred: bool) -> bool {
        crate::check::warp("any", self.lane_mask());
        // SAFETY: as for `shfl`.
        unsafe { raw::vote_sync_any(self.mask, pred) }
    }
    #[inline(always)]
    #[cfg_attr(any(cohort_checked, not(target_arch = "nvptx64")), track_caller)]
    fn all(&self, pred: bool) -> bool {
        crate::check::warp("all", self.lane_mask());
        // SAFETY: as for `shfl`.
        unsafe { raw::vote_sync_all(self.mask, pred) }
    }
    #[inline(always)]
    #[cfg_attr(any(cohort_checked, not(target_arch = "nvptx64")), track_caller)]
    fn ballot(&self, pred: bool) -> u32 {
        crate::check::warp("ballot", self.lane_mask());
        // SAFETY: as for `shfl`.
        pack_lanes(self.mask, unsafe { raw::vote_sync_ballot(self.mask, pred) })
    }
    #[inline(always)]
    #[cfg_attr(any(cohort_checked, not(target_arch = "nvptx64")), track_caller)]
    fn match_any<T: MatchValue>(&self, v: T) -> u32 {
        crate::check::warp("match_any", self.lane_mask());
        // SAFETY: as for `shfl`.
        pack_lanes(self.mask, unsafe { shfl::match_any(self.mask, v) })
    }
    #[inline(always)]
    #[cfg_attr(any(cohort_checked, not(target_arch = "nvptx64")), track_caller)]
    fn match_all<T: MatchValue>(&self, v: T) -> (u32, bool) {
        crate::check::warp("match_all", self.lane_mask());
        // SAFETY: as for `shfl`.
        let (m, p) = unsafe { shfl::match_all(self.mask, v) };
        (pack_lanes(self.mask, m), p)
    }
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    fn redux_mask(&self) -> Option<u32> {
        Some(self.mask)
    }
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    fn is_tile(&self) -> bool {
        self.mask == u32::MAX
    }
}

/// `cg::labeled_partition(group, label)`: splits a warp-level group (a tile of ≤ 32 or a
/// coalesced group) into one coalesced group per distinct `label` (`match.any.sync`, sm_70+).
///
/// `meta_group_size()` is the number of distinct labels and `meta_group_rank()` this
/// group's rank among them, ordered by their lowest lane. (CUDA's implementation stores the
/// leader's lane offset instead, which is not a rank when groups interleave; Cohort gives the
/// dense rank `0..meta_group_size`.)
#[inline(always)]
#[must_use]
#[cfg_attr(any(cohort_checked, not(target_arch = "nvptx64")), track_caller)]
pub fn labeled_partition<G: WarpGroup, L: MatchValue>(group: &G, label: L) -> CoalescedGroup {
    let parent = group.lane_mask();
    crate::check::warp("labeled_partition", parent);
    // SAFETY: every member of `group` calls the partition with the group's mask.
    let sub = unsafe { shfl::match_any(parent, label) };
    let leader = sub.trailing_zeros();
    // SAFETY: as above.
    let leaders = unsafe { raw::vote_sync_ballot(parent, raw::laneid() == leader) };
    let below = if leader == 0 { 0 } else { leaders & ((1u32 << leader) - 1) };
    CoalescedGroup { mask: sub, meta_rank: below.count_ones(), meta_size: leaders.count_ones() }
}

/// `cg::binary_partition(group, pred)`: splits a warp-level group in two by `pred`
/// (`vote.ballot.sync`). As in CUDA, `meta_group_size()` is 2 and `meta_group_rank()` is
/// `pred as u32`, unless every member voted alike: then the group is returned whole with
/// rank 0 of 1.
#[inline(always)]
#[must_use]
#[cfg_attr(any(cohort_checked, not(target_arch = "nvptx64")), track_caller)]
pub fn binary_partition<G: WarpGroup>(group: &G, pred: bool) -> CoalescedGroup {
    let parent = group.lane_mask();
    crate::check::warp("binary_partition", parent);
    // SAFETY: every member of `group` calls the partition with the group's mask.
    let set = unsafe { raw::vote_sync_ballot(parent, pred) };
    if set == parent || set == 0 {
        CoalescedGroup { mask: parent, meta_rank: 0, meta_size: 1 }
    } else {
        let mask = if pred { set } else { parent & !set };
        CoalescedGroup { mask, meta_rank: pred as u32, meta_size: 2 }
    }
}

impl<T> crate::slice::AppendSlice<'_, T> {
    /// [`push`](Self::push) aggregated over the lanes that call it together (CUDA's
    /// warp-aggregated atomic): the lanes running this call form a coalesced group, its rank 0
    /// claims one slot per member with a single atomic add, and each member writes the slot
    /// `base + its rank` — one atomic per group instead of one per lane, slots consecutive in
    /// rank order. Returns the slot, or `None` (writing nothing) past the end.
    #[inline(always)]
    #[cfg_attr(any(cohort_checked, not(target_arch = "nvptx64")), track_caller)]
    pub fn push_aggregated(&self, value: T) -> Option<usize> {
        let g = coalesced_threads();
        let base = if g.thread_rank() == 0 { self.claim(g.num_threads() as usize) as u64 } else { 0 };
        let slot = g.shfl(base, 0) as usize + g.thread_rank() as usize;
        if slot < self.capacity() {
            // SAFETY: rank 0 claimed `num_threads()` consecutive slots from `base` for the group
            // (`claim`: nobody else gets them), and each member takes `base + rank` — ranks are
            // distinct and below `num_threads()`, and every member uses the same `base` (the
            // shuffle of rank 0's value over the group's mask); in bounds by the test above.
            unsafe { self.write_slot(slot, value) };
            Some(slot)
        } else {
            None
        }
    }
}
