//! Natives that weigh what an operation will build before building it, and charge it to the
//! run's byte budget (`budget.rs`): `__add` and `__mul` (what `+` and `*` become, see
//! `rewrite.rs`), `__weigh_text` (a value about to be printed: string interpolation, `tojson`,
//! `tostring`), `__weigh_grow(k)` and `__weigh_slots` (the input of a native that builds more
//! than it). A value's printed size is counted without printing it, and the count stops as
//! soon as it passes what is left of the budget (a small array can print huge when it holds one
//! big string many times). Pure.

use super::budget::Budgeted;
use jaq_core::native::{Fun, bome, run, v};
use jaq_core::{Cv, RunPtr, ValXs};
use jaq_json::{Num, Rc, Val};

/// The natives, for the compiler.
pub(super) fn funs() -> impl Iterator<Item = Fun<Budgeted>> {
    let natives: [(&'static str, _, RunPtr<Budgeted>); 5] = [
        ("__add", v(2), add),
        ("__mul", v(2), mul),
        ("__weigh_text", v(0), weigh_text),
        ("__weigh_grow", v(1), weigh_grow),
        ("__weigh_slots", v(0), weigh_slots),
    ];
    natives
        .into_iter()
        .map(|(name, arity, f)| run::<Budgeted>((name, arity, f)))
}

/// Definitions over the natives: `tojson` weighs its input first (jaq's native is renamed
/// `__tojson`; `tostring` and `@text` print through string interpolation).
pub(super) const DEFS: &str = "def tojson: __weigh_text | __tojson;";

/// The operands of a two-argument native, in order.
fn operands(mut cv: Cv<'_, Budgeted>) -> (Cv<'_, Budgeted>, Val, Val) {
    let r = cv.0.pop_var();
    let l = cv.0.pop_var();
    (cv, l, r)
}

fn add(cv: Cv<'_, Budgeted>) -> ValXs<'_, Val> {
    let (cv, l, r) = operands(cv);
    // The input may be `l` itself (`. + $x` in a `reduce`): let go of it, so that an
    // accumulator owned once is extended in place rather than copied.
    let (ctx, input) = cv;
    drop(input);
    ctx.data().charge(added_bytes(&l, &r));
    bome(l + r)
}

fn mul(cv: Cv<'_, Budgeted>) -> ValXs<'_, Val> {
    let (cv, l, r) = operands(cv);
    cv.0.data().charge(multiplied_bytes(&l, &r));
    bome(l * r)
}

fn weigh_text(cv: Cv<'_, Budgeted>) -> ValXs<'_, Val> {
    let (ctx, value) = cv;
    let meter = ctx.data();
    meter.charge(text_bytes(&value, meter.left().saturating_add(1)));
    bome(Ok(value))
}

fn weigh_grow(mut cv: Cv<'_, Budgeted>) -> ValXs<'_, Val> {
    let factor = match cv.0.pop_var() {
        Val::Num(n) => repeats(&n).max(1),
        _ => 1,
    };
    let (ctx, value) = cv;
    let meter = ctx.data();
    let limit = (meter.left() / factor).saturating_add(1);
    meter.charge(text_bytes(&value, limit).saturating_mul(factor));
    bome(Ok(value))
}

fn weigh_slots(cv: Cv<'_, Budgeted>) -> ValXs<'_, Val> {
    let (ctx, value) = cv;
    ctx.data().charge(match &value {
        Val::Arr(items) => SLOT * items.len(),
        Val::Obj(map) => 2 * SLOT * map.len(),
        _ => 0,
    });
    bome(Ok(value))
}

/// Bytes of one array element or object entry.
const SLOT: usize = std::mem::size_of::<Val>();

/// What `l + r` allocates: `r` appended to `l` in place when `l` is owned once, else both.
fn added_bytes(l: &Val, r: &Val) -> usize {
    match (l, r) {
        (Val::TStr(a) | Val::BStr(a), Val::TStr(b) | Val::BStr(b)) => {
            b.len() + if a.is_unique() { 0 } else { a.len() }
        }
        (Val::Arr(a), Val::Arr(b)) => SLOT * (b.len() + shared_len(a, a.len())),
        (Val::Obj(a), Val::Obj(b)) => 2 * SLOT * (b.len() + shared_len(a, a.len())),
        _ => 0,
    }
}

/// `len` if `rc` is shared (extending it copies it first), else 0.
fn shared_len<T>(rc: &Rc<T>, len: usize) -> usize {
    if Rc::strong_count(rc) == 1 && Rc::weak_count(rc) == 0 {
        0
    } else {
        len
    }
}

/// What `l * r` allocates: a string repeated, or two objects merged.
fn multiplied_bytes(l: &Val, r: &Val) -> usize {
    match (l, r) {
        (Val::TStr(s) | Val::BStr(s), Val::Num(n)) | (Val::Num(n), Val::TStr(s) | Val::BStr(s)) => {
            s.len().saturating_mul(repeats(n))
        }
        (Val::Obj(a), Val::Obj(b)) => 2 * SLOT * (a.len() + b.len()),
        _ => 0,
    }
}

/// How many times `n` repeats a string (jaq saturates big integers; others are not repeats).
fn repeats(n: &Num) -> usize {
    match n {
        Num::Int(i) => usize::try_from(*i).unwrap_or(0),
        Num::BigInt(_) => usize::MAX,
        Num::Float(f) if *f >= 1.0 => *f as usize,
        Num::Dec(d) => d.parse::<f64>().map_or(0, |f| f.max(0.0) as usize),
        Num::Float(_) => 0,
    }
}

/// The bytes `value` prints to (as `tostring` does: a string as itself, anything else as
/// JSON), counted up to `limit` (past it, `limit`). Escapes count one byte per character.
pub(super) fn text_bytes(value: &Val, limit: usize) -> usize {
    let mut total = 0usize;
    let mut stack = vec![value];
    while let Some(value) = stack.pop() {
        total = total.saturating_add(match value {
            Val::Null => 4,
            Val::Bool(_) => 5,
            Val::Num(n) => num_bytes(n),
            Val::TStr(s) | Val::BStr(s) => s.len() + 2,
            Val::Arr(items) => {
                stack.extend(items.iter());
                items.len() + 2
            }
            Val::Obj(map) => {
                stack.extend(map.iter().flat_map(|(k, v)| [k, v]));
                2 * map.len() + 2
            }
        });
        if total >= limit {
            return limit;
        }
    }
    total
}

fn num_bytes(n: &Num) -> usize {
    match n {
        Num::Dec(d) => d.len(),
        Num::BigInt(i) => i.bits().div_ceil(3) as usize + 1,
        // At most this long: sign, 17 digits, point, exponent.
        Num::Int(_) | Num::Float(_) => 24,
    }
}
