# inputs: A B C D
# git sub-commands a release tool runs. A: a repository made, committed, archived into a
# new dist/ folder. B: a patch series written into patches/ (format-patch) and a bundle.
# C: a stash, a rebase of a branch, a shortlog. D: a bare clone into a new mirror/ folder,
# a worktree, and notes.
set -eu
export GIT_AUTHOR_NAME=dev GIT_AUTHOR_EMAIL=dev@example.org GIT_COMMITTER_NAME=dev
export GIT_COMMITTER_EMAIL=dev@example.org GIT_AUTHOR_DATE='2026-01-01T00:00:00Z'
export GIT_COMMITTER_DATE='2026-01-01T00:00:00Z' GIT_CONFIG_NOSYSTEM=1
git init -q -b main repo
cp -r src README.md repo/
cd repo
git add -A
git commit -q -m "first"
printf 'def sub(a, b):\n    return a - b\n' >> src/calc.py
git commit -q -am "sub"
case "$1" in
A) mkdir ../dist; git archive --format=tar.gz --prefix=calc/ -o ../dist/calc.tar.gz HEAD
   tar -tzf ../dist/calc.tar.gz | sort ;;
B) git format-patch -q -o ../patches HEAD~1; ls ../patches
   git bundle create -q ../calc.bundle main 2>/dev/null; git bundle verify -q ../calc.bundle 2>&1 | sed 's/ is okay/ okay/' ;;
C) printf 'wip\n' >> README.md; git stash -q; git checkout -q -b topic HEAD~1
   printf 'x = 1\n' > src/x.py; git add src/x.py; git commit -q -m "x"
   git rebase -q main; git stash pop -q; git status --porcelain; git shortlog -s HEAD | sed 's/^ *//' ;;
D) git clone -q --bare . ../mirror/calc.git; git -C ../mirror/calc.git rev-list --count HEAD
   git worktree add -q ../wt-fix HEAD~1 2>/dev/null; ls ../wt-fix/src
   git notes add -m "reviewed" HEAD; git notes show HEAD ;;
esac
git rev-parse --short HEAD
