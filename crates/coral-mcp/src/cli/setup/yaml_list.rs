//! Editing the DeepSeek harness's `cordis.patch.yml`, a top-level YAML list of plugin entries
//! each with an `id`: Coral's entry (`id: mcp-coral`) replaced, added at the end or removed as
//! a block of lines, every other line left as it was (comments, anchors, aliases, merge keys).
//! The result is parsed before it is written: it must still be a list whose ids are unique
//! (a duplicate id stops DSH from starting) and whose aliases all resolve.

use yaml_rust2::{Yaml, YamlLoader};

/// Coral's entry id.
pub const ID: &str = "mcp-coral";

/// The ids of a patch file's entries, in order; an error when it is not a YAML list of
/// mappings.
pub fn ids(text: &str) -> Result<Vec<String>, String> {
    let docs = YamlLoader::load_from_str(text).map_err(|e| format!("not valid YAML: {e}"))?;
    let Some(doc) = docs.first() else {
        return Ok(Vec::new());
    };
    let items = match doc {
        Yaml::Array(items) => items,
        Yaml::Null => return Ok(Vec::new()),
        _ => return Err("the top level is not a YAML list of entries".into()),
    };
    Ok(items
        .iter()
        .filter_map(|i| i["id"].as_str().map(String::from))
        .collect())
}

/// The top-level items as line ranges: each starts at a line `- ...` in column 0 and runs to
/// the next one; comments and blank lines right before an item belong to it.
fn items(lines: &[&str]) -> Vec<(usize, usize)> {
    let starts: Vec<usize> = lines
        .iter()
        .enumerate()
        .filter(|(_, l)| l.starts_with("- ") || **l == "-")
        .map(|(i, _)| i)
        .collect();
    let mut out = Vec::new();
    for (n, &s) in starts.iter().enumerate() {
        let mut end = starts.get(n + 1).copied().unwrap_or(lines.len());
        // Trailing comments and blank lines go with the next item (or stay at the end).
        while end > s + 1 && {
            let l = lines[end - 1].trim_start();
            l.is_empty() || l.starts_with('#')
        } {
            end -= 1;
        }
        out.push((s, end));
    }
    out
}

/// Whether an item's lines are Coral's entry: an `id: mcp-coral` at the item's own level.
fn is_coral(item: &[&str]) -> bool {
    item.iter().enumerate().any(|(i, l)| {
        let l = if i == 0 {
            l.strip_prefix('-').unwrap_or(l)
        } else {
            l
        };
        // The item's own keys are indented by two (after `- ` on the first line).
        let own = i == 0 || (l.starts_with("  ") && !l.starts_with("   "));
        let value = l.trim().strip_prefix("id:").map(str::trim);
        own && value.is_some_and(|v| v.trim_matches(|c| c == '\'' || c == '"') == ID)
    })
}

/// The text with Coral's entry set to `entry` (YAML lines, the first starting `- `), or
/// removed when `entry` is `None`. Returns the new text, or `None` when nothing changes.
pub fn edit(text: &str, entry: Option<&str>) -> Result<Option<String>, String> {
    let before = ids(text).map_err(|e| format!("the file is {e}; fix it first"))?;
    if before.iter().filter(|i| *i == ID).count() > 1 {
        return Err(format!(
            "the file has {} entries with id {ID} (DSH refuses duplicate ids); remove all \
             but one by hand first",
            before.iter().filter(|i| *i == ID).count()
        ));
    }
    let lines: Vec<&str> = text.lines().collect();
    let found = items(&lines)
        .into_iter()
        .find(|(s, e)| is_coral(&lines[*s..*e]));
    if before.contains(&ID.to_string()) && found.is_none() {
        return Err(format!(
            "the entry with id {ID} is not a plain top-level item Coral can edit (written in \
             flow style or under an anchor?); edit it by hand"
        ));
    }
    let entry_lines: Vec<&str> = entry.map(|e| e.lines().collect()).unwrap_or_default();
    let mut out: Vec<&str> = Vec::new();
    match found {
        Some((s, e)) => {
            if lines[s..e] == entry_lines[..] {
                return Ok(None);
            }
            out.extend(&lines[..s]);
            out.extend(&entry_lines);
            out.extend(&lines[e..]);
        }
        None if entry.is_none() => return Ok(None),
        None => {
            out.extend(&lines);
            // An empty list written as `[]` becomes the list of this entry.
            if out
                .iter()
                .all(|l| l.trim().is_empty() || l.trim_start().starts_with('#') || l.trim() == "[]")
            {
                out.retain(|l| l.trim() != "[]");
            }
            out.extend(&entry_lines);
        }
    }
    let mut new = out.join("\n");
    new.push('\n');
    let after = ids(&new).map_err(|e| {
        format!("the edit would leave the file {e} (an alias to the old entry?); edit it by hand")
    })?;
    let mut sorted = after.clone();
    sorted.sort();
    if let Some(w) = sorted.windows(2).find(|w| w[0] == w[1]) {
        return Err(format!("the edit would leave the id {} twice", w[0]));
    }
    let coral_count = after.iter().filter(|i| *i == ID).count();
    if coral_count != usize::from(entry.is_some()) {
        return Err(format!(
            "the edit left {coral_count} entries with id {ID}; edit it by hand"
        ));
    }
    Ok(Some(new))
}

