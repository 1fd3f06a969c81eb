//! The change `coral setup --dry-run` shows: a unified diff of the file's lines, three lines of
//! context. Setup changes one place in a file, so the common head and tail are cut first and
//! only the middle is compared (a longest common subsequence over a few lines, even in a
//! client file of megabytes).

/// A unified diff from `old` to `new` under the name `path`; empty when they are equal.
pub fn unified(path: &str, old: &str, new: &str) -> String {
    if old == new {
        return String::new();
    }
    let a: Vec<&str> = old.lines().collect();
    let b: Vec<&str> = new.lines().collect();
    let head = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let tail = a[head..]
        .iter()
        .rev()
        .zip(b[head..].iter().rev())
        .take_while(|(x, y)| x == y)
        .count();
    let (ma, mb) = (&a[head..a.len() - tail], &b[head..b.len() - tail]);
    // The middle's edit script by LCS; bounded, since setup edits one entry.
    let mut ops: Vec<(char, &str)> = Vec::new();
    if ma.len() * mb.len() <= 4_000_000 {
        let mut lcs = vec![vec![0u32; mb.len() + 1]; ma.len() + 1];
        for i in (0..ma.len()).rev() {
            for j in (0..mb.len()).rev() {
                lcs[i][j] = if ma[i] == mb[j] {
                    lcs[i + 1][j + 1] + 1
                } else {
                    lcs[i + 1][j].max(lcs[i][j + 1])
                };
            }
        }
        let (mut i, mut j) = (0, 0);
        while i < ma.len() || j < mb.len() {
            if i < ma.len() && j < mb.len() && ma[i] == mb[j] {
                ops.push((' ', ma[i]));
                i += 1;
                j += 1;
            } else if j < mb.len() && (i == ma.len() || lcs[i][j + 1] >= lcs[i + 1][j]) {
                ops.push(('+', mb[j]));
                j += 1;
            } else {
                ops.push(('-', ma[i]));
                i += 1;
            }
        }
    } else {
        ops.extend(ma.iter().map(|l| ('-', *l)));
        ops.extend(mb.iter().map(|l| ('+', *l)));
    }
    let context = 3;
    let before = head.saturating_sub(context);
    let after = tail.min(context);
    let old_count = (head - before) + ma.len() + after;
    let new_count = (head - before) + mb.len() + after;
    let mut out = format!("--- {path}\n+++ {path} (after coral setup)\n");
    out.push_str(&format!(
        "@@ -{},{old_count} +{},{new_count} @@\n",
        before + 1,
        before + 1
    ));
    for l in &a[before..head] {
        out.push_str(&format!(" {l}\n"));
    }
    for (op, l) in ops {
        out.push_str(&format!("{op}{l}\n"));
    }
    for l in &a[a.len() - tail..a.len() - tail + after] {
        out.push_str(&format!(" {l}\n"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shows_the_changed_lines_with_context() {
        let old = "a\nb\nc\nd\ne\nf\ng\n";
        let new = "a\nb\nc\nd\nX\ne\nf\ng\n";
        let d = unified("f.json", old, new);
        assert_eq!(
            d,
            "--- f.json\n+++ f.json (after coral setup)\n@@ -2,6 +2,7 @@\n b\n c\n d\n+X\n e\n f\n g\n"
        );
        assert_eq!(unified("f", "same\n", "same\n"), "");
        let d = unified("f", "", "x\n");
        assert!(d.contains("+x"), "{d}");
    }
}
