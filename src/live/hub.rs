//! In-process fan-out of live sessions to their event streams. The state is authoritative in
//! PostgreSQL; a hub only carries what changed to the streams this instance serves: phase
//! events (a bounded `broadcast`: a stream that falls `EVENTS` behind is dropped, and its
//! client reconnects to a fresh snapshot) and the staff's tally (a `watch`: the latest value
//! only, however many joins and answers arrive). Memory per session is bounded: `EVENTS`
//! events, `RECENT_NAMES` names, at most `STREAMS_PER_SESSION` learners' streams, and the
//! staff's (`STREAMS_PER_USER` each).

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use chrono::{DateTime, Utc};
use tokio::sync::{broadcast, watch};
use uuid::Uuid;

use super::models::Distribution;
use super::store::Standing;

/// Phase events a stream may fall behind by before it is dropped.
pub const EVENTS: usize = 16;
/// Streams one person may hold open at once (a phone and a projector, and a reload).
pub const STREAMS_PER_USER: u32 = 4;
/// Learners' streams one session may have on this instance (its staff's projectors and
/// screens do not compete with them for a place: #36).
pub const STREAMS_PER_SESSION: usize = 2_000;
/// Names of the latest joins shown on the projector.
pub const RECENT_NAMES: usize = 12;
/// Hubs kept without a stream before idle ones are dropped.
const IDLE_HUBS: usize = 1_000;

/// What changed in a session.
#[derive(Debug)]
pub enum Event {
    Opened {
        index: usize,
        key: String,
        closes_at: DateTime<Utc>,
    },
    Closed {
        index: usize,
        key: String,
        distribution: Distribution,
        /// With the leaderboard on: the best, for the staff's screen only.
        leaders: Option<Vec<Standing>>,
    },
    Ended,
}

/// The staff's live numbers.
#[derive(Debug, Clone, Default)]
pub struct Tally {
    pub joined: i64,
    pub recent: VecDeque<String>,
    pub index: Option<usize>,
    pub answers: i64,
}

pub struct Hub {
    pub events: broadcast::Sender<Arc<Event>>,
    pub tally: watch::Sender<Tally>,
    /// Every stream of the session on this instance, and the learners' among them.
    streams: AtomicUsize,
    learner_streams: AtomicUsize,
    /// The question whose close was announced last (each close is announced once).
    announced: Mutex<Option<usize>>,
}

impl Hub {
    fn new() -> Self {
        Self {
            events: broadcast::channel(EVENTS).0,
            tally: watch::channel(Tally::default()).0,
            streams: AtomicUsize::new(0),
            learner_streams: AtomicUsize::new(0),
            announced: Mutex::new(None),
        }
    }

    /// Sends an event to the streams there are (none is fine).
    pub fn send(&self, event: Event) {
        let _ = self.events.send(Arc::new(event));
    }

    /// Whether the close of question `index` is still to be announced (and now is).
    pub fn claim_close(&self, index: usize) -> bool {
        let mut announced = self.announced.lock().expect("hub lock");
        if *announced == Some(index) {
            return false;
        }
        *announced = Some(index);
        true
    }

    /// A question opened: the answer count starts again.
    pub fn opened(&self, index: usize) {
        self.tally.send_modify(|t| {
            t.index = Some(index);
            t.answers = 0;
        });
    }

    pub fn answered(&self, index: usize) {
        self.tally.send_if_modified(|t| {
            let counts = t.index == Some(index);
            if counts {
                t.answers += 1;
            }
            counts
        });
    }

    pub fn joined(&self, count: i64, name: Option<String>) {
        self.tally.send_modify(|t| {
            t.joined = t.joined.max(count);
            if let Some(name) = name {
                if t.recent.len() == RECENT_NAMES {
                    t.recent.pop_front();
                }
                t.recent.push_back(name);
            }
        });
    }
}

/// Every session's hub on this instance, and the streams each person holds.
pub struct Hubs {
    hubs: Mutex<HashMap<Uuid, Arc<Hub>>>,
    per_user: Arc<Mutex<HashMap<Uuid, u32>>>,
    /// This instance, in the notices it sends to the others (it skips its own).
    pub instance: Uuid,
}

impl Default for Hubs {
    fn default() -> Self {
        Self {
            hubs: Mutex::default(),
            per_user: Arc::default(),
            instance: Uuid::new_v4(),
        }
    }
}

/// A stream's place, given back when the stream ends (dropped with it).
pub struct Slot {
    hub: Arc<Hub>,
    user: Uuid,
    staff: bool,
    per_user: Arc<Mutex<HashMap<Uuid, u32>>>,
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.hub.streams.fetch_sub(1, Ordering::AcqRel);
        if !self.staff {
            self.hub.learner_streams.fetch_sub(1, Ordering::AcqRel);
        }
        let mut per_user = self.per_user.lock().expect("streams lock");
        if let Some(n) = per_user.get_mut(&self.user) {
            *n -= 1;
            if *n == 0 {
                per_user.remove(&self.user);
            }
        }
    }
}

