;; plan-lsp with lsp-mode (8.0 or later).
(require 'lsp-mode)
(lsp-register-client
 (make-lsp-client
  :new-connection (lsp-stdio-connection '("plan-lsp" "serve"))
  :activation-fn (lsp-activate-on "markdown" "python")
  :server-id 'plan-lsp))
;; Approval is a code lens; lsp-mode 8.0.0 shows none unless this is t (the default from
;; 8.0.1 on).
(setq lsp-lens-enable t)
(add-hook 'markdown-mode-hook #'lsp-deferred)
(add-hook 'python-mode-hook #'lsp-deferred)
