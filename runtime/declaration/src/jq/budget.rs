//! The budget a jq run gets: a step count (fuel), a stack depth and a cancellation flag, all
//! checked by jaq itself, and the bytes it may build (charged by the natives of `built.rs`
//! before they build). jaq looks up its term table once per term it evaluates, through the
//! data type a filter is compiled for; that data type here is a [`Metered`] table, whose lookup
//! counts the step and measures how much of the thread's stack is in use. When a budget runs out
//! the lookup unwinds (without the panic hook) to [`run_metered`], which turns it into an error.
//! Pure; [`run_metered`] spawns the dedicated thread the run lives on.

use jaq_core::Lut;
use jaq_core::data::{DataT, HasLut};
use jaq_json::Val;
use std::cell::Cell;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::sync::atomic::{AtomicBool, Ordering};

/// Terms a run may evaluate.
pub(crate) const MAX_STEPS: u64 = 2_000_000;
/// Stack of the thread a run lives on (reserved, touched only as deep as the run goes).
const STACK_BYTES: usize = 64 << 20;
/// Stack a run may use before it is stopped: the rest is headroom for frames between two
/// checks and for dropping what the run built.
const MAX_STACK_BYTES: usize = 24 << 20;
/// Bytes a run may build with `+`, `*` and printing, in all (what it builds in one step, which
/// the step budget cannot bound). Eight times the largest output.
pub(crate) const MAX_BUILT_BYTES: usize = 32 << 20;
/// How often (in steps) the cancellation flag is read.
const CANCEL_EVERY: u64 = 1024;

/// Filters compiled for metered runs.
pub(crate) struct Budgeted;

impl DataT for Budgeted {
    type V<'a> = Val;
    type Data<'a> = Metered<'a>;
}

/// The term table plus the meter of one run.
#[derive(Clone)]
pub(crate) struct Metered<'a> {
    lut: &'a Lut<Budgeted>,
    meter: &'a Meter<'a>,
}

impl Metered<'_> {
    /// Charges `bytes` about to be built; stops the run when they exceed its budget.
    pub(crate) fn charge(&self, bytes: usize) {
        let meter = self.meter;
        let built = meter.built.get().saturating_add(bytes);
        if built > MAX_BUILT_BYTES {
            resume_unwind(Box::new(Stop::Bytes));
        }
        meter.built.set(built);
    }

    /// Bytes the run may still build.
    pub(crate) fn left(&self) -> usize {
        MAX_BUILT_BYTES.saturating_sub(self.meter.built.get())
    }
}

impl<'a> HasLut<'a, Budgeted> for Metered<'a> {
    fn lut(&self) -> &'a Lut<Budgeted> {
        self.meter.step();
        self.lut
    }
}

/// Why a run was stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stop {
    /// More than [`MAX_STEPS`] terms.
    Steps,
    /// Recursion deeper than the stack allows.
    Depth,
    /// Values larger in all than [`MAX_BUILT_BYTES`].
    Bytes,
    /// The call the run belongs to ended.
    Cancelled,
    /// jaq itself panicked (it does on a few absurd sizes).
    Failed,
}

impl std::fmt::Display for Stop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Stop::Steps => "the jq program took more than its step budget",
            Stop::Depth => "the jq program recursed too deeply",
            Stop::Bytes => "the jq program built more than its 32 MiB of values",
            Stop::Cancelled => "the jq program was stopped (its call ended)",
            Stop::Failed => "the jq program failed inside jaq",
        })
    }
}

/// Per-run counters; lives on the run's thread.
pub(crate) struct Meter<'c> {
    steps: Cell<u64>,
    max_steps: u64,
    built: Cell<usize>,
    stack_base: usize,
    cancel: &'c AtomicBool,
}

impl Meter<'_> {
    fn step(&self) {
        let steps = self.steps.get() + 1;
        self.steps.set(steps);
        if steps > self.max_steps {
            resume_unwind(Box::new(Stop::Steps));
        }
        if steps.is_multiple_of(CANCEL_EVERY) && self.cancel.load(Ordering::Relaxed) {
            resume_unwind(Box::new(Stop::Cancelled));
        }
        // The stack grows down on every platform the runtime is built for; the address of a
        // local says how deep this thread is.
        let here = 0u8;
        let depth = self
            .stack_base
            .saturating_sub(std::ptr::addr_of!(here) as usize);
        if depth > MAX_STACK_BYTES {
            resume_unwind(Box::new(Stop::Depth));
        }
    }
}

/// Runs `body` on a dedicated thread under a budget of `max_steps`, stopped early when `cancel`
/// is set. `body` gets the metered table to put in the jaq context.
pub(crate) fn run_metered<T: Send>(
    lut: &Lut<Budgeted>,
    max_steps: u64,
    cancel: &AtomicBool,
    body: impl FnOnce(Metered<'_>) -> T + Send,
) -> Result<T, Stop> {
    std::thread::scope(|scope| {
        let thread = std::thread::Builder::new()
            .name("jq".into())
            .stack_size(STACK_BYTES)
            .spawn_scoped(scope, move || {
                let base = 0u8;
                let meter = Meter {
                    steps: Cell::new(0),
                    max_steps,
                    built: Cell::new(0),
                    stack_base: std::ptr::addr_of!(base) as usize,
                    cancel,
                };
                let metered = Metered { lut, meter: &meter };
                catch_unwind(AssertUnwindSafe(|| body(metered))).map_err(|payload| {
                    match payload.downcast::<Stop>() {
                        Ok(stop) => *stop,
                        // A panic inside jaq itself: a failed run, not a failed process.
                        Err(_) => Stop::Failed,
                    }
                })
            });
        match thread {
            Ok(handle) => handle.join().unwrap_or(Err(Stop::Failed)),
            // No thread to run on (the process is out of threads): refuse this run.
            Err(_) => Err(Stop::Failed),
        }
    })
}

/// How deep `value` nests, counted without recursion.
pub(crate) fn depth(value: &Val) -> usize {
    let mut deepest = 0;
    let mut stack = vec![(value, 1usize)];
    while let Some((value, level)) = stack.pop() {
        deepest = deepest.max(level);
        match value {
            Val::Arr(items) => stack.extend(items.iter().map(|item| (item, level + 1))),
            Val::Obj(map) => stack.extend(map.values().map(|item| (item, level + 1))),
            _ => {}
        }
    }
    deepest
}
