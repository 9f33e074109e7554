;; plan-lsp with lsp-mode (8.0 or later).
(require 'lsp-mode)
(defun plan-lsp-save-document (_workspace params)
  "Save the buffer the server changed as it is (no hooks, no added newline)."
  (let ((buf (find-buffer-visiting (lsp--uri-to-path (lsp-get params :uri)))))
    (when (and buf (buffer-modified-p buf) (verify-visited-file-modtime buf))
      (with-current-buffer buf
        (let (before-save-hook after-save-hook require-final-newline)
          (ignore-errors (save-buffer)))))
    (list :saved (if (and buf (not (buffer-modified-p buf))) t :json-false))))
(lsp-register-client
 (make-lsp-client
  :new-connection (lsp-stdio-connection '("plan-lsp" "serve"))
  :activation-fn (lsp-activate-on "markdown" "python")
  :server-id 'plan-lsp
  ;; After changing a buffer you had saved, the server asks Emacs to save it.
  ;; (`updates` false: the run's progress comes as standard $/progress and log lines.)
  :custom-capabilities
  '((experimental . ((planLsp . ((saveDocuments . t) (updates . :json-false))))))
  :request-handlers (ht ("planLsp/saveDocument" #'plan-lsp-save-document))))
;; Approval is a code lens; lsp-mode 8.0.0 shows none unless this is t (the default from
;; 8.0.1 on).
(setq lsp-lens-enable t)
(add-hook 'markdown-mode-hook #'lsp-deferred)
(add-hook 'python-mode-hook #'lsp-deferred)
