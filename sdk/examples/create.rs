//! `create STORE TYPE NAME`: create an entity of type TYPE named NAME through a patch with a
//! temporary name, and print `{"seq": N, "id": "<resolved id>"}`.

use serde_json::json;
use stardust_sdk::Client;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [store, kind, name] = args.as_slice() else {
        eprintln!("usage: create STORE TYPE NAME");
        std::process::exit(2);
    };
    match create(store, kind, name) {
        Ok(line) => println!("{line}"),
        Err(err) => {
            eprintln!("error[{}]: {err}", err.code());
            std::process::exit(1);
        }
    }
}

fn create(store: &str, kind: &str, name: &str) -> stardust_sdk::Result<serde_json::Value> {
    let client = Client::connect(store, "create")?;
    let patch = json!({"ops": [{"create": {"id": "?new", "type": kind, "name": name}}]});
    let preview = client.patch(patch)?;
    if !preview.committable {
        let reasons = preview.reasons.join("; ");
        preview.discard()?;
        return Err(stardust_sdk::Error::Command {
            code: stardust_sdk::Code::Refused,
            message: format!("the store would refuse the new entity: {reasons}"),
            data: json!({"code": "refused"}),
        });
    }
    let committed = preview.confirm()?;
    let id = committed.resolved.get("?new").ok_or_else(|| {
        stardust_sdk::Error::Protocol("the confirm did not resolve the temporary name ?new".into())
    })?;
    Ok(json!({"seq": committed.seq, "id": id}))
}
