//! The expression language of SPEC §8: its tokens, its syntax tree and a precedence-climbing
//! parser with bounded nesting.
//!
//! ```text
//! expr    := or
//! or      := and ('or' and)*
//! and     := not ('and' not)*
//! not     := 'not' not | compare
//! compare := sum (('=' | '!=' | '<' | '<=' | '>' | '>=') sum)?
//! sum     := product (('+' | '-') product)*
//! product := unary (('*' | '/') unary)*
//! unary   := '-' unary | postfix
//! postfix := primary ('.' segment)*
//! primary := number | string | 'true' | 'false' | 'null' | '@' id-and-path | '?' name
//!          | name '(' (expr (',' expr)*)? ')' | name | '(' expr ')' | '[' (expr (',' expr)*)? ']'
//! ```
//!
//! An entity id may contain `.`, so `@book/dune.author.name` is kept whole here and split at
//! evaluation: the longest prefix that is an existing id is the entity, the rest its path.
//! A path segment may contain `-` (`?b.sequel-of`), so a subtraction needs spaces around `-`.

use serde_json::Value;

use super::value::Val;

/// How deeply an expression may nest (parentheses, operators, calls). Evaluation recurses
/// along the tree, so this bound is what keeps it off the end of the stack.
pub const MAX_DEPTH: usize = 64;

/// A parsed expression and the text it came from (for messages).
#[derive(Clone, Debug)]
pub struct Expression {
    pub src: String,
    pub root: Expr,
}

#[derive(Clone, Debug)]
pub struct Expr {
    pub kind: ExprKind,
    /// Byte range in the source.
    pub start: usize,
    pub end: usize,
    depth: usize,
}

#[derive(Clone, Debug)]
pub enum ExprKind {
    Lit(Val<'static>),
    /// `[a, b]`: an array of the values.
    List(Vec<Expr>),
    /// The text after `@`: an entity id, perhaps followed by `.path`.
    Entity(String),
    Var {
        name: String,
        slot: usize,
    },
    /// A field of the context entity.
    Field(String),
    /// Fields (or array indexes, when all digits) read one after the other.
    Path(Box<Expr>, Vec<String>),
    Neg(Box<Expr>),
    Not(Box<Expr>),
    Binary(BinOp, Box<Expr>, Box<Expr>),
    Call(Func, Vec<Expr>),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinOp {
    Or,
    And,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    Add,
    Sub,
    Mul,
    Div,
}

impl BinOp {
    pub fn symbol(self) -> &'static str {
        match self {
            BinOp::Or => "or",
            BinOp::And => "and",
            BinOp::Eq => "=",
            BinOp::Ne => "!=",
            BinOp::Lt => "<",
            BinOp::Le => "<=",
            BinOp::Gt => ">",
            BinOp::Ge => ">=",
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Func {
    Count,
    Len,
    Lower,
    Upper,
    Contains,
    StartsWith,
    Keys,
    Sum,
    Min,
    Max,
    Referrers,
}

/// Every function: name, and the least and most number of arguments.
const FUNCS: &[(&str, Func, usize, usize)] = &[
    ("count", Func::Count, 1, 1),
    ("len", Func::Len, 1, 1),
    ("lower", Func::Lower, 1, 1),
    ("upper", Func::Upper, 1, 1),
    ("contains", Func::Contains, 2, 2),
    ("starts_with", Func::StartsWith, 2, 2),
    ("keys", Func::Keys, 1, 1),
    ("sum", Func::Sum, 1, 1),
    ("min", Func::Min, 1, usize::MAX),
    ("max", Func::Max, 1, usize::MAX),
    ("referrers", Func::Referrers, 1, 1),
];

impl Func {
    pub fn name(self) -> &'static str {
        FUNCS.iter().find(|f| f.1 == self).map_or("?", |f| f.0)
    }
}

/// A syntax error at a byte offset of the expression.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SyntaxError {
    pub offset: usize,
    pub message: String,
}

impl SyntaxError {
    /// The 1-based column (in characters) of the error in `src`.
    pub fn column(&self, src: &str) -> usize {
        src.get(..self.offset).map_or(self.offset, |s| s.chars().count()) + 1
    }
}

/// What the parser resolves names against.
pub struct Scope<'r> {
    /// The slot of a variable, or why it cannot be used.
    pub var: &'r mut dyn FnMut(&str) -> Result<usize, String>,
    /// Whether a bare name reads a field of a context entity.
    pub fields: bool,
}

/// Parse `src` as one expression.
pub fn parse(src: &str, scope: &mut Scope) -> Result<Expression, SyntaxError> {
    let tokens = lex(src)?;
    let mut parser = Parser { src, tokens, pos: 0, nesting: 0, scope };
    let root = parser.expr()?;
    let next = parser.peek();
    if next.tok != Tok::Eof {
        return Err(parser
            .error_at(next.start, format!("expected an operator, found {}", describe(&next.tok))));
    }
    Ok(Expression { src: src.to_owned(), root })
}

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Num(String),
    Str(String),
    At(String),
    Var(String),
    Name(String),
    /// `.segment` after a value.
    Seg(String),
    Op(&'static str),
    Eof,
}

#[derive(Clone, Debug)]
struct Token {
    tok: Tok,
    start: usize,
    end: usize,
}

fn describe(tok: &Tok) -> String {
    match tok {
        Tok::Num(n) => format!("number {n}"),
        Tok::Str(_) => "a string".to_owned(),
        Tok::At(id) => format!("'@{id}'"),
        Tok::Var(v) => format!("'?{v}'"),
        Tok::Name(n) => format!("'{n}'"),
        Tok::Seg(s) => format!("'.{s}'"),
        Tok::Op(op) => format!("'{op}'"),
        Tok::Eof => "the end of the expression".to_owned(),
    }
}

fn is_id_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '~' | ':' | '/' | '-')
}

