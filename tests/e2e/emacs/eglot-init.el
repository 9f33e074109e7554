;; plan-lsp with eglot (Emacs 28 + eglot 1.9; Emacs 29+ ships eglot).
(require 'eglot)
(add-to-list 'eglot-server-programs
             '((markdown-mode python-mode) . ("plan-lsp" "serve")))
;; Plans stream into PLAN.md and agent edits land in your buffers through
;; workspace/applyEdit; eglot 1.9 asks "Server wants to edit ... Proceed?" before every
;; one of them unless this is nil.
(setq eglot-confirm-server-initiated-edits nil)
(add-hook 'markdown-mode-hook #'eglot-ensure)
(add-hook 'python-mode-hook #'eglot-ensure)
