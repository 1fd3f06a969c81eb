//! The MemCore timeline (`docs/timeline.md`): turns and tool calls in one SQLite file, terminal
//! settlement of long tool results into reload cards, the model-visible history, layered
//! summaries behind a stable context, and read-back by id (`open_memory`), by time
//! (`read_timeline`), by catalogue (`browse_memory`) and by search (`retrieve_for_turn`).
//!
//! Everything lives in a [`Namespace`]: the hard key `(tenant_id, user_id, domain_id)` that no
//! query crosses, the conversation (the default read scope) and a soft actor tag. A turn begins
//! with its stimuli, collects actions (tool calls) and observations (their results) paired by
//! correlation id, and ends with [`Timeline::complete_turn`] or [`Timeline::abort_turn`]. When
//! it ends under [`Policy::CompactAfterTerminal`], every result of at least 256 bytes whose
//! card takes at most half of it is shown as a reload card from then on; the body stays, and
//! `open_memory(memory_id, view = content)` returns it byte for byte.
//!
//! Time is a parameter (`now`, Unix seconds) of every call that writes.
//!
//! Damage is said out loud: a writable open copies a damaged write-ahead log aside and reports
//! it ([`Timeline::repairs`]), and [`Timeline::check`] lists every problem of the file. Where
//! nothing can be written (read-only file system, full disk) the timeline opens read-only
//! ([`Timeline::read_only`]): reads work and writes answer [`Error::Unwritable`].
//!
//! ```
//! use coral_timeline::{
//!     BeginTurn, CompleteTurn, HistoryFormat, Namespace, OpenRequest, ReadStatus, Timeline,
//!     ToolExchange, View,
//! };
//! use serde_json::json;
//!
//! let timeline = Timeline::open_in_memory()?;
//! let ns = Namespace::new("u_001", "c_001");
//! let now = 1_775_779_200.0; // 2026-04-10 08:00 in Shanghai
//!
//! let turn = timeline.begin_turn(&ns, &BeginTurn::user("查一下今天北京的天气"), now)?;
//! let page = "北京今天 25°C，晴。".repeat(100); // a long search result
//! let refs = timeline.record_tool_exchange(
//!     &ns,
//!     &turn.turn_id,
//!     &ToolExchange {
//!         tool_name: "web_search".into(),
//!         call_id: "call_001".into(),
//!         input: json!({"query": "北京今天天气"}),
//!         result: page.clone(),
//!         ..ToolExchange::default()
//!     },
//!     now + 1.0,
//! )?;
//! let done = timeline.complete_turn(&ns, &turn.turn_id, &CompleteTurn::answer("晴，25°C。"), now + 2.0)?;
//! assert_eq!(done.turn.settlement.as_ref().unwrap().folded, 1);
//!
//! // Later requests carry the card, not the page.
//! let history = timeline.history(&ns, HistoryFormat::OpenAi)?;
//! let tool_message = history.messages[2]["content"].as_str().unwrap();
//! assert!(tool_message.starts_with("[compact_reloadable]"));
//! assert!(history.tokens.saved > 0);
//!
//! // The card names the call that brings the page back, exactly.
//! let opened = timeline.open_memory(
//!     &ns,
//!     &refs.result.source_id,
//!     &OpenRequest { view: View::Content, ..OpenRequest::default() },
//! );
//! assert_eq!(opened.status, ReadStatus::Ok);
//! assert_eq!(opened.memory.as_ref().unwrap().content.as_deref(), Some(page.as_str()));
//! # Ok::<(), coral_timeline::Error>(())
//! ```

mod answers;
mod backup;
mod browse;
mod cache;
mod check;
mod compact;
mod context;
mod conversations;
mod cursor;
mod entry;
mod error;
mod forget;
mod history;
mod index;
mod insert;
mod layers;
mod metrics;
mod namespace;
mod open;
mod open_memory;
mod owner;
mod policy;
mod prompts;
mod purge;
mod rank;
mod raw_window;
mod read;
mod receipt;
mod recovery;
mod render;
mod repair;
mod reply;
mod retries;
mod retrieve;
mod retrieve_filter;
mod rows;
mod schema;
mod settle;
mod settlement;
mod snapshot;
mod summaries;
mod summariser;
mod surface;
mod terms;
mod timeline;
mod totals;
mod turn;
mod turn_row;
mod turns;
mod tz;
mod wal;

pub use backup::{backup_file, restore_file};
pub use browse::{
    BrowseCard, BrowsePage, BrowseRequest, BrowseResult, Coverage, DEFAULT_PAGE_SIZE, KeywordMatch,
    MAX_PAGE_SIZE,
};
pub use check::Problem;
pub use context::{CONTEXT_HEADER, Context, ContextRequest};
pub use conversations::Conversation;
pub use entry::{
    EntryInput, EntryRef, MAX_KIND_CHARS, MAX_TEXT_BYTES, Origin, TurnRole, check_kind,
    tool_segment,
};
pub use error::{Error, Result};
pub use forget::{
    FORGOTTEN_CALL, FORGOTTEN_TEXT, ForgetFilter, ForgetRecord, ForgetReport, ForgetRequest,
    ForgetTarget,
};
pub use history::{History, HistoryFormat, HistoryTokens};
pub use layers::{CompactReport, FACETS, LayerSettings, LayerStatus, SummaryCard, SummaryLayer};
pub use metrics::Metrics;
pub use namespace::{DEFAULT_ID, MAX_ID_CHARS, Namespace};
pub use open::{Access, Durability, Options};
pub use open_memory::{
    Detail, OpenRequest, OpenResult, Opened, OpenedMemory, OpenedSummary, SourcesPage, View,
};
pub use owner::Owner;
pub use policy::{DispatchPolicy, WITHHELD_TEXT};
pub use prompts::{MAX_NOTES_CHARS, MAX_PERSONA_CHARS, PromptOverrides};
pub use rank::{Fusion, RRF_K};
pub use read::{
    DEFAULT_ANCHOR_TURNS, EntryView, MAX_ANCHOR_TURNS, Projection, ReadRequest, ReadResult,
    TimeRange, TimelinePage, UnitView,
};
pub use receipt::{Anchors, MAX_RECEIPT_IDS, Receipt, with_receipt};
pub use recovery::Recovered;
pub use repair::Repair;
pub use reply::{ReadStatus, Reply, with_ok};
pub use retrieve::{
    ANCHOR_WEIGHT, DEFAULT_LIMIT, MAX_EMBED_PER_CALL, MAX_LIMIT, RetrieveHit, RetrieveRequest,
    RetrieveResult, Retrieved, TextEmbedder,
};
pub use retrieve_filter::TimeHint;
pub use schema::SCHEMA_VERSION;
pub use settle::{
    CardFields, Classification, MIN_SETTLE_BYTES, Policy, classify, estimate_tokens, reload_card,
    sha256_hex,
};
pub use summariser::SummaryLlm;
pub use surface::{ContextRole, Surface, SurfaceRequest};
pub use terms::{KeywordHit, keyword_hits, normalize_terms, reinforcement_overlap};
pub use timeline::Timeline;
pub use totals::Totals;
pub use turn::{
    BeginTurn, Closed, CompleteTurn, ExchangeRefs, MAX_STIMULI, SettledResult, SettlementReport,
    ToolExchange, TurnHandle, TurnStatus, TurnView,
};
pub use tz::{Period, date_header, date_label, minute_label, parse_instant, parse_zone};
