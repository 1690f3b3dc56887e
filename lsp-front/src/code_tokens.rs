//! Semantic tokens of code files, relayed: the file's server's tokens put into the editor's
//! legend and position encoding.
//!
//! The legend is fixed at `initialize`, before any server runs: the core's own token kinds,
//! then the protocol's predefined types and modifiers it lacks. A server's token is shown
//! under the legend entry of the same name; one whose type has no such entry is left out, and
//! so is a modifier. Positions are counted in the server's encoding on the text it was given
//! (the editor's buffer, else the file), and converted per token on that text.

use stardust_core::ide::{self, TokenKind};
use stardust_core::text::{Encoding, LineIndex, Position};

/// The token types of the editor's legend, in wire order.
pub(crate) fn types() -> Vec<&'static str> {
    let mut types: Vec<&'static str> = TokenKind::ALL.iter().map(|k| k.name()).collect();
    for name in ide::STANDARD_TYPES {
        if !types.contains(&name) {
            types.push(name);
        }
    }
    types
}

/// The token modifiers of the editor's legend, bit `i` named by entry `i`.
pub(crate) fn modifiers() -> Vec<&'static str> {
    let mut modifiers: Vec<&'static str> = ide::MODIFIERS.to_vec();
    for name in ide::STANDARD_MODIFIERS {
        if !modifiers.contains(&name) {
            modifiers.push(name);
        }
    }
    modifiers
}

/// The standard name a server's own type name stands for: typescript-language-server calls
/// methods and other members `member` (the protocol's name is `method`).
fn standard_name(name: &str) -> &str {
    match name {
        "member" => "method",
        other => other,
    }
}

/// A server's legend, as its `initialize` answer gave it.
pub(crate) struct ServerLegend {
    pub types: Vec<String>,
    pub modifiers: Vec<String>,
}

impl ServerLegend {
    /// From the server's `semanticTokensProvider` capability (`None`: it offers none).
    pub(crate) fn of(provider: &serde_json::Value) -> Option<ServerLegend> {
        let names = |key: &str| -> Vec<String> {
            provider["legend"][key]
                .as_array()
                .map(|a| a.iter().map(|n| n.as_str().unwrap_or_default().to_owned()).collect())
                .unwrap_or_default()
        };
        let types = names("tokenTypes");
        (!types.is_empty()).then(|| ServerLegend { types, modifiers: names("tokenModifiers") })
    }
}

