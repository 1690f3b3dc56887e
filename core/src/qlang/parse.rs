//! Reading a query document (DUST or JSON text, or a JSON value) into a checked [`Query`].
//!
//! Every mistake is an `invalid-arguments` error that says where (line:column of the query
//! text when there is one) and what to write instead. After this step the query is known to
//! be well-formed: variables in `find`, `filter` and `order` are bound by `where`, attributes
//! are names, and the sizes the engine relies on are bounded.

use serde_json::Value;

use super::attr::Attr;
use super::expr::{self, Expression, Scope};
use crate::error::{Error, Result};
use crate::syntax::{self, Lang, Node, NodeKind, Parse};
use crate::text::{Encoding, LineIndex, Span};

/// At most this many variables in one query (they are tracked as bits of a `u64`).
pub const MAX_VARS: usize = 64;
/// At most this many patterns, `not` and `or` clauses in one query, all levels counted.
pub const MAX_CLAUSES: usize = 256;
/// `not` and `or` nest at most this deep.
pub const MAX_NESTING: usize = 16;
/// At most this many filters.
pub const MAX_FILTERS: usize = 64;

/// A set of variables, one bit per slot.
pub(crate) type VarSet = u64;

pub(crate) fn bit(slot: usize) -> VarSet {
    1 << slot
}

/// A checked query, ready to plan and run.
#[derive(Clone, Debug)]
pub struct Query {
    pub(crate) vars: Vec<String>,
    pub(crate) find: Vec<FindItem>,
    pub(crate) clauses: Vec<Clause>,
    pub(crate) filters: Vec<Filter>,
    /// Order keys: a column of the row and whether it is descending. A row is the columns of
    /// `find` followed by the `hidden` variables.
    pub(crate) order: Vec<(usize, bool)>,
    /// Variables that `order` names but `find` does not (only without aggregates).
    pub(crate) hidden: Vec<usize>,
    pub(crate) limit: Option<u64>,
    pub(crate) offset: Option<u64>,
    pub(crate) pull: bool,
    /// Variables that stand for entities: they appear in the entity place of a pattern of
    /// the top level, so their values are ids of existing entities.
    pub(crate) entity_vars: VarSet,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Agg {
    Count,
    Min,
    Max,
    Sum,
}

impl Agg {
    fn name(self) -> &'static str {
        match self {
            Agg::Count => "count",
            Agg::Min => "min",
            Agg::Max => "max",
            Agg::Sum => "sum",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FindItem {
    Var(usize),
    Agg(Agg, usize),
}

#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Term {
    Var(usize),
    Any,
    /// A constant; a string stands for what a stored string does (`@x` is the id `x`).
    Const(Value),
}

#[derive(Clone, Debug)]
pub(crate) struct Pattern {
    pub e: Term,
    pub attr: Attr,
    pub v: Term,
    /// The pattern as written, in DUST, for plans and messages.
    pub text: String,
}

impl Pattern {
    pub fn vars(&self) -> VarSet {
        let mut set = 0;
        for term in [&self.e, &self.v] {
            if let Term::Var(slot) = term {
                set |= bit(*slot);
            }
        }
        set
    }
}

#[derive(Clone, Debug)]
pub(crate) enum Clause {
    Pattern(Pattern),
    Not(Vec<Clause>),
    Or(Vec<Vec<Clause>>),
}

impl Clause {
    /// Every variable the clause mentions.
    pub fn vars(&self) -> VarSet {
        match self {
            Clause::Pattern(p) => p.vars(),
            Clause::Not(clauses) => clauses.iter().fold(0, |s, c| s | c.vars()),
            Clause::Or(branches) => branches.iter().flatten().fold(0, |s, c| s | c.vars()),
        }
    }

