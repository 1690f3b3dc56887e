//! The canonical DUST formatter, the JSON normaliser, and conversion between the notations.
