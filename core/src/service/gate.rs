//! The mutation gate of SPEC §13: whether an agent's session may commit previews.
//!
//! Every mutation command only previews; committing (`stardust.preview.confirm`) is what the
//! gate guards. The client's name is a routing label inside the user's trust boundary, not
//! authentication: the gate keeps agents that were not meant to write from writing by accident.

use crate::config::{Config, MutationPosture};

/// A gate decision and the reason shown in `stardust.status`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GateDecision {
    pub allowed: bool,
    pub reason: String,
}

/// Whether a session of `client` may confirm previews, under the store's `[mcp]` posture and
/// the server's `--allow-mutation` flag. A gated posture with no client name fails closed.
pub fn mutation_gate(config: &Config, allow_flag: bool, client: Option<&str>) -> GateDecision {
    let decide = |allowed: bool, reason: String| GateDecision { allowed, reason };
    if allow_flag {
        return decide(true, "the server was started with --allow-mutation".to_owned());
    }
    match (config.mcp_mutation, client.filter(|c| !c.is_empty())) {
        (MutationPosture::Off, _) => decide(
            false,
            "mutation is off for MCP clients: start `stardust mcp --allow-mutation`, or set \
             [mcp] mutation = \"gated\" and list this client in mutation_allowlist"
                .to_owned(),
        ),
        (MutationPosture::Gated, None) => decide(
            false,
            "mutation is gated and the client sent no clientInfo.name, so the gate stays closed"
                .to_owned(),
        ),
        (MutationPosture::Gated, Some(name)) => {
            if config.mcp_mutation_allowlist.iter().any(|allowed| allowed == name) {
                decide(true, format!("client '{name}' is in [mcp] mutation_allowlist"))
            } else {
                decide(
                    false,
                    format!(
                        "client '{name}' is not in [mcp] mutation_allowlist; add it there to let \
                         it confirm previews"
                    ),
                )
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    fn config(text: &str) -> Config {
        Config::parse(text, Path::new("stardust.toml")).expect("valid configuration")
    }

    #[test]
    fn every_posture_and_client_name() {
        let off = Config::default();
        let gated = config("[mcp]\nmutation = \"gated\"\nmutation_allowlist = [\"claude-code\"]\n");
        let cases = [
            (&off, false, Some("claude-code"), false, "mutation is off"),
            (&off, true, None, true, "--allow-mutation"),
            (&gated, false, Some("claude-code"), true, "'claude-code' is in"),
            (&gated, false, Some("codex"), false, "'codex' is not in"),
            (&gated, false, Some(""), false, "no clientInfo.name"),
            (&gated, false, None, false, "no clientInfo.name"),
            (&gated, true, Some("codex"), true, "--allow-mutation"),
        ];
        for (config, flag, client, allowed, why) in cases {
            let decision = mutation_gate(config, flag, client);
            assert_eq!(decision.allowed, allowed, "{client:?} flag={flag}: {decision:?}");
            assert!(decision.reason.contains(why), "{client:?}: {}", decision.reason);
        }
    }
}
