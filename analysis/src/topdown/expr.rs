//! The formula languages of TopDown metrics, in two spellings ([`parse`], [`parse_perf`]).
//!
//! Intel's TMA metrics files write Python expressions: numbers, names (the aliases of
//! the metric's events and constants), `+ - * /`, unary minus, comparisons
//! (`< > <= >= == !=`, not chained), Python's `and`, `or`, `not`, the conditional
//! `x if cond else y`, and `min(..)` / `max(..)`. The SKL, SKX, ICL and SPR files use
//! all of these but `<= >= == !=` and `and`/`or`/`not` (they compare with `<` and `>`
//! only); those follow Python all the same.
//!
//! perf's metric expressions (`tools/perf/util/expr.y`) have the same arithmetic,
//! conditional and `min`/`max`, the comparisons `<` and `>`, the integer operators
//! `|`, `^`, `&` and `%` (on the values truncated to integers, as perf casts to `long`),
//! and `d_ratio(a, b)` (`a / b`, 0 when `b` is 0). Their precedence is perf's: the
//! conditional binds loosest, then `|`, `^`, `&`, the comparisons, `+ -`, `* / %`.
//!
//! Anything else is a [`ParseError`] that says what and where. Evaluation follows the
//! languages: only the branch the condition picks is evaluated, `and`/`or` stop at the
//! first operand that decides them and give that operand (Python's rule), comparisons
//! and `not` are 1 or 0, and a division by zero (`/`, `%`) is an error
//! ([`EvalError::DivisionByZero`]), never a made-up number.

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
    /// Python's `not x`: 1 when `x` is 0, else 0.
    Not(Box<Expr>),
    /// perf's `d_ratio(a, b)`: `a / b`, or 0 when `b` is 0.
    DRatio(Box<Expr>, Box<Expr>),
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
    /// Python's `and`: the left value when it is 0, else the right one.
    And,
    /// Python's `or`: the left value when it is not 0, else the right one.
    Or,
    /// perf's `|` on the values as integers.
    BitOr,
    /// perf's `&` on the values as integers.
    BitAnd,
    /// perf's `^` on the values as integers.
    BitXor,
    /// perf's `%` on the values as integers.
    Mod,
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
                // perf's literals of the counting setup: SMT on, and whether every
                // thread of each core is counted (`perf stat -a`).
                let k = k.to_ascii_lowercase();
                if k != "smt_on" && k != "core_wide" {
                    return Err(err(format!("unsupported constant `{name}`"), start));
                }
                name = format!("#{k}");
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
                b'|' | b'&' | b'^' | b'%' if syntax == Syntax::Perf => match c {
                    b'|' => "|",
                    b'&' => "&",
                    b'^' => "^",
                    _ => "%",
                },
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

/// One precedence level of the parser.
type Level<'a> = fn(&mut Parser<'a>) -> Result<Expr, ParseError>;

