//! The hosts an OrigaMIG instance owns: the whole fleet, or one partition of it.

use crate::fleet::HostId;
use std::ops::Range;

/// Every `step`-th host index from `start` below `end`, in fleet order. With `step` 1 it is a
/// contiguous range (the whole fleet, or a partition of racks in fleet order); with `step` k
/// it is the hosts whose index is `start` modulo k (an interleaved partition, which takes one
/// host of every k, so it holds hosts from every part of the fleet's fill order).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostSet {
    start: HostId,
    end: HostId,
    step: usize,
}

impl HostSet {
    /// Every host of a fleet of `n`.
    pub fn all(n: usize) -> Self {
        Self::range(0..n)
    }

    /// The hosts of a range of indices.
    pub fn range(r: Range<HostId>) -> Self {
        HostSet {
            start: r.start,
            end: r.end.max(r.start),
            step: 1,
        }
    }

    /// Hosts `start`, `start + step`, ... below `end` (`step` at least 1).
    pub fn strided(start: HostId, end: HostId, step: usize) -> Self {
        HostSet {
            start,
            end: end.max(start),
            step: step.max(1),
        }
    }

    /// The host indices, in fleet order.
    pub fn iter(&self) -> std::iter::StepBy<Range<HostId>> {
        (self.start..self.end).step_by(self.step)
    }

    pub fn contains(&self, h: HostId) -> bool {
        h >= self.start && h < self.end && (h - self.start).is_multiple_of(self.step)
    }

    pub fn len(&self) -> usize {
        if self.end <= self.start {
            0
        } else {
            (self.end - self.start).div_ceil(self.step)
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl std::fmt::Display for HostSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.step == 1 {
            write!(f, "{}..{}", self.start, self.end)
        } else {
            write!(f, "{}..{} step {}", self.start, self.end, self.step)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_strided_set_holds_every_kth_host_and_nothing_else() {
        let s = HostSet::strided(2, 11, 4);
        assert_eq!(s.iter().collect::<Vec<_>>(), vec![2, 6, 10]);
        assert_eq!(s.len(), 3);
        for h in 0..14 {
            assert_eq!(s.contains(h), [2, 6, 10].contains(&h), "host {h}");
        }
        let r = HostSet::range(3..7);
        assert_eq!(r.iter().collect::<Vec<_>>(), vec![3, 4, 5, 6]);
        assert_eq!((r.len(), r.contains(7), r.contains(2)), (4, false, false));
        assert!(HostSet::all(0).is_empty());
        assert_eq!(HostSet::strided(5, 5, 3).len(), 0);
    }
}
