# The user's repository, made before the session (outside the sandbox).
set -eu
export GIT_AUTHOR_DATE='2026-01-01T00:00:00Z' GIT_COMMITTER_DATE='2026-01-01T00:00:00Z'
git init -q -b main repo
cd repo
git config user.name dev && git config user.email dev@example.org
printf 'def add(a, b):\n    return a + b\n' > calc.py
printf '# calc\n' > README.md
git add -A && git commit -q -m "first"
printf 'def mul(a, b):\n    return a * b\n' >> calc.py
git commit -q -am "mul"
printf '\nA small library.\n' >> README.md
