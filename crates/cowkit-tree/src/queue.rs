//! A work queue shared by N threads, finished when it is empty and no
//! worker is busy (a busy worker may still push), or when stopped.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex};

pub(crate) struct Queue<T> {
    state: Mutex<State<T>>,
    cv: Condvar,
    stop: AtomicBool,
}

struct State<T> {
    tasks: Vec<T>,
    busy: usize,
}

impl<T: Send> Queue<T> {
    pub fn new() -> Self {
        Queue {
            state: Mutex::new(State {
                tasks: Vec::new(),
                busy: 0,
            }),
            cv: Condvar::new(),
            stop: AtomicBool::new(false),
        }
    }

    pub fn push(&self, t: T) {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        s.tasks.push(t);
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

    /// Run `threads` workers; each gets its own state from `init` and hands
    /// it back when the queue is done. Tasks are taken last in, first out,
    /// so the walk goes depth first and few directories are open at once.
    pub fn run<W: Send>(
        &self,
        threads: usize,
        init: impl Fn() -> W + Sync,
        work: impl Fn(&mut W, T) + Sync,
    ) -> Vec<W> {
        std::thread::scope(|scope| {
            let handles: Vec<_> = (0..threads.max(1))
                .map(|_| {
                    scope.spawn(|| {
                        let mut w = init();
                        while let Some(t) = self.next() {
                            work(&mut w, t);
                            let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
                            s.busy -= 1;
                            if s.busy == 0 && s.tasks.is_empty() {
                                self.cv.notify_all();
                            }
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

    fn next(&self) -> Option<T> {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if self.stopped() {
                return None;
            }
            if let Some(t) = s.tasks.pop() {
                s.busy += 1;
                return Some(t);
            }
            if s.busy == 0 {
                return None;
            }
            s = self.cv.wait(s).unwrap_or_else(|e| e.into_inner());
        }
    }
}
