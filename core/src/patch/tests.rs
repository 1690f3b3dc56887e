use super::{Patch, read_value, slug};

#[test]
fn slugs() {
    assert_eq!(slug("Dune Messiah"), "dune-messiah");
    assert_eq!(slug("  L'Étranger: 2nd ed. "), "l-tranger-2nd-ed");
    assert_eq!(slug("!!!"), "");
    assert_eq!(slug(&"x".repeat(100)).len(), 60);
}

#[test]
fn values_read_as_json_or_dust() {
    assert_eq!(read_value("{\"a\": 1}", "patch").unwrap(), serde_json::json!({"a": 1}));
    assert_eq!(read_value("a 1", "patch").unwrap(), serde_json::json!({"a": 1}));
    let err = read_value("a 'open", "patch").unwrap_err();
    assert_eq!(err.code(), "invalid-arguments");
    assert!(err.to_string().starts_with("the patch is neither JSON nor DUST"), "{err}");
}

#[test]
fn operations_need_their_fields() {
    for (text, why) in [
        ("x 1", "a patch is an object with an array `ops`"),
        ("ops [{set {id a/b}}]", "ops[0]: set needs at least one field besides `id`"),
        ("ops [{unset {id a/b}}]", "ops[0]: unset needs `field` or `fields`"),
        ("ops [{rename {from a/b}}]", "ops[0]: rename needs a string `to`"),
        ("ops [{create 1 delete a/b}]", "ops[0]: an operation is an object with one key"),
    ] {
        let err = Patch::from_text(text).unwrap_err();
        assert!(err.to_string().starts_with(why), "{text}: {err}");
    }
}
