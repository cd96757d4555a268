//! The policy tables: what each policy allows and refuses, attack by attack.

use super::lex::{Token, tokenize};
use super::*;

fn allowed(policy: ShellPolicy, cmd: &str) {
    if let Err(e) = check_command(policy, cmd) {
        panic!("{policy} should allow {cmd:?}, refused: {e}");
    }
}

fn refused(policy: ShellPolicy, cmd: &str, why: &str) {
    match check_command(policy, cmd) {
        Ok(()) => panic!("{policy} should refuse {cmd:?}"),
        Err(e) => {
            let text = e.to_string();
            assert!(
                text.contains(why),
                "{cmd:?}: refusal {text:?} should mention {why:?}"
            );
            assert!(text.starts_with(&format!("the `{policy}` shell policy refuses ")));
            assert!(
                !text.contains('\n'),
                "{cmd:?}: a refusal is one line: {text:?}"
            );
        }
    }
}

const INSPECT_OK: &[&str] = &[
    "pwd",
    "ls",
    "ls -la src",
    "ls *.rs",
    "cat Cargo.toml",
    "cat src/*.rs | wc -l",
    "head -n 20 README.md",
    "tail -5 log.txt",
    "wc -l a b c",
    "cut -d: -f1 /etc/passwd",
    "stat -c %s file",
    "du -sh .",
    "grep -rn 'fn main' src",
    "grep '>' file",
    "grep \"a > b\" file",
    "grep '$(rm -rf /)' file",
    "grep 'a|b' file",
    "grep a\\>b file",
    "grep -E \"x$\" f",
    "grep 'x' f # a comment > here",
    "rg -n TODO",
    "uniq file",
    "uniq -c",
    "uniq -f 2 file",
    "sort -n file | uniq -c | sort -rn | head",
    "sort -k2,2 -t , file",
    "sort -t o file",
    "find . -name '*.rs' -type f",
    "find src -newer Cargo.toml -print",
    "find . ! -name x",
    "git status",
    "git status --porcelain",
    "git log --oneline -n 5",
    "git diff HEAD~1 -- src",
    "git show HEAD@{1}",
    "git show HEAD:src/main.rs",
    "git rev-parse --show-toplevel",
    "git ls-files -m",
    "git --no-pager log",
    "git branch",
    "git branch -a",
    "git branch -avv",
    "git branch --list 'feat/*'",
    "git branch -l feat",
    "git branch --contains HEAD",
    "git branch --merged=main",
    "git branch --sort=-committerdate --format='%(refname:short)'",
    "git branch --show-current",
    "ls && pwd",
    "ls || pwd",
    "ls; pwd",
    "ls;",
    "ls\npwd",
    "\nls\n\n",
    "ls |\n wc -l",
    "ls 2>&1 | head",
    "ls >&2",
    "ls 2>/dev/null",
    "ls > /dev/null",
    "ls &>/dev/null",
    "ls |& head",
    "cat 'file with spaces' \"and more\"",
    "cat a\\ b",
];

#[test]
fn inspect_allows_inspection() {
    for cmd in INSPECT_OK {
        allowed(ShellPolicy::Inspect, cmd);
        allowed(ShellPolicy::Verify, cmd);
        allowed(ShellPolicy::Unrestricted, cmd);
    }
}

const INSPECT_REFUSED: &[(&str, &str)] = &[
    ("rm -rf x", "`rm` is not an inspection command"),
    ("ls; rm -rf x", "`rm` is not an inspection command"),
    ("ls && rm x", "`rm`"),
    ("ls | tee f", "`tee`"),
    ("cat a > b", "redirections that write to a file"),
    ("cat a >> b", "redirections that write"),
    ("cat a>b", "redirections that write"),
    ("ls 2>err.log", "redirections that write"),
    ("ls >| f", "redirections that write"),
    ("ls &> f", "redirections that write"),
    ("ls >&f", "redirections that write"),
    ("ls 3>&1", "redirections that write"),
    ("ls > /dev/*", "redirections that write"),
    ("cat < f", "input redirections"),
    ("cat <<EOF\nx\nEOF", "input redirections"),
    ("cat <<< x", "input redirections"),
    ("cat <> f", "input redirections"),
    ("ls >", "without a target"),
    ("find . -exec rm {} \\;", "find's `-exec`"),
    ("find . -execdir rm {} +", "`-execdir`"),
    ("find . -delete", "`-delete`"),
    ("find . -fprint out", "`-fprint`"),
    ("find . -ok rm {} ;", "`-ok`"),
    ("find * -print", "unquoted pattern `*`"),
    ("find . {-delete,}", "unquoted pattern"),
    ("git branch -D x", "listing forms"),
    ("git branch -d x", "listing forms"),
    ("git branch -m a b", "listing forms"),
    ("git branch newname", "listing forms"),
    ("git branch --delete x", "listing forms"),
    ("git branch --del x", "listing forms"),
    ("git branch -f x HEAD", "listing forms"),
    ("git branch -u origin/x", "listing forms"),
    ("git branch --set-upstream-to=o/x", "listing forms"),
    ("git branch -c a b", "listing forms"),
    ("git branch -ad x", "listing forms"),
    (
        "git commit -am x",
        "`git commit` is not an inspection command",
    ),
    ("git checkout .", "`git checkout`"),
    (
        "git -c core.pager=sh log",
        "global option `-c` would set configuration",
    ),
    (
        "git --git-dir=x status",
        "global option `--git-dir` would choose another repository",
    ),
    ("git", "needs one of the subcommands"),
    ("git diff --output=f", "git's `--output` writes files"),
    (
        "git log --out=f",
        "`--out` (read as `--output`) writes files",
    ),
    ("git log *", "unquoted pattern"),
    ("rg --pre sh x", "`--pre`"),
    ("rg --pre-glob '*.gz' x", "`--pre-glob`"),
    ("rg --pre=sh x", "`--pre`"),
    ("rg --hostname-bin=x y", "`--hostname-bin`"),
    ("sort -o out file", "`-o`"),
    ("sort -ro out file", "sort's `-o` writes files"),
    ("sort --output=out file", "`--output`"),
    ("sort --out=x f", "`--out` (read as `--output`)"),
    ("sort -T /tmp f", "`-T`"),
    ("sort --compress-program=sh f", "`--compress-program`"),
    ("sort *", "unquoted pattern"),
    ("uniq in out", "output file"),
    ("uniq -c in out", "output file"),
    ("uniq -- in out", "output file"),
    ("echo $(rm x)", "`$(`"),
    ("ls $(pwd)", "command substitution"),
    ("ls \"$(pwd)\"", "command substitution"),
    ("ls `pwd`", "backticks"),
    ("ls \"`pwd`\"", "backticks"),
    ("cat <(ls)", "process substitution"),
    ("ls >(cat)", "process substitution"),
    ("ls $HOME", "variable expansion"),
    ("ls \"$HOME\"", "variable expansion"),
    ("ls ${X:=-delete}", "parameter expansion"),
    ("ls $'\\x41'", "ANSI-C"),
    ("ls $[1+1]", "arithmetic"),
    ("X=1 ls", "variable assignments before a command"),
    ("X=-delete; find . $X", "variable expansion"),
    ("X=-delete; ls", "variable assignments"),
    ("(ls)", "subshells"),
    ("{ ls; }", "`{` is not an inspection command"),
    ("ls &", "background"),
    ("ls & rm x", "background"),
    ("eval ls", "`eval`"),
    ("exec ls", "`exec`"),
    ("env ls", "`env`"),
    ("ls | xargs rm", "`xargs`"),
    ("sh -c ls", "`sh`"),
    ("bash -c 'ls'", "`bash`"),
    ("/bin/ls", "`/bin/ls`"),
    ("l*", "must not be a pattern"),
    ("ls |", "without a command after it"),
    ("ls &&", "without a command after it"),
    ("| ls", "without a command before it"),
    ("; ls", "without a command before it"),
    ("ls ;; pwd", "`case` syntax"),
    ("ls 'unterminated", "unterminated single quote"),
    ("ls \"unterminated", "unterminated double quote"),
    ("ls \\", "trailing backslash"),
    ("", "empty"),
    ("   ", "empty"),
    ("# only a comment", "empty"),
    ("cargo test", "not an inspection command"),
    ("echo hi", "`echo`"),
    ("touch f", "`touch`"),
    ("if true; then rm x; fi", "`if`"),
];

