;;; stardust.el --- Stardust stores in Emacs: DUST files and one language server per store  -*- lexical-binding: t; -*-

;; Works with Emacs 28 and eglot 1.9 or later (Debian's elpa-eglot; built into Emacs 29+).
;;
;; Install: put this file on `load-path' (or anywhere) and add to your init file
;;
;;   (load "/path/to/stardust.el")
;;
;; It gives `.dust' files `dust-mode' (`;' comments, strings, `@' references, `?' variables),
;; and runs `stardust lsp' through eglot for the DUST and JSON files of a store: a folder with
;; `stardust.toml' (or `.stardust/', as a mount of a store has). The store's folder is the
;; project eglot knows it by, even outside version control and whatever folder a file is in,
;; so ONE `stardust lsp' serves every document of the store. JSON files outside a store keep
;; whatever server eglot would give them otherwise.
;;
;; `stardust' must be on PATH (or set `stardust-program').  Everything else is eglot's own:
;; diagnostics through Flymake (while you type, before you save), `eldoc' hover, M-. (definition),
;; M-? (references), `eglot-rename', `eglot-code-actions', `eglot-format-buffer', completion
;; with `completion-at-point'.  `M-x stardust-command' runs a command of the registry.

;;; Code:

(require 'cl-lib)
(require 'project)
(require 'eglot)

(defgroup stardust nil
  "Stardust stores of JSON and DUST documents."
  :group 'languages)

(defcustom stardust-program "stardust"
  "The `stardust' program that `stardust lsp' runs."
  :type 'string)

(defcustom stardust-indent-offset 2
  "Indentation of DUST values inside brackets."
  :type 'integer)

;;; The store

(defun stardust-root (&optional dir)
  "The store DIR (default: the current buffer's folder) is in, or nil.
A store is the nearest folder above with `stardust.toml' or `.stardust/'."
  (let ((dir (or dir (and buffer-file-name (file-name-directory buffer-file-name))
                 default-directory)))
    (when dir
      (let ((found (locate-dominating-file
                    dir (lambda (d)
                          (or (file-exists-p (expand-file-name "stardust.toml" d))
                              (file-directory-p (expand-file-name ".stardust" d)))))))
        (and found (file-name-as-directory (expand-file-name found)))))))

;; The store as a project, for eglot only (`eglot-lsp-context'): `C-x p' commands keep the
;; version-control project they had.
(defun stardust-project-find (dir)
  "The store around DIR as a project, when eglot asks."
  (when (bound-and-true-p eglot-lsp-context)
    (let ((root (stardust-root dir)))
      (and root (cons 'stardust root)))))

(cl-defmethod project-root ((project (head stardust)))
  (cdr project))

(add-hook 'project-find-functions #'stardust-project-find)

;;; DUST

(defvar dust-mode-syntax-table
  (let ((table (make-syntax-table)))
    (modify-syntax-entry ?\; "<" table)
    (modify-syntax-entry ?\n ">" table)
    (modify-syntax-entry ?' "\"" table)
    (modify-syntax-entry ?\" "\"" table)
    (modify-syntax-entry ?\\ "\\" table)
    (dolist (c '(?- ?_ ?/ ?. ?@ ?? ?$))
      (modify-syntax-entry c "_" table))
    table)
  "Syntax of DUST: `;' comments, `'...'' and \"...\" strings, ids as symbols.")

(defconst dust-font-lock-keywords
  `(("^[ \t]*\\([^][{} \t\n;'\"]+\\)" 1 font-lock-variable-name-face)
    ("[{[ \t]\\([^][{} \t\n;'\"@?]+\\)[ \t]" 1 font-lock-variable-name-face)
    ("@[^][{} \t\n;'\"]+" . font-lock-constant-face)
    ("\\?[^][{} \t\n;'\"]+" . font-lock-type-face)
    (,(regexp-opt '("true" "false" "null") 'symbols) . font-lock-keyword-face))
  "Keys, `@' references, `?' variables and literals.")

(defun dust-indent-line ()
  "Indent the line by the brackets open before it."
  (let ((depth (save-excursion (car (syntax-ppss (line-beginning-position)))))
        (closing (save-excursion (back-to-indentation) (looking-at "[]}]"))))
    (indent-line-to (* stardust-indent-offset (max 0 (- depth (if closing 1 0)))))))

;;;###autoload
(define-derived-mode dust-mode prog-mode "DUST"
  "Major mode for DUST documents of a Stardust store."
  :syntax-table dust-mode-syntax-table
  (setq-local comment-start "; ")
  (setq-local comment-start-skip ";+[ \t]*")
  (setq-local comment-end "")
  (setq-local indent-line-function #'dust-indent-line)
  (setq-local indent-tabs-mode nil)
  (setq-local font-lock-defaults '(dust-font-lock-keywords)))

;;;###autoload
(add-to-list 'auto-mode-alist '("\\.dust\\'" . dust-mode))

;;; JSON

;; Emacs 29 opens `.json' in `js-json-mode' (or `json-ts-mode'); Emacs 28 in `js-mode', which
;; is JavaScript's too: there, the JSON files of a store get `stardust-json-mode'.
(define-derived-mode stardust-json-mode js-mode "JSON"
  "JSON documents of a Stardust store (Emacs 28, which has no JSON mode of its own).")

(defun stardust--json-mode-in-store ()
  "Switch a `.json' file of a store from `js-mode' to `stardust-json-mode'."
  (when (and (eq major-mode 'js-mode) buffer-file-name
             (string-match-p "\\.json\\'" buffer-file-name) (stardust-root))
    (stardust-json-mode)))

(unless (fboundp 'js-json-mode)
  (add-hook 'js-mode-hook #'stardust--json-mode-in-store))

;;; The language server

(defconst stardust-modes
  '(dust-mode
    (stardust-json-mode :language-id "json")
    (js-json-mode :language-id "json")
    (json-ts-mode :language-id "json")
    (json-mode :language-id "json"))
  "The major modes `stardust lsp' serves in a store, and their LSP language ids.")

(defun stardust--contact (&optional interactive)
  "`stardust lsp' for the store of the current buffer.
Outside a store, the server eglot would choose without Stardust (for a JSON file elsewhere)."
  (let ((root (stardust-root)))
    (if root
        (list stardust-program "lsp" "--store" (directory-file-name root))
      (let* ((eglot-server-programs
              (cl-remove-if (lambda (entry) (eq (cdr entry) #'stardust--contact))
                            eglot-server-programs))
             (guess (nth 2 (eglot--lookup-mode major-mode))))
        (if (functionp guess) (funcall guess interactive) guess)))))

(add-to-list 'eglot-server-programs (cons stardust-modes #'stardust--contact))

(defun stardust-eglot-ensure ()
  "Start (or join) the store's `stardust lsp' when the buffer is a document of a store."
  (when (and buffer-file-name (stardust-root))
    (eglot-ensure)))

(dolist (hook '(dust-mode-hook stardust-json-mode-hook js-json-mode-hook json-ts-mode-hook
                json-mode-hook))
  (add-hook hook #'stardust-eglot-ensure))

;;; Commands

(defun stardust-command (name &optional arguments)
  "Run the registry command NAME (e.g. `stardust.status') with ARGUMENTS, a JSON object text.
Shows the answer; returns it as a plist."
  (interactive
   (list (read-string "Command: " "stardust.status")
         (read-string "Arguments (JSON): " "{}")))
  (let* ((args (if (and arguments (not (string-empty-p arguments)))
                   (json-parse-string arguments :object-type 'plist)
                 ;; An empty object: nil would be sent as null.
                 (make-hash-table)))
         (answer (jsonrpc-request (eglot--current-server-or-lose) :workspace/executeCommand
                                  `(:command ,name :arguments [,args]))))
    (when (called-interactively-p 'any)
      (with-current-buffer (get-buffer-create "*stardust*")
        (erase-buffer)
        (insert (json-encode answer))
        (json-pretty-print-buffer)
        (display-buffer (current-buffer))))
    answer))

(provide 'stardust)
;;; stardust.el ends here
