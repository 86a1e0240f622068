//! Every MCP method and notification name this server knows, in one place. Pure data: the
//! dispatch (mcp-server's `Server::dispatch`) matches on these, transports and metrics refer to them.

/// `initialize` (legacy eras): opens a session.
pub const INITIALIZE: &str = "initialize";
/// `ping` (legacy eras; either side).
pub const PING: &str = "ping";
/// `server/discover` (2026-07-28).
pub const SERVER_DISCOVER: &str = "server/discover";
/// `tools/list`.
pub const TOOLS_LIST: &str = "tools/list";
/// `tools/call`.
pub const TOOLS_CALL: &str = "tools/call";
/// `resources/list`.
pub const RESOURCES_LIST: &str = "resources/list";
/// `resources/read`.
pub const RESOURCES_READ: &str = "resources/read";
/// `resources/templates/list`.
pub const RESOURCES_TEMPLATES_LIST: &str = "resources/templates/list";
/// `resources/subscribe` (legacy eras).
pub const RESOURCES_SUBSCRIBE: &str = "resources/subscribe";
/// `resources/unsubscribe` (legacy eras).
pub const RESOURCES_UNSUBSCRIBE: &str = "resources/unsubscribe";
/// `prompts/list`.
pub const PROMPTS_LIST: &str = "prompts/list";
/// `prompts/get`.
pub const PROMPTS_GET: &str = "prompts/get";
/// `completion/complete`.
pub const COMPLETION_COMPLETE: &str = "completion/complete";
/// `logging/setLevel` (legacy eras; 2026-07-28 puts the level in `_meta`).
pub const LOGGING_SET_LEVEL: &str = "logging/setLevel";
/// `subscriptions/listen` (2026-07-28): a stream of change notifications.
pub const SUBSCRIPTIONS_LISTEN: &str = "subscriptions/listen";
/// `tasks/get`: a task's status (and, in 2026-07-28, its result once done).
pub const TASKS_GET: &str = "tasks/get";
/// `tasks/cancel`: asks a task to stop.
pub const TASKS_CANCEL: &str = "tasks/cancel";
/// `tasks/update` (2026-07-28 Tasks extension): answers to a task's input requests.
pub const TASKS_UPDATE: &str = "tasks/update";
/// `tasks/result` (2025-11-25): waits for a task's result.
pub const TASKS_RESULT: &str = "tasks/result";
/// `tasks/list` (2025-11-25): not served, see `mcp-server`'s `tasks.rs`.
pub const TASKS_LIST: &str = "tasks/list";

/// Every request method above (metrics label them by name, anything else is `other`).
pub const ALL: &[&str] = &[
    INITIALIZE,
    PING,
    SERVER_DISCOVER,
    TOOLS_LIST,
    TOOLS_CALL,
    RESOURCES_LIST,
    RESOURCES_READ,
    RESOURCES_TEMPLATES_LIST,
    RESOURCES_SUBSCRIBE,
    RESOURCES_UNSUBSCRIBE,
    PROMPTS_LIST,
    PROMPTS_GET,
    COMPLETION_COMPLETE,
    LOGGING_SET_LEVEL,
    SUBSCRIPTIONS_LISTEN,
    TASKS_GET,
    TASKS_CANCEL,
    TASKS_UPDATE,
    TASKS_RESULT,
    TASKS_LIST,
];

/// Notification names, client to server and server to client.
pub mod notifications {
    /// The client gave up on a request (legacy eras).
    pub const CANCELLED: &str = "notifications/cancelled";
    /// Progress of a request that carried a progress token.
    pub const PROGRESS: &str = "notifications/progress";
    /// A log message at or above the requested level.
    pub const MESSAGE: &str = "notifications/message";
    /// The tool list changed.
    pub const TOOLS_LIST_CHANGED: &str = "notifications/tools/list_changed";
    /// The prompt list changed.
    pub const PROMPTS_LIST_CHANGED: &str = "notifications/prompts/list_changed";
    /// The resource or resource-template list changed.
    pub const RESOURCES_LIST_CHANGED: &str = "notifications/resources/list_changed";
    /// A subscribed resource's contents changed.
    pub const RESOURCES_UPDATED: &str = "notifications/resources/updated";
    /// First event of a `subscriptions/listen` stream (2026-07-28).
    pub const SUBSCRIPTIONS_ACKNOWLEDGED: &str = "notifications/subscriptions/acknowledged";
}