#[test]
fn inspect_refuses_everything_else() {
    for (cmd, why) in INSPECT_REFUSED {
        refused(ShellPolicy::Inspect, cmd, why);
        allowed(ShellPolicy::Unrestricted, cmd);
    }
}

#[test]
fn verify_refuses_what_inspect_refuses_apart_from_verifiers() {
    for (cmd, why) in INSPECT_REFUSED {
        if *cmd == "cargo test" {
            continue;
        }
        // Verify words an unknown command differently; git's own refusals stay the same.
        let text = check_command(ShellPolicy::Verify, cmd)
            .unwrap_err()
            .to_string();
        let alt = why.replace("is not an inspection command", "is neither");
        assert!(
            text.contains(*why) || text.contains(&alt),
            "{cmd:?}: refusal {text:?} should mention {why:?}"
        );
    }
}

const VERIFIERS: &[&str] = &[
    "npm test",
    "npm run lint",
    "pnpm typecheck",
    "yarn build",
    "bun test",
    "bun run check",
    "node --test",
    "node --test test/",
    "python -m pytest -x",
    "python3 -m unittest discover",
    "python -m mypy src",
    "python -m ruff check .",
    "pytest",
    "pytest tests/test_*.py",
    "mypy .",
    "ruff check .",
    "ruff format --check",
    "cargo test",
    "cargo test -p cadre-tools -- --nocapture",
    "cargo +nightly check",
    "cargo clippy --all-targets -- -D warnings",
    "cargo build --release",
    "cargo nextest run",
    "cargo fmt --check",
    "cargo fmt --all -- --check",
    "go test ./...",
    "go vet ./...",
    "go build ./...",
    "mvn test",
    "mvn -q verify",
    "gradle check",
    "gradle :app:test",
    "make test",
    "make -j4 check lint",
    "tsc --noEmit",
    "tsc --noEmit -p tsconfig.json",
    "eslint src",
    "vitest run",
    "jest --ci",
    "rubocop",
    "dotnet test",
    "dotnet build",
    "flutter test",
    "dart test",
    "npx eslint .",
    "npx vitest run",
    "npx tsc --noEmit",
    "npx prettier --check .",
    "prettier -c src",
    "cargo test 2>&1 | tail -n 50",
    "cargo test && git status",
    "cargo test >/dev/null",
];

#[test]
fn verify_allows_verifiers() {
    for cmd in VERIFIERS {
        allowed(ShellPolicy::Verify, cmd);
        if !cmd.starts_with("cargo test 2>&1") && !cmd.starts_with("cargo test &&") {
            refused(ShellPolicy::Inspect, cmd, "is not an inspection command");
        }
    }
}

const VERIFY_REFUSED: &[(&str, &str)] = &[
    ("cargo clippy --fix", "`--fix` makes the check change files"),
    ("eslint --fix .", "`--fix`"),
    ("eslint --fix=true .", "`--fix=true`"),
    ("npx eslint --fix .", "`--fix`"),
    ("prettier --write .", "is neither"),
    ("prettier --check --write .", "`--write`"),
    ("prettier -c -w .", "`-w`"),
    ("jest -u", "`-u`"),
    ("jest --updateSnapshot", "`--updateSnapshot`"),
    ("vitest --update", "`--update`"),
    ("npm test -- -u", "`-u`"),
    ("ruff check --fix", "`--fix`"),
    ("rubocop -a", "`-a`"),
    ("rubocop --autocorrect-all", "`--autocorrect-all`"),
    ("cargo fmt", "is neither"),
    ("ruff format", "is neither"),
    ("cargo run", "is neither"),
    ("cargo install x", "is neither"),
    ("npm install", "is neither"),
    ("npm run deploy", "is neither"),
    ("npm", "is neither"),
    ("npx", "is neither"),
    ("npx rm -rf x", "is neither"),
    ("node script.js --test", "is neither"),
    ("python script.py", "is neither"),
    ("python -c 'open(1)'", "is neither"),
    ("go run .", "is neither"),
    ("go generate", "is neither"),
    ("make install", "is neither"),
    ("make", "is neither"),
    ("make test install", "make takes only the targets"),
    ("mvn deploy", "is neither"),
    ("mvn", "is neither"),
    ("gradle publish", "is neither"),
    ("tsc", "is neither"),
    ("dotnet run", "is neither"),
    ("flutter build", "is neither"),
    ("RUST_BACKTRACE=1 cargo test", "variable assignments"),
    ("cargo test > out.txt", "redirections that write"),
    ("cargo test; rm -rf x", "`rm` is neither"),
    ("cargo test &", "background"),
];

#[test]
fn verify_refuses_mutating_and_unknown() {
    for (cmd, why) in VERIFY_REFUSED {
        refused(ShellPolicy::Verify, cmd, why);
    }
}

#[test]
fn none_refuses_everything() {
    for cmd in INSPECT_OK.iter().chain(VERIFIERS) {
        refused(ShellPolicy::None, cmd, "may not run shell commands");
    }
    refused(ShellPolicy::None, "", "may not run shell commands");
}

#[test]
fn refusal_names_the_part() {
    let e = check_command(ShellPolicy::Inspect, "ls -l; rm -rf x").unwrap_err();
    assert_eq!(e.part, "`rm -rf x`");
    assert_eq!(e.policy, ShellPolicy::Inspect);
    let e = check_command(ShellPolicy::Inspect, "cat a 2> b").unwrap_err();
    assert_eq!(e.part, "`2>b`");
    assert_eq!(
        e.to_string(),
        "the `inspect` shell policy refuses `2>b`: redirections that write to a file are \
         not allowed"
    );
}

#[test]
fn tokenizer_reads_quotes_and_escapes() {
    let words = |s: &str| -> Vec<String> {
        tokenize(s)
            .unwrap()
            .into_iter()
            .filter_map(|t| match t {
                Token::Word(w) => Some(w.text),
                _ => None,
            })
            .collect()
    };
    assert_eq!(words("a 'b c' \"d e\" f\\ g"), ["a", "b c", "d e", "f g"]);
    assert_eq!(words("a'b'\"c\"d"), ["abcd"]);
    assert_eq!(words("''"), [""]);
    assert_eq!(words("\"a\\\"b\\$c\\x\""), ["a\"b$c\\x"]);
    assert_eq!(words("a\\\nb"), ["ab"]);
    assert_eq!(words("grep 'x$' \"y$\" z$"), ["grep", "x$", "y$", "z$"]);
    let toks = tokenize("ls 2>&1|wc").unwrap();
    assert_eq!(toks.len(), 5);
    assert!(matches!(&toks[1], Token::Redirect { fd: Some(fd), op } if fd == "2" && op == ">&"));
    // A quoted digit is a word, not a file descriptor.
    let toks = tokenize("ls '2'>x").unwrap();
    assert!(matches!(&toks[2], Token::Redirect { fd: None, .. }));
}

#[test]
fn patterns_are_flagged_only_when_unquoted() {
    let expands = |s: &str| match &tokenize(s).unwrap()[0] {
        Token::Word(w) => w.expands,
        other => panic!("{other:?}"),
    };
    assert!(expands("*.rs"));
    assert!(expands("a?"));
    assert!(expands("[ab]"));
    assert!(expands("{a,b}"));
    assert!(expands("x{1..3}"));
    assert!(!expands("'*.rs'"));
    assert!(!expands("\"*\""));
    assert!(!expands("\\*"));
    assert!(!expands("HEAD@{1}"));
    assert!(!expands("{}"));
    assert!(!expands("a,b"));
}