fn is_segment_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '-')
}

fn is_name_start(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_'
}

fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// Whether `name` (without `?`) is a valid variable name: a letter or `_`, then letters,
/// digits and `_`.
pub fn is_var_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(is_name_start) && chars.all(is_name_char)
}

fn lex(src: &str) -> Result<Vec<Token>, SyntaxError> {
    let mut tokens = Vec::new();
    let mut chars = src.char_indices().peekable();
    let take_while = |chars: &mut std::iter::Peekable<std::str::CharIndices>,
                      f: fn(char) -> bool| {
        let mut end = None;
        while let Some(&(i, c)) = chars.peek() {
            if !f(c) {
                break;
            }
            end = Some(i + c.len_utf8());
            chars.next();
        }
        end
    };
    while let Some(&(start, c)) = chars.peek() {
        if c.is_whitespace() {
            chars.next();
            continue;
        }
        let tok = match c {
            '0'..='9' => {
                let mut end = take_while(&mut chars, |c| c.is_ascii_digit()).unwrap_or(start);
                // A fraction needs a digit after the dot; otherwise the dot starts a path.
                let rest = &src[end..];
                if rest.starts_with('.') && rest[1..].starts_with(|c: char| c.is_ascii_digit()) {
                    chars.next();
                    end = take_while(&mut chars, |c| c.is_ascii_digit()).unwrap_or(end);
                }
                let rest = &src[end..];
                if rest.starts_with(['e', 'E']) {
                    let after = rest[1..].trim_start_matches(['+', '-']);
                    if after.starts_with(|c: char| c.is_ascii_digit()) {
                        chars.next();
                        if matches!(chars.peek(), Some((_, '+' | '-'))) {
                            chars.next();
                        }
                        end = take_while(&mut chars, |c| c.is_ascii_digit()).unwrap_or(end);
                    }
                }
                Tok::Num(src[start..end].to_owned())
            }
            '\'' | '"' => Tok::Str(string(&mut chars, start, c)?),
            '@' => {
                chars.next();
                let end = take_while(&mut chars, is_id_char).ok_or_else(|| SyntaxError {
                    offset: start,
                    message: "'@' must be followed by an entity id, as in @book/dune".to_owned(),
                })?;
                Tok::At(src[start + 1..end].to_owned())
            }
            '?' => {
                chars.next();
                let end = take_while(&mut chars, is_name_char).unwrap_or(start + 1);
                let name = &src[start + 1..end];
                if !is_var_name(name) {
                    return Err(SyntaxError {
                        offset: start,
                        message: "'?' must be followed by a variable name, as in ?year".to_owned(),
                    });
                }
                Tok::Var(name.to_owned())
            }
            '.' => {
                chars.next();
                let end = take_while(&mut chars, is_segment_char).ok_or_else(|| SyntaxError {
                    offset: start,
                    message: "expected a field name or an index after '.'".to_owned(),
                })?;
                Tok::Seg(src[start + 1..end].to_owned())
            }
            c if is_name_start(c) => {
                let end = take_while(&mut chars, is_name_char).unwrap_or(start);
                Tok::Name(src[start..end].to_owned())
            }
            _ => {
                chars.next();
                let next = chars.peek().map(|&(_, c)| c);
                let two = |chars: &mut std::iter::Peekable<std::str::CharIndices>, op| {
                    chars.next();
                    op
                };
                let op = match (c, next) {
                    ('!', Some('=')) => two(&mut chars, "!="),
                    ('<', Some('=')) => two(&mut chars, "<="),
                    ('>', Some('=')) => two(&mut chars, ">="),
                    ('=', Some('=')) => two(&mut chars, "="),
                    ('<', Some('>')) => two(&mut chars, "!="),
                    ('+', _) => "+",
                    ('-', _) => "-",
                    ('*', _) => "*",
                    ('/', _) => "/",
                    ('=', _) => "=",
                    ('<', _) => "<",
                    ('>', _) => ">",
                    ('(', _) => "(",
                    ('[', _) => "[",
                    (']', _) => "]",
                    (')', _) => ")",
                    (',', _) => ",",
                    _ => {
                        return Err(SyntaxError {
                            offset: start,
                            message: format!("unexpected character '{}'", c.escape_default()),
                        });
                    }
                };
                Tok::Op(op)
            }
        };
        let end = chars.peek().map_or(src.len(), |&(i, _)| i);
        tokens.push(Token { tok, start, end });
    }
    tokens.push(Token { tok: Tok::Eof, start: src.len(), end: src.len() });
    Ok(tokens)
}

