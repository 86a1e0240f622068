//! Compiling `spec.tools`: names, input and output schemas, declared content, progress and log
//! steps, HTTP backends; and each tool's pre-built `tools/list` entry. Pure.

use super::http;
use super::param_headers;
use super::{CompiledLog, CompiledProgress, CompiledTool, Compiler, insert_some};
use super::{CompiledToolUi, apps};
use crate::access::Access;
use crate::types::{Resource, TaskSupport, Tool};
use crate::value_template::ValueTemplate;
use serde_json::{Map, Value, json};

/// Longest progress delay a declaration may ask for.
const MAX_PROGRESS_DELAY_MS: u64 = 10_000;

impl Compiler<'_> {
    pub(super) fn tools(&mut self, tools: &[Tool], resources: &[Resource]) -> Vec<CompiledTool> {
        self.unique(
            "tool name",
            tools
                .iter()
                .enumerate()
                .map(|(i, t)| (format!("spec.tools[{i}].name"), t.name.as_str())),
        );
        tools
            .iter()
            .enumerate()
            .filter_map(|(i, tool)| self.tool(&format!("spec.tools[{i}]"), tool, resources))
            .collect()
    }

    fn tool(&mut self, path: &str, tool: &Tool, resources: &[Resource]) -> Option<CompiledTool> {
        let errors_before = self.errors.len();
        if tool.name.is_empty()
            || tool.name.len() > 128
            || !tool
                .name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c))
        {
            self.error(
                format!("{path}.name"),
                "must be 1-128 characters of A-Z, a-z, 0-9, `_`, `-` and `.`",
            );
        }
        let declared_input = tool.input_schema.clone().unwrap_or_else(|| {
            let mut schema = Map::new();
            schema.insert("type".into(), json!("object"));
            schema
        });
        // Self-contained, as clients receive it: shared schemas copied under `$defs`. When that
        // fails (the errors say why), the declared schema is still checked, but not compiled.
        let resolved = self.shared.resolve(
            &format!("{path}.inputSchema"),
            &declared_input,
            &mut self.errors,
        );
        let input = resolved
            .as_ref()
            .and_then(|schema| self.schema(&format!("{path}.inputSchema"), schema));
        let input_schema = resolved.unwrap_or(declared_input);
        if input_schema.get("type") != Some(&json!("object")) {
            self.error(format!("{path}.inputSchema.type"), "must be \"object\"");
        }
        let (param_headers, header_errors) =
            param_headers::scan(&input_schema, &format!("{path}.inputSchema"));
        self.errors.extend(header_errors);
        let output_schema = tool.output_schema.as_ref().and_then(|declared| {
            self.shared
                .resolve(&format!("{path}.outputSchema"), declared, &mut self.errors)
        });
        let output = output_schema
            .as_ref()
            .and_then(|schema| self.schema(&format!("{path}.outputSchema"), schema));
        let declared_reply = tool.content.is_some() || tool.structured_content.is_some();
        if tool.http.is_some() && (declared_reply || tool.is_error) {
            self.error(
                format!("{path}.http"),
                "declare either `http` or a declared reply (`content`, `structuredContent`, `isError`)",
            );
        } else if tool.http.is_none() && !declared_reply {
            self.error(
                path.to_owned(),
                "declare the reply: `content`, `structuredContent` or both, or `http`",
            );
        }
        if tool.output_schema.is_some() && tool.structured_content.is_none() && tool.http.is_none()
        {
            self.error(
                format!("{path}.structuredContent"),
                "required when `outputSchema` is declared",
            );
        }
        let content = self.blocks(
            &format!("{path}.content"),
            tool.content.as_deref().unwrap_or_default(),
        );
        let structured = tool.structured_content.as_ref().and_then(|value| {
            self.value_template(&format!("{path}.structuredContent"), value.clone(), None)
        });
        if let (Some(validator), Some(literal)) = (
            &output,
            structured.as_ref().and_then(ValueTemplate::literal),
        ) && let Some(err) = validator.iter_errors(literal).next()
        {
            self.error(
                format!("{path}.structuredContent"),
                format!("does not match outputSchema: {err}"),
            );
        }
        let annotations = tool.annotations.as_ref();
        let http = tool.http.as_ref().and_then(|spec| {
            let target = http::Target::Tool {
                label: &tool.name,
                retry_allowed: annotations.is_some_and(|a| {
                    a.read_only_hint == Some(true) || a.idempotent_hint == Some(true)
                }),
                args: http::declared_args(&input_schema),
            };
            self.http(&format!("{path}.http"), spec, target)
        });
        let task = self.task_support(path, tool);
        let progress = self.progress(path, tool);
        let logs = tool
            .logs
            .iter()
            .enumerate()
            .filter_map(|(i, log)| {
                let message = self.text(&format!("{path}.logs[{i}].message"), &log.message)?;
                Some(CompiledLog {
                    level: log.level,
                    message,
                    logger: log.logger.clone(),
                })
            })
            .collect();
        let interaction = self.interaction(
            path,
            tool.confirm.as_ref(),
            &tool.elicit,
            tool.sample.as_ref(),
            tool.roots,
            tool.http.is_some(),
        );
        if let Some(problem) =
            super::interactive::closed_schema_problem(&input_schema, &tool.elicit)
        {
            self.error(format!("{path}.elicit"), problem);
        }
        let approval = tool
            .approval
            .as_ref()
            .and_then(|approval| self.approval(&format!("{path}.approval"), tool, approval));
        let ui_meta = tool
            .ui
            .as_ref()
            .map(|ui| self.tool_ui(&format!("{path}.ui"), ui, resources));
        if self.errors.len() > errors_before {
            return None;
        }
        let mut descriptor = json!({"name": tool.name});
        insert_some(&mut descriptor, "title", &tool.title);
        insert_some(&mut descriptor, "description", &tool.description);
        descriptor["inputSchema"] = Value::Object(input_schema);
        insert_some(&mut descriptor, "outputSchema", &output_schema);
        insert_some(&mut descriptor, "annotations", &tool.annotations);
        if !tool.icons.is_empty() {
            descriptor["icons"] = json!(tool.icons);
        }
        if task != TaskSupport::Never {
            // 2025-11-25 tool-level negotiation; absent means `forbidden`.
            descriptor["execution"] = json!({"taskSupport": task});
        } else if approval.is_some() {
            // A gated call may wait for its approval as a task; without one it is a tool error.
            descriptor["execution"] = json!({"taskSupport": TaskSupport::Optional});
        }
        let ui = ui_meta.map(|meta| {
            let plain = descriptor.clone();
            descriptor["_meta"] = json!({"ui": meta});
            CompiledToolUi {
                app_only: tool
                    .ui
                    .as_ref()
                    .is_some_and(|ui| apps::app_only(&ui.visibility)),
                plain,
            }
        });
        Some(CompiledTool {
            access: Access::default(),
            descriptor,
            input: input?,
            output,
            content,
            structured,
            is_error: tool.is_error,
            progress,
            logs,
            http,
            interaction,
            param_headers,
            ui,
            task,
            approval,
        })
    }

    fn progress(&mut self, path: &str, tool: &Tool) -> Vec<CompiledProgress> {
        let mut last = f64::NEG_INFINITY;
        let mut steps = Vec::new();
        for (i, step) in tool.progress.iter().enumerate() {
            let step_path = format!("{path}.progress[{i}]");
            if step.progress <= last {
                self.error(
                    format!("{step_path}.progress"),
                    "must increase from step to step",
                );
            }
            last = step.progress;
            let delay_ms = step.delay_ms.unwrap_or(0);
            if delay_ms > MAX_PROGRESS_DELAY_MS {
                self.error(
                    format!("{step_path}.delayMs"),
                    format!("must be at most {MAX_PROGRESS_DELAY_MS}"),
                );
            }
            let message = step
                .message
                .as_ref()
                .and_then(|m| self.text(&format!("{step_path}.message"), m));
            steps.push(CompiledProgress {
                progress: step.progress,
                total: step.total,
                message,
                delay: std::time::Duration::from_millis(delay_ms),
            });
        }
        steps
    }
}