#[test]
fn policy_names_round_trip() {
    for p in [
        ShellPolicy::Unrestricted,
        ShellPolicy::Inspect,
        ShellPolicy::Verify,
        ShellPolicy::None,
    ] {
        assert_eq!(p.as_str().parse::<ShellPolicy>().unwrap(), p);
        assert_eq!(serde_json::to_value(p).unwrap(), p.as_str());
    }
    assert!("Inspect".parse::<ShellPolicy>().is_err());
    assert_eq!(ShellPolicy::default(), ShellPolicy::Unrestricted);
}

// ---------------------------------------------------------------------------------------------
// A hostile repository (S7): attacks found against the inspect and verify policies, and the
// legitimate neighbours that must keep working. Each attack is refused under both policies.

const GIT_ATTACKS: &[(&str, &str)] = &[
    // An embedded bare-looking `sub/evil.git/` whose config names `core.fsmonitor`.
    (
        "git -C sub/evil.git status",
        "`-C` would run git on another directory",
    ),
    ("git -C sub log", "git runs in the project directory only"),
    ("git -Csub status", "global option `-C` would run git"),
    (
        "git --git-dir=sub/evil.git status",
        "`--git-dir` would choose",
    ),
    (
        "git --git-dir sub/evil.git status",
        "`--git-dir` would choose",
    ),
    ("git --work-tree=.. status", "`--work-tree` would choose"),
    (
        "git --git-dir=sub/evil.git --work-tree=sub status",
        "`--git-dir`",
    ),
    ("git --bare log", "`--bare` would choose"),
    ("git --namespace=x log", "`--namespace`"),
    (
        "git -c core.fsmonitor='sh payload.sh' status",
        "`-c` would set configuration",
    ),
    ("git -ccore.pager=sh log", "global option `-c` would set"),
    (
        "git --config-env=core.fsmonitor=HOME status",
        "`--config-env` would set configuration",
    ),
    (
        "git --exec-path=sub status",
        "`--exec-path` would make git run",
    ),
    ("git --exec-path", "`--exec-path`"),
    ("git -p log", "`-p` would start a pager"),
    ("git --paginate log", "`--paginate`"),
    ("git --attr-source=HEAD diff", "`--attr-source`"),
    ("git -P -C sub status", "`-C`"),
    ("GIT_DIR=sub/evil.git git status", "variable assignments"),
    ("GIT_WORK_TREE=.. git status", "variable assignments"),
    ("GIT_CONFIG_PARAMETERS=x git status", "variable assignments"),
    ("GIT_EXTERNAL_DIFF=sh git diff", "variable assignments"),
    ("GIT_PAGER=sh git log", "variable assignments"),
    ("env GIT_DIR=sub/evil.git git status", "`env`"),
    ("env -i git status", "`env`"),
    (
        "cd sub/evil.git && git status",
        "commands run in the project directory only",
    ),
    ("cd sub; git status", "`cd`"),
    ("pushd sub", "`pushd`"),
    ("\\cd sub", "`cd`"),
    // Program-running and file-writing options of the allowed subcommands.
    ("git diff --ext-diff", "`--ext-diff` runs a program"),
    ("git diff --ext", "`--ext` (read as `--ext-diff`)"),
    ("git show --ext-diff HEAD", "`--ext-diff`"),
    ("git log -p --ext-diff", "`--ext-diff`"),
    ("git diff --textconv", "`--textconv` runs a program"),
    ("git log -p --textconv", "`--textconv`"),
    ("git show --textconv HEAD:notes.txt", "`--textconv`"),
    ("git show --textc HEAD:f", "read as `--textconv`"),
    ("git log --show-signature", "`--show-signature` runs"),
    (
        "git log --format='%G?'",
        "`%G?` format placeholder checks signatures",
    ),
    ("git log --pretty=format:%GS", "`%G…`"),
    ("git branch --format %GK", "`%G…`"),
    ("git diff --output=/tmp/x", "`--output` writes files"),
    ("git diff --output f", "`--output` writes"),
    ("git log --outp=f", "`--outp` (read as `--output`)"),
    ("git show --output=x HEAD", "`--output`"),
    ("git status --output=x", "`--output`"),
    // Branch creation, deletion and configuration.
    ("git branch --edit-description", "listing forms"),
    ("git branch --set-upstream-to=o/x", "listing forms"),
    ("git branch --unset-upstream", "listing forms"),
    ("git branch --track x origin/x", "listing forms"),
    ("git branch -M a b", "listing forms"),
    ("git branch --copy a b", "listing forms"),
    ("git branch x HEAD", "listing forms"),
    // Subcommands are named literally.
    ("git stat*", "`git stat*` is not an inspection command"),
    ("git config core.fsmonitor", "`git config`"),
    ("git -P grep -O x", "`git grep`"),
    ("git submodule status", "`git submodule`"),
    ("git fsmonitor--daemon start", "`git fsmonitor--daemon`"),
];

const OTHER_INSPECT_ATTACKS: &[(&str, &str)] = &[
    ("rg --pre cat x", "rg's `--pre` runs a program"),
    ("rg --pre=./payload.sh x", "`--pre`"),
    ("rg --pr=sh x", "`--pr` (read as `--pre`)"),
    ("rg --pre-glob '*' --pre sh x", "`--pre-glob`"),
    ("rg --hostname-bin=./x y", "`--hostname-bin`"),
    ("find . -exec sh {} ;", "find's `-exec` runs"),
    ("find . -execdir sh {} +", "`-execdir`"),
    ("find . -ok sh {} ;", "`-ok`"),
    ("find . -okdir sh {} ;", "`-okdir`"),
    ("find . -delete", "`-delete` writes"),
    ("find . -fprint out", "`-fprint`"),
    ("find . -fprint0 out", "`-fprint0`"),
    ("find . -fprintf out %p", "`-fprintf`"),
    ("find . -fls out", "`-fls`"),
    ("find -- . -delete", "`-delete`"),
    ("find . -name x -o -delete", "`-delete`"),
    ("find . -name -*", "unquoted pattern `-*`"),
    ("sort -o out f", "sort's `-o` writes"),
    ("sort -no out f", "`-o`"),
    ("sort --output=out f", "`--output`"),
    ("sort --outp=x f", "read as `--output`"),
    ("sort f --output x", "`--output`"),
    ("sort --compress-program=sh f", "`--compress-program` runs"),
    ("sort --compress=sh f", "read as `--compress-program`"),
    ("sort -T /tmp f", "`-T` writes"),
    ("sort --temporary-directory=d f", "`--temporary-directory`"),
    ("sort --temp=d f", "read as `--temporary-directory`"),
    ("rg x *", "unquoted pattern `*`"),
    ("sort [-]*", "unquoted pattern"),
    ("uniq *.txt", "unquoted pattern"),
    ("uniq src/*.txt", "unquoted pattern"),
    ("LD_PRELOAD=./x.so ls", "variable assignments"),
    ("PATH=. ls", "variable assignments"),
    ("BASH_ENV=./x ls", "variable assignments"),
    ("ENV=./x ls", "variable assignments"),
    ("PAGER=./x git log", "variable assignments"),
    ("A=1 B=2 ls", "variable assignments"),
    ("export PATH=.", "`export`"),
    ("unset PATH", "`unset`"),
    ("./git status", "`./git`"),
    ("sub/rg x", "`sub/rg`"),
];

#[test]
fn hostile_repository_attacks_are_refused_under_inspect_and_verify() {
    for (cmd, why) in GIT_ATTACKS.iter().chain(OTHER_INSPECT_ATTACKS) {
        refused(ShellPolicy::Inspect, cmd, why);
        // Verify words an unknown command differently; the reasons are otherwise the same.
        let alt = why.replace("is not an inspection command", "is neither");
        let text = check_command(ShellPolicy::Verify, cmd)
            .map(|()| String::new())
            .unwrap_or_else(|e| e.to_string());
        assert!(
            text.contains(why) || text.contains(&alt),
            "verify: {cmd:?}: refusal {text:?} should mention {why:?}"
        );
        allowed(ShellPolicy::Unrestricted, cmd);
    }
}

