//! The formula languages' unit tests: precedence, conditionals, names, and a truth
//! table per operator.

use super::*;

fn ev(f: &str, vars: &[(&str, f64)]) -> Result<f64, EvalError> {
    let e = parse(f).expect("parses");
    e.eval(&|n| vars.iter().find(|v| v.0 == n).map(|v| v.1))
}

#[test]
fn precedence_and_associativity_follow_python() {
    assert_eq!(ev("1 - 2 - 3", &[]), Ok(-4.0));
    assert_eq!(ev("8 / 4 / 2", &[]), Ok(1.0));
    assert_eq!(ev("2 + 3 * 4", &[]), Ok(14.0));
    assert_eq!(ev("-2 * 3", &[]), Ok(-6.0));
    assert_eq!(ev("1e9 / 1000000000", &[]), Ok(1.0));
    assert_eq!(ev("3.5 * 2", &[]), Ok(7.0));
}

#[test]
fn conditional_binds_loosest_and_only_evaluates_the_taken_branch() {
    // Python: `a / 2 if smt_on else b` is `(a / 2) if smt_on else b`.
    assert_eq!(ev("a / 2 if s else b", &[("a", 8.0), ("s", 1.0)]), Ok(4.0));
    assert_eq!(ev("a / 2 if s else b", &[("b", 5.0), ("s", 0.0)]), Ok(5.0));
    assert_eq!(
        ev(
            "1 if a < b - c else 2",
            &[("a", 1.0), ("b", 3.0), ("c", 1.0)]
        ),
        Ok(1.0)
    );
    assert_eq!(
        ev(
            "1 if a > b else 2 if a > 0 else 3",
            &[("a", 1.0), ("b", 3.0)]
        ),
        Ok(2.0)
    );
    assert_eq!(
        ev("1 + (2 if 0 else 1 / 0)", &[]),
        Err(EvalError::DivisionByZero)
    );
    assert_eq!(ev("(2 if 1 else 1 / 0)", &[]), Ok(2.0));
}

#[test]
fn perf_syntax_names_escapes_and_smt() {
    let e = parse_perf(
        "topdown\\-be\\-bound / (cpu_core@ASSISTS.ANY\\,umask\\=0x1B@ + X.Y:u) + 0*SLOTS if #SMT_on else 1",
    )
    .expect("parses");
    assert_eq!(
        e.names(),
        [
            "topdown-be-bound",
            "cpu_core@ASSISTS.ANY,umask=0x1B@",
            "X.Y:u",
            "SLOTS",
            "#smt_on"
        ]
    );
    let v = |n: &str| match n {
        "topdown-be-bound" => Some(6.0),
        "#smt_on" => Some(1.0),
        _ => Some(1.0),
    };
    assert_eq!(e.eval(&v), Ok(3.0));
    for (bad, what) in [
        ("source_count(a)", "unsupported function `source_count`"),
        ("a ! b", "unsupported character `!`"),
        ("not a", "unsupported keyword `not`"),
        ("#num_cpus * 2", "unsupported constant `#num_cpus`"),
        ("a\\", "at the end"),
    ] {
        let e = parse_perf(bad).expect_err(bad);
        assert!(e.to_string().contains(what), "{bad}: {e}");
    }
    // Intel's syntax keeps rejecting perf's names.
    assert!(parse("a.b").is_err());
}

#[test]
fn min_max_and_errors() {
    assert_eq!(ev("max( 1 , 3 , 2 )", &[]), Ok(3.0));
    assert_eq!(ev("min( a , 0.0001 )", &[("a", 5.0)]), Ok(0.0001));
    assert_eq!(
        ev("a / b", &[("a", 1.0), ("b", 0.0)]),
        Err(EvalError::DivisionByZero)
    );
    assert_eq!(
        ev("a + x", &[("a", 1.0)]),
        Err(EvalError::Unbound("x".into()))
    );
    for (bad, what) in [
        ("a ** 2", "unexpected `*`"),
        ("a and", "unexpected end"),
        ("abs(a)", "unsupported function `abs`"),
        ("d_ratio(a, b)", "unsupported function `d_ratio`"),
        ("a % 2", "unsupported character `%`"),
        ("a | 2", "unsupported character `|`"),
        ("(a + 1", "expected `)`"),
        ("a if b", "expected `else`"),
        ("1 < 2 < 3", "chained comparisons"),
    ] {
        let e = parse(bad).expect_err(bad);
        assert!(e.to_string().contains(what), "{bad}: {e}");
    }
}

