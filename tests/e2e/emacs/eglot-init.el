;; plan-lsp with eglot (Emacs 28 + eglot 1.9; Emacs 29+ ships eglot).
(require 'eglot)
(defclass eglot-plan-lsp (eglot-lsp-server) () :documentation "The plan-lsp server.")
(add-to-list 'eglot-server-programs
             '((markdown-mode python-mode) . (eglot-plan-lsp "plan-lsp" "serve")))
;; Plans stream into PLAN.md and agent edits land in your buffers through
;; workspace/applyEdit; eglot 1.9 asks "Server wants to edit ... Proceed?" before every
;; one of them unless this is nil.
(setq eglot-confirm-server-initiated-edits nil)
;; After changing a buffer you had saved, the server asks Emacs to save it; saved as it
;; is (no hooks, no added newline): on disk is what you see and approve.
(cl-defmethod eglot-client-capabilities :around ((_ eglot-plan-lsp))
  (plist-put (cl-call-next-method) :experimental
             '(:planLsp (:saveDocuments t :updates :json-false))))
(cl-defmethod eglot-handle-request
  ((_ eglot-plan-lsp) (_ (eql planLsp/saveDocument)) &key uri &allow-other-keys)
  (let ((buf (find-buffer-visiting (eglot--uri-to-path uri))))
    (when (and buf (buffer-modified-p buf) (verify-visited-file-modtime buf))
      (with-current-buffer buf
        (let (before-save-hook after-save-hook require-final-newline)
          (ignore-errors (save-buffer)))))
    (list :saved (if (and buf (not (buffer-modified-p buf))) t :json-false))))
(add-hook 'markdown-mode-hook #'eglot-ensure)
(add-hook 'python-mode-hook #'eglot-ensure)
