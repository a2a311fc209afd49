# git on a small project. A: make a repository, commit, report. B: the same start, then
# a feature branch, a change, a merge back, a tag and a blame, then the same report.
set -eu
export GIT_AUTHOR_NAME=dev GIT_AUTHOR_EMAIL=dev@example.org GIT_COMMITTER_NAME=dev
export GIT_COMMITTER_EMAIL=dev@example.org GIT_AUTHOR_DATE='2026-01-01T00:00:00Z'
export GIT_COMMITTER_DATE='2026-01-01T00:00:00Z' GIT_CONFIG_NOSYSTEM=1
git init -q -b main repo
cp -r src README.md repo/
cd repo
git add -A
git commit -q -m "first"
if [ "$1" = B ]; then
    git checkout -q -b feature
    printf 'def sub(a, b):\n    return a - b\n' >> src/calc.py
    git commit -q -am "sub"
    git checkout -q main
    git merge -q --no-ff -m "merge feature" feature
    git tag v1
    git diff --stat HEAD~1 HEAD
    git blame -s src/calc.py | wc -l
    git branch --list
fi
git log --format='%H %s'
git status --porcelain | wc -l
git count-objects | cut -d, -f1
git grep -c def | sed 's/:/ /'
