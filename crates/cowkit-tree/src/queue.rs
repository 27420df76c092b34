//! A work queue shared by N threads, split into lanes, finished when it is
//! empty and no worker is busy (a busy worker may still push), or when
//! stopped.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex};

/// What workers take tasks from: one door for taking a task and one for
/// reporting it done, and [`Tasks::run`], the workers' loop over them.
pub(crate) trait Tasks: Sync {
    type Task: Send;

    /// The next task and its lane, for a worker last in lane `last`;
    /// waits while there is none and a worker is busy (it may still
    /// push). `None`: the queue is finished.
    fn take(&self, last: usize) -> Option<(usize, Self::Task)>;

    /// A worker is done with its task of `lane`.
    fn done(&self, lane: usize);

    /// Run `threads` workers (at least one); each gets its own state from
    /// `init` and hands it back when the queue is finished. A worker's
    /// panic is raised again here.
    fn run<W: Send>(
        &self,
        threads: usize,
        init: impl Fn() -> W + Sync,
        work: impl Fn(&mut W, Self::Task) + Sync,
    ) -> Vec<W> {
        std::thread::scope(|scope| {
            let handles: Vec<_> = (0..threads.max(1))
                .map(|i| {
                    let (init, work) = (&init, &work);
                    scope.spawn(move || {
                        let mut w = init();
                        let mut last = i;
                        while let Some((lane, t)) = self.take(last) {
                            work(&mut w, t);
                            self.done(lane);
                            last = lane;
                        }
                        w
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
                .collect()
        })
    }
}

/// A work queue split into lanes (on XFS, one per allocation group), shared
/// by N threads: a worker takes its next task from a lane no other worker
/// is in, preferring the lane it was in, so that concurrent workers touch
/// different lanes while there is a choice. Within a lane, last in, first
/// out. Finished when every lane is empty and no worker is busy, or when
/// stopped.
pub(crate) struct Lanes<T> {
    state: Mutex<LaneState<T>>,
    cv: Condvar,
    stop: AtomicBool,
}

/// Lanes of a queue at most (allocation groups beyond share lanes).
pub(crate) const MAX_LANES: usize = 64;

struct LaneState<T> {
    lanes: Vec<Vec<T>>,
    /// Workers busy with a task of each lane.
    inside: Vec<usize>,
    queued: usize,
    busy: usize,
}

impl<T: Send> Lanes<T> {
    pub fn new(lanes: usize) -> Self {
        let n = lanes.max(1);
        Lanes {
            state: Mutex::new(LaneState {
                lanes: (0..n).map(|_| Vec::new()).collect(),
                inside: vec![0; n],
                queued: 0,
                busy: 0,
            }),
            cv: Condvar::new(),
            stop: AtomicBool::new(false),
        }
    }

    pub fn push(&self, lane: usize, t: T) {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let n = s.lanes.len();
        s.lanes[lane % n].push(t);
        s.queued += 1;
        drop(s);
        self.cv.notify_one();
    }

    /// Ask every worker to stop after its current task.
    pub fn stop(&self) {
        self.stop.store(true, Ordering::Relaxed);
        self.cv.notify_all();
    }

    pub fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }
}

impl<T: Send> Tasks for Lanes<T> {
    type Task = T;

    fn take(&self, last: usize) -> Option<(usize, T)> {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if self.stopped() {
                return None;
            }
            if s.queued > 0 {
                let n = s.lanes.len();
                let last = last % n;
                // The lane this worker was in, else the next free lane
                // after it, else the least crowded lane with work.
                let pick = (0..n)
                    .map(|k| (last + k) % n)
                    .find(|&l| !s.lanes[l].is_empty() && s.inside[l] == 0)
                    .or_else(|| {
                        (0..n)
                            .filter(|&l| !s.lanes[l].is_empty())
                            .min_by_key(|&l| s.inside[l])
                    });
                if let Some(l) = pick {
                    if let Some(t) = s.lanes[l].pop() {
                        s.queued -= 1;
                        s.busy += 1;
                        s.inside[l] += 1;
                        return Some((l, t));
                    }
                }
            }
            if s.busy == 0 {
                return None;
            }
            s = self.cv.wait(s).unwrap_or_else(|e| e.into_inner());
        }
    }

    fn done(&self, lane: usize) {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        s.busy -= 1;
        s.inside[lane] -= 1;
        if s.busy == 0 && s.queued == 0 {
            self.cv.notify_all();
        }
    }
}