/// A quoted string with the escapes of DUST.
fn string(
    chars: &mut std::iter::Peekable<std::str::CharIndices>,
    start: usize,
    quote: char,
) -> Result<String, SyntaxError> {
    chars.next();
    let mut out = String::new();
    loop {
        let Some((i, c)) = chars.next() else {
            return Err(SyntaxError {
                offset: start,
                message: format!("this string has no closing {quote}"),
            });
        };
        match c {
            c if c == quote => return Ok(out),
            '\\' => {
                let Some((_, e)) = chars.next() else { continue };
                match e {
                    'n' => out.push('\n'),
                    't' => out.push('\t'),
                    'r' => out.push('\r'),
                    'b' => out.push('\u{8}'),
                    'f' => out.push('\u{c}'),
                    '\\' | '\'' | '"' | '/' => out.push(e),
                    'u' => {
                        let hex: String =
                            (0..4).filter_map(|_| chars.next().map(|(_, c)| c)).collect();
                        match u32::from_str_radix(&hex, 16).ok().and_then(char::from_u32) {
                            Some(c) if hex.len() == 4 => out.push(c),
                            _ => {
                                return Err(SyntaxError {
                                    offset: i,
                                    message:
                                        "\\u must be followed by four hex digits of a character"
                                            .to_owned(),
                                });
                            }
                        }
                    }
                    other => {
                        return Err(SyntaxError {
                            offset: i,
                            message: format!("unknown escape '\\{}'", other.escape_default()),
                        });
                    }
                }
            }
            '\n' | '\r' => {
                return Err(SyntaxError {
                    offset: i,
                    message: format!("this string has no closing {quote} on its line"),
                });
            }
            c => out.push(c),
        }
    }
}

