//! The server's clock, injectable so tests can move time (deadlines, open and close times).

use std::sync::{Arc, Mutex};

use chrono::{DateTime, Duration, Utc};

#[derive(Clone, Default)]
pub enum Clock {
    #[default]
    System,
    /// A clock that stands still until moved.
    Manual(Arc<Mutex<DateTime<Utc>>>),
}

impl Clock {
    pub fn manual(at: DateTime<Utc>) -> Self {
        Clock::Manual(Arc::new(Mutex::new(at)))
    }

    pub fn now(&self) -> DateTime<Utc> {
        match self {
            Clock::System => Utc::now(),
            Clock::Manual(t) => *t.lock().expect("clock lock"),
        }
    }

    /// Moves a manual clock forward; a no-op on the system clock.
    pub fn advance(&self, by: Duration) {
        if let Clock::Manual(t) = self {
            *t.lock().expect("clock lock") += by;
        }
    }
}
