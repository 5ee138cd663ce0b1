//! The formula language of Intel's TMA metrics files: numbers, names (the aliases of
//! the metric's events and constants), `+ - * /`, unary minus, comparisons
//! (`< > <= >= == !=`), Python's conditional `x if cond else y`, and `min(..)` /
//! `max(..)`. That is every construct of the SKL, SKX, ICL and SPR files; anything
//! else is a [`ParseError`] that says what and where.
//!
//! Evaluation follows Python, as the formulas are written for it: only the branch the
//! condition picks is evaluated, comparisons are 1 or 0, and a division by zero is an
//! error ([`EvalError::DivisionByZero`]), never a made-up number.

use std::fmt;

/// A parsed formula.
#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    /// A number literal.
    Num(f64),
    /// A name: an event or constant alias, or a built-in constant.
    Var(String),
    /// `-x`.
    Neg(Box<Expr>),
    /// A binary operation.
    Bin(Op, Box<Expr>, Box<Expr>),
    /// `then if cond else otherwise`.
    If {
        /// The condition.
        cond: Box<Expr>,
        /// Its value when the condition is not zero.
        then: Box<Expr>,
        /// Its value otherwise.
        otherwise: Box<Expr>,
    },
    /// `min(..)` (false) or `max(..)` (true) of at least one argument.
    MinMax(bool, Vec<Expr>),
}

/// Binary operators.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// `+`
    Add,
    /// `-`
    Sub,
    /// `*`
    Mul,
    /// `/`
    Div,
    /// `<`
    Lt,
    /// `>`
    Gt,
    /// `<=`
    Le,
    /// `>=`
    Ge,
    /// `==`
    Eq,
    /// `!=`
    Ne,
}

/// A formula that is not in the language.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{what} at character {pos} of `{formula}`")]
pub struct ParseError {
    /// What is wrong.
    pub what: String,
    /// Where (0-based character offset).
    pub pos: usize,
    /// The whole formula.
    pub formula: String,
}

/// Why a formula has no value for the given inputs.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EvalError {
    /// A name with no value.
    #[error("no value for `{0}`")]
    Unbound(String),
    /// A denominator was zero.
    #[error("division by zero")]
    DivisionByZero,
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Num(f64),
    Name(String),
    Sym(&'static str),
}

/// The two spellings of the language: Intel's files (names are aliases, `[A-Za-z0-9_]`)
/// and perf's metric expressions (`perf list --details metric`): names are event or
/// metric names with `.`, `:`, `@` and `\`-escaped characters (`topdown\-be\-bound`,
/// `cpu_core@ASSISTS.ANY\,umask\=0x1B@`, read unescaped), and `#smt_on` is the SMT
/// constant (the name `#smt_on`). Perf's grammar (`tools/perf/util/expr.y`) has the
/// same precedence for what both accept: a conditional's branches and condition are
/// sums and products, chained `x if c else y if d else z` nests to the right.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Syntax {
    Intel,
    Perf,
}

