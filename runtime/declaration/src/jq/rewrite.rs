//! Rewrites a parsed jq program so that every operation that can build a large value in one
//! step goes through a native that weighs it first (`built.rs`): `l + r` and `l * r` become
//! `__add(l; r)` and `__mul(l; r)` (jaq evaluates a call's value arguments in the order it
//! pairs an operator's operands, so outputs keep their order), `l += r` and `l *= r` become
//! `r as $x | l |= __add(.; $x)` (jq's own definition), every string interpolation `"\(f)"`
//! weighs `f`'s output before it is printed, and a call of a native that builds more than its
//! input (`explode`, `fromjson`, the escapes, copies of arrays) weighs its input first. The step budget cannot see these: one
//! step of `"x" * 1e9` or of a doubling `. + .` allocates without bound. Pure.

use jaq_core::load::lex::StrPart;
use jaq_core::load::parse::{BinaryOp, Def, Pattern, Term};
use jaq_core::ops::Math;
use jaq_core::path::{Part, Path};

/// The variable `l op= r` binds `r` to.
const UPDATE_VAR: &str = "$__kube_mcp_rhs";

/// `def`s with their bodies rewritten.
pub(super) fn defs<'s>(defs: impl IntoIterator<Item = Def<&'s str>>) -> Vec<Def<&'s str>> {
    defs.into_iter().map(def).collect()
}

fn def(d: Def<&str>) -> Def<&str> {
    Def {
        name: d.name,
        args: d.args,
        body: term(d.body),
    }
}

/// The name of the weighing native for `op`, if it has one.
fn weighed(op: &Math) -> Option<&'static str> {
    match op {
        Math::Add => Some("__add"),
        Math::Mul => Some("__mul"),
        // The others build nothing larger than their operands.
        _ => None,
    }
}

/// How a native builds more than its input: `__weigh_grow(k)` charges `k` times the input's
/// printed size, `__weigh_slots` what a copy of the input array or object takes.
fn growth(name: &str, arity: usize) -> Option<(&'static str, Option<&'static str>)> {
    let grow = |k| Some(("__weigh_grow", Some(k)));
    match (name, arity) {
        // A value per character, or per two bytes of JSON (`[0,0,...]`).
        ("explode" | "fromjson", 0) => grow("32"),
        ("escape_html", 0) => grow("6"),
        ("escape_sh", 0) => grow("4"),
        ("encode_uri", 0) => grow("3"),
        ("encode_base64", 0) => grow("2"),
        ("sort" | "reverse" | "keys_unsorted" | "key_values", 0) | ("indices", 1) => {
            Some(("__weigh_slots", None))
        }
        _ => None,
    }
}

fn boxed(mut t: Box<Term<&str>>) -> Box<Term<&str>> {
    *t = term(std::mem::take(&mut *t));
    t
}

/// `t`, rewritten.
pub(super) fn term(t: Term<&str>) -> Term<&str> {
    match t {
        Term::BinOp(l, BinaryOp::Math(op), r) => match weighed(&op) {
            Some(name) => Term::Call(name, vec![term(*l), term(*r)]),
            None => Term::BinOp(boxed(l), BinaryOp::Math(op), boxed(r)),
        },
        Term::BinOp(l, BinaryOp::UpdateMath(op), r) => match weighed(&op) {
            Some(name) => {
                let update = Term::Call(name, vec![Term::Id, Term::Var(UPDATE_VAR)]);
                let body = Term::BinOp(boxed(l), BinaryOp::Update, Box::new(update));
                let bind = BinaryOp::Pipe(Some(Pattern::Var(UPDATE_VAR)));
                Term::BinOp(boxed(r), bind, Box::new(body))
            }
            None => Term::BinOp(boxed(l), BinaryOp::UpdateMath(op), boxed(r)),
        },
        Term::BinOp(l, op, r) => Term::BinOp(boxed(l), binary_op(op), boxed(r)),
        Term::Str(format, parts) => Term::Str(
            format,
            parts
                .into_iter()
                .map(|part| match part {
                    StrPart::Term(f) => StrPart::Term(Term::BinOp(
                        Box::new(term(f)),
                        BinaryOp::Pipe(None),
                        Box::new(Term::Call("__weigh_text", Vec::new())),
                    )),
                    StrPart::Str(s) => StrPart::Str(s),
                    StrPart::Char(c) => StrPart::Char(c),
                })
                .collect(),
        ),
        Term::Arr(inner) => Term::Arr(inner.map(boxed)),
        Term::Obj(entries) => Term::Obj(
            entries
                .into_iter()
                .map(|(k, v)| (term(k), v.map(term)))
                .collect(),
        ),
        Term::Neg(t) => Term::Neg(boxed(t)),
        Term::Label(name, t) => Term::Label(name, boxed(t)),
        Term::Fold(name, xs, pattern, args) => Term::Fold(
            name,
            boxed(xs),
            pattern_(pattern),
            args.into_iter().map(term).collect(),
        ),
        Term::TryCatch(t, catch) => Term::TryCatch(boxed(t), catch.map(boxed)),
        Term::IfThenElse(branches, otherwise) => Term::IfThenElse(
            branches
                .into_iter()
                .map(|(cond, then)| (term(cond), term(then)))
                .collect(),
            otherwise.map(boxed),
        ),
        Term::Def(defs_, t) => Term::Def(defs(defs_), boxed(t)),
        Term::Call(name, args) => {
            let weigh = growth(name, args.len());
            let call = Term::Call(name, args.into_iter().map(term).collect());
            match weigh {
                Some((weigh, factor)) => Term::BinOp(
                    Box::new(Term::Call(
                        weigh,
                        factor.into_iter().map(Term::Num).collect(),
                    )),
                    BinaryOp::Pipe(None),
                    Box::new(call),
                ),
                None => call,
            }
        }
        Term::Path(t, path) => Term::Path(
            boxed(t),
            Path(
                path.0
                    .into_iter()
                    .map(|(part, opt)| (part_(part), opt))
                    .collect(),
            ),
        ),
        t @ (Term::Id | Term::Recurse | Term::Num(_) | Term::Break(_) | Term::Var(_)) => t,
    }
}

fn binary_op(op: BinaryOp<&str>) -> BinaryOp<&str> {
    match op {
        BinaryOp::Pipe(Some(pattern)) => BinaryOp::Pipe(Some(pattern_(pattern))),
        op => op,
    }
}

fn pattern_(pattern: Pattern<&str>) -> Pattern<&str> {
    match pattern {
        Pattern::Var(v) => Pattern::Var(v),
        Pattern::Arr(items) => Pattern::Arr(items.into_iter().map(pattern_).collect()),
        Pattern::Obj(entries) => Pattern::Obj(
            entries
                .into_iter()
                .map(|(k, p)| (term(k), pattern_(p)))
                .collect(),
        ),
    }
}

fn part_(part: Part<Term<&str>>) -> Part<Term<&str>> {
    match part {
        Part::Index(i) => Part::Index(term(i)),
        Part::Range(from, upto) => Part::Range(from.map(term), upto.map(term)),
    }
}