const INSPECT_NEIGHBOURS: &[&str] = &[
    "git status",
    "git status -sb",
    "git status --porcelain=v1 --untracked-files=all",
    "git status --porc",
    "git log --oneline -5",
    "git log --oneline --graph --decorate -n 20",
    "git log -p --no-ext-diff --no-textconv -1",
    "git log --format='%h %an %s' -3",
    "git log --pretty=oneline",
    "git log -S needle -- src",
    "git log -- src/*.rs",
    "git diff HEAD~1 -- src",
    "git diff --stat",
    "git diff --text a b",
    "git diff --exit-code",
    "git diff --output-indicator-new=+ HEAD",
    "git diff --cached --name-only",
    "git diff --no-index a b",
    "git show HEAD:file",
    "git show --stat HEAD",
    "git show HEAD -- ./src/*.rs",
    "git rev-parse --git-dir",
    "git rev-parse --show-toplevel",
    "git rev-parse --abbrev-ref HEAD",
    "git ls-files -- 'src/*.rs'",
    "git ls-files --others --exclude-standard",
    "git branch -vv",
    "git branch --show-current",
    "git branch -l 'f*'",
    "git -P log -1",
    "git --no-pager diff",
    "git --no-optional-locks status",
    "git --literal-pathspecs log -- 'a*'",
    "rg -n foo src",
    "rg -n foo src/*.rs",
    "rg --pretty -g '*.rs' foo",
    "rg -z foo",
    "rg -- --pre file",
    "find . -name '*.rs'",
    "find . -name '*.rs' -newer Cargo.toml -print",
    "find src/* -maxdepth 0 -type d",
    "find ./* -name x",
    "find . -path ./target -prune -o -name '*.rs' -print",
    "sort file",
    "sort -u -t: -k2 file",
    "sort -to file",
    "sort -rnk2 file",
    "sort --reverse --numeric-sort file",
    "sort ./*.txt",
    "sort -- -o",
    "uniq -c file",
    "ls src/*.rs",
    "cat ./*.md",
    "grep -rn TODO *",
];

#[test]
fn legitimate_neighbours_of_the_attacks_still_run() {
    for cmd in INSPECT_NEIGHBOURS {
        allowed(ShellPolicy::Inspect, cmd);
        allowed(ShellPolicy::Verify, cmd);
    }
}

#[test]
fn the_git_directory_refusal_says_what_to_do() {
    let e = check_command(ShellPolicy::Inspect, "git -C sub/evil.git status").unwrap_err();
    assert_eq!(e.part, "`git -C sub/evil.git status`");
    assert_eq!(
        e.reason,
        "git's global option `-C` would run git on another directory, whose repository and \
         configuration (a repository can commit one) can make git run programs; git runs in \
         the project directory only — name a path after `--` instead (`git log -- sub`) \
         (allowed before the subcommand: -P, --no-pager, --no-optional-locks, \
         --literal-pathspecs)"
    );
    let e = check_command(ShellPolicy::Inspect, "GIT_DIR=x git status").unwrap_err();
    assert_eq!(e.part, "`GIT_DIR=x git status`");
    assert!(
        e.reason.contains("GIT_DIR, LD_PRELOAD, PATH or BASH_ENV"),
        "{e}"
    );
}

