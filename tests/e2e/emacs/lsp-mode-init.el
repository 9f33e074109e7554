;; plan-lsp with lsp-mode (8.0 or later).
(require 'lsp-mode)
(lsp-register-client
 (make-lsp-client
  :new-connection (lsp-stdio-connection '("plan-lsp" "serve"))
  :activation-fn (lsp-activate-on "markdown" "python")
  :server-id 'plan-lsp))
(add-hook 'markdown-mode-hook #'lsp-deferred)
(add-hook 'python-mode-hook #'lsp-deferred)