    /// The variables every solution of the clause binds: a pattern's, and for `or` those
    /// bound in every branch. `not` binds nothing.
    pub fn binds(&self) -> VarSet {
        match self {
            Clause::Pattern(p) => p.vars(),
            Clause::Not(_) => 0,
            Clause::Or(branches) => {
                branches.iter().map(|b| binds(b)).reduce(|a, b| a & b).unwrap_or(0)
            }
        }
    }
}

/// The variables a list of clauses binds.
pub(crate) fn binds(clauses: &[Clause]) -> VarSet {
    clauses.iter().fold(0, |s, c| s | c.binds())
}

#[derive(Clone, Debug)]
pub(crate) struct Filter {
    pub expr: Expression,
    pub vars: VarSet,
}

impl Query {
    /// Read a query written as DUST or JSON text.
    pub fn parse(text: &str) -> Result<Query> {
        let parse = parse_text(text)?;
        let root = parse.root.as_ref();
        let reader =
            Reader { text: Some((text, LineIndex::new(text))), failed_at: Default::default() };
        reader.query(At { value: &parse.value, node: root })
    }

    /// Read a query given as a JSON value (an object, or a string holding DUST or JSON text).
    pub fn from_json(value: &Value) -> Result<Query> {
        match value {
            Value::String(text) => Query::parse(text),
            other => Reader { text: None, failed_at: Default::default() }
                .query(At { value: other, node: None }),
        }
    }

    /// Read a query written inside a document (a view's `query`): `value` with its syntax
    /// node. A mistake comes back with the range of the value it is about (the query's own
    /// range when the reader names none) and the reader's message.
    pub fn read_in(value: &Value, node: &Node) -> std::result::Result<Query, (Span, String)> {
        if let Value::String(text) = value {
            return Query::parse(text).map_err(|e| (node.span, e.to_string()));
        }
        let reader = Reader { text: None, failed_at: Default::default() };
        reader
            .query(At { value, node: Some(node) })
            .map_err(|e| (reader.failed_at.get().unwrap_or(node.span), e.to_string()))
    }

    /// The column names: `find` as written, normalised (`?b`, `count(?b)`).
    pub fn columns(&self) -> Vec<String> {
        self.find.iter().map(|item| self.column_name(*item)).collect()
    }

    fn column_name(&self, item: FindItem) -> String {
        match item {
            FindItem::Var(slot) => format!("?{}", self.vars[slot]),
            FindItem::Agg(agg, slot) => format!("{}(?{})", agg.name(), self.vars[slot]),
        }
    }
}

/// Parse the text as JSON when it looks like a JSON object, else as DUST; when both fail,
/// report the notation that read further.
fn parse_text(text: &str) -> Result<Parse> {
    let looks_json = text.trim_start().starts_with('{');
    let first =
        if looks_json { syntax::parse(text, Lang::Json) } else { syntax::parse(text, Lang::Dust) };
    if first.is_clean() {
        return Ok(first);
    }
    let chosen = if looks_json {
        let dust = syntax::parse(text, Lang::Dust);
        if dust.is_clean() {
            return Ok(dust);
        }
        let reach = |p: &Parse| p.errors.first().map_or(0, |e| e.span.start);
        if reach(&dust) > reach(&first) { dust } else { first }
    } else {
        first
    };
    let error = &chosen.errors[0];
    let index = LineIndex::new(text);
    let pos = index.position(text, error.span.start, Encoding::Utf32);
    Err(Error::InvalidArguments(format!(
        "the query has a syntax error at {}:{}: {}",
        pos.line + 1,
        pos.column + 1,
        error.message
    )))
}

/// A value of the query document with its syntax node, when it came from text.
#[derive(Clone, Copy)]
struct At<'v> {
    value: &'v Value,
    node: Option<&'v Node>,
}

impl<'v> At<'v> {
    fn items(self) -> Vec<At<'v>> {
        match (self.value, self.node) {
            (Value::Array(items), Some(node)) if matches!(node.kind, NodeKind::Array(_)) => {
                node.items(self.value).map(|(n, v)| At { value: v, node: Some(n) }).collect()
            }
            (Value::Array(items), _) => items.iter().map(|v| At { value: v, node: None }).collect(),
            _ => Vec::new(),
        }
    }

