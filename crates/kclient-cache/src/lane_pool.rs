//! The threads that run handlers' lanes (see [`Listener::run`](crate::listener)): a few,
//! shared by every listener of the process, and more only while some are held by handlers that
//! block.
//!
//! A handler may block, so it cannot run on an async worker; giving each listener a thread of
//! its own (as tokio's blocking pool did, one `spawn_blocking` per lane) costs a thread per
//! listener with work — hundreds for an informer with a thousand handlers. Here a lane is a
//! job for a pool that keeps as many threads busy as the machine has cores (at least two),
//! the way Go's scheduler keeps `GOMAXPROCS` threads running goroutines. When a handler
//! blocks, its thread is lost to the others; a watcher notices that jobs wait while no job has
//! ended for [`PoolSettings::stall_check`] and starts more threads (as many as there are
//! threads, at most one per waiting job), as Go's `sysmon` hands a blocked thread's work to a
//! new one. So a blocked handler still delays only its own listener — the others by at most a
//! few stall checks — and a thousand handlers that do not block cost a couple of threads.
//! A thread idle for [`PoolSettings::idle_exit`] ends.

use std::collections::VecDeque;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use parking_lot::{Condvar, Mutex};

/// A lane: handles what its listener has queued, then returns.
pub(crate) type Job = Box<dyn FnOnce() + Send + 'static>;

/// How a pool sizes itself.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PoolSettings {
    /// Threads started as soon as jobs wait for one.
    pub(crate) eager: usize,
    /// How long jobs may wait with no job ending before more threads start.
    pub(crate) stall_check: Duration,
    /// How long a thread waits for a job before it ends.
    pub(crate) idle_exit: Duration,
}

impl PoolSettings {
    /// The process's pool: a thread per core (at least two), stalls checked every 10 ms
    /// (Go's `sysmon` looks at most every 10 ms), threads ended after 10 s idle (as tokio's
    /// blocking pool's).
    fn process() -> Self {
        PoolSettings {
            eager: std::thread::available_parallelism().map_or(2, |n| n.get().max(2)),
            stall_check: Duration::from_millis(10),
            idle_exit: Duration::from_secs(10),
        }
    }
}

/// What the pool's threads share.
struct State {
    jobs: VecDeque<Job>,
    /// Threads alive.
    threads: usize,
    /// Threads waiting for a job.
    idle: usize,
    /// Jobs ended so far: the watcher's sign of progress.
    ended: u64,
    /// Whether the stall watcher runs.
    watching: bool,
    /// The most threads alive at once.
    peak_threads: usize,
}

struct Shared {
    state: Mutex<State>,
    work: Condvar,
    /// Notified when a thread ends.
    #[cfg(test)]
    ended_thread: Condvar,
    settings: PoolSettings,
}

/// A pool of threads for lanes.
#[derive(Clone)]
pub(crate) struct LanePool {
    shared: Arc<Shared>,
}

