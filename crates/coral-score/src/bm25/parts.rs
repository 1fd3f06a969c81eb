//! A [`Bm25Index`] written as bytes and read back (the engine's derived keyword file,
//! docs/ann.md "Reopen"): its documents' lengths and each term's postings, nothing derived.

use std::collections::HashMap;
use std::io::Write;

use super::{Bm25Index, Doc, Posting};

impl Bm25Index {
    /// Writes the index: the document count, then per document its id and length (u32 each),
    /// the number of terms with postings, then per term its UTF-8 name (u32 length, bytes),
    /// its posting count and per posting the document and the term's frequency in it (u32
    /// each), all little-endian. [`Bm25Index::read_parts`] gives back an index that scores
    /// every query the same.
    ///
    /// With `renumber`, document `d` is written as `renumber[d]` (which must give each
    /// document its own number), and each posting list in the new numbers' order: the lists
    /// an index built by inserting the documents in that order holds, so that a reader
    /// whose documents are numbered so walks them in the same order.
    pub fn write_parts(
        &self,
        out: &mut dyn Write,
        renumber: Option<&[u32]>,
    ) -> std::io::Result<()> {
        let new_id = |d: u32| -> std::io::Result<u32> {
            match renumber {
                None => Ok(d),
                Some(map) => map.get(d as usize).copied().ok_or_else(|| {
                    std::io::Error::other(format!("document {d} has no new number"))
                }),
            }
        };
        let mut docs: Vec<(u32, u32)> = Vec::with_capacity(self.docs.len());
        for (&d, doc) in &self.docs {
            docs.push((new_id(d)?, doc.len));
        }
        docs.sort_unstable();
        if docs.windows(2).any(|w| w[0].0 == w[1].0) {
            return Err(std::io::Error::other("two documents renumbered alike"));
        }
        out.write_all(&(docs.len() as u32).to_le_bytes())?;
        let mut buf = Vec::with_capacity(1 << 16);
        for (doc, len) in docs {
            buf.extend_from_slice(&doc.to_le_bytes());
            buf.extend_from_slice(&len.to_le_bytes());
            if buf.len() >= 1 << 16 {
                out.write_all(&buf)?;
                buf.clear();
            }
        }
        let live = self.postings.iter().filter(|list| !list.is_empty()).count();
        buf.extend_from_slice(&(live as u32).to_le_bytes());
        let mut entries: Vec<(u32, u32)> = Vec::new();
        for (term, list) in self.postings.iter().enumerate() {
            if list.is_empty() {
                continue;
            }
            let name = self.names[term].as_bytes();
            buf.extend_from_slice(&(name.len() as u32).to_le_bytes());
            buf.extend_from_slice(name);
            buf.extend_from_slice(&(list.len() as u32).to_le_bytes());
            entries.clear();
            for p in list {
                entries.push((new_id(p.doc)?, p.tf));
            }
            if renumber.is_some() {
                entries.sort_unstable();
            }
            for &(doc, tf) in &entries {
                buf.extend_from_slice(&doc.to_le_bytes());
                buf.extend_from_slice(&tf.to_le_bytes());
                if buf.len() >= 1 << 16 {
                    out.write_all(&buf)?;
                    buf.clear();
                }
            }
        }
        out.write_all(&buf)
    }