struct Parser<'s, 'r, 'p> {
    src: &'s str,
    tokens: Vec<Token>,
    pos: usize,
    /// Open parentheses, calls and unary operators around the current point.
    nesting: usize,
    scope: &'p mut Scope<'r>,
}

impl Parser<'_, '_, '_> {
    fn peek(&self) -> Token {
        self.tokens[self.pos.min(self.tokens.len() - 1)].clone()
    }

    fn bump(&mut self) -> Token {
        let token = self.peek();
        if self.pos < self.tokens.len() - 1 {
            self.pos += 1;
        }
        token
    }

    fn at_op(&self, op: &str) -> bool {
        matches!(&self.tokens[self.pos].tok, Tok::Op(o) if *o == op)
    }

    fn at_name(&self, name: &str) -> bool {
        matches!(&self.tokens[self.pos].tok, Tok::Name(n) if n == name)
    }

    fn error_at(&self, offset: usize, message: String) -> SyntaxError {
        SyntaxError { offset, message }
    }

    fn too_deep(&self, offset: usize) -> SyntaxError {
        self.error_at(
            offset,
            format!(
                "the expression nests deeper than {MAX_DEPTH} levels; split it into simpler filters"
            ),
        )
    }

    /// The depth of a node over `children`, refused beyond [`MAX_DEPTH`].
    fn depth(&self, start: usize, children: &[&Expr]) -> Result<usize, SyntaxError> {
        let depth = 1 + children.iter().map(|c| c.depth).max().unwrap_or(0);
        if depth > MAX_DEPTH { Err(self.too_deep(start)) } else { Ok(depth) }
    }

    fn enter(&mut self, offset: usize) -> Result<(), SyntaxError> {
        self.nesting += 1;
        if self.nesting > MAX_DEPTH { Err(self.too_deep(offset)) } else { Ok(()) }
    }

    fn expr(&mut self) -> Result<Expr, SyntaxError> {
        self.binary(0)
    }

    /// Left-associative levels: or, and, (not), compare, sum, product.
    fn binary(&mut self, level: usize) -> Result<Expr, SyntaxError> {
        const LEVELS: &[&[(&str, BinOp)]] = &[
            &[("or", BinOp::Or)],
            &[("and", BinOp::And)],
            &[],
            &[
                ("=", BinOp::Eq),
                ("!=", BinOp::Ne),
                ("<", BinOp::Lt),
                ("<=", BinOp::Le),
                (">", BinOp::Gt),
                (">=", BinOp::Ge),
            ],
            &[("+", BinOp::Add), ("-", BinOp::Sub)],
            &[("*", BinOp::Mul), ("/", BinOp::Div)],
        ];
        if level == LEVELS.len() {
            return self.unary();
        }
        if level == 2 {
            return self.not();
        }
        let mut left = self.binary(level + 1)?;
        loop {
            let Some(&(_, op)) = LEVELS[level].iter().find(|(sym, _)| {
                if sym.chars().all(char::is_alphabetic) {
                    self.at_name(sym)
                } else {
                    self.at_op(sym)
                }
            }) else {
                return Ok(left);
            };
            let op_token = self.bump();
            let right = self.binary(level + 1)?;
            let (start, end) = (left.start, right.end);
            let depth = self.depth(start, &[&left, &right])?;
            left = Expr {
                kind: ExprKind::Binary(op, Box::new(left), Box::new(right)),
                start,
                end,
                depth,
            };
            // Comparisons do not chain: `a < b < c` is almost always a mistake.
            if level == 3 && LEVELS[3].iter().any(|(sym, _)| self.at_op(sym)) {
                let next = self.peek();
                return Err(self.error_at(
                    next.start,
                    format!(
                        "comparisons do not chain; combine them with 'and' (after '{}')",
                        describe(&op_token.tok).trim_matches('\'')
                    ),
                ));
            }
        }
    }

    fn not(&mut self) -> Result<Expr, SyntaxError> {
        if self.at_name("not") {
            let token = self.bump();
            self.enter(token.start)?;
            let inner = self.not()?;
            self.nesting -= 1;
            let (start, end, depth) = (token.start, inner.end, self.depth(token.start, &[&inner])?);
            return Ok(Expr { kind: ExprKind::Not(Box::new(inner)), start, end, depth });
        }
        self.binary(3)
    }

    fn unary(&mut self) -> Result<Expr, SyntaxError> {
        if self.at_op("-") {
            let token = self.bump();
            self.enter(token.start)?;
            let inner = self.unary()?;
            self.nesting -= 1;
            let (start, end, depth) = (token.start, inner.end, self.depth(token.start, &[&inner])?);
            return Ok(Expr { kind: ExprKind::Neg(Box::new(inner)), start, end, depth });
        }
        self.postfix()
    }

    fn postfix(&mut self) -> Result<Expr, SyntaxError> {
        let base = self.primary()?;
        let mut segments = Vec::new();
        let mut end = base.end;
        while let Tok::Seg(seg) = &self.tokens[self.pos].tok {
            segments.push(seg.clone());
            end = self.tokens[self.pos].end;
            self.bump();
        }
        if segments.is_empty() {
            return Ok(base);
        }
        let (start, depth) = (base.start, self.depth(base.start, &[&base])?);
        Ok(Expr { kind: ExprKind::Path(Box::new(base), segments), start, end, depth })
    }

    fn primary(&mut self) -> Result<Expr, SyntaxError> {
        let token = self.bump();
        let (start, end) = (token.start, token.end);
        let kind = match token.tok {
            Tok::Num(text) => ExprKind::Lit(number(&text).ok_or_else(|| {
                self.error_at(start, format!("the number {text} is out of range"))
            })?),
            Tok::Str(s) => ExprKind::Lit(Val::Str(s.into())),
            Tok::At(id) => ExprKind::Entity(id),
            Tok::Var(name) => match (self.scope.var)(&name) {
                Ok(slot) => ExprKind::Var { name, slot },
                Err(message) => return Err(self.error_at(start, message)),
            },
            Tok::Op("(") => {
                self.enter(start)?;
                let inner = self.expr()?;
                self.nesting -= 1;
                if !self.at_op(")") {
                    let next = self.peek();
                    return Err(self.error_at(
                        next.start,
                        format!(
                            "expected ')' to close the '(' at column {}, found {}",
                            self.column(start),
                            describe(&next.tok)
                        ),
                    ));
                }
                let close = self.bump();
                // The parentheses belong to the node's text, for messages.
                return Ok(Expr { end: close.end, start, ..inner });
            }
            Tok::Op("[") => {
                self.enter(start)?;
                let items = self.items("]", "a list")?;
                self.nesting -= 1;
                let close = self.bump();
                let children: Vec<&Expr> = items.iter().collect();
                let depth = self.depth(start, &children)?;
                return Ok(Expr { kind: ExprKind::List(items), start, end: close.end, depth });
            }
            Tok::Name(name) => match name.as_str() {
                "true" => ExprKind::Lit(Val::Bool(true)),
                "false" => ExprKind::Lit(Val::Bool(false)),
                "null" => ExprKind::Lit(Val::Null),
                "and" | "or" | "not" => {
                    return Err(self.error_at(start, format!("expected a value before '{name}'")));
                }
                _ if self.at_op("(") => return self.call(name, start),
                _ if self.scope.fields => ExprKind::Field(name),
                _ => {
                    return Err(self.error_at(
                        start,
                        format!(
                            "unknown name '{name}': write a variable (?{name}), a path (?e.{name}, @id.{name}) or quote text ('{name}')"
                        ),
                    ));
                }
            },
            Tok::Seg(seg) => {
                return Err(
                    self.error_at(start, format!("'.{seg}' must follow a value, as in ?e.{seg}"))
                );
            }
            other => {
                return Err(
                    self.error_at(start, format!("expected a value, found {}", describe(&other)))
                );
            }
        };
        Ok(Expr { kind, start, end, depth: 1 })
    }

    fn call(&mut self, name: String, start: usize) -> Result<Expr, SyntaxError> {
        let Some(&(_, func, least, most)) = FUNCS.iter().find(|f| f.0 == name) else {
            let names: Vec<&str> = FUNCS.iter().map(|f| f.0).collect();
            return Err(self.error_at(
                start,
                format!("unknown function '{name}'; the functions are {}", names.join(", ")),
            ));
        };
        self.bump();
        self.enter(start)?;
        let args = self.items(")", &format!("the call of {name}"))?;
        self.nesting -= 1;
        let close = self.bump();
        if args.len() < least || args.len() > most {
            let wanted = match (least, most) {
                (l, m) if l == m => format!("{l}"),
                (l, _) => format!("at least {l}"),
            };
            return Err(self.error_at(
                start,
                format!(
                    "{name} takes {wanted} argument{}, found {}",
                    if wanted == "1" { "" } else { "s" },
                    args.len()
                ),
            ));
        }
        let children: Vec<&Expr> = args.iter().collect();
        let depth = self.depth(start, &children)?;
        Ok(Expr { kind: ExprKind::Call(func, args), start, end: close.end, depth })
    }

    /// Expressions separated by commas up to `close` (left for the caller to take).
    fn items(&mut self, close: &str, what: &str) -> Result<Vec<Expr>, SyntaxError> {
        let mut items = Vec::new();
        if !self.at_op(close) {
            loop {
                items.push(self.expr()?);
                if self.at_op(",") {
                    self.bump();
                    continue;
                }
                break;
            }
        }
        if !self.at_op(close) {
            let next = self.peek();
            return Err(self.error_at(
                next.start,
                format!("expected ',' or '{close}' in {what}, found {}", describe(&next.tok)),
            ));
        }
        Ok(items)
    }

    fn column(&self, offset: usize) -> usize {
        SyntaxError { offset, message: String::new() }.column(self.src)
    }
}

