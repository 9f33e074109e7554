;;; driver.el --- one plan-lsp session in a headless Emacs daemon  -*- lexical-binding: t -*-

;; Driven by tests/e2e/test_emacs.py. The user's init.el is eglot-init.el or
;; lsp-mode-init.el (the README's configurations); a client file (eglot-client.el or
;; lsp-client.el) defines the `e2e-client-*' functions this file calls. Parameters come as
;; JSON in the file named by $PLAN_LSP_E2E_PARAMS; what Emacs saw goes as JSON to
;; params.result_path. The daemon exits 0 when every step ran, 1 otherwise.
;;
;; Emacs runs as a daemon, not with --batch, so its command loop runs idle timers as in a
;; real session (eglot sends didChange, lsp-mode refreshes lenses on idle). Any question
;; Emacs asks the user (y-or-n-p, "changed on disk; really edit?", "Reread from disk?",
;; completing-read, ...) is recorded and raises, as it would in batch; only the menus the
;; steps expect are answered.

(require 'cl-lib)
(require 'json)
(require 'subr-x)

(defvar e2e-params nil)
(defvar e2e-result (make-hash-table :test 'equal))
(defvar e2e-prompts nil "Every question Emacs asked, in order.")
(defvar e2e-choice nil "The title the next completing-read answers with.")
(defvar e2e-offered nil "What the last answered completing-read offered.")

(defun e2e-param (key) (gethash key e2e-params))
(defun e2e-put (key value) (puthash key value e2e-result))
(defun e2e-step (name)
  (puthash "steps" (append (gethash "steps" e2e-result) (list name)) e2e-result)
  (message "e2e: step %s" name))

(defun e2e-bool (value) (if value t :json-false))

(defun e2e-idle-server-p (state)
  "Whether STATE says no run is going: JSON false is :json-false in eglot, nil in lsp-mode."
  (and state (memq (e2e-get state "running") '(nil :json-false)) t))

;; -- questions -----------------------------------------------------------------------------

(defun e2e--asked (kind prompt)
  (push (format "%s: %s" kind (substring-no-properties (format "%s" prompt))) e2e-prompts)
  (message "e2e: Emacs asked (%s) %s" kind prompt))

(defun e2e--refuse (kind)
  (lambda (_orig prompt &rest _)
    (e2e--asked kind prompt)
    (error "Emacs asked the user: %s" prompt)))

(advice-add 'y-or-n-p :around (e2e--refuse "y-or-n-p"))
(advice-add 'yes-or-no-p :around (e2e--refuse "yes-or-no-p"))
(advice-add 'read-from-minibuffer :around (e2e--refuse "read-from-minibuffer"))
(advice-add 'read-string :around (e2e--refuse "read-string"))
(advice-add 'read-char-choice :around (e2e--refuse "read-char-choice"))
(advice-add 'ask-user-about-supersession-threat :around
            (lambda (_orig file)
              (e2e--asked "supersession" (format "%s changed on disk; really edit the buffer?" file))
              (signal 'file-supersession (list "File changed on disk" file))))
(advice-add 'completing-read :around
            (lambda (_orig prompt collection &rest _)
              (let ((titles (mapcar (lambda (c) (substring-no-properties
                                                 (if (consp c) (format "%s" (car c)) (format "%s" c))))
                                    (if (hash-table-p collection)
                                        (hash-table-keys collection)
                                      collection))))
                (if (null e2e-choice)
                    (progn (e2e--asked "completing-read" prompt)
                           (error "Emacs asked the user: %s" prompt))
                  (setq e2e-offered (cons e2e-choice titles))
                  (prog1 e2e-choice (setq e2e-choice nil))))))

(defun e2e-warnings ()
  "The first line of each warning `display-warning' showed the user (lsp-mode's \"Unknown
notification\", ...). Left out: the native compiler's notes on the packages' own sources
(\"Warning (comp)\"), which the fresh HOME's first compilation of them brings."
  (when-let ((buf (get-buffer "*Warnings*")))
    (with-current-buffer buf
      (cl-remove-if-not (lambda (line) (and (string-prefix-p "Warning (" line)
                                            (not (string-prefix-p "Warning (comp)" line))))
                        (split-string (buffer-string) "\n" t)))))

;; -- the user's save hooks ------------------------------------------------------------------

