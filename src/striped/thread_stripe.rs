//! Which stripe the calling thread uses: a number given to each thread at its first check, from
//! one counter, kept in a thread-local. No lock, and nothing that grows with the threads ever
//! seen: a thread that ends takes its number with it, and numbers are reduced modulo the
//! stripe count, so consecutive threads use consecutive stripes.

use crate::sync::ThreadCounter;
use core::cell::Cell;

/// The number the next thread to check gets.
static NEXT_THREAD_NUMBER: ThreadCounter = ThreadCounter::new(0);

/// A thread that has not checked yet.
const UNNUMBERED: usize = usize::MAX;

std::thread_local! {
    static THREAD_NUMBER: Cell<usize> = const { Cell::new(UNNUMBERED) };
}

/// The calling thread's number (the caller reduces it to a stripe).
#[inline]
pub(crate) fn current() -> usize {
    THREAD_NUMBER.with(|number| {
        let assigned = number.get();
        if assigned != UNNUMBERED {
            return assigned;
        }
        assign(number)
    })
}

#[cold]
fn assign(number: &Cell<usize>) -> usize {
    // ORDERING: Relaxed: the counter only hands out distinct numbers; nothing else is ordered by
    // it. Wrapping after usize::MAX threads is harmless (the mask keeps any value in range), but
    // skips the marker.
    let mut assigned = NEXT_THREAD_NUMBER.fetch_add(1, crate::sync::Ordering::Relaxed);
    if assigned == UNNUMBERED {
        assigned = 0;
    }
    number.set(assigned);
    assigned
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thread_keeps_its_number_and_threads_get_distinct_ones() {
        let mine = current();
        assert_eq!(current(), mine);
        let others: Vec<usize> = (0..4)
            .map(|_| std::thread::spawn(current).join().unwrap())
            .collect();
        let mut all = others.clone();
        all.push(mine);
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), 5, "{others:?} and {mine}");
    }
}