fn tokenize(s: &str, syntax: Syntax) -> Result<Vec<(usize, Tok)>, ParseError> {
    let err = |what: String, pos| ParseError {
        what,
        pos,
        formula: s.to_string(),
    };
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_whitespace() {
            i += 1;
        } else if c.is_ascii_digit() || (c == b'.' && b.get(i + 1).is_some_and(u8::is_ascii_digit))
        {
            let start = i;
            while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'.') {
                i += 1;
            }
            if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
                let mut j = i + 1;
                if j < b.len() && (b[j] == b'+' || b[j] == b'-') {
                    j += 1;
                }
                if j < b.len() && b[j].is_ascii_digit() {
                    i = j;
                    while i < b.len() && b[i].is_ascii_digit() {
                        i += 1;
                    }
                }
            }
            let text = &s[start..i];
            let v: f64 = text
                .parse()
                .map_err(|_| err(format!("bad number `{text}`"), start))?;
            out.push((start, Tok::Num(v)));
        } else if syntax == Syntax::Perf
            && (c.is_ascii_alphabetic() || c == b'_' || c == b'\\' || c == b'#')
        {
            let start = i;
            let mut name = String::new();
            if c == b'#' {
                name.push('#');
                i += 1;
            }
            while i < b.len() {
                let d = b[i];
                if d == b'\\' {
                    let Some(ch) = s.get(i + 1..).and_then(|r| r.chars().next()) else {
                        return Err(err("`\\` at the end of the formula".into(), i));
                    };
                    name.push(ch);
                    i += 1 + ch.len_utf8();
                } else if d.is_ascii_alphanumeric() || matches!(d, b'_' | b'.' | b':' | b'@' | b'?')
                {
                    name.push(char::from(d));
                    i += 1;
                } else {
                    break;
                }
            }
            if let Some(k) = name.strip_prefix('#') {
                if !k.eq_ignore_ascii_case("smt_on") {
                    return Err(err(format!("unsupported constant `{name}`"), start));
                }
                name = "#smt_on".to_string();
            }
            out.push((start, Tok::Name(name)));
        } else if c.is_ascii_alphabetic() || c == b'_' {
            let start = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            out.push((start, Tok::Name(s[start..i].to_string())));
        } else {
            let two = s.get(i..i + 2).unwrap_or("");
            let sym = match two {
                "<=" => Some("<="),
                ">=" => Some(">="),
                "==" => Some("=="),
                "!=" => Some("!="),
                _ => None,
            };
            if let Some(sym) = sym {
                out.push((i, Tok::Sym(sym)));
                i += 2;
                continue;
            }
            let sym = match c {
                b'+' => "+",
                b'-' => "-",
                b'*' => "*",
                b'/' => "/",
                b'<' => "<",
                b'>' => ">",
                b'(' => "(",
                b')' => ")",
                b',' => ",",
                _ => {
                    let ch = s[i..].chars().next().unwrap_or('?');
                    return Err(err(format!("unsupported character `{ch}`"), i));
                }
            };
            out.push((i, Tok::Sym(sym)));
            i += 1;
        }
    }
    Ok(out)
}

struct Parser<'a> {
    src: &'a str,
    toks: Vec<(usize, Tok)>,
    at: usize,
}

impl Parser<'_> {
    fn err(&self, what: impl Into<String>) -> ParseError {
        ParseError {
            what: what.into(),
            pos: self.toks.get(self.at).map_or(self.src.len(), |t| t.0),
            formula: self.src.to_string(),
        }
    }
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.at).map(|t| &t.1)
    }
    fn eat_sym(&mut self, sym: &str) -> bool {
        if matches!(self.peek(), Some(Tok::Sym(s)) if *s == sym) {
            self.at += 1;
            true
        } else {
            false
        }
    }
    fn eat_word(&mut self, w: &str) -> bool {
        if matches!(self.peek(), Some(Tok::Name(n)) if n == w) {
            self.at += 1;
            true
        } else {
            false
        }
    }
    fn expect(&mut self, sym: &str) -> Result<(), ParseError> {
        if self.eat_sym(sym) {
            Ok(())
        } else {
            Err(self.err(format!("expected `{sym}`")))
        }
    }

    /// `cmp ['if' cmp 'else' test]` (Python's `test`).
    fn test(&mut self) -> Result<Expr, ParseError> {
        let then = self.comparison()?;
        if self.eat_word("if") {
            let cond = self.comparison()?;
            if !self.eat_word("else") {
                return Err(self.err("expected `else` after `x if condition`"));
            }
            let otherwise = self.test()?;
            return Ok(Expr::If {
                cond: Box::new(cond),
                then: Box::new(then),
                otherwise: Box::new(otherwise),
            });
        }
        Ok(then)
    }

    fn comparison(&mut self) -> Result<Expr, ParseError> {
        let left = self.sum()?;
        let op = match self.peek() {
            Some(Tok::Sym("<")) => Op::Lt,
            Some(Tok::Sym(">")) => Op::Gt,
            Some(Tok::Sym("<=")) => Op::Le,
            Some(Tok::Sym(">=")) => Op::Ge,
            Some(Tok::Sym("==")) => Op::Eq,
            Some(Tok::Sym("!=")) => Op::Ne,
            _ => return Ok(left),
        };
        self.at += 1;
        let right = self.sum()?;
        if matches!(
            self.peek(),
            Some(Tok::Sym("<" | ">" | "<=" | ">=" | "==" | "!="))
        ) {
            return Err(self.err("chained comparisons are not supported"));
        }
        Ok(Expr::Bin(op, Box::new(left), Box::new(right)))
    }

    fn sum(&mut self) -> Result<Expr, ParseError> {
        let mut left = self.term()?;
        loop {
            let op = if self.eat_sym("+") {
                Op::Add
            } else if self.eat_sym("-") {
                Op::Sub
            } else {
                return Ok(left);
            };
            let right = self.term()?;
            left = Expr::Bin(op, Box::new(left), Box::new(right));
        }
    }

    fn term(&mut self) -> Result<Expr, ParseError> {
        let mut left = self.unary()?;
        loop {
            let op = if self.eat_sym("*") {
                Op::Mul
            } else if self.eat_sym("/") {
                Op::Div
            } else {
                return Ok(left);
            };
            let right = self.unary()?;
            left = Expr::Bin(op, Box::new(left), Box::new(right));
        }
    }

    fn unary(&mut self) -> Result<Expr, ParseError> {
        if self.eat_sym("-") {
            return Ok(Expr::Neg(Box::new(self.unary()?)));
        }
        if self.eat_sym("+") {
            return self.unary();
        }
        self.primary()
    }

    fn primary(&mut self) -> Result<Expr, ParseError> {
        let Some((_, tok)) = self.toks.get(self.at).cloned() else {
            return Err(self.err("unexpected end of formula"));
        };
        match tok {
            Tok::Num(v) => {
                self.at += 1;
                Ok(Expr::Num(v))
            }
            Tok::Sym("(") => {
                self.at += 1;
                let e = self.test()?;
                self.expect(")")?;
                Ok(e)
            }
            Tok::Name(n) if n == "min" || n == "max" => {
                self.at += 1;
                self.expect("(")?;
                let mut args = vec![self.test()?];
                while self.eat_sym(",") {
                    args.push(self.test()?);
                }
                self.expect(")")?;
                Ok(Expr::MinMax(n == "max", args))
            }
            Tok::Name(n) if is_keyword(&n) => Err(self.err(format!("unsupported keyword `{n}`"))),
            Tok::Name(n) => {
                self.at += 1;
                if matches!(self.peek(), Some(Tok::Sym("("))) {
                    return Err(self.err(format!("unsupported function `{n}`")));
                }
                Ok(Expr::Var(n))
            }
            Tok::Sym(s) => Err(self.err(format!("unexpected `{s}`"))),
        }
    }
}

