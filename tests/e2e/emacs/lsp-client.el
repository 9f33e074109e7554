;;; lsp-client.el --- the driver's client operations on lsp-mode  -*- lexical-binding: t -*-
(require 'lsp-mode)

;; Not the user's configuration: with PLAN_LSP_E2E_LOG_IO set, every message goes to
;; *lsp-log* (written next to the result) for diagnosing a failure.
(when (getenv "PLAN_LSP_E2E_LOG_IO")
  (setq lsp-log-io t))

;; Every window/logMessage, as lsp-mode handles it (into *lsp-log*).
(advice-add 'lsp--window-log-message :before
            (lambda (_workspace params) (e2e-on-log-line (lsp-get params :message))))

(defun e2e-client-name () (format "lsp-mode %s" (or (bound-and-true-p lsp-version) "8.0")))

(defun e2e-client-prepare (root)
  "The answer the user gives once per project: import ROOT as a workspace folder."
  (lsp-workspace-folders-add (directory-file-name root)))

(defun e2e-client-managed-p (path)
  (when-let ((buf (find-buffer-visiting path)))
    (with-current-buffer buf
      (and (bound-and-true-p lsp-mode)
           (cl-some (lambda (ws) (eq (lsp--workspace-status ws) 'initialized))
                    (lsp-workspaces))))))

(defun e2e-get (obj &rest keys)
  "Read a JSON field of an lsp-mode answer (hash tables)."
  (dolist (key keys obj)
    (setq obj (and (hash-table-p obj) (gethash key obj)))))

(defun e2e--params (alist)
  (let ((table (make-hash-table :test 'equal)))
    (dolist (pair alist table) (puthash (car pair) (cdr pair) table))))

(defun e2e--buffer ()
  (or (cl-find-if (lambda (buf) (with-current-buffer buf (bound-and-true-p lsp-mode)))
                  (buffer-list))
      (error "No buffer managed by lsp-mode")))

(defun e2e-client-request (method params)
  (with-current-buffer (e2e--buffer)
    (lsp-request method (if (hash-table-p params) params (e2e--params params)))))

(defun e2e-client-request-async (method params on-result)
  (with-current-buffer (e2e--buffer)
    (lsp-request-async method (e2e--params params) on-result
                       :error-handler (lambda (err) (funcall on-result (list :error err)))
                       :mode 'detached)))

(defun e2e-client-code-action (title)
  "What M-x lsp-execute-code-action does at point, answering its menu with TITLE."
  (setq e2e-choice title)
  (call-interactively #'lsp-execute-code-action))

(defun e2e--lens-titles ()
  (cl-loop for ov in (bound-and-true-p lsp-lens--overlays)
           append (mapcar #'substring-no-properties (overlay-get ov 'lsp--metadata))))

(defun e2e--click-lens (title)
  "Click the lens TITLE (what mouse-1 on it runs), once lsp-mode shows it."
  (unless (e2e-soft-wait (lambda () (member title (e2e--lens-titles))) 20)
    (e2e-put "lenses_seen" (list (cons "titles" (e2e--lens-titles))
                                 (cons "lensMode" (e2e-bool (bound-and-true-p lsp-lens-mode)))
                                 (cons "state" (e2e-get (e2e-state) "planStatus"))))
    (error "Timed out waiting for the lens %S" title))
  (setq e2e-offered (e2e--lens-titles))
  (let ((token (cl-loop for ov in lsp-lens--overlays
                        thereis (cl-find title (overlay-get ov 'lsp--metadata)
                                         :test (lambda (a b) (equal a (substring-no-properties b)))))))
    (funcall (get-text-property 0 'action token))))

(defun e2e--lens-line (ov)
  "The 0-based line of the lens overlay OV (placed at its line's end by default)."
  (1- (line-number-at-pos (overlay-get ov 'lsp-lens-position))))

(defun e2e-client-lenses (path)
  "The lenses lsp-mode shows in PATH's buffer as (LINE TITLE): LINE 0-based."
  (with-current-buffer (find-buffer-visiting path)
    (cl-loop for ov in lsp-lens--overlays
             append (let ((line (e2e--lens-line ov)))
                      (mapcar (lambda (title) (list line (substring-no-properties title)))
                              (overlay-get ov 'lsp--metadata))))))

(defun e2e-client-run-lens (path line title)
  "Click the lens TITLE on LINE (0-based) of PATH (what mouse-1 on it runs)."
  (with-current-buffer (find-buffer-visiting path)
    (let ((token (cl-loop for ov in lsp-lens--overlays
                          when (= line (e2e--lens-line ov))
                          thereis (cl-find title (overlay-get ov 'lsp--metadata)
                                           :test (lambda (a b)
                                                   (equal a (substring-no-properties b)))))))
      (unless token (error "No lens %S on line %s: %S" title line (e2e-client-lenses path)))
      (funcall (get-text-property 0 'action token)))))

(defun e2e-client-approve (title) (e2e--click-lens title))

(defun e2e-client-compare-revisions () (e2e--click-lens "Compare with previous revision"))

(defun e2e-client-write-log (path)
  "lsp-mode's log (every message, when the test set `lsp-log-io'), into PATH."
  (when-let ((log (get-buffer "*lsp-log*")))
    (with-current-buffer log (write-region nil nil path))))

(defun e2e-client-shutdown ()
  (with-current-buffer (e2e--buffer) (lsp-workspace-shutdown (car (lsp-workspaces)))))