struct Parser<'a> {
    src: &'a str,
    toks: Vec<(usize, Tok)>,
    at: usize,
    syntax: Syntax,
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

    /// `or ['if' or 'else' test]` (Python's `test`; perf's `if_expr`).
    fn test(&mut self) -> Result<Expr, ParseError> {
        let then = self.or()?;
        if self.eat_word("if") {
            let cond = self.or()?;
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

    /// Intel: Python's `and_test ('or' and_test)*`. perf: `|`, loosest of its
    /// operators.
    fn or(&mut self) -> Result<Expr, ParseError> {
        let (sub, op, word): (Level<'_>, Op, &str) = match self.syntax {
            Syntax::Intel => (Self::and, Op::Or, "or"),
            Syntax::Perf => (Self::bit_xor, Op::BitOr, "|"),
        };
        self.left_assoc(sub, op, word)
    }

    /// Python's `not_test ('and' not_test)*`.
    fn and(&mut self) -> Result<Expr, ParseError> {
        self.left_assoc(Self::not, Op::And, "and")
    }

    /// Python's `'not' not_test | comparison`.
    fn not(&mut self) -> Result<Expr, ParseError> {
        if self.eat_word("not") {
            return Ok(Expr::Not(Box::new(self.not()?)));
        }
        self.comparison()
    }

    /// perf's `^`, between `|` and `&`.
    fn bit_xor(&mut self) -> Result<Expr, ParseError> {
        self.left_assoc(Self::bit_and, Op::BitXor, "^")
    }

    /// perf's `&`, above the comparisons.
    fn bit_and(&mut self) -> Result<Expr, ParseError> {
        self.left_assoc(Self::comparison, Op::BitAnd, "&")
    }

    /// `sub (op sub)*`, `op` being a symbol or a word.
    fn left_assoc(
        &mut self,
        sub: fn(&mut Self) -> Result<Expr, ParseError>,
        op: Op,
        spelled: &str,
    ) -> Result<Expr, ParseError> {
        let mut left = sub(self)?;
        while self.eat_sym(spelled) || self.eat_word(spelled) {
            let right = sub(self)?;
            left = Expr::Bin(op, Box::new(left), Box::new(right));
        }
        Ok(left)
    }

    fn comparison_op(&self) -> Option<Op> {
        Some(match self.peek() {
            Some(Tok::Sym("<")) => Op::Lt,
            Some(Tok::Sym(">")) => Op::Gt,
            Some(Tok::Sym("<=")) => Op::Le,
            Some(Tok::Sym(">=")) => Op::Ge,
            Some(Tok::Sym("==")) => Op::Eq,
            Some(Tok::Sym("!=")) => Op::Ne,
            _ => return None,
        })
    }

    /// A comparison: one in Intel's (Python's chained comparisons are refused), a
    /// left-associative chain in perf's (`a < b < c` is `(a < b) < c` there).
    fn comparison(&mut self) -> Result<Expr, ParseError> {
        let mut left = self.sum()?;
        while let Some(op) = self.comparison_op() {
            self.at += 1;
            let right = self.sum()?;
            left = Expr::Bin(op, Box::new(left), Box::new(right));
            if self.syntax == Syntax::Intel && self.comparison_op().is_some() {
                return Err(self.err("chained comparisons are not supported"));
            }
        }
        Ok(left)
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
            } else if self.eat_sym("%") {
                Op::Mod
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
            Tok::Name(n) if n == "d_ratio" && self.syntax == Syntax::Perf => {
                self.at += 1;
                self.expect("(")?;
                let a = self.test()?;
                self.expect(",")?;
                let b = self.test()?;
                self.expect(")")?;
                Ok(Expr::DRatio(Box::new(a), Box::new(b)))
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
/// outside the language (`source_count(..)`, `#num_cpus`, ...) are a [`ParseError`].
pub fn parse_perf(formula: &str) -> Result<Expr, ParseError> {
    parse_with(formula, Syntax::Perf)
}

fn parse_with(formula: &str, syntax: Syntax) -> Result<Expr, ParseError> {
    let toks = tokenize(formula, syntax)?;
    let mut p = Parser {
        src: formula,
        toks,
        at: 0,
        syntax,
    };
    let e = p.test()?;
    if p.at != p.toks.len() {
        return Err(p.err("unexpected text after the formula"));
    }
    Ok(e)
}

/// A comparison's value: 1 or 0.
fn truth(c: bool) -> f64 {
    if c { 1.0 } else { 0.0 }
}

impl Expr {
    /// Evaluates with `lookup` giving each name's value (None: unbound).
    pub fn eval(&self, lookup: &dyn Fn(&str) -> Option<f64>) -> Result<f64, EvalError> {
        Ok(match self {
            Expr::Num(v) => *v,
            Expr::Var(n) => lookup(n).ok_or_else(|| EvalError::Unbound(n.clone()))?,
            Expr::Neg(e) => -e.eval(lookup)?,
            Expr::Not(e) => truth(e.eval(lookup)? == 0.0),
            Expr::DRatio(a, b) => {
                let (a, b) = (a.eval(lookup)?, b.eval(lookup)?);
                if b == 0.0 { 0.0 } else { a / b }
            }
            Expr::Bin(op @ (Op::And | Op::Or), l, r) => {
                // Python: the operand that decides, the right one unevaluated.
                let a = l.eval(lookup)?;
                if (a != 0.0) == (*op == Op::Or) {
                    a
                } else {
                    r.eval(lookup)?
                }
            }
            Expr::Bin(op, l, r) => {
                let (a, b) = (l.eval(lookup)?, r.eval(lookup)?);
                // perf's `(long)x`: truncation toward zero.
                let int = |x: f64| x as i64;
                let bits = |f: fn(i64, i64) -> i64| {
                    if a.is_nan() || b.is_nan() {
                        f64::NAN
                    } else {
                        f(int(a), int(b)) as f64
                    }
                };
                match op {
                    Op::Add => a + b,
                    Op::Sub => a - b,
                    Op::Mul => a * b,
                    Op::Div if b == 0.0 => return Err(EvalError::DivisionByZero),
                    Op::Div => a / b,
                    Op::Lt => truth(a < b),
                    Op::Gt => truth(a > b),
                    Op::Le => truth(a <= b),
                    Op::Ge => truth(a >= b),
                    Op::Eq => truth(a == b),
                    Op::Ne => truth(a != b),
                    Op::BitOr => bits(|x, y| x | y),
                    Op::BitAnd => bits(|x, y| x & y),
                    Op::BitXor => bits(|x, y| x ^ y),
                    Op::Mod if b.is_nan() || int(b) == 0 => {
                        return Err(EvalError::DivisionByZero);
                    }
                    Op::Mod => bits(i64::wrapping_rem),
                    Op::And | Op::Or => unreachable!("handled above"),
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
            Expr::Neg(e) | Expr::Not(e) => e.collect_unbound(lookup, out),
            Expr::Bin(op @ (Op::And | Op::Or), l, r) => match l.eval(lookup) {
                // The right operand only when the left one does not decide.
                Ok(a) if (a != 0.0) == (*op == Op::Or) => {}
                Ok(_) => r.collect_unbound(lookup, out),
                Err(_) => {
                    l.collect_unbound(lookup, out);
                    r.collect_unbound(lookup, out);
                }
            },
            Expr::Bin(_, l, r) | Expr::DRatio(l, r) => {
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
            Expr::Neg(e) | Expr::Not(e) => e.collect(out),
            Expr::Bin(_, l, r) | Expr::DRatio(l, r) => {
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
            Op::And => "and",
            Op::Or => "or",
            Op::BitOr => "|",
            Op::BitAnd => "&",
            Op::BitXor => "^",
            Op::Mod => "%",
        })
    }
}

#[cfg(test)]
mod tests;