const VERIFY_ATTACKS: &[(&str, &str)] = &[
    // Assignments choose the programs the check runs.
    ("RUSTC_WRAPPER=./x cargo test", "variable assignments"),
    (
        "GOFLAGS=-toolexec=./x go test ./...",
        "variable assignments",
    ),
    (
        "NODE_OPTIONS=--require=./x.js npm test",
        "variable assignments",
    ),
    ("env CARGO_BUILD_RUSTC=./x cargo test", "`env`"),
    // eslint
    (
        "eslint --output-file out.txt .",
        "eslint's `--output-file` writes",
    ),
    ("eslint -o out .", "eslint's `-o` writes"),
    ("eslint --output=x .", "read as `--output-file`"),
    ("eslint --rulesdir evil .", "`--rulesdir` runs"),
    ("eslint --plugin evil .", "`--plugin` runs"),
    ("eslint --parser ./p.js .", "`--parser`"),
    ("eslint -c evil.js .", "eslint's `-c` loads a configuration"),
    ("eslint --config=evil.js .", "`--config` loads"),
    ("eslint -f ./fmt.js .", "not a file (`./fmt.js`)"),
    ("eslint --format=fmt.cjs .", "`--format`"),
    ("eslint --cache .", "`--cache` writes"),
    ("eslint --cache-location x .", "`--cache-location`"),
    (
        "eslint --resolve-plugins-relative-to=/ .",
        "`--resolve-plugins-relative-to`",
    ),
    ("eslint --init", "`--init`"),
    ("eslint --mcp", "`--mcp`"),
    ("eslint *", "unquoted pattern `*`"),
    ("eslint *.js", "start it with `./`"),
    ("npx eslint -o out .", "`-o`"),
    // go
    ("go build -o bin ./...", "go's `-o` writes"),
    ("go build -o=bin .", "`-o`"),
    ("go build --o bin .", "`--o`"),
    ("go test -o t ./pkg", "`-o`"),
    ("go test -c ./pkg", "writes the test binary"),
    ("go test -exec ./evil ./...", "go's `-exec` runs"),
    ("go test --exec=sh ./...", "`--exec`"),
    ("go test -toolexec=./x ./...", "`-toolexec`"),
    ("go vet -vettool=./x ./...", "`-vettool`"),
    ("go test -overlay=o.json ./...", "`-overlay`"),
    ("go test -modfile=evil.mod ./...", "`-modfile`"),
    ("go build -ldflags=-extld=./x ./...", "`-ldflags`"),
    ("go test -gcflags=all=-N ./...", "`-gcflags`"),
    (
        "go test -coverprofile=c.out ./...",
        "`-coverprofile` writes",
    ),
    ("go test -cpuprofile c ./...", "`-cpuprofile`"),
    ("go test -trace t ./...", "`-trace`"),
    ("go test -pkgdir d ./...", "`-pkgdir`"),
    ("go test ./... -args -test.cpuprofile=x", "`-cpuprofile`"),
    ("go test -test.coverprofile=x ./...", "`-coverprofile`"),
    ("go test -mod=mod ./...", "`-mod=mod` may rewrite go.mod"),
    ("go test -mod mod ./...", "`-mod=mod`"),
    // cargo
    (
        "cargo test --config 'build.rustc-wrapper=\"sh x\"'",
        "cargo's `--config` loads a configuration",
    ),
    ("cargo test --config=x.toml", "`--config`"),
    ("cargo build --config target.x.runner=sh", "`--config`"),
    ("cargo test -Zunstable-options", "cargo's `-Z` runs"),
    ("cargo test -Z build-std", "`-Z`"),
    ("cargo test -vZx", "`-Z`"),
    (
        "cargo test --manifest-path /tmp/x/Cargo.toml",
        "`--manifest-path` must name a relative path inside the project",
    ),
    (
        "cargo test --manifest-path=../other/Cargo.toml",
        "`--manifest-path`",
    ),
    (
        "cargo test --manifest-path ~/x/Cargo.toml",
        "`--manifest-path`",
    ),
    (
        "cargo build --target ./evil.json",
        "`--target` may name only",
    ),
    ("cargo build --target=evil.json", "`--target`"),
    ("cargo +/tmp/tc test", "must name an installed toolchain"),
    ("cargo +../x test", "installed toolchain"),
    ("cargo +nightly +/x test", "installed toolchain"),
    (
        "cargo build --artifact-dir out -Zunstable-options",
        "`--artifact-dir`",
    ),
    ("cargo build --out-dir out", "`--out-dir`"),
    ("cargo clippy -- -C linker=./x", "only lint levels"),
    ("cargo clippy -- -Zcrate-attr=x", "only lint levels"),
    ("cargo clippy -- --extern x=./x.rlib", "only lint levels"),
    ("cargo test -- --logfile out", "`--logfile` writes"),
    (
        "cargo fmt --check -- --emit files",
        "rustfmt's `--emit` writes",
    ),
    (
        "cargo nextest run --tool-config-file x.toml",
        "`--tool-config-file`",
    ),
    ("cargo nextest run --config-file x.toml", "`--config-file`"),
    (
        "cargo nextest run --archive-file a.tar.zst",
        "`--archive-file`",
    ),
    ("cargo nextest archive --archive-file x", "is neither"),
    ("cargo nextest list", "is neither"),
    ("cargo --config x test", "is neither"),
    // pytest
    ("pytest -p evil", "`-p` may only disable a plugin"),
    ("pytest -pevil", "`-p`"),
    ("pytest -qp evil", "`-p`"),
    ("python -m pytest -p evil", "`-p`"),
    ("pytest -c evil.ini", "pytest's `-c` loads a configuration"),
    ("pytest --config-file=x.ini", "`--config-file`"),
    ("pytest --inifile x.ini", "`--inifile`"),
    ("pytest -o addopts=-pevil", "`-o` loads a configuration"),
    ("pytest --override-ini=x=y", "`--override-ini`"),
    (
        "pytest --rootdir=/",
        "`--rootdir` must name a relative path",
    ),
    ("pytest --rootdir ../x", "`--rootdir`"),
    ("pytest --junitxml=out.xml", "`--junitxml` writes"),
    ("pytest --junit=out.xml", "read as `--junitxml`"),
    ("pytest --basetemp=/tmp/x", "`--basetemp`"),
    ("pytest --pdbcls=evil:Cls", "`--pdbcls` runs"),
    ("pytest --pyargs os", "`--pyargs`"),
    ("pytest --debug", "`--debug` writes"),
    ("pytest --pastebin=all", "`--pastebin`"),
    ("pytest --html=r.html", "`--html`"),
    ("pytest --result-log=x", "`--result-log`"),
    // mypy, ruff, unittest
    (
        "mypy --config-file=evil.ini .",
        "mypy's `--config-file` loads",
    ),
    (
        "mypy --python-executable ./py .",
        "`--python-executable` runs",
    ),
    ("mypy --cache-dir=.c .", "only `/dev/null` is allowed"),
    ("mypy --html-report out .", "`--html-report` writes"),
    ("mypy --install-types", "`--install-types`"),
    ("python -m mypy --junit-xml x .", "`--junit-xml`"),
    (
        "ruff check --output-file x .",
        "ruff's `--output-file` writes",
    ),
    ("ruff check -o x .", "`-o`"),
    ("ruff check --add-noqa .", "`--add-noqa`"),
    ("ruff check --fix-only .", "`--fix-only`"),
    ("ruff check --cache-dir x .", "`--cache-dir`"),
    ("python -m ruff check --output-file=x", "`--output-file`"),
    (
        "python -m unittest discover -s /elsewhere",
        "`-s` must name a relative path",
    ),
    ("python -m unittest discover -t ..", "`-t`"),
    // package managers: npm reads any `--name` as config, by prefix
    (
        "npm test --script-shell=./evil.sh",
        "`--script-shell=./evil.sh` is not among",
    ),
    ("npm test --script-sh=./x", "not among the options"),
    ("npm test --node-options=--require=./x.js", "not among"),
    ("npm test --userconfig=./npmrc", "not among"),
    ("npm test --prefix /elsewhere", "not among"),
    ("npm run build --globalconfig x", "not among"),
    ("npm test --ignore-scripts=false", "not among"),
    ("pnpm test --config.script-shell=x", "not among"),
    ("yarn test --use-yarnrc x", "not among"),
    ("bun test --preload ./x.ts", "not among"),
    ("bun test -r ./x.ts", "not among"),
    ("npm test --foo", "after `--`"),
    // node
    ("node --test --require ./x.js", "`--require` is not among"),
    ("node --test --import=./x.mjs", "not among"),
    (
        "node --test --test-reporter=./r.js",
        "only a built-in reporter",
    ),
    (
        "node --test --test-reporter ./r.js",
        "only a built-in reporter",
    ),
    ("node --test --test-reporter-destination=out", "not among"),
    ("node --test --inspect", "not among"),
    ("node --test --env-file=.env", "not among"),
    ("node --test -e x", "not among"),
    // vitest, jest
    ("vitest run --config evil.ts", "vitest's `--config` loads"),
    ("vitest run -c x.ts", "`-c`"),
    ("vitest run --outputFile=x", "`--outputFile` writes"),
    ("vitest run --output-file.json=x", "`--output-file.json`"),
    ("vitest run --reporter=./r.js", "only a built-in"),
    ("vitest run --root=/", "`--root` must name a relative path"),
    ("vitest run --api", "`--api` starts"),
    ("vitest --ui", "`--ui`"),
    (
        "vitest run --setup-files=./x.ts",
        "(read as `--setupFiles`) runs",
    ),
    ("npx vitest run --config x", "`--config`"),
    ("jest --config evil.js", "jest's `--config` loads"),
    ("jest -c evil.js", "`-c`"),
    ("jest --outputFile x", "`--outputFile` writes"),
    ("jest --output-file=x", "`--output-file`"),
    ("jest --testRunner=./x.js", "`--testRunner` runs"),
    ("jest --test-runner ./x.js", "`--test-runner`"),
    ("jest --reporters=./r.js", "only a built-in"),
    ("jest --setupFiles ./x.js", "`--setupFiles`"),
    ("jest --rootDir=/", "`--rootDir` must name"),
    ("jest --watchAll", "`--watchAll`"),
    ("jest --filter=./f.js", "`--filter`"),
    ("jest --projects a b", "`--projects`"),
    // tsc
    ("tsc --noEmit --outDir out", "tsc's `--outDir` writes"),
    ("tsc --noEmit --outdir out", "read as `--outDir`"),
    ("tsc --noEmit -b", "`-b`"),
    ("tsc --noEmit --incremental", "`--incremental`"),
    ("tsc --noEmit --tsBuildInfoFile x", "`--tsBuildInfoFile`"),
    ("tsc --noEmit --generateTrace t", "`--generateTrace`"),
    ("tsc --noEmit --watch", "`--watch`"),
    ("tsc --noEmit false", "turns --noEmit off"),
    ("tsc --noEmit FALSE -p .", "turns --noEmit off"),
    ("tsc --noEmit --init", "`--init`"),
    // rubocop (OptionParser: prefixes, clusters)
    ("rubocop -r ./evil.rb", "rubocop's `-r` runs"),
    ("rubocop --require=./x", "`--require`"),
    ("rubocop --req ./x", "read as `--require`"),
    ("rubocop -Dr ./x", "`-r`"),
    ("rubocop -c evil.yml", "`-c` loads"),
    ("rubocop -o out", "`-o` writes"),
    ("rubocop --out=x", "`--out`"),
    ("rubocop --cache-root=x", "`--cache-root`"),
    ("rubocop --server", "`--server`"),
    ("rubocop --auto-gen-config", "`--auto-gen-config`"),
    ("rubocop --autocorr", "read as `--autocorrect`"),
    ("rubocop --plugin x", "`--plugin`"),
    // maven, gradle: allowlists
    ("mvn -s evil.xml test", "`-s` is not among"),
    ("mvn -gs evil.xml test", "`-gs`"),
    ("mvn -f ../other/pom.xml test", "`-f`"),
    ("mvn -l out.log test", "`-l`"),
    ("mvn -t toolchains.xml test", "`-t`"),
    (
        "mvn -DargLine=-javaagent:x.jar test",
        "`-DargLine` is not among",
    ),
    (
        "mvn -Dmaven.ext.class.path=x.jar test",
        "`-Dmaven.ext.class.path`",
    ),
    ("mvn -D maven.repo.local=/tmp test", "`-Dmaven.repo.local`"),
    ("gradle -I init.gradle test", "`-I` is not among"),
    ("gradle --init-script x test", "`--init-script`"),
    ("gradle -b other.gradle test", "`-b`"),
    ("gradle -p /elsewhere test", "`-p`"),
    (
        "gradle -Dorg.gradle.java.home=/x test",
        "`-Dorg.gradle.java.home=/x`",
    ),
    ("gradle -Px=y test", "`-Px=y`"),
    ("gradle --include-build ../x test", "`--include-build`"),
    ("gradle --scan test", "`--scan`"),
    ("gradle -g /tmp/home test", "`-g`"),
    ("gradle --write-locks test", "`--write-locks`"),
    // dotnet, flutter, dart, prettier, make
    ("dotnet test -s evil.runsettings", "`-s` is not among"),
    ("dotnet test --settings x", "`--settings`"),
    ("dotnet test -p:X=Y", "`-p:X=Y`"),
    ("dotnet test /p:X=Y", "MSBuild switch"),
    ("dotnet build -o out", "`-o`"),
    ("dotnet test --logger trx", "`--logger`"),
    (
        "dotnet test -- RunConfiguration.TestAdaptersPaths=/x",
        "after `--`",
    ),
    (
        "dotnet test --test-adapter-path /x",
        "`--test-adapter-path`",
    ),
    ("dotnet build -bl", "`-bl`"),
    (
        "flutter test --update-goldens",
        "`--update-goldens` makes the check change files",
    ),
    (
        "flutter test --coverage-path=/tmp/x",
        "`--coverage-path` writes",
    ),
    ("dart test --coverage=/tmp/x", "`--coverage` writes"),
    ("dart test --file-reporter json:out", "`--file-reporter`"),
    ("dart test --precompiled=x", "`--precompiled`"),
    ("flutter test --local-engine=x", "`--local-engine`"),
    (
        "prettier --check --plugin=./p.js .",
        "prettier's `--plugin` runs",
    ),
    ("prettier --check --config evil.js .", "`--config`"),
    ("prettier --check --cache .", "`--cache`"),
    ("make -f evil.mk test", "make takes only the targets"),
    ("make -C /x test", "make takes only the targets"),
    ("make SHELL=./x test", "make takes only the targets"),
    ("make -e test", "make takes only the targets"),
    // npx of something that is not a verifier
    ("npx evil", "is neither"),
    ("npx -p evil eslint", "is neither"),
    ("npx --yes eslint .", "is neither"),
    ("npx eslint@evil .", "is neither"),
];

