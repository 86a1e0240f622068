//! The open-files limit a replica needs. Every connection is a file descriptor, and an idle
//! HTTP+SSE session or `GET` stream holds its connection for its whole life. Container runtimes
//! often start a process with a low soft limit (1024) under a high hard one, and Kubernetes has
//! no pod field for either, so the runtime raises its own soft limit to what its connection cap
//! needs (never past the hard limit) and warns when the hard limit is lower. A system call.

/// Descriptors beyond the connections: listeners, upstream and OTLP sockets, files.
const BEYOND_CONNECTIONS: u64 = 1024;

/// Raises the soft open-files limit to what `max_connections` connections need, and logs the
/// limit in force when it falls short.
pub(crate) fn raise_for(max_connections: usize) {
    let needed = (max_connections as u64).saturating_add(BEYOND_CONNECTIONS);
    match rlimit::increase_nofile_limit(needed) {
        Ok(limit) if limit >= needed => tracing::debug!(limit, "open-files limit"),
        Ok(limit) => tracing::warn!(
            limit,
            needed,
            "the open-files limit (the hard limit the container runtime set) is below what \
             --max-sessions needs: clients past it wait until connections close; raise the \
             runtime's LimitNOFILE or lower --max-sessions"
        ),
        Err(err) => tracing::warn!(error = %err, "cannot raise the open-files limit"),
    }
}