impl LanePool {
    /// The pool every listener of the process uses.
    pub(crate) fn process() -> &'static LanePool {
        static POOL: OnceLock<LanePool> = OnceLock::new();
        POOL.get_or_init(|| LanePool::new(PoolSettings::process()))
    }

    pub(crate) fn new(settings: PoolSettings) -> Self {
        LanePool {
            shared: Arc::new(Shared {
                state: Mutex::new(State {
                    jobs: VecDeque::new(),
                    threads: 0,
                    idle: 0,
                    ended: 0,
                    watching: false,
                    peak_threads: 0,
                }),
                work: Condvar::new(),
                #[cfg(test)]
                ended_thread: Condvar::new(),
                settings,
            }),
        }
    }

    /// Runs `job` on one of the pool's threads, as soon as one is free.
    pub(crate) fn spawn(&self, job: Job) {
        let mut state = self.shared.state.lock();
        state.jobs.push_back(job);
        if state.idle >= state.jobs.len() {
            drop(state);
            self.shared.work.notify_one();
            return;
        }
        if state.idle > 0 {
            self.shared.work.notify_one();
        }
        if state.threads < self.shared.settings.eager {
            self.start_thread(&mut state);
        } else if !state.watching {
            state.watching = true;
            let pool = self.clone();
            let started = std::thread::Builder::new()
                .name("kclient-lanes-watch".into())
                .spawn(move || pool.watch());
            if started.is_err() {
                // Without a watcher the busy threads still take the job in turn.
                state.watching = false;
            }
        }
    }

    /// Whether jobs wait for a thread (a lane then ends at once instead of lingering).
    pub(crate) fn has_waiting_jobs(&self) -> bool {
        !self.shared.state.lock().jobs.is_empty()
    }

    /// Threads alive now, and the most alive at once so far.
    #[cfg(test)]
    pub(crate) fn threads(&self) -> (usize, usize) {
        let state = self.shared.state.lock();
        (state.threads, state.peak_threads)
    }

    fn start_thread(&self, state: &mut State) {
        let pool = self.clone();
        let started = std::thread::Builder::new()
            .name("kclient-lanes".into())
            .spawn(move || pool.work());
        match started {
            Ok(_) => {
                state.threads += 1;
                state.peak_threads = state.peak_threads.max(state.threads);
            }
            // The threads alive take the job in turn.
            Err(e) => tracing::warn!("could not start a thread for event handlers: {e}"),
        }
    }

    /// A thread's life: jobs until none comes for `idle_exit`.
    fn work(&self) {
        let mut state = self.shared.state.lock();
        loop {
            let Some(job) = state.jobs.pop_front() else {
                state.idle += 1;
                let timed_out = self
                    .shared
                    .work
                    .wait_for(&mut state, self.shared.settings.idle_exit)
                    .timed_out();
                state.idle -= 1;
                if timed_out && state.jobs.is_empty() {
                    state.threads -= 1;
                    #[cfg(test)]
                    self.shared.ended_thread.notify_all();
                    return;
                }
                continue;
            };
            drop(state);
            // A lane catches its handler's panics; anything else must not end the thread
            // with the pool's count of threads wrong.
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
            state = self.shared.state.lock();
            state.ended += 1;
        }
    }

    /// The stall watcher: while jobs wait, every `stall_check` with no job ended and no
    /// thread idle, starts as many threads again as there are (at most one per waiting job).
    fn watch(&self) {
        let mut last_ended = self.shared.state.lock().ended;
        loop {
            std::thread::sleep(self.shared.settings.stall_check);
            let mut state = self.shared.state.lock();
            if state.jobs.is_empty() {
                state.watching = false;
                return;
            }
            if state.ended == last_ended && state.idle == 0 {
                let more = state.threads.max(1).min(state.jobs.len());
                for _ in 0..more {
                    self.start_thread(&mut state);
                }
            }
            last_ended = state.ended;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc;

    use super::*;

    fn settings(eager: usize) -> PoolSettings {
        PoolSettings {
            eager,
            stall_check: Duration::from_millis(5),
            idle_exit: Duration::from_millis(200),
        }
    }

    /// Bounded: a failing test ends instead of hanging.
    const LIMIT: Duration = Duration::from_secs(30);

    #[test]
    fn a_thousand_quick_jobs_run_on_the_eager_threads() {
        let pool = LanePool::new(settings(2));
        let (done, finished) = mpsc::channel();
        for i in 0..1000 {
            let done = done.clone();
            pool.spawn(Box::new(move || done.send(i).unwrap()));
        }
        let mut seen: Vec<i32> = (0..1000)
            .map(|_| finished.recv_timeout(LIMIT).unwrap())
            .collect();
        seen.sort_unstable();
        assert_eq!(seen, (0..1000).collect::<Vec<_>>());
        let (_, peak) = pool.threads();
        assert!(peak <= 2 + 2, "peak {peak} threads for quick jobs");
    }

    #[test]
    fn jobs_behind_blocked_threads_get_threads_of_their_own() {
        let pool = LanePool::new(settings(2));
        let (release, blocked) = gate();
        // Both eager threads block until the end of the test.
        for _ in 0..2 {
            let blocked = Arc::clone(&blocked);
            pool.spawn(Box::new(move || blocked.wait()));
        }
        let (done, finished) = mpsc::channel();
        for i in 0..10 {
            let done = done.clone();
            pool.spawn(Box::new(move || done.send(i).unwrap()));
        }
        for _ in 0..10 {
            finished
                .recv_timeout(LIMIT)
                .expect("a job behind blocked threads ran");
        }
        release();
        let (_, peak) = pool.threads();
        assert!(peak >= 3, "more threads started: {peak}");
    }

    #[test]
    fn idle_threads_end() {
        let pool = LanePool::new(settings(2));
        let (done, finished) = mpsc::channel();
        for _ in 0..4 {
            let done = done.clone();
            pool.spawn(Box::new(move || done.send(()).unwrap()));
        }
        for _ in 0..4 {
            finished.recv_timeout(LIMIT).unwrap();
        }
        {
            let mut state = pool.shared.state.lock();
            while state.threads > 0 {
                let waited = pool.shared.ended_thread.wait_for(&mut state, LIMIT);
                assert!(!waited.timed_out(), "idle threads ended");
            }
        }
        // And the pool starts again.
        pool.spawn(Box::new(move || done.send(()).unwrap()));
        finished.recv_timeout(LIMIT).unwrap();
    }

    #[test]
    fn a_panicking_job_leaves_its_thread_working() {
        // One thread, and no watcher in time to start another.
        let pool = LanePool::new(PoolSettings {
            stall_check: LIMIT,
            ..settings(1)
        });
        pool.spawn(Box::new(|| panic!("a job's panic")));
        let (done, finished) = mpsc::channel();
        pool.spawn(Box::new(move || done.send(()).unwrap()));
        finished.recv_timeout(LIMIT).unwrap();
        assert_eq!(pool.threads().1, 1);
    }

    /// A gate the blocked jobs wait at, and the function that opens it.
    fn gate() -> (impl FnOnce(), Arc<Gate>) {
        let gate = Arc::new(Gate {
            open: Mutex::new(false),
            opened: Condvar::new(),
        });
        let opener = Arc::clone(&gate);
        (
            move || {
                *opener.open.lock() = true;
                opener.opened.notify_all();
            },
            gate,
        )
    }

    struct Gate {
        open: Mutex<bool>,
        opened: Condvar,
    }

    impl Gate {
        fn wait(&self) {
            let mut open = self.open.lock();
            let started = std::time::Instant::now();
            while !*open && started.elapsed() < LIMIT {
                self.opened.wait_for(&mut open, LIMIT);
            }
        }
    }
}
