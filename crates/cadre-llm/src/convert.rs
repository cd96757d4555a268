//! The conversation as a model is sent it, computed once per request before either wire format
//! maps it: Pi's steps that do not depend on the wire.
//!
//! - A command the user ran (`bashExecution`) becomes a user message in Pi's words, or nothing
//!   when it is excluded from the context (Pi's `convertToLlm`); the wires never see one.
//! - A model whose `input` lacks `image` gets a note in place of each run of images (Pi's
//!   `downgradeUnsupportedImages`, same texts), so a text-only model is never refused for a
//!   screenshot in the history.

use std::borrow::Cow;

use cadre_protocol::{ContentBlock, Message, UserContent, UserMessage};

use crate::model::Model;

/// Pi's note for images of user (and custom) messages sent to a text-only model.
pub const USER_IMAGE_OMITTED: &str = "(image omitted: model does not support images)";
/// Pi's note for images returned by tools, sent to a text-only model.
pub const TOOL_IMAGE_OMITTED: &str = "(tool image omitted: model does not support images)";

/// `messages` as `model` can take them: borrowed unchanged unless something has to change.
pub fn for_model<'a>(messages: &'a [Message], model: &Model) -> Cow<'a, [Message]> {
    let images = !model.accepts_images();
    let changes = |m: &Message| matches!(m, Message::BashExecution(_)) || (images && has_image(m));
    if !messages.iter().any(changes) {
        return Cow::Borrowed(messages);
    }
    Cow::Owned(
        messages
            .iter()
            .filter_map(|m| {
                let m = user_text_of_bash(m)?;
                Some(if images { without_images(&m) } else { m })
            })
            .collect(),
    )
}

/// `message`, with a command the user ran as the user message Pi sends for it; `None` for one
/// excluded from the context.
fn user_text_of_bash(message: &Message) -> Option<Message> {
    match message {
        Message::BashExecution(b) if b.exclude_from_context => None,
        Message::BashExecution(b) => Some(Message::User(UserMessage {
            content: UserContent::Blocks(vec![ContentBlock::text(b.to_text())]),
            timestamp: b.timestamp,
        })),
        other => Some(other.clone()),
    }
}

fn has_image(message: &Message) -> bool {
    let any = |blocks: &[ContentBlock]| blocks.iter().any(is_image);
    match message {
        Message::User(u) => matches!(&u.content, UserContent::Blocks(b) if any(b)),
        Message::Custom(c) => matches!(&c.content, UserContent::Blocks(b) if any(b)),
        Message::ToolResult(r) => any(&r.content),
        Message::Assistant(_) | Message::BashExecution(_) => false,
    }
}

fn is_image(block: &ContentBlock) -> bool {
    matches!(block, ContentBlock::Image { .. })
}

fn without_images(message: &Message) -> Message {
    let mut message = message.clone();
    match &mut message {
        Message::User(u) => replace_in_content(&mut u.content, USER_IMAGE_OMITTED),
        Message::Custom(c) => replace_in_content(&mut c.content, USER_IMAGE_OMITTED),
        Message::ToolResult(r) => r.content = replace_images(&r.content, TOOL_IMAGE_OMITTED),
        Message::Assistant(_) | Message::BashExecution(_) => {}
    }
    message
}

fn replace_in_content(content: &mut UserContent, note: &str) {
    if let UserContent::Blocks(blocks) = content {
        *blocks = replace_images(blocks, note);
    }
}