    fn entries(self) -> Vec<(&'v str, Option<Span>, At<'v>)> {
        match (self.value, self.node) {
            (Value::Object(_), Some(node)) if matches!(node.kind, NodeKind::Object(_)) => node
                .entries(self.value)
                .map(|(k, m, v)| (k, Some(m.key), At { value: v, node: Some(&m.value) }))
                .collect(),
            (Value::Object(map), _) => {
                map.iter().map(|(k, v)| (k.as_str(), None, At { value: v, node: None })).collect()
            }
            _ => Vec::new(),
        }
    }

    fn span(self) -> Option<Span> {
        self.node.map(|n| n.span)
    }
}

struct Reader<'t> {
    text: Option<(&'t str, LineIndex)>,
    /// Where the first mistake was found, when the query's nodes are known.
    failed_at: std::cell::Cell<Option<Span>>,
}

/// The state of reading one query.
struct Build {
    vars: Vec<String>,
    clauses: usize,
}

const KEYS: &[&str] = &["find", "where", "filter", "order", "limit", "offset", "pull"];

impl Reader<'_> {
    fn error(&self, span: Option<Span>, message: impl std::fmt::Display) -> Error {
        if self.failed_at.get().is_none() {
            self.failed_at.set(span);
        }
        match (&self.text, span) {
            (Some((text, index)), Some(span)) => {
                let pos = index.position(text, span.start, Encoding::Utf32);
                Error::InvalidArguments(format!(
                    "invalid query at {}:{}: {message}",
                    pos.line + 1,
                    pos.column + 1
                ))
            }
            _ => Error::InvalidArguments(format!("invalid query: {message}")),
        }
    }

    fn query(&self, at: At) -> Result<Query> {
        if !at.value.is_object() {
            return Err(self.error(at.span(), format!(
                "a query is an object with find and where (and filter, order, limit, offset, pull), not {}",
                crate::model::value_kind(at.value)
            )));
        }
        let mut fields: Vec<(&str, Option<Span>, At)> = Vec::new();
        for (key, span, value) in at.entries() {
            if !KEYS.contains(&key) {
                let near = KEYS
                    .iter()
                    .min_by_key(|k| crate::model::edit_distance(key, k))
                    .copied()
                    .unwrap_or("find");
                let hint = if crate::model::edit_distance(key, near) <= 2 {
                    format!("did you mean '{near}'? ")
                } else {
                    String::new()
                };
                return Err(self.error(
                    span,
                    format!("unknown key '{key}'; {hint}a query has {}", KEYS.join(", ")),
                ));
            }
            fields.push((key, span, value));
        }
        let get = |name: &str| fields.iter().find(|(k, _, _)| *k == name).map(|(_, _, v)| *v);
        let mut build = Build { vars: Vec::new(), clauses: 0 };

        let Some(where_at) = get("where") else {
            return Err(self.error(
                at.span(),
                "the query has no 'where'; add patterns such as where [[?e type book]]",
            ));
        };
        let clauses = self.clauses(where_at, &mut build, 0, "where")?;
        if binds(&clauses) == 0 {
            return Err(self.error(
                where_at.span(),
                "'where' binds no variable; add a pattern such as [?e type book] outside 'not'",
            ));
        }
        let bound = binds(&clauses);
        self.check_or_locals(&clauses, &clauses, &build)?;

        let Some(find_at) = get("find") else {
            return Err(self.error(
                at.span(),
                "the query has no 'find'; add the variables to return, as in find [?e]",
            ));
        };
        let find_items: Vec<At> =
            if find_at.value.is_string() { vec![find_at] } else { find_at.items() };
        if find_items.is_empty() {
            return Err(self.error(find_at.span(), "'find' lists the variables and aggregates to return, as in find [?b count(?r)]; it is empty"));
        }
        let mut find = Vec::new();
        for item in find_items {
            let parsed = self.find_item(item, &build)?;
            let slot = match parsed {
                FindItem::Var(s) | FindItem::Agg(_, s) => s,
            };
            if bound & bit(slot) == 0 {
                return Err(self.error(item.span(), format!(
                    "?{} is not bound by 'where' (outside 'not', and in every branch of an 'or'); add a pattern that binds it",
                    build.vars[slot]
                )));
            }
            if find.contains(&parsed) {
                return Err(self.error(
                    item.span(),
                    format!("'{}' is in 'find' twice", item.value.as_str().unwrap_or_default()),
                ));
            }
            find.push(parsed);
        }

        let mut filters = Vec::new();
        if let Some(filter_at) = get("filter") {
            let items =
                if filter_at.value.is_string() { vec![filter_at] } else { filter_at.items() };
            if !filter_at.value.is_string() && !filter_at.value.is_array() {
                return Err(self.error(
                    filter_at.span(),
                    "'filter' is a list of expressions, as in filter ['?y >= 1960']",
                ));
            }
            if items.len() > MAX_FILTERS {
                return Err(self.error(
                    filter_at.span(),
                    format!(
                        "a query may have at most {MAX_FILTERS} filters; combine them with 'and'"
                    ),
                ));
            }
            for item in items {
                filters.push(self.filter(item, &build, bound)?);
            }
        }

        let mut query = Query {
            vars: build.vars,
            find,
            clauses,
            filters,
            order: Vec::new(),
            hidden: Vec::new(),
            limit: None,
            offset: None,
            pull: false,
            entity_vars: 0,
        };
        query.entity_vars = query
            .clauses
            .iter()
            .filter_map(|c| match c {
                Clause::Pattern(Pattern { e: Term::Var(slot), .. }) => Some(bit(*slot)),
                _ => None,
            })
            .fold(0, |a, b| a | b);
        if let Some(order_at) = get("order") {
            (query.order, query.hidden) = self.order(order_at, &query, bound)?;
        }
        for (name, slot) in [("limit", &mut query.limit), ("offset", &mut query.offset)] {
            if let Some(value) = get(name) {
                *slot = Some(value.value.as_u64().ok_or_else(|| {
                    self.error(
                        value.span(),
                        format!(
                            "'{name}' is a whole number of rows, 0 or more; found {}",
                            value.value
                        ),
                    )
                })?);
            }
        }
        if let Some(pull) = get("pull") {
            query.pull = pull.value.as_bool().ok_or_else(|| {
                self.error(pull.span(), format!("'pull' is true or false; found {}", pull.value))
            })?;
        }
        Ok(query)
    }

    fn var(&self, name: &str, span: Option<Span>, build: &mut Build) -> Result<usize> {
        if !expr::is_var_name(name) {
            return Err(self.error(span, format!(
                "'?{name}' is not a variable name; use a letter or _ then letters, digits and _, as in ?first_name"
            )));
        }
        if let Some(slot) = build.vars.iter().position(|v| v == name) {
            return Ok(slot);
        }
        if build.vars.len() == MAX_VARS {
            return Err(self.error(span, format!("a query may use at most {MAX_VARS} variables")));
        }
        build.vars.push(name.to_owned());
        Ok(build.vars.len() - 1)
    }

    fn clauses(
        &self,
        at: At,
        build: &mut Build,
        nesting: usize,
        what: &str,
    ) -> Result<Vec<Clause>> {
        if nesting > MAX_NESTING {
            return Err(
                self.error(at.span(), format!("'not' and 'or' nest at most {MAX_NESTING} deep"))
            );
        }
        if !at.value.is_array() {
            return Err(self.error(
                at.span(),
                format!(
                    "'{what}' is a list of clauses, as in [[?b type book] [?b year ?y]]; found {}",
                    crate::model::value_kind(at.value)
                ),
            ));
        }
        let items = at.items();
        if items.is_empty() {
            return Err(self.error(
                at.span(),
                format!("'{what}' has no clauses; add a pattern such as [?e type book]"),
            ));
        }
        // A lone pattern written without the outer brackets: [?b type book].
        if items.iter().all(|i| !i.value.is_array() && !i.value.is_object()) {
            return Err(self.error(at.span(), format!(
                "'{what}' is a list of clauses; to give one pattern, write it inside brackets: [{}]",
                render(at.value)
            )));
        }
        let mut out = Vec::new();
        for item in items {
            build.clauses += 1;
            if build.clauses > MAX_CLAUSES {
                return Err(self.error(
                    item.span(),
                    format!("a query may have at most {MAX_CLAUSES} clauses"),
                ));
            }
            out.push(self.clause(item, build, nesting)?);
        }
        Ok(out)
    }

    fn clause(&self, at: At, build: &mut Build, nesting: usize) -> Result<Clause> {
        match at.value {
            Value::Array(_) => self.pattern(at, build).map(Clause::Pattern),
            Value::Object(map) if map.len() == 1 => {
                let (key, _, inner) = at.entries()[0];
                match key {
                    "not" => Ok(Clause::Not(self.clauses(inner, build, nesting + 1, "not")?)),
                    "or" => {
                        let branches = inner.items();
                        if !inner.value.is_array() || branches.is_empty() {
                            return Err(self.error(inner.span(), "'or' is a list of branches, each a list of clauses: {or [[[?b year 1965]] [[?b year 1966]]]}"));
                        }
                        let mut out = Vec::new();
                        for branch in branches {
                            // A branch that is a single pattern may skip its outer brackets.
                            let single = branch.items().first().is_some_and(|i| i.value.is_string());
                            if single {
                                build.clauses += 1;
                                out.push(vec![Clause::Pattern(self.pattern(branch, build)?)]);
                            } else {
                                out.push(self.clauses(branch, build, nesting + 1, "or")?);
                            }
                        }
                        Ok(Clause::Or(out))
                    }
                    other => Err(self.error(at.span(), format!("unknown clause '{other}'; a clause is a pattern [e a v], {{not [...]}} or {{or [[...] [...]]}}"))),
                }
            }
            other => Err(self.error(at.span(), format!(
                "a clause is a pattern [entity attribute value], {{not [...]}} or {{or [[...] [...]]}}; found {}",
                crate::model::value_kind(other)
            ))),
        }
    }

    fn pattern(&self, at: At, build: &mut Build) -> Result<Pattern> {
        let items = at.items();
        let text = render(at.value);
        if items.len() != 3 {
            return Err(self.error(
                at.span(),
                format!(
                    "a pattern has three elements [entity attribute value]; {text} has {}",
                    items.len()
                ),
            ));
        }
        let e = match items[0].value {
            Value::String(s) => self.term(s, items[0].span(), build)?,
            other => {
                return Err(self.error(
                    items[0].span(),
                    format!(
                        "the entity of a pattern is a variable, _ or an id; found {} in {text}",
                        crate::model::value_kind(other)
                    ),
                ));
            }
        };
        let attr = match items[1].value {
            Value::String(s) if s.starts_with('?') => {
                return Err(self.error(items[1].span(), format!(
                    "a variable cannot stand for an attribute ({s} in {text}); name the attribute, as in [?e title ?t]"
                )));
            }
            Value::String(s) if s == "_" => {
                return Err(self.error(items[1].span(), format!(
                    "_ cannot stand for an attribute (in {text}); name the attribute, as in [?e title ?t]"
                )));
            }
            Value::String(s) if !s.is_empty() => Attr::new(s),
            other => {
                return Err(self.error(items[1].span(), format!(
                    "the attribute of a pattern is a field name or a dotted path; found {} in {text}",
                    crate::model::value_kind(other)
                )));
            }
        };
        let v = match items[2].value {
            Value::String(s) => self.term(s, items[2].span(), build)?,
            other => Term::Const(other.clone()),
        };
        Ok(Pattern { e, attr, v, text })
    }

    fn term(&self, s: &str, span: Option<Span>, build: &mut Build) -> Result<Term> {
        if s == "_" {
            Ok(Term::Any)
        } else if let Some(name) = s.strip_prefix('?') {
            Ok(Term::Var(self.var(name, span, build)?))
        } else {
            Ok(Term::Const(Value::String(s.to_owned())))
        }
    }

    /// A variable bound only in some branches of an `or` is that branch's own; using it
    /// elsewhere too would silently mean something else, so it is refused.
    fn check_or_locals(&self, top: &[Clause], clauses: &[Clause], build: &Build) -> Result<()> {
        let top_bound = binds(top);
        for clause in clauses {
            match clause {
                Clause::Pattern(_) => {}
                Clause::Not(inner) => self.check_or_locals(top, inner, build)?,
                Clause::Or(branches) => {
                    let local = clause.vars() & !clause.binds() & !top_bound;
                    let outside = vars_outside(top, clause);
                    if let Some(slot) = (0..MAX_VARS).find(|s| local & outside & bit(*s) != 0) {
                        return Err(self.error(None, format!(
                            "?{} is bound in only some branches of an 'or' but used outside it; bind it in every branch, or outside the 'or'",
                            build.vars[slot]
                        )));
                    }
                    for branch in branches {
                        self.check_or_locals(top, branch, build)?;
                    }
                }
            }
        }
        Ok(())
    }

    fn find_item(&self, at: At, build: &Build) -> Result<FindItem> {
        let text = at.value.as_str().ok_or_else(|| {
            self.error(
                at.span(),
                format!(
                    "'find' lists variables and aggregates such as ?b or count(?b); found {}",
                    crate::model::value_kind(at.value)
                ),
            )
        })?;
        let Some((agg, name)) = find_syntax(text) else {
            return Err(self.error(at.span(), format!(
                "'{text}' is neither a variable such as ?b nor an aggregate count(?b), min(?b), max(?b) or sum(?b)"
            )));
        };
        match build.vars.iter().position(|v| v == name) {
            Some(slot) => Ok(agg.map_or(FindItem::Var(slot), |agg| FindItem::Agg(agg, slot))),
            None => Err(self.error(
                at.span(),
                format!("?{name} is not bound by 'where'; add a pattern that binds it"),
            )),
        }
    }

    fn filter(&self, at: At, build: &Build, bound: VarSet) -> Result<Filter> {
        let Some(src) = at.value.as_str() else {
            return Err(self.error(
                at.span(),
                format!(
                    "a filter is an expression in a string, as in '?y >= 1960'; found {}",
                    crate::model::value_kind(at.value)
                ),
            ));
        };
        let mut used: VarSet = 0;
        let mut var = |name: &str| match build.vars.iter().position(|v| v == name) {
            Some(slot) if bound & bit(slot) != 0 => {
                used |= bit(slot);
                Ok(slot)
            }
            _ => Err(format!(
                "?{name} is not bound by 'where'; a filter can only use variables that patterns bind"
            )),
        };
        let expr = expr::parse(src, &mut Scope { var: &mut var, fields: false }).map_err(|e| {
            self.error(
                at.span(),
                format!("in the filter '{src}', column {}: {}", e.column(src), e.message),
            )
        })?;
        Ok(Filter { expr, vars: used })
    }

    /// The order keys (row column, descending) and the variables they add to the row.
    fn order(&self, at: At, query: &Query, bound: VarSet) -> Result<OrderKeys> {
        let usage = "'order' is a list of keys, each a column of find or [column asc|desc], as in order [[?y desc] ?t]";
        let mut items = match at.value {
            Value::String(_) => vec![at],
            Value::Array(_) => at.items(),
            _ => return Err(self.error(at.span(), usage)),
        };
        // A single key with its direction, without the outer brackets: [?y desc].
        if items.len() == 2
            && matches!(items[1].value.as_str(), Some("asc" | "desc"))
            && items[0].value.is_string()
        {
            items = vec![at];
        }
        let columns = query.columns();
        let aggregates = query.find.iter().any(|f| matches!(f, FindItem::Agg(..)));
        let mut out: Vec<(usize, bool)> = Vec::new();
        let mut hidden: Vec<usize> = Vec::new();
        for item in items {
            let (key, desc) = match item.value {
                Value::String(s) => (s.as_str(), false),
                Value::Array(pair) => match (
                    pair.first().and_then(Value::as_str),
                    pair.get(1).and_then(Value::as_str),
                    pair.len(),
                ) {
                    (Some(k), Some("asc"), 2) => (k, false),
                    (Some(k), Some("desc"), 2) => (k, true),
                    (Some(k), None, 1) => (k, false),
                    _ => return Err(self.error(item.span(), usage)),
                },
                _ => return Err(self.error(item.span(), usage)),
            };
            let build = Build { vars: query.vars.clone(), clauses: 0 };
            let parsed = parse_find_item(key, &build);
            let column = match parsed.and_then(|f| query.find.iter().position(|c| *c == f)) {
                Some(column) => column,
                // A variable of `where` that `find` does not return still orders the rows.
                None => match parsed {
                    Some(FindItem::Var(slot)) if !aggregates && bound & bit(slot) != 0 => {
                        hidden.push(slot);
                        query.find.len() + hidden.len() - 1
                    }
                    _ => {
                        let what = if aggregates {
                            "a column of find (the query has aggregates)"
                        } else {
                            "a column of find or a variable bound by where"
                        };
                        return Err(self.error(
                            item.span(),
                            format!(
                                "cannot order by '{key}': it is not {what}; the columns are {}",
                                columns.join(" ")
                            ),
                        ));
                    }
                },
            };
            if out.iter().any(|(c, _)| *c == column) {
                return Err(self.error(item.span(), format!("'{key}' is in 'order' twice")));
            }
            out.push((column, desc));
        }
        Ok((out, hidden))
    }
}