    /// Reads what [`Bm25Index::write_parts`] wrote from the start of `bytes`; returns the index
    /// and the bytes it took. Anything inconsistent (a posting of an unknown document, a term
    /// twice, a document twice in one list, a zero frequency, a length other than the sum of
    /// its frequencies, bytes cut short) is an error naming it.
    pub fn read_parts(bytes: &[u8]) -> Result<(Bm25Index, usize), String> {
        let mut at = 0usize;
        let n_docs = read_u32(bytes, &mut at)? as usize;
        if n_docs > bytes.len() / 8 {
            return Err("the keyword index is cut short".into());
        }
        // The documents in file order, and where each id's is: by a table over the ids when
        // they are dense (as `write_parts` renumbered writes them), else by a map. A look-up
        // per posting through a hash map made reading slower than building at a million.
        let mut docs: Vec<(u32, Doc)> = Vec::with_capacity(n_docs);
        let mut total_len = 0u64;
        let mut doc_bound = 0u64;
        for _ in 0..n_docs {
            let doc = read_u32(bytes, &mut at)?;
            let len = read_u32(bytes, &mut at)?;
            docs.push((
                doc,
                Doc {
                    len,
                    terms: Vec::new(),
                },
            ));
            total_len += u64::from(len);
            doc_bound = doc_bound.max(u64::from(doc) + 1);
        }
        let dense = doc_bound <= 2 * n_docs as u64 + 1024;
        let mut table: Vec<u32> = Vec::new();
        let mut map: HashMap<u32, u32> = HashMap::new();
        if dense {
            table = vec![u32::MAX; doc_bound as usize];
        } else {
            map.reserve(n_docs);
        }
        for (i, (doc, _)) in docs.iter().enumerate() {
            let fresh = if dense {
                std::mem::replace(&mut table[*doc as usize], i as u32) == u32::MAX
            } else {
                map.insert(*doc, i as u32).is_none()
            };
            if !fresh {
                return Err(format!("document {doc} is listed twice"));
            }
        }
        let place = |doc: u32| -> Option<usize> {
            let i = if dense {
                *table.get(doc as usize)?
            } else {
                *map.get(&doc)?
            };
            (i != u32::MAX).then_some(i as usize)
        };
        let n_terms = read_u32(bytes, &mut at)? as usize;
        let mut index = Bm25Index {
            total_len,
            doc_bound,
            ..Bm25Index::default()
        };
        index.term_ids.reserve(n_terms.min(bytes.len() / 8));
        let mut tf_sums: Vec<u64> = vec![0; docs.len()];
        for term in 0..n_terms {
            let len = read_u32(bytes, &mut at)? as usize;
            let name = bytes
                .get(at..at + len)
                .ok_or("the keyword index is cut short")?;
            at += len;
            let name =
                std::str::from_utf8(name).map_err(|_| format!("term {term} is not UTF-8"))?;
            let count = read_u32(bytes, &mut at)? as usize;
            if count == 0 {
                return Err(format!("term {name:?} has no postings"));
            }
            let raw = bytes
                .get(at..at + 8 * count)
                .ok_or("the keyword index is cut short")?;
            at += 8 * count;
            let id = term as u32;
            let mut list = Vec::with_capacity(count);
            for (pos, p) in raw.chunks_exact(8).enumerate() {
                let doc = u32::from_le_bytes([p[0], p[1], p[2], p[3]]);
                let tf = u32::from_le_bytes([p[4], p[5], p[6], p[7]]);
                let i = place(doc)
                    .ok_or_else(|| format!("term {name:?} lists unknown document {doc}"))?;
                let entry = &mut docs[i].1;
                if tf == 0 {
                    return Err(format!("term {name:?} has frequency 0 in document {doc}"));
                }
                if entry.terms.last().is_some_and(|&(t, _)| t == id) {
                    return Err(format!("term {name:?} lists document {doc} twice"));
                }
                entry.terms.push((id, pos as u32));
                tf_sums[i] += u64::from(tf);
                list.push(Posting {
                    doc,
                    tf,
                    len: entry.len,
                });
            }
            let name: Box<str> = name.into();
            if index.term_ids.insert(name.clone(), id).is_some() {
                return Err(format!("term {name:?} is listed twice"));
            }
            index.names.push(name);
            index.postings.push(list);
        }
        let mut by_id = HashMap::with_capacity(docs.len());
        for ((doc, entry), sum) in docs.into_iter().zip(tf_sums) {
            // Lengths saturate at u32::MAX, as `insert` counts them.
            let sum = sum.min(u64::from(u32::MAX));
            if sum != u64::from(entry.len) {
                return Err(format!(
                    "document {doc} has length {} but its terms add up to {sum}",
                    entry.len
                ));
            }
            by_id.insert(doc, entry);
        }
        index.docs = by_id;
        Ok((index, at))
    }
}

