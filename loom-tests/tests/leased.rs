//! The leased Redis limiter's lease word (`src/redis/leased/table.rs`, `LeaseCell`'s protocol):
//! spends racing a refill's claim and publish, and two refills racing for one key. No Redis:
//! the hooks drive the word alone.

use loom::sync::atomic::{AtomicUsize, Ordering};
use loom::sync::Arc;
use loom::thread;
use nanolimit::redis::loom_hooks::LeaseWord;
use nanolimit_loom_tests::{explore, UNREACHED_PREEMPTION_BOUND};

/// A word holding `units` spendable until grain 100, no refill in flight.
fn lease(units: u64) -> LeaseWord {
    let word = LeaseWord::default();
    word.claim(0).expect("a fresh word is not claimed");
    word.publish(0, units, 0, 100);
    word
}

#[test]
fn spends_racing_a_refill_neither_lose_nor_make_units() {
    explore(
        "spends_racing_a_refill_neither_lose_nor_make_units",
        UNREACHED_PREEMPTION_BOUND,
        || {
            let word = Arc::new(lease(2));
            let spender = {
                let word = Arc::clone(&word);
                thread::spawn(move || (0..2).filter(|_| word.spend(10, 1).is_some()).count())
            };
            // The refill: 3 units granted, 1 spent by its own request.
            let (granted, spent) = match word.claim(10) {
                Some(_) => {
                    word.publish(10, 3, 1, 200);
                    (3, 1)
                }
                // A spend moved the word between the claim's load and its swap.
                None => (0, 0),
            };
            let spends = spender.join().unwrap() as u64;
            // The 2 units held at the start always serve both spends.
            assert_eq!(spends, 2);
            assert_eq!(word.units(), 2 + granted - spent - spends);
        },
    );
}

#[test]
fn one_refill_of_a_key_at_a_time() {
    explore(
        "one_refill_of_a_key_at_a_time",
        UNREACHED_PREEMPTION_BOUND,
        || {
            let word = Arc::new(lease(1));
            let refilling = Arc::new(AtomicUsize::new(0));
            let refill = |word: Arc<LeaseWord>, refilling: Arc<AtomicUsize>| {
                move || {
                    if word.claim(10).is_some() {
                        // ORDERING: SeqCst: the model's own bookkeeping.
                        let holders = refilling.fetch_add(1, Ordering::SeqCst) + 1;
                        assert_eq!(holders, 1, "two refills of one key at once");
                        refilling.fetch_sub(1, Ordering::SeqCst);
                        word.publish(10, 1, 0, 200);
                        true
                    } else {
                        false
                    }
                }
            };
            let other = thread::spawn(refill(Arc::clone(&word), Arc::clone(&refilling)));
            let mine = refill(Arc::clone(&word), Arc::clone(&refilling))();
            let theirs = other.join().unwrap();
            // Nobody spends: a claim fails only while the other refill holds the word.
            assert!(mine || theirs);
            let refills = u64::from(mine) + u64::from(theirs);
            assert_eq!(word.units(), 1 + refills);
        },
    );
}
