//! quizd's background loops, started from one place and stopped together: the deadline sweep,
//! LTI grade delivery, xAPI statements and webhooks from the outbox, the quiz change listener, the
//! metrics upkeep, and the one-off rebuild of stale item analysis tables at start-up.
//! `quizd serve` starts them all before it listens and stops them after the HTTP server has
//! drained (each loop finishes the step it is in: a sweep or a delivery batch is one
//! transaction, so stopping between steps loses nothing).

use std::time::Duration;

use actix_web::web::Data;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::state::AppState;

/// What a loop holds to learn that quizd is stopping.
#[derive(Clone)]
pub struct Shutdown(watch::Receiver<bool>);

impl Shutdown {
    /// Never stops: for a loop a test runs by itself.
    pub fn never() -> Self {
        let (tx, rx) = watch::channel(false);
        std::mem::forget(tx);
        Self(rx)
    }

    /// The next tick of `interval`: `true`, or `false` once quizd is stopping.
    pub async fn tick(&mut self, interval: &mut tokio::time::Interval) -> bool {
        let ticked = tokio::select! {
            _ = interval.tick() => true,
            _ = self.0.wait_for(|stop| *stop) => false,
        };
        ticked && !self.is_stopping()
    }

    /// Whether quizd is stopping.
    pub fn is_stopping(&self) -> bool {
        *self.0.borrow()
    }

    /// Resolves once quizd is stopping.
    pub async fn stopping(&mut self) {
        let _ = self.0.wait_for(|stop| *stop).await;
    }
}

/// Which loops to run.
#[derive(Clone, Copy, Debug)]
pub struct Loops {
    /// Finish attempts past their deadline, every 5 s.
    pub deadline_sweep: bool,
    /// Deliver grades to LMSs from the outbox, this often.
    pub grade_delivery: Option<Duration>,
    /// Send xAPI statements to the LRS from the outbox, this often (only with xAPI settings).
    pub xapi_delivery: Option<Duration>,
    /// Deliver events to webhook subscriptions from the outbox, this often (nothing without
    /// `--webhook-host`; a query a tick while no subscription is enabled).
    pub webhook_delivery: Option<Duration>,
    /// Drop cached quiz versions when another instance changes a quiz (LISTEN/NOTIFY).
    pub change_listener: bool,
    /// Forget accounts erased on other instances, so that their tokens stop at once
    /// (LISTEN/NOTIFY).
    pub erasure_listener: bool,
    /// Carry live sessions' events made on other instances to this one's streams
    /// (LISTEN/NOTIFY).
    pub live_listener: bool,
    /// Keep the Prometheus histograms current, every 5 s.
    pub metrics_upkeep: bool,
    /// Once at start: rebuild item analysis tables that are stale (after an upgrade).
    pub analytics_backfill: bool,
}

impl Loops {
    /// Everything `quizd serve` runs.
    pub const SERVE: Loops = Loops {
        deadline_sweep: true,
        grade_delivery: Some(Duration::from_secs(2)),
        xapi_delivery: Some(Duration::from_secs(2)),
        webhook_delivery: Some(Duration::from_secs(2)),
        change_listener: true,
        erasure_listener: true,
        live_listener: true,
        metrics_upkeep: true,
        analytics_backfill: true,
    };
}

/// The running loops.
pub struct Background {
    stop: watch::Sender<bool>,
    tasks: Vec<JoinHandle<()>>,
}

impl Background {
    /// Starts `loops` on the current runtime.
    pub fn start(state: Data<AppState>, loops: Loops) -> Self {
        let (stop, rx) = watch::channel(false);
        let shutdown = Shutdown(rx);
        let mut tasks = Vec::new();
        if loops.deadline_sweep {
            tasks.push(tokio::spawn(crate::attempts::sweep_deadlines(
                state.clone(),
                shutdown.clone(),
            )));
        }
        if let Some(every) = loops.grade_delivery {
            tasks.push(tokio::spawn(crate::lti::ags::deliver_grades(
                state.pool.clone(),
                state.platforms.clone(),
                every,
                shutdown.clone(),
            )));
        }
        if let Some(every) = loops.xapi_delivery
            && state.xapi.is_some()
        {
            tasks.push(tokio::spawn(crate::events::xapi::deliver_statements(
                state.clone(),
                every,
                shutdown.clone(),
            )));
        }
        if let Some(every) = loops.webhook_delivery {
            tasks.push(tokio::spawn(
                crate::events::webhooks::worker::deliver_webhooks(
                    state.pool.clone(),
                    state.webhook_hosts.clone(),
                    every,
                    shutdown.clone(),
                ),
            ));
        }
        if loops.change_listener {
            tasks.push(tokio::spawn(crate::quizzes::listen_for_changes(
                state.clone(),
                shutdown.clone(),
            )));
        }
        if loops.erasure_listener {
            tasks.push(tokio::spawn(crate::auth::erasures::listen_for_erasures(
                state.clone(),
                shutdown.clone(),
            )));
        }
        if loops.live_listener {
            tasks.push(tokio::spawn(crate::live::listen(
                state.clone(),
                shutdown.clone(),
            )));
        }
        if loops.analytics_backfill {
            tasks.push(tokio::spawn(crate::analytics::backfill_sums(
                state.pool.clone(),
                shutdown.clone(),
            )));
        }
        if loops.metrics_upkeep {
            tasks.push(tokio::spawn(crate::telemetry::metrics_upkeep(
                state.metrics.clone(),
                shutdown,
            )));
        }
        Self { stop, tasks }
    }

    /// Tells every loop to stop and waits until each has.
    pub async fn stop(self) {
        let _ = self.stop.send(true);
        let count = self.tasks.len();
        for task in self.tasks {
            let _ = task.await;
        }
        tracing::info!(loops = count, "background loops stopped");
    }
}
