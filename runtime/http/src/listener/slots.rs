//! The connection slots of one listening port. At most `max` connections are served at once;
//! when a client arrives and every slot is taken, the connection idle the longest (no request
//! in progress: it never sent a byte, is still sending headers, or is kept alive between
//! requests) is closed to make room, so idle connections can never lock a port out (256 of
//! them kept kubelet's probes off the admin port, and the pod was restarted). Connections with
//! a request in progress, SSE streams included, are never closed for room: when all are busy,
//! new clients wait in the listen backlog. No I/O.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

/// The slots of one port.
pub(super) struct Slots {
    max: usize,
    table: Mutex<Table>,
    /// A connection closed or went idle (the accept loop and the drain wait for it).
    changed: Notify,
    /// What `idle_since` counts from.
    epoch: Instant,
}

#[derive(Default)]
struct Table {
    next: u64,
    open: HashMap<u64, Arc<Conn>>,
    /// How many of `open` were told to close for room (they no longer count as taking one).
    evicted: usize,
}

impl Table {
    fn live(&self) -> usize {
        self.open.len().saturating_sub(self.evicted)
    }

    /// The connection idle the longest, among those not told to close yet; of two idle since
    /// the same millisecond, the one opened first (without that tie-break, the map's order
    /// chose, and a connection idle for a moment could be closed before an older one).
    fn oldest_idle(&self) -> Option<&Arc<Conn>> {
        self.open
            .iter()
            .filter(|(_, conn)| !conn.evict.is_cancelled() && conn.idle())
            .min_by_key(|(id, conn)| (conn.idle_since.load(Ordering::Acquire), **id))
            .map(|(_, conn)| conn)
    }
}

/// One connection's state, shared by its task, its requests and the table.
struct Conn {
    in_flight: AtomicU32,
    /// Milliseconds from the epoch to when the last request ended (or the connection opened).
    idle_since: AtomicU64,
    evict: CancellationToken,
}

impl Conn {
    fn idle(&self) -> bool {
        self.in_flight.load(Ordering::Acquire) == 0
    }
}

impl Slots {
    pub(super) fn new(max: usize) -> Arc<Self> {
        Arc::new(Self {
            max: max.max(1),
            table: Mutex::new(Table::default()),
            changed: Notify::new(),
            epoch: Instant::now(),
        })
    }

    fn table(&self) -> std::sync::MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn now(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// Takes a slot for a connection just accepted. When the port is full, the connection idle
    /// the longest is told to close and its slot taken; when every connection has a request in
    /// progress, waits until one ends or goes idle. (The table is scanned only while full.)
    pub(super) async fn admit(self: &Arc<Self>) -> Slot {
        loop {
            if let Some(slot) = self.try_admit() {
                return slot;
            }
            // `notify_one` keeps its wake-up for a waiter that comes later, so none is lost
            // between the look above and this wait.
            self.changed.notified().await;
        }
    }

    fn try_admit(self: &Arc<Self>) -> Option<Slot> {
        let mut table = self.table();
        if table.live() >= self.max {
            let oldest = table.oldest_idle()?;
            oldest.evict.cancel();
            table.evicted += 1;
        }
        let id = table.next;
        table.next += 1;
        let conn = Arc::new(Conn {
            in_flight: AtomicU32::new(0),
            idle_since: AtomicU64::new(self.now()),
            evict: CancellationToken::new(),
        });
        table.open.insert(id, conn.clone());
        Some(Slot {
            slots: self.clone(),
            id,
            conn,
        })
    }

    /// Waits until every connection closed.
    pub(super) async fn drained(&self) {
        loop {
            if self.table().open.is_empty() {
                return;
            }
            self.changed.notified().await;
        }
    }
}

/// A connection's slot, given back when dropped.
pub(super) struct Slot {
    slots: Arc<Slots>,
    id: u64,
    conn: Arc<Conn>,
}

impl Slot {
    /// Marks a request in progress until the returned guard drops (when its answer was written
    /// or abandoned).
    pub(super) fn begin(&self) -> InFlight {
        self.conn.in_flight.fetch_add(1, Ordering::AcqRel);
        InFlight {
            slots: self.slots.clone(),
            conn: self.conn.clone(),
        }
    }

    /// Resolves when the connection was chosen to close for room.
    pub(super) async fn evicted(&self) {
        self.conn.evict.cancelled().await;
    }

    /// Whether no request is in progress.
    pub(super) fn idle(&self) -> bool {
        self.conn.idle()
    }

    /// How long the connection has had no request in progress (`None`: one is).
    pub(super) fn idle_for(&self) -> Option<Duration> {
        if !self.conn.idle() {
            return None;
        }
        let since = self.conn.idle_since.load(Ordering::Acquire);
        Some(Duration::from_millis(
            self.slots.now().saturating_sub(since),
        ))
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut table = self.slots.table();
        if let Some(conn) = table.open.remove(&self.id)
            && conn.evict.is_cancelled()
        {
            table.evicted = table.evicted.saturating_sub(1);
        }
        drop(table);
        self.slots.changed.notify_one();
    }
}

/// A request in progress on a connection.
pub(super) struct InFlight {
    slots: Arc<Slots>,
    conn: Arc<Conn>,
}

impl Drop for InFlight {
    fn drop(&mut self) {
        // The time first, so that a connection seen idle has its idle time.
        self.conn
            .idle_since
            .store(self.slots.now(), Ordering::Release);
        if self.conn.in_flight.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.slots.changed.notify_one();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_oldest_idle_connection_makes_room_and_busy_ones_stay() {
        let slots = Slots::new(2);
        let pause = || std::thread::sleep(Duration::from_millis(5));
        let first = slots.try_admit().unwrap();
        pause();
        let second = slots.try_admit().unwrap();
        let busy = first.begin();
        pause();
        // Full: the only idle one, `second`, is told to close for the third.
        let third = slots.try_admit().unwrap();
        assert!(!first.conn.evict.is_cancelled());
        assert!(second.conn.evict.is_cancelled());
        drop(second);
        pause();
        drop(busy);
        // `first` went idle after `third` opened, so `third` is the oldest idle one now.
        let fourth = slots.try_admit().unwrap();
        assert!(third.conn.evict.is_cancelled());
        assert!(!first.conn.evict.is_cancelled());
        assert_eq!(slots.table().open.len(), 3);
        assert_eq!(slots.table().live(), 2);
        // Every live one busy: no room until one ends.
        let _busy = (first.begin(), fourth.begin());
        assert!(slots.try_admit().is_none());
    }

    #[test]
    fn of_two_idle_since_the_same_moment_the_older_connection_makes_room() {
        for _ in 0..20 {
            let slots = Slots::new(2);
            let (older, newer) = (slots.try_admit().unwrap(), slots.try_admit().unwrap());
            // Both idle since the same millisecond, as after two quick requests.
            let now = slots.now();
            for slot in [&older, &newer] {
                slot.conn.idle_since.store(now, Ordering::Release);
            }
            let _third = slots.try_admit().unwrap();
            assert!(older.conn.evict.is_cancelled());
            assert!(!newer.conn.evict.is_cancelled());
        }
    }
}
