;;; steps-session.el --- a Do run, then a revert from a step's lens  -*- lexical-binding: t -*-

;; Loaded after driver.el by tests/e2e/test_emacs_steps.py (params.session names
;; `e2e-steps-session'). The user has hello.py and the empty PLAN.md open and asks for a plan;
;; approves it (code action in eglot, lens in lsp-mode); the Do run edits hello.py and runs
;; `cat hello.py'. Then, on step 1 of PLAN.md, the lens "Revert to before this step" (lsp-mode:
;; clicked; eglot 1.9 shows no lenses: the lens's command executed as eglot executes one).
;; Any question Emacs asks is recorded by driver.el; what each buffer and file hold after the
;; run and after the revert is recorded.

(defun e2e--file-state (key path)
  "What PATH's buffer and file hold, and whether the buffer is saved and current."
  (let ((buf (find-buffer-visiting path)))
    (e2e-put key (list (cons "buffer" (e2e-text path))
                       (cons "disk" (and (file-exists-p path) (e2e-disk path)))
                       (cons "modified" (e2e-modified path))
                       (cons "modtime_ok" (e2e-bool (and buf (verify-visited-file-modtime buf))))))))

(defun e2e--step-line (path n)
  "The 0-based line of step N in PATH's buffer."
  (with-current-buffer (find-buffer-visiting path)
    (save-excursion
      (goto-char (point-min))
      (unless (re-search-forward (format "^%d\\. " n) nil t)
        (error "No step %d in %s" n path))
      (1- (line-number-at-pos)))))

(defun e2e-steps-session ()
  (let* ((ws (e2e-param "workspace"))
         (plan (e2e-param "plan_path"))
         (hello (expand-file-name "hello.py" ws))
         (revert (e2e-param "revert_title")))
    (e2e-put "client" (e2e-client-name))
    (e2e-client-prepare ws)
    (e2e-visit hello)
    (e2e-wait "the server to manage hello.py" (lambda () (e2e-client-managed-p hello)) 30)
    (e2e-visit plan)
    (e2e-wait "the server to manage PLAN.md" (lambda () (e2e-client-managed-p plan)) 30)
    (e2e-step "attached")

    (let ((answer (e2e-prompt (e2e-param "prompt"))))
      (e2e-put "prompt_stop" (e2e-get answer "stopReason")))
    (e2e-settle-plan "plan_buffer" plan (e2e-param "plan"))
    (e2e-step "planned")

    ;; Approve; the Do run edits hello.py and reads it with a command.
    (with-current-buffer (find-buffer-visiting plan)
      (goto-char (point-min))
      (e2e-client-approve (e2e-param "approve_title")))
    (e2e-wait-run-end "the Do run")
    (e2e-soft-wait (lambda () (equal (e2e-text hello) (e2e-param "hello_after"))) 10)
    (e2e-idle 0.7)
    (e2e--file-state "hello_after_do" hello)
    (e2e--file-state "plan_after_do" plan)
    (e2e-record-state "state_after_do")
    (e2e-step "done")

    ;; Revert to before step 1, from its lens.
    (let ((line (e2e--step-line plan 1)))
      (unless (e2e-soft-wait (lambda () (member (list line revert)
                                                (mapcar (lambda (l) (list (nth 0 l) (nth 1 l)))
                                                        (e2e-client-lenses plan))))
                             20)
        (error "No lens %S on step 1: %S" revert (e2e-client-lenses plan)))
      (e2e-put "step_lenses" (mapcar (lambda (l) (nth 1 l))
                                     (cl-remove-if-not (lambda (l) (equal (nth 0 l) line))
                                                       (e2e-client-lenses plan))))
      (with-current-buffer (find-buffer-visiting plan)
        (e2e--user-command "the revert lens" (lambda () (e2e-client-run-lens plan line revert)))))
    (e2e-soft-wait (lambda () (and (equal (e2e-text hello) (e2e-param "hello_before"))
                                   (eq (e2e-modified hello) :json-false)))
                   15)
    (e2e-idle 0.7)
    (e2e--file-state "hello_reverted" hello)
    (e2e--file-state "plan_reverted" plan)
    (e2e-put "steps_reverted" (mapcar (lambda (s) (e2e-get s "state"))
                                      (e2e-get (e2e-client-request "planLsp/steps"
                                                                   (make-hash-table))
                                               "steps")))
    ;; The plan's first line no longer says done.
    (e2e-soft-wait (lambda () (cl-some (lambda (l) (and (equal (nth 0 l) 0)
                                                        (string-match-p "partly" (nth 1 l))))
                                       (e2e-client-lenses plan)))
                   10)
    (e2e-put "top_lenses" (mapcar (lambda (l) (nth 1 l))
                                  (cl-remove-if-not (lambda (l) (equal (nth 0 l) 0))
                                                    (e2e-client-lenses plan))))
    (e2e-step "reverted")

    ;; The user saves what they see: nothing to ask.
    (e2e-save-and-reopen (list hello) hello)
    (e2e-step "saved")
    (e2e-client-shutdown)
    (e2e-step "stopped")))

;;; steps-session.el ends here
