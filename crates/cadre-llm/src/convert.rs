//! The conversation as a model is sent it, computed once per request before either wire format
//! maps it: Pi's steps that do not depend on the wire. A model whose `input` lacks `image` gets
//! a note in place of each run of images (Pi's `downgradeUnsupportedImages`, same texts), so a
//! text-only model is never refused for a screenshot in the history.

use std::borrow::Cow;

use cadre_protocol::{ContentBlock, Message, UserContent};

use crate::model::Model;

/// Pi's note for images of user (and custom) messages sent to a text-only model.
pub const USER_IMAGE_OMITTED: &str = "(image omitted: model does not support images)";
/// Pi's note for images returned by tools, sent to a text-only model.
pub const TOOL_IMAGE_OMITTED: &str = "(tool image omitted: model does not support images)";

/// `messages` as `model` can take them: borrowed unchanged unless something has to change.
pub fn for_model<'a>(messages: &'a [Message], model: &Model) -> Cow<'a, [Message]> {
    if model.accepts_images() || !messages.iter().any(has_image) {
        return Cow::Borrowed(messages);
    }
    Cow::Owned(messages.iter().map(without_images).collect())
}

fn has_image(message: &Message) -> bool {
    let any = |blocks: &[ContentBlock]| blocks.iter().any(is_image);
    match message {
        Message::User(u) => matches!(&u.content, UserContent::Blocks(b) if any(b)),
        Message::Custom(c) => matches!(&c.content, UserContent::Blocks(b) if any(b)),
        Message::ToolResult(r) => any(&r.content),
        Message::Assistant(_) => false,
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
        Message::Assistant(_) => {}
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
