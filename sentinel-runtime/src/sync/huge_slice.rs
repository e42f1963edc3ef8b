//! [`HugeSlice`]: a slice of fixed length in one allocation that, when it spans at least one
//! 2 MiB huge page, starts on a 2 MiB boundary and (on Linux) asks the kernel for transparent
//! huge pages.
//!
//! A hotspot rule's table is read at random: a lookup touches two buckets anywhere in tens of
//! megabytes. With 4 KiB pages nearly every lookup also missed the TLB and walked the page
//! tables; with 2 MiB pages the whole table needs a few dozen TLB entries (a table of capacity
//! 1 million: 125 -> 112 ns a lookup, `madvise` against `always` in
//! `/sys/kernel/mm/transparent_hugepage/enabled`). The advice is a hint: where huge pages are
//! off or unavailable the slice works the same on ordinary pages.

use std::alloc::{self, Layout};
use std::ops::Deref;
use std::ptr::NonNull;

/// The size of an x86_64 (and aarch64 4 KiB-granule) transparent huge page.
const HUGE_PAGE: usize = 2 << 20;

/// A fixed slice of `T` (see the module docs). Owns its elements as a `Box<[T]>` would.
pub(crate) struct HugeSlice<T> {
    ptr: NonNull<T>,
    len: usize,
    /// The allocation's layout; size 0: nothing was allocated (`ptr` dangles).
    layout: Layout,
}

// SAFETY: a `HugeSlice<T>` owns its `T`s exactly as a `Box<[T]>` does (no shared ownership, no
// interior pointer handed out beyond `&self`'s lifetime): sending it sends the `T`s, and sharing
// it shares only `&[T]`.
unsafe impl<T: Send> Send for HugeSlice<T> {}
// SAFETY: as above; `&HugeSlice<T>` gives access to `&T` only.
unsafe impl<T: Sync> Sync for HugeSlice<T> {}

impl<T> HugeSlice<T> {
    /// A slice of `len` elements, element `i` being `init(i)`.
    ///
    /// # Panics
    ///
    /// If `len` elements of `T` exceed `isize::MAX` bytes (as `Vec` does), or if `init`
    /// panics (the elements built so far are dropped and the allocation freed).
    pub(crate) fn from_fn(len: usize, init: impl FnMut(usize) -> T) -> HugeSlice<T> {
        let Ok(array) = Layout::array::<T>(len) else {
            panic!("HugeSlice: {len} elements overflow the address space");
        };
        if array.size() == 0 {
            // Nothing to allocate; zero-sized elements are still built (and dropped).
            let slice = HugeSlice {
                ptr: NonNull::dangling(),
                len: 0,
                layout: array,
            };
            return slice.fill(len, init);
        }
        let align = if array.size() >= HUGE_PAGE {
            HUGE_PAGE.max(array.align())
        } else {
            array.align()
        };
        let Ok(layout) = Layout::from_size_align(array.size(), align) else {
            panic!("HugeSlice: {len} elements overflow the address space");
        };
        // SAFETY: `layout` has a non-zero size (checked above).
        let raw = unsafe { alloc::alloc(layout) }.cast::<T>();
        let Some(ptr) = NonNull::new(raw) else {
            alloc::handle_alloc_error(layout)
        };
        #[cfg(target_os = "linux")]
        if align == HUGE_PAGE {
            // Only whole huge pages of our own allocation are advised: the kernel rounds a length
            // up to a page, so advising the ragged tail could mark a neighbour's page too.
            let advised = layout.size() & !(HUGE_PAGE - 1);
            // SAFETY: `raw` starts a live allocation of `layout.size()` bytes, 2 MiB aligned, and
            // `advised` (a non-zero multiple of 2 MiB, as `layout.size() >= HUGE_PAGE`) lies
            // within it, so the range covers our pages only. `MADV_HUGEPAGE` sets a flag on that
            // range of the mapping (the kernel may split the mapping's area to do so) and changes
            // no content, so no memory Rust can see changes. Its result is ignored: huge pages
            // are an optimisation.
            unsafe {
                libc::madvise(raw.cast(), advised, libc::MADV_HUGEPAGE);
            }
        }
        let slice = HugeSlice {
            ptr,
            len: 0,
            layout,
        };
        slice.fill(len, init)
    }

    /// Writes elements `self.len..len`; `self.len` counts those written, so a panic in `init`
    /// drops exactly those (and frees the allocation) as `self` unwinds.
    fn fill(mut self, len: usize, mut init: impl FnMut(usize) -> T) -> HugeSlice<T> {
        while self.len < len {
            let value = init(self.len);
            // SAFETY: the allocation holds `len` elements of `T` (or `T` is zero-sized and
            // `ptr` is dangling but aligned); element `self.len < len` is not yet initialised,
            // so writing it overwrites nothing.
            unsafe { self.ptr.as_ptr().add(self.len).write(value) };
            self.len += 1;
        }
        self
    }
}

impl<T> Deref for HugeSlice<T> {
    type Target = [T];

    #[inline(always)]
    fn deref(&self) -> &[T] {
        // SAFETY: `ptr` is aligned and non-null, and its first `len` elements are initialised
        // (`fill`) and live until `drop`; nothing hands out `&mut` to them.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl<T> Drop for HugeSlice<T> {
    fn drop(&mut self) {
        // SAFETY: the first `len` elements are initialised and dropped here once; the
        // allocation (if any) was made with `layout` and is freed once, after them.
        unsafe {
            std::ptr::drop_in_place(std::ptr::slice_from_raw_parts_mut(
                self.ptr.as_ptr(),
                self.len,
            ));
            if self.layout.size() != 0 {
                alloc::dealloc(self.ptr.as_ptr().cast(), self.layout);
            }
        }
    }
}

impl<T: std::fmt::Debug> std::fmt::Debug for HugeSlice<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn holds_what_it_was_built_with_at_any_size() {
        for len in [0, 1, 7, 1000, (HUGE_PAGE / 8) + 3] {
            let s = HugeSlice::from_fn(len, |i| i as u64 * 3);
            assert_eq!(s.len(), len);
            assert!(s.iter().enumerate().all(|(i, &v)| v == i as u64 * 3));
            if len * 8 >= HUGE_PAGE {
                assert_eq!(
                    s.as_ptr() as usize % HUGE_PAGE,
                    0,
                    "a large slice is 2 MiB aligned"
                );
            }
        }
        let units = HugeSlice::from_fn(5, |_| ());
        assert_eq!(units.len(), 5);
    }

    /// Every element built is dropped exactly once: at the slice's drop, or when a panicking
    /// `init` unwinds through the construction.
    #[test]
    fn drops_each_element_once_also_when_init_panics() {
        static DROPS: AtomicUsize = AtomicUsize::new(0);
        struct Counted;
        impl Drop for Counted {
            fn drop(&mut self) {
                DROPS.fetch_add(1, Ordering::SeqCst);
            }
        }
        drop(HugeSlice::from_fn(10, |_| Counted));
        assert_eq!(DROPS.swap(0, Ordering::SeqCst), 10);
        let built = std::panic::catch_unwind(|| {
            HugeSlice::from_fn(10, |i| {
                assert!(i < 4, "init fails at 4");
                Counted
            })
        });
        assert!(built.is_err());
        assert_eq!(DROPS.load(Ordering::SeqCst), 4);
    }
}
