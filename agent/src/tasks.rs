//! Every thread and task of a running agent, in one place: one
//! [`TaskTracker`] and one [`CancellationToken`], so the agent starts parts
//! one by one, stops them all with one call, and waits for each to end.
//!
//! Threads (capture, replay, windows, packet triggers, ring prefault) are
//! named OS threads, because they block and their names show in `top -H`;
//! each is tracked by a task that ends when the thread does, so
//! [`Tasks::shutdown`] waits for threads and async tasks alike. A finished
//! thread leaves nothing behind: the tracker forgets finished tasks, so a run
//! that opens thousands of windows holds no handle per window.
//!
//! A leaf module: it imports nothing from the crate.

use std::future::Future;

use tokio::runtime::Handle;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// Spawns and tracks the parts of one agent; cheap to clone.
#[derive(Clone, Debug)]
pub struct Tasks {
    tracker: TaskTracker,
    stop: CancellationToken,
    handle: Handle,
}

impl Tasks {
    /// Tasks on the current tokio runtime. Panics outside one (a programming
    /// error: the agent is always built inside its runtime).
    pub fn current() -> Tasks {
        Tasks::on(Handle::current())
    }

    /// Tasks on the runtime behind `handle`.
    pub fn on(handle: Handle) -> Tasks {
        Tasks {
            tracker: TaskTracker::new(),
            stop: CancellationToken::new(),
            handle,
        }
    }

    /// Cancelled when the agent stops; every part watches it.
    pub fn stop_token(&self) -> &CancellationToken {
        &self.stop
    }

    /// Whether the agent is stopping.
    pub fn stopping(&self) -> bool {
        self.stop.is_cancelled()
    }

    /// Spawn an async task (from any thread).
    pub fn spawn<F>(&self, task: F) -> tokio::task::JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        self.tracker.spawn_on(task, &self.handle)
    }

    /// Start a named OS thread running `f`; fails only when the system cannot
    /// create a thread. The thread is tracked until it returns (or panics).
    pub fn thread<F>(&self, name: impl Into<String>, f: F) -> std::io::Result<()>
    where
        F: FnOnce() + Send + 'static,
    {
        let (done_tx, done_rx) = tokio::sync::oneshot::channel::<()>();
        std::thread::Builder::new()
            .name(name.into())
            .spawn(move || {
                let _done = done_tx; // dropped when the thread ends, even by a panic
                f();
            })?;
        self.tracker.spawn_on(
            async move {
                let _ = done_rx.await;
            },
            &self.handle,
        );
        Ok(())
    }

    /// Parts still running (threads and tasks).
    pub fn running(&self) -> usize {
        self.tracker.len()
    }

    /// Stop everything and wait until every thread and task has ended.
    pub async fn shutdown(&self) {
        self.stop.cancel();
        self.wait().await;
    }

    /// Wait until every thread and task has ended, without cancelling: for
    /// parts that end by themselves once their inputs close.
    pub async fn wait(&self) {
        self.tracker.close();
        self.tracker.wait().await;
        self.tracker.reopen();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    #[tokio::test]
    async fn shutdown_waits_for_threads_and_tasks_and_forgets_finished_ones() {
        let tasks = Tasks::current();
        let ended = Arc::new(AtomicUsize::new(0));
        for i in 0..50 {
            let e = Arc::clone(&ended);
            tasks
                .thread(format!("short-{i}"), move || {
                    e.fetch_add(1, Ordering::SeqCst);
                })
                .expect("thread");
        }
        let (e, stop) = (Arc::clone(&ended), tasks.stop_token().clone());
        tasks
            .thread("long", move || {
                while !stop.is_cancelled() {
                    std::thread::sleep(std::time::Duration::from_millis(1));
                }
                e.fetch_add(1, Ordering::SeqCst);
            })
            .expect("thread");
        let (e, stop) = (Arc::clone(&ended), tasks.stop_token().clone());
        tasks.spawn(async move {
            stop.cancelled().await;
            e.fetch_add(1, Ordering::SeqCst);
        });
        // The 50 short threads end by themselves and are forgotten.
        for _ in 0..1000 {
            if tasks.running() == 2 {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(2)).await;
        }
        assert_eq!(tasks.running(), 2, "finished threads are not kept");
        tasks.shutdown().await;
        assert_eq!(ended.load(Ordering::SeqCst), 52);
        assert_eq!(tasks.running(), 0);
    }
}
