"""plan-lsp: a language server hosting a coding agent with a hard plan mode."""

__version__ = "0.1.0"
