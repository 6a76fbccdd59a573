//! [`parallelize_until`]: client-go's `workqueue.ParallelizeUntil` — a fixed amount of work,
//! split into pieces and done by a bounded number of worker threads, until it is all done or
//! a stop condition holds.
//!
//! ```
//! use std::sync::atomic::{AtomicUsize, Ordering};
//! use kclient_workqueue::{parallelize_until, ParallelizeOptions};
//!
//! let done = AtomicUsize::new(0);
//! parallelize_until(|| false, 4, 1000, |_piece| {
//!     done.fetch_add(1, Ordering::Relaxed);
//! }, ParallelizeOptions::default().chunk_size(10));
//! assert_eq!(done.into_inner(), 1000);
//! ```

use std::sync::atomic::{AtomicUsize, Ordering};

/// How [`parallelize_until`] splits its work (client-go's `Options`, `WithChunkSize`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ParallelizeOptions {
    chunk_size: usize,
}

impl ParallelizeOptions {
    /// Hands the pieces to workers `size` at a time (client-go's `WithChunkSize`): fewer
    /// hand-overs when each piece is cheap. Below 1 counts as 1, the default.
    pub fn chunk_size(mut self, size: usize) -> Self {
        self.chunk_size = size;
        self
    }
}

/// Calls `do_work_piece(i)` for every piece `i` in `0..pieces`, on at most `workers` threads
/// (no more than there are chunks), and returns when every piece is done — or, once `stop`
/// returns true (asked before each piece), when the pieces already begun are (client-go's
/// `ParallelizeUntil`, its context being `stop`). Each piece is done at most once, in no
/// particular order across workers; within a chunk, in order. No work is done with 0 workers
/// or 0 pieces.
///
/// It blocks the calling thread: from async code, run it in `tokio::task::spawn_blocking`. A
/// panic in `do_work_piece` ends its worker and is raised again here once the others have
/// finished (client-go's `HandleCrash` crashes the process).
pub fn parallelize_until(
    stop: impl Fn() -> bool + Sync,
    workers: usize,
    pieces: usize,
    do_work_piece: impl Fn(usize) + Sync,
    options: ParallelizeOptions,
) {
    if pieces == 0 {
        return;
    }
    let chunk_size = options.chunk_size.max(1);
    let chunks = pieces.div_ceil(chunk_size);
    let workers = workers.min(chunks);
    let next_chunk = AtomicUsize::new(0);
    let work = || loop {
        let chunk = next_chunk.fetch_add(1, Ordering::Relaxed);
        if chunk >= chunks {
            return;
        }
        let start = chunk * chunk_size;
        for piece in start..(start + chunk_size).min(pieces) {
            if stop() {
                return;
            }
            do_work_piece(piece);
        }
    };
    let panicked = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..workers).map(|_| scope.spawn(work)).collect();
        // Every worker is joined; the first panic is kept to be raised with its own message.
        handles
            .into_iter()
            .filter_map(|h| h.join().err())
            .reduce(|first, _| first)
    });
    if let Some(payload) = panicked {
        std::panic::resume_unwind(payload);
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;
    use std::sync::atomic::AtomicBool;
    use std::sync::Mutex;

    use super::*;

    fn run(workers: usize, pieces: usize, chunk: usize) -> Vec<usize> {
        let done = Mutex::new(Vec::new());
        parallelize_until(
            || false,
            workers,
            pieces,
            |p| done.lock().unwrap().push(p),
            ParallelizeOptions::default().chunk_size(chunk),
        );
        let mut done = done.into_inner().unwrap();
        done.sort_unstable();
        done
    }

    /// client-go's parallelizer_test.go `TestParallelizeUntil`: every piece exactly once,
    /// whatever the workers and the chunk size.
    #[test]
    fn every_piece_is_done_exactly_once() {
        for (workers, pieces, chunk) in [
            (1, 1000, 1),
            (10, 1000, 1),
            (10, 1000, 3),
            (10, 1000, 1000),
            (10, 1000, 5000),
            (100, 3, 1),
            (4, 7, 0),
        ] {
            assert_eq!(
                run(workers, pieces, chunk),
                (0..pieces).collect::<Vec<_>>(),
                "{workers} workers, {pieces} pieces, chunks of {chunk}"
            );
        }
    }

    #[test]
    fn no_pieces_or_no_workers_do_nothing() {
        assert!(run(4, 0, 1).is_empty());
        assert!(run(0, 10, 1).is_empty());
    }

    /// Once `stop` holds, no new piece starts; the pieces begun before it finish.
    #[test]
    fn a_stop_ends_the_work_early() {
        let stopped = AtomicBool::new(false);
        let done = Mutex::new(HashSet::new());
        parallelize_until(
            || stopped.load(Ordering::SeqCst),
            3,
            10_000,
            |p| {
                done.lock().unwrap().insert(p);
                if p == 50 {
                    stopped.store(true, Ordering::SeqCst);
                }
            },
            ParallelizeOptions::default(),
        );
        let done = done.into_inner().unwrap();
        assert!(done.contains(&50));
        assert!(
            done.len() < 10_000,
            "{} pieces done after the stop",
            done.len()
        );
    }

    #[test]
    #[should_panic(expected = "piece 7")]
    fn a_panicking_piece_is_raised_to_the_caller() {
        parallelize_until(
            || false,
            2,
            20,
            |p| assert_ne!(p, 7, "piece 7"),
            ParallelizeOptions::default(),
        );
    }
}