fn is_keyword(n: &str) -> bool {
    matches!(
        n,
        "if" | "else" | "and" | "or" | "not" | "in" | "is" | "lambda"
    )
}

/// Parses a formula of Intel's metrics files.
pub fn parse(formula: &str) -> Result<Expr, ParseError> {
    parse_with(formula, Syntax::Intel)
}

/// Parses a metric expression as perf writes it (`perf list --details metric`): names
/// come out unescaped (`topdown-be-bound`), `#SMT_on` as `#smt_on`. Perf constructs
/// outside the language (`d_ratio`, `|`, `#num_cpus`, ...) are a [`ParseError`].
pub fn parse_perf(formula: &str) -> Result<Expr, ParseError> {
    parse_with(formula, Syntax::Perf)
}

fn parse_with(formula: &str, syntax: Syntax) -> Result<Expr, ParseError> {
    let toks = tokenize(formula, syntax)?;
    let mut p = Parser {
        src: formula,
        toks,
        at: 0,
    };
    let e = p.test()?;
    if p.at != p.toks.len() {
        return Err(p.err("unexpected text after the formula"));
    }
    Ok(e)
}

impl Expr {
    /// Evaluates with `lookup` giving each name's value (None: unbound).
    pub fn eval(&self, lookup: &dyn Fn(&str) -> Option<f64>) -> Result<f64, EvalError> {
        Ok(match self {
            Expr::Num(v) => *v,
            Expr::Var(n) => lookup(n).ok_or_else(|| EvalError::Unbound(n.clone()))?,
            Expr::Neg(e) => -e.eval(lookup)?,
            Expr::Bin(op, l, r) => {
                let (a, b) = (l.eval(lookup)?, r.eval(lookup)?);
                let t = |c: bool| if c { 1.0 } else { 0.0 };
                match op {
                    Op::Add => a + b,
                    Op::Sub => a - b,
                    Op::Mul => a * b,
                    Op::Div if b == 0.0 => return Err(EvalError::DivisionByZero),
                    Op::Div => a / b,
                    Op::Lt => t(a < b),
                    Op::Gt => t(a > b),
                    Op::Le => t(a <= b),
                    Op::Ge => t(a >= b),
                    Op::Eq => t(a == b),
                    Op::Ne => t(a != b),
                }
            }
            Expr::If {
                cond,
                then,
                otherwise,
            } => {
                if cond.eval(lookup)? != 0.0 {
                    then.eval(lookup)?
                } else {
                    otherwise.eval(lookup)?
                }
            }
            Expr::MinMax(is_max, args) => {
                let mut acc: Option<f64> = None;
                for a in args {
                    let v = a.eval(lookup)?;
                    acc = Some(match acc {
                        None => v,
                        Some(x) if *is_max => x.max(v),
                        Some(x) => x.min(v),
                    });
                }
                acc.unwrap_or(f64::NAN)
            }
        })
    }