impl Hubs {
    /// The session's hub, made when missing.
    pub fn hub(&self, session: Uuid) -> Arc<Hub> {
        let mut hubs = self.hubs.lock().expect("hubs lock");
        if hubs.len() >= IDLE_HUBS && !hubs.contains_key(&session) {
            hubs.retain(|_, h| h.streams.load(Ordering::Acquire) > 0);
        }
        hubs.entry(session)
            .or_insert_with(|| Arc::new(Hub::new()))
            .clone()
    }

    /// The session's hub if this instance has one.
    pub fn existing(&self, session: Uuid) -> Option<Arc<Hub>> {
        self.hubs.lock().expect("hubs lock").get(&session).cloned()
    }

    /// The session ended: its hub goes (its streams end with the `Ended` event they got).
    pub fn remove(&self, session: Uuid) {
        self.hubs.lock().expect("hubs lock").remove(&session);
    }

    /// A place for one more stream of `user` on the session, within the person's cap and, for
    /// a learner's stream (not `staff`), the session's; `None` when either is reached.
    pub fn slot(&self, session: Uuid, user: Uuid, staff: bool) -> Option<(Slot, Arc<Hub>)> {
        let hub = self.hub(session);
        let mut per_user = self.per_user.lock().expect("streams lock");
        let mine = per_user.entry(user).or_insert(0);
        if *mine >= STREAMS_PER_USER {
            return None;
        }
        if !staff && hub.learner_streams.fetch_add(1, Ordering::AcqRel) >= STREAMS_PER_SESSION {
            hub.learner_streams.fetch_sub(1, Ordering::AcqRel);
            return None;
        }
        hub.streams.fetch_add(1, Ordering::AcqRel);
        *mine += 1;
        drop(per_user);
        Some((
            Slot {
                hub: hub.clone(),
                user,
                staff,
                per_user: self.per_user.clone(),
            },
            hub,
        ))
    }

    /// How many streams are open (all sessions), and how many sessions have a hub.
    pub fn usage(&self) -> (usize, usize) {
        let hubs = self.hubs.lock().expect("hubs lock");
        let streams = hubs
            .values()
            .map(|h| h.streams.load(Ordering::Acquire))
            .sum();
        (streams, hubs.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_person_holds_at_most_four_streams_and_gets_them_back_when_they_end() {
        let hubs = Hubs::default();
        let (session, user) = (Uuid::new_v4(), Uuid::new_v4());
        let slots: Vec<_> = (0..STREAMS_PER_USER)
            .map(|_| hubs.slot(session, user, false).expect("a slot"))
            .collect();
        assert!(hubs.slot(session, user, false).is_none());
        assert!(hubs.slot(session, user, true).is_none(), "staff too");
        assert!(hubs.slot(session, Uuid::new_v4(), false).is_some());
        drop(slots);
        assert!(hubs.slot(session, user, false).is_some());
        assert_eq!(hubs.usage().0, 0);
    }

    #[test]
    fn a_full_session_still_gives_its_staff_a_stream() {
        let hubs = Hubs::default();
        let session = Uuid::new_v4();
        let class: Vec<_> = (0..STREAMS_PER_SESSION)
            .map(|_| hubs.slot(session, Uuid::new_v4(), false).expect("a slot"))
            .collect();
        assert!(hubs.slot(session, Uuid::new_v4(), false).is_none());
        let projector = hubs.slot(session, Uuid::new_v4(), true);
        assert!(projector.is_some(), "the projector is not one of the class");
        assert!(hubs.slot(session, Uuid::new_v4(), false).is_none());
        drop(projector);
        drop(class);
        assert_eq!(hubs.usage().0, 0);
        assert!(hubs.slot(session, Uuid::new_v4(), false).is_some());
    }

    #[test]
    fn the_tally_counts_answers_to_the_open_question_only_and_keeps_a_few_names() {
        let hub = Hub::new();
        hub.answered(0);
        assert_eq!(hub.tally.borrow().answers, 0);
        hub.opened(0);
        hub.answered(0);
        hub.answered(1);
        assert_eq!(hub.tally.borrow().answers, 1);
        for i in 0..100 {
            hub.joined(i + 1, Some(format!("n{i}")));
        }
        let t = hub.tally.borrow();
        assert_eq!((t.joined, t.recent.len()), (100, RECENT_NAMES));
        assert_eq!(t.recent.back().map(String::as_str), Some("n99"));
    }

    #[test]
    fn each_close_is_announced_once() {
        let hub = Hub::new();
        assert!(hub.claim_close(0));
        assert!(!hub.claim_close(0));
        assert!(hub.claim_close(1));
    }
}
