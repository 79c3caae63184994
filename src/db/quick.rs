//! A small pool for the hot paths (resume, answer): connections go back to it without a round
//! trip to PostgreSQL.
//!
//! sqlx's pool pings every connection it takes back (a `Sync` and a wait for `ReadyForQuery`),
//! because a request dropped in the middle of a statement can leave a connection half-way
//! through the protocol. That ping is one extra round trip, and one extra wake-up, per
//! statement. Here a request that ran to completion hands its connection back with
//! [`Leased::release`] (it knows every statement finished); a lease dropped without it (an
//! error, a cancelled request) is pinged on the side first, as sqlx does, and a connection that
//! does not answer is closed.
//!
//! Each connection's socket is registered with the runtime of the worker thread that opened
//! it, whose reactor wakes whoever waits on it: a worker takes back a connection it opened
//! when one is idle, so that replies do not cross threads.

use std::sync::{Arc, Mutex};
use std::thread::ThreadId;
use std::time::Duration;

use sqlx::postgres::{PgConnectOptions, PgConnection};
use sqlx::{ConnectOptions, Connection};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

#[derive(Clone)]
pub struct QuickPool {
    inner: Arc<Inner>,
}

struct Inner {
    options: PgConnectOptions,
    /// Idle connections, each with the thread that opened it.
    idle: Mutex<Vec<(ThreadId, PgConnection)>>,
    permits: Arc<Semaphore>,
    size: u32,
    acquire_timeout: Duration,
}

impl QuickPool {
    /// At most `size` connections, opened when first needed.
    pub fn new(options: PgConnectOptions, size: u32, acquire_timeout: Duration) -> Self {
        Self {
            inner: Arc::new(Inner {
                options,
                idle: Mutex::new(Vec::with_capacity(size as usize)),
                permits: Arc::new(Semaphore::new(size as usize)),
                size,
                acquire_timeout,
            }),
        }
    }

    /// A connection of its own for the caller, until [`Leased::release`] or drop.
    pub async fn acquire(&self) -> Result<Leased, sqlx::Error> {
        let permit = tokio::time::timeout(
            self.inner.acquire_timeout,
            self.inner.permits.clone().acquire_owned(),
        )
        .await
        .map_err(|_| sqlx::Error::PoolTimedOut)?
        .map_err(|_| sqlx::Error::PoolClosed)?;
        let here = std::thread::current().id();
        let idle = {
            let mut idle = self.inner.idle.lock().expect("pool lock");
            match idle.iter().rposition(|(t, _)| *t == here) {
                Some(i) => Some(idle.swap_remove(i)),
                None => idle.pop(),
            }
        };
        let conn = match idle {
            Some(conn) => conn,
            None => {
                let conn =
                    tokio::time::timeout(self.inner.acquire_timeout, self.inner.options.connect())
                        .await
                        .map_err(|_| sqlx::Error::PoolTimedOut)??;
                (here, conn)
            }
        };
        Ok(Leased {
            conn: Some(conn),
            permit: Some(permit),
            pool: self.inner.clone(),
        })
    }

    /// The most connections the pool opens.
    pub fn size(&self) -> u32 {
        self.inner.size
    }

    /// Connections open and waiting to be leased.
    pub fn num_idle(&self) -> usize {
        self.inner.idle.lock().expect("pool lock").len()
    }

    /// Connections leased now.
    pub fn num_leased(&self) -> usize {
        self.inner.size as usize - self.inner.permits.available_permits()
    }
}

/// A leased connection: derefs to [`PgConnection`].
pub struct Leased {
    conn: Option<(ThreadId, PgConnection)>,
    permit: Option<OwnedSemaphorePermit>,
    pool: Arc<Inner>,
}

impl Leased {
    /// Hands the connection back as it is: call it only after every statement run on it has
    /// completed (a result, success or error, was received for each).
    pub fn release(mut self) {
        if let Some(conn) = self.conn.take() {
            self.pool.idle.lock().expect("pool lock").push(conn);
        }
        self.permit.take();
    }
}

impl std::ops::Deref for Leased {
    type Target = PgConnection;
    fn deref(&self) -> &PgConnection {
        &self.conn.as_ref().expect("a lease holds its connection").1
    }
}

impl std::ops::DerefMut for Leased {
    fn deref_mut(&mut self) -> &mut PgConnection {
        &mut self.conn.as_mut().expect("a lease holds its connection").1
    }
}

impl Drop for Leased {
    /// Not released: the connection may be mid-statement or broken. Check it on the side
    /// (its slot stays taken meanwhile) and keep it only if it answers.
    fn drop(&mut self) {
        let (Some((thread, mut conn)), permit) = (self.conn.take(), self.permit.take()) else {
            return;
        };
        let pool = self.pool.clone();
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        runtime.spawn(async move {
            let alive = tokio::time::timeout(Duration::from_secs(2), conn.ping()).await;
            if matches!(alive, Ok(Ok(()))) {
                pool.idle.lock().expect("pool lock").push((thread, conn));
            }
            drop(permit);
        });
    }
}