/// Each run of images becomes one `note`; a note already there absorbs the images after it.
fn replace_images(blocks: &[ContentBlock], note: &str) -> Vec<ContentBlock> {
    let mut out = Vec::with_capacity(blocks.len());
    let mut after_note = false;
    for block in blocks {
        if is_image(block) {
            if !after_note {
                out.push(ContentBlock::text(note));
            }
            after_note = true;
            continue;
        }
        after_note = matches!(block, ContentBlock::Text { text } if text == note);
        out.push(block.clone());
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use cadre_protocol::{ToolResultMessage, UserMessage};

    use super::*;

    fn image() -> ContentBlock {
        ContentBlock::Image {
            data: "aGk=".into(),
            mime_type: "image/png".into(),
        }
    }

    fn text_only(mut model: Model) -> Model {
        model.input = vec!["text".into()];
        model
    }

    fn user(blocks: Vec<ContentBlock>) -> Message {
        Message::User(UserMessage {
            content: UserContent::Blocks(blocks),
            timestamp: 1,
        })
    }

    fn tool(blocks: Vec<ContentBlock>) -> Message {
        Message::ToolResult(ToolResultMessage {
            tool_call_id: "c".into(),
            tool_name: "read".into(),
            content: blocks,
            details: None,
            is_error: false,
            timestamp: 1,
        })
    }

    #[test]
    fn images_reach_a_model_that_reads_them_untouched() {
        let model = crate::test_support::model(crate::Api::AnthropicMessages);
        assert!(model.accepts_images());
        let messages = vec![user(vec![image()])];
        assert!(matches!(for_model(&messages, &model), Cow::Borrowed(_)));
        // Nothing to change: no copy either.
        let model = text_only(model);
        let plain = vec![Message::user("hi"), user(vec![ContentBlock::text("x")])];
        assert!(matches!(for_model(&plain, &model), Cow::Borrowed(_)));
    }

    fn bash(command: &str, excluded: bool) -> Message {
        Message::BashExecution(cadre_protocol::BashExecutionMessage {
            command: command.into(),
            output: "out".into(),
            exit_code: Some(0),
            cancelled: false,
            truncated: false,
            full_output_path: None,
            exclude_from_context: excluded,
            timestamp: 7,
        })
    }

    #[test]
    fn commands_the_user_ran_become_user_text_unless_excluded() {
        let model = crate::test_support::model(crate::Api::AnthropicMessages);
        let messages = vec![Message::user("a"), bash("ls", false), bash("secret", true)];
        let out = for_model(&messages, &model);
        assert_eq!(out.len(), 2);
        let Message::User(u) = &out[1] else {
            panic!("{:?}", out[1])
        };
        assert_eq!(u.content.to_text(), "Ran `ls`\n```\nout\n```");
        assert_eq!(u.timestamp, 7);
        // For a text-only model both conversions apply.
        let text_only = text_only(model);
        let messages = vec![bash("ls", false), user(vec![image()])];
        let out = for_model(&messages, &text_only);
        assert!(matches!(&out[0], Message::User(_)));
        let Message::User(u) = &out[1] else { panic!() };
        assert_eq!(u.content.to_text(), USER_IMAGE_OMITTED);
    }

    #[test]
    fn runs_of_images_become_one_note_as_in_pi() {
        let model = text_only(crate::test_support::model(crate::Api::OpenAiCompletions));
        let messages = vec![
            user(vec![
                ContentBlock::text("look"),
                image(),
                image(),
                ContentBlock::text("and"),
                image(),
            ]),
            tool(vec![image(), ContentBlock::text("done")]),
            user(vec![ContentBlock::text(USER_IMAGE_OMITTED), image()]),
        ];
        let out = for_model(&messages, &model);
        let Message::User(u) = &out[0] else { panic!() };
        assert_eq!(
            u.content,
            UserContent::Blocks(vec![
                ContentBlock::text("look"),
                ContentBlock::text(USER_IMAGE_OMITTED),
                ContentBlock::text("and"),
                ContentBlock::text(USER_IMAGE_OMITTED),
            ])
        );
        let Message::ToolResult(r) = &out[1] else {
            panic!()
        };
        assert_eq!(
            r.content,
            vec![
                ContentBlock::text(TOOL_IMAGE_OMITTED),
                ContentBlock::text("done")
            ]
        );
        let Message::User(u) = &out[2] else { panic!() };
        assert_eq!(
            u.content,
            UserContent::Blocks(vec![ContentBlock::text(USER_IMAGE_OMITTED)])
        );
    }
}