#[test]
fn verify_refuses_options_that_add_programs_configs_or_output_files() {
    for (cmd, why) in VERIFY_ATTACKS {
        refused(ShellPolicy::Verify, cmd, why);
        allowed(ShellPolicy::Unrestricted, cmd);
    }
}

const VERIFY_NEIGHBOURS: &[&str] = &[
    "cargo test",
    "cargo test --workspace --all-features",
    "cargo test -p cadre-tools --lib shell_policy",
    "cargo test --manifest-path sub/Cargo.toml",
    "cargo test --target x86_64-unknown-linux-gnu",
    "cargo test --target-dir target/verify",
    "cargo +1.85 test",
    "cargo +nightly-2025-01-01 check",
    "cargo test -- --test-threads 1 --nocapture",
    "cargo test -- --exact some::test",
    "cargo clippy --all-targets -- -D warnings -A clippy::x",
    "cargo clippy -- -Dwarnings --cap-lints=warn",
    "cargo nextest run -p x",
    "cargo build --release --locked",
    "cargo fmt --check -- --config-path rustfmt.toml",
    "npm test",
    "npm test -s",
    "npm test -- --watch=false --config=jest.ci.js",
    "npm run lint -- --max-warnings 0",
    "npm test --workspace=web",
    "pnpm test --filter web",
    "yarn test -s",
    "bun test --timeout 5000 src",
    "node --test --test-reporter=spec test/",
    "node --test --test-name-pattern=parse test/a.test.js",
    "pytest -q",
    "pytest -x -q tests/test_a.py::test_b",
    "pytest -p no:cacheprovider",
    "pytest -pno:randomly -q",
    "pytest --co -q",
    "pytest --pdb -x",
    "pytest -k 'not slow' -rA",
    "pytest --rootdir=tests",
    "pytest --maxfail=1 --tb=short",
    "pytest tests/test_*.py",
    "python -m pytest -q tests/",
    "python3 -m unittest discover -s tests -p 'test_*.py'",
    "mypy --strict src",
    "mypy --cache-dir=/dev/null src",
    "python -m mypy -p pkg",
    "ruff check --output-format=github .",
    "ruff check --select E,F src",
    "ruff format --check --diff",
    "eslint -f json src",
    "eslint --rule 'quotes: error' src",
    "eslint --max-warnings 0 --ext .ts,.tsx src",
    "eslint --fix-dry-run src",
    "npx eslint src/*.ts",
    "jest --ci --runInBand",
    "jest --testEnvironment=jsdom -t 'adds'",
    "jest --reporters=default",
    "vitest run --reporter=dot",
    "vitest run --root=packages/web",
    "tsc --noEmit -p tsconfig.json",
    "tsc --noEmit --pretty false",
    "go test ./...",
    "go test -run TestX -v -count=1 -race ./pkg/...",
    "go test -mod=readonly ./...",
    "go test -cover ./...",
    "go vet -c=2 ./...",
    "go build ./...",
    "mvn -q test",
    "mvn -Dtest=FooTest test",
    "mvn -DskipTests=false -B verify",
    "mvn -pl core -am test",
    "gradle test --tests 'com.x.*'",
    "gradle -x lint build",
    "gradle --offline --no-daemon check",
    "gradle :app:test",
    "dotnet test --no-build -c Release",
    "dotnet build src/App.csproj",
    "dotnet test --filter Category=Unit",
    "flutter test --plain-name foo",
    "flutter test --coverage",
    "dart test -r json",
    "rubocop --parallel",
    "rubocop --cache true",
    "rubocop -D -f simple",
    "prettier --check --no-config .",
    "make -j4 check lint",
];

#[test]
fn verify_keeps_the_legitimate_forms_of_every_verifier() {
    for cmd in VERIFY_NEIGHBOURS {
        allowed(ShellPolicy::Verify, cmd);
        refused(ShellPolicy::Inspect, cmd, "is not an inspection command");
    }
}

#[test]
fn patterns_that_may_expand_to_options_are_flagged() {
    let may_be_option = |s: &str| match &tokenize(s).unwrap()[0] {
        Token::Word(w) => w.may_be_option,
        other => panic!("{other:?}"),
    };
    for s in ["*", "*.rs", "?x", "[-]x", "{-p,x}", "-*", "''*", "\"-\"*"] {
        assert!(may_be_option(s), "{s}");
    }
    for s in ["src/*.rs", "./*", "a*", "x{-p,}", "'*'", "-x", "HEAD@{1}"] {
        assert!(!may_be_option(s), "{s}");
    }
}

// ---------------------------------------------------------------------------------------------
// Parse differences between the policy and bash or the command itself, found by review: each
// attack with the legitimate neighbours that keep working.