;; A user's own save hooks (format on save, whitespace clean-up, ...) may change the text. The
;; saves the server asks for run none of them: the file gets exactly what the agent wrote.
(defvar e2e-save-hook-runs nil "The buffers whose saves ran the user's save hooks.")
(defun e2e--user-save-hook () (push (buffer-name) e2e-save-hook-runs))
(add-hook 'before-save-hook #'e2e--user-save-hook)
(add-hook 'after-save-hook #'e2e--user-save-hook)

;; -- the run's end, as the client sees it ---------------------------------------------------

;; Both configurations render no planLsp/update (`updates' false): a run's end reaches the
;; client as the log line "plan-lsp: run finished (...)" (window/logMessage, handled in
;; order with every applyEdit and saveDocument before it). The client files call
;; `e2e-on-log-line' for each such line; what PLAN.md's buffer and file hold at that moment
;; is recorded.
(defvar e2e-run-ends nil "(buffer disk modified) of PLAN.md at each run's end, latest first.")

(defun e2e-on-log-line (message)
  (when (and (stringp message) (string-prefix-p "plan-lsp: run finished" message))
    (let ((plan (e2e-param "plan_path")))
      (push (list (cons "line" message)
                  (cons "t" (float-time))
                  (cons "buffer" (e2e-text plan))
                  (cons "disk" (and (file-exists-p plan) (e2e-disk plan)))
                  (cons "modified" (e2e-modified plan)))
            e2e-run-ends))))

;; -- the plan buffer as it changes --------------------------------------------------------

;; Every change of PLAN.md's buffer, as [float-time text] (newest first): what the user saw
;; while the model streamed, for model_speed.stream_report.
(defvar e2e-buffer-events nil)

(defun e2e--record-plan-change (&rest _)
  (push (vector (float-time)
                (save-restriction (widen)
                                  (buffer-substring-no-properties (point-min) (point-max))))
        e2e-buffer-events))

(defun e2e-watch-plan-buffer (path)
  "Record PATH's buffer now and on every change from now on."
  (with-current-buffer (find-buffer-visiting path)
    (e2e--record-plan-change)
    (add-hook 'after-change-functions #'e2e--record-plan-change nil t)))

;; -- waiting ---------------------------------------------------------------------------------

(defun e2e-wait (what pred &optional seconds)
  "Run the command loop's timers and processes until PRED holds; error after SECONDS."
  (let ((deadline (+ (float-time) (or seconds 20))))
    (while (not (funcall pred))
      (when (> (float-time) deadline)
        (error "Timed out waiting for %s" what))
      (sit-for 0.05))))

(defun e2e-soft-wait (pred seconds)
  "Like `e2e-wait' but only returns whether PRED came to hold."
  (condition-case nil (progn (e2e-wait "" pred seconds) t) (error nil)))

(defun e2e-idle (seconds)
  "Let the user be idle for SECONDS (idle timers fire: didChange, lens refresh)."
  (let ((deadline (+ (float-time) seconds)))
    (while (< (float-time) deadline) (sit-for 0.05))))

;; -- buffers ---------------------------------------------------------------------------------

(defun e2e-visit (path)
  "Open PATH the way a user does: a command that visits it, then the command loop's hooks."
  (let ((buf (find-file path)))
    (run-hooks 'post-command-hook)
    buf))

(defun e2e-text (path)
  (when-let ((buf (find-buffer-visiting path)))
    (with-current-buffer buf
      (save-restriction (widen) (buffer-substring-no-properties (point-min) (point-max))))))

(defun e2e-disk (path)
  (with-temp-buffer
    (let ((coding-system-for-read 'utf-8))
      (insert-file-contents path))
    (buffer-string)))

(defun e2e-modified (path)
  (when-let ((buf (find-buffer-visiting path)))
    (e2e-bool (buffer-modified-p buf))))

;; -- the session -----------------------------------------------------------------------------

(defun e2e-state ()
  (e2e-client-request "planLsp/state" (make-hash-table)))

(defun e2e-wait-run-end (what)
  "Until the server says no run is going."
  (e2e-wait what (lambda () (e2e-idle-server-p (e2e-state))) 30))

(defun e2e-record-state (key)
  (let ((state (e2e-state)))
    (e2e-put key (list (cons "mode" (e2e-get state "mode"))
                       (cons "planStatus" (e2e-get state "planStatus"))
                       (cons "permissionMode" (e2e-get state "permissionMode"))
                       (cons "outcome" (e2e-get state "outcome"))
                       (cons "approvedText" (e2e-get state "approvedPlan" "text"))
                       (cons "approvedSha256" (e2e-get state "approvedPlan" "sha256"))))))

(defun e2e-prompt (text)
  "planLsp/prompt; returns the answer when the run ended."
  (let ((answer nil))
    (e2e-client-request-async "planLsp/prompt" (list (cons "text" text))
                              (lambda (res) (setq answer (or res 'null))))
    (e2e-wait "the planning run" (lambda () answer) 60)
    answer))

(defun e2e-settle-plan (key path expected)
  "Give the buffer time to hold EXPECTED; record what it holds (a difference is the
test's to report, not an error here)."
  (e2e-soft-wait (lambda () (equal (e2e-text path) expected)) 5)
  (e2e-idle 0.7) ; the client's own didChange delay
  (e2e-put key (e2e-text path)))

(defun e2e-review (plan)
  "Reject with a review note through a code action; the revision streams in; compare."
  ;; 2. reject with the buffer's review note, through a code action
  (with-current-buffer (find-buffer-visiting plan)
    (goto-char (point-max))
    (insert "> feedback: " (e2e-param "feedback") "\n")
    (e2e-idle 0.7)
    (goto-char (point-min))
    (e2e-client-code-action (e2e-param "reject_action")))
  (e2e-put "code_action_titles" e2e-offered)
  (unless (e2e-soft-wait (lambda () (let ((s (e2e-state)))
                                      (and (equal (e2e-get s "planStatus") "submitted")
                                           (e2e-idle-server-p s))))
                         45)
    (e2e-put "revision_error" "the revised plan was not submitted within 45 s"))
  (e2e-settle-plan "plan_buffer_v2" plan (e2e-param "plan_v2"))
  (e2e-step "rejected")

  ;; 3. compare revisions (planLsp.showPreviousRevision must answer)
  (let ((started (float-time)))
    (condition-case err
        (progn
          (with-current-buffer (find-buffer-visiting plan)
            (e2e-client-compare-revisions))
          (e2e-put "compare" "answered"))
      (error (e2e-put "compare" (format "error: %s" (error-message-string err)))))
    (e2e-put "compare_seconds" (- (float-time) started)))
  (e2e-step "compared"))

(defun e2e--user-command (what command)
  "Run COMMAND as the user would; a question it asks is already recorded, so an error
here is noted and the session goes on (one run reports every question)."
  (condition-case err
      (progn (funcall command) (run-hooks 'post-command-hook))
    (error (message "e2e: %s: %s" what (error-message-string err)))))

(defun e2e-save-and-reopen (paths reopen)
  "C-x C-s in each of PATHS' buffers, then C-x C-f REOPEN; record what each buffer and
its file hold afterwards under \"after_save\"."
  (dolist (path paths)
    (with-current-buffer (find-buffer-visiting path)
      (e2e--user-command (format "C-x C-s in %s" path)
                         (lambda () (call-interactively #'save-buffer)))))
  (e2e--user-command (format "C-x C-f %s" reopen) (lambda () (find-file reopen)))
  (e2e-put "after_save"
           (mapcar (lambda (path)
                     (list (file-name-nondirectory path)
                           (cons "buffer" (e2e-text path))
                           (cons "disk" (e2e-disk path))
                           (cons "modified" (e2e-modified path))))
                   paths)))

(defun e2e-session ()
  (let* ((ws (e2e-param "workspace"))
         (plan (e2e-param "plan_path"))
         (hello (expand-file-name "hello.py" ws))
         (open-first (eq (e2e-param "plan_open_before") t)))
    (e2e-put "client" (e2e-client-name))
    (e2e-put "emacs" emacs-version)
    (e2e-client-prepare ws)
    ;; A user opens one file, sees the server connect, then opens the next.
    (e2e-visit hello)
    (e2e-wait "the server to manage hello.py" (lambda () (e2e-client-managed-p hello)) 30)
    (when open-first
      (e2e-visit plan)
      (e2e-wait "the server to manage PLAN.md" (lambda () (e2e-client-managed-p plan)) 30)
      (e2e-watch-plan-buffer plan))
    (e2e-step "attached")

    ;; 1. prompt: the plan streams into PLAN.md
    (let ((answer (e2e-prompt (e2e-param "prompt"))))
      (e2e-put "prompt_stop" (e2e-get answer "stopReason")))
    (e2e-put "plan_buffer_exists_v1" (e2e-bool (find-buffer-visiting plan)))
    (e2e-put "plan_disk_v1" (e2e-disk plan))
    (unless (find-buffer-visiting plan)
      ;; The user opens it (the server said where it is).
      (e2e-visit plan)
      (e2e-wait "PLAN.md to be managed" (lambda () (e2e-client-managed-p plan)) 20)
      (e2e-watch-plan-buffer plan))
    (e2e-settle-plan "plan_buffer_v1" plan (e2e-param "plan_v1"))
    (e2e-step "planned")

    (e2e-review plan)

    ;; 4. approve (code action for eglot, code lens for lsp-mode); the Do edit lands. The
    ;; user added a line of their own just before: the buffer is modified, and the server
    ;; asks Emacs to save it while Emacs waits for the answer to the approving request.
    (with-current-buffer (find-buffer-visiting plan)
      (when-let ((line (e2e-param "user_line")))
        (goto-char (point-max))
        (insert line)
        (e2e-idle 0.7))
      (e2e-put "plan_buffer_approved" (e2e-text plan))
      (goto-char (point-min))
      (e2e-client-approve (e2e-param "approve_title")))
    (e2e-put "approve_titles" e2e-offered)
    (setq e2e-run-ends nil)
    ;; Only the buffer is watched here (no request to the server that would make Emacs read
    ;; again): an edit the client lost or left unread after the approval's answer shows.
    (let ((started (float-time)))
      (e2e-soft-wait (lambda () (equal (e2e-text hello) (e2e-param "hello_after"))) 20)
      (e2e-put "do_edit_seconds" (- (float-time) started)))
    (e2e-wait-run-end "the Do run")
    ;; The run's end as the client saw it (the log line comes after the state says so).
    (e2e-soft-wait (lambda () e2e-run-ends) 10)
    (e2e-put "do_run_end" (car e2e-run-ends))
    (e2e-idle 0.7)
    (e2e-put "hello_buffer" (e2e-text hello))
    (e2e-put "hello_modified" (e2e-modified hello))
    (e2e-put "hello_disk" (e2e-disk hello))
    (e2e-put "plan_buffer_after_do" (e2e-text plan))
    (e2e-put "plan_disk_after_do" (e2e-disk plan))
    (e2e-put "plan_modified" (e2e-modified plan))
    (e2e-put "plan_modtime_ok" (e2e-bool (verify-visited-file-modtime (find-buffer-visiting plan))))
    (e2e-put "save_hook_runs" (reverse e2e-save-hook-runs))
    (e2e-record-state "state_after_do")
    (e2e-step "approved")

    ;; 5. the user saves what the agent changed and opens the plan again: Emacs has nothing
    ;; to ask, because it saved those buffers itself when the server asked.
    (e2e-save-and-reopen (list hello plan) plan)
    (e2e-step "saved")

    (e2e-client-shutdown)
    (e2e-step "stopped")))

(defun e2e-main ()
  (let ((ok nil))
    (condition-case err
        (progn
          (let ((json-object-type 'hash-table) (json-key-type 'string) (json-array-type 'list)
                (coding-system-for-read 'utf-8))
            (setq e2e-params (json-read-file (getenv "PLAN_LSP_E2E_PARAMS"))))
          ;; params.session_file: another session, `e2e-steps-session' say, defined there.
          (when-let ((file (e2e-param "session_file")))
            (load file nil t))
          (funcall (intern (or (e2e-param "session") "e2e-session")))
          (setq ok t))
      (error (e2e-put "error" (error-message-string err))
             (e2e-put "last_offered" e2e-offered)
             (message "e2e: failed: %s" (error-message-string err))))
    (e2e-put "ok" (e2e-bool ok))
    (e2e-put "prompts" (reverse e2e-prompts))
    (e2e-put "buffer_events" (vconcat (reverse e2e-buffer-events)))
    (e2e-put "warnings" (e2e-warnings))
    (condition-case err
        (let ((coding-system-for-write 'utf-8))
          (e2e-client-write-log (e2e-param "client_log_path")))
      (error (message "e2e: no client log: %s" (error-message-string err))))
    (let ((coding-system-for-write 'utf-8))
      (with-temp-file (e2e-param "result_path")
        (insert (json-encode e2e-result))))
    (kill-emacs (if ok 0 1))))

;; Once Emacs is idle: the session's waits then let idle timers run (lsp-deferred starts
;; lsp-mode from one), however long the start-up took.
(run-with-idle-timer 0.2 nil #'e2e-main)

;;; driver.el ends here
