//! The timeline namespace `coral mcp` and `coral http` serve (docs/timeline.md, "Pinned
//! namespaces"): `--tenant`, `--user`, `--domain`, `--conversation`, else `$CORAL_TENANT_ID`,
//! `$CORAL_USER_ID`, `$CORAL_DOMAIN_ID`, `$CORAL_CONVERSATION_ID`, else `timeline.pin.*` of the
//! config, else the default user. Every namespace only with `--any-namespace` (or
//! `$CORAL_ANY_NAMESPACE=1`, `timeline.pin.any_namespace`), which over HTTP needs a token.
//! Beside the namespace, the project of memory calls that name none: `--project`, else
//! `memory.project` (docs/servers.md, "Projects").

use clap::Args;
use coral::Config;
use coral_mcp::project::ProjectScope;
use coral_mcp::tools::{Pin, Registry, Scope};

/// Which namespace a server serves, and what its MCP clients may do beyond reading.
#[derive(Debug, Args)]
pub struct ServeScope {
    /// Serve only this tenant's timeline (default $CORAL_TENANT_ID, timeline.pin.tenant_id,
    /// "default").
    #[arg(long, value_name = "ID")]
    tenant: Option<String>,
    /// Serve only this user's timeline (default $CORAL_USER_ID, timeline.pin.user_id,
    /// "default"): no tool argument reaches another user.
    #[arg(long, value_name = "ID")]
    user: Option<String>,
    /// Serve only this domain's timeline (default $CORAL_DOMAIN_ID, timeline.pin.domain_id,
    /// "default").
    #[arg(long, value_name = "ID")]
    domain: Option<String>,
    /// Serve only this conversation (default $CORAL_CONVERSATION_ID,
    /// timeline.pin.conversation_id, else any conversation of the user).
    #[arg(long, value_name = "ID")]
    conversation: Option<String>,
    /// Serve every namespace a call names. RISK: any client can then read (and over HTTP
    /// write) every user's timeline; over HTTP a token is required.
    #[arg(long, conflicts_with_all = ["tenant", "user", "domain", "conversation"])]
    any_namespace: bool,
    /// MCP only: also offer timeline_forget to the client (a model could then destroy
    /// memories; default timeline.policy.forget_over_mcp).
    #[arg(long)]
    allow_forget: bool,
    /// Tag inserts with this project and prefer it in searches when a call names none:
    /// `auto` = the client's workspace (its MCP roots, else the git root or directory the
    /// server starts in), `""` = none (default memory.project).
    #[arg(long, value_name = "NAME|auto")]
    project: Option<String>,
}

/// An environment variable, empty counting as unset.
fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

fn non_empty(s: &str) -> Option<String> {
    (!s.trim().is_empty()).then(|| s.to_string())
}

fn truthy(name: &str) -> Result<bool, String> {
    match env(name).as_deref().map(str::trim) {
        None | Some("0" | "false" | "no") => Ok(false),
        Some("1" | "true" | "yes") => Ok(true),
        Some(other) => Err(format!("${name} is {}; use 1 or 0", coral::echo(other))),
    }
}

impl ServeScope {
    /// The scope: the flags, then the environment, then the config; the default user when
    /// nothing names one.
    pub fn scope(&self, config: &Config) -> Result<Scope, String> {
        let pin = &config.timeline.pin;
        let part = |flag: &Option<String>, var: &str, configured: &str| {
            flag.clone()
                .or_else(|| env(var))
                .or_else(|| non_empty(configured))
        };
        let tenant = part(&self.tenant, "CORAL_TENANT_ID", &pin.tenant_id);
        let user = part(&self.user, "CORAL_USER_ID", &pin.user_id);
        let domain = part(&self.domain, "CORAL_DOMAIN_ID", &pin.domain_id);
        let conversation = part(
            &self.conversation,
            "CORAL_CONVERSATION_ID",
            &pin.conversation_id,
        );
        let any = self.any_namespace || truthy("CORAL_ANY_NAMESPACE")? || pin.any_namespace;
        let named = [&tenant, &user, &domain, &conversation]
            .iter()
            .any(|p| p.is_some());
        if any && named {
            return Err(
                "both a pinned namespace and every namespace are asked for (--any-namespace, \
                 $CORAL_ANY_NAMESPACE or timeline.pin.any_namespace, beside --tenant/--user/\
                 --domain/--conversation, $CORAL_*_ID or timeline.pin.*): choose one"
                    .into(),
            );
        }
        if any {
            return Ok(Scope::Any);
        }
        if !named {
            return Ok(Scope::Pinned(Pin::default_user()));
        }
        let or_default = |p: &Option<String>| p.clone().unwrap_or_else(|| "default".into());
        Pin::new(
            &or_default(&tenant),
            &or_default(&user),
            &or_default(&domain),
            conversation.as_deref(),
        )
        .map(Scope::Pinned)
    }

    /// The project of calls that name none: `--project`, else `memory.project`, `auto`
    /// resolved against the directory the server starts in.
    pub fn project(&self, config: &Config) -> Result<ProjectScope, String> {
        let value = self.project.as_deref().unwrap_or(&config.memory.project);
        let here = std::env::current_dir().unwrap_or_else(|_| "/".into());
        let flag = if self.project.is_some() {
            "--project"
        } else {
            "memory.project"
        };
        ProjectScope::parse(value, &here).map_err(|e| format!("{flag}: {e}"))
    }

    /// The registry `coral mcp` serves: pinned (or not), with `timeline_forget` when the
    /// operator allows it, and the project of calls that name none.
    pub fn mcp_registry(&self, config: &Config) -> Result<Registry, String> {
        let mut registry = Registry::builtin()
            .with_scope(self.scope(config)?)
            .with_project(self.project(config)?);
        if self.allow_forget || config.timeline.policy.forget_over_mcp {
            registry
                .expose_on_mcp("timeline_forget")
                .map_err(|e| e.to_string())?;
        }
        Ok(registry)
    }

    /// The registry `coral http` serves; serving every namespace needs a token.
    pub fn http_registry(&self, config: &Config, has_token: bool) -> Result<Registry, String> {
        if self.allow_forget {
            return Err(
                "--allow-forget is for `coral mcp`: over HTTP timeline_forget is always served \
                 to the host"
                    .into(),
            );
        }
        let scope = self.scope(config)?;
        if scope.is_any() && !has_token {
            return Err(
                "serving every namespace needs a token: any program or page that reaches the \
                 port could read and write every user's timeline; pass --token (or set \
                 CORAL_HTTP_TOKEN), or serve one namespace with --user (and --tenant, \
                 --domain, --conversation)"
                    .into(),
            );
        }
        Ok(Registry::builtin()
            .with_scope(scope)
            .with_project(self.project(config)?))
    }
}
