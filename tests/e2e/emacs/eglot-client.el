;;; eglot-client.el --- the driver's client operations on eglot  -*- lexical-binding: t -*-
(require 'eglot)

(defun e2e-client-name () (format "eglot %s" (or (bound-and-true-p eglot-version) "1.9")))

(defun e2e-client-prepare (_root) nil)

;; eglot 1.9 handles window/logMessage by doing nothing (the events buffer keeps it).
(cl-defmethod eglot-handle-notification :before
  (_server (_method (eql window/logMessage)) &key message &allow-other-keys)
  (e2e-on-log-line message))

(defun e2e--server ()
  (or (cl-some (lambda (buf) (with-current-buffer buf (eglot-current-server))) (buffer-list))
      (error "No eglot server")))

(defun e2e-client-managed-p (path)
  (when-let ((buf (find-buffer-visiting path)))
    (with-current-buffer buf (and (bound-and-true-p eglot--managed-mode) (eglot-current-server)))))

(defun e2e-get (obj &rest keys)
  "Read a JSON field of an eglot answer (plists with keyword keys)."
  (dolist (key keys obj)
    (setq obj (and (listp obj) (plist-get obj (intern (concat ":" key)))))))

(defun e2e--params (alist)
  (if (null alist) eglot--{}
    (cl-loop for (k . v) in alist append (list (intern (concat ":" k)) v))))

(defun e2e-client-request (method params)
  (jsonrpc-request (e2e--server) (intern method)
                   (if (hash-table-p params) eglot--{} (e2e--params params))))

(defun e2e-client-request-async (method params on-result)
  (jsonrpc-async-request (e2e--server) (intern method) (e2e--params params)
                         :success-fn on-result
                         :error-fn (lambda (err) (funcall on-result (list :error err)))
                         :timeout nil))

(defun e2e-client-code-action (title)
  "What M-x eglot-code-actions does at point, answering its menu with TITLE."
  (setq e2e-choice title)
  ;; Invoked from the keyboard (M-x), so eglot asks with completing-read, not a popup menu.
  (let ((last-nonmenu-event ?\r))
    (eglot-code-actions (point) nil nil t)))

(defun e2e-client-approve (title)
  (e2e-client-code-action title))

(defun e2e-client-compare-revisions ()
  ;; eglot 1.9 has no code lenses: the lens command, as eglot would execute it.
  (eglot-execute-command (eglot-current-server) 'planLsp.showPreviousRevision (vector eglot--{})))

(defun e2e-client-lenses (path)
  "The server's code lenses of PATH as (LINE TITLE COMMAND ARGUMENTS): eglot 1.9 shows
none, so the lenses are asked for as a lens-showing client asks."
  (let ((lenses (jsonrpc-request (e2e--server) :textDocument/codeLens
                                 (list :textDocument (list :uri (eglot--path-to-uri path))))))
    (mapcar (lambda (lens)
              (let ((command (plist-get lens :command)))
                (list (e2e-get lens "range" "start" "line") (plist-get command :title)
                      (plist-get command :command) (plist-get command :arguments))))
            lenses)))

(defun e2e-client-run-lens (path line title)
  "Run the lens TITLE on LINE (0-based) of PATH, as eglot executes a server command."
  (let ((lens (cl-find-if (lambda (l) (and (equal (nth 0 l) line) (equal (nth 1 l) title)))
                          (e2e-client-lenses path))))
    (unless lens (error "No lens %S on line %s of %s" title line path))
    (eglot-execute-command (e2e--server) (intern (nth 2 lens)) (nth 3 lens))))

(defvar e2e--events nil "eglot's events log, kept for `e2e-client-write-log'.")

(defun e2e--events-text ()
  (ignore-errors
    (with-current-buffer (jsonrpc-events-buffer (e2e--server))
      (buffer-substring-no-properties (point-min) (point-max)))))

(defun e2e-client-shutdown ()
  (setq e2e--events (e2e--events-text))
  (eglot-shutdown (e2e--server)))

(defun e2e-client-write-log (path)
  "What eglot and the server said to each other (eglot's events buffer), into PATH."
  (let ((text (or (e2e--events-text) e2e--events)))
    (when text
      (with-temp-file path (insert text)))))
