//! Tool annotations (MCP's `title`, `readOnlyHint`, `destructiveHint`, `idempotentHint`,
//! `openWorldHint`): what each built-in tool does to the memory, in one table, so a client can
//! keep read-only tools available in a restricted mode and ask before a destructive one.
//!
//! The rules the table follows (docs/servers.md, "Tool annotations"):
//! - read-only: the tool changes no memory, thread, setting or timeline entry. Searching counts
//!   its hits as accesses for heat, bookkeeping that every read of a memory does, so the
//!   search tools are read-only too;
//! - destructive: the tool removes memories or overwrites something that was there (a delete,
//!   an importance, a setting, an open turn it aborts); adding a memory, a step or an entry is
//!   not;
//! - idempotent: the same call again changes nothing more (an insert of the same text merges
//!   into the memory it made; a delete finds nothing the second time);
//! - open world: the tool reaches beyond Coral's own files. Only `timeline_compact` does (the
//!   configured LLM).

/// One tool's annotations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Annotations {
    /// Human-readable title, English then Chinese.
    pub title: &'static str,
    /// Changes nothing.
    pub read_only: bool,
    /// May remove or overwrite (meaningful when not read-only).
    pub destructive: bool,
    /// A repeat of the same call has no further effect (meaningful when not read-only).
    pub idempotent: bool,
    /// Reaches outside Coral's files.
    pub open_world: bool,
}

impl Annotations {
    /// A read-only tool.
    pub const fn read_only(title: &'static str) -> Annotations {
        Annotations {
            title,
            read_only: true,
            destructive: false,
            idempotent: true,
            open_world: false,
        }
    }

    /// A tool that only adds (a memory, a step, an entry); `idempotent` when a repeat merges.
    pub const fn additive(title: &'static str, idempotent: bool) -> Annotations {
        Annotations {
            title,
            read_only: false,
            destructive: false,
            idempotent,
            open_world: false,
        }
    }

    /// A tool that removes or overwrites; `idempotent` when a repeat changes nothing more.
    pub const fn destructive(title: &'static str, idempotent: bool) -> Annotations {
        Annotations {
            title,
            read_only: false,
            destructive: true,
            idempotent,
            open_world: false,
        }
    }

    /// The rmcp value sent in `tools/list`.
    pub fn to_mcp(self) -> rmcp::model::ToolAnnotations {
        rmcp::model::ToolAnnotations::with_title(self.title)
            .read_only(self.read_only)
            .destructive(self.destructive)
            .idempotent(self.idempotent)
            .open_world(self.open_world)
    }
}

/// The annotations of the built-in tool `name`.
pub(super) fn builtin(name: &str) -> Option<Annotations> {
    use Annotations as A;
    Some(match name {
        "memory_search" => A::read_only("Search memories / 检索记忆"),
        "memory_insert" => A::additive("Remember a fact / 写入记忆", true),
        "memory_flush" => A::additive("Write a checkpoint / 写入检查点", true),
        "memory_delete" => A::destructive("Delete a memory / 删除记忆", true),
        "memory_mark_important" => A::destructive("Set importance / 设置重要度", true),
        "memory_list" => A::read_only("List memories / 列出记忆"),
        "coral_stats" => A::read_only("Memory statistics / 记忆统计"),
        "thread_create" => A::additive("Create a thread / 创建线程", false),
        "thread_status" => A::read_only("Thread overview / 线程概览"),
        "thread_advance" => A::additive("Add a thread step / 推进线程", false),
        // Status changes keep every step and are undone by thread_resume.
        "thread_interrupt" => A::additive("Interrupt a thread / 中断线程", false),
        "thread_archive" => A::additive("Archive a thread / 归档线程", true),
        "thread_resume" => A::additive("Resume a thread / 恢复线程", true),
        "thread_link" => A::additive("Link threads / 关联线程", true),
        "coral_config_get" => A::read_only("Read settings / 读取配置"),
        "coral_config_set" => A::destructive("Change a setting / 修改配置", true),
        "coral_config_reset" => A::destructive("Reset settings / 重置配置", true),
        "coral_report" => A::read_only("Health report / 健康报告"),
        "open_memory" => A::read_only("Open a stored body / 打开原文"),
        "retrieve_for_turn" => A::read_only("Retrieve past turns / 检索历史"),
        "browse_memory" => A::read_only("Browse summaries / 浏览摘要"),
        "read_timeline" => A::read_only("Read the timeline / 阅读时间线"),
        "timeline_context" => A::read_only("Memory context / 记忆上下文"),
        "timeline_conversations" => A::read_only("List conversations / 列出会话"),
        "timeline_surface" => A::read_only("Model-visible surface / 模型可见消息"),
        // Forgetting removes bodies for good; forgetting the same thing again finds nothing.
        "timeline_forget" => A::destructive("Forget timeline entries / 定向遗忘", true),
        "timeline_forgotten" => A::read_only("What was forgotten / 遗忘记录"),
        "timeline_compact" => Annotations {
            open_world: true,
            ..A::additive("Compact the timeline / 压缩时间线", true)
        },
        // Without caller-given ids a repeat records another turn or entry; a repeated action
        // or result is refused (its correlation id is taken) and a repeated completion is a
        // no-op.
        "timeline_begin_turn" => A::additive("Begin a turn / 开始一轮", false),
        "timeline_record_tool" => A::additive("Record a tool call / 记录工具调用", false),
        "timeline_append_action" => A::additive("Record an action / 记录动作", true),
        "timeline_append_observation" => A::additive("Record a result / 记录结果", true),
        "timeline_complete_turn" => A::additive("Complete a turn / 完成一轮", true),
        "timeline_abort_turn" => A::destructive("Abort a turn / 中止一轮", true),
        "timeline_record_entry" => A::additive("Record an entry / 记录条目", false),
        "timeline_turn" => A::read_only("Show a turn / 查看一轮"),
        "timeline_history" => A::read_only("Model-visible history / 可见历史"),
        "timeline_metrics" => A::read_only("Timeline metrics / 时间线统计"),
        "timeline_recover" => A::destructive("Recover open turns / 恢复遗留轮次", true),
        _ => return None,
    })
}
