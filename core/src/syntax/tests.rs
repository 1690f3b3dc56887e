//! Parser fixture tests.