    /// The names without a value (`lookup` gives None) that the evaluation needs: those
    /// of a conditional's branch that its condition does not pick are left out (with
    /// SMT off, the SMT-only events of a Skylake formula are not needed).
    pub fn unbound<'a>(&'a self, lookup: &dyn Fn(&str) -> Option<f64>) -> Vec<&'a str> {
        let mut out = Vec::new();
        self.collect_unbound(lookup, &mut out);
        out
    }

    fn collect_unbound<'a>(&'a self, lookup: &dyn Fn(&str) -> Option<f64>, out: &mut Vec<&'a str>) {
        match self {
            Expr::Num(_) => {}
            Expr::Var(n) => {
                if lookup(n).is_none() && !out.contains(&n.as_str()) {
                    out.push(n);
                }
            }
            Expr::Neg(e) => e.collect_unbound(lookup, out),
            Expr::Bin(_, l, r) => {
                l.collect_unbound(lookup, out);
                r.collect_unbound(lookup, out);
            }
            Expr::If {
                cond,
                then,
                otherwise,
            } => match cond.eval(lookup) {
                Ok(c) if c != 0.0 => then.collect_unbound(lookup, out),
                Ok(_) => otherwise.collect_unbound(lookup, out),
                Err(_) => {
                    then.collect_unbound(lookup, out);
                    cond.collect_unbound(lookup, out);
                    otherwise.collect_unbound(lookup, out);
                }
            },
            Expr::MinMax(_, args) => args.iter().for_each(|a| a.collect_unbound(lookup, out)),
        }
    }

    /// Every name the formula refers to, in order of first use.
    pub fn names(&self) -> Vec<&str> {
        let mut out = Vec::new();
        self.collect(&mut out);
        out
    }

    fn collect<'a>(&'a self, out: &mut Vec<&'a str>) {
        match self {
            Expr::Num(_) => {}
            Expr::Var(n) => {
                if !out.contains(&n.as_str()) {
                    out.push(n);
                }
            }
            Expr::Neg(e) => e.collect(out),
            Expr::Bin(_, l, r) => {
                l.collect(out);
                r.collect(out);
            }
            Expr::If {
                cond,
                then,
                otherwise,
            } => {
                then.collect(out);
                cond.collect(out);
                otherwise.collect(out);
            }
            Expr::MinMax(_, args) => args.iter().for_each(|a| a.collect(out)),
        }
    }
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Op::Add => "+",
            Op::Sub => "-",
            Op::Mul => "*",
            Op::Div => "/",
            Op::Lt => "<",
            Op::Gt => ">",
            Op::Le => "<=",
            Op::Ge => ">=",
            Op::Eq => "==",
            Op::Ne => "!=",
        })
    }
}

#[cfg(test)]
mod tests {
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
            ("d_ratio(a, b)", "unsupported function `d_ratio`"),
            ("a | b", "unsupported character `|`"),
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
            ("a and b", "unexpected text"),
            ("abs(a)", "unsupported function `abs`"),
            ("a % 2", "unsupported character `%`"),
            ("(a + 1", "expected `)`"),
            ("a if b", "expected `else`"),
            ("1 < 2 < 3", "chained comparisons"),
        ] {
            let e = parse(bad).expect_err(bad);
            assert!(e.to_string().contains(what), "{bad}: {e}");
        }
    }
}