/// The server's relative token `data` (in its legend) as the editor's (in the editor's),
/// keeping only the tokens on `lines` (all when `None`). With `convert` = (the text, the
/// server's encoding, the editor's), positions are converted on that text; without, the two
/// encodings are the same. Malformed input (a partial last token, an index past the legend)
/// loses only the tokens concerned.
pub(crate) fn translate(
    data: &[u32],
    legend: &ServerLegend,
    convert: Option<(&str, Encoding, Encoding)>,
    lines: Option<(u32, u32)>,
) -> Vec<u32> {
    let ours_types = types();
    let ours_modifiers = modifiers();
    let kind: Vec<Option<u32>> = legend
        .types
        .iter()
        .map(|name| {
            let name = standard_name(name);
            ours_types.iter().position(|t| *t == name).map(|i| i as u32)
        })
        .collect();
    let bit: Vec<Option<u32>> = legend
        .modifiers
        .iter()
        .map(|name| ours_modifiers.iter().position(|m| m == name).map(|i| 1 << i))
        .collect();
    let convert = convert.map(|(text, from, to)| (text, LineIndex::new(text), from, to));
    let (mut line, mut start) = (0u32, 0u32);
    let (mut last_line, mut last_start) = (0u32, 0u32);
    let mut out = Vec::with_capacity(data.len());
    for token in data.chunks_exact(5) {
        let [delta_line, delta_start, length, token_type, bits] =
            [token[0], token[1], token[2], token[3], token[4]];
        line = line.saturating_add(delta_line);
        start = if delta_line == 0 { start.saturating_add(delta_start) } else { delta_start };
        let Some(Some(kind)) = kind.get(token_type as usize) else { continue };
        if lines.is_some_and(|(first, last)| line < first || line > last) {
            continue;
        }
        let mut modifiers = 0;
        for (i, b) in bit.iter().enumerate().take(32) {
            if bits & (1 << i) != 0 {
                modifiers |= b.unwrap_or(0);
            }
        }
        let (column, width) = match &convert {
            None => (start, length),
            Some((text, index, from, to)) => {
                let (text, from, to) = (*text, *from, *to);
                let at = |column: u32| {
                    let offset = index
                        .offset(text, Position { line, column }, from)
                        .or_else(|| index.line_span(text, line).map(|span| span.end))?;
                    Some(index.position(text, offset, to).column)
                };
                let (Some(a), Some(b)) = (at(start), at(start.saturating_add(length))) else {
                    continue;
                };
                (a, b.saturating_sub(a))
            }
        };
        let delta_line = line - last_line;
        let delta_start = if delta_line == 0 { column.saturating_sub(last_start) } else { column };
        out.extend([delta_line, delta_start, width, *kind, modifiers]);
        (last_line, last_start) = (line, column);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn legend(types: &[&str], modifiers: &[&str]) -> ServerLegend {
        ServerLegend {
            types: types.iter().map(|s| s.to_string()).collect(),
            modifiers: modifiers.iter().map(|s| s.to_string()).collect(),
        }
    }

    /// Tokens as `line:column+length type [modifiers]`, decoded in the editor's legend.
    fn shown(data: &[u32]) -> Vec<String> {
        let (types, modifiers) = (types(), modifiers());
        let (mut line, mut start) = (0, 0);
        data.chunks_exact(5)
            .map(|t| {
                line += t[0];
                start = if t[0] == 0 { start + t[1] } else { t[1] };
                let mods: Vec<&str> = (0..32)
                    .filter(|i| t[4] & (1 << i) != 0)
                    .map(|i| modifiers[i as usize])
                    .collect();
                format!("{line}:{start}+{} {} {mods:?}", t[2], types[t[3] as usize])
            })
            .collect()
    }

    #[test]
    fn the_legend_is_the_cores_then_the_standard_names_it_lacks() {
        let types = types();
        assert_eq!(&types[..TokenKind::ALL.len()], TokenKind::ALL.map(|k| k.name()).as_slice());
        for name in ide::STANDARD_TYPES {
            assert_eq!(types.iter().filter(|t| **t == name).count(), 1, "{name}");
        }
        assert_eq!(&modifiers()[..2], ide::MODIFIERS.as_slice());
    }

    #[test]
    fn a_servers_tokens_in_the_editors_legend_and_encoding() {
        // A server's own legend: `class` and `function` known, `member` (tsserver's) for
        // `method`, `label` (clangd's) not.
        let server =
            legend(&["label", "function", "class", "member"], &["static", "mystery", "readonly"]);
        let text = "x = \"😀\"; f()\nclass C\n";
        // `f` at UTF-16 column 10 (the emoji is two units); `C` on the next line; a label.
        let data = [0, 10, 1, 1, 0b101, 1, 6, 1, 2, 0b010, 0, 0, 5, 0, 0];
        let same = translate(&data, &server, None, None);
        assert_eq!(shown(&same), ["0:10+1 function [\"readonly\", \"static\"]", "1:6+1 class []"]);
        let utf8 = translate(&data, &server, Some((text, Encoding::Utf16, Encoding::Utf8)), None);
        assert_eq!(shown(&utf8), ["0:12+1 function [\"readonly\", \"static\"]", "1:6+1 class []"]);
        let utf32 = translate(&data, &server, Some((text, Encoding::Utf16, Encoding::Utf32)), None);
        assert_eq!(shown(&utf32)[0], "0:9+1 function [\"readonly\", \"static\"]");
        let member = translate(&[0, 0, 1, 3, 0], &server, None, None);
        assert_eq!(shown(&member), ["0:0+1 method []"]);
        // Only the lines asked for.
        let second = translate(&data, &server, None, Some((1, 1)));
        assert_eq!(shown(&second), ["1:6+1 class []"]);
        // A type index past the server's legend, and a partial token: left out.
        let broken = [0, 0, 1, 9, 0, 0, 2, 1, 1, 0, 0, 1];
        let kept = translate(&broken, &server, None, None);
        assert_eq!(shown(&kept), ["0:2+1 function []"]);
    }
}
