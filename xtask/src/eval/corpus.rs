//! The one shape every evaluation set is loaded into: groups of dated documents with questions.
//!
//! A group is what one fresh store holds: a MADial user's memories, a LoCoMo conversation's
//! turns. Both retrieval paths (the memory pool and the timeline) run over the same groups, so a
//! new data set is one loader and a new path is one runner.

/// One evaluation set, ready to run.
#[derive(Debug)]
pub struct Corpus {
    /// Name in the table and the JSON: `madial_zh`, `madial_en`, `locomo_dev`.
    pub key: &'static str,
    /// Question categories in table order (empty: only `overall`).
    pub categories: &'static [&'static str],
    /// `memory.sim_threshold_hot` for the pool path, when the protocol sets one (`None`: the
    /// configuration's default).
    pub merge_threshold: Option<f64>,
    /// The stores, in a fixed order.
    pub groups: Vec<Group>,
    /// What the loader noticed and left out (dropped evidence ids, questions without any).
    pub notes: Vec<String>,
}

/// The documents of one store and the questions asked of it.
#[derive(Debug)]
pub struct Group {
    /// A user (`user-1`) or a conversation (`conv-26`); the timeline's conversation id.
    pub name: String,
    /// In insertion order.
    pub docs: Vec<Doc>,
    /// In asking order (the pool's searches add heat, so the order is part of the protocol).
    pub questions: Vec<Question>,
    /// The clock of every question, Unix seconds.
    pub now: f64,
}

/// One memory or conversation turn.
#[derive(Clone, Debug, PartialEq)]
pub struct Doc {
    /// The id gold answers name (`D3:12`, a MADial memory id).
    pub id: String,
    /// What is stored.
    pub text: String,
    /// When it was said, Unix seconds.
    pub time: f64,
    /// Who said it (the timeline's actor tag), when known.
    pub speaker: Option<String>,
}

/// One question with its gold document ids.
#[derive(Clone, Debug, PartialEq)]
pub struct Question {
    /// The query text.
    pub text: String,
    /// Distinct document ids, at least one.
    pub gold: Vec<String>,
    /// Index into [`Corpus::categories`], if the set has categories.
    pub category: Option<usize>,
}

impl Corpus {
    /// Documents over all groups.
    pub fn docs(&self) -> usize {
        self.groups.iter().map(|g| g.docs.len()).sum()
    }

    /// Questions over all groups.
    pub fn questions(&self) -> usize {
        self.groups.iter().map(|g| g.questions.len()).sum()
    }

    /// Every text an embedder will be asked for: documents and questions.
    pub fn texts(&self) -> Vec<&str> {
        self.groups
            .iter()
            .flat_map(|g| {
                g.docs
                    .iter()
                    .map(|d| d.text.as_str())
                    .chain(g.questions.iter().map(|q| q.text.as_str()))
            })
            .collect()
    }
}