fn read_u32(bytes: &[u8], at: &mut usize) -> Result<u32, String> {
    let b = bytes
        .get(*at..*at + 4)
        .ok_or("the keyword index is cut short")?;
    *at += 4;
    Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

#[cfg(test)]
mod tests {
    use crate::{Bm25Index, Bm25Params, Bm25Query};

    fn round_trip(index: &Bm25Index) -> Bm25Index {
        let mut bytes = Vec::new();
        index.write_parts(&mut bytes, None).unwrap();
        bytes.extend_from_slice(b"tail");
        let (back, used) = Bm25Index::read_parts(&bytes).unwrap();
        assert_eq!(&bytes[used..], b"tail");
        back
    }

    #[test]
    fn a_read_index_scores_every_document_the_same_bit_for_bit() {
        let mut index = Bm25Index::new();
        let texts = [
            "painted landscapes of the river",
            "我最喜欢喝可乐 可乐",
            "river river river boats",
            "",
            "landscapes painted by a river at dawn",
            "今天加班到很晚",
        ];
        for (i, t) in texts.iter().enumerate() {
            index.insert_text(i as u32 * 3, t);
        }
        // Removals leave holes in the ids and move postings.
        index.remove(3);
        index.insert_text(40, "boats on the river");
        let back = round_trip(&index);
        assert_eq!(back.len(), index.len());
        assert_eq!(back.total_len(), index.total_len());
        assert_eq!(back.vocabulary(), index.vocabulary());
        for doc in [0u32, 3, 6, 9, 12, 15, 40] {
            assert_eq!(back.doc_terms(doc), index.doc_terms(doc), "doc {doc}");
        }
        for q in ["river", "painted river boats", "可乐", "加班", "nothing"] {
            let query = Bm25Query::from_text(q);
            let mut want = index.scores(&query, Bm25Params::default());
            let mut got = back.scores(&query, Bm25Params::default());
            want.sort_by_key(|&(d, _)| d);
            got.sort_by_key(|&(d, _)| d);
            let bits =
                |v: &[(u32, f64)]| v.iter().map(|&(d, s)| (d, s.to_bits())).collect::<Vec<_>>();
            assert_eq!(bits(&got), bits(&want), "{q}");
        }
        // It keeps working as an index: removes and inserts after the read.
        let mut back = back;
        assert!(back.remove(0));
        back.insert_text(0, "river");
        index.remove(0);
        index.insert_text(0, "river");
        assert_eq!(back.doc_terms(0), index.doc_terms(0));
        assert_eq!(back.doc_terms(12), index.doc_terms(12));
    }

    /// Each term's documents in list order, by term name.
    fn lists(index: &Bm25Index) -> std::collections::BTreeMap<String, Vec<(u32, u32, u32)>> {
        index
            .term_ids
            .iter()
            .map(|(name, &t)| {
                let list = index.postings[t as usize]
                    .iter()
                    .map(|p| (p.doc, p.tf, p.len))
                    .collect();
                (name.to_string(), list)
            })
            .collect()
    }

    #[test]
    fn a_renumbered_index_is_the_one_built_in_the_new_order() {
        let texts = ["a river", "river boats", "the boats", "a a river", "dawn"];
        let mut index = Bm25Index::new();
        // Inserted out of order and with a removal, so lists are not in document order.
        for &d in &[4u32, 1, 3, 0, 2] {
            index.insert_text(d, texts[d as usize]);
        }
        index.remove(1);
        index.insert_text(1, texts[1]);
        let renumber = [2u32, 0, 4, 1, 3];
        let mut bytes = Vec::new();
        index.write_parts(&mut bytes, Some(&renumber)).unwrap();
        let (back, _) = Bm25Index::read_parts(&bytes).unwrap();
        let mut fresh = Bm25Index::new();
        let mut order: Vec<(u32, usize)> = renumber
            .iter()
            .enumerate()
            .map(|(old, &new)| (new, old))
            .collect();
        order.sort_unstable();
        for (new, old) in order {
            fresh.insert_text(new, texts[old]);
        }
        assert_eq!(lists(&back), lists(&fresh));
        // Two documents given one number is refused.
        let mut bytes = Vec::new();
        assert!(
            index
                .write_parts(&mut bytes, Some(&[0, 0, 1, 2, 3]))
                .is_err()
        );
    }

    #[test]
    fn inconsistent_bytes_are_refused() {
        let mut index = Bm25Index::new();
        index.insert_text(1, "a river");
        index.insert_text(2, "river boats");
        let mut bytes = Vec::new();
        index.write_parts(&mut bytes, None).unwrap();
        for cut in [0, 3, 8, bytes.len() - 1] {
            assert!(Bm25Index::read_parts(&bytes[..cut]).is_err(), "cut {cut}");
        }
        // Document 2's length changed: no longer the sum of its frequencies.
        let mut bad = bytes.clone();
        bad[16] = 9;
        let err = Bm25Index::read_parts(&bad).unwrap_err();
        assert!(err.contains("length"), "{err}");
        // A posting naming a document the index does not have.
        let mut bad = bytes.clone();
        let last_doc = bad.len() - 8;
        bad[last_doc] = 77;
        let err = Bm25Index::read_parts(&bad).unwrap_err();
        assert!(err.contains("unknown document 77"), "{err}");
    }
}
