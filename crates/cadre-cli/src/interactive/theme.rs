//! Styles of the interactive mode, with and without colour.
//!
//! `NO_COLOR` (any non-empty value, <https://no-color.org>) or `TERM=dumb`-like terminals get
//! no colours at all; emphasis is then carried by bold, dim and reverse only, so the screen
//! still reads.

use ratatui::style::{Color, Modifier, Style};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Theme {
    pub color: bool,
}

impl Theme {
    /// The theme for this process's environment.
    pub fn from_env() -> Theme {
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        Theme { color: !no_color }
    }

    fn fg(self, color: Color) -> Style {
        if self.color {
            Style::new().fg(color)
        } else {
            Style::new()
        }
    }

    pub fn plain(self) -> Style {
        Style::new()
    }

    pub fn dim(self) -> Style {
        Style::new().add_modifier(Modifier::DIM)
    }

    pub fn user(self) -> Style {
        self.fg(Color::Cyan).add_modifier(Modifier::BOLD)
    }

    pub fn accent(self) -> Style {
        self.fg(Color::Blue).add_modifier(Modifier::BOLD)
    }

    pub fn thinking(self) -> Style {
        self.dim().add_modifier(Modifier::ITALIC)
    }

    pub fn ok(self) -> Style {
        self.fg(Color::Green)
    }

    pub fn warn(self) -> Style {
        self.fg(Color::Yellow)
    }

    pub fn error(self) -> Style {
        self.fg(Color::Red).add_modifier(Modifier::BOLD)
    }

    pub fn added(self) -> Style {
        self.fg(Color::Green)
    }

    pub fn removed(self) -> Style {
        self.fg(Color::Red)
    }

    pub fn selected(self) -> Style {
        Style::new().add_modifier(Modifier::REVERSED)
    }

    pub fn bar(self) -> Style {
        if self.color {
            Style::new().fg(Color::Gray)
        } else {
            Style::new().add_modifier(Modifier::DIM)
        }
    }
}