/// Order keys as (column of the row, descending), and the hidden variables of the row.
type OrderKeys = (Vec<(usize, bool)>, Vec<usize>);

/// `?x` or `agg(?x)` with a known variable.
fn parse_find_item(text: &str, build: &Build) -> Option<FindItem> {
    let (agg, name) = find_syntax(text)?;
    let slot = build.vars.iter().position(|v| v == name)?;
    Some(agg.map_or(FindItem::Var(slot), |agg| FindItem::Agg(agg, slot)))
}

/// The aggregate (if any) and the variable name of `?x` or `agg(?x)`.
fn find_syntax(text: &str) -> Option<(Option<Agg>, &str)> {
    let text = text.trim();
    let (agg, var) = match text.split_once('(') {
        None => (None, text),
        Some((name, rest)) => {
            let agg = match name.trim() {
                "count" => Agg::Count,
                "min" => Agg::Min,
                "max" => Agg::Max,
                "sum" => Agg::Sum,
                _ => return None,
            };
            (Some(agg), rest.strip_suffix(')')?.trim())
        }
    };
    let name = var.strip_prefix('?')?;
    expr::is_var_name(name).then_some((agg, name))
}

/// The variables of everything in `top` except the clause `skip` (by identity).
fn vars_outside(top: &[Clause], skip: &Clause) -> VarSet {
    let mut set = 0;
    for clause in top {
        if std::ptr::eq(clause, skip) {
            continue;
        }
        set |= match clause {
            Clause::Pattern(p) => p.vars(),
            Clause::Not(inner) => vars_outside(inner, skip),
            Clause::Or(branches) => branches.iter().fold(0, |s, b| s | vars_outside(b, skip)),
        };
    }
    set
}

/// A value of the query in DUST, on one line: `[?a name 'Frank Herbert']`.
pub(crate) fn render(value: &Value) -> String {
    match value {
        Value::String(s) if is_bare(s) => s.clone(),
        Value::String(s) => {
            let escaped = s.replace('\\', "\\\\").replace('\'', "\\'").replace('\n', "\\n");
            format!("'{escaped}'")
        }
        Value::Array(items) => {
            format!("[{}]", items.iter().map(render).collect::<Vec<_>>().join(" "))
        }
        Value::Object(map) => {
            let members: Vec<String> = map
                .iter()
                .map(|(k, v)| format!("{} {}", render(&Value::String(k.clone())), render(v)))
                .collect();
            format!("{{{}}}", members.join(" "))
        }
        other => other.to_string(),
    }
}

/// Whether DUST reads `s` back as the same string when written bare.
fn is_bare(s: &str) -> bool {
    !s.is_empty()
        && !s.chars().any(|c| c.is_whitespace() || "{}[]'\";,".contains(c))
        && s.parse::<f64>().is_err()
        && !matches!(s, "true" | "false" | "null")
}
