//! Compiling `spec.prompts`: argument names and completions, message templates, and the
//! pre-built `prompts/list` entries. Pure.

use super::{CompiledPrompt, Compiler, insert_some};
use crate::access::Access;
use crate::types::Prompt;
use serde_json::json;

impl Compiler<'_> {
    pub(super) fn prompts(&mut self, prompts: &[Prompt]) -> Vec<CompiledPrompt> {
        self.unique(
            "prompt name",
            prompts
                .iter()
                .enumerate()
                .map(|(i, p)| (format!("spec.prompts[{i}].name"), p.name.as_str())),
        );
        let mut compiled = Vec::new();
        for (i, prompt) in prompts.iter().enumerate() {
            let path = format!("spec.prompts[{i}]");
            self.unique(
                "argument name",
                prompt
                    .arguments
                    .iter()
                    .enumerate()
                    .map(|(j, a)| (format!("{path}.arguments[{j}].name"), a.name.as_str())),
            );
            let messages = prompt
                .messages
                .iter()
                .enumerate()
                .filter_map(|(j, message)| {
                    let message_path = format!("{path}.messages[{j}]");
                    self.check_block(&format!("{message_path}.content"), &message.content);
                    let value = json!({"role": message.role, "content": message.content});
                    let fields: &[&[&str]] = &[
                        &["content", "text"],
                        &["content", "uri"],
                        &["content", "resource", "uri"],
                        &["content", "resource", "text"],
                    ];
                    self.value_template(&message_path, value, Some(fields))
                })
                .collect();
            let mut descriptor = json!({"name": prompt.name});
            insert_some(&mut descriptor, "title", &prompt.title);
            insert_some(&mut descriptor, "description", &prompt.description);
            if !prompt.arguments.is_empty() {
                descriptor["arguments"] = prompt
                    .arguments
                    .iter()
                    .map(|a| {
                        let mut argument = json!({"name": a.name, "required": a.required});
                        insert_some(&mut argument, "title", &a.title);
                        insert_some(&mut argument, "description", &a.description);
                        argument
                    })
                    .collect();
            }
            if !prompt.icons.is_empty() {
                descriptor["icons"] = json!(prompt.icons);
            }
            let interaction = self.interaction(&path, None, &prompt.elicit, None, false, false);
            compiled.push(CompiledPrompt {
                access: Access::default(),
                descriptor,
                description: prompt.description.clone(),
                arguments: prompt
                    .arguments
                    .iter()
                    .map(|a| (a.name.clone(), a.required, a.completions.clone()))
                    .collect(),
                messages,
                interaction,
            });
        }
        compiled
    }
}