/// A `--` that the command takes as an option's value ends nothing: the words after it are
/// still options (GNU getopt, lexopt, git's parse-options, getopts take any next word).
const DASHDASH_INSPECT_ATTACKS: &[(&str, &str)] = &[
    (
        "sort --random-source -- -o /tmp/x file.txt",
        "sort's `-o` writes",
    ),
    ("sort --files0-from -- -o x", "sort's `-o` writes"),
    ("sort --random-src -- -o x f", "`-o`"),
    ("sort --batch-size -- --output=x f", "`--output`"),
    (
        "sort --parallel -- --compress-program=sh f",
        "`--compress-program`",
    ),
    ("sort -k -- -o x f", "`-o`"),
    ("sort -rk -- -o x f", "`-o`"),
    ("sort -S -- -T /tmp f", "`-T`"),
    ("rg -e -- --pre=./payload x", "rg's `--pre` runs"),
    ("rg --regexp -- --pre sh x", "`--pre`"),
    ("rg -g -- --hostname-bin=./x y", "`--hostname-bin`"),
    ("rg -n -e -- --pre-glob '*' x", "`--pre-glob`"),
    // git log and show read their own options (`--decorate-refs`, `-L`) with parse-options
    // before the revision options: `--` becomes a value and `--output` an option.
    (
        "git log --decorate-refs -- --output=/tmp/x",
        "git's `--output` writes",
    ),
    (
        "git show --decorate-refs -- --ext-diff HEAD",
        "`--ext-diff`",
    ),
    (
        "git log --decorate-refs-exclude -- --show-signature",
        "`--show-signature`",
    ),
    ("git log -L -- --textconv", "`--textconv`"),
    ("git log --decorate-refs -- --format='%G?'", "`%G?`"),
    // git branch: an option's value is the next word whatever it looks like.
    ("git branch --sort -l newbranch", "listing forms"),
    ("git branch --format -l newbranch", "listing forms"),
    ("git branch --sort -- -D x", "listing forms"),
    ("git branch -a --points-at -- --delete x", "listing forms"),
    ("uniq -f -- in out", "output file"),
    ("uniq --skip-fields -- in out", "output file"),
];

const DASHDASH_INSPECT_NEIGHBOURS: &[&str] = &[
    "sort -- -o",
    "sort -k 2 -- -o",
    "sort -k2 -- -o",
    "sort --random-source=/dev/urandom -R -- file",
    "sort -t , -k 2 -- file",
    "sort -r -- -o",
    "sort -rnu -- -o",
    "rg -e foo -- --pre",
    "rg -n -- --pre file",
    "rg -n foo -- src",
    "git log -p -- src",
    "git log --oneline -- src/*.rs",
    "git log --decorate-refs=main -1 -- src",
    "git diff --stat -- src",
    "git diff HEAD~1 -- --weird-but-harmless-name",
    "git branch -l --sort=-committerdate 'f*'",
    "git branch --sort -committerdate",
    "git branch --list --sort -committerdate 'feat/*'",
    "git branch --contains HEAD -l 'f*'",
    "git branch --merged main",
    "git branch -a --format '%(refname:short)'",
    "uniq -f 1 -- in",
    "uniq -c -- in",
];

#[test]
fn a_dashdash_taken_as_a_value_does_not_end_the_inspect_checks() {
    for (cmd, why) in DASHDASH_INSPECT_ATTACKS {
        refused(ShellPolicy::Inspect, cmd, why);
        refused(ShellPolicy::Verify, cmd, why);
        allowed(ShellPolicy::Unrestricted, cmd);
    }
    for cmd in DASHDASH_INSPECT_NEIGHBOURS {
        allowed(ShellPolicy::Inspect, cmd);
        allowed(ShellPolicy::Verify, cmd);
    }
}

const DASHDASH_VERIFY_ATTACKS: &[(&str, &str)] = &[
    // cargo's own options may continue after a `--` that is an option's value.
    (
        "cargo test --features -- --config 'build.rustc-wrapper=\"sh x\"'",
        "cargo's `--config` loads",
    ),
    (
        "cargo build --features -- -Zunstable-options",
        "cargo's `-Z`",
    ),
    (
        "cargo test -p -- --manifest-path /tmp/Cargo.toml",
        "`--manifest-path`",
    ),
    (
        "cargo clippy --features -- --config x -- -D warnings",
        "`--config`",
    ),
    // The test harness, rustfmt and rustc use getopts, which takes `--` as a value too.
    (
        "cargo test -- --skip -- --logfile out",
        "`--logfile` writes",
    ),
    (
        "cargo fmt --check -- --config-path -- --emit files",
        "rustfmt's `--emit`",
    ),
    ("cargo clippy -- -D -Clinker=./x", "`-D` needs a lint name"),
    ("cargo clippy -- -A", "`-A` needs a lint name"),
    // pytest's plugin pre-scan reads every word.
    ("pytest -- -p evil", "`-p` may only disable a plugin"),
    ("pytest -k -- -p evil", "`-p` may only disable"),
    ("pytest tests -- -pevil", "`-p`"),
    ("python -m pytest -m -- -p evil", "`-p`"),
    ("pytest -- --junitxml=out.xml", "`--junitxml`"),
    (
        "mypy --exclude -- --config-file=evil.ini .",
        "`--config-file`",
    ),
    ("ruff check --select -- --output-file x", "`--output-file`"),
    ("eslint --ext -- -c evil.js .", "eslint's `-c`"),
    ("rubocop --only -- -r ./evil.rb", "rubocop's `-r`"),
    ("jest -t -- --config evil.js", "jest's `--config`"),
    ("vitest run -t -- --config evil.ts", "vitest's `--config`"),
    ("tsc --noEmit -- --outDir out", "tsc's `--outDir`"),
    ("dart test --name -- --precompiled=x", "`--precompiled`"),
    (
        "flutter test --plain-name -- --local-engine=x",
        "`--local-engine`",
    ),
    (
        "prettier --check --ignore-path -- --plugin=./p.js .",
        "`--plugin`",
    ),
    ("go test -run -- -exec ./x ./...", "go's `-exec`"),
    // Allowlists: a `--` after an option with a value is no end, and a value that looks like
    // an option is checked as one.
    ("npm test -w -- --script-shell=./x", "not among"),
    ("pnpm test --filter -- --config.script-shell=x", "not among"),
    ("bun test -t -- --preload ./x.ts", "not among"),
    (
        "node --test --test-name-pattern -- --require ./x.js",
        "`--require` is not among",
    ),
    (
        "node --test --test-name-pattern --require ./x.js",
        "`--require` is not among",
    ),
    ("mvn -pl -s evil.xml test", "`-s` is not among"),
    ("gradle -x -I init.gradle test", "`-I` is not among"),
    ("gradle -x -- -I init.gradle test", "`-I` is not among"),
    ("dotnet test -c -s evil.runsettings", "`-s` is not among"),
];

const DASHDASH_VERIFY_NEIGHBOURS: &[&str] = &[
    "cargo test --workspace -- -Z unstable-options --report-time",
    "cargo test --release -- --nocapture",
    "cargo test --features foo -- --exact x",
    "cargo test -F foo -- --ignored",
    "cargo test -p x --lib -- --test-threads 1",
    "cargo clippy --all-targets --all-features -- -D warnings",
    "cargo clippy --workspace --tests -- -D warnings -W clippy::pedantic",
    "cargo clippy -q -- -A clippy::x",
    "cargo nextest run --workspace --no-fail-fast -- some_test",
    "cargo fmt --all --check",
    "cargo test -- --skip slow --exact",
    "npm test -w web -- --watch=false",
    "npm test -- -w x --config=jest.ci.js",
    "node --test --test-name-pattern parse test/",
    "mvn -pl '!legacy' test",
    "pytest -k 'not slow' tests/a.py",
    "pytest -x -- tests/test_a.py",
    "pytest -p no:cacheprovider -- tests",
    "mypy --exclude build -- src",
    "jest -t adds -- src",
];

#[test]
fn a_dashdash_taken_as_a_value_does_not_end_the_verify_checks() {
    for (cmd, why) in DASHDASH_VERIFY_ATTACKS {
        refused(ShellPolicy::Verify, cmd, why);
        allowed(ShellPolicy::Unrestricted, cmd);
    }
    for cmd in DASHDASH_VERIFY_NEIGHBOURS {
        allowed(ShellPolicy::Verify, cmd);
    }
}