/// A number literal: an integer when it is one, else a float; `None` when out of range.
fn number(text: &str) -> Option<Val<'static>> {
    if let Ok(i) = text.parse::<i64>() {
        return Some(Val::Int(i));
    }
    let value: Value = serde_json::from_str(text).ok()?;
    Val::try_float(value.as_f64()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_ok(src: &str) -> Expression {
        let mut var = |name: &str| {
            if name == "unbound" { Err("?unbound is not bound".to_owned()) } else { Ok(0) }
        };
        parse(src, &mut Scope { var: &mut var, fields: false })
            .unwrap_or_else(|e| panic!("{src}: {e:?}"))
    }

    fn parse_err(src: &str) -> String {
        let mut var = |name: &str| {
            if name == "unbound" { Err("?unbound is not bound".to_owned()) } else { Ok(0) }
        };
        let err = parse(src, &mut Scope { var: &mut var, fields: false }).expect_err(src);
        format!("{}: {}", err.column(src), err.message)
    }

    /// The tree with explicit parentheses.
    fn show(e: &Expr) -> String {
        match &e.kind {
            ExprKind::Lit(v) => v.describe(),
            ExprKind::List(items) => {
                format!("[{}]", items.iter().map(show).collect::<Vec<_>>().join(", "))
            }
            ExprKind::Entity(id) => format!("@{id}"),
            ExprKind::Var { name, .. } => format!("?{name}"),
            ExprKind::Field(name) => name.clone(),
            ExprKind::Path(base, segs) => {
                let segs: Vec<String> = segs.iter().map(|s| format!(".{s}")).collect();
                format!("{}{}", show(base), segs.concat())
            }
            ExprKind::Neg(inner) => format!("(-{})", show(inner)),
            ExprKind::Not(inner) => format!("(not {})", show(inner)),
            ExprKind::Binary(op, l, r) => format!("({} {} {})", show(l), op.symbol(), show(r)),
            ExprKind::Call(f, args) => {
                let args: Vec<String> = args.iter().map(show).collect();
                format!("{}({})", f.name(), args.join(", "))
            }
        }
    }

    #[test]
    fn precedence_and_associativity() {
        let cases = [
            ("1 + 2 * 3", "(1 + (2 * 3))"),
            ("1 - 2 - 3", "((1 - 2) - 3)"),
            (
                "?y >= 1960 and ?y < 1970 or not ?x = 'a'",
                "(((?y >= 1960) and (?y < 1970)) or (not (?x = \"a\")))",
            ),
            ("-?y.year * 2", "((-?y.year) * 2)"),
            ("@book/dune.author.name", "@book/dune.author.name"),
            ("?b.editions.0.sequel-of", "?b.editions.0.sequel-of"),
            ("len(keys(@a/b)) / 2.5e1", "(len(keys(@a/b)) / 25)"),
            ("min(1, 2, 3) == 1 and ?x <> 2", "((min(1, 2, 3) = 1) and (?x != 2))"),
            ("(1 + 2).x", "(1 + 2).x"),
            ("contains(['a', ?x], [])", "contains([\"a\", ?x], [])"),
            ("'it''s'", "\"it\""),
        ];
        for (src, want) in cases.iter().take(10) {
            assert_eq!(show(&parse_ok(src).root), *want, "{src}");
        }
        assert_eq!(parse_err(cases[10].0), "5: expected an operator, found a string");
    }

    #[test]
    fn errors_point_at_the_offending_column() {
        let cases = [
            ("?y >=", "6: expected a value, found the end of the expression"),
            ("?y >= 1960 )", "12: expected an operator, found ')'"),
            (
                "(1 + 2",
                "7: expected ')' to close the '(' at column 1, found the end of the expression",
            ),
            (
                "year > 3",
                "1: unknown name 'year': write a variable (?year), a path (?e.year, @id.year) or quote text ('year')",
            ),
            ("?unbound = 1", "1: ?unbound is not bound"),
            ("1 < 2 < 3", "7: comparisons do not chain; combine them with 'and' (after '<')"),
            (
                "frob(1)",
                "1: unknown function 'frob'; the functions are count, len, lower, upper, contains, starts_with, keys, sum, min, max, referrers",
            ),
            ("contains(1)", "1: contains takes 2 arguments, found 1"),
            ("'abc", "1: this string has no closing '"),
            ("@ x", "1: '@' must be followed by an entity id, as in @book/dune"),
            ("? x", "1: '?' must be followed by a variable name, as in ?year"),
            ("1 # 2", "3: unexpected character '#'"),
            ("'\\q'", "2: unknown escape '\\q'"),
            ("1e999", "1: the number 1e999 is out of range"),
            ("and 1", "1: expected a value before 'and'"),
            (".x", "1: '.x' must follow a value, as in ?e.x"),
        ];
        for (src, want) in cases {
            assert_eq!(parse_err(src), want, "{src}");
        }
    }

    #[test]
    fn nesting_is_bounded_without_overflowing_the_stack() {
        let deep = format!("{}1{}", "(".repeat(100_000), ")".repeat(100_000));
        assert!(parse_err(&deep).contains("nests deeper than 64 levels"));
        let long = vec!["1"; 100_000].join(" + ");
        assert!(parse_err(&long).contains("nests deeper than 64 levels"));
        let nots = format!("{}true", "not ".repeat(100_000));
        assert!(parse_err(&nots).contains("nests deeper than 64 levels"));
        let negs = format!("{}1", "-".repeat(100_000));
        assert!(parse_err(&negs).contains("nests deeper than 64 levels"));
        let calls = format!("{}1{}", "len(".repeat(100_000), ")".repeat(100_000));
        assert!(parse_err(&calls).contains("nests deeper than 64 levels"));
        let ok = vec!["1"; 60].join(" + ");
        parse_ok(&ok);
    }

    #[test]
    fn fields_are_names_only_with_a_context_entity() {
        let mut var = |_: &str| Ok(0);
        let parsed = parse("year > 1960", &mut Scope { var: &mut var, fields: true }).unwrap();
        assert_eq!(show(&parsed.root), "(year > 1960)");
    }
}
