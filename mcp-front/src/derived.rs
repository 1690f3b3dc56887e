//! Derived files as MCP resources (SPEC §19): the JSON projection of every DUST document and
//! the file of every entity, by the path the mount shows them at, under the documents' scheme
//! (`stardust://documents/.stardust/json/<path>.json`,
//! `stardust://documents/.stardust/entities/<id>.json`; docs/DECISIONS.md). Which files exist,
//! what they read as and which a commit changed are the core's (`store::projections`); this
//! module converts them.

use rmcp::ErrorData as McpError;
use rmcp::model::{ReadResourceResult, Resource, ResourceContents};
use serde_json::json;
use stardust_core::Code;
use stardust_core::analysis::Analysis;
use stardust_core::store::projections::{self, Area, Target};
use stardust_core::store::{DocumentNotice, EntityNotice};

use crate::server::DOCUMENTS;

/// Every derived file as a resource: the projections, then the entity files, each in path
/// order.
pub(crate) fn list(analysis: &Analysis) -> impl Iterator<Item = Resource> + '_ {
    [Area::Json, Area::Entities].into_iter().flat_map(|area| {
        projections::files(analysis, area).into_iter().map(|path| {
            let description = match projections::target(&path) {
                Some(Target::Projection(doc)) => format!("{doc} as JSON (a write saves {doc})"),
                Some(Target::Entity(id)) => format!("the entity {id} as JSON, as its file"),
                None => String::new(),
            };
            Resource::new(format!("{DOCUMENTS}{path}"), path.clone())
                .with_mime_type("application/json")
                .with_description(description)
        })
    })
}

/// The derived file at store-relative `path`, when `path` is in a derived area.
pub(crate) fn read(
    analysis: &Analysis,
    path: &str,
    uri: &str,
) -> Option<Result<ReadResourceResult, McpError>> {
    projections::area(path)?;
    let read = projections::target(path).and_then(|t| projections::read(analysis, &t));
    let Some(read) = read else {
        return Some(Err(McpError::resource_not_found(
            format!("{path} is no derived file of the store; resources/list names them"),
            Some(json!({"code": Code::NotFound})),
        )));
    };
    let mut meta = serde_json::Map::new();
    meta.insert("source".into(), json!(read.source));
    meta.insert("version".into(), json!(read.version));
    let text = String::from_utf8_lossy(&read.bytes).into_owned();
    let contents = ResourceContents::text(text, uri)
        .with_mime_type("application/json")
        .with_meta(rmcp::model::MetaObject(meta));
    Some(Ok(ReadResourceResult::new(vec![contents])))
}

/// The URIs of the derived files a notice's changes changed.
pub(crate) fn changed(
    analysis: &Analysis,
    documents: &[DocumentNotice],
    entities: &[EntityNotice],
) -> impl Iterator<Item = String> {
    projections::changed(analysis, documents, entities)
        .into_iter()
        .map(|c| format!("{DOCUMENTS}{}", c.path))
}
