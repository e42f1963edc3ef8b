//! The timer a throttled async caller awaits: a tokio timer with the `tokio` feature (default),
//! else a helper thread per wait that wakes the task.

#[cfg(feature = "tokio")]
mod imp {
    pub(crate) async fn sleep(d: std::time::Duration) {
        tokio::time::sleep(d).await;
    }
}

#[cfg(not(feature = "tokio"))]
mod imp {
    use std::future::Future;
    use std::pin::Pin;
    use std::sync::{Arc, Mutex, PoisonError};
    use std::task::{Context, Poll, Waker};
    use std::time::{Duration, Instant};

    /// A runtime-agnostic sleep: one helper thread per waiting call wakes the task.
    pub(crate) fn sleep(d: Duration) -> Sleep {
        Sleep {
            until: Instant::now() + d,
            waker: Arc::new(Mutex::new(None)),
            started: false,
        }
    }

    pub(crate) struct Sleep {
        until: Instant,
        waker: Arc<Mutex<Option<Waker>>>,
        started: bool,
    }

    impl Future for Sleep {
        type Output = ();
        fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
            if Instant::now() >= self.until {
                return Poll::Ready(());
            }
            *self.waker.lock().unwrap_or_else(PoisonError::into_inner) = Some(cx.waker().clone());
            if !self.started {
                self.started = true;
                let (until, waker) = (self.until, Arc::clone(&self.waker));
                std::thread::spawn(move || {
                    std::thread::sleep(until.saturating_duration_since(Instant::now()));
                    if let Some(w) = waker.lock().unwrap_or_else(PoisonError::into_inner).take() {
                        w.wake();
                    }
                });
            }
            Poll::Pending
        }
    }
}

pub(crate) use imp::sleep;
