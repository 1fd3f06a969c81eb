//! The dashboard's files, compiled in (`assets/dashboard/`), and the page with the facts its
//! script needs about this server written into it (which settings a tool may change, whether a
//! token is needed), so the first view costs no extra request.

use serde_json::json;

/// One embedded file.
pub(super) struct Asset {
    /// Its `Content-Type`.
    pub media_type: &'static str,
    /// Its bytes.
    pub body: &'static str,
}

const JS: &str = "text/javascript; charset=utf-8";

/// `(name under /assets/, asset)`; the scripts are ES modules importing each other by these
/// names.
const ASSETS: &[(&str, Asset)] = &[
    (
        "app.css",
        Asset {
            media_type: "text/css; charset=utf-8",
            body: include_str!("../../assets/dashboard/app.css"),
        },
    ),
    (
        "icon.svg",
        Asset {
            media_type: "image/svg+xml",
            body: include_str!("../../assets/dashboard/icon.svg"),
        },
    ),
    (
        "app.js",
        Asset {
            media_type: JS,
            body: include_str!("../../assets/dashboard/app.js"),
        },
    ),
    (
        "api.js",
        Asset {
            media_type: JS,
            body: include_str!("../../assets/dashboard/api.js"),
        },
    ),
    (
        "i18n.js",
        Asset {
            media_type: JS,
            body: include_str!("../../assets/dashboard/i18n.js"),
        },
    ),
    (
        "ui.js",
        Asset {
            media_type: JS,
            body: include_str!("../../assets/dashboard/ui.js"),
        },
    ),
    (
        "overview.js",
        Asset {
            media_type: JS,
            body: include_str!("../../assets/dashboard/overview.js"),
        },
    ),
    (
        "settings.js",
        Asset {
            media_type: JS,
            body: include_str!("../../assets/dashboard/settings.js"),
        },
    ),
    (
        "memories.js",
        Asset {
            media_type: JS,
            body: include_str!("../../assets/dashboard/memories.js"),
        },
    ),
    (
        "threads.js",
        Asset {
            media_type: JS,
            body: include_str!("../../assets/dashboard/threads.js"),
        },
    ),
    (
        "timeline.js",
        Asset {
            media_type: JS,
            body: include_str!("../../assets/dashboard/timeline.js"),
        },
    ),
];

/// The asset called `name`.
pub(super) fn find(name: &str) -> Option<&'static Asset> {
    ASSETS.iter().find(|(n, _)| *n == name).map(|(_, a)| a)
}

/// The page, with this server's facts in its `coral-meta` block (JSON, read by `app.js`; a
/// `<script type="application/json">` is data, never run, so the CSP allows it).
pub(super) fn index_html(needs_token: bool) -> String {
    let meta = json!({
        "version": env!("CARGO_PKG_VERSION"),
        "needs_token": needs_token,
        "tool_settable": coral::TOOL_SETTABLE,
        "protected": coral::PROTECTED,
        "tunable": coral::TUNABLE,
        "list_limit": coral::MAX_LIST_LIMIT,
    });
    // `</` cannot end the block early: JSON allows `<\/`.
    let meta = meta.to_string().replace("</", "<\\/");
    include_str!("../../assets/dashboard/index.html").replace("{{META}}", &meta)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_module_a_script_imports_is_served() {
        for (name, asset) in ASSETS {
            for line in asset.body.lines() {
                let Some(rest) = line.split(" from './").nth(1) else {
                    continue;
                };
                let target = rest.split('\'').next().unwrap_or_default();
                assert!(find(target).is_some(), "{name} imports {target}");
            }
        }
        let page = index_html(true);
        assert!(page.contains("\"needs_token\":true"), "{page}");
        assert!(!page.contains("{{META}}"));
        for reference in page.split("/assets/").skip(1) {
            let target = reference.split('"').next().unwrap_or_default();
            assert!(find(target).is_some(), "index.html refers to {target}");
        }
    }
}