/// Each operator, by its spelling: the operator it parses to, how it prints, and
/// its value on pairs chosen so that any two operators differ on one of them (and
/// on the equal pair, where `<` and `<=` part). A one-line change to the
/// tokenizer, the parser's table, the evaluation or the printing of any operator
/// fails here.
#[test]
fn every_operator_has_its_own_truth_table() {
    type Case = (&'static str, Op, [f64; 4]);
    // Pairs (a, b): (1, 2), (2, 2), (3, 2), (0, 5).
    const PAIRS: [(f64, f64); 4] = [(1.0, 2.0), (2.0, 2.0), (3.0, 2.0), (0.0, 5.0)];
    let intel: [Case; 12] = [
        ("+", Op::Add, [3.0, 4.0, 5.0, 5.0]),
        ("-", Op::Sub, [-1.0, 0.0, 1.0, -5.0]),
        ("*", Op::Mul, [2.0, 4.0, 6.0, 0.0]),
        ("/", Op::Div, [0.5, 1.0, 1.5, 0.0]),
        ("<", Op::Lt, [1.0, 0.0, 0.0, 1.0]),
        (">", Op::Gt, [0.0, 0.0, 1.0, 0.0]),
        ("<=", Op::Le, [1.0, 1.0, 0.0, 1.0]),
        (">=", Op::Ge, [0.0, 1.0, 1.0, 0.0]),
        ("==", Op::Eq, [0.0, 1.0, 0.0, 0.0]),
        ("!=", Op::Ne, [1.0, 0.0, 1.0, 1.0]),
        // Python: `a and b` is a when a is false, else b; `or` the other way.
        ("and", Op::And, [2.0, 2.0, 2.0, 0.0]),
        ("or", Op::Or, [1.0, 2.0, 3.0, 5.0]),
    ];
    // perf: on the values as C `long`s.
    let perf: [Case; 4] = [
        ("|", Op::BitOr, [3.0, 2.0, 3.0, 5.0]),
        ("&", Op::BitAnd, [0.0, 2.0, 2.0, 0.0]),
        ("^", Op::BitXor, [3.0, 0.0, 1.0, 5.0]),
        ("%", Op::Mod, [1.0, 0.0, 1.0, 0.0]),
    ];
    for (syntax, cases) in [(Syntax::Intel, &intel[..]), (Syntax::Perf, &perf[..])] {
        for &(spelled, op, want) in cases {
            assert_eq!(op.to_string(), spelled);
            let e = parse_with(&format!("a {spelled} b"), syntax).expect(spelled);
            assert_eq!(
                e,
                Expr::Bin(
                    op,
                    Box::new(Expr::Var("a".into())),
                    Box::new(Expr::Var("b".into()))
                ),
                "{spelled}"
            );
            for ((a, b), w) in PAIRS.iter().zip(want) {
                let v = e.eval(&|n| match n {
                    "a" => Some(*a),
                    _ => Some(*b),
                });
                assert_eq!(v, Ok(w), "{a} {spelled} {b}");
            }
        }
    }
    // The comparisons in perf's spelling too (perf itself has `<` and `>` only).
    for &(spelled, op, want) in &intel[4..10] {
        let e = parse_perf(&format!("x {spelled} y")).expect(spelled);
        assert!(matches!(e, Expr::Bin(o, ..) if o == op), "{spelled}");
        for ((a, b), w) in PAIRS.iter().zip(want) {
            let v = e.eval(&|n| if n == "x" { Some(*a) } else { Some(*b) });
            assert_eq!(v, Ok(w), "{a} {spelled} {b}");
        }
    }
    // Python's `not`: 1 for 0, else 0 (also for negatives and fractions).
    for (x, w) in [(0.0, 1.0), (2.0, 0.0), (-0.5, 0.0)] {
        assert_eq!(ev("not a", &[("a", x)]), Ok(w), "not {x}");
    }
    // perf truncates toward zero, as C's `(long)` cast, and `%` keeps C's sign.
    let p = |f: &str| parse_perf(f).expect(f).eval(&|_| None);
    assert_eq!(p("2.9 | 1.2"), Ok(3.0));
    assert_eq!(p("2.9 & 1.2"), Ok(0.0));
    assert_eq!(p("-7 % 2"), Ok(-1.0));
    assert_eq!(p("7.9 % 2.5"), Ok(1.0));
    assert_eq!(p("5 % 0.5"), Err(EvalError::DivisionByZero));
    assert_eq!(p("5 % 0"), Err(EvalError::DivisionByZero));
    // d_ratio: the ratio, 0 over a zero denominator (perf's definition).
    assert_eq!(p("d_ratio(6, 3)"), Ok(2.0));
    assert_eq!(p("d_ratio(6, 0)"), Ok(0.0));
    assert_eq!(p("d_ratio(0, 0) + 1"), Ok(1.0));
    assert_eq!(p("d_ratio(1, 4) * 8"), Ok(2.0));
    assert_eq!(p("d_ratio(1, 0) + 1 / 0"), Err(EvalError::DivisionByZero));
}

#[test]
fn precedence_of_logic_and_integer_operators() {
    // Python: `not` > `and` > `or`, all below the comparisons.
    assert_eq!(ev("1 or 0 and 0", &[]), Ok(1.0));
    assert_eq!(ev("0 and 0 or 3", &[]), Ok(3.0));
    assert_eq!(ev("not 2 == 1", &[]), Ok(1.0));
    assert_eq!(ev("not 0 and 0", &[]), Ok(0.0));
    assert_eq!(ev("1 < 2 and 3 >= 3", &[]), Ok(1.0));
    assert_eq!(ev("4 if 1 <= 0 or 2 != 2 else 5", &[]), Ok(5.0));
    assert_eq!(ev("4 if not 1 > 2 else 5", &[]), Ok(4.0));
    // Only the deciding operand is evaluated, and only its names are needed.
    assert_eq!(ev("0 and 1 / 0", &[]), Ok(0.0));
    assert_eq!(ev("2 or 1 / 0", &[]), Ok(2.0));
    assert_eq!(ev("1 and 1 / 0", &[]), Err(EvalError::DivisionByZero));
    assert_eq!(ev("0 or 1 / 0", &[]), Err(EvalError::DivisionByZero));
    let e = parse("a and x or y").expect("parses");
    let only_a = |v: f64| move |n: &str| (n == "a").then_some(v);
    assert_eq!(e.unbound(&only_a(0.0)), ["y"]);
    assert_eq!(e.unbound(&only_a(1.0)), ["x", "y"]);
    assert_eq!(e.unbound(&|_: &str| None), ["a", "x", "y"]);
    // perf: `|` < `^` < `&` < comparisons < `+ -` < `* / %`.
    let p = |f: &str| parse_perf(f).expect(f).eval(&|_| None);
    assert_eq!(p("1 | 0 & 0"), Ok(1.0));
    assert_eq!(p("1 ^ 1 & 0"), Ok(1.0));
    assert_eq!(p("1 | 1 ^ 1"), Ok(1.0));
    assert_eq!(p("2 < 3 & 1"), Ok(1.0));
    assert_eq!(p("1 + 2 < 4"), Ok(1.0));
    assert_eq!(p("2 * 7 % 4"), Ok(2.0));
    assert_eq!(p("7 % 4 * 2"), Ok(6.0));
    assert_eq!(p("3 > 2 > 0"), Ok(1.0));
    assert_eq!(p("1 < 2 < 1"), Ok(0.0));
    assert_eq!(p("5 if 1 | 0 else 6"), Ok(5.0));
    assert_eq!(p("5 if 0 & 1 else 6"), Ok(6.0));
}