#[cfg(test)]
mod tests {
    use super::*;

    const ENTRY: &str = "- id: mcp-coral\n  name: '@deepseek-ai/dsh-mcp-client'\n  config:\n    serverName: coral\n";

    #[test]
    fn adds_replaces_and_removes_keeping_anchors_and_comments() {
        let text = "# my plugins\n- &base\n  id: mcp-files\n  name: '@deepseek-ai/dsh-mcp-client'\n  config: {transport: stdio}\n\n- id: mcp-web\n  <<: *base\n";
        let added = edit(text, Some(ENTRY)).unwrap().unwrap();
        assert!(added.starts_with("# my plugins\n- &base\n"), "{added}");
        assert!(added.contains("<<: *base"));
        assert_eq!(ids(&added).unwrap(), ["mcp-files", "mcp-web", "mcp-coral"]);
        // Again: nothing to do.
        assert_eq!(edit(&added, Some(ENTRY)).unwrap(), None);
        // Changed: replaced in place, still one.
        let changed = edit(
            &added,
            Some(&ENTRY.replace("serverName: coral\n", "serverName: coral2\n")),
        )
        .unwrap()
        .unwrap();
        assert_eq!(
            ids(&changed).unwrap(),
            ["mcp-files", "mcp-web", "mcp-coral"]
        );
        assert!(changed.contains("serverName: coral2"));
        let removed = edit(&changed, None).unwrap().unwrap();
        assert_eq!(removed.trim_end(), text.trim_end());
        assert_eq!(edit(&removed, None).unwrap(), None);
        // An empty file, or `[]`.
        assert_eq!(
            ids(&edit("", Some(ENTRY)).unwrap().unwrap()).unwrap(),
            ["mcp-coral"]
        );
        assert_eq!(
            ids(&edit("[]\n", Some(ENTRY)).unwrap().unwrap()).unwrap(),
            ["mcp-coral"]
        );
    }

    #[test]
    fn refuses_what_it_cannot_edit_safely() {
        let twice = format!("{ENTRY}{ENTRY}");
        assert!(edit(&twice, Some(ENTRY)).unwrap_err().contains("2 entries"));
        assert!(
            edit("a: 1\n", Some(ENTRY))
                .unwrap_err()
                .contains("not a YAML list")
        );
        assert!(
            edit("- [unclosed\n", Some(ENTRY))
                .unwrap_err()
                .contains("not valid YAML")
        );
        // Coral's entry is an anchor another entry uses: removing it would break the alias.
        let anchored = "- &coral\n  id: mcp-coral\n  name: x\n- id: mcp-b\n  <<: *coral\n";
        let err = edit(anchored, None).unwrap_err();
        assert!(err.contains("alias") || err.contains("anchor"), "{err}");
        let flow = "- {id: mcp-coral, name: x}\n";
        assert!(
            edit(flow, Some(ENTRY))
                .unwrap_err()
                .contains("edit it by hand")
        );
    }
}
