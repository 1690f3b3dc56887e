;;; check.el --- A batch self-test of stardust.el with eglot and a real `stardust lsp'  -*- lexical-binding: t; -*-

;; Run on a copy of the sample store (tests/emacs.rs does):
;;
;;   STARDUST=$(command -v stardust) STORE=/tmp/copy-of-library \
;;     emacs --batch -l examples/editors/emacs/stardust.el -l examples/editors/emacs/check.el
;;
;; It opens a book, breaks a reference without saving and reads the diagnostic, asks hover and
;; definition, opens documents in other folders of the store (DUST and JSON) and checks that
;; one server process serves them all. Prints `ok   ...' per check; exits 1 at the first
;; failure.

;;; Code:

(require 'cl-lib)
(require 'eglot)
(require 'xref)

(defvar stardust-check-store (file-name-as-directory (getenv "STORE")))
(setq stardust-program (or (getenv "STARDUST") "stardust"))
;; Batch Emacs has no idle time: connect synchronously, and send changes when asked.
(setq eglot-sync-connect t
      eglot-connect-timeout 60
      eglot-autoshutdown nil)

(defvar stardust-check-diagnostics (make-hash-table :test 'equal)
  "The last diagnostics published for each URI.")

(cl-defmethod eglot-handle-notification :after
  (_server (_method (eql textDocument/publishDiagnostics)) &key uri diagnostics
           &allow-other-keys)
  (puthash uri diagnostics stardust-check-diagnostics))

(defun stardust-check-ok (what)
  (princ (format "ok   %s\n" what)))

(defun stardust-check-fail (what &rest args)
  (princ (format "FAIL %s\n" (apply #'format what args)))
  (kill-emacs 1))

(defun stardust-check-wait (what predicate &optional seconds)
  "Process server output until PREDICATE holds, or fail after SECONDS (default 30)."
  (let ((deadline (+ (float-time) (or seconds 30))))
    (while (and (not (funcall predicate)) (< (float-time) deadline))
      (accept-process-output nil 0.1))
    (unless (funcall predicate)
      (stardust-check-fail "%s: not within %s s" what (or seconds 30)))))

(defun stardust-check-open (rel)
  "Visit REL in the store as a user would: the mode's hook starts or joins the server."
  (let ((buffer (find-file-noselect (expand-file-name rel stardust-check-store))))
    (with-current-buffer buffer
      ;; `eglot-ensure' connects after the command that opened the file.
      (run-hooks 'post-command-hook)
      (stardust-check-wait (format "eglot manages %s" rel) (lambda () (eglot-current-server))))
    buffer))

(defun stardust-check-pid (buffer)
  (with-current-buffer buffer
    (process-id (jsonrpc--process (eglot-current-server)))))

(defun stardust-check-uri (buffer)
  (with-current-buffer buffer (eglot--path-to-uri buffer-file-name)))

(defun stardust-check-goto (needle)
  (goto-char (point-min))
  (unless (search-forward needle nil t)
    (stardust-check-fail "no %s in %s" needle (buffer-name)))
  (goto-char (match-beginning 0)))

(defun stardust-check-codes (buffer)
  "The codes of the diagnostics last published for BUFFER."
  (mapcar (lambda (d) (plist-get d :code))
          (gethash (stardust-check-uri buffer) stardust-check-diagnostics)))

;; A book opens in dust-mode and the server starts for the store.
(defvar stardust-check-book (stardust-check-open "books/dune.dust"))
(with-current-buffer stardust-check-book
  (unless (eq major-mode 'dust-mode)
    (stardust-check-fail "books/dune.dust is in %s, not dust-mode" major-mode))
  (unless (equal (project-root (eglot--project (eglot-current-server))) stardust-check-store)
    (stardust-check-fail "the project is %S, not the store"
                         (eglot--project (eglot-current-server)))))
(stardust-check-ok "the server starts for the store, rooted at it")

;; A broken reference, not saved, is diagnosed.
(with-current-buffer stardust-check-book
  (stardust-check-goto "@person/frank-herbert")
  (forward-char (length "@person/frank-herb"))
  (delete-char 1)
  (eglot--signal-textDocument/didChange)
  (stardust-check-wait "the dangling reference is diagnosed"
                       (lambda () (member "dangling-ref" (stardust-check-codes stardust-check-book))))
  (when (file-newer-than-file-p buffer-file-name (expand-file-name ".stardust" stardust-check-store))
    (stardust-check-fail "the file was saved"))
  (unless (buffer-modified-p) (stardust-check-fail "the buffer is not modified")))
(stardust-check-ok "a dangling reference is diagnosed while typing, unsaved")

;; Hover on a reference shows its target.
(with-current-buffer stardust-check-book
  (stardust-check-goto "@publisher/chilton-books")
  (let* ((hover (jsonrpc-request (eglot-current-server) :textDocument/hover
                                 (eglot--TextDocumentPositionParams)))
         (contents (plist-get hover :contents))
         (text (if (stringp contents) contents (format "%s" (plist-get contents :value)))))
    (unless (string-match-p "Chilton" text)
      (stardust-check-fail "hover says %S" text))))
(stardust-check-ok "hover")

;; Definition (xref, M-.) goes to the referenced entity's document.
(with-current-buffer stardust-check-book
  (stardust-check-goto "@publisher/chilton-books")
  (forward-char 2)
  (let* ((xrefs (xref-backend-definitions 'eglot (xref-backend-identifier-at-point 'eglot)))
         (files (mapcar (lambda (x) (xref-location-group (xref-item-location x))) xrefs)))
    (unless (and files (cl-every (lambda (f) (string-match-p "publishers/" f)) files))
      (stardust-check-fail "definition went to %S" files))))
(stardust-check-ok "definition")

;; Documents in other folders, DUST and JSON, join the same server: one process per store.
(let* ((person (stardust-check-open "people/frank-herbert.dust"))
       (json (stardust-check-open "publishers/atheneum.json"))
       (pids (mapcar #'stardust-check-pid (list stardust-check-book person json)))
       (servers (with-current-buffer stardust-check-book
                  (gethash (eglot--current-project) eglot--servers-by-project))))
  (with-current-buffer json
    (unless (memq major-mode '(stardust-json-mode js-json-mode json-ts-mode json-mode))
      (stardust-check-fail "publishers/atheneum.json is in %s" major-mode)))
  (unless (and (= (length (delete-dups (copy-sequence pids))) 1) (= (length servers) 1))
    (stardust-check-fail "servers %S with pids %S" servers pids))
  (let ((command (process-command (jsonrpc--process (car servers)))))
    (unless (equal (cdr command) (list "lsp" "--store" (directory-file-name stardust-check-store)))
      (stardust-check-fail "the server runs %S" command)))
  (princ (format "pid  %d\n" (car pids))))
(stardust-check-ok "one server process serves the whole store")

;; A command of the registry.
(with-current-buffer stardust-check-book
  (let ((status (stardust-command "stardust.status")))
    (unless (plist-get status :seq)
      (stardust-check-fail "stardust.status answered %S" status))))
(stardust-check-ok "commands run")

(with-current-buffer stardust-check-book
  (set-buffer-modified-p nil)
  (eglot-shutdown (eglot-current-server)))
(kill-emacs 0)

;;; check.el ends here