/// What bash expands or reads differently from the words the policy sees.
const SHELL_SYNTAX_ATTACKS: &[(&str, &str)] = &[
    // `@{…}` is a brace expansion like any other once it holds `,` or `..`.
    ("uniq in@{,out}", "unquoted pattern `in@{,out}`"),
    ("uniq x@{a,b}", "unquoted pattern"),
    ("uniq HEAD@{1..2}", "unquoted pattern"),
    // Line continuations are removed before bash reads any token.
    ("ls $\\\nHOME", "variable expansion"),
    ("ls \"$\\\nHOME\"", "variable expansion"),
    ("find . $\\\n{X:=-delete}", "parameter expansion"),
    ("ls $\\\n(rm x)", "command substitution"),
    ("cat a 2\\\n>b", "redirections that write"),
    ("ls &\\\n& rm x", "`rm` is not an inspection command"),
    // A comment is not continued by a trailing backslash.
    ("ls # note \\\nrm -rf x", "`rm`"),
    // `{name}>` is a named file descriptor, not a word.
    ("ls {fd}>/dev/null", "named file descriptor"),
    ("ls {x}</dev/null", "named file descriptor"),
    ("uniq in {out}>&2", "named file descriptor"),
    // `;&` and `;;&` are `case` syntax.
    ("ls ;& pwd", "`case` syntax"),
    ("ls ;;& pwd", "`case` syntax"),
    // Whether a non-ASCII letter starts a name depends on the locale.
    ("ls $é", "variable expansion"),
    // Tilde forms name directories outside the project.
    (
        "pytest --rootdir=~+",
        "`--rootdir` must name a relative path",
    ),
    (
        "cargo test --manifest-path ~-/Cargo.toml",
        "`--manifest-path` must name",
    ),
    ("python -m unittest discover -s ~", "`-s` must name"),
    // Extended globs and arithmetic all need `(`.
    ("ls @(a|b)", "subshells"),
    ("ls !(x)", "subshells"),
    ("ls $((1+1))", "command substitution"),
    ("((x=1))", "subshells"),
];

const SHELL_SYNTAX_NEIGHBOURS: &[&str] = &[
    "git show HEAD@{1}",
    "git log -1 HEAD@{upstream}",
    "git diff @{u}",
    "git log @{-1}",
    "git show main@{yesterday}",
    "git log -g HEAD@{2.days.ago}",
    "git log @{push}",
    "uniq -c HEAD@{1}",
    "ls \\\n -la",
    "ls a\\\nb",
    "grep -e 'a\\\nb' f",
    "ls # a comment \\\n",
    "ls {x} >/dev/null",
    "ls '{x}'>/dev/null",
    "find . -name '{}' >/dev/null",
    "grep -F 'x;&y' f",
    "grep 'é$' f",
    "cat ~/notes.txt",
    "ls ~+",
];

#[test]
fn shell_syntax_the_policy_would_misread_is_refused() {
    for (cmd, why) in SHELL_SYNTAX_ATTACKS {
        let policy =
            if cmd.starts_with("pytest") || cmd.starts_with("cargo") || cmd.starts_with("python") {
                ShellPolicy::Verify
            } else {
                ShellPolicy::Inspect
            };
        refused(policy, cmd, why);
    }
    for cmd in SHELL_SYNTAX_NEIGHBOURS {
        allowed(ShellPolicy::Inspect, cmd);
        allowed(ShellPolicy::Verify, cmd);
    }
}

/// Signature placeholders with git's modifiers, in every format spelling.
const GPG_FORMAT_ATTACKS: &[(&str, &str)] = &[
    ("git log --format='%+G?' -1", "`%+G?` format placeholder"),
    ("git log --format='%-GS' -1", "`%-GS`"),
    ("git log --format='% GK' -1", "`% GK`"),
    ("git log --pretty=tformat:%+GG -1", "`%+GG`"),
    ("git log --pretty=format:%GF", "`%GF`"),
    ("git show --format='%<(8)%G?' HEAD", "`%G?`"),
    ("git log --format='%%%G?'", "`%G?`"),
    ("git log --forma='%G?'", "`%G?`"),
    ("git log --format='%h' --pretty='%GT' -- src", "`%GT`"),
    ("git log -- src '--format=%G?'", "`%G?`"),
    (
        "git branch --format='%(signature:grade) %(refname)'",
        "`%(signature:grade)`",
    ),
    ("git branch --format '%(*signature)'", "`%(*signature)`"),
    ("git branch '--format=%(signature)'", "`%(signature)`"),
];

const GPG_FORMAT_NEIGHBOURS: &[&str] = &[
    "git log --format='%x25G? %h' -1",
    "git log --format='%%G %h' -1",
    "git log --format='%+b%-s% an%<(10)%h' -1",
    "git log --format='%(describe) %(trailers:key=Fixes)' -1",
    "git log -G needle --format=%h",
    "git branch --format='%(refname) %(contents:signature)'",
    "git branch --format='%(objectname:short) %(subject)'",
];

#[test]
fn signature_placeholders_are_refused_with_their_modifiers() {
    for (cmd, why) in GPG_FORMAT_ATTACKS {
        refused(ShellPolicy::Inspect, cmd, why);
        refused(ShellPolicy::Verify, cmd, why);
    }
    for cmd in GPG_FORMAT_NEIGHBOURS {
        allowed(ShellPolicy::Inspect, cmd);
    }
}

const OUTSIDE_PROJECT_ATTACKS: &[(&str, &str)] = &[
    (
        "python -m unittest discover /elsewhere",
        "start and top-level directories must be relative paths",
    ),
    (
        "python3 -m unittest discover tests 'test*.py' ..",
        "not `..`",
    ),
    ("python -m unittest discover -v -- /x", "not `/x`"),
    (
        "go test -C /elsewhere ./...",
        "go's `-C` must name a relative path",
    ),
    ("go test -C=../x ./...", "`-C`"),
    (
        "go test ./... -args -test.testlogfile=x",
        "`-testlogfile` writes",
    ),
];

const OUTSIDE_PROJECT_NEIGHBOURS: &[&str] = &[
    "python3 -m unittest discover tests 'test_*.py'",
    "python3 -m unittest discover -s tests -t .",
    "python -m unittest discover -k /parse/ tests",
    "python -m unittest tests.test_x",
    "go test -C sub ./...",
];

#[test]
fn verifiers_name_only_directories_inside_the_project() {
    for (cmd, why) in OUTSIDE_PROJECT_ATTACKS {
        refused(ShellPolicy::Verify, cmd, why);
    }
    for cmd in OUTSIDE_PROJECT_NEIGHBOURS {
        allowed(ShellPolicy::Verify, cmd);
    }
}

#[test]
fn reflog_braces_do_not_expand_but_brace_lists_do() {
    let expands = |s: &str| match &tokenize(s).unwrap()[0] {
        Token::Word(w) => w.expands,
        other => panic!("{other:?}"),
    };
    for s in [
        "x@{a,b}",
        "in@{,out}",
        "HEAD@{1..3}",
        "@{a,b}",
        "a@{x}{y,z}",
    ] {
        assert!(expands(s), "{s}");
    }
    for s in [
        "HEAD@{1}",
        "@{-1}",
        "@{u}",
        "main@{upstream}",
        "HEAD@{2.days.ago}",
        "@{now}",
        "x@{'a,b'}",
        "x@\\{a,b}",
    ] {
        assert!(!expands(s), "{s}");
    }
}

#[test]
fn line_continuations_are_joined_outside_single_quotes() {
    let words = |s: &str| -> Vec<String> {
        tokenize(s)
            .unwrap()
            .into_iter()
            .filter_map(|t| match t {
                Token::Word(w) => Some(w.text),
                _ => None,
            })
            .collect()
    };
    assert_eq!(words("a\\\nb"), ["ab"]);
    assert_eq!(words("\"a\\\nb\""), ["ab"]);
    assert_eq!(words("'a\\\nb'"), ["a\\\nb"]);
    assert_eq!(words("a\\\\\nb"), ["a\\", "b"]);
    assert_eq!(words("x # c \\\ny"), ["x", "y"]);
    let toks = tokenize("ls 2\\\n>&1").unwrap();
    assert!(matches!(&toks[1], Token::Redirect { fd: Some(fd), op } if fd == "2" && op == ">&"));
}
